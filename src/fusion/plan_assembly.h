#pragma once
// The last step every policy shares: stitched kernels and library calls → a FusionPlan.
// Takes the kernels a policy built (each with ops, inputs, outputs, groups, stages and
// placements) and the graph; returns the plan with steps in a dependency order (library calls
// for dot ops), one buffer per graph input, graph output, value crossing steps (Intermediate),
// Global-stitched value and split-reduce partials (Scratch), every placement's buffer filled
// in, and memory planning applied (memory_planning.h).
#include <map>
#include <vector>

#include "fusion/fusion_plan.h"

namespace weft::fusion {

/// `ranges`: the version guard the kernels were planned under (FusionPlan::symbolRanges).
/// `epilogues`: per dot, the consumers its library step computes (no kernel holds them).
FusionPlan assemblePlan(const ir::Graph& g, const DeviceSpec& spec, Policy policy,
                        std::vector<KernelPlan> kernels, const ir::SymbolRanges& ranges = {},
                        const std::map<ir::NodeId, GemmEpilogue>& epilogues = {});

} // namespace weft::fusion
