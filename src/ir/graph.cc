#include "ir/graph.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "ir/shape_inference.h"
#include "weft/error.h"

namespace weft::ir {

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

std::string describe(const Node& n) { return fmt::format("op \"{}\" ({})", n.name, opName(n.kind)); }

std::string Graph::freshName(OpKind kind) {
  for (;;) {
    std::string name = fmt::format("{}.{}", opName(kind), ++nameCounters_[static_cast<size_t>(kind)]);
    if (!find(name)) return name;
  }
}

NodeId Graph::add(OpKind kind, std::vector<NodeId> operands, Attrs attrs, std::optional<TensorType> declared,
                  std::string name) {
  if (name.empty()) name = freshName(kind);
  std::string where = fmt::format("op \"{}\" ({})", name, opName(kind));
  if (find(name)) throw InputError(fmt::format("{}: the name \"{}\" is already used by another value", where, name));
  std::vector<const TensorType*> types;
  for (size_t i = 0; i < operands.size(); ++i) {
    NodeId o = operands[i];
    if (o < 0 || static_cast<size_t>(o) >= nodes_.size())
      throw InputError(fmt::format("{}: operand {} refers to an undefined value", where, i));
    types.push_back(&nodes_[static_cast<size_t>(o)].type);
  }
  if (kind == OpKind::Parameter) attrs = ParameterAttrs{static_cast<int>(inputs_.size())};
  // Symbols unified away earlier may still be named by a declared type built before then.
  if (declared)
    for (const SymbolEquality& e : equalities_)
      declared->shape = substitute(declared->shape, e.symbol, e.value);
  // Dims this op needs equal that differ only by a symbol's name: unify (symbol_unification.h).
  for (int round = 0; round < 64; ++round) {
    std::vector<const Shape*> shapes;
    for (NodeId o : operands) shapes.push_back(&nodes_[static_cast<size_t>(o)].type.shape);
    std::optional<Shape> declaredShape;
    if (declared) declaredShape = declared->shape;
    std::optional<std::pair<std::string, Dim>> u;
    std::string at;
    for (const RequiredEquality& r : requiredEqualities(kind, shapes, attrs, declaredShape))
      if ((u = unifier(r.a, r.b))) {
        at = r.where;
        break;
      }
    if (!u) break;
    unify(u->first, u->second, fmt::format("{}: {}", where, at));
    if (declared) declared->shape = substitute(declared->shape, u->first, u->second);
  }
  TensorType type;
  try {
    type = inferType(where, kind, types, attrs, declared);
  } catch (const InputError& e) {
    if (std::string_view(e.what()).substr(0, where.size()) == where) throw;
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
  Node n;
  n.id = static_cast<NodeId>(nodes_.size());
  n.name = std::move(name);
  n.kind = kind;
  n.operands = std::move(operands);
  n.type = std::move(type);
  n.attrs = std::move(attrs);
  byName_.emplace(n.name, n.id);
  nodes_.push_back(std::move(n));
  if (kind == OpKind::Parameter) inputs_.push_back(nodes_.back().id);
  return nodes_.back().id;
}

void Graph::unify(const std::string& symbol, const Dim& value, std::string where) {
  for (Node& n : nodes_)
    n.type.shape = substitute(n.type.shape, symbol, value);
  for (SymbolEquality& e : equalities_)
    e.value = substitute(e.value, symbol, value);
  equalities_.push_back({symbol, value, std::move(where)});
}

NodeId Graph::parameter(std::string name, TensorType type) {
  return add(OpKind::Parameter, {}, ParameterAttrs{}, std::move(type), std::move(name));
}
NodeId Graph::constant(DType dtype, Shape shape, std::vector<double> values, std::string name) {
  return add(OpKind::Constant, {}, ConstantAttrs{std::move(values)}, TensorType{dtype, std::move(shape)}, std::move(name));
}
NodeId Graph::iota(DType dtype, Shape shape, int64_t axis, std::string name) {
  return add(OpKind::Iota, {}, IotaAttrs{axis}, TensorType{dtype, std::move(shape)}, std::move(name));
}
NodeId Graph::unary(OpKind kind, NodeId x, std::string name) {
  if (!isUnary(kind) || kind == OpKind::Convert)
    throw InputError(fmt::format("unary(): {} is not a unary elementwise op", opName(kind)));
  return add(kind, {x}, NoAttrs{}, std::nullopt, std::move(name));
}
NodeId Graph::convert(NodeId x, DType to, std::string name) {
  return add(OpKind::Convert, {x}, NoAttrs{}, TensorType{to, node(x).type.shape}, std::move(name));
}
NodeId Graph::binary(OpKind kind, NodeId a, NodeId b, std::string name) {
  if (!isBinary(kind) || kind == OpKind::Compare)
    throw InputError(fmt::format("binary(): {} is not a binary elementwise op", opName(kind)));
  return add(kind, {a, b}, NoAttrs{}, std::nullopt, std::move(name));
}
NodeId Graph::compare(CompareDir dir, NodeId a, NodeId b, std::string name) {
  return add(OpKind::Compare, {a, b}, CompareAttrs{dir}, std::nullopt, std::move(name));
}
NodeId Graph::select(NodeId pred, NodeId onTrue, NodeId onFalse, std::string name) {
  return add(OpKind::Select, {pred, onTrue, onFalse}, NoAttrs{}, std::nullopt, std::move(name));
}
NodeId Graph::clamp(NodeId lo, NodeId x, NodeId hi, std::string name) {
  return add(OpKind::Clamp, {lo, x, hi}, NoAttrs{}, std::nullopt, std::move(name));
}
NodeId Graph::broadcastInDim(NodeId x, Shape shape, std::vector<int64_t> dims, std::string name) {
  return add(OpKind::BroadcastInDim, {x}, BroadcastAttrs{std::move(dims)}, TensorType{node(x).type.dtype, std::move(shape)},
             std::move(name));
}
NodeId Graph::reshape(NodeId x, Shape shape, std::string name) {
  return add(OpKind::Reshape, {x}, NoAttrs{}, TensorType{node(x).type.dtype, std::move(shape)}, std::move(name));
}
NodeId Graph::transpose(NodeId x, std::vector<int64_t> perm, std::string name) {
  return add(OpKind::Transpose, {x}, TransposeAttrs{std::move(perm)}, std::nullopt, std::move(name));
}
NodeId Graph::slice(NodeId x, std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides,
                    std::string name) {
  return add(OpKind::Slice, {x}, SliceAttrs{std::move(starts), std::move(limits), std::move(strides)}, std::nullopt,
             std::move(name));
}
NodeId Graph::concatenate(std::vector<NodeId> xs, int64_t axis, std::string name) {
  return add(OpKind::Concatenate, std::move(xs), ConcatAttrs{axis}, std::nullopt, std::move(name));
}
NodeId Graph::gather(NodeId operand, std::vector<NodeId> indices, std::vector<int64_t> axes,
                     std::vector<int64_t> dims, std::string name) {
  indices.insert(indices.begin(), operand);
  return add(OpKind::Gather, std::move(indices), GatherAttrs{std::move(axes), std::move(dims)},
             std::nullopt, std::move(name));
}
NodeId Graph::pad(NodeId x, std::vector<int64_t> low, std::vector<int64_t> high, double value, std::string name) {
  return add(OpKind::Pad, {x}, PadAttrs{std::move(low), std::move(high), value}, std::nullopt, std::move(name));
}
NodeId Graph::reduce(ReduceKind kind, NodeId x, std::vector<int64_t> axes, std::string name) {
  return add(OpKind::Reduce, {x}, ReduceAttrs{kind, std::move(axes)}, std::nullopt, std::move(name));
}
NodeId Graph::dot(NodeId a, NodeId b, std::string name) {
  return add(OpKind::Dot, {a, b}, NoAttrs{}, std::nullopt, std::move(name));
}

void Graph::addOutput(NodeId id) {
  if (id < 0 || static_cast<size_t>(id) >= nodes_.size())
    throw InputError(fmt::format("output refers to an undefined value (id {})", id));
  if (!isOutput(id)) outputs_.push_back(id);
}

void Graph::restoreBuildState(std::vector<SymbolEquality> equalities,
                              std::vector<int> nameCounters) {
  if (nameCounters.size() != size_t(kNumOpKinds))
    throw std::invalid_argument(fmt::format("restoreBuildState: {} fresh-name counters for {} op kinds",
                                            nameCounters.size(), kNumOpKinds));
  equalities_ = std::move(equalities);
  nameCounters_ = std::move(nameCounters);
}

void Graph::setOutputs(std::vector<NodeId> ids) {
  outputs_.clear();
  for (NodeId id : ids) addOutput(id);
}

bool Graph::isOutput(NodeId id) const { return std::find(outputs_.begin(), outputs_.end(), id) != outputs_.end(); }

std::optional<NodeId> Graph::find(const std::string& name) const {
  auto it = byName_.find(name);
  if (it == byName_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::vector<NodeId>> Graph::users() const {
  std::vector<std::vector<NodeId>> out(nodes_.size());
  for (const Node& n : nodes_)
    for (NodeId o : n.operands) {
      auto& u = out[static_cast<size_t>(o)];
      if (u.empty() || u.back() != n.id) u.push_back(n.id);
    }
  return out;
}

std::vector<std::string> Graph::symbols() const {
  std::set<std::string> all;
  for (const Node& n : nodes_)
    for (const auto& s : symbolsOf(n.type.shape)) all.insert(s);
  return {all.begin(), all.end()};
}

void verify(const Graph& g) {
  if (g.outputs().empty()) throw InputError("the graph has no outputs; name at least one value in \"outputs\"");
  std::set<std::string> names;
  for (const Node& n : g.nodes()) {
    std::string where = describe(n);
    if (!names.insert(n.name).second)
      throw InputError(fmt::format("{}: the name \"{}\" is used by more than one value", where, n.name));
    std::vector<const TensorType*> types;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      NodeId o = n.operands[i];
      if (o < 0 || o >= n.id)
        throw InputError(fmt::format("{}: operand {} is not defined before its use", where, i));
      types.push_back(&g.node(o).type);
    }
    std::optional<TensorType> declared = n.type;
    inferType(where, n.kind, types, n.attrs, declared);
  }
}

Graph bindSymbols(const Graph& g, const Binding& binding) {
  checkBinding(g.symbolEqualities(), binding);
  Graph out;
  for (const Node& n : g.nodes()) {
    TensorType t = n.type;
    try {
      t.shape.clear();
      for (int64_t v : evaluate(n.type.shape, binding)) t.shape.push_back(Dim(v));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: shape {}: {}", describe(n), shapeStr(n.type.shape), e.what()));
    }
    out.add(n.kind, n.operands, n.attrs, t, n.name);
  }
  out.setOutputs(g.outputs());
  return out;
}

std::vector<bool> liveNodes(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (NodeId o : g.outputs())
    live[static_cast<size_t>(o)] = true;
  for (size_t i = g.size(); i-- > 0;) // operands come before users: one backward sweep
    if (live[i])
      for (NodeId o : g.node(static_cast<NodeId>(i)).operands)
        live[static_cast<size_t>(o)] = true;
  return live;
}

} // namespace weft::ir
