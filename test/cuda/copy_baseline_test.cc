// The copy baseline (bench/copy_baseline.h) on the cuda device, against the fake driver: what
// `weft run --device cuda --time` asks of the driver for it. One counted warm-up launch and the
// timed ones, each between two events, with the grid, block and arguments of copyLaunch, and
// both buffers given back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "../../bench/copy_baseline.h"
#include "fake_driver.h"
#include "runtime/cuda/cuda_device_impl.h"

using namespace weft;
using namespace weft::runtime::cuda;
using namespace weft::runtime::cuda::testing;

TEST_CASE("the copy baseline on the cuda device: launches, events and arguments", "[cuda][copy]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().paramSizes[bench::kCopyKernelName] = {8, 8, 8};
  const uint64_t compulsory = 64ull << 20; // 32 MiB read, 32 MiB written
  bench::CopyRun r = bench::runCopyBaseline(device, compulsory, 3);
  CHECK(r.deviceClock);
  CHECK(r.ms == Approx(1.5)); // the fake's every elapsed time
  CHECK_FALSE(r.counters);    // a GPU counts nothing
  const bench::CopyLaunch want = bench::copyLaunch(compulsory, device.spec().smCount);
  CHECK(r.launch.vectors == want.vectors);
  REQUIRE(fakeDriver().launches.size() == 4); // warm-up + 3 timed
  for (const FakeLaunch& l : fakeDriver().launches) {
    CHECK(l.kernel == bench::kCopyKernelName);
    CHECK(l.grid[0] == want.grid);
    CHECK(l.block[0] == uint32_t(bench::kCopyBlockSize));
    CHECK_FALSE(l.cooperative);
    REQUIRE(l.args.size() == 3);
    uint64_t vectors = 0;
    std::memcpy(&vectors, l.args[2].data(), 8);
    CHECK(vectors * bench::kCopyVectorBytes * 2 == compulsory);
    CHECK(l.args[0] != l.args[1]); // source and destination apart
  }
  CHECK(std::count(fakeDriver().calls.begin(), fakeDriver().calls.end(), "cuEventElapsedTime") == 3);
  // Both buffers were given back: a second baseline reuses them from the device's cache.
  const size_t allocated = fakeDriver().memAllocCalls;
  bench::runCopyBaseline(device, compulsory, 1);
  CHECK(fakeDriver().memAllocCalls == allocated);
}
