// cuBLASLt serving a program's GEMM steps on the cuda device (runtime/cuda/cublaslt_steps.h),
// checked on a fake driver and a fake cuBLASLt: which steps it takes, what it passes the
// library, how the choice is made and shown, and how its launches sit in a captured graph.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "fake_cublaslt.h"
#include "fake_driver.h"
#include "fusion/plan.h"
#include "runtime/cuda/cublaslt_steps.h"
#include "runtime/cuda/cuda_device_impl.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda;
using namespace weft::runtime::cuda::testing;
using ir::DType;
using ir::OpKind;

namespace {

FakeCublasLt& fakeLt() {
  void* h = dlopen(WEFT_FAKE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h);
  return *static_cast<FakeCublasLt*>(dlsym(h, "fakeCublasLt"));
}

/// Sets environment variables for one test and puts them back after it.
class Environment {
public:
  void set(const char* name, const std::string& value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    setenv(name, value.c_str(), 1);
  }
  ~Environment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->second ? setenv(it->first, it->second->c_str(), 1) : unsetenv(it->first);
  }

private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

/// y = x [128, 256] · w [256, 768] + bias [768] (one GEMM step), and exp(z) (one kernel).
struct BiasedDot {
  ir::Graph g;
  fusion::FusionPlan plan;
  std::vector<codegen::CompiledKernel> kernels;
  std::vector<DevicePtr> buffers;
  BiasedDot() {
    auto x = g.parameter("x", {DType::f32, {128, 256}});
    auto w = g.parameter("w", {DType::f32, {256, 768}});
    auto bias = g.parameter("bias", {DType::f32, {768}});
    auto z = g.parameter("z", {DType::f32, {1024}});
    g.addOutput(g.binary(OpKind::Add, g.dot(x, w, "mm"), g.broadcastInDim(bias, {128, 768}, {1}), "y"));
    g.addOutput(g.unary(OpKind::Exp, z, "e"));
    plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      codegen::CompiledKernel k;
      k.planStep = int(s);
      k.name = std::holds_alternative<fusion::LibraryCall>(plan.steps[s])
                   ? "lib" + std::to_string(s) + "_y"
                   : "stitch" + std::to_string(s);
      kernels.push_back(k);
    }
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      buffers.push_back(0x100000 * (b + 1));
  }
  DevicePtr pointerOf(const std::string& value) const {
    return buffers.at(size_t(plan.bufferOfValue.at(size_t(*plan.graph.find(value)))));
  }
};

} // namespace

TEST_CASE("cuBLASLt runs an eligible step with weft's pointers, other kernels stay weft's",
          "[cuda][cublaslt]") {
  Environment env;
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  env.set("WEFT_GEMM_PROVIDER", "cublaslt");
  FakeCublasLt& lt = fakeLt();
  lt = FakeCublasLt{};
  lt.hasAlgorithm = true;
  CudaDevice device(fakeDriverApi(), 0);
  BiasedDot p;
  REQUIRE(p.kernels.size() == 2);
  REQUIRE(p.kernels[0].name == "lib0_y");
  auto gemms = LibraryGemms::make(device, p.plan, p.kernels, false);
  REQUIRE(gemms);

  int weftRuns = 0;
  auto weft = [&] { ++weftRuns; };
  CHECK_FALSE(gemms->decided({}));
  gemms->launch(0, weft, p.buffers, {});
  gemms->launch(1, weft, p.buffers, {});
  CHECK(weftRuns == 1); // the exp kernel
  CHECK(lt.matmuls == 1);
  CHECK(gemms->decided({}));
  CHECK(gemms->serves(0, {}));
  CHECK_FALSE(gemms->serves(1, {}));
  // Cᵀ = Bᵀ·Aᵀ: cuBLASLt's A is w, its B is x; D is y, the bias the bias vector
  CHECK(lt.a == reinterpret_cast<const void*>(p.pointerOf("w")));
  CHECK(lt.b == reinterpret_cast<const void*>(p.pointerOf("x")));
  CHECK(lt.d == reinterpret_cast<void*>(p.pointerOf("y")));
  CHECK(lt.c == lt.d);
  CHECK(lt.bias == reinterpret_cast<const void*>(p.pointerOf("bias")));
  CHECK(lt.transa == 0);
  CHECK(lt.transb == 0);
  CHECK(lt.epilogue == 4); // CUBLASLT_EPILOGUE_BIAS
  CHECK(lt.computeType == 68); // CUBLAS_COMPUTE_32F: exact f32
  CHECK(lt.layouts == 3);
  CHECK(std::vector<int64_t>(lt.layout[0], lt.layout[0] + 4) == std::vector<int64_t>{0, 768, 256, 768});
  CHECK(std::vector<int64_t>(lt.layout[1], lt.layout[1] + 4) == std::vector<int64_t>{0, 256, 128, 256});
  CHECK(std::vector<int64_t>(lt.layout[2], lt.layout[2] + 4) == std::vector<int64_t>{0, 768, 128, 768});
  CHECK(gemms->timedName(0, "lib0_y", {}) == "lib0_y [cublasLt (WEFT_GEMM_PROVIDER=cublaslt)]");
  CHECK(gemms->timedName(1, "stitch1", {}) == "stitch1");

  // the bias pointer follows the run's buffers
  p.buffers[size_t(p.plan.bufferOfValue[size_t(*p.plan.graph.find("bias"))])] = 0x77000000;
  gemms->launch(0, weft, p.buffers, {});
  CHECK(lt.bias == reinterpret_cast<const void*>(uintptr_t(0x77000000)));
  CHECK(lt.matmuls == 2);
  lt = FakeCublasLt{};
}

