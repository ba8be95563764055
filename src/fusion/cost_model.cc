#include "fusion/cost_model.h"

#include <algorithm>

namespace weft::fusion {
namespace {

// Fitted by bench/calibrate_model.py to the 16 H100 times in docs/performance.md ("The model
// against the H100") whose plans weft still makes (6 held out; 11 measured on plans changed
// since), with bench/perf_model.h's formula: a round's work is all of its loads' work, and an
// instruction costs at least the block's warps over the SM's issue rate. The fit cannot tell a
// dependent-instruction wait of 0 from one of 4.6 ns (the issue term is the longer wherever it
// matters); 0. The DRAM latency sits at its lower bound, as in the fit before.
constexpr double kCopyEfficiency = 0.777;     // share of peak DRAM bandwidth streaming reaches
constexpr double kL2UsableFraction = 0.76;    // share of L2 that keeps data from kernel to kernel
constexpr double kL2OverDram = 2.3;           // L2 bandwidth for hits, over DRAM's
constexpr double kLatencyNs = 450;            // DRAM latency (the fit's lower bound)
constexpr double kDependentInstructionNs = 0; // per dependent warp instruction (see above)
constexpr double kBlockBarrierNs = 151;       // per block barrier a warp waits at
constexpr double kLaunchUs = 3.44;            // per kernel launched on a stream, back to back
constexpr double kGraphLaunchUs = 1.0;        // per kernel of a replayed CUDA graph (not fitted)
constexpr double kBarrierUs = 2.94;           // one grid barrier ...
constexpr double kBarrierPerBlockUs = 0.002;  // ... plus this per block it waits for (not fitted)

} // namespace

CostModel costModel(const DeviceSpec& spec) {
  CostModel m;
  m.smCount = spec.smCount;
  m.peakDramGBs = spec.memoryBandwidthGBs;
  m.dramGBs = spec.memoryBandwidthGBs * kCopyEfficiency;
  m.issueGInstr = spec.smCount * spec.warpSchedulersPerSM * spec.clockGHz;
  // L2: 50 MB on the H100, 40 MB on the A100, 6 MB on the V100; the share that holds data
  // from one kernel to the next, and its bandwidth relative to DRAM, are the H100's fit.
  const double l2Nominal = spec.computeCapability >= 90   ? 50e6
                           : spec.computeCapability >= 80 ? 40e6
                                                          : 6e6;
  m.l2Bytes = l2Nominal * kL2UsableFraction;
  m.l2GBs = spec.memoryBandwidthGBs * kL2OverDram;
  m.latencyNs = kLatencyNs;
  m.dependentInstructionNs = kDependentInstructionNs;
  m.blockBarrierNs = kBlockBarrierNs;
  m.launchUs = kLaunchUs;
  m.graphLaunchUs = kGraphLaunchUs;
  m.barrierUs = kBarrierUs;
  m.barrierPerBlockUs = kBarrierPerBlockUs;
  return m;
}

double achievedBandwidthGBs(const CostModel& m, double activeSMs, double bytesInFlightPerSM,
                            double latencyNs) {
  const double sms = std::clamp(activeSMs, 1.0, double(m.smCount));
  return std::min(m.dramGBs, sms * bytesInFlightPerSM / (latencyNs > 0 ? latencyNs : m.latencyNs));
}

double dramBytesPerThreadInstruction(const CostModel& m) {
  constexpr double kLanes = 32;
  return m.dramGBs / (m.issueGInstr * kLanes);
}

double gridBarrierUs(const CostModel& m, uint64_t blocks) {
  return m.barrierUs + m.barrierPerBlockUs * double(blocks);
}

double handoffUs(const CostModel& m) {
  return 2 * m.latencyNs / 1000;
}

double streamUs(const CostModel& m, double bytes, int64_t blocks, int blockSize,
                double bytesPerThread, int blocksPerSM) {
  const double active = std::min<double>(double(blocks), m.smCount);
  const double resident =
      std::max(1.0, std::min<double>(blocksPerSM, double(blocks) / std::max(1.0, active)));
  const double inFlight = resident * blockSize * bytesPerThread;
  return bytes / (achievedBandwidthGBs(m, active, inFlight) * 1e3);
}

} // namespace weft::fusion
