#pragma once
// The planner's last step: every emission decision of each kernel, per phase (PhasePlan in
// fusion/kernel_plan.h). Runs once a kernel's stages, placements, launch and buffers are final
// (assemblePlan calls it; plans built by hand call it themselves).
//
// Per phase, in the order codegen lays out the phase's shared memory:
//   1. the tile space (the phase's row-reduce or column-reduce dominant, else its first group's
//      elementwise space; a planner schedule's rows fix it);
//   2. the slot plan, when the phase's row-reduce group can run as slots: which values stay in
//      registers (within the register budget the launch leaves beyond kAssumedRegisters, counted
//      over the stages each value is live in) and which across-tiles reduces accumulate there;
//   3. the shared partials of the other across-tiles reduces;
//   4. the staged inputs (row vectors and earlier phases' scratch a block reads many times);
//   5. the tile slices of inputs constant over a tile's rows.
// Every shared-memory choice keeps a cooperative launch's planned blocks per SM resident and
// stays within 48 KB of static shared memory. Then the kernel's .maxnreg: the launch's bound,
// or none for a non-cooperative kernel that keeps values in registers (ptxas spilled at an
// explicit bound where .maxntid alone did not).
#include "fusion/fusion_plan.h"

namespace weft::fusion {

/// Fills kernel.phases, reduceScratchBytes, stagingBytes and registerLimit. Throws weft::Error
/// naming the kernel and op for a plan whose phases codegen cannot emit (a split reduce that
/// shares its phase, a reduce mapping on a non-reduce).
/// `ranges`: the plan's version guard; sizes it bounds count as at most their bound.
void planPhases(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                const ir::SymbolRanges& ranges = {});

/// planPhases for every kernel of the plan, under the plan's symbolRanges.
void planPhases(FusionPlan& plan);

/// Elements per copy of a staged input of `elements` (static) of dtype t by blocks of
/// `blockSize`: a 16-byte vector's worth where that saves more warp instructions than a second
/// copy loop costs each warp (the vector copy's pairs saved, about elements × (1 - 1/vector) /
/// 32, against blockSize / 32), else 1. cluster_200's rows of 768 floats in 128-thread blocks
/// copy as vectors; a bias of 32 in 1024-thread blocks does not.
int stagedCopyVector(ir::DType t, int64_t elements, int blockSize);

/// Slot steps per thread when a row reduce over `loop` (rows = its leading `rowDims` dims, row
/// length static and a multiple of the vector width) with mapping m covers a tile of
/// rowsPerTile rows in one pass; the last step may be ragged. 0 when it does not, or when a
/// thread would hold more than kMaxRowSlotSteps steps.
inline constexpr int kMaxRowSlotSteps = 64;
int rowSlotSteps(const ir::Shape& loop, size_t rowDims, const RowReduceMapping& m, int blockSize,
                 int64_t rowsPerTile);

} // namespace weft::fusion
