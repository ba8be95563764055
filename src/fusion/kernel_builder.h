#pragma once
// One stitched kernel from a set of ops and its groups: runs steps 3–6 of the planner in
// order — thread mapping of every dominant, schedule propagation, stitching schemes and launch
// configuration. The heaviest group (row reduce, then column reduce, then elementwise; then the
// biggest loop) picks the block size and every other group is mapped at it: row reduces in
// their own tiles; other reduces over a row reduce's loop or rows across that group's tiles
// (Group::acrossTiles), else in their own; elementwise groups proactively re-mapped into the
// tiles of a reduce group they read from or feed (Group::follows), else flat. Buffers are not
// assigned here (plan_assembly.h does that for the whole plan).
#include <string>
#include <vector>

#include "fusion/dominants.h"
#include "fusion/kernel_plan.h"
#include "ir/graph.h"
#include "ir/symbol_ranges.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// `ops` in topological order; `outputs` ⊆ ops are the values read after the kernel;
/// `groups` cover `ops` exactly once (identifyDominants guarantees it). `ranges`: what the
/// mapping heuristics may assume about the graph's symbols (ir/symbol_ranges.h).
KernelPlan buildKernel(const ir::Graph& g, std::vector<ir::NodeId> ops,
                       std::vector<ir::NodeId> outputs, const std::vector<GroupSeed>& groups,
                       const DeviceSpec& spec, std::string name,
                       const ir::SymbolRanges& ranges = {});

} // namespace weft::fusion
