// weft plan --explain and weft compile --emit map: why each op is where it is, why values cross
// kernels, and a kernel → ops map that accounts for every op exactly once.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "fusion/plan_explainer.h"
#include "test_graphs.h"
#include "device_profiles.h"

using namespace weft;
using namespace weft::fusion;
using Catch::Matchers::Contains;
using ir::DType;

namespace {

using test::h100;

FusionPlan planExample(const std::string& file, Policy policy) {
  auto parsed =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" + file + ".json");
  ir::Binding binding;
  for (const std::string& s : parsed.graph.symbols())
    binding[s] = 256;
  return plan(ir::bindSymbols(parsed.graph, binding), h100(), policy);
}

/// y = exp(x) @ w + exp(x)^T: the add needs exp(x) and the dot, the dot needs exp(x). One kernel
/// holding exp and the add would both feed the dot and wait for it.
ir::Graph dotBetween() {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {16, 16}});
  auto w = g.parameter("w", {DType::f32, {16, 16}});
  auto e = g.unary(ir::OpKind::Exp, x, "e");
  auto d = g.dot(e, w, "mm");
  // y reads s = e^T, which only a kernel computes: y cannot run in mm's epilogue (reading s
  // there would write it), and no kernel can hold e, s and y (e → mm → y). A transpose, so
  // that y's kernel does not recompute s (scope_recompute.h: reading e costs what s does).
  g.setOutputs({g.binary(ir::OpKind::Add, d, g.transpose(e, {1, 0}, "s"), "y")});
  return g;
}

/// Each op of the map's steps → how many steps own it.
std::map<std::string, int> owners(const std::string& mapJson) {
  auto j = nlohmann::json::parse(mapJson);
  std::map<std::string, int> count;
  for (const auto& step : j.at("steps"))
    for (const auto& op : step.at("ops"))
      ++count[op.get<std::string>()];
  return count;
}

} // namespace

TEST_CASE("explain: every op of a stitched kernel says its group, role and storage",
          "[planner][explain]") {
  FusionPlan p = plan(fusion::testing::astitchFig7(), h100(), Policy::AStitch);
  std::string text = explainPlan(p);
  for (const ir::Node& n : p.graph.nodes())
    if (n.kind != ir::OpKind::Parameter) CHECK_THAT(text, Contains("%" + n.name + " ("));
  CHECK_THAT(text, Contains("%reduce.1 (reduce): the dominant"));
  CHECK_THAT(text, Contains("%power.1 (pow): scheduled by the dominant"));
  CHECK_THAT(text, Contains("shared memory, computed by each block: a small value computed from "
                            "the kernel's inputs alone"));
  CHECK_THAT(text, Contains("global scratch: combined from per-block partials behind a grid "
                            "barrier"));
  // over 8,192 columns power.1 is the paper's sub-dominant, stored behind a grid barrier
  std::string wide = explainPlan(plan(fusion::testing::astitchFig7(64, 8192), h100(),
                                      Policy::AStitch));
  CHECK_THAT(wide, Contains("%power.1 (pow): a sub-dominant"));
  CHECK_THAT(wide, Contains("global scratch: read in a later phase, behind a grid barrier"));
  CHECK_THAT(text, Contains("boundaries (values read from memory across steps): none"));
}

TEST_CASE("explain: a cooperative kernel on sm_90 says it runs in thread-block clusters",
          "[planner][explain]") {
  FusionPlan p = planExample("layer_norm_backward", Policy::AStitch);
  const auto& k = std::get<KernelPlan>(p.steps.at(0));
  REQUIRE(k.launch.clusterSize > 1);
  CHECK_THAT(explainPlan(p),
             Contains(fmt::format("in thread-block clusters of {} blocks (sm_90)",
                                  k.launch.clusterSize)));
  FusionPlan a100 = plan(p.graph, *deviceSpecProfile("a100"), Policy::AStitch);
  CHECK_THAT(explainPlan(a100), !Contains("thread-block clusters"));
}

