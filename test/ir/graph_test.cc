#include <catch2/catch.hpp>
#include <limits>

#include "ir/graph.h"
#include "ir/printer.h"
#include "weft/error.h"
#include "weft/tensor.h"

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

TEST_CASE("shape arithmetic past int64 is an InputError naming the op, never a wrapped size",
          "[ir][graph]") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(4), Dim(6)}});
  // 4 + 2 * (2^63 - 1) wrapped to 2: eval then wrote far past the buffer.
  CHECK_THROWS_WITH(g.pad(x, {kMax, 0}, {kMax, 0}, 0.0, "p"),
                    "op \"p\" (pad): axis 0: size 4 padded by low 9223372036854775807 and high "
                    "9223372036854775807 does not fit in int64");
  CHECK_THROWS_WITH(g.pad(x, {kMax - 3, 0}, {0, 0}, 0.0, "p"),
                    Catch::Contains("does not fit in int64"));
  CHECK_THROWS_WITH(g.pad(x, {kMax - 4, 0}, {0, 0}, 0.0, "p"),
                    "op \"p\" (pad): size overflow: 9223372036854775807 * 6 does not fit in "
                    "int64");
  NodeId v = g.parameter("v", {DType::f32, {Dim(4)}});
  CHECK(g.node(g.pad(v, {kMax - 4}, {0}, 0.0)).type.str() == "f32[9223372036854775807]");
  // A stride near 2^63: limit - start + stride - 1 overflowed to a negative size.
  CHECK(g.node(g.slice(v, {1}, {4}, {kMax})).type.str() == "f32[1]");
  CHECK(g.node(g.slice(v, {0}, {4}, {kMax})).type.str() == "f32[1]");
  CHECK(g.node(g.slice(v, {4}, {4}, {kMax})).type.str() == "f32[0]");
  CHECK(g.node(g.slice(v, {0}, {4}, {3})).type.str() == "f32[2]");
  // Concatenated sizes past int64.
  NodeId big = g.parameter("big", {DType::i8, {Dim(kMax / 2 + 1)}});
  CHECK_THROWS_WITH(g.concatenate({big, big}, 0, "c"),
                    Catch::StartsWith("op \"c\" (concatenate): axis 0 sizes") &&
                        Catch::Contains("add up past int64"));
}

TEST_CASE("a host tensor whose bytes overflow is refused, not allocated at a wrapped size",
          "[ir][tensor]") {
  // 2^62 f32 elements are 2^64 bytes: the product wrapped to 0 and set() wrote past it.
  CHECK_THROWS_AS(HostTensor(DType::f32, {int64_t(1) << 62}), InputError);
  CHECK_THROWS_WITH(HostTensor(DType::f32, {int64_t(1) << 62}),
                    "tensor f32[4611686018427387904]: its byte size does not fit in int64");
  CHECK_THROWS_WITH(HostTensor(DType::f32, {2, -3}), "tensor f32[2, -3]: negative size -3");
  CHECK(HostTensor(DType::f16, {3, 5}).byteSize() == 30);
}

TEST_CASE("the printed graph keeps one value per line whatever its names hold", "[ir][graph]") {
  Graph g;
  auto x = g.parameter("x\ny", {DType::f32, {2}});
  g.setOutputs({g.unary(OpKind::Exp, x, "e\t\x7f")});
  CHECK(printGraph(g, "g") ==
        "graph g(%x\\ny: f32[2]) {\n  %e\\t\\x7f = exp(%x\\ny) : f32[2]\n  return %e\\t\\x7f\n}\n");
  CHECK(escapeControl("plain, \"quoted\" and é") == "plain, \"quoted\" and é");
}

TEST_CASE("a concatenation of nothing is an InputError naming the op", "[ir][graph]") {
  Graph g;
  CHECK_THROWS_AS(g.concatenate({}, 0, "c"), InputError);
}