TEST_CASE("cuBLASLt's step is timed against weft's kernel and the faster kept",
          "[cuda][cublaslt]") {
  Environment env;
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  env.set("WEFT_GEMM_PROVIDER", "auto");
  FakeCublasLt& lt = fakeLt();
  lt = FakeCublasLt{};
  lt.hasAlgorithm = true;
  CudaDevice device(fakeDriverApi(), 0);
  BiasedDot p;
  auto gemms = LibraryGemms::make(device, p.plan, p.kernels, false);
  REQUIRE(gemms);
  int weftRuns = 0;
  gemms->launch(0, [&] { ++weftRuns; }, p.buffers, {});
  // a warm-up and five timed runs of each; the fake's events say 1.5 ms for everything, a tie,
  // which keeps weft's kernel: it then runs the step
  CHECK(lt.matmuls == 6);
  CHECK(weftRuns == 7);
  CHECK_FALSE(gemms->serves(0, {}));
  CHECK(gemms->timedName(0, "lib0_y", {}) ==
        "lib0_y [cublasLt 1500.0 us vs weft 1500.0 us → weft]");
  CHECK(std::count(fakeDriver().calls.begin(), fakeDriver().calls.end(), "cuEventElapsedTime") ==
        12);
  // decided: later runs time nothing
  gemms->launch(0, [&] { ++weftRuns; }, p.buffers, {});
  CHECK(weftRuns == 8);
  CHECK(lt.matmuls == 6);
  lt = FakeCublasLt{};
}

TEST_CASE("a step cuBLASLt has no algorithm for, or whose call fails, stays weft's",
          "[cuda][cublaslt]") {
  Environment env;
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  env.set("WEFT_GEMM_PROVIDER", "auto");
  FakeCublasLt& lt = fakeLt();
  lt = FakeCublasLt{};
  CudaDevice device(fakeDriverApi(), 0);
  BiasedDot p;
  int weftRuns = 0;
  SECTION("no algorithm") {
    auto gemms = LibraryGemms::make(device, p.plan, p.kernels, false);
    REQUIRE(gemms);
    gemms->launch(0, [&] { ++weftRuns; }, p.buffers, {});
    CHECK(weftRuns == 1);
    CHECK(lt.matmuls == 0);
    CHECK(gemms->timedName(0, "lib0_y", {}) ==
          "lib0_y [weft (cublasLtMatmulAlgoGetHeuristic failed: CUBLAS_STATUS_NOT_SUPPORTED)]");
  }
  SECTION("an operand in no buffer, even when cuBLASLt is forced") {
    env.set("WEFT_GEMM_PROVIDER", "cublaslt");
    lt.hasAlgorithm = true;
    p.plan.bufferOfValue[size_t(*p.plan.graph.find("w"))] = -1; // as a constant compiled in
    auto gemms = LibraryGemms::make(device, p.plan, p.kernels, false);
    REQUIRE(gemms);
    gemms->launch(0, [&] { ++weftRuns; }, p.buffers, {});
    CHECK(weftRuns == 1);
    CHECK(lt.matmuls == 0);
    CHECK(gemms->timedName(0, "lib0_y", {}) ==
          "lib0_y [weft (%w is in no buffer (a constant compiled into the code))]");
  }
  SECTION("the call fails") {
    lt.hasAlgorithm = true;
    lt.matmulStatus = 13;
    auto gemms = LibraryGemms::make(device, p.plan, p.kernels, false);
    REQUIRE(gemms);
    gemms->launch(0, [&] { ++weftRuns; }, p.buffers, {});
    CHECK_FALSE(gemms->serves(0, {}));
    CHECK(weftRuns == 2); // the warm-up, then the step itself
    CHECK(gemms->timedName(0, "lib0_y", {}) ==
          "lib0_y [weft (cublasLtMatmul failed: CUBLAS_STATUS_EXECUTION_FAILED)]");
  }
  lt = FakeCublasLt{};
}

