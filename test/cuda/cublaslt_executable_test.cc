// The Executable with cuBLASLt on the cuda device, on a fake driver and a fake cuBLASLt: the
// provider is chosen on a plain run before anything is captured, its call is captured in the
// graph, a graph whose GEMM pointers change is captured again once and then weft's kernel
// takes the GEMM back, and Executable::time names the choice.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <optional>

#include "compile.h"
#include "fake_cublaslt.h"
#include "fake_driver.h"
#include "runtime/cuda/cuda_device_impl.h"

using namespace weft;
using namespace weft::runtime::cuda;
using namespace weft::runtime::cuda::testing;
using ir::DType;

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

/// y = x [64, 32] · w [32, 48], compiled for the H100 profile (the fake looks like one).
std::shared_ptr<CompiledGraph> compiledDot() {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64, 32}});
  auto w = g.parameter("w", {DType::f32, {32, 48}});
  g.addOutput(g.dot(x, w, "y"));
  CompileOptions o;
  o.cacheDir = "off";
  o.shapes = ShapeMode::Specialized;
  o.device = *deviceSpecProfile("h100");
  return compile(g, o);
}

} // namespace

TEST_CASE("the Executable captures cuBLASLt's call once chosen, and gives the GEMM back to weft "
          "when its pointers keep changing",
          "[cuda][cublaslt]") {
  Environment env;
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  env.set("WEFT_GEMM_PROVIDER", "cublaslt");
  FakeCublasLt& lt = fakeLt();
  lt = FakeCublasLt{};
  lt.hasAlgorithm = true;
  CudaDevice device(fakeDriverApi(), 0);
  Executable exe(compiledDot(), device);
  exe.setGraphMode(GraphMode::On);
  DevicePtr x1 = device.allocate(64 * 32 * 4), x2 = device.allocate(64 * 32 * 4);
  DevicePtr w = device.allocate(32 * 48 * 4), y = device.allocate(64 * 48 * 4);
  auto at = [](DevicePtr p) { return reinterpret_cast<const void*>(uintptr_t(p)); };

  exe.run({x1, w}, {y}, {}); // the provider is chosen on a plain run
  CHECK(exe.stats().plainRuns == 1);
  CHECK(exe.stats().captures == 0);
  CHECK(lt.matmuls == 1);
  CHECK(lt.a == at(w)); // Cᵀ = Bᵀ·Aᵀ
  CHECK(lt.b == at(x1));
  CHECK(lt.d == at(y));

  exe.run({x1, w}, {y}, {}); // then captured: the call is made once, into the graph
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().replays == 1);
  CHECK(lt.matmuls == 2);
  exe.run({x1, w}, {y}, {});
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().replays == 2);
  CHECK(lt.matmuls == 2);

  exe.run({x2, w}, {y}, {}); // new pointers: captured again
  CHECK(exe.stats().captures == 2);
  CHECK(lt.matmuls == 3);
  CHECK(lt.b == at(x2));
  exe.run({x1, w}, {y}, {}); // and again: weft's kernel, whose node follows its pointers
  CHECK(exe.stats().captures == 3);
  CHECK(lt.matmuls == 3);
  size_t updates = exe.stats().argUpdates;
  exe.run({x2, w}, {y}, {});
  CHECK(exe.stats().captures == 3);
  CHECK(exe.stats().argUpdates == updates + 1);
  CHECK(lt.matmuls == 3);
  lt = FakeCublasLt{};
}

TEST_CASE("Executable::time names the provider each GEMM step runs on", "[cuda][cublaslt]") {
  Environment env;
  env.set("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT);
  FakeCublasLt& lt = fakeLt();
  lt = FakeCublasLt{};
  lt.hasAlgorithm = true;
  CudaDevice device(fakeDriverApi(), 0);
  std::vector<HostTensor> inputs = {HostTensor(DType::f32, {64, 32}),
                                    HostTensor(DType::f32, {32, 48})};
  SECTION("forced") {
    env.set("WEFT_GEMM_PROVIDER", "cublaslt");
    Executable exe(compiledDot(), device);
    Executable::Timing t = exe.time(inputs, 2);
    REQUIRE(t.kernels.size() == 1);
    CHECK_THAT(t.kernels[0].name, Catch::StartsWith("lib0_") &&
                                      Catch::EndsWith(" [cublasLt (WEFT_GEMM_PROVIDER=cublaslt)]"));
    CHECK(lt.matmuls == 1 + 2 + 2); // the warm-up run, each run of the step alone, each run
  }
  SECTION("measured: the fake's clock ties, so weft's kernel runs it") {
    env.set("WEFT_GEMM_PROVIDER", "auto");
    Executable exe(compiledDot(), device);
    Executable::Timing t = exe.time(inputs, 2);
    REQUIRE(t.kernels.size() == 1);
    CHECK_THAT(t.kernels[0].name,
               Catch::EndsWith(" [cublasLt 1500.0 us vs weft 1500.0 us → weft]"));
    CHECK(lt.matmuls == 6); // timed once, in the warm-up run
  }
  SECTION("weft") {
    env.set("WEFT_GEMM_PROVIDER", "weft");
    Executable exe(compiledDot(), device);
    Executable::Timing t = exe.time(inputs, 2);
    REQUIRE(t.kernels.size() == 1);
    CHECK(t.kernels[0].name.find('[') == std::string::npos);
    CHECK(lt.matmuls == 0);
  }
  lt = FakeCublasLt{};
}
