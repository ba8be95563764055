// The planner's last step: every emission decision per phase (slots, staging, tile slices,
// across-tiles partials, the staging arena and .maxnreg), in the plan and printed by it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "frontend/json_reader.h"
#include "fusion/launch_config.h"
#include "fusion/phase_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {

FusionPlan planExample(const std::string& file, int64_t b, const std::string& device,
                       Policy policy = Policy::AStitch) {
  auto parsed =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" + file + ".json");
  ir::Binding binding;
  for (const std::string& s : parsed.graph.symbols())
    binding[s] = b;
  return plan(ir::bindSymbols(parsed.graph, binding), *deviceSpecProfile(device), policy);
}

} // namespace

TEST_CASE("phases: every stage is in exactly one phase, split at the grid barriers",
          "[planner][phases]") {
  for (std::string file : {"astitch_fig7", "layer_norm", "softmax", "layer_norm_backward",
                           "row_reduce_64x30000", "column_reduce_bias_grad"})
    for (Policy policy : {Policy::None, Policy::Xla, Policy::AStitch}) {
      DYNAMIC_SECTION(file << " " << policyName(policy)) {
        FusionPlan p = planExample(file, 4096, "h100", policy);
        for (const KernelPlan* k : kernelsOf(p)) {
          size_t next = 0;
          for (const PhasePlan& phase : k->phases) {
            CHECK(phase.firstStage == next);
            REQUIRE(phase.stageCount > 0);
            // A phase starts at the kernel's start or at a grid barrier, and has none inside.
            CHECK((next == 0 || k->stages[next].barrierBefore == Barrier::Grid));
            for (size_t i = next + 1; i < next + phase.stageCount; ++i)
              CHECK(k->stages[i].barrierBefore != Barrier::Grid);
            CHECK(phase.stagingBytes <= k->stagingBytes);
            next += phase.stageCount;
          }
          CHECK(next == k->stages.size());
          // Static shared memory stays within 48 KB, dynamic within the device's limit.
          CHECK(k->stagingBytes + k->reduceScratchBytes <= 48 * 1024);
        }
      }
    }
}

TEST_CASE("phases: layer norm backward accumulates dgamma and dbeta in its row reduce's slots",
          "[planner][phases]") {
  FusionPlan p = planExample("layer_norm_backward", 128, "h100");
  const KernelPlan& k = onlyKernel(p);
  REQUIRE(k.launch.cooperative);
  REQUIRE(k.phases.size() >= 1);
  const PhasePlan& phase = k.phases.front();
  CHECK(phase.space.kind == TileSpace::Kind::Rows);
  REQUIRE(phase.slots);
  const SlotPlan& slots = *phase.slots;
  CHECK(names(p.graph, slots.across) == std::vector<std::string>{"dbeta", "dgamma"});
  CHECK(slots.reused.count(id(p.graph, "x")));
  CHECK(slots.reused.count(id(p.graph, "dy")));
  // The accumulators' registers are counted, within what the cooperative launch allows.
  int64_t accumulators = int64_t(slots.steps) * std::max(1, slots.mapping.vectorWidth) * 2;
  CHECK(slots.registers >= accumulators);
  CHECK(slots.registers <= k.launch.maxRegisters - kAssumedRegisters);
  // Their block combine comes first in the arena, the staged gamma after it.
  CHECK(slots.combineOffset == 0);
  CHECK(slots.combineOffsets == std::vector<int64_t>{0, slots.combineBytes / 2});
  REQUIRE(phase.staged.size() == 1);
  CHECK(nameOf(p.graph, phase.staged[0].input) == "gamma");
  CHECK(phase.stagedOffset >= slots.combineBytes);
  CHECK(phase.stagedOffset % 16 == 0);
  // A cooperative kernel keeps the bound that sized its grid.
  CHECK(k.registerLimit == k.launch.maxRegisters);
}

TEST_CASE("phases: softmax reads its mask row from a per-tile slice and keeps no .maxnreg",
          "[planner][phases]") {
  FusionPlan p = planExample("softmax", 7, "h100");
  const KernelPlan& k = onlyKernel(p);
  REQUIRE(k.phases.size() == 1);
  const PhasePlan& phase = k.phases.front();
  REQUIRE(phase.slots);
  CHECK(phase.slots->reused.count(id(p.graph, "scores")));
  REQUIRE(phase.slices.size() == 1);
  const TileSlice& slice = phase.slices.front();
  CHECK(nameOf(p.graph, slice.input) == "mask");
  CHECK(ir::shapeStr(slice.shape) == "[128]");
  CHECK(k.stagingBytes == 512); // 128 f32 values
  // Non-cooperative and keeping values in registers: every register its block allows.
  CHECK_FALSE(k.launch.cooperative);
  CHECK(k.registerLimit == 0);
}

