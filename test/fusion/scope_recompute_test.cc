// Values read after a library call (fusion/scope_recompute.h): the reading kernel recomputes
// them from what is in memory anyway when that reads fewer bytes than storing and loading
// them, and the plan says so.
#include <catch2/catch.hpp>

#include <algorithm>

#include "fusion/policy_astitch.h"
#include "plan_queries.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;
using ir::DType;
using ir::OpKind;

namespace {

/// n = (x - mean(x)) * gamma over rows of 512; a = tanh(n); mm = a @ w; y = mm * `after`,
/// where `after` names n or a: a value of the first kernel read after the dot.
ir::Graph normDotThen(const std::string& after) {
  ir::Graph g;
  const int64_t rows = 256, hidden = 512;
  ir::Shape shape = {rows, hidden};
  auto x = g.parameter("x", {DType::f32, shape});
  auto gamma = g.parameter("gamma", {DType::f32, {hidden}});
  auto w = g.parameter("w", {DType::f32, {hidden, hidden}});
  auto sum = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  auto scale = g.broadcastInDim(g.scalar(DType::f32, 1.0 / hidden), {rows}, {});
  auto mean = g.binary(OpKind::Mul, sum, scale, "mean");
  auto centered = g.binary(OpKind::Sub, x, g.broadcastInDim(mean, shape, {0}, "mean_b"), "centered");
  auto n = g.binary(OpKind::Mul, centered, g.broadcastInDim(gamma, shape, {1}, "gamma_b"), "n");
  auto a = g.unary(OpKind::Tanh, n, "a");
  auto mm = g.dot(a, w, "mm");
  g.setOutputs({g.binary(OpKind::Mul, mm, after == "n" ? n : a, "y")});
  return g;
}

/// Without GEMM epilogues, so that y runs in a kernel of its own after the dot.
FusionPlan planOf(const ir::Graph& g) {
  return planAStitch(g, *deviceSpecProfile("h100"), {}, /*gemmEpilogues=*/false);
}

bool contains(const std::vector<ir::NodeId>& vs, ir::NodeId v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

} // namespace

TEST_CASE("scope recompute: the kernel after the dot recomputes n from x and the row means",
          "[planner][scope_recompute]") {
  FusionPlan p = planOf(normDotThen("n"));
  const ir::Graph& g = p.graph;
  auto ks = kernelsOf(p);
  REQUIRE(ks.size() == 2);
  // Storing n and loading it again would move 2 x 512 KB; the second kernel loads x (512 KB,
  // an input), gamma (2 KB) and the means (1 KB, stored by the first) and recomputes the chain.
  CHECK(!contains(ks[0]->outputs, id(g, "n")));
  CHECK(contains(ks[0]->outputs, id(g, "mean")));
  CHECK(contains(ks[0]->outputs, id(g, "a"))); // the dot's operand
  for (const char* op : {"n", "centered", "mean_b", "gamma_b"})
    CHECK(contains(ks[1]->ops, id(g, op)));
  CHECK(contains(ks[1]->inputs, id(g, "x")));
  CHECK(contains(ks[1]->inputs, id(g, "mean")));
  CHECK(!contains(ks[1]->inputs, id(g, "n")));
  REQUIRE(p.notes.size() == 1);
  CHECK(p.notes[0] == "%n: recomputed by stitch1 (4 op(s)) loading %gamma, %mean, %x (0.5 MB) "
                      "instead of stored by stitch0 and loaded (1.0 MB at the planned sizes)");
  // Every op still has one kernel that stores it when a later step reads it: the plan's
  // buffers name each crossing value once.
  CHECK(p.bufferOfValue[static_cast<size_t>(id(g, "n"))] < 0);
}

TEST_CASE("scope recompute: a value stored anyway is loaded, not recomputed from a new input",
          "[planner][scope_recompute]") {
  // a is the dot's operand, so it is in memory: loading it (512 KB) costs what loading x to
  // recompute it would; the plan keeps the load.
  FusionPlan p = planOf(normDotThen("a"));
  const ir::Graph& g = p.graph;
  auto ks = kernelsOf(p);
  REQUIRE(ks.size() == 2);
  CHECK(p.notes.empty());
  CHECK(contains(ks[1]->inputs, id(g, "a")));
  CHECK(!contains(ks[1]->ops, id(g, "a")));
}
