#pragma once
// The GPU cost model the planner and `weft bench` share: its constants per device profile and
// the formulas that use them (defaults below: the h100 profile). Every time it gives is
// "modeled", never measured. The constants of the h100 profile are fitted to the H100 times in
// docs/performance.md ("The model against the H100") of the plans weft still makes; the other
// profiles scale them by their own specifications.
//
//   bandwidth(active SMs, bytes in flight per SM)
//       = min(dramGBs, active SMs × bytes in flight per SM / latency)    (Little's law)
//   latency = DRAM latency + what a warp does after its loads come back and before it loads
//             again: its instructions (each the longer of a dependent instruction's wait and
//             the block's warps over the SM's issue rate) and block barriers, for all of the
//             loads it has in flight at once (bench/perf_model.h counts them)
//   grid barrier = barrierUs + barrierPerBlockUs × blocks
//   handoff to the last block = 2 × latency
//
// The planner weighs a split row's grid barrier with them (thread_mapping.cc); bench/perf_model.h
// adds the L2 and issue terms over what the simulator counted.
#include <cstdint>

#include "weft/device_spec.h"

namespace weft::fusion {

struct CostModel {
  int smCount = 132;
  double peakDramGBs = 3350;  // the profile's DRAM bandwidth (the bandwidth limit's)
  double dramGBs = 2603;      // what streaming reaches: peak × copy efficiency
  double l2GBs = 7705;        // re-reads that hit in L2
  double l2Bytes = 38e6;      // L2 capacity that holds data across kernels (effective)
  double latencyNs = 450;     // DRAM latency, for Little's law
  double dependentInstructionNs = 0; // per dependent warp instruction after a warp's loads
  double blockBarrierNs = 151;       // per block barrier a warp waits at after its loads
  double issueGInstr = 926;   // warp instructions per ns over the device
  double launchUs = 3.44;     // per kernel launched on a stream, back to back
  double graphLaunchUs = 1.0; // per kernel of a replayed CUDA graph
  double barrierUs = 2.94;    // one grid barrier ...
  double barrierPerBlockUs = 0.002; // ... plus this per block it waits for
};

CostModel costModel(const DeviceSpec& spec);

/// DRAM bandwidth (GB/s = bytes per ns) reached by `activeSMs` SMs holding `bytesInFlightPerSM`
/// bytes of outstanding loads each, each load waiting `latencyNs` (0: the model's latency).
double achievedBandwidthGBs(const CostModel& m, double activeSMs, double bytesInFlightPerSM,
                            double latencyNs = 0);

/// What one thread instruction costs in DRAM bytes on a device that is bandwidth-bound: the
/// bytes it streams in the time it issues one warp instruction, per lane
/// (dramGBs / (issueGInstr × 32); h100: 0.088). Store against recompute weighs regenerating a
/// value (its instructions) against storing it (its bytes) with it.
double dramBytesPerThreadInstruction(const CostModel& m);

/// µs of one grid barrier across `blocks` blocks.
double gridBarrierUs(const CostModel& m, uint64_t blocks);

/// µs a handoff to the last block (fusion/last_block_handoff.h) adds after the other blocks are
/// done: the last block's add on the counter and its phase's first loads of what they wrote
/// each wait a memory round trip (the rest of its phase is in the kernel's counted work).
/// Measured on the H100 (2026-11-27): log-softmax + NLL took 0.7-1.5 us more than its rows
/// alone; two round trips are 0.9.
double handoffUs(const CostModel& m);

/// µs to stream `bytes` through DRAM with `blocks` blocks of `blockSize` threads, each thread
/// holding `bytesPerThread` bytes of loads in flight, `blocksPerSM` blocks resident per SM.
double streamUs(const CostModel& m, double bytes, int64_t blocks, int blockSize,
                double bytesPerThread, int blocksPerSM);

} // namespace weft::fusion
