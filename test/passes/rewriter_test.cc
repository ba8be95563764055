#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/algebraic_simplify.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

// How outputs keep their names when a pass replaces them (rewriter.h), seen through the
// passes that replace values.

TEST_CASE("an output replaced by an unnamed op gives that op its name", "[passes][rewriter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(4)}});
  NodeId e = g.unary(OpKind::Exp, x, "e");
  NodeId one = g.constant(DType::f32, {Dim(4)}, {1}, "one");
  g.addOutput(g.binary(OpKind::Mul, e, one, "y"));
  Graph s = dce(algebraicSimplify(g));
  verify(s);
  CHECK(printGraph(s) == "graph main(%x: f32[4]) {\n"
                         "  %y = exp(%x) : f32[4]\n"
                         "  return %y\n"
                         "}\n");
}

TEST_CASE("an output replaced by a parameter becomes its identity reshape", "[passes][rewriter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(4)}});
  NodeId one = g.constant(DType::f32, {Dim(4)}, {1}, "one");
  g.addOutput(g.binary(OpKind::Mul, x, one, "y"));
  Graph s = dce(algebraicSimplify(g));
  verify(s);
  CHECK(printGraph(s) == "graph main(%x: f32[4]) {\n"
                         "  %y = reshape(%x) : f32[4]\n"
                         "  return %y\n"
                         "}\n");
  // The identity is stable: simplifying again gives the same graph.
  CHECK(sameGraph(dce(algebraicSimplify(s)), s));
}

TEST_CASE("an output replaced by another output becomes its identity reshape",
          "[passes][rewriter]") {
  for (bool eFirst : {true, false}) {
    Graph g;
    NodeId x = g.parameter("x", {DType::f32, {Dim(4)}});
    NodeId e = g.unary(OpKind::Exp, x, "e");
    NodeId y = g.unary(OpKind::Exp, x, "y");
    g.setOutputs(eFirst ? std::vector<NodeId>{e, y} : std::vector<NodeId>{y, e});
    Graph s = cse(g);
    verify(s);
    CHECK(printGraph(s) == "graph main(%x: f32[4]) {\n"
                           "  %e = exp(%x) : f32[4]\n"
                           "  %y = reshape(%e) : f32[4]\n"
                           "  return " +
                               std::string(eFirst ? "%e, %y" : "%y, %e") +
                               "\n"
                               "}\n");
  }
}

TEST_CASE("parameters are kept, used or not, in order, a parameter output stays itself",
          "[passes][rewriter]") {
  Graph g;
  NodeId a = g.parameter("a", {DType::f32, {Dim(2)}});
  NodeId e = g.unary(OpKind::Exp, a, "e");
  g.parameter("late_unused", {DType::i32, {Dim::symbol("B")}});
  NodeId b = g.parameter("b", {DType::f32, {Dim(2)}});
  g.setOutputs({b, e});
  Graph s = dce(g);
  verify(s);
  REQUIRE(s.inputs().size() == 3);
  CHECK(s.node(s.inputs()[0]).name == "a");
  CHECK(s.node(s.inputs()[1]).name == "late_unused");
  CHECK(s.node(s.inputs()[2]).name == "b");
  CHECK(printGraph(s) == "graph main(%a: f32[2], %late_unused: i32[B], %b: f32[2]) {\n"
                         "  %e = exp(%a) : f32[2]\n"
                         "  return %b, %e\n"
                         "}\n");
}
