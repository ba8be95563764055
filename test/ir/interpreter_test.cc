#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::ir;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

HostTensor tensor(DType t, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostTensor h(t, std::move(shape));
  REQUIRE(static_cast<size_t>(h.numElements()) == values.size());
  for (size_t i = 0; i < values.size(); ++i)
    h.set(static_cast<int64_t>(i), values[i]);
  return h;
}

std::vector<double> elements(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.push_back(t.get(i));
  return out;
}

/// Runs g and returns the elements of its only output.
std::vector<double> run(Graph& g, const std::vector<HostTensor>& inputs, const Binding& b = {}) {
  auto outs = interpret(g, inputs, b);
  REQUIRE(outs.size() == 1);
  return elements(outs[0]);
}

/// Builds "out = kind(x)" over a parameter of `t`, runs it on `values`.
std::vector<double> unaryOf(OpKind kind, DType t, const std::vector<double>& values) {
  Graph g;
  NodeId x = g.parameter("x", {t, {Dim(static_cast<int64_t>(values.size()))}});
  g.addOutput(g.unary(kind, x));
  return run(g, {tensor(t, {static_cast<int64_t>(values.size())}, values)});
}

std::vector<double> binaryOf(OpKind kind, DType t, const std::vector<double>& a,
                             const std::vector<double>& b) {
  Graph g;
  auto n = static_cast<int64_t>(a.size());
  NodeId x = g.parameter("a", {t, {Dim(n)}});
  NodeId y = g.parameter("b", {t, {Dim(n)}});
  g.addOutput(g.binary(kind, x, y, "out"));
  return run(g, {tensor(t, {n}, a), tensor(t, {n}, b)});
}

std::vector<double> compareOf(CompareDir dir, const std::vector<double>& a,
                              const std::vector<double>& b) {
  Graph g;
  auto n = static_cast<int64_t>(a.size());
  NodeId x = g.parameter("a", {DType::f32, {Dim(n)}});
  NodeId y = g.parameter("b", {DType::f32, {Dim(n)}});
  g.addOutput(g.compare(dir, x, y));
  return run(g, {tensor(DType::f32, {n}, a), tensor(DType::f32, {n}, b)});
}

bool isNaN(double v) {
  return std::isnan(v);
}

/// x[i, j, k] = 12 i + 4 j + k over [2, 3, 4].
std::vector<double> iota234() {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i)
    v.push_back(i);
  return v;
}

} // namespace

TEST_CASE("unary ops compute in double and round to f32", "[ir][interpreter]") {
  CHECK(unaryOf(OpKind::Neg, DType::f32, {1.5, -2}) == std::vector<double>{-1.5, 2});
  CHECK(unaryOf(OpKind::Abs, DType::f32, {-2, 3}) == std::vector<double>{2, 3});
  CHECK(unaryOf(OpKind::Exp, DType::f32, {0, 1}) ==
        std::vector<double>{1, static_cast<float>(std::exp(1.0))});
  CHECK(unaryOf(OpKind::Log, DType::f32, {1, 0}) == std::vector<double>{0, -kInf});
  CHECK(unaryOf(OpKind::Sqrt, DType::f32, {4, 2.25}) == std::vector<double>{2, 1.5});
  CHECK(unaryOf(OpKind::Rsqrt, DType::f32, {4, 0.25}) == std::vector<double>{0.5, 2});
  CHECK(unaryOf(OpKind::Reciprocal, DType::f32, {4, 0}) == std::vector<double>{0.25, kInf});
  CHECK(unaryOf(OpKind::Floor, DType::f32, {-1.5, 1.5}) == std::vector<double>{-2, 1});
  CHECK(unaryOf(OpKind::Ceil, DType::f32, {-1.5, 1.5}) == std::vector<double>{-1, 2});
  CHECK(unaryOf(OpKind::Sigmoid, DType::f32, {0}) == std::vector<double>{0.5});
  CHECK(unaryOf(OpKind::Tanh, DType::f32, {0}) == std::vector<double>{0});
  CHECK(unaryOf(OpKind::Erf, DType::f32, {0, 1}) ==
        std::vector<double>{0, static_cast<float>(0.8427007929497149)});
  CHECK(unaryOf(OpKind::Sin, DType::f32, {0}) == std::vector<double>{0});
  CHECK(unaryOf(OpKind::Cos, DType::f32, {0}) == std::vector<double>{1});
  // sqrt(2) in double rounded once to f32
  CHECK(unaryOf(OpKind::Sqrt, DType::f32, {2})[0] == static_cast<float>(1.4142135623730951));
}

