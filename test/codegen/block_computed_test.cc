// Small values that every block computes for itself (fusion/graph_queries.h, blockComputable;
// StagedInput::computed): an expensive op over a few thousand elements of the kernel's inputs,
// repeated along the rows, is computed into shared memory once per block by each phase that
// reads it, not stored by a stage of its own behind a grid barrier. Each graph below takes a
// different phase kind or cone through it, runs on the simulator and matches the interpreter.
#include <catch2/catch.hpp>

#include "codegen/compile.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "device_profiles.h"
#include "sim_runner.h"
#include "two_phase_graph.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::bytesOf;
using test::h100;
using test::onlyKernel;

/// The plan's staged values that its phases compute, by name, over all phases (a value staged
/// by two phases counts twice).
std::vector<std::string> computedStaged(const fusion::FusionPlan& plan) {
  std::vector<std::string> names;
  for (const fusion::PhasePlan& p : onlyKernel(plan).phases)
    for (const fusion::StagedInput& in : p.staged)
      if (in.computed) names.push_back(plan.graph.node(in.input).name);
  return names;
}

} // namespace

TEST_CASE("a flat elementwise kernel computes its pow row vector once per block",
          "[codegen][traffic][sim]") {
  // y = x * (w / 3)^2 over [2048, 1024]: each block of the one-wave grid takes many tiles
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {2048, 1024}});
  ir::NodeId w = g.parameter("w", {DType::f32, {1024}});
  ir::NodeId third = g.binary(OpKind::Div, w, g.constant(DType::f32, {1024}, {3.0}));
  ir::NodeId p = g.binary(OpKind::Pow, third, g.constant(DType::f32, {1024}, {2.0}), "p");
  g.addOutput(g.binary(OpKind::Mul, x, g.broadcastInDim(p, {2048, 1024}, {1}), "y"));
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  CHECK_FALSE(k.launch.cooperative); // no stage of p's own, so no grid barrier
  CHECK(computedStaged(plan) == std::vector<std::string>{"p"});
  LaunchCounters c = test::checkOneKernelOnSim(plan, 1e-5);
  CHECK(c.gridBarriers == 0);
  // x read and y written once; w read by each block that computes p
  CHECK(c.globalSectorsWritten * 32 == uint64_t(bytesOf(g, g.outputs()[0])));
  CHECK(c.globalSectorsRead * 32 == uint64_t(bytesOf(g, x) + int64_t(c.blocks) * bytesOf(g, w)));
}

TEST_CASE("an f16 RMSNorm computes its exp(log weight) into shared memory, rounded to f16",
          "[codegen][sim]") {
  // rows in slots; the weight exp(lw) is f16 like the value it replaces, so the shared array
  // holds what a stored value would
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f16, {512, 1024}});
  ir::NodeId lw = g.parameter("lw", {DType::f16, {1024}});
  ir::NodeId w = g.unary(OpKind::Exp, lw, "w");
  ir::NodeId x32 = g.convert(x, DType::f32);
  ir::NodeId ms = g.reduce(ir::ReduceKind::Sum, g.binary(OpKind::Mul, x32, x32), {1}, "ms");
  ir::NodeId r = g.unary(OpKind::Rsqrt,
                         g.binary(OpKind::Add,
                                  g.binary(OpKind::Div, ms, g.constant(DType::f32, {512}, {1024.0})),
                                  g.constant(DType::f32, {512}, {1e-6})));
  ir::NodeId normed = g.binary(OpKind::Mul, x32, g.broadcastInDim(r, {512, 1024}, {0}));
  ir::NodeId scaled = g.binary(OpKind::Mul, g.convert(normed, DType::f16),
                               g.broadcastInDim(w, {512, 1024}, {1}), "y");
  g.addOutput(scaled);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  CHECK(computedStaged(plan) == std::vector<std::string>{"w"});
  test::checkOneKernelOnSim(plan, 2e-3);
}

