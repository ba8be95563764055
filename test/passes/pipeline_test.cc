#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

namespace {
/// A layer norm over [B, 4] the way a naive frontend emits it: duplicated subexpressions,
/// identity broadcasts and reshapes, a multiply by one and constant arithmetic.
Graph naiveLayerNorm() {
  // One builder call per statement: the order of nested calls in one argument list is unspecified.
  Graph g;
  Dim B = Dim::symbol("B");
  Shape s{B, Dim(4)};
  NodeId x = g.parameter("x", {DType::f32, s});
  g.parameter("unused", {DType::f32, {Dim(4)}});
  NodeId xs = g.broadcastInDim(x, s, {0, 1}, "xs");
  NodeId three = g.scalar(DType::f32, 3, "three");
  NodeId one = g.scalar(DType::f32, 1, "one");
  NodeId n = g.binary(OpKind::Add, three, one, "n");
  NodeId sum = g.reduce(ReduceKind::Sum, xs, {1}, "sum");
  NodeId nb = g.broadcastInDim(n, {B}, {}, "nb");
  NodeId mean = g.binary(OpKind::Div, sum, nb, "mean");
  NodeId mb1 = g.broadcastInDim(mean, s, {0}, "mb1");
  NodeId c1 = g.binary(OpKind::Sub, x, mb1, "c1");
  NodeId mb2 = g.broadcastInDim(mean, s, {0}, "mb2");
  NodeId c2 = g.binary(OpKind::Sub, x, mb2, "c2"); // = c1
  NodeId sq = g.binary(OpKind::Mul, c1, c2, "sq");
  NodeId ssq = g.reduce(ReduceKind::Sum, sq, {1}, "ssq");
  NodeId nb2 = g.broadcastInDim(n, {B}, {}, "nb2");
  NodeId var = g.binary(OpKind::Div, ssq, nb2, "var");
  NodeId eps = g.scalar(DType::f32, 0.5, "eps");
  NodeId epsb = g.broadcastInDim(eps, {B}, {}, "epsb");
  NodeId ve = g.binary(OpKind::Add, var, epsb, "ve");
  NodeId inv = g.unary(OpKind::Rsqrt, ve, "inv");
  NodeId r1 = g.reshape(inv, {B, Dim(1)}, "r1");
  NodeId r2 = g.reshape(r1, {B}, "r2"); // = inv
  NodeId ib = g.broadcastInDim(r2, s, {0}, "ib");
  NodeId y0 = g.binary(OpKind::Mul, c1, ib, "y0");
  NodeId one2 = g.scalar(DType::f32, 1, "one2");
  NodeId ones = g.broadcastInDim(one2, s, {}, "ones");
  g.addOutput(g.binary(OpKind::Mul, y0, ones, "y"));
  return g;
}
} // namespace

TEST_CASE("canonicalize reaches the simplest equivalent graph", "[passes][pipeline]") {
  Graph g = naiveLayerNorm();
  Graph c = canonicalize(g);
  verify(c);
  CHECK(printGraph(c) == "graph main(%x: f32[B, 4], %unused: f32[4]) {\n"
                         "  %sum = reduce[sum, axes=[1]](%x) : f32[B]\n"
                         "  %nb = constant[4]() : f32[B]\n"
                         "  %mean = div(%sum, %nb) : f32[B]\n"
                         "  %mb1 = broadcast_in_dim[dims=[0]](%mean) : f32[B, 4]\n"
                         "  %c1 = sub(%x, %mb1) : f32[B, 4]\n"
                         "  %sq = mul(%c1, %c1) : f32[B, 4]\n"
                         "  %ssq = reduce[sum, axes=[1]](%sq) : f32[B]\n"
                         "  %var = div(%ssq, %nb) : f32[B]\n"
                         "  %epsb = constant[0.5]() : f32[B]\n"
                         "  %ve = add(%var, %epsb) : f32[B]\n"
                         "  %inv = rsqrt(%ve) : f32[B]\n"
                         "  %ib = broadcast_in_dim[dims=[0]](%inv) : f32[B, 4]\n"
                         "  %y = mul(%c1, %ib) : f32[B, 4]\n"
                         "  return %y\n"
                         "}\n");
  CHECK(sameGraph(canonicalize(c), c));

  HostTensor x(DType::f32, {3, 4}), unused(DType::f32, {4});
  for (int64_t i = 0; i < 12; ++i)
    x.set(i, static_cast<double>((i * 7) % 5) - 1.25);
  Binding b{{"B", 3}};
  CHECK(interpret(c, {x, unused}, b)[0].bytes == interpret(g, {x, unused}, b)[0].bytes);
}

TEST_CASE("canonicalize keeps every output under its name, even when they coincide",
          "[passes][pipeline]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(4)}});
  NodeId one = g.constant(DType::f32, {Dim(4)}, {1}, "one");
  NodeId a = g.unary(OpKind::Exp, x, "a");
  NodeId b = g.unary(OpKind::Exp, x, "b");
  NodeId same = g.binary(OpKind::Mul, x, one, "same");
  g.setOutputs({g.binary(OpKind::Mul, b, one, "out_b"), a, same});
  Graph c = canonicalize(g);
  verify(c);
  CHECK(printGraph(c) == "graph main(%x: f32[4]) {\n"
                         "  %a = exp(%x) : f32[4]\n"
                         "  %out_b = reshape(%a) : f32[4]\n"
                         "  %same = reshape(%x) : f32[4]\n"
                         "  return %out_b, %a, %same\n"
                         "}\n");
  CHECK(sameGraph(canonicalize(c), c));
}
