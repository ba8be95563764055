#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/dce.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

TEST_CASE("dce removes what no output depends on and nothing else", "[passes][dce]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(4)}});
  g.parameter("unused", {DType::f32, {Dim(4)}});
  NodeId e = g.unary(OpKind::Exp, x, "e");
  NodeId dead = g.unary(OpKind::Log, x, "dead");
  g.unary(OpKind::Neg, dead, "dead_too");
  NodeId y = g.unary(OpKind::Neg, e, "y");
  NodeId z = g.binary(OpKind::Add, e, x, "z");
  g.setOutputs({z, y});
  Graph s = dce(g);
  verify(s);
  CHECK(printGraph(s) == "graph main(%x: f32[4], %unused: f32[4]) {\n"
                         "  %e = exp(%x) : f32[4]\n"
                         "  %y = neg(%e) : f32[4]\n"
                         "  %z = add(%e, %x) : f32[4]\n"
                         "  return %z, %y\n"
                         "}\n");
  CHECK(sameGraph(dce(s), s));
}
