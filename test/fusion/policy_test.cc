#include <catch2/catch.hpp>

#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {
DeviceSpec a100() {
  return *deviceSpecProfile("a100");
}

std::vector<std::string> kernelRoots(const FusionPlan& p) {
  std::vector<std::string> out;
  for (const KernelPlan* k : kernelsOf(p))
    out.push_back(p.graph.node(k->groups.front().dominant).name);
  return out;
}
} // namespace

TEST_CASE(
    "xla policy: Figure 7 becomes four kernels ending with reduce.1, power.1, reduce.2, multiply.1",
    "[planner][xla][fig7]") {
  FusionPlan p = plan(astitchFig7(), a100(), Policy::Xla);
  CHECK(p.kernelCount() == 4);
  CHECK(kernelRoots(p) ==
        std::vector<std::string>{"reduce.1", "power.1", "reduce.2", "multiply.1"});
  // parameter.2 is loaded by two kernels (reduce.1's input fusion and power.1's)
  int readers = 0;
  for (const KernelPlan* k : kernelsOf(p))
    readers += std::count(k->inputs.begin(), k->inputs.end(), id(p.graph, "parameter.2"));
  CHECK(readers == 2);
  // broadcast.2 is recomputed in two kernels
  int computing = 0;
  for (const KernelPlan* k : kernelsOf(p))
    computing += std::count(k->ops.begin(), k->ops.end(), id(p.graph, "broadcast.2"));
  CHECK(computing == 2);
  for (const KernelPlan* k : kernelsOf(p)) {
    CHECK(k->groups.size() == 1);
    CHECK(k->stages.size() == 1);
    CHECK_FALSE(hasGrid(*k));
  }
}

TEST_CASE("xla policy: a reduce never absorbs its consumers, an expensive op never feeds a "
          "broadcast in-kernel",
          "[planner][xla]") {
  struct Case {
    std::string name;
    ir::Graph graph;
    int xlaKernels;
  };
  std::vector<Case> cases;
  cases.push_back({"layer norm", layerNorm(), 5});                  // sum, mean, sqsum, rstd, out
  cases.push_back({"softmax", softmax(), 3});                       // max, sum, out
  cases.push_back({"residual layer norm", residualLayerNorm(), 6}); // + residual_sum
  cases.push_back({"rms norm", rmsNorm(), 3});                      // sqsum, inv_rms, out
  cases.push_back({"layer norm backward", layerNormBackward(), 6}); // 4 reduces, scale, dx
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      FusionPlan xla = plan(c.graph, a100(), Policy::Xla);
      FusionPlan astitch = plan(c.graph, a100(), Policy::AStitch);
      CHECK(xla.kernelCount() == c.xlaKernels);
      CHECK(astitch.kernelCount() == 1);
      CHECK(xla.kernelCount() > astitch.kernelCount());
      for (const KernelPlan* k : kernelsOf(xla)) {
        // at most one reduce per kernel, and it is the root
        int reduces = 0;
        for (ir::NodeId op : k->ops)
          reduces += xla.graph.node(op).kind == ir::OpKind::Reduce;
        CHECK(reduces <= 1);
        if (reduces == 1) CHECK(xla.graph.node(k->groups[0].dominant).kind == ir::OpKind::Reduce);
      }
    }
  }
}

TEST_CASE("xla and astitch agree where there is nothing to stitch", "[planner][xla]") {
  for (Policy policy : {Policy::Xla, Policy::AStitch}) {
    FusionPlan p = plan(geluBias(), a100(), policy);
    CHECK(p.kernelCount() == 1);
    FusionPlan c = plan(columnReduce(), a100(), policy);
    CHECK(c.kernelCount() == 1);
  }
}

