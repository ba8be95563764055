#include <catch2/catch.hpp>

#include "fusion/launch_config.h"
#include "fusion/plan.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

TEST_CASE("launch config: blocks per SM follow threads, registers, blocks and shared memory",
          "[planner][launch]") {
  DeviceSpec v100 = *deviceSpecProfile("v100");
  CHECK(blocksPerSM(v100, 1024, 32, 0) == 2);        // threads: 2048 / 1024
  CHECK(blocksPerSM(v100, 1024, 64, 0) == 1);        // registers: 65536 / (64 x 1024)
  CHECK(blocksPerSM(v100, 128, 32, 0) == 16);        // threads
  CHECK(blocksPerSM(v100, 32, 32, 0) == 32);         // the block limit
  CHECK(blocksPerSM(v100, 256, 32, 40 * 1024) == 2); // shared: 96 KiB / 40 KiB
  CHECK(blocksPerSM(v100, 256, 33, 0) == 6);         // 33 registers round up to 40
  CHECK(blocksPerSM(v100, 256, 32, 97 * 1024) == 0); // does not fit at all
  CHECK(blocksPerWave(v100, 1024) == 160);           // AStitch Table 6: V100 holds 160 such blocks
}

TEST_CASE("launch config: assume 32 registers, relax while the blocks per SM still fit",
          "[planner][launch]") {
  DeviceSpec a100 = *deviceSpecProfile("a100");
  // threads already limit 1024-thread blocks to 2 per SM: nothing to relax
  RegisterBound full = relaxRegisterBound(a100, 1024, 0);
  CHECK(full.blocksPerSM == 2);
  CHECK(full.maxRegisters == 32);
  // shared memory limits 1024-thread blocks to one per SM: relax to 64 registers
  RegisterBound smem = relaxRegisterBound(a100, 1024, 100 * 1024);
  CHECK(smem.blocksPerSM == 1);
  CHECK(smem.maxRegisters == 64);
  CHECK(blocksPerSM(a100, 1024, smem.maxRegisters, 100 * 1024) == 1);
  // 128-thread blocks: threads limit to 16 per SM → 32 registers; with 20 KiB of shared memory
  // and the driver's 1 KiB per block, 7 per SM (164 / 21) → 72 registers
  CHECK(relaxRegisterBound(a100, 128, 0).maxRegisters == 32);
  RegisterBound small = relaxRegisterBound(a100, 128, 20 * 1024);
  CHECK(small.blocksPerSM == 7);
  CHECK(small.maxRegisters == 72);
  // the reserve counts even where 20 KiB alone would fit 8: 8 × 20 KiB + 8 × 1 KiB > 164 KiB
  CHECK(blocksPerSM(a100, 128, 32, 20 * 1024) == 7);
  // the device maximum caps the relaxation
  CHECK(relaxRegisterBound(a100, 32, 80 * 1024).maxRegisters == 248);
}

TEST_CASE("launch config: grid-barrier kernels are cooperative and capped at one wave",
          "[planner][launch]") {
  for (std::string dev : {"v100", "a100", "h100"}) {
    DeviceSpec spec = *deviceSpecProfile(dev);
    FusionPlan p = plan(testing::astitchFig7(), spec, Policy::AStitch);
    const KernelPlan& k = *kernelsOf(p)[0];
    CHECK(k.launch.cooperative);
    CHECK(k.launch.maxBlocks ==
          blocksPerWave(spec, k.launch.blockSize, k.launch.maxRegisters, k.launch.sharedBytes));
    CHECK(k.launch.maxRegisters >= 32);
    // layer norm has no grid barrier: not cooperative, still capped (vertical packing)
    FusionPlan ln = plan(testing::layerNorm(), spec, Policy::AStitch);
    const KernelPlan& lk = *kernelsOf(ln)[0];
    CHECK_FALSE(lk.launch.cooperative);
    CHECK(lk.launch.maxBlocks ==
          blocksPerWave(spec, lk.launch.blockSize, lk.launch.maxRegisters, lk.launch.sharedBytes));
    // a warp per row whose stages wait for the warp: 8 rows per 256-thread block
    // (packsRowsBetweenStages)
    CHECK(lk.launch.blockSize == 256);
    CHECK(lk.launch.tiles == ir::Dim(16384 / 8));
  }
}
