#include "perf_model.h"

#include <algorithm>

namespace weft::bench {

double gridBarrierUs(uint64_t blocks) {
  // AStitch Table 6: blocks → µs.
  static constexpr double kTable[][2] = {{20, 2.53},  {40, 2.53},  {60, 2.59},  {80, 2.59},
                                         {100, 2.66}, {120, 2.66}, {140, 2.69}, {160, 2.72}};
  constexpr size_t n = std::size(kTable);
  const double b = static_cast<double>(blocks);
  if (b <= kTable[0][0]) return kTable[0][1];
  for (size_t i = 1; i < n; ++i)
    if (b <= kTable[i][0]) {
      double f = (b - kTable[i - 1][0]) / (kTable[i][0] - kTable[i - 1][0]);
      return kTable[i - 1][1] + f * (kTable[i][1] - kTable[i - 1][1]);
    }
  const double slope = (kTable[n - 1][1] - kTable[0][1]) / (kTable[n - 1][0] - kTable[0][0]);
  return kTable[n - 1][1] + (b - kTable[n - 1][0]) * slope;
}

ModelProfile modelProfile(const DeviceSpec& spec) {
  ModelProfile p;
  p.name = spec.name;
  p.smCount = spec.smCount;
  p.bandwidthGBs = spec.memoryBandwidthGBs;
  p.issueRateGInstr = spec.smCount * spec.warpSchedulersPerSM * spec.clockGHz;
  return p;
}

ModeledTime& ModeledTime::operator+=(const ModeledTime& o) {
  memoryUs += o.memoryUs;
  issueUs += o.issueUs;
  boundUs += o.boundUs;
  launchUs += o.launchUs;
  barrierUs += o.barrierUs;
  return *this;
}

ModeledTime modelKernel(const LaunchCounters& k, const ModelProfile& p) {
  const double busy =
      p.smCount > 0 && k.blocks > 0
          ? std::min(1.0, static_cast<double>(k.blocks) / static_cast<double>(p.smCount))
          : 1.0;
  ModeledTime t;
  t.memoryUs = static_cast<double>(k.globalBytes()) / (p.bandwidthGBs * 1e3 * busy);
  t.issueUs = static_cast<double>(k.warpInstructions) / (p.issueRateGInstr * 1e3 * busy);
  t.boundUs = std::max(t.memoryUs, t.issueUs);
  t.launchUs = p.launchUs;
  t.barrierUs = static_cast<double>(k.gridBarriers) * gridBarrierUs(k.blocks);
  return t;
}

ModeledTime modelProgram(const std::vector<LaunchCounters>& kernels, const ModelProfile& p) {
  ModeledTime total;
  for (const LaunchCounters& k : kernels)
    total += modelKernel(k, p);
  return total;
}

double bandwidthLimitUs(uint64_t bytes, const ModelProfile& p) {
  return static_cast<double>(bytes) / (p.bandwidthGBs * 1e3);
}

} // namespace weft::bench
