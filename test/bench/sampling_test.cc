// Block sampling on kernels weft compiled: a sampled simulation counts exactly what the full
// simulation counts when every block does the same work. The graph has no data-dependent
// branches: blocks not simulated write nothing, so a later kernel reads other data than in a
// full run, and code whose path depends on values (libdevice's erf, exp…) would count
// differently there (see docs/performance.md).
#include <catch2/catch.hpp>

#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "sim/sim_device.h"
#include "compile.h"

using namespace weft;

namespace {

std::vector<LaunchCounters> simulate(const ir::Graph& g, fusion::Policy policy,
                                     uint64_t sampleBlocks) {
  CompileOptions o;
  o.policy = policy;
  o.cacheDir = "off";
  auto compiled = compile(g, o);
  sim::ExecOptions exec;
  exec.sampleBlocks = sampleBlocks;
  auto device = sim::makeSimDevice(o.device, exec);
  Executable exe(compiled, *device);
  exe.run(frontend::randomInputs(g, {}, 7));
  return exe.takeCounters();
}

} // namespace

TEST_CASE("sampled counters of compiled uniform kernels equal the full simulation",
          "[bench][sampling]") {
  // bias + ReLU, scaled, under `none`: elementwise kernels over [2048, 96] and a broadcast
  const std::string json = R"({"name": "relu", "inputs": [
      {"name": "x", "dtype": "f32", "shape": [2048, 96]}, {"name": "b", "dtype": "f32", "shape": [96]}],
    "ops": [{"name": "h", "op": "bias_add", "inputs": ["x", "b"]},
            {"name": "zero", "op": "constant", "dtype": "f32", "shape": [], "value": 0},
            {"name": "r", "op": "max", "inputs": ["h", "zero"]},
            {"name": "y", "op": "mul", "inputs": ["r", "h"]}],
    "outputs": ["y"]})";
  ir::Graph g = frontend::readGraphJson(json, "relu.json").graph;
  std::vector<LaunchCounters> full = simulate(g, fusion::Policy::None, 0);
  std::vector<LaunchCounters> sampled = simulate(g, fusion::Policy::None, 4);
  REQUIRE(full.size() == sampled.size());
  int extrapolated = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    INFO("kernel " << full[i].kernel << ": " << sampled[i].simulatedBlocks << " of "
                   << sampled[i].blocks << " blocks simulated");
    CHECK_FALSE(full[i].sampled());
    extrapolated += sampled[i].sampled();
    CHECK(sampled[i].blocks == full[i].blocks);
    CHECK(sampled[i].warpInstructions == full[i].warpInstructions);
    CHECK(sampled[i].threadInstructions == full[i].threadInstructions);
    CHECK(sampled[i].globalSectorsRead == full[i].globalSectorsRead);
    CHECK(sampled[i].globalSectorsWritten == full[i].globalSectorsWritten);
    CHECK(sampled[i].globalLoadRequests == full[i].globalLoadRequests);
    CHECK(sampled[i].globalStoreRequests == full[i].globalStoreRequests);
    CHECK(sampled[i].sharedLoads == full[i].sharedLoads);
    CHECK(sampled[i].blockBarriers == full[i].blockBarriers);
  }
  CHECK(extrapolated > 0); // the test is only meaningful when something was extrapolated
}

TEST_CASE("a kernel that hands off to its last block is simulated whole under sampling",
          "[bench][sampling]") {
  // The sum of a [256, 4096] f32 over everything: per-row sums, then their sum in the block
  // that counts out last (fusion::Barrier::LastBlock). Sampled, the blocks not simulated would
  // never count out: no block would go on, the output would be left unwritten and the counter
  // would carry into the next launch.
  const std::string json = R"({"name": "total", "inputs": [
      {"name": "x", "dtype": "f32", "shape": [256, 4096]}],
    "ops": [{"name": "t", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [0, 1]}],
    "outputs": ["t"]})";
  ir::Graph g = frontend::readGraphJson(json, "total.json").graph;
  std::vector<LaunchCounters> full = simulate(g, fusion::Policy::AStitch, 0);
  std::vector<LaunchCounters> sampled = simulate(g, fusion::Policy::AStitch, 4);
  REQUIRE(full.size() == 1);
  REQUIRE(sampled.size() == 1);
  CHECK(full[0].blocks > 5); // more blocks than the 4 samples and the last
  CHECK_FALSE(sampled[0].sampled());
  CHECK(sampled[0].warpInstructions == full[0].warpInstructions);
  CHECK(sampled[0].globalSectorsWritten == full[0].globalSectorsWritten);
  CHECK(sampled[0].atomics == full[0].atomics);
}
