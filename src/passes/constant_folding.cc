#include "passes/constant_folding.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "ir/interpreter.h"
#include "passes/rewriter.h"
#include "weft/error.h"

namespace weft::passes {

using namespace ir;

namespace {

bool isSplat(const Node& c) {
  return c.attr<ConstantAttrs>().values.size() == 1;
}

bool isSmallStatic(const Shape& s) {
  return isStatic(s) && numElements(s).size() <= kMaxFoldedElements;
}

/// How `n` can be folded given its (mapped) constant operands, if at all.
enum class Fold { No, AsSplat, Whole };

Fold howToFold(const Node& n, const std::vector<const Node*>& operands) {
  if (operands.empty()) return Fold::No; // sources: parameter, constant, iota
  for (const Node* c : operands)
    if (c->kind != OpKind::Constant) return Fold::No;
  if (isElementwise(n.kind) &&
      std::all_of(operands.begin(), operands.end(), [](const Node* c) { return isSplat(*c); }))
    return Fold::AsSplat;
  if (!isSmallStatic(n.type.shape)) return Fold::No;
  for (const Node* c : operands)
    if (!isSmallStatic(c->type.shape)) return Fold::No;
  return Fold::Whole;
}

/// The value of `n` applied to `operands`, each taken at `shape` (or its own shape when
/// shape is nullopt); nullopt when the interpreter refuses it.
std::optional<std::vector<double>> evaluate(const Node& n, const std::vector<const Node*>& operands,
                                            const std::optional<Shape>& shape) {
  Graph mini;
  std::vector<NodeId> ops;
  for (const Node* c : operands)
    ops.push_back(mini.constant(c->type.dtype, shape ? *shape : c->type.shape,
                                c->attr<ConstantAttrs>().values));
  TensorType type{n.type.dtype, shape ? *shape : n.type.shape};
  mini.addOutput(mini.add(n.kind, ops, n.attrs, type, n.name));
  std::vector<HostTensor> out;
  try {
    out = interpret(mini, {});
  } catch (const InputError&) {
    return std::nullopt;
  }
  std::vector<double> values;
  for (int64_t i = 0; i < out[0].numElements(); ++i) {
    values.push_back(out[0].get(i));
    // Constants hold doubles: an i64 result past 2^53 would round, so it is not folded.
    if (isInteger(n.type.dtype) && !exactInDouble(out[0].getInt(i))) return std::nullopt;
  }
  return values;
}

/// One value when all are equal (a splat), else all of them.
std::vector<double> compact(std::vector<double> values) {
  // Bitwise equal, so -0 and +0 stay apart and NaNs compact.
  auto same = [&](double v) { return std::memcmp(&v, &values[0], sizeof v) == 0; };
  if (!values.empty() && std::all_of(values.begin(), values.end(), same))
    values.resize(1);
  return values;
}

} // namespace

Graph foldConstants(const Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    std::vector<const Node*> operands;
    for (NodeId o : n.operands)
      operands.push_back(&rw.mappedNode(o));
    Fold fold = howToFold(n, operands);
    std::optional<std::vector<double>> values;
    if (fold == Fold::AsSplat) values = evaluate(n, operands, Shape{});
    if (fold == Fold::Whole) values = evaluate(n, operands, std::nullopt);
    if (!values || values->empty()) { // an empty result has no value to splat
      rw.copy(n);
      continue;
    }
    rw.replaceWithNew(n, OpKind::Constant, {}, ConstantAttrs{compact(std::move(*values))});
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