TEST_CASE("explain: xla's kernel boundaries name the fusion rule that made them",
          "[planner][explain]") {
  std::string text = explainPlan(plan(fusion::testing::astitchFig7(), h100(), Policy::Xla));
  CHECK_THAT(text, Contains("%reduce.1 from step 0") &&
                       Contains("xla does not fuse a reduce into its consumers"));
  CHECK_THAT(text, Contains("%power.1 from step 1") &&
                       Contains("xla does not fuse an expensive op into a broadcast of it"));
}

TEST_CASE("explain: astitch separates kernels only where a library call would close a cycle",
          "[planner][explain]") {
  FusionPlan p = plan(dotBetween(), h100(), Policy::AStitch);
  std::string text = explainPlan(p);
  CHECK_THAT(text, Contains("library call %mm (dot): compute-intensive"));
  CHECK_THAT(text, Contains("read by a dot, a library call"));
  CHECK_THAT(text, Contains("a dot is compute-intensive: a library call, never stitched"));
  // s is written by e's kernel for y's kernel: that crossing is the cycle.
  CHECK_THAT(text, Contains("%s from step 0") && Contains("to step 2") &&
                       Contains("one kernel would both feed and wait for %mm (dot)"));
}

TEST_CASE("explain: a value a gather reads crosses kernels because a gather reads it",
          "[planner][explain][gather]") {
  // p = exp(x) gathered at run-time columns, and its row sum read beside the gather.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64, 50}});
  auto col = g.parameter("col", {DType::i32, {64, 2}});
  auto p = g.unary(ir::OpKind::Exp, x, "p");
  auto s = g.reduce(ir::ReduceKind::Sum, p, {1}, "s");
  auto picked = g.gather(p, {col}, {1}, {0}, "picked");
  g.addOutput(g.binary(ir::OpKind::Div, picked, g.broadcastInDim(s, {64, 2}, {0}), "y"));
  std::string text = explainPlan(plan(g, h100(), Policy::AStitch));
  CHECK_THAT(text, Contains("%p from step 0") &&
                       Contains("a gather reads it at run-time positions, which only memory serves"));
  CHECK_THAT(text, Contains("the stitch scopes part where a gather reads %p at run-time positions"));
  CHECK_THAT(explainPlan(plan(g, h100(), Policy::Xla)),
             Contains("a gather reads it at run-time positions, which only memory serves"));
}

TEST_CASE("map: every op but the parameters is owned by exactly one step, under every policy",
          "[planner][explain]") {
  std::vector<FusionPlan> plans;
  for (Policy policy : {Policy::None, Policy::Xla, Policy::AStitch}) {
    plans.push_back(plan(dotBetween(), h100(), policy));
    for (std::string file : {"astitch_fig7", "softmax", "layer_norm_backward", "gelu_bias"})
      plans.push_back(planExample(file, policy));
  }
  for (const FusionPlan& p : plans) {
    std::map<std::string, int> count = owners(kernelMapJson(p));
    size_t ops = 0;
    for (const ir::Node& n : p.graph.nodes()) {
      if (n.kind == ir::OpKind::Parameter) continue;
      ++ops;
      CHECK(count[n.name] == 1);
    }
    CHECK(count.size() == ops); // nothing else (parameters, unknown names) is listed as owned
  }
}

TEST_CASE("map: xla's recomputed ops are listed where they are recomputed", "[planner][explain]") {
  auto j = nlohmann::json::parse(
      kernelMapJson(plan(fusion::testing::astitchFig7(), h100(), Policy::Xla)));
  int recomputed = 0;
  for (const auto& step : j.at("steps"))
    if (step.contains("recomputed")) recomputed += int(step.at("recomputed").size());
  CHECK(recomputed > 0); // broadcasts and sources fused into more than one root's kernel
}
