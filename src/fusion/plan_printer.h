#pragma once
// Stable text and Graphviz DOT forms of KernelPlans and FusionPlans (`weft plan`, tests).
// The text lists, per kernel: its ops, inputs and outputs, each group (dominant, sub-dominants,
// thread mapping, ops), the storage of every value, the stages in order with the barrier
// before each and what they materialise, and the launch configuration with shared bytes.
// Values are named by their graph names (%name); the output is deterministic.
#include <string>

#include "fusion/fusion_plan.h"
#include "fusion/kernel_plan.h"
#include "ir/graph.h"

namespace weft::fusion {

std::string storageName(Storage s); // "register", "shared", "global", "output", "input"
std::string barrierName(Barrier b); // "none", "block", "grid"
std::string
mappingStr(const ThreadMapping& m); // "row_reduce(warp_per_row, threads_per_row=8, ...)"

std::string printKernelPlan(const KernelPlan& k, const ir::Graph& graph);
std::string printFusionPlan(const FusionPlan& plan);

/// Graphviz: one cluster per kernel (one sub-cluster per group), ops as nodes coloured by
/// storage, dominants drawn bold, edges along operands (also across kernels).
std::string kernelPlanDot(const KernelPlan& k, const ir::Graph& graph);
std::string fusionPlanDot(const FusionPlan& plan);

} // namespace weft::fusion
