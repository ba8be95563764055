#pragma once
// The `astitch` policy (the default): every stitch scope (stitch_scope.h) becomes one kernel,
// planned by the AStitch steps in order — dominants and groups (dominants.h), thread mapping
// (thread_mapping.h), schedule propagation (schedule.h), stitching schemes
// (stitching_scheme.h), launch configuration (launch_config.h) — then assembled with library
// calls for compute-intensive ops and memory-planned (plan_assembly.h).
#include "fusion/fusion_plan.h"

namespace weft::fusion {

/// `gemmEpilogues`: run dots' elementwise consumers in their GEMM kernels (epilogue_planner.h);
/// false only to measure what that saves.
FusionPlan planAStitch(const ir::Graph& g, const DeviceSpec& spec,
                       const ir::SymbolRanges& ranges = {}, bool gemmEpilogues = true);

/// The values of `scopeOps` read after the scope: graph outputs and values with a reader
/// outside it.
std::vector<ir::NodeId> scopeOutputs(const ir::Graph& g, const std::vector<ir::NodeId>& scopeOps);

} // namespace weft::fusion