TEST_CASE("sign of zero is zero and of NaN is NaN", "[ir][interpreter]") {
  auto s = unaryOf(OpKind::Sign, DType::f32, {-3, -0.0, 0, 2.5, kNaN});
  CHECK(s[0] == -1);
  CHECK(s[1] == 0);
  CHECK(s[2] == 0);
  CHECK(s[3] == 1);
  CHECK(isNaN(s[4]));
  CHECK(unaryOf(OpKind::Sign, DType::i32, {-7, 0, 9}) == std::vector<double>{-1, 0, 1});
}

TEST_CASE("not, and, or are logical on bool and bitwise on integers", "[ir][interpreter]") {
  CHECK(unaryOf(OpKind::Not, DType::boolean, {0, 1}) == std::vector<double>{1, 0});
  CHECK(unaryOf(OpKind::Not, DType::i32, {5, 0}) == std::vector<double>{-6, -1});
  CHECK(binaryOf(OpKind::And, DType::i32, {6, 12}, {3, 10}) == std::vector<double>{2, 8});
  CHECK(binaryOf(OpKind::Or, DType::i32, {6, 12}, {3, 1}) == std::vector<double>{7, 13});
  CHECK(binaryOf(OpKind::And, DType::boolean, {0, 1, 1}, {1, 0, 1}) ==
        std::vector<double>{0, 0, 1});
  CHECK(binaryOf(OpKind::Or, DType::boolean, {0, 1, 0}, {1, 0, 0}) == std::vector<double>{1, 1, 0});
}

TEST_CASE("arithmetic binary ops", "[ir][interpreter]") {
  CHECK(binaryOf(OpKind::Add, DType::f32, {1, 2}, {0.5, -3}) == std::vector<double>{1.5, -1});
  CHECK(binaryOf(OpKind::Sub, DType::f32, {1, 2}, {0.5, -3}) == std::vector<double>{0.5, 5});
  CHECK(binaryOf(OpKind::Mul, DType::f32, {1.5, 2}, {4, -3}) == std::vector<double>{6, -6});
  CHECK(binaryOf(OpKind::Pow, DType::f32, {2, 9}, {10, 0.5}) == std::vector<double>{1024, 3});
  CHECK(binaryOf(OpKind::Div, DType::f32, {1, -1}, {4, 0}) == std::vector<double>{0.25, -kInf});
  CHECK(isNaN(binaryOf(OpKind::Div, DType::f32, {0}, {0})[0]));
  // 1/3 computed in double, rounded once to f32
  CHECK(binaryOf(OpKind::Div, DType::f32, {1}, {3})[0] == static_cast<float>(1.0 / 3.0));
  CHECK(binaryOf(OpKind::Rem, DType::f32, {-7.5, 7.5}, {2, -2}) == std::vector<double>{-1.5, 1.5});
}

TEST_CASE("max and min propagate NaN", "[ir][interpreter]") {
  auto mx = binaryOf(OpKind::Max, DType::f32, {1, 5, kNaN, 1}, {2, 3, 1, kNaN});
  CHECK(mx[0] == 2);
  CHECK(mx[1] == 5);
  CHECK(isNaN(mx[2]));
  CHECK(isNaN(mx[3]));
  auto mn = binaryOf(OpKind::Min, DType::f32, {1, 5, kNaN, 1}, {2, 3, 1, kNaN});
  CHECK(mn[0] == 1);
  CHECK(mn[1] == 3);
  CHECK(isNaN(mn[2]));
  CHECK(isNaN(mn[3]));
}

TEST_CASE("integer div and rem truncate toward zero like C", "[ir][interpreter]") {
  CHECK(binaryOf(OpKind::Div, DType::i32, {7, -7, 7, -7, 6}, {2, 2, -2, -2, 3}) ==
        std::vector<double>{3, -3, -3, 3, 2});
  CHECK(binaryOf(OpKind::Rem, DType::i32, {7, -7, 7, -7, 6}, {2, 2, -2, -2, 3}) ==
        std::vector<double>{1, -1, 1, -1, 0});
  CHECK(binaryOf(OpKind::Div, DType::i64, {-9007199254740992.0}, {2}) ==
        std::vector<double>{-4503599627370496.0});
}

