#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/algebraic_simplify.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

TEST_CASE("algebraic identities forward their operand", "[passes][algebraic_simplify]") {
  Graph g;
  Shape s{Dim(2), Dim(3)};
  NodeId p = g.parameter("p", {DType::f32, s});
  NodeId x = g.unary(OpKind::Exp, p, "x");
  NodeId zero = g.constant(DType::f32, s, {0}, "zero");
  NodeId one = g.constant(DType::f32, s, {1, 1, 1, 1, 1, 1}, "one"); // all ones counts as one
  NodeId a = g.binary(OpKind::Add, x, zero, "a");
  NodeId a2 = g.binary(OpKind::Add, zero, a, "a2");
  NodeId m = g.binary(OpKind::Mul, one, a2, "m");
  NodeId m2 = g.binary(OpKind::Mul, m, one, "m2");
  NodeId d = g.binary(OpKind::Div, m2, one, "d");
  NodeId sb = g.binary(OpKind::Sub, d, zero, "sb");
  NodeId n1 = g.unary(OpKind::Neg, sb, "n1");
  NodeId n2 = g.unary(OpKind::Neg, n1, "n2");
  NodeId t = g.transpose(n2, {0, 1}, "t");
  NodeId c = g.convert(t, DType::f32, "c");
  NodeId keep = g.binary(OpKind::Sub, zero, c, "keep"); // 0 - x is not x
  g.setOutputs({keep, c});
  Graph r = algebraicSimplify(g);
  verify(r);
  // x now carries the output name c; the dead constants and n1 are dce's to remove.
  CHECK(printGraph(r) == "graph main(%p: f32[2, 3]) {\n"
                         "  %c = exp(%p) : f32[2, 3]\n"
                         "  %zero = constant[0]() : f32[2, 3]\n"
                         "  %one = constant[[1, 1, 1, 1, 1, 1]]() : f32[2, 3]\n"
                         "  %n1 = neg(%c) : f32[2, 3]\n"
                         "  %keep = sub(%zero, %c) : f32[2, 3]\n"
                         "  return %keep, %c\n"
                         "}\n");
  CHECK(sameGraph(algebraicSimplify(r), r));
}

TEST_CASE("reshapes of reshapes collapse, and reshape to the same shape goes",
          "[passes][algebraic_simplify]") {
  Graph g;
  NodeId p = g.parameter("p", {DType::f32, {Dim::symbol("B"), Dim(6)}});
  NodeId r1 = g.reshape(p, {Dim::symbol("B"), Dim(2), Dim(3)}, "r1");
  NodeId r2 = g.reshape(r1, {Dim::symbol("B") * Dim(6)}, "r2");
  NodeId r3 = g.reshape(r2, {Dim::symbol("B") * Dim(6)}, "r3"); // same shape
  NodeId e = g.unary(OpKind::Exp, r3, "e");
  NodeId back =
      g.reshape(g.reshape(e, {Dim::symbol("B"), Dim(6)}, "r4"), {Dim::symbol("B") * Dim(6)}, "r5");
  g.setOutputs({back});
  Graph r = algebraicSimplify(g);
  verify(r);
  CHECK(printGraph(r) == "graph main(%p: f32[B, 6]) {\n"
                         "  %r1 = reshape(%p) : f32[B, 2, 3]\n"
                         "  %r2 = reshape(%p) : f32[6*B]\n"
                         "  %r5 = exp(%r2) : f32[6*B]\n"
                         "  %r4 = reshape(%r5) : f32[B, 6]\n"
                         "  return %r5\n"
                         "}\n");
  CHECK(sameGraph(algebraicSimplify(r), r));
}

TEST_CASE("a broadcast of a splat constant becomes a splat of the result shape",
          "[passes][algebraic_simplify]") {
  Graph g;
  Shape s{Dim::symbol("B"), Dim(768)};
  NodeId x = g.parameter("x", {DType::f32, s});
  NodeId eps = g.scalar(DType::f32, 1e-5, "eps");
  NodeId epsb = g.broadcastInDim(eps, s, {}, "epsb");
  NodeId zero = g.scalar(DType::f32, 0, "zero");
  NodeId zb = g.broadcastInDim(zero, s, {}, "zb");
  NodeId v = g.binary(OpKind::Add, g.binary(OpKind::Add, x, epsb, "v0"), zb, "v");
  g.addOutput(v);
  Graph r = algebraicSimplify(g);
  verify(r);
  CHECK(printGraph(r) == "graph main(%x: f32[B, 768]) {\n"
                         "  %eps = constant[1e-05]() : f32[]\n"
                         "  %epsb = constant[1e-05]() : f32[B, 768]\n"
                         "  %zero = constant[0]() : f32[]\n"
                         "  %zb = constant[0]() : f32[B, 768]\n"
                         "  %v = add(%x, %epsb) : f32[B, 768]\n"
                         "  return %v\n"
                         "}\n");
  CHECK(sameGraph(algebraicSimplify(r), r));
}
