#include <catch2/catch.hpp>

#include "fusion/dominants.h"
#include "fusion/policy_astitch.h"
#include "fusion/stitch_scope.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {
std::vector<GroupSeed> groupsOf(const ir::Graph& g) {
  auto scopes = findStitchScopes(g);
  REQUIRE(scopes.size() == 1);
  return identifyDominants(g, scopes[0].ops, scopeOutputs(g, scopes[0].ops));
}
} // namespace

TEST_CASE("dominants: AStitch Figure 7 merges into reduce.1 and reduce.2 (Figure 9-1)",
          "[planner][dominants][fig7]") {
  // power.1 over 8,192 columns (32 KB): too large for every block to compute, the paper's
  // sub-dominant
  ir::Graph g = astitchFig7(64, 8192);
  auto groups = groupsOf(g);
  REQUIRE(groups.size() == 2);
  // power.1 reaches reduce.1 through add.1 - broadcast.1 - parameter.2 - divide.1 (local ops
  // only, §4.3) and multiply.1 reaches reduce.2 through broadcast.2 - add.2: each joins its
  // nearest reduce as a sub-dominant
  CHECK(nameOf(g, groups[0].dominant) == "reduce.1");
  CHECK(names(g, groups[0].subDominants) == std::vector<std::string>{"power.1"});
  CHECK(nameOf(g, groups[1].dominant) == "reduce.2");
  CHECK(names(g, groups[1].subDominants) == std::vector<std::string>{"multiply.1"});
  CHECK(names(g, groups[0].ops) ==
        std::vector<std::string>{"reduce.1", "constant.1", "divide.1", "constant.2", "power.1"});
  // broadcast.2 is in one group only: both of its readers share a schedule (operator-level reuse)
  CHECK(names(g, groups[1].ops) == std::vector<std::string>{"broadcast.1", "add.1", "broadcast.2",
                                                            "add.2", "reduce.2", "broadcast.3",
                                                            "multiply.1"});
}

TEST_CASE("dominants: Figure 7's power.1 over 128 columns is no candidate: every block computes it",
          "[planner][dominants][fig7]") {
  // 128 floats computed from parameter.2 alone, repeated along the rows: a stage of its own would
  // cost a grid barrier, each block's own copy 128 pows
  ir::Graph g = astitchFig7();
  auto groups = groupsOf(g);
  REQUIRE(groups.size() == 2);
  CHECK(nameOf(g, groups[0].dominant) == "reduce.1");
  CHECK(groups[0].subDominants.empty());
  CHECK(names(g, groups[0].ops) == std::vector<std::string>{"reduce.1"});
  CHECK(nameOf(g, groups[1].dominant) == "reduce.2");
  CHECK(names(g, groups[1].subDominants) == std::vector<std::string>{"multiply.1"});
  CHECK(names(g, groups[1].ops) ==
        std::vector<std::string>{"broadcast.1", "add.1", "constant.1", "divide.1", "constant.2",
                                 "power.1", "broadcast.2", "add.2", "reduce.2", "broadcast.3",
                                 "multiply.1"});
}

TEST_CASE("dominants: a small expensive value stays a candidate where it varies by row or reads a "
          "reduce",
          "[planner][dominants]") {
  auto isCandidate = [](const ir::Graph& g, const std::string& name) {
    for (const GroupSeed& s : groupsOf(g))
      if (nameOf(g, s.dominant) == name ||
          std::count(s.subDominants.begin(), s.subDominants.end(), id(g, name)) > 0)
        return true;
    return false;
  };
  // exp(r) broadcast along each row: its rows' blocks materialize it without a grid barrier
  {
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {ir::DType::f32, {256, 512}});
    ir::NodeId r = g.parameter("r", {ir::DType::f32, {256}});
    ir::NodeId e = g.unary(ir::OpKind::Exp, r, "e");
    ir::NodeId y = g.binary(ir::OpKind::Mul, x, g.broadcastInDim(e, {256, 512}, {0}), "y");
    g.addOutput(g.reduce(ir::ReduceKind::Sum, y, {1}, "s"));
    CHECK(isCandidate(g, "e"));
  }
  // exp of a column sum: it needs the whole grid's sum first
  {
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {ir::DType::f32, {256, 512}});
    ir::NodeId c = g.reduce(ir::ReduceKind::Sum, x, {0}, "c");
    ir::NodeId e = g.unary(ir::OpKind::Exp, c, "e");
    g.addOutput(g.binary(ir::OpKind::Mul, x, g.broadcastInDim(e, {256, 512}, {1}), "y"));
    CHECK(isCandidate(g, "e"));
  }
  // a [1, 512] row vector through a stretched dim is still one: no candidate
  {
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {ir::DType::f32, {256, 512}});
    ir::NodeId w = g.parameter("w", {ir::DType::f32, {1, 512}});
    ir::NodeId e = g.unary(ir::OpKind::Exp, w, "e");
    ir::NodeId y = g.binary(ir::OpKind::Mul, x, g.broadcastInDim(e, {256, 512}, {0, 1}), "y");
    g.addOutput(g.reduce(ir::ReduceKind::Sum, y, {1}, "s"));
    CHECK_FALSE(isCandidate(g, "e"));
  }
}

TEST_CASE("dominants: layer norm is one group, the statistics are row-space sub-dominants",
          "[planner][dominants]") {
  ir::Graph g = layerNorm(1024, 768);
  auto groups = groupsOf(g);
  REQUIRE(groups.size() == 1);
  CHECK(nameOf(g, groups[0].dominant) == "sum");
  CHECK(names(g, groups[0].subDominants) ==
        std::vector<std::string>{"mean", "sqsum", "rstd", "out"});
}

TEST_CASE("dominants: a reduce over other dims than the dominant's becomes its own group",
          "[planner][dominants]") {
  ir::Graph g = layerNormBackward(1024, 768);
  auto groups = groupsOf(g);
  REQUIRE(groups.size() == 2);
  CHECK(nameOf(g, groups[0].dominant) == "dgamma");
  CHECK(names(g, groups[0].subDominants) == std::vector<std::string>{"dbeta"});
  CHECK(nameOf(g, groups[1].dominant) == "sum_dxhat");
  CHECK(names(g, groups[1].subDominants) ==
        std::vector<std::string>{"sum_dxhat_xhat", "scale", "dx"});
}

TEST_CASE("dominants: an elementwise region has its output as the only candidate",
          "[planner][dominants]") {
  ir::Graph g = geluBias(256, 1024);
  auto groups = groupsOf(g);
  REQUIRE(groups.size() == 1);
  CHECK(nameOf(g, groups[0].dominant) == "gelu");
  CHECK(groups[0].subDominants.empty());
  CHECK(groups[0].ops.size() == g.size() - 2);
}