TEST_CASE("plans around a dot: library call between two stitched kernels, buffers for what crosses",
          "[planner][policy]") {
  // xla keeps the dot's consumers in a kernel of their own (astitch fuses them into the GEMM's
  // epilogue: next test); its last three steps are the layer norm's last kernel, dot, act
  FusionPlan p = plan(layerNormDotGelu(), a100(), Policy::Xla);
  REQUIRE(p.steps.size() >= 3);
  const size_t s = p.steps.size() - 3;
  CHECK(std::holds_alternative<KernelPlan>(p.steps[s]));
  REQUIRE(std::holds_alternative<LibraryCall>(p.steps[s + 1]));
  CHECK(std::get<LibraryCall>(p.steps[s + 1]).op == id(p.graph, "matmul"));
  CHECK(std::get<LibraryCall>(p.steps[s + 1]).epilogue.empty());
  CHECK(std::holds_alternative<KernelPlan>(p.steps[s + 2]));
  const KernelPlan& first = std::get<KernelPlan>(p.steps[s]);
  CHECK(names(p.graph, first.outputs) == std::vector<std::string>{"out"});
  int outBuf = p.bufferOfValue[static_cast<size_t>(id(p.graph, "out"))];
  REQUIRE(outBuf >= 0);
  CHECK(p.buffers[static_cast<size_t>(outBuf)].kind == Buffer::Kind::Intermediate);
  CHECK(first.placement.at(id(p.graph, "out")).buffer == outBuf);
  int mmBuf = p.bufferOfValue[static_cast<size_t>(id(p.graph, "matmul"))];
  REQUIRE(mmBuf >= 0);
  const KernelPlan& second = std::get<KernelPlan>(p.steps[s + 2]);
  CHECK(second.placement.at(id(p.graph, "matmul")).storage == Storage::Input);
  CHECK(second.placement.at(id(p.graph, "matmul")).buffer == mmBuf);
  int act = p.bufferOfValue[static_cast<size_t>(id(p.graph, "act"))];
  CHECK(p.buffers[static_cast<size_t>(act)].kind == Buffer::Kind::Output);
  // every Global placement has a Scratch buffer of its own
  for (const KernelPlan* k : kernelsOf(p))
    for (auto& [v, pl] : k->placement)
      if (pl.storage == Storage::Global)
        CHECK(p.buffers[static_cast<size_t>(pl.buffer)].kind == Buffer::Kind::Scratch);
}

TEST_CASE("astitch runs a dot's elementwise consumers in the GEMM's epilogue",
          "[planner][policy][epilogue]") {
  FusionPlan p = plan(layerNormDotGelu(), a100(), Policy::AStitch);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.kernelCount() == 1);
  REQUIRE(std::holds_alternative<LibraryCall>(p.steps[1]));
  const LibraryCall& call = std::get<LibraryCall>(p.steps[1]);
  CHECK(call.op == id(p.graph, "matmul"));
  CHECK(names(p.graph, call.epilogue.ops) == std::vector<std::string>{"tanh", "act"});
  CHECK(call.result() == id(p.graph, "act"));
  CHECK(call.epilogue.reads.empty());
  CHECK(call.epilogue.savedBytes == 2 * 1024 * 768 * 4);
  // the dot's own result is in no buffer: it is neither written nor read back
  CHECK(p.bufferOfValue[static_cast<size_t>(id(p.graph, "matmul"))] < 0);
  int act = p.bufferOfValue[static_cast<size_t>(id(p.graph, "act"))];
  REQUIRE(act >= 0);
  CHECK(p.buffers[static_cast<size_t>(act)].kind == Buffer::Kind::Output);
  CHECK_THAT(printFusionPlan(p),
             Catch::Matchers::Contains("epilogue: %tanh, %act per result element, stores %act, "
                                       "reads nothing; saves 6291456 B of passes over the "
                                       "dot's result"));
  CHECK_THAT(fusionPlanDot(p), Catch::Matchers::Contains("+ epilogue of 2 op(s), stores act"));
}

TEST_CASE(
    "example graphs: one kernel each under astitch, xla splits wherever a reduce has consumers",
    "[planner][policy][examples]") {
  struct Example {
    std::string file;
    bool reduceWithConsumers;
  };
  for (Example e :
       {Example{"astitch_fig7", true}, Example{"layer_norm", true}, Example{"softmax", true},
        Example{"residual_add_layer_norm", true}, Example{"rms_norm", true},
        Example{"layer_norm_backward", true}, Example{"gelu_bias", false},
        Example{"column_reduce_bias_grad", false}, Example{"row_reduce_64x30000", false},
        Example{"row_reduce_750000x32", false}}) {
    DYNAMIC_SECTION(e.file) {
      auto parsed = frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" +
                                            e.file + ".json");
      ir::Binding binding;
      for (const std::string& s : parsed.graph.symbols())
        binding[s] = 4096;
      ir::Graph g = ir::bindSymbols(parsed.graph, binding);
      for (std::string dev : {"v100", "a100", "h100"}) {
        FusionPlan astitch = plan(g, *deviceSpecProfile(dev), Policy::AStitch);
        FusionPlan xla = plan(g, *deviceSpecProfile(dev), Policy::Xla);
        CHECK(astitch.kernelCount() == 1);
        if (e.reduceWithConsumers)
          CHECK(xla.kernelCount() > 1);
        else
          CHECK(xla.kernelCount() == 1);
      }
    }
  }
}
