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
