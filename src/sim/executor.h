#pragma once
// Runs one kernel launch of a decoded Program (program.h) on the SIMT model and returns
// what it counted. Every thread has its own pc (Volta-style independent scheduling); the
// threads of a warp that share a pc (and call frame) execute together, lowest pc first.
// A warp that diverges at a branch runs one side, then the other, until both reach the
// branch's immediate post-dominator (reconvergence.h), and goes on there with the union of
// the two: a reconvergence stack per warp, which calls use too (the callers wait for each
// other at the return point). Blocks run one after another,
// except in a cooperative launch where all blocks are resident and interleaved (a grid
// barrier made of atomics and spinning works). Any memory fault stops the launch with a
// DeviceError naming the kernel, the PTX line, the block and thread and the address.
//
// Counting rules (LaunchCounters in weft/device.h):
//  - warpInstructions / threadInstructions: one per warp-instruction issued (threads that
//    issue it, predicated-off threads included), excluding synchronisation instructions.
//  - Synchronisation: every instruction executed inside a .func whose name starts with
//    "weft_grid_barrier" counts in syncInstructions (not warpInstructions); its global
//    accesses count in syncSectors and in no data counter; its bar.sync are not blockBarriers.
//  - gridBarriers: calls of weft_grid_barrier that every block made: the minimum over blocks
//    of the number of calls a block made (a block's count is that of its warp that called most).
//  - global requests and sectors: per warp-level ld/st whose threads touch global memory
//    (directly or through a generic address), sectors = distinct 32-byte sectors touched.
//    Atomics and reductions on data count in `atomics` and their sectors in globalSectorsWritten.
//  - blockBarriers: completed bar.sync/barrier.sync, once per block per completion.
//  - clusterBarriers: completed barrier.cluster phases, once per cluster per phase.
//  - clusterSharedLoads: per warp-level load that reads another block's shared memory (a
//    shared::cluster load of the own block counts in sharedLoads).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/device_memory.h"
#include "sim/program.h"
#include "weft/device.h"
#include "weft/device_spec.h"

namespace weft::sim {

struct ExecOptions {
  /// Warp instructions the whole launch may execute without any thread making progress
  /// (a store, an atomic, a barrier arrival or an exit) before it is reported as a deadlock.
  uint64_t deadlockInstructions = 1ull << 24;
  /// Report loads of shared memory that no thread of the block has written.
  bool checkUninitialisedShared = true;
  /// Block sampling, for large grids whose blocks all do the same work (0: off, the default).
  /// A non-cooperative launch of more than sampleBlocks + 1 blocks simulates sampleBlocks
  /// blocks spread evenly over the grid (block 0 included) and the last block. When those
  /// sampleBlocks blocks counted exactly the same (every counter), each block not simulated
  /// is counted as a copy of block 0 and LaunchCounters::simulatedBlocks says how many ran;
  /// otherwise the remaining blocks are simulated too and the counters are exact. Blocks not
  /// simulated write nothing, so a sampled launch's outputs are not the kernel's results (and
  /// later launches whose path depends on values count differently than after a full run).
  uint64_t sampleBlocks = 0;
};

struct LaunchRequest {
  const Program* program = nullptr;
  uint32_t function = 0;
  LaunchConfig config;
  std::vector<uint8_t> params; // the kernel's .param buffer, laid out as the kernel declares
  const DeviceSpec* spec = nullptr;
  DeviceMemory* memory = nullptr;
  ExecOptions options;
};

/// Runs the launch to completion; throws DeviceError on any fault.
LaunchCounters executeLaunch(const LaunchRequest& request);

/// Blocks of `fn` resident on one SM with this block size and shared memory, as the
/// occupancy rules of `spec` allow (registers per thread estimated as the register pressure
/// of the kernel's PTX plus 8, at least 16, capped by .maxnreg). 0 when the block cannot
/// run at all.
int blocksPerSM(const Program& program, const Function& fn, const DeviceSpec& spec, int blockSize,
                uint64_t dynamicSharedBytes);
/// Registers per thread the occupancy estimate assumes for `fn`.
int estimatedRegisters(const Function& fn);

} // namespace weft::sim