TEST_CASE("phases: kernels whose threads load few bytes per slot step fill the SMs",
          "[planner][phases]") {
  // Softmax over rows of 128 f32 (one slot step per thread) and RMSNorm over bf16 rows (8-byte
  // vectors) take as many blocks as the compiled kernel keeps per SM; layer norm's rows of 768
  // f32 (six 16-byte steps per thread) keep the planned grid, and so does a cooperative kernel.
  auto workload = [](const std::string& name) {
    auto parsed = frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/bench/workloads/" +
                                          name + ".json");
    return plan(parsed.graph, *deviceSpecProfile("h100"), Policy::AStitch);
  };
  FusionPlan softmax = workload("softmax");
  CHECK(onlyKernel(softmax).phases.front().slots->steps == 1);
  CHECK(onlyKernel(softmax).launch.fillSMs);
  CHECK(contains(printFusionPlan(softmax),
                 "max blocks 528 (more where the compiled kernel fits more per SM)"));
  CHECK(onlyKernel(workload("rms_norm_bf16")).launch.fillSMs);
  FusionPlan ln = workload("layer_norm_f32");
  CHECK(onlyKernel(ln).phases.front().slots->steps > 1);
  CHECK_FALSE(onlyKernel(ln).launch.fillSMs);
  CHECK_FALSE(contains(printFusionPlan(ln), "more where the compiled kernel"));
  for (const KernelPlan* k : kernelsOf(workload("log_softmax_nll")))
    if (k->launch.cooperative) CHECK_FALSE(k->launch.fillSMs);
}

TEST_CASE("phases: a plan without register slots keeps the launch's register bound",
          "[planner][phases]") {
  FusionPlan p = planExample("row_reduce_750000x32", 1, "h100", Policy::None);
  for (const KernelPlan* k : kernelsOf(p)) {
    for (const PhasePlan& phase : k->phases)
      CHECK_FALSE(phase.slots);
    CHECK(k->registerLimit == k->launch.maxRegisters);
  }
}

TEST_CASE("phases: weft plan prints the phase plan", "[planner][phases][printer]") {
  std::string text = printFusionPlan(planExample("layer_norm_backward", 128, "h100"));
  CHECK(contains(text, "phase 0: stages 0-3, tiles over 128 rows"));
  CHECK(contains(text, "slot accumulators: %dbeta, %dgamma, combined in shared memory at 0"));
  // sm_90: gamma is staged once per thread-block cluster (fusion/cluster_plan.h); sm_80 has none
  CHECK(contains(text, "staged in shared memory once per cluster"));
  CHECK(contains(printFusionPlan(planExample("layer_norm_backward", 128, "a100")),
                 "staged in shared memory once per block"));
  CHECK(contains(text, "emission: reduce scratch"));
  std::string softmax = printFusionPlan(planExample("softmax", 7, "h100"));
  CHECK(contains(softmax, "tile slices in shared memory where the tile's differ from the "
                          "previous tile's (contiguous tiles per block), at 0: %mask [128] +0"));
  CHECK(contains(softmax, ".maxnreg none"));
}

TEST_CASE("phases: a warp barrier widens back where a stage's values are not in the row's lanes",
          "[planner][phases]") {
  // Layer norm's mean is one per row. Unless it is warp-local, it is computed with the tile's
  // rows spread over the block's threads, and a warp barrier before the stage that computes
  // it would let a thread read another warp's sum before it is written. With mean's warpLocal
  // cleared by hand, the phase planner widens the phase's barriers back and clears the rest.
  FusionPlan p = planExample("layer_norm", 64, "h100");
  auto& k = std::get<KernelPlan>(p.steps.front());
  REQUIRE(k.stages.size() == 5);
  REQUIRE(k.stages[1].barrierBefore == Barrier::Warp);
  ir::NodeId sum = k.stages[0].materialized.front(), mean = k.stages[1].materialized.front();
  REQUIRE(k.placement.at(mean).warpLocal);
  k.placement.at(mean).warpLocal = false;
  planPhases(p);
  for (const Stage& st : k.stages)
    CHECK(st.barrierBefore != Barrier::Warp);
  CHECK_FALSE(k.placement.at(sum).warpLocal);
  // Softmax's stages are all in the row slots: its warp barriers stay.
  FusionPlan s = planExample("softmax", 2, "h100");
  const KernelPlan& ks = std::get<KernelPlan>(s.steps.front());
  REQUIRE(ks.phases.front().slots);
  CHECK(ks.stages[1].barrierBefore == Barrier::Warp);
  CHECK(ks.stages[2].barrierBefore == Barrier::Warp);
  CHECK(contains(printFusionPlan(s), "barrier before warp"));
}

TEST_CASE("phases: a split reduce that shares its phase is refused by name",
          "[planner][phases][errors]") {
  FusionPlan p = planExample("row_reduce_64x30000", 1, "h100");
  auto& k = std::get<KernelPlan>(p.steps.front());
  auto& m = std::get<RowReduceMapping>(k.groups.front().mapping);
  if (m.splitFactor < 2) m.splitFactor = 2;
  k.stages.push_back(k.stages.front()); // a second stage in the split reduce's phase
  k.stages.back().barrierBefore = Barrier::Block;
  CHECK_THROWS_WITH(planPhases(p), Catch::Matchers::Contains("a split reduce must be the only "
                                                             "stage of its phase"));
}
