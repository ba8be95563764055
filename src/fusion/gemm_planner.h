#pragma once
// The GEMM planner: every decision of a dot's kernel (tiles, register blocking, vector widths,
// buffering, the grid), from the dot's shapes and dtype and the DeviceSpec. Codegen's GEMM
// emitter reads the GemmPlan and decides nothing.
#include <optional>

#include "fusion/fusion_plan.h"
#include "fusion/gemm_epilogue.h"
#include "fusion/gemm_plan.h"
#include "ir/graph.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// What a compile allows its GEMMs beyond exact arithmetic in the dot's dtype.
struct GemmOptions {
  /// f32 dots on tensor cores with tf32 inputs (CompileOptions::tf32): each operand element
  /// rounded to a 10-bit significand, products accumulated in f32.
  bool tf32 = false;
  /// f16 and bf16 dots on Hopper's warpgroup MMA (wgmma) on sm_90; false: mma.sync there too.
  bool warpgroupMma = true;
};

/// The plan of dot `dot` of `g` (operands [..., M, K] and [..., K, N]); `fused` names the
/// prologues its operands are read through (their layouts come from operandLayout).
GemmPlan planGemm(const ir::Graph& g, ir::NodeId dot, const DeviceSpec& spec,
                  const GemmEpilogue& fused = {}, const GemmOptions& options = {});

/// Plans every dot of `plan` again under `options` (the policies plan them with the defaults;
/// the compile applies its CompileOptions::tf32 through this, to each version's plan).
void replanGemms(FusionPlan& plan, const GemmOptions& options);

/// Where the elements of the dot operand that `prologue` leads to lie in its source's buffer
/// (its ops, dot side first, composed as strides); nullopt when they do not lie as a
/// GemmOperand can say (a reshape merging dims that are not contiguous, no dim of stride 1
/// among the last two, batch dims that do not flatten to one stride).
std::optional<GemmOperand> operandLayout(const ir::Graph& g, const GemmPrologue& prologue);

/// Where the elements of value `from` (a dot's result, [..., M, N]) go when stored as the last
/// of `store` (layout ops, each reading the one before, the first reading `from`); nullopt
/// when the GEMM could not store it so (the result's rows not contiguous).
std::optional<GemmOperand> storeLayout(const ir::Graph& g, ir::NodeId from,
                                       const std::vector<ir::NodeId>& store);

} // namespace weft::fusion
