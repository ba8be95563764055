// The rules of `weft run --check` (runtime::checkTensor, docs/graph-format.md): NaN matches
// NaN, infinities match themselves, each element is judged by its own reference value and
// conditioning, never by the tensor's largest element; integers match exactly.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "runtime/output_check.h"

using namespace weft;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor f32(const std::vector<double>& v) {
  HostTensor t(DType::f32, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.set(int64_t(i), v[i]);
  return t;
}

bool passes(const std::vector<double>& expected, const std::vector<double>& actual) {
  return runtime::checkTensor("y", f32(expected), f32(actual)).passed;
}

} // namespace

TEST_CASE("output check: NaN matches NaN and nothing else", "[runtime][check]") {
  CHECK(passes({kNaN, 1}, {kNaN, 1}));
  CHECK_FALSE(passes({kNaN}, {0}));
  CHECK_FALSE(passes({1}, {kNaN}));
  CHECK_FALSE(passes({kNaN}, {kInf}));
}

TEST_CASE("output check: infinities match only themselves", "[runtime][check]") {
  CHECK(passes({kInf, -kInf}, {kInf, -kInf}));
  CHECK_FALSE(passes({kInf}, {3.4e38}));
  CHECK_FALSE(passes({kInf}, {-kInf}));
  CHECK_FALSE(passes({kInf}, {0}));
  CHECK_FALSE(passes({-kInf}, {kNaN}));
  CHECK_FALSE(passes({3.4e38}, {kInf}));
}

TEST_CASE("output check: each element's tolerance comes from its own value", "[runtime][check]") {
  // sin(1e9) = 0.5458 computed badly as 1.486, next to a 1e6: wrong however large the neighbour.
  CHECK_FALSE(passes({1e6, 0.5458}, {1e6, 1.486}));
  CHECK(passes({1e6, 0.5458}, {1e6 * (1 + 1e-5), 0.5458 * (1 + 1e-5)}));
  CHECK_FALSE(passes({1e6}, {1e6 * (1 + 1e-3)}));
}

TEST_CASE("output check: the conditioning spread widens one element only", "[runtime][check]") {
  std::vector<double> spread{0.0, 0.5};
  HostTensor e = f32({1, 1}), a = f32({1, 1.4});
  CHECK(runtime::checkTensor("y", e, a, &spread).passed);
  HostTensor b = f32({1.4, 1});
  CHECK_FALSE(runtime::checkTensor("y", e, b, &spread).passed);
}

TEST_CASE("output check: integers match exactly, all 64 bits", "[runtime][check]") {
  HostTensor e(DType::i64, {1}), a(DType::i64, {1});
  e.setInt(0, (int64_t(1) << 53) + 1);
  a.setInt(0, int64_t(1) << 53);
  CHECK_FALSE(runtime::checkTensor("y", e, a).passed);
  a.setInt(0, (int64_t(1) << 53) + 1);
  CHECK(runtime::checkTensor("y", e, a).passed);
}

TEST_CASE("output check: a graph that yields NaN legitimately passes end to end", "[runtime][check]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {3}});
  g.addOutput(g.unary(ir::OpKind::Log, x, "y"));
  HostTensor in = f32({-1, 0, 1});
  HostTensor out = f32({kNaN, -kInf, 0});
  auto checks = runtime::checkOutputs(g, {in}, {}, {out});
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].passed);
  HostTensor wrong = f32({0, -kInf, 0});
  CHECK_FALSE(runtime::checkOutputs(g, {in}, {}, {wrong})[0].passed);
}

