// `--tf32` on the weft program (CompileOptions::tf32): it reaches the GEMM plan (plan, compile,
// run), `run --check` allows for tf32's rounding only under it, and the compile cache keys on
// it: a program compiled with tf32 is never served to a run without it, nor the reverse.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "frontend/npy.h"
#include "run_weft.h"

namespace fs = std::filesystem;

namespace {

using weft::testing::runWeft;
using Result = weft::testing::WeftResult;

const std::string kDot =
    R"({"name": "mm", "inputs": [{"name": "a", "dtype": "f32", "shape": [70, 96]},
  {"name": "b", "dtype": "f32", "shape": [96, 130]}],
  "ops": [{"name": "c", "op": "dot", "inputs": ["a", "b"]}], "outputs": ["c"]})";

std::string dotGraph() {
  fs::path p = weft::testing::scratchDir() / "tf32_dot.json";
  std::ofstream(p) << kDot;
  return p.string();
}

size_t cacheEntries(const fs::path& dir) {
  size_t n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    n += e.is_regular_file() ? 1 : 0;
  return n;
}

} // namespace

TEST_CASE("weft plan and compile --tf32: f32 dots on TF32 tensor cores, only when asked") {
  std::string g = dotGraph();
  Result plain = runWeft("plan " + g);
  REQUIRE(plain.rc == 0);
  CHECK(plain.out.find("gemm fma batch 1 M 70 N 130 K 96") != std::string::npos);
  CHECK(plain.out.find("tf32") == std::string::npos);
  Result tf32 = runWeft("plan " + g + " --tf32");
  REQUIRE(tf32.rc == 0);
  CHECK(tf32.out.find("gemm mma batch 1 M 70 N 130 K 96: block 64x64x16") != std::string::npos);
  CHECK(tf32.out.find("mma m16n8k8 (tensor cores tf32) per warp") != std::string::npos);
  Result v100 = runWeft("plan " + g + " --tf32 --device-spec v100");
  REQUIRE(v100.rc == 0);
  CHECK(v100.out.find("gemm fma") != std::string::npos);
  CHECK(v100.out.find("fma (tf32 asked for, but sm_70 has no tf32 tensor cores (sm_80+))") !=
        std::string::npos);
  for (const char* cmd : {"run", "plan", "compile", "bench"}) {
    INFO(cmd);
    CHECK(runWeft(std::string(cmd) + " --help").out.find("--tf32") != std::string::npos);
  }
  Result ptx = runWeft("compile " + g + " --tf32 --emit ptx");
  REQUIRE(ptx.rc == 0);
  CHECK(ptx.out.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(runWeft("compile " + g + " --emit ptx").out.find("mma.sync") == std::string::npos);
}

TEST_CASE("weft run --tf32 --check passes, and the compile cache keys on --tf32") {
  std::string g = dotGraph();
  fs::path cache = weft::testing::scratchDir() / "tf32-cache";
  fs::remove_all(cache);
  const std::string env = "XDG_CACHE_HOME=" + cache.string();
  fs::path tf32Out = weft::testing::scratchDir() / "tf32-out",
           exactOut = weft::testing::scratchDir() / "exact-out";
  auto run = [&](const std::string& flags, const fs::path& out) {
    return runWeft("run " + g + " --random --seed 3 --check --save-outputs " + out.string() + flags,
                   env);
  };
  Result a = run(" --tf32", tf32Out);
  REQUIRE(a.rc == 0);
  CHECK(a.out.find("check: all outputs match\n") != std::string::npos);
  CHECK(cacheEntries(cache) == 1);
  Result b = run("", exactOut); // not served the tf32 program: a second entry
  REQUIRE(b.rc == 0);
  CHECK(b.out.find("check: all outputs match\n") != std::string::npos);
  CHECK(cacheEntries(cache) == 2);
  REQUIRE(run(" --tf32", tf32Out).rc == 0); // served from the cache: no third entry
  CHECK(cacheEntries(cache) == 2);
  // The two programs compute differently: tf32 rounds the operands.
  weft::HostTensor t = weft::frontend::readNpy((tf32Out / "c.npy").string(), weft::DType::f32);
  weft::HostTensor e = weft::frontend::readNpy((exactOut / "c.npy").string(), weft::DType::f32);
  REQUIRE(t.numElements() == e.numElements());
  int64_t same = 0;
  for (int64_t i = 0; i < t.numElements(); ++i)
    same += t.get(i) == e.get(i);
  CHECK(same < t.numElements() / 10);
}
