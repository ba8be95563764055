// weft::Graph (weft/graph.h): the public builder, a thin layer over ir::Graph. Each method
// checks that its values belong to this graph (ir::Graph trusts its callers with node ids)
// and hands the op to ir::Graph, which type-checks it and names it in any error; take and
// takeAlongAxis hand theirs to the frontends' composites (frontend/composite_ops.h).
#include <atomic>
#include <fmt/format.h>

#include "compile.h"
#include "frontend/composite_ops.h"
#include "frontend/json_reader.h"
#include "ir/printer.h"
#include "weft/error.h"
#include "weft/graph.h"

namespace weft {

namespace {

/// A fresh graph identity for Values to carry (0 is no graph's).
uint64_t newLineage() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

} // namespace

/// Values carry the lineage of the graph that made them. A copy of a graph has a lineage of
/// its own and also takes the values its source had made by then (`shared`: those ids name the
/// same ops in both), but not the ones either makes later, which would name different ops.
struct Graph::Impl {
  ir::Graph graph;
  std::string name;
  uint64_t lineage = newLineage();
  std::vector<std::pair<uint64_t, size_t>> shared; // (lineage, values made before the copy)

  Impl() = default;
  Impl(const Impl& other)
      : graph(other.graph), name(other.name), lineage(newLineage()), shared(other.shared) {
    shared.emplace_back(other.lineage, other.graph.size());
  }

