// The copy baseline (bench/copy_kernel.h, bench/copy_baseline.h): on the simulator it copies
// exactly, touches exactly the compulsory bytes (every access bounds-checked), and its PTX
// assembles with ptxas. Nothing here asserts a time.
#include <catch2/catch.hpp>

#include <vector>

#include "../codegen/ptxas_or_skip.h"
#include "bench/copy_baseline.h"
#include "bench/perf_model.h"
#include "sim/sim_device.h"

using namespace weft;
using namespace weft::bench;

TEST_CASE("the copy kernel reads and writes exactly the compulsory bytes", "[bench][copy]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  std::unique_ptr<Device> sim = makeSimDevice(h100);
  // 2 × 1 MiB: 64 blocks, 4 vectors per thread; and a size that is not a whole number of
  // blocks
  for (uint64_t compulsory : {uint64_t(2) << 20, uint64_t(2 * 16 * 1000 + 64)}) {
    CAPTURE(compulsory);
    CopyRun r = runCopyBaseline(*sim, compulsory, 1);
    REQUIRE(r.counters);
    const uint64_t half = compulsory / 2;
    CHECK(r.launch.vectors * kCopyVectorBytes == half);
    CHECK(r.counters->globalSectorsRead * 32 == half);
    CHECK(r.counters->globalSectorsWritten * 32 == half);
    CHECK(r.counters->globalBytes() == compulsory);
    CHECK(r.counters->blocks == r.launch.grid);
    CHECK(r.deviceClock == false); // the simulator times on the host
  }
  // A size that is not a whole number of sectors: reads and writes each round up to a sector.
  CopyRun odd = runCopyBaseline(*sim, 2 * 48, 0);
  CHECK(odd.counters->globalSectorsRead == 2);
  CHECK(odd.counters->globalSectorsWritten == 2);
}

TEST_CASE("the copy kernel copies, and large copies stay within the grid cap", "[bench][copy]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  std::unique_ptr<Device> sim = makeSimDevice(h100);
  // Copy by hand through the same PTX so the destination can be read back.
  const uint64_t vectors = 1000;
  const size_t bytes = vectors * kCopyVectorBytes;
  std::vector<uint8_t> src(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i)
    src[i] = uint8_t(i * 7 + 1);
  DevicePtr a = sim->allocate(bytes), b = sim->allocate(bytes);
  sim->copyToDevice(a, src.data(), bytes);
  sim->memset(b, 0, bytes);
  KernelHandle k = sim->getKernel(sim->loadModule(copyKernelPtx(90)), kCopyKernelName);
  LaunchConfig config;
  config.grid.x = 2; // fewer threads than vectors: the grid-stride loop goes round twice
  config.block.x = kCopyBlockSize;
  sim->launch(k, config, {KernelArg::pointer(a), KernelArg::pointer(b), KernelArg::of<uint64_t>(vectors)});
  sim->synchronize();
  sim->copyToHost(back.data(), b, bytes);
  CHECK(back == src);
  sim->free(a);
  sim->free(b);

  CopyLaunch big = copyLaunch(256ull << 20, 132);
  CHECK(big.grid == 132 * kCopyBlocksPerSM);
  CHECK(big.vectors * kCopyVectorBytes * 2 == 256ull << 20);
  CHECK(copyLaunch(64, 132).grid == 1);
}

TEST_CASE("the copy kernel assembles with ptxas for sm_80 and sm_90", "[bench][copy][ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (int cc : {80, 90}) {
    codegen::PtxasReport r = codegen::runPtxas(ptxas, copyKernelPtx(cc), "sm_" + std::to_string(cc));
    INFO(r.log);
    CHECK(r.ok());
    REQUIRE(r.functions.size() == 1);
    CHECK(r.functions[0].name == kCopyKernelName);
    CHECK_FALSE(r.spills());
  }
}
