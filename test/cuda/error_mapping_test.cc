// Every CUresult becomes a DeviceError naming the call that failed, the driver's name and
// text for the code, and what weft was doing; checked against a fake driver table.
#include <catch2/catch.hpp>

#include "fake_driver.h"
#include "runtime/cuda/cuda_device_impl.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda;
using namespace weft::runtime::cuda::testing;

namespace {
template <class F> std::string deviceErrorOf(F&& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST_CASE("a CUresult is described by the driver's name and text for it", "[cuda]") {
  auto api = fakeDriverApi();
  CHECK(describeResult(*api, CUDA_ERROR_INVALID_PTX) ==
        "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)");
  CHECK(describeResult(*api, CUresult(9999)) == "CUresult 9999");
  CHECK_NOTHROW(check(*api, CUDA_SUCCESS, "cuMemAlloc"));
  CHECK(deviceErrorOf([&] { check(*api, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"); }) ==
        "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  CHECK(deviceErrorOf([&] { check(*api, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "512 bytes"); }) ==
        "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory): 512 bytes");
}

TEST_CASE("the device refuses a driver, a machine or an ordinal it cannot use", "[cuda]") {
  SECTION("cuInit fails") {
    auto api = fakeDriverApi();
    fakeDriver().failures["cuInit"] = CUDA_ERROR_NO_DEVICE;
    CHECK(deviceErrorOf([&] { CudaDevice d(api, 0); }) ==
          "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
  }
  SECTION("a driver older than CUDA 12.0") {
    auto api = fakeDriverApi();
    fakeDriver().driverVersion = 11080;
    CHECK(deviceErrorOf([&] { CudaDevice d(api, 0); }) ==
          "the CUDA driver supports CUDA 11.8; weft needs a driver for CUDA 12.0 or newer");
  }
  SECTION("no such ordinal") {
    auto api = fakeDriverApi();
    fakeDriver().deviceCount = 2;
    CHECK(deviceErrorOf([&] { CudaDevice d(api, 2); }) ==
          "there is no cuda:2; this machine has 2 GPU(s), cuda:0 to cuda:1");
  }
  SECTION("no GPU at all") {
    auto api = fakeDriverApi();
    fakeDriver().deviceCount = 0;
    CHECK(deviceErrorOf([&] { CudaDevice d(api, 0); }) == "the CUDA driver sees no GPU");
  }
  SECTION("a failure after the context was retained releases it") {
    auto api = fakeDriverApi();
    fakeDriver().failures["cuStreamCreate"] = CUDA_ERROR_OUT_OF_MEMORY;
    CHECK(deviceErrorOf([&] { CudaDevice d(api, 0); }) ==
          "cuStreamCreate failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    CHECK(fakeDriver().calls.back() == "cuDevicePrimaryCtxRelease");
  }
}

TEST_CASE("a PTX that fails to load carries the JIT's error log", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().failures["cuModuleLoadDataEx"] = CUDA_ERROR_INVALID_PTX;
  fakeDriver().jitErrorLog =
      "ptxas application ptx input, line 7; error   : Unknown symbol 'foo'\n";
  CHECK(deviceErrorOf([&] { device.loadModule(".version 8.0\n"); }) ==
        "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed): ptxas "
        "application ptx "
        "input, line 7; error   : Unknown symbol 'foo'");
  fakeDriver().jitErrorLog = "";
  CHECK(deviceErrorOf([&] { device.loadModule(".version 8.0\n"); }) ==
        "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed): the PTX "
        "JIT left no log");
}

TEST_CASE("kernel lookup and launch failures name the kernel and the launch", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  ModuleHandle m = device.loadModule("ptx");
  fakeDriver().paramSizes["k"] = {8};

  fakeDriver().failures["cuModuleGetFunction"] = CUDA_ERROR_NOT_FOUND;
  CHECK(deviceErrorOf([&] { device.getKernel(m, "nope"); }) ==
        "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (named symbol not found): kernel 'nope' "
        "in module 0");
  CHECK(deviceErrorOf([&] { device.getKernel(7, "k"); }) == "getKernel: no module 7");
  fakeDriver().failures.clear();
  KernelHandle k = device.getKernel(m, "k");

  LaunchConfig c;
  c.grid = {1000, 1, 1};
  c.block = {256, 1, 1};
  c.cooperative = true;
  fakeDriver().failures["cuLaunchCooperativeKernel"] = CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  CHECK(deviceErrorOf([&] { device.launch(k, c, {KernelArg::pointer(0x10)}); }) ==
        "cuLaunchCooperativeKernel failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (too many "
        "blocks in cooperative "
        "launch): kernel 'k', grid (1000, 1, 1), block (256, 1, 1), 0 bytes dynamic shared memory, "
        "cooperative");

  c.cooperative = false;
  c.dynamicSharedBytes = 300 * 1024;
  CHECK(deviceErrorOf([&] { device.launch(k, c, {KernelArg::pointer(0x10)}); }) ==
        "kernel 'k' needs 307200 bytes of shared memory per block (0 static + 307200 dynamic) but "
        "cuda:0 (Fake "
        "H100, sm_90, 132 SMs) allows at most 232448");
  CHECK(deviceErrorOf([&] { device.launch(99, c, {}); }) == "no kernel handle 99");
}

TEST_CASE("a device without cooperative launches refuses a cooperative kernel", "[cuda]") {
  auto api = fakeDriverApi();
  fakeDriver().attributes[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH] = 0;
  CudaDevice device(api, 0);
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "k");
  LaunchConfig c;
  c.cooperative = true;
  CHECK(deviceErrorOf([&] { device.launch(k, c, {}); }) ==
        "cuda:0 (Fake H100, sm_90, 132 SMs) does not support cooperative launches, which kernel "
        "'k', grid (1, 1, "
        "1), block (1, 1, 1), 0 bytes dynamic shared memory, cooperative needs (grid barrier)");
}

TEST_CASE("misuse of capture, graphs and timers is refused with what to do instead", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().paramSizes["k"] = {8, 4};
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "k");
  DevicePtr p = device.allocate(64);

  CHECK(deviceErrorOf([&] { device.endCapture(); }) == "endCapture: no capture in progress");
  CHECK(deviceErrorOf([&] { device.stopTimer(); }) ==
        "stopTimer: no timer running; call startTimer() first");
  device.beginCapture();
  CHECK(deviceErrorOf([&] { device.beginCapture(); }) ==
        "beginCapture: a capture is already in progress");
  CHECK(deviceErrorOf([&] { device.copyToHost(nullptr, p, 4); }) ==
        "copyToHost during a graph capture: only launches can be captured; call it before "
        "beginCapture() or after "
        "endCapture()");
  CHECK_THROWS_AS(device.synchronize(), DeviceError);
  CHECK_THROWS_AS(device.memset(p, 0, 4), DeviceError);
  CHECK_THROWS_AS(device.startTimer(), DeviceError);
  device.launch(k, {}, {KernelArg::pointer(p), KernelArg::of<int32_t>(4)});
  GraphHandle g = device.endCapture();

  CHECK(deviceErrorOf([&] { device.replay(g + 1); }) == "no captured graph 1");
  CHECK(deviceErrorOf([&] { device.updateGraphKernelArgs(g, 1, {}); }) ==
        "updateGraphKernelArgs: graph 0 has 1 nodes, no node 1");
  CHECK(deviceErrorOf([&] { device.updateGraphKernelArgs(g, 0, {KernelArg::pointer(p)}); }) ==
        "updateGraphKernelArgs: node 0 of graph 0 (kernel 'k') was captured with argument sizes "
        "[8, 4], not [8]");
  CHECK(deviceErrorOf([&] { device.free(p + 4); }) ==
        "free(0x10004): not the start of a live allocation");
}

TEST_CASE("a graph whose kernel nodes are not listed in capture order is refused", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  ModuleHandle m = device.loadModule("ptx");
  KernelHandle a = device.getKernel(m, "a");
  KernelHandle b = device.getKernel(m, "b");
  fakeDriver().listNodesReversed = true;
  device.beginCapture();
  device.launch(a, {}, {});
  device.launch(b, {}, {});
  CHECK(deviceErrorOf([&] { device.endCapture(); }) ==
        "endCapture: kernel node 0 of the captured graph is not launch 0 (kernel 'a'); the driver "
        "did not list the "
        "nodes in capture order");
  CHECK(fakeDriver().calls.back() == "cuGraphDestroy");
}

TEST_CASE("a failed instantiation destroys the captured graph", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().failures["cuGraphInstantiateWithFlags"] = CUDA_ERROR_INVALID_VALUE;
  device.beginCapture();
  CHECK(deviceErrorOf([&] { device.endCapture(); }) ==
        "cuGraphInstantiateWithFlags failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
  CHECK(fakeDriver().calls.back() == "cuGraphDestroy");
  // the device is usable again: a new capture can begin
  fakeDriver().failures.clear();
  device.beginCapture();
  CHECK(device.endCapture() == 0);
}
