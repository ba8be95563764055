#pragma once
// GemmEpilogue: the elementwise consumers of a dot that its GEMM kernel evaluates per result
// element before storing it (BladeDISC §4, compute-intensive fusion): bias adds through a
// broadcast, activations, residual adds, scaling, casts. Decided by the epilogue planner
// (fusion/epilogue_planner.h, astitch only), emitted by codegen's library-kernel emitter, printed
// by `weft plan` under the library call. Plain data. It also carries the operands' prologues
// (the layout ops between a dot and the values it loads), which the same planner decides.
//
// Model. `ops` (topological) compute `result` from the dot's accumulator at each result index
// [batch..., m, n]: every op has the dot's result shape except the broadcasts of `reads`, and
// every value an op reads is the dot, another op of the epilogue, a source (constant, iota:
// regenerated inline) or one of `reads`, loaded from its buffer at the element's index. Only
// `result` leaves the kernel: the dot's own [M, N] result is neither written nor read back.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

struct EpilogueRead {
  /// Element: a tensor of the result's shape (a residual), one load per result element.
  /// Broadcast: a smaller tensor read through a broadcast (a bias along the columns, a scale per
  /// row, a scalar): one load per distinct element a thread's register block needs.
  enum class Kind : uint8_t { Element, Broadcast };
  ir::NodeId value = -1;
  Kind kind = Kind::Element;
};

/// A dot operand read through ops the GEMM absorbs (its prologue): `ops` (transposes,
/// reshapes, broadcasts, elementwise ops; dot side first) lead from `source`, the value the
/// kernel loads, to the operand; the plan's GemmOperand (fusion/gemm_plan.h) says where each
/// element lies in source's buffer. No kernel computes `ops`: each is read only by dots that
/// absorb it or by other absorbed ops.
///
/// Elementwise ops in the chain (a convert, a scale by a constant: one operand from the chain,
/// the others constants or broadcasts of them) are applied to each element as it is loaded,
/// before it is staged; `leaves` are their constant operands no other op reads (evaluated
/// inline, so no kernel computes them either).
struct GemmPrologue {
  ir::NodeId source = -1;
  std::vector<ir::NodeId> ops;
  std::vector<ir::NodeId> leaves;

  bool empty() const { return ops.empty(); }
};

struct GemmEpilogue {
  std::vector<ir::NodeId> ops; // in topological order; empty: the dot's result is stored as is
  ir::NodeId result = -1;      // the value the kernel stores (the last of ops)
  std::vector<EpilogueRead> reads;
  /// Modeled global bytes saved: passes over the [M, N] result (the dot's result written by
  /// the GEMM and read back by the kernel that would have computed `ops`; one when that kernel
  /// wrote `result` for a later step that now reads it from the GEMM), static shapes only.
  int64_t savedBytes = 0;
  /// The operands' prologues (astitch; empty: the operand is loaded as the dot reads it).
  GemmPrologue a, b;
  /// Layout ops (transposes, reshapes) after the result, each the only reader of the one
  /// before: the kernel stores the last of them, each element where that op puts it (the
  /// GemmPlan's c), and no kernel computes them (attention's head merge).
  std::vector<ir::NodeId> store;

  bool empty() const { return ops.empty(); }
  bool hasPrologue() const { return !a.empty() || !b.empty(); }
  /// The value the kernel of `dot` writes: the last store layout op, the epilogue's result, or
  /// the dot's own.
  ir::NodeId stored(ir::NodeId dot) const {
    return !store.empty() ? store.back() : ops.empty() ? dot : result;
  }
  /// The values the kernel loads for the dot's operands: a prologue's source or the operand.
  std::vector<ir::NodeId> operands(std::vector<ir::NodeId> dotOperands) const {
    if (!a.empty()) dotOperands.at(0) = a.source;
    if (!b.empty()) dotOperands.at(1) = b.source;
    return dotOperands;
  }
};

} // namespace weft::fusion
