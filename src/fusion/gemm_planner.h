#pragma once
// The GEMM planner: every decision of a dot's kernel (tiles, register blocking, vector widths,
// buffering, the grid), from the dot's shapes and dtype and the DeviceSpec. Codegen's GEMM
// emitter reads the GemmPlan and decides nothing.
#include "fusion/gemm_plan.h"
#include "ir/graph.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// The plan of dot `dot` of `g` (operands [..., M, K] and [..., K, N]).
GemmPlan planGemm(const ir::Graph& g, ir::NodeId dot, const DeviceSpec& spec);

} // namespace weft::fusion
