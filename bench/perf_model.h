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
//   grid       = the blocks the GPU launches: the simulator's grid, except for a kernel that
//                fills the SMs (LaunchPlan::fillSMs), whose grid is the blocks the compiled
//                kernel keeps resident (registers from ptxas where it is installed, as the GPU's
//                occupancy query sees them; else the grid the simulator launched)
//   resident   = blocks per SM at once: min(occupancy, grid / SMs)
//   round      = what a warp does between issuing a set of loads and issuing the next: the
//                loads a thread has in flight together (KernelShape::loadsInFlight, k), the
//                DRAM latency, then the work that uses them, which waits for the data:
//                k × (its instructions × an instruction's time + its block barriers × a
//                barrier's wait) per load (loads from a cluster peer's shared memory count as
//                loads); an instruction's time is the longer of a dependent instruction's
//                latency and the block's warps over the SM's issue rate (a block's warps
//                compute between the same barriers, sharing the SM's schedulers)
//   in flight  = resident warps per SM × k × bytes a warp moves per load request (its loads
//                and the stores that follow them)
//   memory     = DRAM bytes / min(streaming bandwidth, active SMs × in flight / round)
//                + L2 bytes / L2 bandwidth                                    (Little's law)
//   issue      = warp instructions / (issue rate × min(1, grid / SMs))
//   time       = max(memory, issue) + launch (stream or CUDA graph) + grid barriers × barrier
//
// So a phase that loads its row and then reduces it with one block per SM keeps nothing in
// flight while it reduces (its round is the latency plus all of the row's work), and more
// resident blocks (or rows) per SM overlap one's work with another's loads. A program's time is
// the sum over its kernels (they run one after another). Without the plan's launch shapes
// (ProgramShape) no byte is an L2 hit and every SM is taken as full. Not modeled: overlap of
// consecutive kernels, clocks below boost, L1, SASS instead of PTX (loops ptxas unrolls keep
// the PTX's loads in flight), except a column reduce's loop, which ptxas unrolls 4 times
// (scripts/sass-loads), a wait at thread-block cluster barriers (counted, not charged),
// a kernel's first and last rounds (a single-round kernel is modeled as streaming).
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
  /// Resident blocks per SM by occupancy: the plan's register bound, or for a kernel that
  /// fills the SMs, the registers ptxas gave it (what the GPU's occupancy query sees).
  int blocksPerSM = 0;
  /// Independent loads a thread has in flight: a slot phase's steps × the values it loads
  /// per step (the row is loaded before it is used), else the buffers a loop iteration reads,
  /// times 4 (at most the loop's trips) for a column reduce's loop, which ptxas unrolls.
  int loadsInFlight = 1;
  int clusterSize = 1; // blocks per thread-block cluster as launched
  bool handsOff = false; // its last phase runs in the last block (fusion::Barrier::LastBlock)
  /// The grid the GPU launches for a kernel that fills the SMs (LaunchPlan::fillSMs):
  /// min(tiles, SMs × blocksPerSM) where blocksPerSM came from ptxas; 0 otherwise (the
  /// simulator's grid is the GPU's).
  int64_t fillGrid = 0;
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
