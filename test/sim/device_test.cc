// SimDevice as a weft::Device: occupancy, cooperative residency, launch validation and
// CUDA-graph-style capture / replay / argument update.
#include <catch2/catch.hpp>

#include <functional>

#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {
// p[tid] += v
const char* kAddScalar = R"(.version 8.5
.target sm_80
.address_size 64
.visible .entry add_scalar(.param .u64 p, .param .u32 v)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r3, [%rd3];
  add.u32 %r4, %r3, %r1;
  st.global.u32 [%rd3], %r4;
  ret;
}
)";
} // namespace

TEST_CASE("maxActiveBlocksPerSM follows threads, registers and shared memory", "[sim][device]") {
  auto dev = makeSimDevice(h100());
  auto k = dev->getKernel(dev->loadModule(kAddScalar), "add_scalar");
  // register pressure 6 (+ 8) → the 16-register minimum per thread
  CHECK(dev->maxActiveBlocksPerSM(k, 256, 0) == 8); // threads: 2048/256 (registers allow 16)
  CHECK(dev->maxActiveBlocksPerSM(k, 1024, 0) == 2);
  CHECK(dev->maxActiveBlocksPerSM(k, 32, 0) == 32);          // capped by maxBlocksPerSM
  CHECK(dev->maxActiveBlocksPerSM(k, 256, 100 * 1024) == 2); // 228 KiB / 100 KiB
  CHECK(dev->maxActiveBlocksPerSM(k, 256, 300 * 1024) == 0);
  CHECK(dev->maxActiveBlocksPerSM(k, 2048, 0) == 0);
}

TEST_CASE("a cooperative launch needs every block resident", "[sim][device]") {
  auto dev = makeSimDevice(h100());
  auto k = dev->getKernel(dev->loadModule(kAddScalar), "add_scalar");
  Buffer<uint32_t> buf(*dev, size_t(256));
  const uint32_t fits = uint32_t(dev->maxActiveBlocksPerSM(k, 256, 0) * dev->spec().smCount);
  CHECK_NOTHROW(dev->launch(k, grid1D(fits, 256, true), {buf.arg(), KernelArg::of(1u)}));
  CHECK(buf.get()[0] == fits);
  std::string err = errorOf([&] {
    dev->launch(k, grid1D(fits + 1, 256, true), {buf.arg(), KernelArg::of(1u)});
  });
  CHECK_THAT(err, Catch::Contains("cooperative launch of 1057 blocks") &&
                      Catch::Contains("only 1056 can be resident"));
  // the same grid without the cooperative flag runs block by block
  CHECK_NOTHROW(dev->launch(k, grid1D(fits + 1, 256), {buf.arg(), KernelArg::of(1u)}));
}

TEST_CASE("launch validation: arguments, block size, shared memory, names", "[sim][device]") {
  auto dev = makeSimDevice(h100());
  auto mod = dev->loadModule(kAddScalar);
  auto k = dev->getKernel(mod, "add_scalar");
  Buffer<uint32_t> buf(*dev, size_t(32));
  CHECK_THAT(errorOf([&] { dev->launch(k, grid1D(1, 32), {buf.arg()}); }),
             Catch::Contains("takes 2 parameters; launched with 1"));
  CHECK_THAT(errorOf([&] {
               dev->launch(k, grid1D(1, 32), {buf.arg(), KernelArg::of(uint64_t(1))});
             }),
             Catch::Contains("argument 1 ('v') has 8 bytes; the parameter has 4"));
  CHECK_THAT(errorOf([&] {
               dev->launch(k, grid1D(1, 2048), {buf.arg(), KernelArg::of(1u)});
             }),
             Catch::Contains("2048 threads per block exceeds"));
  CHECK_THAT(errorOf([&] {
               dev->launch(k, grid1D(1, 32, false, 228 * 1024), {buf.arg(), KernelArg::of(1u)});
             }),
             Catch::Contains("dynamic shared memory exceed"));
  CHECK_THAT(errorOf([&] { dev->getKernel(mod, "nope"); }),
             Catch::Contains("no kernel 'nope' (kernels: add_scalar)"));
}

TEST_CASE("graph capture records launches, replay runs them, node arguments can be replaced",
          "[sim][device]") {
  auto dev = makeSimDevice(h100());
  auto k = dev->getKernel(dev->loadModule(kAddScalar), "add_scalar");
  Buffer<uint32_t> a(*dev, size_t(32)), b(*dev, size_t(32));
  dev->beginCapture();
  dev->launch(k, grid1D(1, 32), {a.arg(), KernelArg::of(1u)});
  dev->launch(k, grid1D(1, 32), {a.arg(), KernelArg::of(10u)});
  GraphHandle g = dev->endCapture();
  CHECK(a.get()[0] == 0); // nothing ran during capture
  CHECK(dev->takeCounters().empty());
  dev->replay(g);
  dev->replay(g);
  CHECK(a.get()[5] == 22);
  CHECK(dev->takeCounters().size() == 4);
  dev->updateGraphKernelArgs(g, 1, {b.arg(), KernelArg::of(100u)});
  dev->replay(g);
  CHECK(a.get()[5] == 23);
  CHECK(b.get()[5] == 100);
  CHECK_THAT(errorOf([&] { dev->updateGraphKernelArgs(g, 2, {}); }),
             Catch::Contains("has 2 nodes, no node 2"));
  // a new shape: node 0 runs one block of 16 threads on c instead of 32 on a
  Buffer<uint32_t> c(*dev, size_t(32));
  dev->updateGraphKernelLaunch(g, 0, grid1D(1, 16), {c.arg(), KernelArg::of(7u)});
  dev->replay(g);
  CHECK(c.get()[15] == 7);
  CHECK(c.get()[16] == 0);
  CHECK(dev->takeCounters().back().kernel == "add_scalar");
  CHECK_THAT(errorOf([&] {
               LaunchConfig coop = grid1D(1, 32);
               coop.cooperative = true;
               dev->updateGraphKernelLaunch(g, 0, coop, {c.arg(), KernelArg::of(7u)});
             }),
             Catch::Contains("was captured not cooperative"));
  CHECK_THAT(errorOf([&] { dev->replay(g + 1); }), Catch::Contains("no captured graph"));
}

TEST_CASE("device name, spec and global variables initialised at load", "[sim][device]") {
  DeviceSpec spec = h100();
  spec.smCount = 4;
  auto dev = makeSimDevice(spec);
  CHECK(dev->name() == "sim (h100)");
  CHECK(dev->spec().smCount == 4);
}

TEST_CASE("a spin that never ends is reported as a deadlock, not a hang", "[sim][device]") {
  sim::ExecOptions opts;
  opts.deadlockInstructions = 1 << 16;
  auto dev = makeSimDevice(h100(), opts);
  Buffer<uint64_t> out(*dev, size_t(2));
  const std::string spin = R"(
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra DONE;
WAIT:
  ld.volatile.global.u32 %r1, [%rd0];
  setp.eq.u32 %p2, %r1, 0;
  @%p2 bra WAIT;
DONE:
)";
  std::string err =
      errorOf([&] { runPtx(*dev, scalarKernel(spin, 1), "t", grid1D(2, 32), {out.arg()}); });
  CHECK_THAT(err, Catch::Contains("no thread made progress") &&
                      Catch::Contains("65536 warp instructions") &&
                      Catch::Contains("block (0,0,0), thread (0,0,0)"));
}
