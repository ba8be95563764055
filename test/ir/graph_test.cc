#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/printer.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::ir;

namespace {
Shape bx768() { return {Dim::symbol("B"), Dim(768)}; }
} // namespace

TEST_CASE("building a layer-norm-like graph infers every type", "[ir][graph]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, bx768()});
  NodeId sum = g.reduce(ReduceKind::Sum, x, {1}, "sum");
  CHECK(g.node(sum).type.str() == "f32[B]");
  NodeId b = g.broadcastInDim(sum, bx768(), {0});
  NodeId d = g.binary(OpKind::Sub, x, b, "centered");
  NodeId c = g.compare(CompareDir::GT, d, d);
  CHECK(g.node(c).type.dtype == DType::boolean);
  g.addOutput(d);
  verify(g);
  CHECK(g.symbols() == std::vector<std::string>{"B"});
  std::string text = printGraph(g, "ln");
  CHECK(text.find("%sum = reduce[sum, axes=[1]](%x) : f32[B]") != std::string::npos);
  CHECK(text.find("return %centered") != std::string::npos);
}

TEST_CASE("type errors name the op, the operand and the rule", "[ir][graph]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, bx768()});
  NodeId gamma = g.parameter("gamma", {DType::f32, {Dim(768)}});
  CHECK_THROWS_WITH(g.binary(OpKind::Mul, x, gamma, "scale"),
                    "op \"scale\" (mul): operand 1 has shape [768] but operand 0 has shape [B, 768]; "
                    "broadcast it explicitly (broadcast_in_dim) or use matching shapes");
  NodeId i = g.parameter("i", {DType::i32, {Dim(4)}});
  CHECK_THROWS_WITH(g.unary(OpKind::Exp, i, "e"), Catch::Contains("floating-point"));
  CHECK_THROWS_WITH(g.reduce(ReduceKind::Sum, x, {2}, "r"), Catch::Contains("reduce axis 2 is out of range"));
  CHECK_THROWS_WITH(g.transpose(x, {0, 0}, "t"), Catch::Contains("not a permutation"));
  CHECK_THROWS_WITH(g.reshape(x, {Dim(769)}, "r2"), Catch::Contains("cannot reshape"));
  CHECK_THROWS_WITH(g.parameter("x", {DType::f32, {}}), Catch::Contains("already used"));
}

TEST_CASE("symbolic reshape keeps exact products", "[ir][graph]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f16, {Dim::symbol("B"), Dim::symbol("S"), Dim(64)}});
  NodeId r = g.reshape(x, {Dim::symbol("B") * Dim::symbol("S"), Dim(64)});
  CHECK(g.node(r).type.str() == "f16[B*S, 64]");
  Graph bound = bindSymbols((g.addOutput(r), g), {{"B", 2}, {"S", 3}});
  CHECK(bound.node(r).type.str() == "f16[6, 64]");
  CHECK_THROWS_WITH(bindSymbols(g, {{"B", 2}}), Catch::Contains("symbol \"S\" is not bound"));
}

TEST_CASE("slices, pads and concatenations infer their shapes", "[ir][graph]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(10), Dim(6)}});
  CHECK(g.node(g.slice(x, {1, 0}, {9, -1}, {2, 1})).type.str() == "f32[4, 6]");
  CHECK(g.node(g.pad(x, {1, 0}, {2, 3}, 0.0)).type.str() == "f32[13, 9]");
  CHECK(g.node(g.concatenate({x, x}, 1)).type.str() == "f32[10, 12]");
  NodeId a = g.parameter("a", {DType::f32, {Dim(3), Dim(4)}});
  NodeId b = g.parameter("b", {DType::f32, {Dim(4), Dim(5)}});
  CHECK(g.node(g.dot(a, b)).type.str() == "f32[3, 5]");
  CHECK_THROWS_WITH(g.dot(b, b), Catch::Contains("contracting dims differ"));
}

TEST_CASE("a graph without outputs does not verify", "[ir][graph]") {
  Graph g;
  g.parameter("x", {DType::f32, {Dim(4)}});
  CHECK_THROWS_WITH(verify(g), Catch::Contains("no outputs"));
}

TEST_CASE("a rebuilt graph takes back its equalities and fresh-name counters", "[ir][graph]") {
  // What fusion/plan_serialization.cc needs to rebuild a graph exactly: the next fresh name
  // of a rebuilt graph is the original's, and a counter list of the wrong length is refused.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {4}});
  g.setOutputs({g.unary(OpKind::Exp, g.unary(OpKind::Exp, x))});
  ir::Graph rebuilt;
  rebuilt.parameter("x", {DType::f32, {4}});
  rebuilt.restoreBuildState(g.symbolEqualities(), g.nameCounters());
  CHECK(rebuilt.nameCounters() == g.nameCounters());
  auto a = g.unary(OpKind::Exp, x);
  auto b = rebuilt.unary(OpKind::Exp, *rebuilt.find("x"));
  CHECK(g.node(a).name == rebuilt.node(b).name);
  CHECK_THROWS_WITH(rebuilt.restoreBuildState({}, {1, 2}),
                    Catch::Contains("restoreBuildState: 2 fresh-name counters"));
}
