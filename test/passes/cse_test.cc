#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/cse.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

TEST_CASE("cse merges ops with the same kind, operands, attributes and type", "[passes][cse]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(2), Dim(3)}});
  NodeId x2 = g.parameter("x2", {DType::f32, {Dim(2), Dim(3)}});
  NodeId a = g.unary(OpKind::Exp, x, "a");
  NodeId b = g.unary(OpKind::Exp, x, "b");  // = a
  NodeId c = g.unary(OpKind::Exp, x2, "c"); // another operand: stays
  NodeId sa = g.binary(OpKind::Add, a, c, "sa");
  NodeId sb = g.binary(OpKind::Add, b, c, "sb"); // = sa once b is a
  NodeId sc = g.binary(OpKind::Add, c, a, "sc"); // operands in another order: stays
  NodeId r0 = g.reduce(ReduceKind::Sum, sa, {0}, "r0");
  NodeId r1 = g.reduce(ReduceKind::Sum, sb, {1}, "r1"); // other axes: stays
  NodeId k1 = g.scalar(DType::f32, 2, "k1");
  NodeId k2 = g.scalar(DType::f32, 2, "k2"); // = k1
  NodeId k3 = g.scalar(DType::f16, 2, "k3"); // other type: stays
  NodeId m = g.binary(OpKind::Mul, k1, k2, "m");
  g.setOutputs({r0, r1, sc, m, k3});
  Graph s = cse(g);
  verify(s);
  CHECK(printGraph(s) == "graph main(%x: f32[2, 3], %x2: f32[2, 3]) {\n"
                         "  %a = exp(%x) : f32[2, 3]\n"
                         "  %c = exp(%x2) : f32[2, 3]\n"
                         "  %sa = add(%a, %c) : f32[2, 3]\n"
                         "  %sc = add(%c, %a) : f32[2, 3]\n"
                         "  %r0 = reduce[sum, axes=[0]](%sa) : f32[3]\n"
                         "  %r1 = reduce[sum, axes=[1]](%sa) : f32[2]\n"
                         "  %k1 = constant[2]() : f32[]\n"
                         "  %k3 = constant[2]() : f16[]\n"
                         "  %m = mul(%k1, %k1) : f32[]\n"
                         "  return %r0, %r1, %sc, %m, %k3\n"
                         "}\n");
  CHECK(sameGraph(cse(s), s));
}

TEST_CASE("cse never merges parameters, and tells compare directions apart", "[passes][cse]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(4)}});
  NodeId y = g.parameter("y", {DType::f32, {Dim(4)}});
  NodeId lt = g.compare(CompareDir::LT, x, y, "lt");
  NodeId gt = g.compare(CompareDir::GT, x, y, "gt");
  g.setOutputs({lt, gt});
  Graph s = cse(g);
  CHECK(s.size() == 4);
  CHECK(sameGraph(s, g));
}
