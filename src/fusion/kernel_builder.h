#pragma once
// One stitched kernel from a set of ops and its groups: runs steps 3–7 of the planner in
// order — thread mapping of every dominant (the heaviest group picks the block size; the
// others are mapped at it, elementwise groups proactively re-mapped into their producer's
// tiles), schedule propagation, stitching schemes and launch configuration. Buffers are not
// assigned here (plan_assembly.h does that for the whole plan).
#include <string>
#include <vector>

#include "fusion/dominants.h"
#include "fusion/kernel_plan.h"
#include "ir/graph.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// `ops` in topological order; `outputs` ⊆ ops are the values read after the kernel;
/// `groups` cover `ops` exactly once (identifyDominants guarantees it).
KernelPlan buildKernel(const ir::Graph& g, std::vector<ir::NodeId> ops,
                       std::vector<ir::NodeId> outputs, const std::vector<GroupSeed>& groups,
                       const DeviceSpec& spec, std::string name);

} // namespace weft::fusion
