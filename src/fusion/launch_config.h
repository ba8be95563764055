#pragma once
// Step 7 of the AStitch planner (AStitch §4.5): resource-aware launch configuration by
// assume-relax-apply. Assume a register bound (what the plan says the kernel's code keeps live,
// at least 32: estimateRegisters), compute how many blocks one SM holds with
// the kernel's block size and planned shared memory, relax the register bound as far as that block
// count still fits, and apply it (LaunchPlan::maxRegisters → .maxnreg). Guarantees: a kernel with a
// grid barrier (or a split or acrossTiles reduce) is cooperative and its grid never exceeds one
// wave (maxBlocks = blocks per wave); every kernel is capped at one wave, the tile loop covering
// the rest (vertical packing).
#include <cstdint>

#include "fusion/kernel_plan.h"
#include "weft/device_spec.h"

namespace weft::fusion {

inline constexpr int kAssumedRegisters = 32;
/// The bound assumed for a kernel that keeps values in registers across its stages
/// (ValuePlacement::registerReuse) or accumulates an acrossTiles reduce per thread over many
/// tiles. With 32, ptxas spilled such kernels (layer norm backward: 80-128 bytes per thread,
/// Figure 7: 4 bytes on sm_80).
inline constexpr int kRegisterHeavy = 64;

/// Registers per thread the kernel's row-reduce slot phases keep values in (codegen's
/// operator-level reuse): per unsplit row-reduce group, the elements each thread holds of a row
/// times the values that save memory traffic when kept — inputs read by several of its stages
/// (ValuePlacement::registerReuse) and the per-thread accumulators of acrossTiles reduces over
/// the group's loop (column sums accumulated in the row reduce's slots). Recomputed ops get
/// what is left. The most of any group.
int slotRegisters(const ir::Graph& g, const KernelPlan& kernel);

/// What one thread of a kernel keeps live, in 32-bit registers, estimated from its plan (groups,
/// mappings, vector widths, elements per thread, the values each loop loads and their dtypes,
/// split factors, symbolic sizes): the launch sizes a cooperative grid by it and bounds ptxas
/// with the bound it relaxes to (.maxnreg), so it must cover what ptxas allocates without
/// spilling. Its constants are fitted to ptxas's register counts on sm_80 and sm_90
/// (test/codegen/ptxas_test.cc checks every example kernel against the bound).
struct RegisterEstimate {
  /// Thread and block ids, the tile and row loops' counters and bounds, accumulators, shuffles.
  int base = 0;
  /// One per buffer the kernel reads or writes (ptxas keeps about half of the 64-bit bases live,
  /// reloading the rest from the parameter space).
  int pointers = 0;
  /// The hottest loop's values in flight: per step, the words of every value a group's ops load
  /// (inputs, values other kernels or stages stored, staged rows) at its vector width; a row
  /// reduce of up to 6 static steps per thread is unrolled whole (half of its loads live at
  /// once), a longer or symbolic row about two steps at a time; an elementwise step keeps half
  /// its loads, a column reduce a few rows of its column.
  int stream = 0;
  /// A split reduce's combine after its grid barrier: one thread folds every split part of a
  /// result, loaded together; with symbolic sizes each part has its own 64-bit address (3/8 of
  /// a register per part measured), with static sizes the loads are vectorised (1/8); ptxas
  /// keeps at most 64 registers of them in flight.
  int combine = 0;
  /// Values kept in registers across stages (slotRegisters).
  int slots = 0;
  int total() const { return base + pointers + std::max(stream, combine) + slots; }
};
RegisterEstimate estimateRegisters(const ir::Graph& g, const KernelPlan& kernel);

/// The register bound the assume step starts from for `kernel`: estimateRegisters rounded up to
/// a multiple of 8, at least 32. Kernels that keep values in registers across stages or
/// accumulate across tiles: kRegisterHeavy when not cooperative (they get no .maxnreg); when
/// cooperative at least kRegisterHeavy + slotRegisters.
int assumedRegisters(const ir::Graph& g, const KernelPlan& kernel);

/// Whether the kernel needs a cooperative launch: a grid barrier between stages, or a split or
/// acrossTiles reduce combined across blocks.
bool isCooperative(const KernelPlan& kernel);

/// Blocks per SM: weft::blocksPerSM (weft/device_spec.h), the one occupancy rule shared with the
/// simulator.
using weft::blocksPerSM;

/// smCount × blocksPerSM: the blocks that run concurrently — the most a grid barrier allows.
int64_t blocksPerWave(const DeviceSpec& spec, int blockSize,
                      int registersPerThread = kAssumedRegisters, int64_t sharedBytes = 0);

struct RegisterBound {
  int blocksPerSM = 0;  // under the assumed bound
  int maxRegisters = 0; // the relaxed bound that still keeps blocksPerSM blocks resident
};
/// Assume `assumed` registers, then relax: the largest multiple of 8 (≤ the device maximum)
/// with which blocksPerSM blocks of blockSize threads still fit in the register file.
RegisterBound relaxRegisterBound(const DeviceSpec& spec, int blockSize, int64_t sharedBytes,
                                 int assumed = kAssumedRegisters);

/// Fills kernel.launch from its groups, stages and placements. kernel.launch.blockSize must be
/// set (the thread mapping chose it); sharedBytes is the kernel's planned shared memory.
void configureLaunch(const ir::Graph& g, KernelPlan& kernel, const DeviceSpec& spec);

} // namespace weft::fusion
