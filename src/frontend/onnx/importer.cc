#include "frontend/onnx/importer.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>

#include "frontend/composite_ops.h"
#include "frontend/read_file.h"
#include "ir/interpreter.h"
#include "ir/shape.h"

namespace weft::onnx {
namespace {

using ::onnx::TensorProto;

[[noreturn]] void failAt(const std::string& where, const std::string& what) {
  throw InputError(fmt::format("{}: {}", where, what));
}

std::string readFile(const std::string& path) {
  return frontend::readFileBytes(path, "file");
}

/// Bytes per element of an ONNX element type as stored in raw_data; 0 for unknown ones.
size_t rawElementBytes(int t) {
  switch (t) {
  case TensorProto::UINT8:
  case TensorProto::INT8:
  case TensorProto::BOOL:
    return 1;
  case TensorProto::UINT16:
  case TensorProto::INT16:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return 2;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
    return 8;
  default:
    return 0;
  }
}

template <class T> T loadLE(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double decodeRaw(int t, const char* p) {
  switch (t) {
  case TensorProto::FLOAT:
    return loadLE<float>(p);
  case TensorProto::DOUBLE:
    return loadLE<double>(p);
  case TensorProto::FLOAT16:
    return halfToFloat(loadLE<uint16_t>(p));
  case TensorProto::BFLOAT16:
    return bfloat16ToFloat(loadLE<uint16_t>(p));
  case TensorProto::UINT8:
    return loadLE<uint8_t>(p);
  case TensorProto::INT8:
    return loadLE<int8_t>(p);
  case TensorProto::UINT16:
    return loadLE<uint16_t>(p);
  case TensorProto::INT16:
    return loadLE<int16_t>(p);
  case TensorProto::INT32:
    return loadLE<int32_t>(p);
  case TensorProto::UINT32:
    return loadLE<uint32_t>(p);
  case TensorProto::INT64:
    return static_cast<double>(loadLE<int64_t>(p));
  case TensorProto::UINT64:
    return static_cast<double>(loadLE<uint64_t>(p));
  case TensorProto::BOOL:
    return loadLE<uint8_t>(p) ? 1.0 : 0.0;
  default:
    return 0;
  }
}

/// An identifier usable as an IR symbol (Dim::parse accepts [A-Za-z_][A-Za-z0-9_]*).
std::string symbolName(const std::string& text) {
  std::string s;
  for (char c : text)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "d_" + s;
  return s;
}

} // namespace

// ---------------------------------------------------------------- literals and dtypes

int64_t Literal::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

ir::TensorType Literal::type() const {
  return {dtype, ir::Shape(shape.begin(), shape.end())};
}

std::vector<int64_t> Literal::ints() const {
  std::vector<int64_t> out;
  out.reserve(values.size());
  for (double v : values) {
    // A double past int64 (or NaN) has no integer value: converting it is undefined.
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
      throw InputError(fmt::format("{} is not an integer in the range of int64", v));
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

std::optional<ir::DType> irDTypeOf(int t) {
  switch (t) {
  case TensorProto::FLOAT:
    return ir::DType::f32;
  case TensorProto::DOUBLE:
    return ir::DType::f64;
  case TensorProto::FLOAT16:
    return ir::DType::f16;
  case TensorProto::BFLOAT16:
    return ir::DType::bf16;
  case TensorProto::INT8:
    return ir::DType::i8;
  case TensorProto::INT32:
    return ir::DType::i32;
  case TensorProto::INT64:
    return ir::DType::i64;
  case TensorProto::BOOL:
    return ir::DType::boolean;
  // widened: the IR has no unsigned or 16-bit integers
  case TensorProto::UINT8:
  case TensorProto::UINT16:
  case TensorProto::INT16:
    return ir::DType::i32;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    return ir::DType::i64;
  default:
    return std::nullopt;
  }
}

std::string onnxTypeName(int t) {
  if (TensorProto::DataType_IsValid(t))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
  return fmt::format("data type {}", t);
}

Literal literalFromTensorProto(const TensorProto& t, const std::string& where) {
  auto dtype = irDTypeOf(t.data_type());
  if (!dtype)
    throw UnsupportedError(
        fmt::format("{}: tensor \"{}\" has element type {}, which weft does not support", where,
                    t.name(), onnxTypeName(t.data_type())),
        "");
  if (t.data_location() == TensorProto::EXTERNAL)
    throw UnsupportedError(
        fmt::format(
            "{}: tensor \"{}\" keeps its data in an external file, which weft does not read", where,
            t.name()),
        "");
  Literal lit;
  lit.dtype = *dtype;
  for (int64_t d : t.dims()) {
    if (d < 0) failAt(where, fmt::format("tensor \"{}\" has a negative dimension {}", t.name(), d));
    lit.shape.push_back(d);
  }
  int64_t n = 0;
  try {
    n = ir::checkedProduct(lit.shape);
  } catch (const InputError& e) {
    failAt(where, fmt::format("tensor \"{}\" of shape [{}]: {}", t.name(), fmt::join(lit.shape, ", "),
                              e.what()));
  }
  // The data checks below come before any allocation: n is bounded by the bytes present.
  int dt = t.data_type();
  if (t.has_raw_data()) {
    size_t eb = rawElementBytes(dt);
    const std::string& raw = t.raw_data();
    uint64_t need = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(n), static_cast<uint64_t>(eb), &need) ||
        raw.size() != need)
      failAt(where, fmt::format("tensor \"{}\" has {} bytes of raw data but {} elements of {} need {}",
                                t.name(), raw.size(), n, onnxTypeName(dt),
                                eb == 0 ? std::string("a known element size")
                                : need / eb == static_cast<uint64_t>(n) ? std::to_string(need)
                                                                          : "more than 2^64"));
    lit.values.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      lit.values.push_back(decodeRaw(dt, raw.data() + static_cast<size_t>(i) * eb));
    return lit;
  }
  auto take = [&](auto&& field, auto&& convert) {
    if (field.size() != n)
      failAt(where, fmt::format("tensor \"{}\" holds {} values but its shape [{}] needs {}",
                                t.name(), field.size(), fmt::join(lit.shape, ", "), n));
    lit.values.reserve(static_cast<size_t>(n));
    for (const auto& v : field)
      lit.values.push_back(convert(v));
  };
  auto asIs = [](auto v) { return static_cast<double>(v); };
  switch (dt) {
  case TensorProto::FLOAT:
    take(t.float_data(), asIs);
    break;
  case TensorProto::DOUBLE:
    take(t.double_data(), asIs);
    break;
  case TensorProto::INT64:
    take(t.int64_data(), asIs);
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    take(t.uint64_data(), asIs);
    break;
  case TensorProto::FLOAT16:
    take(t.int32_data(),
         [](int32_t v) { return static_cast<double>(halfToFloat(static_cast<uint16_t>(v))); });
    break;
  case TensorProto::BFLOAT16:
    take(t.int32_data(),
         [](int32_t v) { return static_cast<double>(bfloat16ToFloat(static_cast<uint16_t>(v))); });
    break;
  case TensorProto::BOOL:
    take(t.int32_data(), [](int32_t v) { return v ? 1.0 : 0.0; });
    break;
  default:
    take(t.int32_data(), asIs);
    break; // INT32, INT16, INT8, UINT16, UINT8
  }
  return lit;
}

HostTensor toHostTensor(const Literal& lit) {
  HostTensor h(lit.dtype, lit.shape);
  for (size_t i = 0; i < lit.values.size(); ++i)
    h.set(static_cast<int64_t>(i), lit.values[i]);
  return h;
}

Literal toLiteral(const HostTensor& h) {
  Literal lit{h.dtype, h.shape, {}};
  int64_t n = h.numElements();
  lit.values.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lit.values.push_back(h.get(i));
  return lit;
}

// ---------------------------------------------------------------- operator table

const OperatorTable& operatorTable() {
  static const OperatorTable table = [] {
    OperatorTable t;
    addElementwiseOps(t);
    addLayoutOps(t);
    addReduceOps(t);
    addNNOps(t);
    return t;
  }();
  return table;
}

std::vector<std::string> supportedOperators() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : operatorTable())
    names.push_back(name);
  return names;
}

