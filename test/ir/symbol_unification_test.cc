// Dim equality over symbols (ir/symbol_unification.h): ops that need two dims equal unify
// symbols instead of rejecting the graph, the graph records why, and bindings are checked.
#include <catch2/catch.hpp>
#include <functional>

#include "ir/graph.h"
#include "ir/printer.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::ir;

namespace {

Dim sym(const char* s) { return Dim::symbol(s); }

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("unifier replaces a lone symbol by the other dim, never a product or a factor",
          "[ir][symbols]") {
  CHECK_FALSE(unifier(sym("B"), sym("B")));
  auto u = unifier(sym("B"), sym("S")); // operand 0 keeps its name
  REQUIRE(u);
  CHECK(u->first == "S");
  CHECK(u->second == sym("B"));
  u = unifier(sym("B"), Dim(768)); // a static size wins
  REQUIRE(u);
  CHECK(u->first == "B");
  CHECK(u->second == Dim(768));
  u = unifier(sym("B") * Dim(2), sym("S"));
  REQUIRE(u);
  CHECK(u->first == "S");
  CHECK(u->second.str() == "2*B");
  CHECK_FALSE(unifier(sym("B") * Dim(2), sym("S") * Dim(3)));
  CHECK_FALSE(unifier(sym("B"), sym("B") * sym("S"))); // B occurs in B*S: not a substitution
  CHECK_FALSE(unifier(Dim(4), Dim(8)));
}

TEST_CASE("substitute replaces every occurrence, products included", "[ir][symbols]") {
  Dim d = sym("B") * sym("S") * sym("S") * Dim(3);
  CHECK(substitute(d, "S", Dim(2)).str() == "12*B");
  CHECK(substitute(d, "S", sym("T")).str() == "3*B*T*T");
  CHECK(substitute(d, "N", Dim(2)) == d);
}

TEST_CASE("an elementwise op on [B, 4] and [S, 4] unifies S with B everywhere",
          "[ir][symbols]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {sym("B"), 4}});
  NodeId y = g.parameter("y", {DType::f32, {sym("S"), 4}});
  NodeId e = g.unary(OpKind::Exp, y, "e"); // built before the equality is known
  NodeId z = g.binary(OpKind::Add, x, e, "z");
  g.addOutput(z);
  CHECK(g.symbols() == std::vector<std::string>{"B"});
  CHECK(g.node(y).type.shape == Shape{sym("B"), 4});
  CHECK(g.node(e).type.shape == Shape{sym("B"), 4});
  REQUIRE(g.symbolEqualities().size() == 1);
  CHECK(g.symbolEqualities()[0].symbol == "S");
  CHECK(g.symbolEqualities()[0].value == sym("B"));
  CHECK(g.symbolEqualities()[0].where == "op \"z\" (add): operand 1 dim 0");
  verify(g); // every node's type is still the inferred one

  // A value declared later under the old name takes the new one.
  NodeId w = g.parameter("w", {DType::f32, {sym("S"), 4}});
  CHECK(g.node(w).type.shape == Shape{sym("B"), 4});
  CHECK(printGraph(g, "g").find("// S = B: unified by op \"z\" (add): operand 1 dim 0") !=
        std::string::npos);
}

TEST_CASE("a gather unifies its index operands' dims and each mapped operand dim",
          "[ir][symbols][gather]") {
  // table [V, H] gathered by ids [S, T] spread to [S, T, D]: H and D unify (operand axis 1 is
  // result dim 2); two index operands [S, T] and [S2, T] unify S2 with S.
  Graph g;
  NodeId table = g.parameter("table", {DType::f32, {sym("V"), sym("H")}});
  NodeId ids = g.parameter("ids", {DType::i32, {sym("S"), sym("T"), sym("D")}});
  NodeId rows = g.gather(table, {ids}, {0}, {2}, "rows");
  CHECK(g.node(rows).type.shape == Shape{sym("S"), sym("T"), sym("H")});
  CHECK(g.node(ids).type.shape == Shape{sym("S"), sym("T"), sym("H")});
  NodeId m = g.parameter("m", {DType::f32, {sym("S"), 5}});
  NodeId i = g.parameter("i", {DType::i64, {sym("S"), 5}});
  NodeId j = g.parameter("j", {DType::i64, {sym("S2"), 5}});
  g.addOutput(g.gather(m, {i, j}, {0, 1}, {}, "picked"));
  CHECK(g.node(j).type.shape == Shape{sym("S"), 5});
  std::vector<std::string> where;
  for (const auto& e : g.symbolEqualities())
    where.push_back(e.symbol + ": " + e.where);
  CHECK(where == std::vector<std::string>{"D: op \"rows\" (gather): operand dim 1",
                                          "S2: op \"picked\" (gather): index operand 2 dim 0"});
  verify(g);
}

TEST_CASE("bindings are checked against the equalities, the unified symbol may be left out",
          "[ir][symbols]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {sym("B"), 4}});
  NodeId y = g.parameter("y", {DType::f32, {sym("S"), 4}});
  g.addOutput(g.binary(OpKind::Mul, x, y, "z"));
  CHECK_NOTHROW(bindSymbols(g, {{"B", 3}}));
  CHECK_NOTHROW(bindSymbols(g, {{"B", 3}, {"S", 3}}));
  std::string msg = messageOf([&] { bindSymbols(g, {{"B", 3}, {"S", 5}}); });
  CHECK(msg == "binding S=5 contradicts S = B (= 3 here), which op \"z\" (mul): operand 1 dim 0 "
               "needs; bind S to 3 or leave it out");
}

TEST_CASE("a symbol meeting a static size becomes that size", "[ir][symbols]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {sym("N"), 8}});
  NodeId w = g.parameter("w", {DType::f32, {8, 16}});
  NodeId d = g.dot(x, g.parameter("v", {DType::f32, {sym("K"), 16}}), "d0"); // K := 8
  CHECK(g.node(d).type.shape == Shape{sym("N"), 16});
  g.addOutput(g.binary(OpKind::Add, d, g.dot(x, w, "d1"), "s"));
  CHECK(g.symbols() == std::vector<std::string>{"N"});
  REQUIRE(g.symbolEqualities().size() == 1);
  CHECK(g.symbolEqualities()[0].symbol == "K");
  CHECK(g.symbolEqualities()[0].value == Dim(8));
  CHECK(g.symbolEqualities()[0].where == "op \"d0\" (dot): contracting dim");
  CHECK_THROWS_WITH(bindSymbols(g, {{"N", 2}, {"K", 7}}),
                    Catch::Contains("binding K=7 contradicts K = 8"));
}

TEST_CASE("broadcast_in_dim, reshape and concatenate unify the dims they need equal",
          "[ir][symbols]") {
  Graph g;
  NodeId row = g.parameter("row", {DType::f32, {sym("N")}});
  NodeId x = g.parameter("x", {DType::f32, {sym("B"), sym("H")}});
  NodeId b = g.broadcastInDim(row, {sym("B"), sym("H")}, {1}, "b"); // N := H
  CHECK(g.node(row).type.shape == Shape{sym("H")});
  NodeId r = g.reshape(x, {sym("T")}, "r"); // B*H vs T: T := B*H
  CHECK(g.node(r).type.shape == Shape{sym("B") * sym("H")});
  NodeId c = g.concatenate({x, g.parameter("y", {DType::f32, {sym("M"), sym("H")}})}, 1, "c");
  CHECK(g.node(c).type.shape == Shape{sym("B"), sym("H") * Dim(2)}); // M := B off the axis
  g.addOutput(g.binary(OpKind::Add, x, b, "s"));
  g.addOutput(r);
  g.addOutput(c);
  std::vector<std::string> unified;
  for (const SymbolEquality& e : g.symbolEqualities())
    unified.push_back(e.symbol + "=" + e.value.str());
  CHECK(unified == std::vector<std::string>{"N=H", "T=B*H", "M=B"});
  verify(g);
}

TEST_CASE("dims that cannot be unified are still rejected with shape inference's message",
          "[ir][symbols]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {sym("B") * Dim(2)}});
  NodeId y = g.parameter("y", {DType::f32, {sym("S") * Dim(3)}});
  CHECK_THROWS_WITH(g.binary(OpKind::Add, x, y, "z"),
                    Catch::Contains("operand 1 has shape [3*S] but operand 0 has shape [2*B]"));
  NodeId p = g.parameter("p", {DType::f32, {4}});
  NodeId q = g.parameter("q", {DType::f32, {5}});
  CHECK_THROWS_WITH(g.binary(OpKind::Add, p, q, "pq"), Catch::Contains("broadcast it explicitly"));
  CHECK(g.symbolEqualities().empty());
}