TEST_CASE("a cone through a transpose, a slice and a scalar is computed per block",
          "[codegen][sim]") {
  // v = sin(transpose(m)[0:16, :] flattened) * exp(s): layout ops and a broadcast scalar in the
  // cone, and the scalar repeated everywhere
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {4096, 512}});
  ir::NodeId m = g.parameter("m", {DType::f32, {32, 24}});
  ir::NodeId s = g.parameter("s", {DType::f32, {}});
  ir::NodeId t = g.transpose(m, {1, 0});                    // [24, 32]
  ir::NodeId sl = g.slice(t, {0, 0}, {16, 32}, {1, 1});      // [16, 32]
  ir::NodeId flat = g.reshape(sl, {512});
  ir::NodeId es = g.unary(OpKind::Exp, s, "es");
  ir::NodeId v = g.binary(OpKind::Mul, g.unary(OpKind::Sin, flat),
                          g.broadcastInDim(es, {512}, {}), "v");
  ir::NodeId y = g.binary(OpKind::Add, x, g.broadcastInDim(v, {4096, 512}, {1}), "y");
  g.addOutput(g.reduce(ir::ReduceKind::Max, y, {1}, "rowmax"));
  g.addOutput(y);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  CHECK_FALSE(onlyKernel(plan).launch.cooperative);
  std::vector<std::string> computed = computedStaged(plan);
  CHECK(std::count(computed.begin(), computed.end(), "v") == 1);
  test::checkOneKernelOnSim(plan, 1e-5);
}

TEST_CASE("a computed value that reads another computed one at other indices waits for it",
          "[codegen][sim]") {
  // v2 = sin(v1 rotated by one), v1 = exp(w): v2's cone reads v1's shared array at elements
  // other threads wrote, so a block barrier comes between them. Phase 0 stages u = tanh(w2) in
  // the same shared memory first: without the barrier v2 read u's stale values (a silent
  // mismatch), and with fresh memory the simulator reports the uninitialised read.
  for (bool stale : {false, true}) {
    DYNAMIC_SECTION((stale ? "after an earlier phase's staging" : "in fresh shared memory")) {
      const int64_t c = stale ? 64 : 33;
      ir::Graph g;
      ir::NodeId x = g.parameter("x", {DType::f32, {1000, c}});
      ir::NodeId w = g.parameter("w", {DType::f32, {c}});
      ir::NodeId v1 = g.unary(OpKind::Exp, w, "v1");
      ir::NodeId rot = g.concatenate(
          {g.slice(v1, {1}, {c}, {1}), g.slice(v1, {0}, {1}, {1})}, 0);
      ir::NodeId v2 = g.unary(OpKind::Sin, rot, "v2");
      ir::NodeId y = g.binary(OpKind::Mul, x, g.broadcastInDim(v1, {1000, c}, {1}));
      if (stale) {
        ir::NodeId w2 = g.parameter("w2", {DType::f32, {c}});
        ir::NodeId u = g.unary(OpKind::Tanh, w2, "u");
        ir::NodeId cr = g.reduce(ir::ReduceKind::Sum,
                                 g.binary(OpKind::Mul, x, g.broadcastInDim(u, {1000, c}, {1})),
                                 {0}, "cr");
        y = g.binary(OpKind::Mul, y, g.broadcastInDim(cr, {1000, c}, {1}));
      }
      ir::NodeId y2 = g.binary(OpKind::Add, y, g.broadcastInDim(v2, {1000, c}, {1}));
      g.addOutput(g.reduce(ir::ReduceKind::Sum, y2, {1}, "r"));
      fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      std::vector<std::string> computed = computedStaged(plan);
      CHECK(std::count(computed.begin(), computed.end(), "v1") >= 1);
      CHECK(std::count(computed.begin(), computed.end(), "v2") >= 1);
      test::checkOneKernelOnSim(plan, 1e-4);
    }
  }
}

TEST_CASE("a computed value whose cone reads an input kept resident per tile reads it from "
          "global memory",
          "[codegen][sim]") {
  // x [7, 33] is resident in shared memory across the grid barrier, one tile per block; v =
  // exp(row 0 of x + x) is computed per block before any tile, where no tile's slot exists
  // (compiling it crashed).
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {7, 33}});
  ir::NodeId x2 = g.binary(OpKind::Add, x, x, "x2");
  ir::NodeId v = g.unary(OpKind::Exp, g.reshape(g.slice(x2, {0, 0}, {1, 33}, {1, 1}), {33}), "v");
  ir::NodeId y = g.binary(OpKind::Mul, x, g.broadcastInDim(v, {7, 33}, {1}));
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, y, {1}, "r"), x2});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  CHECK(computedStaged(plan) == std::vector<std::string>{"v"});
  test::checkOneKernelOnSim(plan, 1e-5);
}