  bool owns(Value v) const {
    if (v.graph_ == lineage) return true;
    for (const auto& [l, count] : shared)
      if (v.graph_ == l && static_cast<size_t>(v.id()) < count) return true;
    return false;
  }
  ir::NodeId id(Value v) const {
    if (!v.valid()) throw InputError(fmt::format("graph \"{}\": a Value that no op made", name));
    if (!owns(v) || static_cast<size_t>(v.id()) >= graph.size())
      throw InputError(fmt::format("graph \"{}\": value #{} was made by another graph", name,
                                   v.id()));
    return v.id();
  }
  Value value(ir::NodeId id) const { return Value(id, lineage); }
  std::vector<ir::NodeId> ids(const std::vector<Value>& vs) const {
    std::vector<ir::NodeId> out;
    for (Value v : vs)
      out.push_back(id(v));
    return out;
  }
};

namespace {

ir::Dim irDim(const Dim& d) {
  ir::Dim out = d.factor();
  for (const std::string& s : d.symbols())
    out = out * ir::Dim::symbol(s);
  return out;
}

ir::Shape irShape(const Shape& s) {
  ir::Shape out;
  for (const Dim& d : s)
    out.push_back(irDim(d));
  return out;
}

/// How an error names the public op `op` called with `name`: `op "y" (take)`, as ir::Graph
/// names its ops, or just `take` for a call that left the name to the graph.
std::string opWhere(const std::string& op, const std::string& name) {
  return name.empty() ? op : fmt::format("op \"{}\" ({})", name, op);
}

/// `axis` (negative counts from the end) for a value of rank `rank`, or an InputError at
/// `where` saying which axes there are.
int64_t checkedAxis(const std::string& where, int64_t axis, size_t rank) {
  if (rank == 0)
    throw InputError(fmt::format("{}: x is a scalar; there is no axis to take along", where));
  std::optional<int64_t> a = frontend::normalizeAxis(axis, rank);
  if (!a) {
    auto r = static_cast<int64_t>(rank);
    throw InputError(fmt::format("{}: axis {} is out of range for rank {} (allowed: {}..{})",
                                 where, axis, rank, -r, r - 1));
  }
  return *a;
}

/// Builds a composite (frontend/composite_ops.h) for the public op `op` named `name`: its
/// intermediate values are named "<name>.<suffix>" (fresh names when `name` is empty), and
/// every problem, the composite's own or one of its primitives', is one InputError naming
/// `op` as the other builder methods name theirs. The result's name is checked first, so that
/// a clash is reported before any intermediate is added.
template <class Build>
ir::NodeId buildComposite(ir::Graph& g, const std::string& op, const std::string& name,
                          Build build) {
  const std::string where = opWhere(op, name);
  if (!name.empty() && g.find(name))
    throw InputError(
        fmt::format("{}: the name \"{}\" is already used by another value", where, name));
  frontend::Site site{
      g,
      [&name](const std::string& suffix) { return name.empty() ? name : name + "." + suffix; },
      [&where](const std::string& what) {
        throw InputError(fmt::format("{}: {}", where, what));
      }};
  try {
    return build(site);
  } catch (const InputError& e) {
    std::string msg = e.what();
    if (msg.rfind(where + ": ", 0) == 0) throw;
    throw InputError(fmt::format("{}: {}", where, msg));
  }
}

} // namespace

// --- Dim ---

Dim detail::Access::makeDim(const ir::Dim& d) {
  Dim out;
  out.factor_ = d.factor();
  out.symbols_ = d.symbols();
  return out;
}

Dim::Dim(const std::string& text) {
  std::optional<ir::Dim> d = ir::Dim::parse(text);
  if (!d)
    throw InputError(fmt::format("dim \"{}\": expected a size or symbols such as 768, B, 2*B, B*S",
                                 text));
  *this = detail::Access::makeDim(*d);
}
Dim::Dim(const char* text) : Dim(std::string(text ? text : "")) {}

std::string Dim::str() const { return irDim(*this).str(); }

int64_t Dim::evaluate(const Binding& binding) const {
  for (const std::string& s : symbols_) {
    auto it = binding.find(s);
    if (it == binding.end()) throw InputError(fmt::format("symbol \"{}\" is not bound", s));
    if (it->second < 0)
      throw InputError(
          fmt::format("symbol \"{}\" is bound to {}; sizes are 0 or more", s, it->second));
  }
  try {
    return irDim(*this).evaluate(binding);
  } catch (const InputError& e) {
    throw InputError(fmt::format("dim {}: {}", str(), e.what()));
  }
}

// --- Graph: the bridges (src/compile.h) ---

const ir::Graph& detail::Access::irGraph(const Graph& g) { return g.impl_->graph; }

Graph detail::Access::makeGraph(ir::Graph g, std::string name) {
  Graph out(std::move(name));
  out.impl_->graph = std::move(g);
  return out;
}

Graph::Graph(std::string name) : impl_(std::make_unique<Impl>()) { impl_->name = std::move(name); }
Graph::Graph(const Graph& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Graph::Graph(Graph&& other) noexcept = default;
Graph& Graph::operator=(const Graph& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
Graph& Graph::operator=(Graph&& other) noexcept = default;
Graph::~Graph() = default;

// --- building ---

Value Graph::parameter(std::string name, DType dtype, Shape shape) {
  return impl_->value(impl_->graph.parameter(std::move(name), {dtype, irShape(shape)}));
}
Value Graph::constant(DType dtype, Shape shape, std::vector<double> values, std::string name) {
  return impl_->value(impl_->graph.constant(dtype, irShape(shape), std::move(values), std::move(name)));
}
Value Graph::scalar(DType dtype, double value, std::string name) {
  return impl_->value(impl_->graph.scalar(dtype, value, std::move(name)));
}
Value Graph::iota(DType dtype, Shape shape, int64_t axis, std::string name) {
  return impl_->value(impl_->graph.iota(dtype, irShape(shape), axis, std::move(name)));
}

#define WEFT_UNARY(method, kind)                                                                 \
  Value Graph::method(Value x, std::string name) {                                               \
    return impl_->value(impl_->graph.unary(ir::OpKind::kind, impl_->id(x), std::move(name)));           \
  }
WEFT_UNARY(neg, Neg)
WEFT_UNARY(abs, Abs)
WEFT_UNARY(exp, Exp)
WEFT_UNARY(log, Log)
WEFT_UNARY(tanh, Tanh)
WEFT_UNARY(sqrt, Sqrt)
WEFT_UNARY(rsqrt, Rsqrt)
WEFT_UNARY(erf, Erf)
WEFT_UNARY(sigmoid, Sigmoid)
WEFT_UNARY(sin, Sin)
WEFT_UNARY(cos, Cos)
WEFT_UNARY(floor, Floor)
WEFT_UNARY(ceil, Ceil)
WEFT_UNARY(sign, Sign)
WEFT_UNARY(logicalNot, Not)
WEFT_UNARY(reciprocal, Reciprocal)
#undef WEFT_UNARY

Value Graph::convert(Value x, DType to, std::string name) {
  return impl_->value(impl_->graph.convert(impl_->id(x), to, std::move(name)));
}

#define WEFT_BINARY(method, kind)                                                                \
  Value Graph::method(Value a, Value b, std::string name) {                                      \
    return impl_->value(                                                                         \
        impl_->graph.binary(ir::OpKind::kind, impl_->id(a), impl_->id(b), std::move(name)));     \
  }
WEFT_BINARY(add, Add)
WEFT_BINARY(sub, Sub)
WEFT_BINARY(mul, Mul)
WEFT_BINARY(div, Div)
WEFT_BINARY(pow, Pow)
WEFT_BINARY(max, Max)
WEFT_BINARY(min, Min)
WEFT_BINARY(rem, Rem)
WEFT_BINARY(logicalAnd, And)
WEFT_BINARY(logicalOr, Or)
#undef WEFT_BINARY

#define WEFT_COMPARE(method, dir)                                                                \
  Value Graph::method(Value a, Value b, std::string name) {                                      \
    return impl_->value(                                                                         \
        impl_->graph.compare(ir::CompareDir::dir, impl_->id(a), impl_->id(b), std::move(name))); \
  }
WEFT_COMPARE(equal, EQ)
WEFT_COMPARE(notEqual, NE)
WEFT_COMPARE(less, LT)
WEFT_COMPARE(lessEqual, LE)
WEFT_COMPARE(greater, GT)
WEFT_COMPARE(greaterEqual, GE)
#undef WEFT_COMPARE

Value Graph::select(Value pred, Value onTrue, Value onFalse, std::string name) {
  return impl_->value(impl_->graph.select(impl_->id(pred), impl_->id(onTrue), impl_->id(onFalse),
                                   std::move(name)));
}
Value Graph::clamp(Value lo, Value x, Value hi, std::string name) {
  return impl_->value(impl_->graph.clamp(impl_->id(lo), impl_->id(x), impl_->id(hi), std::move(name)));
}

Value Graph::broadcastInDim(Value x, Shape shape, std::vector<int64_t> dims, std::string name) {
  return impl_->value(impl_->graph.broadcastInDim(impl_->id(x), irShape(shape), std::move(dims),
                                           std::move(name)));
}
Value Graph::reshape(Value x, Shape shape, std::string name) {
  return impl_->value(impl_->graph.reshape(impl_->id(x), irShape(shape), std::move(name)));
}
Value Graph::transpose(Value x, std::vector<int64_t> perm, std::string name) {
  return impl_->value(impl_->graph.transpose(impl_->id(x), std::move(perm), std::move(name)));
}
Value Graph::slice(Value x, std::vector<int64_t> starts, std::vector<int64_t> limits,
                   std::vector<int64_t> strides, std::string name) {
  return impl_->value(impl_->graph.slice(impl_->id(x), std::move(starts), std::move(limits),
                                  std::move(strides), std::move(name)));
}
Value Graph::concatenate(std::vector<Value> xs, int64_t axis, std::string name) {
  return impl_->value(impl_->graph.concatenate(impl_->ids(xs), axis, std::move(name)));
}
Value Graph::pad(Value x, std::vector<int64_t> low, std::vector<int64_t> high, double value,
                 std::string name) {
  return impl_->value(
      impl_->graph.pad(impl_->id(x), std::move(low), std::move(high), value, std::move(name)));
}

Value Graph::gather(Value operand, std::vector<Value> indices, std::vector<int64_t> axes,
                    std::vector<int64_t> dims, std::string name) {
  ir::NodeId x = impl_->id(operand);
  size_t rank = impl_->graph.node(x).type.shape.size();
  for (int64_t& a : axes) // Python-style; one out of range is left for the op to report
    if (std::optional<int64_t> normalized = frontend::normalizeAxis(a, rank)) a = *normalized;
  return impl_->value(impl_->graph.gather(x, impl_->ids(indices), std::move(axes),
                                          std::move(dims), std::move(name)));
}

Value Graph::take(Value x, Value indices, int64_t axis, std::string name) {
  ir::NodeId data = impl_->id(x), idx = impl_->id(indices);
  int64_t a = checkedAxis(opWhere("take", name), axis, impl_->graph.node(data).type.shape.size());
  return impl_->value(buildComposite(impl_->graph, "take", name, [&](const frontend::Site& s) {
    return frontend::take(s, data, idx, a, name);
  }));
}

Value Graph::takeAlongAxis(Value x, Value indices, int64_t axis, std::string name) {
  ir::NodeId data = impl_->id(x), idx = impl_->id(indices);
  int64_t a = checkedAxis(opWhere("take_along_axis", name), axis,
                          impl_->graph.node(data).type.shape.size());
  return impl_->value(
      buildComposite(impl_->graph, "take_along_axis", name, [&](const frontend::Site& s) {
        return frontend::takeAlongAxis(s, data, idx, a, name);
      }));
}

#define WEFT_REDUCE(method, kind)                                                                \
  Value Graph::method(Value x, std::vector<int64_t> axes, std::string name) {                    \
    return impl_->value(                                                                         \
        impl_->graph.reduce(ir::ReduceKind::kind, impl_->id(x), std::move(axes), std::move(name))); \
  }
WEFT_REDUCE(reduceSum, Sum)
WEFT_REDUCE(reduceMax, Max)
WEFT_REDUCE(reduceMin, Min)
WEFT_REDUCE(reduceProd, Prod)
WEFT_REDUCE(reduceAny, Any)
WEFT_REDUCE(reduceAll, All)
WEFT_REDUCE(reduceLogSumExp, LogSumExp)
#undef WEFT_REDUCE

Value Graph::dot(Value a, Value b, std::string name) {
  return impl_->value(impl_->graph.dot(impl_->id(a), impl_->id(b), std::move(name)));
}

void Graph::addOutput(Value v) { impl_->graph.addOutput(impl_->id(v)); }
void Graph::setOutputs(std::vector<Value> vs) { impl_->graph.setOutputs(impl_->ids(vs)); }

// --- reading ---

const std::string& Graph::name() const { return impl_->name; }

std::vector<Value> Graph::inputs() const {
  std::vector<Value> out;
  for (ir::NodeId id : impl_->graph.inputs())
    out.push_back(impl_->value(id));
  return out;
}
std::vector<Value> Graph::outputs() const {
  std::vector<Value> out;
  for (ir::NodeId id : impl_->graph.outputs())
    out.push_back(impl_->value(id));
  return out;
}
size_t Graph::size() const { return impl_->graph.size(); }
std::optional<Value> Graph::find(const std::string& valueName) const {
  std::optional<ir::NodeId> id = impl_->graph.find(valueName);
  return id ? std::optional<Value>(impl_->value(*id)) : std::nullopt;
}
std::string Graph::valueName(Value v) const { return impl_->graph.node(impl_->id(v)).name; }
DType Graph::dtype(Value v) const { return impl_->graph.node(impl_->id(v)).type.dtype; }
Shape Graph::shape(Value v) const {
  Shape out;
  for (const ir::Dim& d : impl_->graph.node(impl_->id(v)).type.shape)
    out.push_back(detail::Access::makeDim(d));
  return out;
}
std::vector<std::string> Graph::symbols() const { return impl_->graph.symbols(); }
std::string Graph::str() const { return ir::printGraph(impl_->graph, impl_->name); }

// --- JSON (weft_frontend's reader) ---

Graph parseGraphJson(const std::string& json, const std::string& sourceName) {
  frontend::ParsedGraph parsed = frontend::readGraphJson(json, sourceName);
  return publicGraph(std::move(parsed.graph), std::move(parsed.name));
}

Graph loadGraphJson(const std::string& path) {
  frontend::ParsedGraph parsed = frontend::readGraphFile(path);
  return publicGraph(std::move(parsed.graph), std::move(parsed.name));
}

} // namespace weft
