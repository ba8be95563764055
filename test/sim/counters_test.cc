// Counters on hand-written PTX equal hand-counted values.
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace weft;
using namespace weft::sim::test;

namespace {
// out[tid] = in[tid * stride]: one load and one store per thread
const char* kGather = R"(.version 8.5
.target sm_80
.address_size 64
.visible .entry gather(.param .u64 in, .param .u64 out, .param .u32 stride)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [stride];
  mov.u32 %r2, %tid.x;
  mul.lo.u32 %r3, %r2, %r1;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f1;
  ret;
}
)";
} // namespace

TEST_CASE("coalesced 32 x f32 load is 4 sectors, stride 32 is 32 sectors", "[sim][counters]") {
  auto dev = makeSimDevice(h100());
  std::vector<float> in(32 * 32);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i);
  Buffer<float> In(*dev, in), Out(*dev, size_t(64));
  auto mod = dev->loadModule(kGather);
  auto k = dev->getKernel(mod, "gather");
  dev->launch(k, grid1D(1, 32), {In.arg(), Out.arg(), KernelArg::of(1u)});
  dev->launch(k, grid1D(1, 32), {In.arg(), Out.arg(), KernelArg::of(32u)});
  dev->launch(k, grid1D(2, 64), {In.arg(), Out.arg(), KernelArg::of(0u)});
  auto c = dev->takeCounters();
  REQUIRE(c.size() == 3);
  CHECK(c[0].kernel == "gather");
  CHECK(c[0].warpInstructions == 12);
  CHECK(c[0].threadInstructions == 12 * 32);
  CHECK(c[0].globalLoadRequests == 1);
  CHECK(c[0].globalStoreRequests == 1);
  CHECK(c[0].globalSectorsRead == 4);
  CHECK(c[0].globalSectorsWritten == 4);
  CHECK(c[0].globalBytes() == 256);
  CHECK(c[1].globalSectorsRead == 32);
  CHECK(c[1].globalSectorsWritten == 4);
  // 2 blocks x 2 warps; every thread reads in[0]: one sector per request
  CHECK(c[2].globalLoadRequests == 4);
  CHECK(c[2].globalSectorsRead == 4);
  CHECK(c[2].warpInstructions == 4 * 12);
  CHECK(dev->takeCounters().empty());
}

TEST_CASE("shared accesses, block barriers and partial warps", "[sim][counters]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(48));
  const std::string body = R"(
  .shared .align 4 .b8 sh[256];
  mul.wide.u32 %rd3, %r0, 4;
  mov.u64 %rd4, sh;
  add.s64 %rd5, %rd4, %rd3;
  st.shared.u32 [%rd5], %r0;
  bar.sync 0;
  ld.shared.u32 %r1, [%rd5];
  bar.sync 0;
  st.global.u32 [%rd2], %r1;
)";
  // 48 threads: one full and one partial warp
  auto c = runPtx(*dev, scalarKernel(body, 1), "t", grid1D(3, 48), {out.arg()});
  CHECK(c.sharedStores == 3 * 2);
  CHECK(c.sharedLoads == 3 * 2);
  CHECK(c.blockBarriers == 3 * 2);
  CHECK(c.warpInstructions == 3 * 2 * 13);
  CHECK(c.threadInstructions == 3 * 48 * 13);
  CHECK(c.globalStoreRequests == 3 * 2);
  // warp 0 stores 32 x 8-byte-strided u32 (256 bytes = 8 sectors), warp 1 16 of them (4)
  CHECK(c.globalSectorsWritten == 3 * (8 + 4));
  CHECK(c.gridBarriers == 0);
  CHECK(c.atomics == 0);
  CHECK(c.syncInstructions == 0);
}

TEST_CASE("grid-barrier traffic is counted apart from data", "[sim][counters]") {
  // two phases separated by weft_grid_barrier; each block writes one value per phase
  const std::string ptx = R"(.version 8.5
.target sm_80
.address_size 64
.visible .func weft_grid_barrier(.param .b64 bar)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [bar];
  mov.u32 %r2, %nctaid.x;
  ld.acquire.gpu.global.u32 %r3, [%rd1+4];
  atom.acq_rel.gpu.global.add.u32 %r4, [%rd1], 1;
  add.u32 %r5, %r2, -1;
  setp.ne.u32 %p2, %r4, %r5;
  @%p2 bra SPIN;
  st.relaxed.gpu.global.u32 [%rd1], 0;
  add.u32 %r6, %r3, 1;
  st.release.gpu.global.u32 [%rd1+4], %r6;
  bra.uni DONE;
SPIN:
  ld.acquire.gpu.global.u32 %r7, [%rd1+4];
  setp.eq.u32 %p2, %r7, %r3;
  @%p2 bra SPIN;
DONE:
  bar.sync 0;
  ret;
}
.visible .entry phases(.param .u64 data, .param .u64 bar)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [bar];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %nctaid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r1;
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd2;
  call.uni weft_grid_barrier, (p0);
  }
  // phase 2: read the next block's value (written before the barrier)
  add.u32 %r3, %r1, 1;
  rem.u32 %r3, %r3, %r2;
  mul.wide.u32 %rd5, %r3, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.u32 %r4, [%rd6];
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd2;
  call.uni weft_grid_barrier, (p0);
  }
  mul.wide.u32 %rd7, %r2, 4;
  add.s64 %rd7, %rd4, %rd7;
  st.global.u32 [%rd7], %r4;
  ret;
}
)";
  auto dev = makeSimDevice(h100());
  const uint32_t blocks = 8;
  Buffer<uint32_t> data(*dev, size_t(2 * blocks)), bar(*dev, size_t(2));
  auto c = runPtx(*dev, ptx, "phases", grid1D(blocks, 64, true), {data.arg(), bar.arg()});
  auto d = data.get();
  for (uint32_t b = 0; b < blocks; ++b)
    CHECK(d[blocks + b] == (b + 1) % blocks);
  CHECK(c.gridBarriers == 2);
  CHECK(c.blockBarriers == 0); // the bar.syncs inside the barrier are sync traffic
  CHECK(c.atomics == 0);       // the arrival atomics are sync traffic
  CHECK(c.globalStoreRequests == 2 * blocks * 2); // two data stores per warp
  CHECK(c.globalLoadRequests == blocks * 2);
  // the kernel body is 20 instructions per warp (param stores and calls included)
  CHECK(c.warpInstructions == blocks * 2 * 20);
  CHECK(c.syncInstructions > 0);
  CHECK(c.syncSectors >= 2 * blocks * 2); // ld.acquire + atom per block per barrier
}