TEST_CASE("no provider without cuBLASLt, under WEFT_GEMM_PROVIDER=weft, or with no eligible step",
          "[cuda][cublaslt]") {
  Environment env;
  CudaDevice device(fakeDriverApi(), 0);
  BiasedDot p;
  env.set("WEFT_CUBLASLT_LIBRARY", "/nonexistent/libcublasLt.so.13");
  env.set("WEFT_GEMM_PROVIDER", "auto");
  CHECK_FALSE(LibraryGemms::make(device, p.plan, p.kernels, false));
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  CHECK(LibraryGemms::make(device, p.plan, p.kernels, false));
  env.set("WEFT_GEMM_PROVIDER", "weft");
  CHECK_FALSE(LibraryGemms::make(device, p.plan, p.kernels, false));
  env.set("WEFT_GEMM_PROVIDER", "fastest");
  CHECK_THROWS_WITH(LibraryGemms::make(device, p.plan, p.kernels, false),
                    "WEFT_GEMM_PROVIDER=fastest: expected auto, weft or cublaslt");
  env.set("WEFT_GEMM_PROVIDER", "auto");
  std::vector<codegen::CompiledKernel> stitchedOnly = {p.kernels[1]};
  CHECK_FALSE(LibraryGemms::make(device, p.plan, stitchedOnly, false));
}

namespace {
std::vector<uint8_t> bytesOf(uint64_t v) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

// What the fake cuBLASLt's matmul launches on the stream it is given: one kernel of "the
// library's", through the fake driver.
const DriverApi* libraryDriver = nullptr;
CUfunction libraryKernel = nullptr;
void launchLibraryKernel(void* stream) {
  uint64_t arg = 0xab;
  void* params[] = {&arg};
  libraryDriver->cuLaunchKernel(libraryKernel, 1, 1, 1, 32, 1, 1, 0, static_cast<CUstream>(stream),
                                params, nullptr);
}
} // namespace

