#pragma once
// Versions of a generic plan (BladeDISC §5.2's multi-versioning, ShapeMode::Generic): the
// planner's size heuristics (warp or block per row, split rows across blocks, block size) need
// a size, and a symbolic dim has none. One plan that assumes every symbol is large splits a
// 16-row column sum over a whole wave of blocks and reduces 64 token losses with a grid
// barrier. So a symbolic graph is planned once per size class of its symbols (ir::sizeClasses;
// with one or two symbols every combination of their classes, with more the same class for
// all), and once more per class for row lengths that are multiples of kVectorDivisor (and of twice it
// for 2-byte types); classes
// the planner maps alike share one version: usually one to four. Every version is correct for
// every binding its guard admits (ranges steer heuristics; only upper bounds and divisors,
// which the guard guarantees, reach correctness: ir/symbol_ranges.h). The guard picks the
// version at run time (CompiledGraph::program), and the last version, planned with every
// symbol unbounded, serves every binding no other admits.
#include <vector>

#include "fusion/fusion_plan.h"

namespace weft::fusion {

/// Divisibility versions (BladeDISC's vectorized vs scalar): a class is planned again for
/// symbols of rows' innermost dims that are multiples of this, and where that plan differs
/// (128-bit vectors along a symbolic row) it becomes a version guarded by the divisibility.
/// A graph that streams 2-byte elements along such a dim is planned for multiples of twice
/// this too (8 f16 or bf16 make 16 bytes), a version before the multiples of 4 where it differs.
inline constexpr int64_t kVectorDivisor = 4;

/// Graphs with more ops than this get one version (the unbounded class's): dozens of plans of
/// a 10,000-node graph cost seconds, and big graphs are rarely served at many sizes.
inline constexpr size_t kMaxVersionedOps = 2000;

/// With up to this many symbols every combination of their size classes is planned (7^2 = 49
/// combinations); with more, one class for all of them at once.
inline constexpr size_t kMaxIndependentSymbols = 2;

struct PlanVersion {
  FusionPlan plan;     // planned under its first box (plan.symbolRanges)
  ir::ShapeGuard guard; // the boxes it serves; {} for the last version
};

/// `g`'s versions: the divisible ones first, then the plain ones, the last unguarded. A graph
/// without symbols gets one plan with no ranges. `declared` bounds the classes of the symbols it
/// names (--bind B=1..4096): classes outside are not planned, and the last version's plan may
/// rely on the declared upper bound, which the caller must enforce on every binding.
std::vector<PlanVersion> planVersions(const ir::Graph& g, const DeviceSpec& device, Policy policy,
                                      const ir::SymbolRanges& declared = {});

/// The index of the version that serves `binding`: the first whose guard admits it (the last
/// admits every binding).
size_t versionFor(const std::vector<ir::ShapeGuard>& guards, const ir::Binding& binding);

} // namespace weft::fusion
