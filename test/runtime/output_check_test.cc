// The rules of `weft run --check` (runtime::checkTensor, docs/graph-format.md): NaN matches
// NaN, infinities match themselves, each element is judged by its own reference value and
// conditioning, never by the tensor's largest element; integers match exactly.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ir/graph.h"
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
