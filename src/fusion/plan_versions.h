#pragma once
// Versions of a generic plan (BladeDISC §5.2's multi-versioning, ShapeMode::Generic): the
// planner's size heuristics (warp or block per row, split rows across blocks, block size) need
// a size, and a symbolic dim has none. One plan that assumes every symbol is large splits a
// 16-row column sum over a whole wave of blocks and reduces 64 token losses with a grid
// barrier. So a symbolic graph is planned once per size class of its symbols (ir::sizeClasses,
// every symbol in the same class), and classes the planner maps alike share one plan: usually
// two to four versions. Every version is correct for every binding (ranges steer heuristics
// only, ir/symbol_ranges.h); its ranges are the guard that picks it at run time
// (runtime/shape_binding.h), and the last version serves every binding no other admits.
#include <vector>

#include "fusion/fusion_plan.h"

namespace weft::fusion {

/// Graphs with more ops than this get one version (the last class's): ten plans of a
/// 10,000-node graph cost seconds, and big graphs are rarely served at many sizes.
inline constexpr size_t kMaxVersionedOps = 2000;

/// `g`'s versions in class order; each plan's symbolRanges is its guard (the union of the
/// classes it serves). A graph without symbols gets one plan with no ranges.
std::vector<FusionPlan> planVersions(const ir::Graph& g, const DeviceSpec& device, Policy policy);

/// The index of the version that serves `binding`: the first whose ranges admit it, else the
/// last.
size_t versionFor(const std::vector<ir::SymbolRanges>& guards, const ir::Binding& binding);

} // namespace weft::fusion
