#include <catch2/catch.hpp>

#include "fusion/stitch_scope.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

TEST_CASE("stitch scope: a whole memory-intensive region is one scope", "[planner][scope]") {
  ir::Graph g = astitchFig7();
  auto scopes = findStitchScopes(g);
  REQUIRE(scopes.size() == 1);
  // every op but the parameters
  CHECK(scopes[0].ops.size() == g.size() - 2);
}

TEST_CASE("stitch scope: a dot splits the graph and is not in any scope", "[planner][scope]") {
  ir::Graph g = layerNormDotGelu();
  auto scopes = findStitchScopes(g);
  REQUIRE(scopes.size() == 2);
  ir::NodeId dot = id(g, "matmul");
  for (const StitchScope& s : scopes)
    CHECK(std::find(s.ops.begin(), s.ops.end(), dot) == s.ops.end());
  CHECK(std::find(scopes[0].ops.begin(), scopes[0].ops.end(), id(g, "mean")) !=
        scopes[0].ops.end());
  CHECK(std::find(scopes[1].ops.begin(), scopes[1].ops.end(), id(g, "act")) != scopes[1].ops.end());
}

TEST_CASE("stitch scope: connected ops around a dot are split to avoid a cycle",
          "[planner][scope]") {
  // a = exp(x); m = dot(a, w); out = m + a : {a, out} connected but a → dot → out
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {ir::DType::f32, {64, 64}});
  ir::NodeId w = g.parameter("w", {ir::DType::f32, {64, 64}});
  ir::NodeId a = g.unary(ir::OpKind::Exp, x, "a");
  ir::NodeId m = g.dot(a, w, "m");
  g.addOutput(g.binary(ir::OpKind::Add, m, a, "out"));
  auto scopes = findStitchScopes(g);
  REQUIRE(scopes.size() == 2);
  CHECK(names(g, scopes[0].ops) == std::vector<std::string>{"a"});
  CHECK(names(g, scopes[1].ops) == std::vector<std::string>{"out"});
}

TEST_CASE("stitch scope: remote stitching merges independent regions, never across a dependency",
          "[planner][scope]") {
  // two independent row sums feeding separate dots, and an op after both dots
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {ir::DType::f32, {64, 64}});
  ir::NodeId y = g.parameter("y", {ir::DType::f32, {64, 64}});
  ir::NodeId ex = g.unary(ir::OpKind::Exp, x, "ex");
  ir::NodeId ey = g.unary(ir::OpKind::Exp, y, "ey");
  ir::NodeId d1 = g.dot(ex, ex, "d1");
  ir::NodeId d2 = g.dot(ey, ey, "d2");
  g.addOutput(g.binary(ir::OpKind::Add, d1, d2, "sum"));
  auto remote = findStitchScopes(g);
  REQUIRE(remote.size() == 2);
  CHECK(names(g, remote[0].ops) == std::vector<std::string>{"ex", "ey"});
  CHECK(names(g, remote[1].ops) == std::vector<std::string>{"sum"});
  auto local = findStitchScopes(g, {.remoteStitching = false});
  CHECK(local.size() == 3);
}

TEST_CASE("stitch scope: constants are regenerated in every scope that reads them",
          "[planner][scope]") {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {ir::DType::f32, {64, 64}});
  ir::NodeId c = g.constant(ir::DType::f32, {64, 64}, {2.0}, "two");
  ir::NodeId a = g.binary(ir::OpKind::Mul, x, c, "a");
  ir::NodeId m = g.dot(a, x, "m");
  g.addOutput(g.binary(ir::OpKind::Mul, m, c, "b"));
  auto scopes = findStitchScopes(g);
  REQUIRE(scopes.size() == 2);
  CHECK(names(g, scopes[0].ops) == std::vector<std::string>{"two", "a"});
  CHECK(names(g, scopes[1].ops) == std::vector<std::string>{"two", "b"});
}

TEST_CASE("stitch scope: remote stitching merges every independent branch of a wide graph",
          "[planner][scope]") {
  // 12 branches x_i -> exp -> dot -> tanh -> dot, summed after the last dots: the exps are one
  // scope, the tanhs (each after its own dot, none reading another) one more, the sums a third,
  // whatever order the branches' clusters are met in (remote stitching's reachability is
  // updated as clusters merge).
  constexpr int kBranches = 12;
  ir::Graph g;
  ir::NodeId w = g.parameter("w", {ir::DType::f32, {64, 64}});
  std::vector<ir::NodeId> last;
  for (int i = 0; i < kBranches; ++i) {
    std::string s = std::to_string(i);
    ir::NodeId x = g.parameter("x" + s, {ir::DType::f32, {64, 64}});
    ir::NodeId d = g.dot(g.unary(ir::OpKind::Exp, x, "e" + s), w, "d" + s);
    last.push_back(g.dot(g.unary(ir::OpKind::Tanh, d, "t" + s), w, "f" + s));
  }
  ir::NodeId sum = last[0];
  for (int i = 1; i < kBranches; ++i)
    sum = g.binary(ir::OpKind::Add, sum, last[size_t(i)], "s" + std::to_string(i));
  g.addOutput(sum);
  auto scopes = findStitchScopes(g);
  REQUIRE(scopes.size() == 3);
  std::vector<std::string> exps, tanhs;
  for (int i = 0; i < kBranches; ++i)
    exps.push_back("e" + std::to_string(i)), tanhs.push_back("t" + std::to_string(i));
  std::sort(exps.begin(), exps.end());
  std::sort(tanhs.begin(), tanhs.end());
  auto sorted = [&](const StitchScope& s) {
    std::vector<std::string> n = names(g, s.ops);
    std::sort(n.begin(), n.end());
    return n;
  };
  CHECK(sorted(scopes[0]) == exps);
  CHECK(sorted(scopes[1]) == tanhs);
  CHECK(scopes[2].ops.size() == size_t(kBranches - 1));
  CHECK(findStitchScopes(g, {.remoteStitching = false}).size() == size_t(2 * kBranches + 1));
}
