// The last phase handed to the last block (fusion/last_block_handoff.h): where a grid barrier
// before one tile becomes Barrier::LastBlock, and where it stays a grid barrier.
#include <catch2/catch.hpp>

#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "fusion/plan_explainer.h"
#include "fusion/plan_printer.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {

FusionPlan planJson(const std::string& json, const std::string& device = "h100") {
  return plan(frontend::readGraphJson(json, "test.json").graph, *deviceSpecProfile(device),
              Policy::AStitch);
}

int stagesBehind(const KernelPlan& k, Barrier b) {
  int n = 0;
  for (const Stage& s : k.stages)
    n += s.barrierBefore == b;
  return n;
}

} // namespace

TEST_CASE("handoff: log-softmax + NLL's loss runs in the last block, without a grid barrier",
          "[planner][handoff]") {
  auto parsed = frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) +
                                        "/bench/workloads/log_softmax_nll.json");
  for (std::string device : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(device) {
      FusionPlan p = plan(parsed.graph, *deviceSpecProfile(device), Policy::AStitch);
      const KernelPlan& k = onlyKernel(p);
      CHECK(stagesBehind(k, Barrier::Grid) == 0);
      CHECK(stagesBehind(k, Barrier::LastBlock) == 1);
      CHECK(k.handsOffToLastBlock());
      CHECK(k.needsBarrierState());
      CHECK_FALSE(k.launch.cooperative);
      REQUIRE(k.phases.size() == 2);
      const Stage& opening = k.stages.at(k.phases[1].firstStage);
      CHECK(opening.barrierBefore == Barrier::LastBlock);
      CHECK(contains(printFusionPlan(p), "barrier before last block"));
      CHECK(contains(explainPlan(p), "its last phase run by the block that finishes the others "
                                     "last (no grid barrier before it)"));
    }
  }
}

TEST_CASE("handoff: a sum over everything hands its sum of row sums to the last block",
          "[planner][handoff]") {
  FusionPlan p = planJson(R"({"name": "total", "inputs": [
      {"name": "x", "dtype": "f32", "shape": [4096, 1024]}],
    "ops": [{"name": "t", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [0, 1]}],
    "outputs": ["t"]})");
  const KernelPlan& k = onlyKernel(p);
  CHECK(stagesBehind(k, Barrier::LastBlock) == 1);
  CHECK_FALSE(k.launch.cooperative);
}

TEST_CASE("handoff: grid barriers before phases of many tiles, and split reduces, stay",
          "[planner][handoff]") {
  // Figure 7: its phases after the barriers run over every row.
  FusionPlan fig7 = plan(astitchFig7(), *deviceSpecProfile("h100"), Policy::AStitch);
  for (const KernelPlan* k : kernelsOf(fig7)) {
    CHECK(stagesBehind(*k, Barrier::LastBlock) == 0);
    if (stagesBehind(*k, Barrier::Grid) > 0) CHECK(k->launch.cooperative);
  }
  // A softmax whose rows are split across blocks: the split reduce combines its partials behind
  // a grid barrier of its own, and its consumers read every row.
  FusionPlan split = plan(softmax(4, 200000), *deviceSpecProfile("v100"), Policy::AStitch);
  for (const KernelPlan* k : kernelsOf(split))
    CHECK(stagesBehind(*k, Barrier::LastBlock) == 0);
  // A column sum then its use at every element: the last phase runs over all tiles.
  FusionPlan centred = planJson(R"({"name": "centred", "inputs": [
      {"name": "x", "dtype": "f32", "shape": [8192, 256]}],
    "ops": [{"name": "s", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [0]},
            {"name": "sb", "op": "broadcast_in_dim", "inputs": ["s"], "shape": [8192, 256], "dims": [1]},
            {"name": "y", "op": "sub", "inputs": ["x", "sb"]}],
    "outputs": ["y"]})");
  for (const KernelPlan* k : kernelsOf(centred))
    CHECK(stagesBehind(*k, Barrier::LastBlock) == 0);
}
