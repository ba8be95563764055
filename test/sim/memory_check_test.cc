// Every access is checked: out of bounds, misaligned, freed memory, uninitialised shared
// memory; the error names the kernel, the PTX line, the block, the thread and the address.
#include <catch2/catch.hpp>

#include <functional>

#include <fmt/format.h>

#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {
const char* kStore = R"(.version 8.5
.target sm_80
.address_size 64
.visible .entry store_at(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r5, %r3, %r4, %r2;
  setp.gt.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
DONE:
  ret;
}
)";

} // namespace

TEST_CASE("out-of-bounds global store is caught with kernel, line, block, thread and address",
          "[sim][memcheck]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> buf(*dev, size_t(100));
  // off-by-one bound: thread 100 (block 1, thread 36) stores one element past the end
  std::string err = errorOf([&] {
    runPtx(*dev, kStore, "store_at", grid1D(2, 64), {buf.arg(), KernelArg::of(100u)});
  });
  CHECK_THAT(err, Catch::Contains("kernel 'store_at'"));
  CHECK_THAT(err, Catch::Contains("out-of-bounds global store of 4 bytes"));
  CHECK_THAT(err, Catch::Contains(fmt::format("0x{:x}", buf.ptr + 400)));
  CHECK_THAT(err, Catch::Contains("0 bytes past the end of the 400-byte allocation"));
  CHECK_THAT(err, Catch::Contains("PTX line 19 `st.global.u32 [%rd3], %r5;`"));
  CHECK_THAT(err, Catch::Contains("block (1,0,0), thread (36,0,0)"));
}

TEST_CASE("misaligned access is caught", "[sim][memcheck]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> buf(*dev, size_t(64));
  std::string err = errorOf([&] {
    runPtx(*dev, kStore, "store_at", grid1D(1, 4),
           {KernelArg::pointer(buf.ptr + 2), KernelArg::of(3u)});
  });
  CHECK_THAT(err, Catch::Contains("misaligned 4-byte store") &&
                      Catch::Contains(fmt::format("0x{:x}", buf.ptr + 2)) &&
                      Catch::Contains("thread (0,0,0)"));
}

TEST_CASE("use after free and null pointers are caught", "[sim][memcheck]") {
  auto dev = makeSimDevice(h100());
  DevicePtr p = dev->allocate(64);
  dev->free(p);
  auto mod = dev->loadModule(kStore);
  auto k = dev->getKernel(mod, "store_at");
  CHECK_THAT(errorOf([&] {
               dev->launch(k, grid1D(1, 1), {KernelArg::pointer(p), KernelArg::of(0u)});
             }),
             Catch::Contains("out-of-bounds global store"));
  CHECK_THAT(errorOf([&] {
               dev->launch(k, grid1D(1, 1), {KernelArg::pointer(0), KernelArg::of(0u)});
             }),
             Catch::Contains("at address 0x0"));
  CHECK_THAT(errorOf([&] { dev->free(p); }), Catch::Contains("not the start of a live allocation"));
}

TEST_CASE("host copies are bounds-checked", "[sim][memcheck]") {
  auto dev = makeSimDevice(h100());
  DevicePtr p = dev->allocate(16);
  std::vector<uint8_t> host(32);
  CHECK_THAT(errorOf([&] { dev->copyToDevice(p, host.data(), 17); }),
             Catch::Contains("copyToDevice"));
  CHECK_THAT(errorOf([&] { dev->copyToHost(host.data(), p + 8, 9); }),
             Catch::Contains("copyToHost"));
  CHECK_THAT(errorOf([&] { dev->memset(p + 16, 0, 1); }), Catch::Contains("memset"));
  CHECK_NOTHROW(dev->copyToDevice(p, host.data(), 16));
}

TEST_CASE("uninitialised shared memory read is reported, after a barrier it is fine",
          "[sim][memcheck]") {
  const std::string racy = R"(
  .shared .align 4 .b8 sh[128];
  mul.wide.u32 %rd3, %r0, 4;
  mov.u64 %rd4, sh;
  add.s64 %rd5, %rd4, %rd3;
  st.shared.u32 [%rd5], %r0;
  xor.b32 %r1, %r0, 1;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd4, %rd6;
)";
  const std::string read = "  ld.shared.u32 %r2, [%rd7];\n  st.global.u32 [%rd2], %r2;\n";
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(64));
  // 16 threads write sh[0..15]; reading past the 128-byte array is out of bounds, reading
  // sh[16..31] reads bytes no thread wrote
  const std::string never = racy + "  ld.shared.u32 %r2, [%rd5+128];\n";
  std::string err =
      errorOf([&] { runPtx(*dev, scalarKernel(never, 1), "t", grid1D(1, 16), {out.arg()}); });
  CHECK_THAT(err, Catch::Contains("out-of-bounds shared load"));
  const std::string unwritten = racy + "  ld.shared.u32 %r2, [%rd5+64];\n";
  err = errorOf([&] { runPtx(*dev, scalarKernel(unwritten, 1), "t", grid1D(1, 16), {out.arg()}); });
  CHECK_THAT(err, Catch::Contains("uninitialised shared memory") &&
                      Catch::Contains("shared address 0x40") && Catch::Contains("thread (0,0,0)"));
  // with a barrier between the writes and the reads, every slot read was written
  CHECK_NOTHROW(runPtx(*dev, scalarKernel(racy + "  bar.sync 0;\n" + read, 1), "t", grid1D(1, 32),
                       {out.arg()}));
  auto o = out.get();
  for (uint32_t t = 0; t < 32; ++t)
    CHECK(o[t] == (t ^ 1));
}

TEST_CASE("local and shared accesses outside their windows are caught", "[sim][memcheck]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(4));
  const std::string local = R"(
  .local .align 4 .b8 __local_depot0[16];
  .reg .b64 %SPL;
  mov.u64 %SPL, __local_depot0;
  st.local.u32 [%SPL+16], 1;
)";
  CHECK_THAT(errorOf([&] { runPtx(*dev, scalarKernel(local, 1), "t", grid1D(1, 1), {out.arg()}); }),
             Catch::Contains("out-of-bounds local store"));
  const std::string shared = R"(
  .shared .align 4 .b8 sh2[8];
  st.shared.u32 [sh2+8], 1;
)";
  CHECK_THAT(
      errorOf([&] { runPtx(*dev, scalarKernel(shared, 1), "t", grid1D(1, 1), {out.arg()}); }),
      Catch::Contains("out-of-bounds shared store") && Catch::Contains("8 bytes of shared memory"));
}