TEST_CASE("integer division by zero is an error naming the op and element", "[ir][interpreter]") {
  CHECK_THROWS_AS(binaryOf(OpKind::Div, DType::i32, {1, 2}, {1, 0}), InputError);
  CHECK_THROWS_WITH(
      binaryOf(OpKind::Div, DType::i32, {1, 2}, {1, 0}),
      Catch::StartsWith("op \"out\" (div): integer division by zero at element [1] of operand 1"));
  CHECK_THROWS_WITH(binaryOf(OpKind::Rem, DType::i8, {1, 2}, {0, 1}),
                    Catch::StartsWith("op \"out\" (rem): integer division by zero at element [0]"));
}

TEST_CASE("integer arithmetic wraps around at the dtype's width", "[ir][interpreter]") {
  CHECK(binaryOf(OpKind::Add, DType::i8, {100, -100, 127}, {100, -100, 1}) ==
        std::vector<double>{-56, 56, -128});
  CHECK(unaryOf(OpKind::Neg, DType::i8, {-128}) == std::vector<double>{-128});
  CHECK(unaryOf(OpKind::Abs, DType::i32, {-2147483648.0}) == std::vector<double>{-2147483648.0});
  CHECK(binaryOf(OpKind::Div, DType::i32, {-2147483648.0}, {-1}) ==
        std::vector<double>{-2147483648.0});
  CHECK(binaryOf(OpKind::Mul, DType::i32, {65536}, {65536}) == std::vector<double>{0});
}

TEST_CASE("i64 is exact past 2^53 and wraps at 2^63", "[ir][interpreter]") {
  Graph g;
  NodeId a = g.parameter("a", {DType::i64, {Dim(2)}});
  NodeId b = g.parameter("b", {DType::i64, {Dim(2)}});
  g.setOutputs({g.binary(OpKind::Add, a, b), g.reduce(ReduceKind::Sum, a, {0})});
  HostTensor ta(DType::i64, {2}), tb(DType::i64, {2});
  ta.setInt(0, INT64_MAX);
  ta.setInt(1, (int64_t(1) << 53) + 1);
  tb.setInt(0, 1);
  tb.setInt(1, 2);
  auto outs = interpret(g, {ta, tb});
  CHECK(outs[0].getInt(0) == INT64_MIN);
  CHECK(outs[0].getInt(1) == (int64_t(1) << 53) + 3);
  CHECK(outs[1].getInt(0) == INT64_MIN + (int64_t(1) << 53));
}

TEST_CASE("integer converts wrap between integers and saturate from floats", "[ir][interpreter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::i32, {Dim(3)}});
  g.setOutputs({g.convert(x, DType::i8), g.convert(x, DType::f16)});
  auto outs = interpret(g, {tensor(DType::i32, {3}, {300, -129, 2049})});
  CHECK(elements(outs[0]) == std::vector<double>{44, 127, 1});
  CHECK(elements(outs[1]) == std::vector<double>{300, -129, 2048});
}

TEST_CASE("max and min order -0 below +0 (IEEE 754-2019)", "[ir][interpreter]") {
  auto mx = binaryOf(OpKind::Max, DType::f32, {-0.0, 0.0}, {0.0, -0.0});
  CHECK(!std::signbit(mx[0]));
  CHECK(!std::signbit(mx[1]));
  auto mn = binaryOf(OpKind::Min, DType::f32, {-0.0, 0.0}, {0.0, -0.0});
  CHECK(std::signbit(mn[0]));
  CHECK(std::signbit(mn[1]));
}

TEST_CASE("compare directions, including NaN", "[ir][interpreter]") {
  std::vector<double> a{1, 2, 3}, b{2, 2, 2};
  CHECK(compareOf(CompareDir::EQ, a, b) == std::vector<double>{0, 1, 0});
  CHECK(compareOf(CompareDir::NE, a, b) == std::vector<double>{1, 0, 1});
  CHECK(compareOf(CompareDir::LT, a, b) == std::vector<double>{1, 0, 0});
  CHECK(compareOf(CompareDir::LE, a, b) == std::vector<double>{1, 1, 0});
  CHECK(compareOf(CompareDir::GT, a, b) == std::vector<double>{0, 0, 1});
  CHECK(compareOf(CompareDir::GE, a, b) == std::vector<double>{0, 1, 1});
  CHECK(compareOf(CompareDir::EQ, {kNaN}, {kNaN}) == std::vector<double>{0});
  CHECK(compareOf(CompareDir::NE, {kNaN}, {kNaN}) == std::vector<double>{1});
  CHECK(compareOf(CompareDir::LT, {kNaN}, {1}) == std::vector<double>{0});
}

