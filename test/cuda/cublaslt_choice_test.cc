// Choosing a GEMM step's provider from timings (runtime/cuda/cublaslt_choice.h): the faster
// median wins, ties keep weft's kernel, the environment forces either, and the line
// `weft run --time` shows.
#include <catch2/catch.hpp>

#include "runtime/cuda/cublaslt_choice.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda::lt;

TEST_CASE("the provider with the faster median runs the step", "[cuda][cublaslt]") {
  // cuBLASLt's runs have one slow outlier; its median is still the lower
  ProviderChoice c = chooseProvider("lib3_q0", {0.0550, 0.0552, 0.0549, 0.0560, 0.0551},
                                    {0.0412, 0.0900, 0.0411, 0.0413, 0.0412}, ProviderMode::Auto);
  CHECK(c.library);
  CHECK(c.measured);
  CHECK(c.weftUs == Approx(55.1));
  CHECK(c.libraryUs == Approx(41.2));
  CHECK(c.str() == "lib3_q0: cublasLt 41.2 us vs weft 55.1 us → cublasLt");

  ProviderChoice w = chooseProvider("lib1_q0", {0.030, 0.031, 0.029}, {0.040, 0.020, 0.041},
                                    ProviderMode::Auto);
  CHECK_FALSE(w.library);
  CHECK(w.str() == "lib1_q0: cublasLt 40.0 us vs weft 30.0 us → weft");
}

TEST_CASE("a tie or missing timings keep weft's own kernel", "[cuda][cublaslt]") {
  CHECK_FALSE(chooseProvider("k", {0.05, 0.05}, {0.05, 0.05}, ProviderMode::Auto).library);
  ProviderChoice none = chooseProvider("k", {}, {0.01}, ProviderMode::Auto);
  CHECK_FALSE(none.library);
  CHECK_FALSE(none.measured);
  CHECK(none.str() == "k: weft (not measured)");
}

TEST_CASE("WEFT_GEMM_PROVIDER forces a provider without measuring", "[cuda][cublaslt]") {
  ProviderChoice lib = chooseProvider("lib0_q0", {0.01}, {0.09}, ProviderMode::CublasLt);
  CHECK(lib.library);
  CHECK_FALSE(lib.measured);
  CHECK(lib.str() == "lib0_q0: cublasLt (WEFT_GEMM_PROVIDER=cublaslt)");
  ProviderChoice own = chooseProvider("lib0_q0", {0.09}, {0.01}, ProviderMode::Weft);
  CHECK_FALSE(own.library);
  CHECK(own.str() == "lib0_q0: weft (WEFT_GEMM_PROVIDER=weft)");
}

TEST_CASE("WEFT_GEMM_PROVIDER takes auto, weft or cublaslt", "[cuda][cublaslt]") {
  CHECK(parseProviderMode("") == ProviderMode::Auto);
  CHECK(parseProviderMode("auto") == ProviderMode::Auto);
  CHECK(parseProviderMode("weft") == ProviderMode::Weft);
  CHECK(parseProviderMode("cuBLASLt") == ProviderMode::CublasLt);
  std::string message;
  try {
    parseProviderMode("cublas");
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message == "WEFT_GEMM_PROVIDER=cublas: expected auto, weft or cublaslt");
}

TEST_CASE("the median of an even count is its upper middle", "[cuda][cublaslt]") {
  CHECK(medianMs({4, 1, 3, 2}) == 3);
  CHECK(medianMs({2, 9, 1}) == 2);
  CHECK(medianMs({}) == 0);
}
