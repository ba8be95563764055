#pragma once
// The modeled GPU time of a compiled program, from what the simulator counted. Every figure
// this produces is "modeled", never measured. Per kernel:
//
//   busy    = min(1, blocks / SMs)          (a grid smaller than the GPU leaves SMs idle)
//   memory  = global bytes / (DRAM bandwidth × busy)
//   issue   = warp instructions / (SMs × warp schedulers per SM × clock × busy)
//   time    = max(memory, issue) + launch + grid barriers × gridBarrierUs(blocks)
//
// A program's time is the sum over its kernels (they run one after another). Constants, from
// the papers in /work/shared/papers:
//  - launch: kLaunchUs per kernel, the low end of the 5–10 µs a kernel launched from the CPU
//    adds (PyGraph §1; AStitch §6.4.2 says "on the order of 10 microseconds").
//  - grid barrier: AStitch Table 6 (V100, 1024-thread blocks; a kernel holding only a grid
//    barrier): 2.53 µs at 20 blocks to 2.72 µs at 160, interpolated linearly and extended
//    with the same slope beyond 160 blocks. The papers give no figure for A100 or H100; the
//    V100 one is used for every profile.
// Not modeled: caches (every sector the simulator counts is DRAM traffic, L1/L2 hits
// included), latency-bound kernels with too few warps in flight, overlap of consecutive
// kernels, clocks below boost.
#include <string>
#include <vector>

#include "weft/device.h"
#include "weft/device_spec.h"

namespace weft::bench {

constexpr double kLaunchUs = 5.0;

/// AStitch Table 6: µs for one grid barrier across `blocks` blocks.
double gridBarrierUs(uint64_t blocks);

struct ModelProfile {
  std::string name;
  int smCount = 0;
  double bandwidthGBs = 0;    // DRAM, GB/s = 1e3 bytes per µs
  double issueRateGInstr = 0; // warp instructions per ns across the whole device
  double launchUs = kLaunchUs;
};

ModelProfile modelProfile(const DeviceSpec& spec);

/// A modeled time and where it comes from (µs). For a program, each component is the sum
/// over its kernels, and boundUs the sum of each kernel's max(memory, issue).
struct ModeledTime {
  double memoryUs = 0, issueUs = 0, boundUs = 0, launchUs = 0, barrierUs = 0;
  double totalUs() const { return boundUs + launchUs + barrierUs; }
  ModeledTime& operator+=(const ModeledTime& o);
};

/// One kernel's modeled time, launch overhead included.
ModeledTime modelKernel(const LaunchCounters& k, const ModelProfile& p);
/// A program's modeled time: the sum over its kernels (each component summed apart).
ModeledTime modelProgram(const std::vector<LaunchCounters>& kernels, const ModelProfile& p);
/// The memory-bandwidth limit: `bytes` moved at full DRAM bandwidth, nothing else.
double bandwidthLimitUs(uint64_t bytes, const ModelProfile& p);

} // namespace weft::bench