TEST_CASE("select and clamp(lo, x, hi)", "[ir][interpreter]") {
  Graph g;
  NodeId p = g.parameter("p", {DType::boolean, {Dim(3)}});
  NodeId x = g.parameter("x", {DType::f32, {Dim(3)}});
  NodeId lo = g.scalar(DType::f32, 0);
  NodeId hi = g.scalar(DType::f32, 1);
  NodeId lob = g.broadcastInDim(lo, {Dim(3)}, {});
  NodeId hib = g.broadcastInDim(hi, {Dim(3)}, {});
  NodeId c = g.clamp(lob, x, hib);
  NodeId s = g.select(p, x, c);
  g.setOutputs({c, s});
  auto outs =
      interpret(g, {tensor(DType::boolean, {3}, {1, 0, 1}), tensor(DType::f32, {3}, {-1, 0.5, 2})});
  REQUIRE(outs.size() == 2);
  CHECK(elements(outs[0]) == std::vector<double>{0, 0.5, 1});
  CHECK(elements(outs[1]) == std::vector<double>{-1, 0.5, 2});
}

TEST_CASE("convert saturates and truncates into integers and rounds into f16",
          "[ir][interpreter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(6)}});
  g.setOutputs({g.convert(x, DType::i8), g.convert(x, DType::boolean), g.convert(x, DType::f16)});
  auto outs = interpret(g, {tensor(DType::f32, {6}, {300.7, -1.9, kNaN, -500, 0, 2049})});
  CHECK(elements(outs[0]) == std::vector<double>{127, -1, 0, -128, 0, 127});
  CHECK(elements(outs[1]) == std::vector<double>{1, 1, 1, 1, 0, 1});
  auto h = elements(outs[2]);
  CHECK(h[0] == 300.75); // f16 spacing at 256..512 is 0.25
  CHECK(h[5] == 2048);   // 2049 is halfway between 2048 and 2050: ties to even
}

TEST_CASE("f16 and bf16 results round to nearest even on every op", "[ir][interpreter]") {
  const double u = std::ldexp(1.0, -11); // half an f16 ulp at 1
  CHECK(binaryOf(OpKind::Add, DType::f16, {1, 1}, {u, 3 * u}) == std::vector<double>{1, 1 + 4 * u});
  CHECK(binaryOf(OpKind::Add, DType::f16, {60000}, {10000}) == std::vector<double>{kInf});
  const double v = std::ldexp(1.0, -8); // half a bf16 ulp at 1
  CHECK(binaryOf(OpKind::Add, DType::bf16, {1, 1, 256}, {v, 3 * v, 1}) ==
        std::vector<double>{1, 1 + 4 * v, 256});
  CHECK(binaryOf(OpKind::Add, DType::bf16, {256}, {3}) ==
        std::vector<double>{260}); // 259 -> 260 (spacing 2, tie even)
  // A constant stores its value rounded to its dtype.
  Graph g;
  g.addOutput(g.constant(DType::f16, {Dim(2)}, {0.1, 65519}));
  auto c = run(g, {});
  CHECK(c[0] == static_cast<double>(halfToFloat(floatToHalf(0.1f))));
  CHECK(c[1] == 65504);
}

TEST_CASE("reductions accumulate in double and round once", "[ir][interpreter]") {
  // Summed in f16 one step at a time, 2048 + 1 would stay 2048; in double the sum is 2052.
  Graph g;
  NodeId x = g.parameter("x", {DType::f16, {Dim(5)}});
  g.addOutput(g.reduce(ReduceKind::Sum, x, {0}));
  CHECK(run(g, {tensor(DType::f16, {5}, {2048, 1, 1, 1, 1})}) == std::vector<double>{2052});
}

