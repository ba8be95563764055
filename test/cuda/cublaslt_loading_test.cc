// Finding cuBLASLt (runtime/cuda/cublaslt_api.h) without cuBLAS: a fake library that exports
// its entry points, one that lacks two, paths that do not exist, and the environment switch.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "fake_cublaslt.h"
#include "runtime/cuda/cublaslt_api.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda;

namespace {
int fakeCalls(const std::string& library) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  REQUIRE(h);
  int calls = static_cast<FakeCublasLt*>(dlsym(h, "fakeCublasLt"))->calls;
  dlclose(h);
  return calls;
}
} // namespace

TEST_CASE("cuBLASLt's entry points resolve from a library that exports them", "[cuda][cublaslt]") {
  lt::Loaded loaded = lt::load({WEFT_FAKE_CUBLASLT});
  REQUIRE(loaded);
  CHECK(loaded.why.empty());
  CHECK(loaded.api->library == WEFT_FAKE_CUBLASLT);
  int before = fakeCalls(WEFT_FAKE_CUBLASLT);
  lt::Handle handle = nullptr;
  CHECK(loaded.api->cublasLtCreate(&handle) == lt::kStatusSuccess);
  CHECK(handle == reinterpret_cast<void*>(uintptr_t(0xc0b1a5)));
  int found = -1;
  CHECK(loaded.api->cublasLtMatmulAlgoGetHeuristic(nullptr, nullptr, nullptr, nullptr, nullptr,
                                                   nullptr, nullptr, 1, nullptr, &found) ==
        lt::kStatusNotSupported);
  CHECK(found == 0);
  CHECK(fakeCalls(WEFT_FAKE_CUBLASLT) == before + 2); // the fake's own code ran
  // statuses are named by the library where it can
  CHECK(lt::describeStatus(*loaded.api, 15) == "CUBLAS_STATUS_NOT_SUPPORTED");
  CHECK(lt::describeStatus(*loaded.api, 99) == "cublasStatus_t 99");
  std::string message;
  try {
    lt::check(*loaded.api, 13, "cublasLtMatmul");
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK(message == "cublasLtMatmul failed: CUBLAS_STATUS_EXECUTION_FAILED");
  // loading again hands out the same table
  CHECK(lt::load({WEFT_FAKE_CUBLASLT}).api == loaded.api);
}

TEST_CASE("a library without every entry point is refused naming the ones it lacks",
          "[cuda][cublaslt]") {
  lt::Loaded loaded = lt::load({WEFT_FAKE_CUBLASLT_PARTIAL});
  CHECK_FALSE(loaded);
  CHECK(loaded.why == std::string("no cuBLASLt found (") + WEFT_FAKE_CUBLASLT_PARTIAL +
                          ": no cublasLtMatmulAlgoGetHeuristic, cublasLtMatmul)");
}

TEST_CASE("the candidates are tried in order and every failure is named", "[cuda][cublaslt]") {
  lt::Loaded none = lt::load({"/nonexistent/libcublasLt.so.13", "/nonexistent/libcublasLt.so.12"});
  CHECK_FALSE(none);
  CHECK(none.why == "no cuBLASLt found (/nonexistent/libcublasLt.so.13: cannot open shared object "
                    "file: No such file or directory; /nonexistent/libcublasLt.so.12: cannot open "
                    "shared object file: No such file or directory)");
  lt::Loaded second = lt::load({"/nonexistent/libcublasLt.so.13", WEFT_FAKE_CUBLASLT_PARTIAL,
                                WEFT_FAKE_CUBLASLT});
  REQUIRE(second);
  CHECK(second.api->library == WEFT_FAKE_CUBLASLT);
  CHECK(lt::load(std::vector<std::string>{}).why == "no cuBLASLt library to try");
}

TEST_CASE("the default candidates are CUDA 13's, CUDA 12's and the development link",
          "[cuda][cublaslt]") {
  CHECK(lt::defaultLibraries() ==
        std::vector<std::string>{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
}

TEST_CASE("WEFT_CUBLASLT_LIBRARY names the library or turns cuBLASLt off", "[cuda][cublaslt]") {
  const char* old = std::getenv("WEFT_CUBLASLT_LIBRARY");
  std::string saved = old ? old : "";
  setenv("WEFT_CUBLASLT_LIBRARY", "off", 1);
  lt::Loaded off = lt::load();
  CHECK_FALSE(off);
  CHECK(off.why == "cuBLASLt is off (WEFT_CUBLASLT_LIBRARY=off)");
  setenv("WEFT_CUBLASLT_LIBRARY", WEFT_FAKE_CUBLASLT, 1);
  lt::Loaded fake = lt::load();
  REQUIRE(fake);
  CHECK(fake.api->library == WEFT_FAKE_CUBLASLT);
  if (old)
    setenv("WEFT_CUBLASLT_LIBRARY", saved.c_str(), 1);
  else
    unsetenv("WEFT_CUBLASLT_LIBRARY");
}
