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
  ir::Graph g = astitchFig7();
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
