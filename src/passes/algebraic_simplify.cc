#include "passes/algebraic_simplify.h"

#include <algorithm>
#include <optional>

#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

namespace {

/// The value of a constant all of whose elements are equal.
std::optional<double> splatValue(const Node& n) {
  if (n.kind != OpKind::Constant) return std::nullopt;
  const auto& values = n.attr<ConstantAttrs>().values;
  if (!std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; }))
    return std::nullopt;
  return values[0];
}

bool isConstant(const Node& n, double value) {
  auto v = splatValue(n);
  return v && *v == value;
}

bool isIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

/// The existing result value `n` reduces to, if an identity makes it one of its operands.
std::optional<NodeId> forwardedOperand(const Graph& r, const Node& n,
                                       const std::vector<NodeId>& ops) {
  auto at = [&](size_t i) -> const Node& { return r.node(ops[i]); };
  switch (n.kind) {
  case OpKind::Add:
    if (isConstant(at(1), 0)) return ops[0];
    if (isConstant(at(0), 0)) return ops[1];
    return std::nullopt;
  case OpKind::Sub:
    if (isConstant(at(1), 0)) return ops[0];
    return std::nullopt;
  case OpKind::Mul:
    if (isConstant(at(1), 1)) return ops[0];
    if (isConstant(at(0), 1)) return ops[1];
    return std::nullopt;
  case OpKind::Div:
    if (isConstant(at(1), 1)) return ops[0];
    return std::nullopt;
  case OpKind::Neg:
    if (at(0).kind == OpKind::Neg) return at(0).operands[0];
    return std::nullopt;
  case OpKind::Reshape:
    if (at(0).type.shape == n.type.shape) return ops[0];
    if (at(0).kind == OpKind::Reshape && r.node(at(0).operands[0]).type.shape == n.type.shape)
      return at(0).operands[0];
    return std::nullopt;
  case OpKind::Transpose:
    if (isIdentityPermutation(n.attr<TransposeAttrs>().perm)) return ops[0];
    return std::nullopt;
  case OpKind::Convert:
    if (at(0).type.dtype == n.type.dtype) return ops[0];
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

} // namespace

Graph algebraicSimplify(const Graph& g) {
  Rewriter rw(g);
  const Graph& r = rw.result();
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    std::vector<NodeId> ops = rw.mappedOperands(n);
    if (auto forwarded = forwardedOperand(r, n, ops)) {
      rw.replaceWith(n, *forwarded);
      continue;
    }
    if (n.kind == OpKind::Reshape && r.node(ops[0]).kind == OpKind::Reshape) {
      rw.replaceWithNew(n, OpKind::Reshape, {r.node(ops[0]).operands[0]}, NoAttrs{});
      continue;
    }
    if (n.kind == OpKind::BroadcastInDim) {
      if (auto v = splatValue(r.node(ops[0]))) {
        rw.replaceWithNew(n, OpKind::Constant, {}, ConstantAttrs{{*v}});
        continue;
      }
    }
    rw.copy(n);
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
