// The cuda device on a real GPU. Every test here is tagged [gpu] and skips with a WARN that
// says why when this machine has no CUDA driver or no GPU (scripts/gpu-smoke runs them where
// there is one). Kernels are small hand-written PTX whose results are computed on the host.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "runtime/cuda/cuda_device.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda;

namespace {

// data[i] += 1 for i < n
const char* kAddOnePtx = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}

// Each block reverses its slice of data through dynamic shared memory, thread t's value
// stored `stride` floats apart so the block touches ntid * stride * 4 bytes of it.
.extern .shared .align 4 .b8 smem[];
.visible .entry reverse_blocks(.param .u64 data, .param .u32 stride)
{
  .reg .b32 %r<12>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [stride];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %ctaid.x;
  mad.lo.s32 %r5, %r4, %r3, %r2;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  mov.u32 %r6, smem;
  mul.lo.s32 %r7, %r2, %r1;
  shl.b32 %r7, %r7, 2;
  add.s32 %r8, %r6, %r7;
  st.shared.f32 [%r8], %f1;
  bar.sync 0;
  sub.s32 %r9, %r3, 1;
  sub.s32 %r9, %r9, %r2;
  mul.lo.s32 %r10, %r9, %r1;
  shl.b32 %r10, %r10, 2;
  add.s32 %r11, %r6, %r10;
  ld.shared.f32 %f1, [%r11];
  st.global.f32 [%rd4], %f1;
  ret;
}
)";

/// The cuda device, or null after a WARN saying why it cannot be had here. Where a GPU is
/// expected (WEFT_REQUIRE_GPU=1, as scripts/gpu-smoke sets it) a missing one fails instead.
std::unique_ptr<Device> gpuOrSkip() {
  std::string why;
  if (!cudaDriverAvailable(&why)) {
    if (std::getenv("WEFT_REQUIRE_GPU"))
      FAIL("WEFT_REQUIRE_GPU is set but there is no usable GPU: " << why);
    WARN("skipped, no GPU: " << why);
    return nullptr;
  }
  return makeCudaDevice();
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

} // namespace

TEST_CASE("gpu: the spec is read from the device", "[gpu]") {
  auto device = gpuOrSkip();
  if (!device) return;
  const DeviceSpec& s = device->spec();
  INFO(device->name());
  CHECK(device->name().rfind("cuda:0 (", 0) == 0);
  CHECK(s.computeCapability >= 50);
  CHECK(s.smCount > 0);
  CHECK(s.warpSize == 32);
  CHECK(s.sharedMemoryPerBlock >= s.sharedMemoryPerBlockDefault);
  CHECK(s.memoryBandwidthGBs > 100);
}

TEST_CASE("gpu: copies round-trip and a launch changes the data", "[gpu]") {
  auto device = gpuOrSkip();
  if (!device) return;
  const uint32_t n = 1000;
  std::vector<float> host = iota(n);
  DevicePtr p = device->allocate(n * 4);
  device->copyToDevice(p, host.data(), n * 4);
  KernelHandle k = device->getKernel(device->loadModule(kAddOnePtx), "add_one");
  LaunchConfig c;
  c.grid = {(n + 127) / 128, 1, 1};
  c.block = {128, 1, 1};
  device->launch(k, c, {KernelArg::pointer(p), KernelArg::of<uint32_t>(n)});
  c.cooperative = true; // the same kernel as a cooperative launch
  device->launch(k, c, {KernelArg::pointer(p), KernelArg::of<uint32_t>(n)});
  std::vector<float> out(n);
  device->copyToHost(out.data(), p, n * 4);
  for (uint32_t i = 0; i < n; ++i)
    REQUIRE(out[i] == host[i] + 2);
  CHECK(device->maxActiveBlocksPerSM(k, 128, 0) > 0);
  device->memset(p, 0, n * 4);
  device->copyToHost(out.data(), p, n * 4);
  CHECK(out == std::vector<float>(n, 0.0f));
  device->free(p);
}

TEST_CASE("gpu: dynamic shared memory above 48 KiB", "[gpu]") {
  auto device = gpuOrSkip();
  if (!device) return;
  const uint32_t block = 256, stride = 64; // 256 × 64 × 4 = 64 KiB
  if (device->spec().sharedMemoryPerBlock < 64 * 1024) {
    WARN("skipped: " << device->name() << " has less than 64 KiB shared memory per block");
    return;
  }
  std::vector<float> host = iota(2 * block);
  DevicePtr p = device->allocate(host.size() * 4);
  device->copyToDevice(p, host.data(), host.size() * 4);
  KernelHandle k = device->getKernel(device->loadModule(kAddOnePtx), "reverse_blocks");
  LaunchConfig c;
  c.grid = {2, 1, 1};
  c.block = {block, 1, 1};
  c.dynamicSharedBytes = block * stride * 4;
  device->launch(k, c, {KernelArg::pointer(p), KernelArg::of<uint32_t>(stride)});
  std::vector<float> out(host.size());
  device->copyToHost(out.data(), p, out.size() * 4);
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t t = 0; t < block; ++t)
      REQUIRE(out[b * block + t] == host[b * block + block - 1 - t]);
}

TEST_CASE("gpu: a captured graph replays and takes new arguments", "[gpu]") {
  auto device = gpuOrSkip();
  if (!device) return;
  const uint32_t n = 256;
  std::vector<float> zeros(n, 0.0f);
  DevicePtr a = device->allocate(n * 4), b = device->allocate(n * 4);
  device->copyToDevice(a, zeros.data(), n * 4);
  device->copyToDevice(b, zeros.data(), n * 4);
  KernelHandle k = device->getKernel(device->loadModule(kAddOnePtx), "add_one");
  LaunchConfig c;
  c.grid = {2, 1, 1};
  c.block = {128, 1, 1};
  device->beginCapture();
  device->launch(k, c, {KernelArg::pointer(a), KernelArg::of<uint32_t>(n)});
  device->launch(k, c, {KernelArg::pointer(a), KernelArg::of<uint32_t>(n)});
  GraphHandle g = device->endCapture();
  device->replay(g); // a += 2
  device->updateGraphKernelArgs(g, 1, {KernelArg::pointer(b), KernelArg::of<uint32_t>(n)});
  device->startTimer();
  device->replay(g); // a += 1, b += 1
  std::optional<double> ms = device->stopTimer();
  REQUIRE(ms.has_value());
  CHECK(*ms > 0);     // two kernels ran between the events
  CHECK(*ms < 1000); // and they are tiny
  std::vector<float> outA(n), outB(n);
  device->copyToHost(outA.data(), a, n * 4);
  device->copyToHost(outB.data(), b, n * 4);
  CHECK(outA == std::vector<float>(n, 3.0f));
  CHECK(outB == std::vector<float>(n, 1.0f));
}

TEST_CASE("gpu: invalid PTX is reported with the JIT log", "[gpu]") {
  auto device = gpuOrSkip();
  if (!device) return;
  std::string bad = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n  "
                    "bogus.op %r1;\n  ret;\n}\n";
  try {
    device->loadModule(bad);
    FAIL("invalid PTX loaded");
  } catch (const DeviceError& e) {
    std::string m = e.what();
    INFO(m);
    CHECK(m.rfind("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX", 0) == 0);
    CHECK(m.find("line 6") != std::string::npos);
  }
}
