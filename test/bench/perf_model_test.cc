// The perf model's arithmetic on hand-made counters (bench/perf_model.h).
#include <catch2/catch.hpp>

#include "bench/perf_model.h"

using namespace weft;
using namespace weft::bench;

namespace {
ModelProfile toyProfile() {
  ModelProfile p;
  p.name = "toy";
  p.smCount = 100;
  p.bandwidthGBs = 1000;   // 1e6 bytes per µs
  p.issueRateGInstr = 500; // warp instructions per ns
  p.launchUs = 5;
  return p;
}
} // namespace

TEST_CASE("grid barrier cost follows AStitch Table 6", "[bench][model]") {
  CHECK(gridBarrierUs(1) == Approx(2.53));
  CHECK(gridBarrierUs(20) == Approx(2.53));
  CHECK(gridBarrierUs(50) == Approx(2.56)); // halfway between 40 (2.53) and 60 (2.59)
  CHECK(gridBarrierUs(160) == Approx(2.72));
  // beyond the table: the table's overall slope, (2.72 - 2.53) / 140 per block
  CHECK(gridBarrierUs(300) == Approx(2.72 + 140 * (0.19 / 140)));
}

TEST_CASE("a memory-bound kernel: bytes over bandwidth plus launch", "[bench][model]") {
  LaunchCounters k;
  k.globalSectorsRead = 1000000;   // 32 MB read
  k.globalSectorsWritten = 500000; // 16 MB written
  k.warpInstructions = 1000000;
  k.blocks = 1000;
  ModeledTime t = modelKernel(k, toyProfile());
  CHECK(t.memoryUs == Approx(48e6 / 1e6)); // 48 MB at 1e6 bytes per µs = 48 µs
  CHECK(t.issueUs == Approx(1e6 / 5e5));   // 2 µs
  CHECK(t.boundUs == Approx(48));
  CHECK(t.launchUs == 5);
  CHECK(t.barrierUs == 0);
  CHECK(t.totalUs() == Approx(53));
}

TEST_CASE("issue-bound kernels, idle SMs and grid barriers", "[bench][model]") {
  LaunchCounters k;
  k.globalSectorsRead = 32;      // 1 KB
  k.warpInstructions = 50000000; // 100 µs at 5e5 per µs
  k.blocks = 25;                 // a quarter of the 100 SMs: everything 4x slower
  k.gridBarriers = 3;
  ModeledTime t = modelKernel(k, toyProfile());
  CHECK(t.issueUs == Approx(400));
  CHECK(t.memoryUs == Approx(1024.0 / 1e6 * 4));
  CHECK(t.barrierUs == Approx(3 * 2.53)); // 25 blocks: between 20 and 40 blocks, both 2.53 µs
  CHECK(t.totalUs() == Approx(400 + 5 + t.barrierUs));
}

TEST_CASE("a program is the sum of its kernels, each bounded on its own", "[bench][model]") {
  LaunchCounters mem, issue;
  mem.globalSectorsRead = 31250; // 1e6 bytes: 1 µs
  mem.blocks = 100;
  issue.warpInstructions = 1000000; // 2 µs
  issue.blocks = 100;
  ModeledTime t = modelProgram({mem, issue}, toyProfile());
  CHECK(t.memoryUs == Approx(1));
  CHECK(t.issueUs == Approx(2));
  CHECK(t.boundUs == Approx(3)); // 1 + 2, not max(1, 2)
  CHECK(t.launchUs == 10);
  CHECK(t.totalUs() == Approx(13));
  CHECK(bandwidthLimitUs(2000000, toyProfile()) == Approx(2));
}

TEST_CASE("model profiles come from the device specs", "[bench][model]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  ModelProfile p = modelProfile(h100);
  CHECK(p.smCount == h100.smCount);
  CHECK(p.bandwidthGBs == h100.memoryBandwidthGBs);
  CHECK(p.issueRateGInstr == Approx(h100.smCount * h100.warpSchedulersPerSM * h100.clockGHz));
  CHECK(p.launchUs == kLaunchUs);
}
