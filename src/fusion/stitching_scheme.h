#pragma once
// Step 5 of the AStitch planner (AStitch §3.1, §4.3 step 3, §4.4): stitching schemes, stages,
// phases and shared memory. Takes a kernel whose ops, inputs, outputs and groups (with
// mappings and loop spaces) are set. Fills its stages, every op's and input's placement and
// launch.sharedBytes.
//
// Materialised values are the groups' dominants and sub-dominants (and so the kernel's
// outputs); every other op is local (Register, generated inline where used). Stages hold
// materialised values of one group in topological order; a value joins the last stage of its
// group when it reads nothing that stage or a later one produces (sibling reduces over the same
// loop share one pass). A read is block-local (regional) when the consumer's group runs in the
// same tiles as the producer's (same row shape and rows per tile, neither split) and the
// index maps between them keep rows in place (elementwise, a broadcast along the non-tile
// dims); the passive check of reduce-dominated groups and the proactive re-mapping of
// elementwise groups (done before, by the kernel builder) both end here. A stage that reads a
// non-local value of its phase, or whose group runs in other tiles, starts a new phase (Grid
// barrier); otherwise it waits for the values of its phase it reads (Block barrier).
// A value is Shared when every read is block-local and in its own phase, Output when read
// after the kernel, Global (scratch) otherwise. While shared memory exceeds
// DeviceSpec::sharedMemoryPerBlock the largest Shared value is demoted to Global, one at a
// time. Inputs and local ops read by several stages of one group in one phase are kept in
// registers across them (operator-level reuse).
#include "fusion/kernel_plan.h"
#include "ir/graph.h"
#include "weft/device_spec.h"

namespace weft::fusion {

void planStitching(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel);

/// Shared memory a group's reductions need for their own cross-warp combine.
int64_t reductionScratchBytes(const ir::Graph& g, const Group& group, const DeviceSpec& spec,
                              int blockSize);

} // namespace weft::fusion