TEST_CASE("a library call's own kernels sit between weft's launches in a captured graph",
          "[cuda][cublaslt]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().paramSizes["first"] = {8};
  fakeDriver().paramSizes["second"] = {8};
  fakeDriver().paramSizes["library_gemm"] = {8};
  ModuleHandle m = device.loadModule("ptx");
  KernelHandle first = device.getKernel(m, "first"), second = device.getKernel(m, "second");
  libraryDriver = api.get();
  REQUIRE(api->cuModuleGetFunction(&libraryKernel, nullptr, "library_gemm") == CUDA_SUCCESS);
  LaunchConfig c;
  c.grid = {4, 1, 1};

  device.beginCapture();
  device.launch(first, c, {KernelArg::pointer(0x100)});
  device.runLibraryCall("lib1_y (cuBLASLt)", [](CUstream s) { // two kernels of its own
    launchLibraryKernel(s);
    launchLibraryKernel(s);
  });
  device.launch(second, c, {KernelArg::pointer(0x200)});
  GraphHandle g = device.endCapture();
  // launch 2 is the graph's fourth kernel node: its arguments are updated there
  device.updateGraphKernelArgs(g, 2, {KernelArg::pointer(0x2000)});
  device.replay(g);
  REQUIRE(fakeDriver().graphLaunches.size() == 4);
  CHECK(fakeDriver().graphLaunches[0].kernel == "first");
  CHECK(fakeDriver().graphLaunches[0].args[0] == bytesOf(0x100));
  CHECK(fakeDriver().graphLaunches[1].kernel == "library_gemm");
  CHECK(fakeDriver().graphLaunches[2].kernel == "library_gemm");
  CHECK(fakeDriver().graphLaunches[2].args[0] == bytesOf(0xab));
  CHECK(fakeDriver().graphLaunches[3].kernel == "second");
  CHECK(fakeDriver().graphLaunches[3].args[0] == bytesOf(0x2000));
  CHECK_THROWS_WITH(device.updateGraphKernelArgs(g, 1, {KernelArg::pointer(0x1)}),
                    "updateGraphKernelArgs: node 1 of graph 0 is a library call (lib1_y "
                    "(cuBLASLt)); capture the graph again to change it");

  // nodes listed out of capture order: weft's launches are not all found after the library's
  fakeDriver().listNodesReversed = true;
  device.beginCapture();
  device.launch(first, c, {KernelArg::pointer(0x100)});
  device.runLibraryCall("lib1_y (cuBLASLt)", launchLibraryKernel);
  device.launch(second, c, {KernelArg::pointer(0x200)});
  CHECK_THROWS_WITH(device.endCapture(),
                    "endCapture: no kernel node of the captured graph is launch 2 (kernel "
                    "'second') after the library calls' nodes");
}

TEST_CASE("in a capture the chosen provider is recorded, and nothing is timed", "[cuda][cublaslt]") {
  Environment env;
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  env.set("WEFT_GEMM_PROVIDER", "cublaslt");
  FakeCublasLt& lt = fakeLt();
  lt = FakeCublasLt{};
  lt.hasAlgorithm = true;
  lt.onMatmul = launchLibraryKernel;
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  libraryDriver = api.get();
  fakeDriver().paramSizes["library_gemm"] = {8};
  fakeDriver().paramSizes["stitch1"] = {8};
  REQUIRE(api->cuModuleGetFunction(&libraryKernel, nullptr, "library_gemm") == CUDA_SUCCESS);
  KernelHandle stitch = device.getKernel(device.loadModule("ptx"), "stitch1");
  BiasedDot p;
  auto gemms = LibraryGemms::make(device, p.plan, p.kernels, false);
  REQUIRE(gemms);
  auto weft = [&] { device.launch(stitch, LaunchConfig{}, {KernelArg::pointer(0x300)}); };

  SECTION("undecided: weft's kernel is captured") {
    device.beginCapture();
    gemms->launch(0, weft, p.buffers, {});
    device.endCapture();
    CHECK(lt.matmuls == 0);
    CHECK_FALSE(gemms->decided({}));
    CHECK(gemms->captureKey(p.buffers, {}).empty()); // nothing of cuBLASLt's in the graph
  }
  SECTION("decided on a plain run: cuBLASLt's kernels are captured") {
    gemms->launch(0, weft, p.buffers, {});
    REQUIRE(gemms->serves(0, {}));
    std::string key = gemms->captureKey(p.buffers, {});
    device.beginCapture();
    gemms->launch(0, weft, p.buffers, {});
    gemms->launch(1, weft, p.buffers, {});
    GraphHandle g = device.endCapture();
    fakeDriver().graphLaunches.clear();
    device.replay(g);
    REQUIRE(fakeDriver().graphLaunches.size() == 2);
    CHECK(fakeDriver().graphLaunches[0].kernel == "library_gemm");
    CHECK(fakeDriver().graphLaunches[1].kernel == "stitch1");
    device.updateGraphKernelArgs(g, 1, {KernelArg::pointer(0x400)}); // weft's node: in place
    CHECK_THROWS_AS(device.updateGraphKernelArgs(g, 0, {KernelArg::pointer(0x1)}), DeviceError);
    // new pointers for the GEMM's operands or another binding: the graph must be captured again
    CHECK(gemms->captureKey(p.buffers, {}) == key);
    p.buffers[size_t(p.plan.bufferOfValue[size_t(*p.plan.graph.find("x"))])] = 0x99000000;
    CHECK(gemms->captureKey(p.buffers, {}) != key);
  }
  lt = FakeCublasLt{};
}
