#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/broadcast_elimination.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

TEST_CASE("broadcasts between provably equal shapes go, real ones stay",
          "[passes][broadcast_elimination]") {
  Graph g;
  Dim B = Dim::symbol("B"), S = Dim::symbol("S");
  NodeId x = g.parameter("x", {DType::f32, {B * S, Dim(4)}});
  NodeId col = g.parameter("col", {DType::f32, {B * S, Dim(1)}});
  NodeId same = g.broadcastInDim(x, {*Dim::parse("S*B"), Dim(4)}, {0, 1}, "same"); // B*S == S*B
  NodeId real = g.broadcastInDim(col, {B * S, Dim(4)}, {0, 1}, "real");
  NodeId one = g.parameter("one", {DType::f32, {Dim(1)}});
  NodeId ones = g.broadcastInDim(one, {Dim(1)}, {0}, "ones"); // [1] -> [1]
  NodeId y = g.binary(OpKind::Add, same, real, "y");
  g.setOutputs({y, ones});
  Graph r = eliminateIdentityBroadcasts(g);
  verify(r);
  CHECK(printGraph(r) == "graph main(%x: f32[B*S, 4], %col: f32[B*S, 1], %one: f32[1]) {\n"
                         "  %real = broadcast_in_dim[dims=[0, 1]](%col) : f32[B*S, 4]\n"
                         "  %y = add(%x, %real) : f32[B*S, 4]\n"
                         "  %ones = reshape(%one) : f32[1]\n"
                         "  return %y, %ones\n"
                         "}\n");
  CHECK(sameGraph(eliminateIdentityBroadcasts(r), r));
}
