#include <catch2/catch.hpp>

#include <cmath>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "passes/constant_folding.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;
using namespace weft::passes;

TEST_CASE("constant folding evaluates chains of small constant ops", "[passes][constant_folding]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(3)}});
  NodeId c = g.constant(DType::f32, {Dim(3)}, {1, 2, 3}, "c");
  NodeId two = g.scalar(DType::f32, 2, "two");
  NodeId twos = g.broadcastInDim(two, {Dim(3)}, {}, "twos");
  NodeId m = g.binary(OpKind::Mul, c, twos, "m");
  NodeId total = g.reduce(ReduceKind::Sum, m, {0}, "total");
  NodeId totals = g.broadcastInDim(total, {Dim(3)}, {}, "totals");
  NodeId y = g.binary(OpKind::Add, x, g.binary(OpKind::Sub, m, totals, "d"), "y");
  g.addOutput(y);
  Graph s = foldConstants(g);
  verify(s);
  CHECK(printGraph(s) == "graph main(%x: f32[3]) {\n"
                         "  %c = constant[[1, 2, 3]]() : f32[3]\n"
                         "  %two = constant[2]() : f32[]\n"
                         "  %twos = constant[2]() : f32[3]\n"
                         "  %m = constant[[2, 4, 6]]() : f32[3]\n"
                         "  %total = constant[12]() : f32[]\n"
                         "  %totals = constant[12]() : f32[3]\n"
                         "  %d = constant[[-10, -8, -6]]() : f32[3]\n"
                         "  %y = add(%x, %d) : f32[3]\n"
                         "  return %y\n"
                         "}\n");
  CHECK(sameGraph(foldConstants(s), s));
}

TEST_CASE("folding rounds to the op's dtype as the interpreter does",
          "[passes][constant_folding]") {
  Graph g;
  NodeId one = g.scalar(DType::f16, 1, "one");
  NodeId tiny = g.scalar(DType::f16, std::ldexp(1.0, -11), "tiny"); // half an f16 ulp at 1
  NodeId three = g.scalar(DType::f32, 3, "three");
  g.setOutputs({g.binary(OpKind::Add, one, tiny, "sum"), g.convert(three, DType::i8, "i"),
                g.unary(OpKind::Exp, g.scalar(DType::f32, 1, "e1"), "e")});
  Graph s = foldConstants(g);
  CHECK(s.node(*s.find("sum")).attr<ConstantAttrs>().values == std::vector<double>{1});
  CHECK(s.node(*s.find("i")).kind == OpKind::Constant);
  CHECK(s.node(*s.find("i")).type.dtype == DType::i8);
  CHECK(s.node(*s.find("e")).attr<ConstantAttrs>().values ==
        std::vector<double>{static_cast<float>(std::exp(1.0))});
}

TEST_CASE("elementwise ops of splats fold whatever the shape, symbolic included",
          "[passes][constant_folding]") {
  Graph g;
  Shape s{Dim::symbol("B"), Dim(4096)};
  NodeId c = g.constant(DType::f32, s, {3}, "c");
  NodeId d = g.constant(DType::f32, s, {4}, "d");
  NodeId h = g.binary(OpKind::Mul, c, d, "h");
  NodeId big = g.constant(DType::f32, {Dim(2048)}, {1}, "big");
  NodeId r = g.reduce(ReduceKind::Sum, big, {0}, "r"); // 2048 elements in: too big to fold
  g.setOutputs({h, r});
  Graph f = foldConstants(g);
  verify(f);
  CHECK(printNode(f, f.node(*f.find("h"))) == "%h = constant[12]() : f32[B, 4096]");
  CHECK(f.node(*f.find("r")).kind == OpKind::Reduce);
}

TEST_CASE("an integer division by zero is left for whoever runs the graph",
          "[passes][constant_folding]") {
  Graph g;
  NodeId a = g.constant(DType::i32, {Dim(2)}, {4, 5}, "a");
  NodeId b = g.constant(DType::i32, {Dim(2)}, {2, 0}, "b");
  g.addOutput(g.binary(OpKind::Div, a, b, "q"));
  Graph s = foldConstants(g);
  CHECK(s.node(*s.find("q")).kind == OpKind::Div);
  CHECK(sameGraph(s, g));
}

TEST_CASE("folding does not change what the graph computes", "[passes][constant_folding]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(2), Dim(3)}});
  NodeId io = g.iota(DType::f32, {Dim(2), Dim(3)}, 1, "io"); // no operands: stays
  NodeId k = g.constant(DType::f32, {Dim(3), Dim(2)}, {1, 2, 3, 4, 5, 6}, "k");
  NodeId kt = g.transpose(k, {1, 0}, "kt");
  NodeId kp = g.pad(g.slice(kt, {0, 1}, {2, -1}, {1, 1}, "ks"), {0, 1}, {0, 0}, 0.5, "kp");
  NodeId y = g.binary(OpKind::Add, g.binary(OpKind::Mul, x, kp, "xk"), io, "y");
  g.addOutput(y);
  Graph s = foldConstants(g);
  CHECK(s.node(*s.find("io")).kind == OpKind::Iota);
  CHECK(s.node(*s.find("kp")).attr<ConstantAttrs>().values ==
        std::vector<double>{0.5, 3, 5, 0.5, 4, 6});
  HostTensor in(DType::f32, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    in.set(i, static_cast<double>(i) - 2.5);
  CHECK(interpret(s, {in})[0].bytes == interpret(g, {in})[0].bytes);
}
