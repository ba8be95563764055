// cuBLASLt as a GEMM provider seen from the weft program: `weft plan --explain` says which GEMMs
// it may run on the cuda device, as which call or why not; on the sim device the provider is
// dormant, whatever WEFT_GEMM_PROVIDER says.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "run_weft.h"

namespace fs = std::filesystem;

namespace {

using weft::testing::runWeft;
using Result = weft::testing::WeftResult;

// h = x · w + b (a bias along N: cuBLASLt's bias epilogue), r = gelu(h · w2) (weft's)
const std::string kTwoDots =
    R"({"name": "mlp", "inputs": [{"name": "x", "dtype": "f32", "shape": [64, 32]},
  {"name": "w", "dtype": "f32", "shape": [32, 48]}, {"name": "b", "dtype": "f32", "shape": [48]},
  {"name": "w2", "dtype": "f32", "shape": [48, 16]}],
  "ops": [{"name": "mm", "op": "dot", "inputs": ["x", "w"]},
          {"name": "h", "op": "bias_add", "inputs": ["mm", "b"]},
          {"name": "mm2", "op": "dot", "inputs": ["h", "w2"]},
          {"name": "r", "op": "gelu", "inputs": ["mm2"]}],
  "outputs": ["r"]})";

std::string graph() {
  fs::path p = weft::testing::scratchDir() / "cublaslt_two_dots.json";
  std::ofstream(p) << kTwoDots;
  return p.string();
}

std::string afterFirstLine(const std::string& text) {
  size_t eol = text.find('\n');
  return eol == std::string::npos ? "" : text.substr(eol + 1);
}

} // namespace

TEST_CASE("weft plan --explain says which GEMMs cuBLASLt may run on the cuda device") {
  std::string g = graph();
  Result r = runWeft("plan " + g + " --explain");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("GEMM providers on the cuda device") != std::string::npos);
  CHECK(r.out.find("(dot %mm): cuBLASLt may run it: Cᵀ = Bᵀ·Aᵀ, transa N transb N, m 48 n 64 k "
                   "32, batch 1, f32 → f32, compute 32F, bias") != std::string::npos);
  CHECK(r.out.find("(dot %mm2): weft's kernel only: its epilogue (") != std::string::npos);
  // TF32 when the compile allows it (its GEMM plans took tf32)
  Result tf32 = runWeft("plan " + g + " --explain --tf32");
  REQUIRE(tf32.rc == 0);
  CHECK(tf32.out.find("f32 → f32, compute 32F_FAST_TF32, bias") != std::string::npos);
  // the plain plan is as it was
  Result plain = runWeft("plan " + g);
  REQUIRE(plain.rc == 0);
  CHECK(plain.out.find("cuBLASLt") == std::string::npos);
}

TEST_CASE("on the sim device WEFT_GEMM_PROVIDER changes nothing") {
  std::string g = graph();
  const std::string args = "run " + g + " --device sim --random --seed 3 --check";
  Result own = runWeft(args);
  REQUIRE(own.rc == 0);
  for (const char* env : {"WEFT_GEMM_PROVIDER=cublaslt", "WEFT_GEMM_PROVIDER=not-a-provider"}) {
    Result forced = runWeft(args, env);
    INFO(env);
    CHECK(forced.rc == 0);
    // the same values and check; the first line may say the program came from the cache
    CHECK(afterFirstLine(forced.out) == afterFirstLine(own.out));
    CHECK_FALSE(afterFirstLine(own.out).empty());
  }
}
