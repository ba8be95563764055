// GEMM epilogues (issue 20, part 3): which consumers of a dot the astitch planner runs in its
// GEMM kernel, what each reads, and that xla and none keep every consumer in kernels.
#include <catch2/catch.hpp>

#include "fusion/epilogue_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "plan_queries.h"
#include "test_graphs.h"
#include "device_profiles.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;
using ir::DType;
using ir::OpKind;

namespace {

const LibraryCall& callOf(const FusionPlan& p) {
  for (const Step& s : p.steps)
    if (const auto* c = std::get_if<LibraryCall>(&s)) return *c;
  FAIL("no library call");
  throw 0;
}

using test::h100;

} // namespace

TEST_CASE("epilogue: bias through a broadcast, then GELU, all in the GEMM", "[planner][epilogue]") {
  ir::Graph g = dotEpilogueGraph(DType::f32, {}, 128, 256, 768, DotConsumers::BiasGelu);
  FusionPlan p = plan(g, h100(), Policy::AStitch);
  CHECK(p.steps.size() == 1);
  CHECK(p.kernelCount() == 0);
  const LibraryCall& call = callOf(p);
  CHECK(call.result() == id(g, "gelu"));
  // the bias broadcast runs in the epilogue; only the bias vector is read
  CHECK(std::count(call.epilogue.ops.begin(), call.epilogue.ops.end(), id(g, "bias_rows")) == 1);
  REQUIRE(call.epilogue.reads.size() == 1);
  CHECK(call.epilogue.reads[0].value == id(g, "bias"));
  CHECK(call.epilogue.reads[0].kind == EpilogueRead::Kind::Broadcast);
  CHECK(call.epilogue.savedBytes == 2 * 128 * 768 * 4);
  CHECK_THAT(printFusionPlan(p), Catch::Matchers::Contains("stores %gelu, reads %bias broadcast"));
}

TEST_CASE("epilogue: a residual of the result's shape is read per element", "[planner][epilogue]") {
  ir::Graph g = dotEpilogueGraph(DType::f32, {3}, 40, 24, 72, DotConsumers::Residual);
  FusionPlan p = plan(g, h100(), Policy::AStitch);
  const LibraryCall& call = callOf(p);
  CHECK(call.result() == id(g, "sum"));
  REQUIRE(call.epilogue.reads.size() == 1);
  CHECK(call.epilogue.reads[0].value == id(g, "residual"));
  CHECK(call.epilogue.reads[0].kind == EpilogueRead::Kind::Element);
}

TEST_CASE("epilogue: only where it cuts traffic", "[planner][epilogue]") {
  SECTION("a layer norm reads the biased result as it would read the dot's: nothing saved") {
    ir::Graph g = dotEpilogueGraph(DType::f32, {}, 64, 32, 96, DotConsumers::BiasLayerNorm);
    FusionPlan p = plan(g, h100(), Policy::AStitch);
    CHECK(callOf(p).epilogue.empty());
    CHECK(p.kernelCount() == 1);
  }
  SECTION("a kernel and a dot read the result: the dot's write and read for the result's read") {
    // h = x · w + bias, read by a second dot and by an exp (a kernel)
    ir::Graph g;
    auto x = g.parameter("x", {DType::f32, {64, 32}});
    auto w = g.parameter("w", {DType::f32, {32, 32}});
    auto bias = g.parameter("bias", {DType::f32, {32}});
    auto mm = g.dot(x, w, "mm");
    auto h = g.binary(OpKind::Add, mm, g.broadcastInDim(bias, {64, 32}, {1}), "h");
    g.setOutputs({g.dot(h, w, "mm2"), g.unary(OpKind::Exp, h, "e")});
    FusionPlan p = plan(g, h100(), Policy::AStitch);
    const LibraryCall& call = callOf(p);
    CHECK(call.result() == id(g, "h"));
    CHECK(call.epilogue.savedBytes == 64 * 32 * 4);
  }
}

TEST_CASE("epilogue: none where the dot's result must be in memory anyway",
          "[planner][epilogue]") {
  SECTION("the dot is a graph output") {
    ir::Graph g = dotEpilogueGraph(DType::f32, {}, 16, 16, 16, DotConsumers::Bias);
    g.setOutputs({id(g, "c"), id(g, "biased")});
    CHECK(callOf(plan(g, h100(), Policy::AStitch)).epilogue.empty());
  }
  SECTION("another reader of the result needs a reduce of it") {
    // out = m + bcast(rowsum(m)): the broadcast operand depends on the dot itself
    ir::Graph g;
    auto a = g.parameter("a", {DType::f32, {32, 32}});
    auto b = g.parameter("b", {DType::f32, {32, 32}});
    auto m = g.dot(a, b, "m");
    auto s = g.reduce(ir::ReduceKind::Sum, m, {1}, "s");
    g.addOutput(g.binary(OpKind::Add, m, g.broadcastInDim(s, {32, 32}, {0}), "out"));
    CHECK(callOf(plan(g, h100(), Policy::AStitch)).epilogue.empty());
  }
  SECTION("a consumer reads a value no step writes to memory") {
    // out = m + exp(x): exp(x) is in registers in its kernel; reading it would write it
    ir::Graph g;
    auto a = g.parameter("a", {DType::f32, {32, 32}});
    auto b = g.parameter("b", {DType::f32, {32, 32}});
    auto x = g.parameter("x", {DType::f32, {32, 32}});
    auto m = g.dot(a, b, "m");
    g.addOutput(g.binary(OpKind::Add, m, g.unary(OpKind::Exp, x), "out"));
    CHECK(callOf(plan(g, h100(), Policy::AStitch)).epilogue.empty());
  }
}

TEST_CASE("epilogue: xla and none keep the consumers in kernels", "[planner][epilogue]") {
  ir::Graph g = dotEpilogueGraph(DType::f32, {}, 64, 64, 64, DotConsumers::BiasGelu);
  for (Policy policy : {Policy::Xla, Policy::None}) {
    FusionPlan p = plan(g, h100(), policy);
    CHECK(callOf(p).epilogue.empty());
    CHECK(p.kernelCount() >= 1);
  }
}
