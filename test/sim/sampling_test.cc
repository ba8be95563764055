// Block sampling (ExecOptions::sampleBlocks): extrapolated counters equal a full simulation
// when every block does the same work, and a grid whose sampled blocks differ is simulated
// in full.
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace weft;
using namespace weft::sim::test;

namespace {
// out[i] = in[i] * 2 for i = ctaid * ntid + tid < n; every block but a partial last one does
// the same work. Block `heavy` (if any) loops `extra` more times before its store.
const char* kScale = R"(.version 8.5
.target sm_80
.address_size 64
.visible .entry scale(.param .u64 in, .param .u64 out, .param .u32 n, .param .u32 heavy,
                      .param .u32 extra)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r7, [heavy];
  ld.param.u32 %r8, [extra];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  setp.ne.u32 %p2, %r2, %r7;
  mov.u32 %r9, 0;
  @%p2 bra BODY;
LOOP:
  add.u32 %r9, %r9, 1;
  setp.lt.u32 %p3, %r9, %r8;
  @%p3 bra LOOP;
BODY:
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, %f1;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
DONE:
  ret;
}
)";

struct Run {
  LaunchCounters counters;
  std::vector<float> out;
};

Run runScale(uint64_t sampleBlocks, uint32_t blocks, uint32_t threads, uint32_t n, uint32_t heavy,
             uint32_t extra) {
  sim::ExecOptions opts;
  opts.sampleBlocks = sampleBlocks;
  auto dev = makeSimDevice(h100(), opts);
  std::vector<float> in(n, 1.5f);
  Buffer<float> In(*dev, in), Out(*dev, size_t(n));
  Run r;
  r.counters =
      runPtx(*dev, kScale, "scale", grid1D(blocks, threads),
             {In.arg(), Out.arg(), KernelArg::of(n), KernelArg::of(heavy), KernelArg::of(extra)});
  r.out = Out.get();
  return r;
}

void checkSameWork(const LaunchCounters& a, const LaunchCounters& b) {
  CHECK(a.warpInstructions == b.warpInstructions);
  CHECK(a.threadInstructions == b.threadInstructions);
  CHECK(a.globalLoadRequests == b.globalLoadRequests);
  CHECK(a.globalStoreRequests == b.globalStoreRequests);
  CHECK(a.globalSectorsRead == b.globalSectorsRead);
  CHECK(a.globalSectorsWritten == b.globalSectorsWritten);
  CHECK(a.sharedLoads == b.sharedLoads);
  CHECK(a.sharedStores == b.sharedStores);
  CHECK(a.blockBarriers == b.blockBarriers);
  CHECK(a.atomics == b.atomics);
  CHECK(a.blocks == b.blocks);
}
} // namespace

TEST_CASE("sampled counters of a uniform grid equal the full simulation", "[sim][sampling]") {
  const uint32_t blocks = 100, threads = 64, n = 99 * 64 + 40; // the last block is partial
  const uint32_t noHeavy = ~0u;
  Run full = runScale(0, blocks, threads, n, noHeavy, 0);
  Run sampled = runScale(8, blocks, threads, n, noHeavy, 0);
  CHECK(full.counters.blocks == 100);
  CHECK(full.counters.simulatedBlocks == 100);
  CHECK_FALSE(full.counters.sampled());
  CHECK(sampled.counters.simulatedBlocks == 9); // 8 samples + the last block
  CHECK(sampled.counters.sampled());
  checkSameWork(sampled.counters, full.counters);
  // 99 blocks x 2 warps x 4 sectors, and 4 + 1 sectors for the 40 threads of the last block
  CHECK(full.counters.globalSectorsRead == 99 * 2 * 4 + 5);
  // blocks not simulated wrote nothing: block 1 is not a sample, the last block is
  CHECK(sampled.out[64] == 0.0f);
  CHECK(sampled.out[n - 1] == 3.0f);
  CHECK(full.out[64] == 3.0f);
}

TEST_CASE("a grid whose sampled blocks differ is simulated in full", "[sim][sampling]") {
  const uint32_t blocks = 100, threads = 64, n = 100 * 64;
  // the samples are blocks i * 99 / 8 = 0, 12, 24, 37, 49, 61, 74, 86; block 37 loops longer
  Run full = runScale(0, blocks, threads, n, 37, 50);
  Run sampled = runScale(8, blocks, threads, n, 37, 50);
  CHECK(sampled.counters.simulatedBlocks == 100);
  CHECK_FALSE(sampled.counters.sampled());
  checkSameWork(sampled.counters, full.counters);
  CHECK(sampled.out == full.out);
}

TEST_CASE("grids no larger than the sample are simulated in full", "[sim][sampling]") {
  Run r = runScale(8, 9, 32, 9 * 32, ~0u, 0);
  CHECK(r.counters.blocks == 9);
  CHECK(r.counters.simulatedBlocks == 9);
}