TEST_CASE("reduce over trailing, leading and non-trailing axes", "[ir][interpreter]") {
  auto reduceOf = [](ReduceKind k, std::vector<int64_t> axes) {
    Graph g;
    NodeId x = g.parameter("x", {DType::f32, {Dim(2), Dim(3), Dim(4)}});
    g.addOutput(g.reduce(k, x, std::move(axes)));
    return run(g, {tensor(DType::f32, {2, 3, 4}, iota234())});
  };
  // sum_j (12 i + 4 j + k) = 36 i + 12 + 3 k
  CHECK(reduceOf(ReduceKind::Sum, {1}) == std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57});
  // sum_{i,k} = 48 + 32 j + 12
  CHECK(reduceOf(ReduceKind::Sum, {0, 2}) == std::vector<double>{60, 92, 124});
  CHECK(reduceOf(ReduceKind::Sum, {0, 1, 2}) == std::vector<double>{276});
  CHECK(reduceOf(ReduceKind::Max, {0}) ==
        std::vector<double>{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  CHECK(reduceOf(ReduceKind::Min, {2}) == std::vector<double>{0, 4, 8, 12, 16, 20});
  CHECK(reduceOf(ReduceKind::Prod, {0})[5] == 5.0 * 17.0);
}

TEST_CASE("reduce any/all, NaN in max, and empty axes give the identity", "[ir][interpreter]") {
  Graph g;
  NodeId b = g.parameter("b", {DType::boolean, {Dim(2), Dim(3)}});
  g.setOutputs({g.reduce(ReduceKind::Any, b, {1}), g.reduce(ReduceKind::All, b, {1}),
                g.reduce(ReduceKind::All, b, {0})});
  auto outs = interpret(g, {tensor(DType::boolean, {2, 3}, {0, 1, 0, 1, 1, 1})});
  CHECK(elements(outs[0]) == std::vector<double>{1, 1});
  CHECK(elements(outs[1]) == std::vector<double>{0, 1});
  CHECK(elements(outs[2]) == std::vector<double>{0, 1, 0});

  Graph h;
  NodeId x = h.parameter("x", {DType::f32, {Dim(3)}});
  h.addOutput(h.reduce(ReduceKind::Max, x, {0}));
  CHECK(isNaN(run(h, {tensor(DType::f32, {3}, {1, kNaN, 3})})[0]));

  Graph e;
  NodeId z = e.parameter("z", {DType::f32, {Dim(2), Dim(0)}});
  NodeId zi = e.parameter("zi", {DType::i32, {Dim(2), Dim(0)}});
  e.setOutputs({e.reduce(ReduceKind::Sum, z, {1}), e.reduce(ReduceKind::Max, z, {1}),
                e.reduce(ReduceKind::Min, zi, {1})});
  auto eo = interpret(e, {HostTensor(DType::f32, {2, 0}), HostTensor(DType::i32, {2, 0})});
  CHECK(elements(eo[0]) == std::vector<double>{0, 0});
  CHECK(elements(eo[1]) == std::vector<double>{-kInf, -kInf});
  CHECK(elements(eo[2]) == std::vector<double>{2147483647.0, 2147483647.0});
  // Integer max/min over nothing: the dtype's MIN and MAX, not a saturated infinity.
  Graph f;
  NodeId zb = f.parameter("z", {DType::i8, {Dim(2), Dim(0)}});
  f.setOutputs({f.reduce(ReduceKind::Max, zb, {1})});
  CHECK(elements(interpret(f, {HostTensor(DType::i8, {2, 0})})[0]) == std::vector<double>{-128, -128});
}

TEST_CASE("reduce logsumexp does not overflow and keeps infinities and NaN",
          "[ir][interpreter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(6), Dim(3)}});
  g.addOutput(g.reduce(ReduceKind::LogSumExp, x, {1}));
  std::vector<double> out = run(g, {tensor(DType::f32, {6, 3},
                                           {0, 0, 0,              // log 3
                                            1000, 1000, -kInf,    // 1000 + log 2, no overflow
                                            -kInf, -kInf, -kInf,  // empty sum: -inf
                                            kInf, 1, kInf,        // +inf
                                            kNaN, 1, 2,           // NaN
                                            -1000, -1001, -1002})}); // no underflow to -inf
  CHECK(out[0] == Approx(std::log(3.0)));
  CHECK(out[1] == Approx(1000 + std::log(2.0)));
  CHECK(out[2] == -kInf);
  CHECK(out[3] == kInf);
  CHECK(isNaN(out[4]));
  CHECK(out[5] == Approx(-1000 + std::log(1 + std::exp(-1.0) + std::exp(-2.0))));
  // Over nothing: the identity, -inf.
  Graph e;
  NodeId z = e.parameter("z", {DType::f32, {Dim(2), Dim(0)}});
  e.addOutput(e.reduce(ReduceKind::LogSumExp, z, {1}));
  CHECK(elements(interpret(e, {HostTensor(DType::f32, {2, 0})})[0]) ==
        std::vector<double>{-kInf, -kInf});
  // Floats only.
  Graph i;
  NodeId n = i.parameter("n", {DType::i32, {Dim(2)}});
  CHECK_THROWS_WITH(i.reduce(ReduceKind::LogSumExp, n, {0}),
                    Catch::Contains("reduce logsumexp does not take dtype i32; it takes floats"));
}

TEST_CASE("broadcast_in_dim maps operand dims and stretches size-1 dims", "[ir][interpreter]") {
  Graph g;
  NodeId row = g.parameter("row", {DType::f32, {Dim(3)}});
  NodeId col = g.parameter("col", {DType::f32, {Dim(2)}});
  NodeId one = g.parameter("one", {DType::f32, {Dim(1), Dim(3)}});
  NodeId s = g.scalar(DType::f32, 7);
  g.setOutputs(
      {g.broadcastInDim(row, {Dim(2), Dim(3)}, {1}), g.broadcastInDim(col, {Dim(2), Dim(3)}, {0}),
       g.broadcastInDim(one, {Dim(2), Dim(3)}, {0, 1}), g.broadcastInDim(s, {Dim(2), Dim(2)}, {}),
       g.broadcastInDim(col, {Dim(2), Dim(2), Dim(2)}, {1})});
  auto outs = interpret(g, {tensor(DType::f32, {3}, {1, 2, 3}), tensor(DType::f32, {2}, {10, 20}),
                            tensor(DType::f32, {1, 3}, {4, 5, 6})});
  CHECK(elements(outs[0]) == std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(elements(outs[1]) == std::vector<double>{10, 10, 10, 20, 20, 20});
  CHECK(elements(outs[2]) == std::vector<double>{4, 5, 6, 4, 5, 6});
  CHECK(elements(outs[3]) == std::vector<double>{7, 7, 7, 7});
  CHECK(elements(outs[4]) == std::vector<double>{10, 10, 20, 20, 10, 10, 20, 20});
  CHECK(outs[4].shape == std::vector<int64_t>{2, 2, 2});
}

TEST_CASE("reshape, transpose and iota", "[ir][interpreter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(2), Dim(3)}});
  NodeId y = g.parameter("y", {DType::f32, {Dim(2), Dim(3), Dim(4)}});
  g.setOutputs({g.reshape(x, {Dim(3), Dim(2)}), g.transpose(x, {1, 0}), g.transpose(y, {2, 0, 1}),
                g.iota(DType::i32, {Dim(2), Dim(3)}, 1), g.iota(DType::f32, {Dim(2), Dim(3)}, 0)});
  auto outs = interpret(g, {tensor(DType::f32, {2, 3}, {0, 1, 2, 3, 4, 5}),
                            tensor(DType::f32, {2, 3, 4}, iota234())});
  CHECK(outs[0].shape == std::vector<int64_t>{3, 2});
  CHECK(elements(outs[0]) == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(elements(outs[1]) == std::vector<double>{0, 3, 1, 4, 2, 5});
  // result[k, i, j] = y[i, j, k] = 12 i + 4 j + k
  auto t = elements(outs[2]);
  CHECK(outs[2].shape == std::vector<int64_t>{4, 2, 3});
  CHECK(t[0] == 0);
  CHECK(t[1] == 4);
  CHECK(t[3] == 12);
  CHECK(t[6] == 1);                  // [1, 0, 0]
  CHECK(t[3 * 6 + 1 * 3 + 2] == 23); // [3, 1, 2] -> 12 + 8 + 3
  CHECK(elements(outs[3]) == std::vector<double>{0, 1, 2, 0, 1, 2});
  CHECK(elements(outs[4]) == std::vector<double>{0, 0, 0, 1, 1, 1});
}

TEST_CASE("slice, pad and concatenate", "[ir][interpreter]") {
  Graph g;
  NodeId v = g.parameter("v", {DType::f32, {Dim(10)}});
  NodeId m = g.parameter("m", {DType::f32, {Dim(2), Dim(2)}});
  NodeId c = g.parameter("c", {DType::f32, {Dim(2), Dim(1)}});
  NodeId y = g.parameter("y", {DType::f32, {Dim(2), Dim(3), Dim(4)}});
  g.setOutputs({g.slice(v, {1}, {-1}, {3}), g.slice(y, {1, 0, 1}, {2, 3, 4}, {1, 2, 2}),
                g.pad(m, {1, 0}, {0, 2}, 9), g.concatenate({m, c}, 1), g.concatenate({m, m}, 0)});
  std::vector<double> ten;
  for (int i = 0; i < 10; ++i)
    ten.push_back(i);
  auto outs =
      interpret(g, {tensor(DType::f32, {10}, ten), tensor(DType::f32, {2, 2}, {1, 2, 3, 4}),
                    tensor(DType::f32, {2, 1}, {5, 6}), tensor(DType::f32, {2, 3, 4}, iota234())});
  CHECK(elements(outs[0]) == std::vector<double>{1, 4, 7});
  // y[1, {0, 2}, {1, 3}] = 12 + {0, 8} + {1, 3}
  CHECK(outs[1].shape == std::vector<int64_t>{1, 2, 2});
  CHECK(elements(outs[1]) == std::vector<double>{13, 15, 21, 23});
  CHECK(outs[2].shape == std::vector<int64_t>{3, 4});
  CHECK(elements(outs[2]) == std::vector<double>{9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9});
  CHECK(elements(outs[3]) == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK(elements(outs[4]) == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4});
}

TEST_CASE("dot is a batched matmul accumulated in double", "[ir][interpreter]") {
  Graph g;
  NodeId a = g.parameter("a", {DType::f32, {Dim(2), Dim(3)}});
  NodeId b = g.parameter("b", {DType::f32, {Dim(3), Dim(2)}});
  NodeId p = g.parameter("p", {DType::f32, {Dim(2), Dim(1), Dim(2)}});
  NodeId q = g.parameter("q", {DType::f32, {Dim(2), Dim(2), Dim(1)}});
  g.setOutputs({g.dot(a, b), g.dot(p, q)});
  auto outs = interpret(g, {tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                            tensor(DType::f32, {3, 2}, {7, 8, 9, 10, 11, 12}),
                            tensor(DType::f32, {2, 1, 2}, {1, 2, 3, 4}),
                            tensor(DType::f32, {2, 2, 1}, {5, 6, 7, 8})});
  CHECK(elements(outs[0]) == std::vector<double>{58, 64, 139, 154});
  CHECK(outs[1].shape == std::vector<int64_t>{2, 1, 1});
  CHECK(elements(outs[1]) == std::vector<double>{17, 53});
}

TEST_CASE("symbolic dims are evaluated under the binding", "[ir][interpreter]") {
  Graph g;
  Dim B = Dim::symbol("B");
  NodeId x = g.parameter("x", {DType::f32, {B, Dim(2)}});
  NodeId s = g.reduce(ReduceKind::Sum, x, {1}, "s");
  NodeId whole = g.slice(x, {0, 1}, {-1, 2}, {1, 1}, "whole");
  g.setOutputs({s, whole});
  auto outs = interpret(g, {tensor(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6})}, {{"B", 3}});
  CHECK(outs[0].shape == std::vector<int64_t>{3});
  CHECK(elements(outs[0]) == std::vector<double>{3, 7, 11});
  CHECK(elements(outs[1]) == std::vector<double>{2, 4, 6});
  CHECK_THROWS_AS(interpret(g, {tensor(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6})}), InputError);
  CHECK_THROWS_WITH(interpret(g, {tensor(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6})}),
                    Catch::Contains("symbol \"B\" is not bound") && Catch::Contains("\"x\""));
  CHECK_THROWS_WITH(interpret(g, {tensor(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6})}, {{"B", 4}}),
                    "input \"x\": expected f32[4, 2], got f32[3, 2]");
}

