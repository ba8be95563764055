#pragma once
// The modeled GPU time of a compiled program, from what the simulator counted and what the plan
// says about each launch. Every figure this produces is "modeled", never measured. Constants
// and the bandwidth and barrier formulas are fusion/cost_model.h's (shared with the planner).
// Per kernel, in launch order:
//
//   L2 bytes   = re-reads served by L2: a buffer an earlier kernel wrote or read, read again
//                while the bytes touched in between leave it in L2's usable capacity, plus
//                whatever a kernel reads beyond the sizes of the buffers it reads (its own
//                re-reads of a row)
//   DRAM bytes = bytes the simulator counted − L2 bytes (writes always reach DRAM)
//   in flight  = resident warps per SM × loads in flight per thread × bytes a warp moves per
//                load request (its loads and the stores that follow them)
//   latency    = DRAM latency + per warp, between two of its loads: its instructions × a
//                dependent instruction's time + its block barriers × a barrier's wait
//   memory     = DRAM bytes / bandwidth(active SMs, in flight, latency)    (Little's law)
//                + L2 bytes / L2 bandwidth
//   issue      = warp instructions / (issue rate × min(1, blocks / SMs))
//   time       = max(memory, issue) + launch (stream or CUDA graph) + grid barriers × barrier
//
// A program's time is the sum over its kernels (they run one after another). Without the
// plan's launch shapes (ProgramShape) no byte is an L2 hit and every SM is taken as full.
// Not modeled: overlap of consecutive kernels, clocks below boost, L1, SASS instead of PTX.
#include <map>
#include <string>
#include <vector>

#include "fusion/cost_model.h"
#include "weft/device.h"
#include "weft/device_spec.h"

namespace weft {
struct CompiledProgram;
} // namespace weft

namespace weft::bench {

enum class LaunchMode { Stream, Graph };

struct ModelProfile {
  std::string name;
  fusion::CostModel cost;
  LaunchMode launches = LaunchMode::Stream;
  double launchUs() const {
    return launches == LaunchMode::Graph ? cost.graphLaunchUs : cost.launchUs;
  }
};

ModelProfile modelProfile(const DeviceSpec& spec, LaunchMode launches = LaunchMode::Stream);

/// One buffer a launch touches, with its bytes.
struct BufferUse {
  int buffer = -1;
  uint64_t bytes = 0;
};

/// What the plan says about one launch beyond the counters.
struct KernelShape {
  int blockSize = 0;   // 0: unknown (SMs taken as full)
  int blocksPerSM = 0; // resident blocks per SM by occupancy
  /// Independent loads a thread has in flight: a slot phase's steps × the values it loads
  /// per step (the row is loaded before it is used), else the buffers a loop iteration reads.
  int loadsInFlight = 1;
  int clusterSize = 1; // blocks per thread-block cluster as launched
  std::vector<BufferUse> reads, writes;
};
using ProgramShape = std::vector<KernelShape>;

/// The shape of each launch of `program` at `binding` (the binding a generic program runs at).
ProgramShape programShape(const CompiledProgram& program, const std::map<std::string, int64_t>& binding = {});

/// A modeled time and where it comes from (µs). For a program, each component is the sum
/// over its kernels, and boundUs the sum of each kernel's max(memory, issue).
struct ModeledTime {
  double memoryUs = 0, issueUs = 0, boundUs = 0, launchUs = 0, barrierUs = 0;
  uint64_t dramBytes = 0, l2Bytes = 0;
  double totalUs() const { return boundUs + launchUs + barrierUs; }
  ModeledTime& operator+=(const ModeledTime& o);
};

/// One kernel's modeled time, launch overhead included; `l2Bytes` of its reads hit in L2 and
/// `shape` (may be null) gives its occupancy.
ModeledTime modelKernel(const LaunchCounters& k, const ModelProfile& p,
                        const KernelShape* shape = nullptr, uint64_t l2Bytes = 0);
/// A program's modeled time: the sum over its kernels (each component summed apart). `shape`,
/// when given, has one entry per launch (else it is ignored).
ModeledTime modelProgram(const std::vector<LaunchCounters>& kernels, const ModelProfile& p,
                         const ProgramShape& shape = {});
/// Bytes of each launch's reads that L2 serves (the L2 term above), one per launch.
std::vector<uint64_t> l2HitBytes(const std::vector<LaunchCounters>& kernels,
                                 const ProgramShape& shape, double l2Bytes);
/// The memory-bandwidth limit: `bytes` moved at the profile's peak DRAM bandwidth.
double bandwidthLimitUs(uint64_t bytes, const ModelProfile& p);
/// A device-to-device copy whose reads and writes together are `bytes` (half each), modeled as
/// weft's copy kernel runs (bench/copy_kernel.h): the baseline a kernel's speed is a fraction of.
double copyBaselineUs(uint64_t bytes, const ModelProfile& p);

} // namespace weft::bench