TEST_CASE("output check: an exact max or min is not perturbed apart from its operands",
          "[runtime][check]") {
  // sqrt(rowmax(x) - x) is exactly 0 at each row's maximum, on every device. Perturbing the
  // max's result by 2 ulps on its own made that difference negative and its sqrt NaN, which a
  // column sum then spread to every output: every element was unchecked and any result passed
  // (cluster_200). A max or min reduction rounds nothing; only its operands' roundings count.
  constexpr int64_t kRows = 8, kCols = 16;
  ir::Graph g;
  ir::Shape shape = {kRows, kCols};
  auto x = g.parameter("x", {DType::f32, shape});
  auto m = g.reduce(ir::ReduceKind::Max, x, {1}, "m");
  auto d = g.unary(ir::OpKind::Sqrt, g.binary(ir::OpKind::Sub, g.broadcastInDim(m, shape, {0}), x));
  auto col = g.reduce(ir::ReduceKind::Sum, d, {0}, "col");
  g.addOutput(g.binary(ir::OpKind::Mul, x, g.broadcastInDim(col, shape, {1}), "y"));
  HostTensor in(DType::f32, {kRows, kCols});
  for (int64_t i = 0; i < in.numElements(); ++i)
    in.set(i, std::sin(double(i) * 0.37) * 2);
  std::vector<HostTensor> expected = ir::interpret(g, {in});
  auto checks = runtime::checkOutputs(g, {in}, {}, expected);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].passed);
  CHECK(checks[0].unchecked == 0);
  HostTensor wrong = expected[0];
  wrong.set(5, wrong.get(5) * 1.01 + 0.01);
  auto bad = runtime::checkOutputs(g, {in}, {}, {wrong});
  CHECK_FALSE(bad[0].passed);
  CHECK(bad[0].mismatches == 1);
}

TEST_CASE("output check: a logsumexp over an empty axis is checked as the -inf it is",
          "[runtime][check]") {
  // The noise that stands for a logsumexp's rounding is scaled by max |x| + 1, which over no
  // elements was -inf: -inf plus -inf * e is NaN, so every element was unchecked and any
  // result passed.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f16, {16, 0}});
  g.addOutput(g.reduce(ir::ReduceKind::LogSumExp, x, {1}, "l"));
  HostTensor in(DType::f16, {16, 0});
  std::vector<HostTensor> expected = ir::interpret(g, {in});
  auto checks = runtime::checkOutputs(g, {in}, {}, expected);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].passed);
  CHECK(checks[0].unchecked == 0);
  HostTensor wrong = expected[0];
  wrong.set(3, 0.0);
  CHECK_FALSE(runtime::checkOutputs(g, {in}, {}, {wrong})[0].passed);
}

TEST_CASE("output check: elements held to no bound are counted and said", "[runtime][check]") {
  std::vector<double> spread{kInf, 0.0, kInf};
  HostTensor e = f32({1, 2, 3}), a = f32({7, 2, -9});
  runtime::TensorCheck c = runtime::checkTensor("y", e, a, &spread);
  CHECK(c.passed);
  CHECK(c.unchecked == 2);
  CHECK(c.worstIndex == 1); // the worst of the checked ones, not an unchecked one
  CHECK(c.str().find("2 of 3 element(s) unchecked") != std::string::npos);
  HostTensor b = f32({1, 2.5, 3});
  CHECK_FALSE(runtime::checkTensor("y", e, b, &spread).passed);
}

TEST_CASE("output check: a sum whose terms cancel is held to its terms' rounding",
          "[runtime][check]") {
  // The row sums of concat(x, -x) are exactly 0 in the reference (it adds in double); a device
  // adding in f32 in its own order leaves a few ulps of the terms (random graph 302402: 5.7e-6
  // where the terms were about 20). Perturbing the sum's result by ulps of 0 allowed nothing,
  // and every policy's correct result failed the check. A sum now also moves by ulps of the sum
  // of its terms' magnitudes; an error of the terms' size still fails.
  constexpr int64_t kRows = 4, kCols = 33;
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {kRows, kCols}});
  auto both = g.concatenate({x, g.unary(ir::OpKind::Neg, x)}, 1);
  g.addOutput(g.reduce(ir::ReduceKind::Sum, both, {1}, "s"));
  HostTensor in(DType::f32, {kRows, kCols});
  for (int64_t i = 0; i < in.numElements(); ++i)
    in.set(i, 20 + std::sin(double(i)));
  std::vector<HostTensor> expected = ir::interpret(g, {in});
  REQUIRE(expected[0].get(0) == 0);
  HostTensor reordered = expected[0];
  reordered.set(0, 5.7220459e-06);
  reordered.set(1, -3.8146973e-06);
  CHECK(runtime::checkOutputs(g, {in}, {}, {reordered})[0].passed);
  HostTensor wrong = expected[0];
  wrong.set(2, 0.02); // a term's 0.1%: no order of f32 additions leaves that
  auto bad = runtime::checkOutputs(g, {in}, {}, {wrong});
  CHECK_FALSE(bad[0].passed);
  CHECK(bad[0].mismatches == 1);
}