// ---------------------------------------------------------------- node context

NodeContext::NodeContext(ir::Graph& graph, const ::onnx::NodeProto& n, int op, std::string source,
                         std::vector<Value*> inputs)
    : g(graph), node(n), opset(op), source_(std::move(source)), inputs_(std::move(inputs)),
      outputs_(static_cast<size_t>(n.output_size())) {
  for (size_t i = 0; i < outputs_.size(); ++i)
    outputs_[i].name = n.output(static_cast<int>(i));
}

std::string NodeContext::where() const {
  std::string name =
      node.name().empty() ? (node.output_size() ? node.output(0) : std::string("?")) : node.name();
  return fmt::format("{}: node \"{}\" ({}, opset {})", source_, name, node.op_type(), opset);
}

void NodeContext::fail(const std::string& what) const {
  failAt(where(), what);
}

void NodeContext::unsupported(const std::string& what) const {
  throw UnsupportedError(fmt::format("{}: {}", where(), what), node.op_type());
}

ir::NodeId NodeContext::in(size_t i) {
  if (!has(i)) fail(fmt::format("input {} is required but missing", i));
  Value* v = inputs_[i];
  if (v->node < 0) v->node = constant(*v->literal, v->name);
  return v->node;
}

const Literal* NodeContext::literal(size_t i) const {
  if (!has(i) || !inputs_[i]->literal) return nullptr;
  return &*inputs_[i]->literal;
}

