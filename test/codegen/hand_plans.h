#pragma once
// KernelPlans built by hand, to exercise codegen's multi-stage machinery (regional stitching in
// shared memory, global stitching across a grid barrier, split reduces) before the AStitch
// planner exists.
#include "fusion/fusion_plan.h"

namespace weft::test {

/// LayerNorm over rows of [rows, hidden] as ONE kernel, block-per-row:
///   stage 0: row reduce sum → mean (shared)      stage 1 (block barrier): x - mean (shared)
///   stage 2 (block barrier): row reduce of squares → rsqrt(var + eps) (shared)
///   stage 3 (block barrier): centered * rstd (output)
fusion::FusionPlan layerNormOneKernel(const DeviceSpec& d, int64_t rows, int64_t hidden,
                                      bool warpPerRow = false);

/// Two phases in one cooperative kernel: row sums of x [rows, cols] into a Global scratch buffer,
/// a grid barrier, then y = x * broadcast(sum) elementwise over the flat [rows * cols].
fusion::FusionPlan gridBarrierKernel(const DeviceSpec& d, int64_t rows, int64_t cols,
                                     int64_t maxBlocks);

/// A row sum of [rows, cols] split across `split` blocks per row, combined with atomics.
fusion::FusionPlan splitRowReduce(const DeviceSpec& d, int64_t rows, int64_t cols, int split);

/// A column reduce (max over axis 0 of [rows, cols]) followed, in the same tile, by an
/// elementwise op on the result: exercises the column tile space and a column-reduce stage
/// materialising a value computed from the reduce.
fusion::FusionPlan columnReduceThenScale(const DeviceSpec& d, int64_t rows, int64_t cols);

} // namespace weft::test