TEST_CASE("inputs are checked against the parameters", "[ir][interpreter]") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(16), Dim(768)}});
  NodeId y = g.parameter("y", {DType::f16, {Dim(2)}});
  g.setOutputs({x, y});
  HostTensor good(DType::f32, {16, 768}), half(DType::f16, {2});
  CHECK_THROWS_WITH(interpret(g, {HostTensor(DType::f32, {16, 767}), half}),
                    "input \"x\": expected f32[16, 768], got f32[16, 767]");
  CHECK_THROWS_WITH(interpret(g, {good, HostTensor(DType::f32, {2})}),
                    "input \"y\": expected f16[2], got f32[2]");
  CHECK_THROWS_WITH(interpret(g, {good}), "the graph takes 2 input(s) (x, y), got 1");
  HostTensor truncated = half;
  truncated.bytes.pop_back();
  CHECK_THROWS_WITH(interpret(g, {good, truncated}),
                    Catch::Contains("input \"y\"") && Catch::Contains("bytes"));
  // Parameters may be outputs: they come back unchanged.
  half.set(1, 3.5);
  auto outs = interpret(g, {good, half});
  CHECK(elements(outs[1]) == std::vector<double>{0, 3.5});
}

namespace {
/// y = (x - mean) * rsqrt(var + eps) * gamma + beta over the last axis of [rows, cols].
Graph layerNorm(Dim rows, int64_t cols) {
  Graph g;
  Shape s{rows, Dim(cols)};
  NodeId x = g.parameter("x", {DType::f32, s});
  NodeId gamma = g.parameter("gamma", {DType::f32, {Dim(cols)}});
  NodeId beta = g.parameter("beta", {DType::f32, {Dim(cols)}});
  NodeId n = g.scalar(DType::f32, static_cast<double>(cols));
  NodeId mean =
      g.binary(OpKind::Div, g.reduce(ReduceKind::Sum, x, {1}), g.broadcastInDim(n, {rows}, {}));
  NodeId centered = g.binary(OpKind::Sub, x, g.broadcastInDim(mean, s, {0}));
  NodeId sq = g.binary(OpKind::Mul, centered, centered);
  NodeId var =
      g.binary(OpKind::Div, g.reduce(ReduceKind::Sum, sq, {1}), g.broadcastInDim(n, {rows}, {}));
  NodeId eps = g.broadcastInDim(g.scalar(DType::f32, 1e-5), {rows}, {});
  NodeId inv = g.unary(OpKind::Rsqrt, g.binary(OpKind::Add, var, eps));
  NodeId normed = g.binary(OpKind::Mul, centered, g.broadcastInDim(inv, s, {0}));
  NodeId scaled = g.binary(OpKind::Mul, normed, g.broadcastInDim(gamma, s, {1}));
  g.addOutput(g.binary(OpKind::Add, scaled, g.broadcastInDim(beta, s, {1}), "y"));
  return g;
}
} // namespace

