#pragma once
// fusion::plan — the planner's entry point: a verified graph → a FusionPlan under a policy.
// Dispatches to the policy's planner: policy_none.h (one kernel per op), policy_xla.h
// (XLA-style fusion) and policy_astitch.h (AStitch's stitching).
#include "fusion/fusion_plan.h"
#include "ir/graph.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// `ranges`: what the planner may assume about the graph's symbols (a generic program's size
/// class, ir/symbol_ranges.h); it steers heuristics only, and the plan records it.
FusionPlan plan(const ir::Graph& graph, const DeviceSpec& device, Policy policy,
                const ir::SymbolRanges& ranges = {});

} // namespace weft::fusion
