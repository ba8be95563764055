#pragma once
// Step 5 of the AStitch planner (AStitch §3.1, §4.3 step 3, §4.4): stitching schemes, stages,
// phases and shared memory. Takes a kernel whose ops, inputs, outputs and groups (with
// mappings and loop spaces) are set. Fills its stages, every op's and input's placement and
// launch.sharedBytes.
//
// Materialised values are the groups' dominants and sub-dominants (and so the kernel's
// outputs); every other op is local (Register, generated inline where used). A read is
// block-local (regional) when the consumer's group runs in the same tiles as the producer's
// (same row shape and rows per tile, neither split) and the index maps between them keep rows
// in place (elementwise, a broadcast along the non-tile dims, the group's own reduce); the
// passive check of reduce-dominated groups and the proactive re-mapping of elementwise groups
// (done before, by the kernel builder) both end here.
// Phases: each value gets a level, one more than every value it reads non-locally and equal
// to those it reads locally (as soon as possible), after which a value read only locally moves
// to its earliest reader's level (so regional values share a phase with their consumers).
// Stages hold values of one group and level; a value joins the earliest stage of its group
// and level after every stage it reads from (sibling reduces over one loop share a pass). A
// stage starts a new phase (Grid barrier) when its level changes, its group runs in other
// tiles, it reads a non-local value of the phase, or it or the stage before it holds a split
// reduce (whose cross-block combine needs the phase to itself); otherwise it waits with a Block
// barrier for the values of its phase it reads. A value is Shared when every read is block-local
// and in its own phase, Output when read after the kernel, Global (scratch) otherwise. While shared
// memory exceeds DeviceSpec::sharedMemoryPerBlock the largest Shared value is demoted to Global,
// one at a time (and the phases are planned again). Inputs and local ops read by several stages of
// one group are kept in registers across them (operator-level reuse) when each thread's share of a
// tile is small and, across a grid barrier, when one wave holds every tile.
#include "fusion/kernel_plan.h"
#include "ir/graph.h"
#include "ir/symbol_ranges.h"
#include "weft/device_spec.h"

namespace weft::fusion {

void planStitching(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                   const ir::SymbolRanges& ranges = {});

/// Shared memory a group's reductions need for their own cross-warp combine.
int64_t reductionScratchBytes(const ir::Graph& g, const Group& group, const DeviceSpec& spec,
                              int blockSize);

/// Static shared memory codegen's reduce emitters take for a group of this mapping in blocks
/// of `blockSize` threads (block-per-row combines, a warp-per-row pass's coalesced results,
/// column tiles), beside the plan's shared values; 0 for an elementwise mapping. The planner
/// keeps the plan's shared values within the per-block limit with this added.
int64_t reduceEmitterScratchBytes(const ThreadMapping& mapping, int blockSize);

} // namespace weft::fusion
