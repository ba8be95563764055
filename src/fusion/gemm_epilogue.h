#pragma once
// GemmEpilogue: the elementwise consumers of a dot that its GEMM kernel evaluates per result
// element before storing it (BladeDISC §4, compute-intensive fusion): bias adds through a
// broadcast, activations, residual adds, scaling, casts. Decided by the epilogue planner
// (fusion/epilogue_planner.h, astitch only), emitted by codegen's library-kernel emitter, printed
// by `weft plan` under the library call. Plain data.
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

struct GemmEpilogue {
  std::vector<ir::NodeId> ops; // in topological order; empty: the dot's result is stored as is
  ir::NodeId result = -1;      // the value the kernel stores (the last of ops)
  std::vector<EpilogueRead> reads;
  /// Modeled global bytes saved: passes over the [M, N] result (the dot's result written by
  /// the GEMM and read back by the kernel that would have computed `ops`; one when that kernel
  /// wrote `result` for a later step that now reads it from the GEMM), static shapes only.
  int64_t savedBytes = 0;

  bool empty() const { return ops.empty(); }
};

} // namespace weft::fusion