TEST_CASE("layer norm end to end on the interpreter", "[ir][interpreter]") {
  Graph g = layerNorm(Dim::symbol("B"), 4);
  auto y = interpret(g,
                     {tensor(DType::f32, {2, 4}, {1, 2, 3, 4, 5, 5, 5, 5}),
                      tensor(DType::f32, {4}, {1, 1, 2, 2}), tensor(DType::f32, {4}, {0, 0, 0, 1})},
                     {{"B", 2}});
  // row 0: mean 2.5, var 1.25; row 1: mean 5, var 0 -> beta
  auto v = elements(y[0]);
  double r = 1.0 / std::sqrt(1.25 + 1e-5);
  CHECK(v[0] == Approx(-1.5 * r).epsilon(1e-6));
  CHECK(v[1] == Approx(-0.5 * r).epsilon(1e-6));
  CHECK(v[2] == Approx(2 * 0.5 * r).epsilon(1e-6));
  CHECK(v[3] == Approx(2 * 1.5 * r + 1).epsilon(1e-6));
  CHECK(std::vector<double>(v.begin() + 4, v.end()) == std::vector<double>{0, 0, 0, 1});
}

TEST_CASE("a [16384, 768] layer norm interprets in about a second", "[ir][interpreter][.perf]") {
  Graph g = layerNorm(Dim(16384), 768);
  HostTensor x(DType::f32, {16384, 768}), gamma(DType::f32, {768}), beta(DType::f32, {768});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, static_cast<double>(i % 7));
  for (int64_t i = 0; i < 768; ++i)
    gamma.set(i, 1);
  auto start = std::chrono::steady_clock::now();
  auto y = interpret(g, {x, gamma, beta});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("layer norm [16384, 768]: " << seconds << " s");
  CHECK(y[0].numElements() == 16384 * 768);
}

TEST_CASE("a value past the interpreter's memory is an InputError naming the op, not bad_alloc",
          "[ir][interpreter]") {
  // 2^31 elements (16 GiB of doubles) from one input element: refused before allocating.
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {1}});
  NodeId wide = g.broadcastInDim(x, {int64_t(1) << 16, int64_t(1) << 15}, {1}, "wide");
  g.addOutput(g.reduce(ReduceKind::Sum, wide, {0, 1}, "total"));
  CHECK_THROWS_WITH(interpret(g, {tensor(DType::f32, {1}, {1.0})}),
                    Catch::Contains("op \"wide\"") &&
                        Catch::Contains("holds values of up to 1073741824 elements; this one has "
                                        "2147483648 (65536 x 32768)"));
}