const Literal& NodeContext::requireLiteral(size_t i, const std::string& what) const {
  if (!has(i)) fail(fmt::format("input {} ({}) is required but missing", i, what));
  const Value* v = inputs_[i];
  if (v->literal) return *v->literal;
  if (v->graphInput)
    throw ImportTimeValueError(
        fmt::format("{}: input {} ({}) must be known when the model is imported, but it is the "
                    "graph input \"{}\"; "
                    "store it as an initializer or freeze it (ImportOptions::frozenInputs)",
                    where(), i, what, v->name),
        node.op_type(), v->name);
  unsupported(fmt::format(
      "input {} ({}) must be known when the model is imported (an initializer, a Constant or a "
      "static shape computation), but \"{}\" is computed at run time",
      i, what, v->name));
}

std::vector<int64_t> NodeContext::constInts(size_t i, const std::string& what) const {
  const Literal& lit = requireLiteral(i, what);
  try {
    return lit.ints();
  } catch (const InputError& e) {
    fail(fmt::format("input {} ({}): {}", i, what, e.what()));
  }
}

double NodeContext::constScalar(size_t i, const std::string& what) const {
  const Literal& lit = requireLiteral(i, what);
  if (lit.values.size() != 1)
    fail(fmt::format("input {} ({}) must hold one value, it holds {}", i, what, lit.values.size()));
  return lit.values[0];
}

ir::TensorType NodeContext::type(size_t i) const {
  if (!has(i)) fail(fmt::format("input {} is required but missing", i));
  const Value* v = inputs_[i];
  if (v->node >= 0) return g.node(v->node).type;
  return v->literal->type();
}

