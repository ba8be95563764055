// The planner's first step (fusion/reduction_split.h): a reduction over a row and more becomes
// per-row partials read off the row loop, then a reduction of the rows — where, and where not.
#include <catch2/catch.hpp>

#include <cmath>

#include "fusion/plan.h"
#include "fusion/reduction_split.h"
#include "ir/interpreter.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using ir::DType;
using ir::OpKind;
using ir::ReduceKind;

namespace {

/// softmax(x) * dy summed over everything (a training step's scalar loss), as `dtype`.
ir::Graph softmaxLoss(ir::Shape shape, DType dtype = DType::f32) {
  ir::Graph g;
  auto x = g.parameter("x", {dtype, shape});
  auto dy = g.parameter("dy", {dtype, shape});
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < last; ++d)
    kept.push_back(d);
  auto max = g.reduce(ReduceKind::Max, x, {last}, "max");
  auto e = g.unary(OpKind::Exp, g.binary(OpKind::Sub, x, g.broadcastInDim(max, shape, kept)), "e");
  auto sum = g.reduce(ReduceKind::Sum, e, {last}, "sum");
  auto y = g.binary(OpKind::Div, e, g.broadcastInDim(sum, shape, kept), "y");
  std::vector<int64_t> all = kept;
  all.push_back(last);
  auto loss = g.reduce(ReduceKind::Sum, g.binary(OpKind::Mul, y, dy), all, "loss");
  g.setOutputs({loss});
  return g;
}

std::vector<int64_t> axesOf(const ir::Graph& g, const std::string& name) {
  return g.node(*g.find(name)).attr<ir::ReduceAttrs>().axes;
}

} // namespace

TEST_CASE("reduction split: a loss over a softmax's rows is summed per row in the row loop",
          "[planner][reduction_split]") {
  ir::Graph g = softmaxLoss({256, 1024});
  SplitReductions split = splitRowReductions(g);
  const ir::Graph& s = split.graph;
  REQUIRE(s.find("loss.rows"));
  CHECK(axesOf(s, "loss.rows") == std::vector<int64_t>{1});
  CHECK(axesOf(s, "loss") == std::vector<int64_t>{0});
  CHECK(s.node(*s.find("loss")).operands == std::vector<ir::NodeId>{*s.find("loss.rows")});
  CHECK(s.node(s.outputs()[0]).name == "loss");
  CHECK(s.inputs().size() == 2);
  REQUIRE(split.notes.size() == 1);
  CHECK(split.notes[0] == "%loss (sum over axes {0, 1} of [256, 1024]) split: %loss.rows reduces "
                          "axes {1} (the row of %max, so it joins that row loop and reads its "
                          "operand where the loop computes it), then %loss reduces axes {0} of "
                          "one value per row");

  // The plan: one kernel whose row group computes the per-row sums (no group of the loss
  // reading x again), and the note printed.
  FusionPlan p = plan(g, *deviceSpecProfile("h100"), Policy::AStitch);
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = std::get<KernelPlan>(p.steps[0]);
  const Group& rows = k.groups.at(0);
  CHECK(p.graph.node(rows.dominant).name == "max");
  bool inRowGroup = false;
  for (ir::NodeId sd : rows.subDominants)
    inRowGroup |= p.graph.node(sd).name == "loss.rows";
  CHECK(inRowGroup);
  CHECK(p.notes == split.notes);

  // Same value as the whole-graph sum (f64 inputs: the order of the sum is all that differs).
  ir::Graph g64 = softmaxLoss({3, 40}, DType::f64);
  ir::Graph s64 = splitRowReductions(g64).graph;
  std::vector<HostTensor> in;
  for (ir::NodeId input : g64.inputs()) {
    HostTensor t(DType::f64, {3, 40});
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, std::sin(double(i) * (input + 1)));
    in.push_back(t);
  }
  CHECK(ir::interpret(s64, in)[0].get(0) == Approx(ir::interpret(g64, in)[0].get(0)).epsilon(1e-12));
}

TEST_CASE("reduction split: the row is the one another reduce of the shape takes",
          "[planner][reduction_split]") {
  // [B, S, H] with a reduce over H: the loss's row is H, and the rest sums [B, S].
  ir::Graph g = softmaxLoss({ir::Dim::symbol("B"), 8, 64});
  ir::Graph s = splitRowReductions(g).graph;
  CHECK(axesOf(s, "loss.rows") == std::vector<int64_t>{2});
  CHECK(axesOf(s, "loss") == std::vector<int64_t>{0, 1});

  // No other reduce: the longest proper trailing run (every dim but the first).
  ir::Graph h;
  auto x = h.parameter("x", {DType::f32, {ir::Dim::symbol("B"), 8, 64}});
  h.setOutputs({h.reduce(ReduceKind::Sum, h.unary(OpKind::Exp, x), {0, 1, 2}, "total")});
  ir::Graph hs = splitRowReductions(h).graph;
  CHECK(axesOf(hs, "total.rows") == std::vector<int64_t>{1, 2});
  CHECK(axesOf(hs, "total") == std::vector<int64_t>{0});
}

TEST_CASE("reduction split: short rows, low-precision sums, rows and columns stay whole",
          "[planner][reduction_split]") {
  // A row of 16: one partial per 16 elements would write more than the split saves.
  CHECK(splitRowReductions(softmaxLoss({4096, 16})).notes.empty());
  // f16 partials would round each row's sum before the total.
  CHECK(splitRowReductions(softmaxLoss({256, 1024}, DType::f16)).notes.empty());
  // One row: nothing to split.
  CHECK(splitRowReductions(softmaxLoss({1, 1024})).notes.empty());
  // Plain row and column reduces are what the split makes; they stay as they are.
  CHECK(splitRowReductions(fusion::testing::rowReduce(512, 1024)).notes.empty());
  CHECK(splitRowReductions(fusion::testing::columnReduce(512, 256)).notes.empty());
  // A max over everything in f16 is exact in any order: it splits.
  ir::Graph m;
  auto x = m.parameter("x", {DType::f16, {64, 256}});
  m.setOutputs({m.reduce(ReduceKind::Max, x, {0, 1}, "peak")});
  CHECK(splitRowReductions(m).notes.size() == 1);
}
