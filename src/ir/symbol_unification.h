#pragma once
// Dim equality over symbols (issue 15; BladeDISC §3). When an op needs two dims to be equal and
// they differ only by naming — an elementwise op on [B, 768] and [S, 768], a broadcast from [N]
// to [B], two ONNX inputs whose batch dims were exported under different names, a reshape of
// [B, 768] into [S, 768] — the graph does not reject it: one symbol is replaced everywhere by
// the other dim (S := B, or N := 768 against a static dim) and the graph records the equality.
// Every later fact about dims (a broadcast being the identity, two loops having one extent, a
// reshape collapsing dims) is then plain structural equality of Dims, which the passes and the
// planner already use. A binding is checked against the recorded equalities: S = 8 with B = 16
// is an error naming the op that needs them equal; a binding may leave S out.
//
// What unifies: a lone symbol (factor 1, one symbol: "S") with any dim it does not occur in.
// "2*B" against "3*S" or "B*S" against "N*M" are left to shape inference, which rejects them
// with its usual message.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/op.h"
#include "ir/shape.h"

namespace weft::ir {

/// `symbol` stands for `value` everywhere in the graph, because `where` needs them equal.
struct SymbolEquality {
  std::string symbol;
  Dim value;
  std::string where; // "op \"z\" (add): operand 1 dim 0"
};

/// A symbol and the dim to replace it with so that `a == b`, when one of them is a lone symbol
/// not occurring in the other: b's symbol when both are (operand 0 keeps its names), the
/// symbol's when the other is static. Nullopt when a == b or they cannot be unified.
std::optional<std::pair<std::string, Dim>> unifier(const Dim& a, const Dim& b);

/// One pair of dims an op needs equal, and where (for the recorded equality).
struct RequiredEquality {
  Dim a, b;
  std::string where;
};

/// The dim pairs `kind` needs equal among its operands' shapes (elementwise operands position
/// by position, dot's batch and contracting dims, concatenate's non-axis dims) and between its
/// operand and declared result (broadcast_in_dim's mapped dims that are not static 1, reshape's
/// element counts with their common factors cancelled). Pairs of mismatched rank are skipped:
/// shape inference rejects those.
std::vector<RequiredEquality> requiredEqualities(OpKind kind,
                                                 const std::vector<const Shape*>& operands,
                                                 const Attrs& attrs,
                                                 const std::optional<Shape>& declared);

/// `d` with every occurrence of `symbol` replaced by `value`.
Dim substitute(const Dim& d, const std::string& symbol, const Dim& value);
Shape substitute(const Shape& s, const std::string& symbol, const Dim& value);

/// Throws InputError when `binding` gives a symbol a size its equality contradicts, naming both
/// sizes and the op that needs them equal. Symbols the binding leaves out are not needed (the
/// graph no longer uses them).
void checkBinding(const std::vector<SymbolEquality>& equalities, const Binding& binding);

/// "S = B (op \"z\" (add): operand 1 dim 0); N = 768 (...)"; "" when there are none.
std::string equalitiesStr(const std::vector<SymbolEquality>& equalities);

} // namespace weft::ir