const ::onnx::AttributeProto* findAttr(const ::onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeContext::hasAttr(const std::string& name) const {
  return findAttr(node, name) != nullptr;
}

int64_t NodeContext::attrInt(const std::string& name, int64_t dflt) const {
  const auto* a = findAttr(node, name);
  return a ? a->i() : dflt;
}

float NodeContext::attrFloat(const std::string& name, float dflt) const {
  const auto* a = findAttr(node, name);
  return a ? a->f() : dflt;
}

std::string NodeContext::attrString(const std::string& name, const std::string& dflt) const {
  const auto* a = findAttr(node, name);
  return a ? a->s() : dflt;
}

std::optional<std::vector<int64_t>> NodeContext::attrInts(const std::string& name) const {
  const auto* a = findAttr(node, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<float>> NodeContext::attrFloats(const std::string& name) const {
  const auto* a = findAttr(node, name);
  if (!a) return std::nullopt;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

const TensorProto* NodeContext::attrTensor(const std::string& name) const {
  const auto* a = findAttr(node, name);
  return a && a->has_t() ? &a->t() : nullptr;
}

std::string NodeContext::name(size_t i) const {
  std::string base = wantsOutput(i) ? node.output(static_cast<int>(i)) : std::string();
  if (base.empty()) return "";
  std::string n = base;
  for (int k = 1; g.find(n); ++k)
    n = fmt::format("{}.{}", base, k);
  return n;
}

void NodeContext::setOutput(size_t i, ir::NodeId id) {
  if (i >= outputs_.size()) return; // an optional output the model does not ask for
  outputs_[i].node = id;
  outputs_[i].literal.reset();
}

void NodeContext::setOutput(size_t i, Literal lit) {
  if (i >= outputs_.size()) return;
  outputs_[i].node = -1;
  outputs_[i].literal = std::move(lit);
}

frontend::Site NodeContext::site() const {
  return frontend::Site{g, nullptr, [this](const std::string& what) { fail(what); },
                        /*lookThroughUnitReshapes=*/true};
}

ir::NodeId NodeContext::splat(ir::DType t, const ir::Shape& shape, double v) {
  return g.constant(t, shape, {v});
}

ir::NodeId NodeContext::splatLike(ir::NodeId x, double v) {
  return frontend::splatLike(site(), x, v, "");
}

ir::NodeId NodeContext::constant(const Literal& lit, const std::string& nm) {
  std::string n = nm;
  for (int k = 1; !n.empty() && g.find(n); ++k)
    n = fmt::format("{}.{}", nm, k);
  ir::Shape shape(lit.shape.begin(), lit.shape.end());
  std::vector<double> values = lit.values;
  bool uniform = !values.empty() && std::all_of(values.begin(), values.end(), [&](double v) {
    return std::memcmp(&v, &values[0], sizeof(double)) == 0;
  });
  if (values.empty())
    values = {0.0}; // an empty tensor: a splat over zero elements
  else if (uniform)
    values.resize(1);
  return g.constant(lit.dtype, shape, std::move(values), n);
}

ir::Shape NodeContext::broadcastShape(const ir::Shape& a, const ir::Shape& b) const {
  auto out = frontend::broadcastShape({a, b});
  if (!out)
    fail(fmt::format("shapes {} and {} cannot be broadcast together (numpy rules: trailing dims "
                     "must match or be 1)",
                     ir::shapeStr(a), ir::shapeStr(b)));
  return *out;
}

ir::NodeId NodeContext::broadcastTo(ir::NodeId x, const ir::Shape& shape, const std::string& nm) {
  return frontend::broadcastTo(site(), x, shape, nm);
}

std::pair<ir::NodeId, ir::NodeId> NodeContext::broadcastPair(ir::NodeId a, ir::NodeId b) {
  ir::Shape s = broadcastShape(typeOf(a).shape, typeOf(b).shape);
  return {broadcastTo(a, s), broadcastTo(b, s)};
}

ir::NodeId NodeContext::convertTo(ir::NodeId x, ir::DType t, const std::string& nm) {
  if (typeOf(x).dtype == t) return x;
  return g.convert(x, t, nm);
}

ir::NodeId NodeContext::reshapeTo(ir::NodeId x, const ir::Shape& shape, const std::string& nm) {
  if (typeOf(x).shape == shape) return x;
  return g.reshape(x, shape, nm);
}

ir::NodeId NodeContext::reduceKeep(ir::ReduceKind kind, ir::NodeId x,
                                   const std::vector<int64_t>& axes, bool keepdims,
                                   const std::string& nm) {
  ir::Shape kept = frontend::reducedShape(typeOf(x).shape, axes, /*keepdims=*/true);
  ir::NodeId r = g.reduce(kind, x, axes, keepdims ? "" : nm);
  if (!keepdims) return r;
  return g.reshape(r, kept, nm);
}

int64_t NodeContext::axis(int64_t a, size_t r, const std::string& what) const {
  auto normalized = frontend::normalizeAxis(a, r);
  if (!normalized) fail(fmt::format("{} {} is out of range for rank {}", what, a, r));
  return *normalized;
}

// ---------------------------------------------------------------- the model

namespace {

struct ModelImporter {
  std::string source;
  int opset = 0;
  ir::Graph g;
  std::map<std::string, Value> values;

  static constexpr int64_t kFoldLimit = int64_t(1) << 20; // elements folded on the host at most

  void importModel(const ::onnx::ModelProto& m);
  int defaultOpset(const ::onnx::ModelProto& m) const;
  ImportOptions options;
  void addInput(const ::onnx::ValueInfoProto& vi);
  void checkOperators(const ::onnx::GraphProto& graph) const;
  void importNode(const ::onnx::NodeProto& n);
  bool foldNode(const ::onnx::NodeProto& n, std::vector<Value*>& inputs);
};

int ModelImporter::defaultOpset(const ::onnx::ModelProto& m) const {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
  return 0;
}

void ModelImporter::addInput(const ::onnx::ValueInfoProto& vi) {
  std::string where = fmt::format("{}: graph input \"{}\"", source, vi.name());
  if (!vi.type().has_tensor_type())
    throw UnsupportedError(
        where + ": only tensor inputs are supported (not sequences, maps or optionals)", "");
  const auto& tt = vi.type().tensor_type();
  auto dtype = irDTypeOf(tt.elem_type());
  if (!dtype)
    throw UnsupportedError(
        fmt::format("{}: element type {} is not supported", where, onnxTypeName(tt.elem_type())),
        "");
  if (!tt.has_shape())
    throw UnsupportedError(
        where + ": has no shape (rank unknown); weft needs the rank of every input", "");
  ir::Shape shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0)
        failAt(where, fmt::format("dim {} is negative ({})", i, d.dim_value()));
      shape.push_back(ir::Dim(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      shape.push_back(ir::Dim::symbol(symbolName(d.dim_param())));
    } else {
      shape.push_back(ir::Dim::symbol(symbolName(fmt::format("{}_{}", vi.name(), i))));
    }
  }
  Value v;
  v.name = vi.name();
  v.graphInput = true;
  if (auto frozen = options.frozenInputs.find(vi.name()); frozen != options.frozenInputs.end()) {
    v.literal = toLiteral(frozen->second);
    if (v.literal->dtype != *dtype || v.literal->shape.size() != shape.size())
      failAt(where, fmt::format("the frozen value {} does not match the input's type {}",
                                frozen->second.typeStr(), ir::TensorType{*dtype, shape}.str()));
  } else {
    v.node = g.parameter(vi.name(), {*dtype, shape});
  }
  values[vi.name()] = std::move(v);
}

void ModelImporter::checkOperators(const ::onnx::GraphProto& graph) const {
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const auto& n : graph.node()) {
    bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
    std::string key = n.domain() + "::" + n.op_type();
    if (defaultDomain && operatorTable().count(n.op_type())) continue;
    if (!seen.insert(key).second) continue;
    std::string name =
        n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name();
    if (defaultDomain)
      problems.push_back(
          fmt::format("unsupported operator {} (node \"{}\", opset {})", n.op_type(), name, opset));
    else
      problems.push_back(fmt::format(
          "unsupported operator {}.{} (node \"{}\"; only the default ONNX domain is supported)",
          n.domain(), n.op_type(), name));
  }
  if (problems.empty()) return;
  std::string first;
  for (const auto& n : graph.node())
    if (!((n.domain().empty() || n.domain() == "ai.onnx") && operatorTable().count(n.op_type()))) {
      first = n.op_type();
      break;
    }
  throw UnsupportedError(fmt::format("{}: {}; see docs/onnx.md for the operators weft lowers",
                                     source, fmt::join(problems, "; ")),
                         first);
}

bool ModelImporter::foldNode(const ::onnx::NodeProto& n, std::vector<Value*>& inputs) {
  int64_t elements = 0;
  for (Value* v : inputs) {
    if (!v) continue;
    if (!v->literal) return false;
    elements += v->literal->numElements();
  }
  if (elements > kFoldLimit) return false;
  // Lower the node into a scratch graph whose inputs are constants, then run the reference
  // interpreter on it: one lowering per operator serves both folding and import.
  ir::Graph scratch;
  std::vector<Value> copies;
  copies.reserve(inputs.size());
  std::vector<Value*> scratchInputs;
  for (Value* v : inputs) {
    if (!v) {
      scratchInputs.push_back(nullptr);
      continue;
    }
    copies.push_back(Value{v->name, -1, v->literal, v->graphInput});
    scratchInputs.push_back(&copies.back());
  }
  NodeContext ctx(scratch, n, opset, source, scratchInputs);
  operatorTable().at(n.op_type())(ctx);
  std::vector<ir::NodeId> computed;
  for (const Value& out : ctx.outputs())
    if (!out.literal && out.node >= 0) computed.push_back(out.node);
  std::vector<HostTensor> results;
  if (!computed.empty()) {
    for (ir::NodeId id : computed) {
      const ir::Shape& shape = scratch.node(id).type.shape;
      if (!ir::isStatic(shape)) return false;
      // A large result (an Expand or ConstantOfShape of constants) stays a node of the graph:
      // folding it would hold every element on the host.
      int64_t n = 1;
      for (const ir::Dim& d : shape)
        if (__builtin_mul_overflow(n, d.size(), &n)) return false;
      if (n > kFoldLimit) return false;
    }
    scratch.setOutputs(computed);
    results = ir::interpret(scratch, {});
  }
  size_t k = 0;
  for (const Value& out : ctx.outputs()) {
    if (out.name.empty()) continue;
    Value v{out.name, -1, out.literal};
    if (!out.literal) {
      if (out.node < 0) continue; // an output the lowering does not produce
      v.literal = toLiteral(results[k++]);
    }
    values[out.name] = std::move(v);
  }
  return true;
}

void ModelImporter::importNode(const ::onnx::NodeProto& n) {
  std::vector<Value*> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string& name = n.input(i);
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    auto it = values.find(name);
    if (it == values.end()) {
      std::string node =
          n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name();
      failAt(
          source,
          fmt::format("node \"{}\" ({}): input {} \"{}\" is not an initializer, a graph input or "
                      "the output "
                      "of an earlier node (missing initializer or nodes out of topological order)",
                      node, n.op_type(), i, name));
    }
    inputs.push_back(&it->second);
  }
  if (foldNode(n, inputs)) return;
  NodeContext ctx(g, n, opset, source, inputs);
  operatorTable().at(n.op_type())(ctx);
  for (const Value& out : ctx.outputs()) {
    if (out.name.empty() || (out.node < 0 && !out.literal)) continue;
    values[out.name] = out;
  }
}

void ModelImporter::importModel(const ::onnx::ModelProto& m) {
  if (!m.has_graph() || m.ir_version() <= 0)
    failAt(source, "not an ONNX model (no ir_version or no graph in the protobuf)");
  opset = defaultOpset(m);
  checkOperators(m.graph()); // operators of other domains are reported even without a default opset
  if (opset == 0)
    failAt(source, "the model imports no opset of the default ONNX domain (opset_import has no "
                   "entry for \"\" or "
                   "\"ai.onnx\")");
  if (opset < kMinOpset || opset > kMaxOpset)
    failAt(source,
           fmt::format(
               "the model imports opset {} of the default domain; weft supports opsets {} to {}",
               opset, kMinOpset, kMaxOpset));
  const auto& graph = m.graph();
  for (const auto& init : graph.initializer()) {
    Value v;
    v.name = init.name();
    v.literal =
        literalFromTensorProto(init, fmt::format("{}: initializer \"{}\"", source, init.name()));
    values[init.name()] = std::move(v);
  }
  for (const auto& vi : graph.input())
    if (!values.count(vi.name())) addInput(vi);
  for (const auto& n : graph.node())
    importNode(n);
  if (graph.output_size() == 0) failAt(source, "the graph has no outputs");
  std::vector<ir::NodeId> outputs;
  for (const auto& o : graph.output()) {
    auto it = values.find(o.name());
    if (it == values.end())
      failAt(source,
             fmt::format("graph output \"{}\" is not produced by any node, initializer or input",
                         o.name()));
    Value& v = it->second;
    if (v.node < 0) {
      std::string n = o.name();
      for (int k = 1; g.find(n); ++k)
        n = fmt::format("{}.{}", o.name(), k);
      ir::Shape shape(v.literal->shape.begin(), v.literal->shape.end());
      std::vector<double> vals =
          v.literal->values.empty() ? std::vector<double>{0.0} : v.literal->values;
      v.node = g.constant(v.literal->dtype, shape, std::move(vals), n);
    }
    outputs.push_back(v.node);
  }
  g.setOutputs(outputs);
  ir::verify(g);
}

} // namespace

namespace {
::onnx::ModelProto parseModel(const std::string& bytes, const std::string& source) {
  ::onnx::ModelProto model;
  if (bytes.empty()) failAt(source, "the file is empty, not an ONNX model");
  if (!model.ParseFromString(bytes))
    failAt(source, "not a valid ONNX model: the protobuf cannot be parsed (a truncated or corrupt "
                   "file, or not an "
                   "ONNX file)");
  return model;
}
} // namespace

ir::Graph importOnnxBytes(const std::string& bytes, const std::string& source,
                          const ImportOptions& options) {
  ::onnx::ModelProto model = parseModel(bytes, source);
  ModelImporter importer;
  importer.source = source;
  importer.options = options;
  importer.importModel(model);
  return std::move(importer.g);
}

ir::Graph importOnnx(const std::string& path, const ImportOptions& options) {
  return importOnnxBytes(readFile(path), path, options);
}

std::vector<std::string> onnxInputNames(const std::string& path) {
  ::onnx::ModelProto model = parseModel(readFile(path), path);
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer())
    initializers.insert(init.name());
  std::vector<std::string> names;
  for (const auto& vi : model.graph().input())
    if (!initializers.count(vi.name())) names.push_back(vi.name());
  return names;
}

HostTensor parseTensorProto(const std::string& bytes, const std::string& source) {
  TensorProto t;
  if (!t.ParseFromString(bytes))
    failAt(source, "not a valid TensorProto (the protobuf cannot be parsed)");
  return toHostTensor(literalFromTensorProto(t, source));
}

HostTensor readTensorProtoFile(const std::string& path) {
  return parseTensorProto(readFile(path), path);
}

bool looksLikeOnnx(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) return true;
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  // ModelProto's field 1 (ir_version, a varint) is written first by every ONNX writer: tag 0x08.
  return in.get(first) && first == 0x08;
}

} // namespace weft::onnx
