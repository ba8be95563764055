// Versions of a generic plan (fusion/plan_versions.h) and the symbol ranges they are planned
// under (ir/symbol_ranges.h): which sizes each version serves, that the heuristics follow the
// class while correctness facts only use a guard's upper bound, and that a static graph has one.
#include <catch2/catch.hpp>

#include "fusion/plan.h"
#include "fusion/plan_versions.h"
#include "ir/symbol_ranges.h"
#include "plan_queries.h"
#include "test_graphs.h"
#include "weft/device_spec.h"

using namespace weft;
using ir::SymbolRange;

namespace {

/// The bias-gradient column sum over B rows: [B, 768] → [768].
ir::Graph biasGrad() {
  ir::Graph g;
  ir::NodeId dy = g.parameter("dy", {DType::f32, {ir::Dim::symbol("B"), 768}});
  g.addOutput(g.reduce(ir::ReduceKind::Sum, dy, {0}, "dbias"));
  return g;
}

/// RMS norm over rows of 4096, B rows.
ir::Graph rmsRows(int64_t rowLength = 4096) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {ir::Dim::symbol("B"), rowLength}});
  ir::NodeId sq = g.binary(ir::OpKind::Mul, x, x, "sq");
  ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, sq, {1}, "sum");
  ir::NodeId r = g.unary(ir::OpKind::Rsqrt, sum, "r");
  ir::NodeId rb = g.broadcastInDim(r, {ir::Dim::symbol("B"), rowLength}, {0}, "rb");
  g.addOutput(g.binary(ir::OpKind::Mul, x, rb, "y"));
  return g;
}

std::vector<ir::ShapeGuard> guardsOf(const std::vector<fusion::PlanVersion>& v) {
  std::vector<ir::ShapeGuard> guards;
  for (const auto& x : v)
    guards.push_back(x.guard);
  return guards;
}

/// The vector width of the first row reduce in the version of `v` that `binding` runs; 0 if
/// it has none.
int rowVectorWidth(const std::vector<fusion::PlanVersion>& v,
                   const std::vector<ir::ShapeGuard>& guards, const ir::Binding& binding) {
  const fusion::FusionPlan& p = v[fusion::versionFor(guards, binding)].plan;
  for (const fusion::Step& s : p.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&s))
      if (const auto* m = std::get_if<fusion::RowReduceMapping>(&k->groups[0].mapping))
        return m->vectorWidth;
  return 0;
}

/// Softmax over the rows of x [B, S], both symbolic; a 2-byte x is computed in f32 and the
/// result rounded back to its type.
ir::Graph softmaxRows(DType t) {
  ir::Graph g;
  ir::Shape shape = {ir::Dim::symbol("B"), ir::Dim::symbol("S")};
  ir::NodeId x = g.parameter("x", {t, shape});
  ir::NodeId e = g.unary(ir::OpKind::Exp, t == DType::f32 ? x : g.convert(x, DType::f32));
  ir::NodeId sum = g.broadcastInDim(g.reduce(ir::ReduceKind::Sum, e, {1}), shape, {0});
  ir::NodeId y = g.binary(ir::OpKind::Div, e, sum, t == DType::f32 ? "y" : "");
  g.addOutput(t == DType::f32 ? y : g.convert(y, t, "y"));
  return g;
}

int splitOf(const fusion::FusionPlan& p) {
  for (const fusion::Step& s : p.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&s))
      for (const fusion::Group& gr : k->groups)
        if (fusion::splitFactor(gr.mapping) > 1) return fusion::splitFactor(gr.mapping);
  return 1;
}

} // namespace

TEST_CASE("size classes partition the sizes, and ranges give likely sizes and bounds") {
  std::vector<SymbolRange> classes = ir::sizeClasses();
  REQUIRE(classes.size() == 7);
  CHECK(classes.front().lo == 1);
  CHECK(classes.back().hi == SymbolRange::kUnbounded);
  for (size_t i = 1; i < classes.size(); ++i)
    CHECK(classes[i].lo == classes[i - 1].hi + 1);
  CHECK(ir::likelySize({3, 16}) == 8);
  CHECK(ir::likelySize({17, 128}) == 64);
  CHECK(ir::likelySize({1, SymbolRange::kUnbounded}) == ir::kLargeSize);
  CHECK(ir::likelySize({5, 5}) == 5);

  ir::SymbolRanges r{{"B", {3, 16}}};
  ir::Dim twoB = ir::Dim(2) * ir::Dim::symbol("B");
  CHECK(ir::assumedSize(twoB, r) == 16);
  CHECK(ir::assumedSize(twoB, {}) == 2 * ir::kLargeSize); // unconstrained: large
  CHECK(ir::assumedSize(ir::Dim(7), r) == 7);
  CHECK(ir::upperBoundOr(twoB, r, -1) == 32);
  CHECK(ir::upperBoundOr(twoB, {}, -1) == -1); // no bound without a guard
  CHECK(ir::upperBoundOr(ir::Dim::symbol("S"), r, -1) == -1);
  CHECK(ir::admits(r, {{"B", 16}}));
  CHECK_FALSE(ir::admits(r, {{"B", 17}}));
  CHECK(ir::admits(r, {{"S", 100000}})); // S unconstrained
  CHECK(ir::rangesStr(r) == "B in [3, 16]");
  CHECK(ir::rangesStr({}) == "any size");
}

TEST_CASE("a static graph has one version, planned with no ranges") {
  auto v = fusion::planVersions(fusion::testing::columnReduce(4096, 256), *deviceSpecProfile("h100"),
                                fusion::Policy::AStitch);
  REQUIRE(v.size() == 1);
  CHECK(v[0].plan.symbolRanges.empty());
  CHECK(v[0].guard.empty());
}

TEST_CASE("a column sum over few rows is not split across blocks in its small version") {
  auto v = fusion::planVersions(biasGrad(), *deviceSpecProfile("h100"), fusion::Policy::AStitch);
  REQUIRE(v.size() >= 2);
  // One symbol: guards are one range each, in order from 1; the last serves the rest and was
  // planned unbounded.
  CHECK(v.front().guard.size() == 1);
  CHECK(v.front().guard[0].at("B").lo == 1);
  for (size_t i = 1; i + 1 < v.size(); ++i)
    CHECK(v[i].guard[0].at("B").lo == v[i - 1].guard[0].at("B").hi + 1);
  CHECK(v.back().guard.empty());
  CHECK(v.back().plan.symbolRanges.at("B").hi == SymbolRange::kUnbounded);
  std::vector<ir::ShapeGuard> guards = guardsOf(v);
  size_t small = fusion::versionFor(guards, {{"B", 16}});
  size_t large = fusion::versionFor(guards, {{"B", 16384}});
  CHECK(small != large);
  // 16 rows fit one block's tile rows: no split, no grid barrier. 16384 assumed large rows
  // over 24 column tiles: split to fill the wave.
  CHECK(splitOf(v[small].plan) == 1);
  CHECK(splitOf(v[large].plan) > 1);
  CHECK(fusion::versionFor(guards, {{"B", 1 << 30}}) == v.size() - 1);
}

TEST_CASE("a guarded version keeps values in registers across grid barriers") {
  // Rows of 2^15: few of them stream slowly from a block each, so the cost model splits them
  // (rows of 4096 are too short for a split to pay for its grid barrier). On an a100: an h100
  // shares such rows in thread-block clusters instead, for every B (one version).
  auto v = fusion::planVersions(rmsRows(1 << 15), *deviceSpecProfile("a100"),
                                fusion::Policy::AStitch);
  REQUIRE(v.size() >= 2);
  auto reusesX = [](const fusion::FusionPlan& p) {
    for (const fusion::Step& s : p.steps)
      if (const auto* k = std::get_if<fusion::KernelPlan>(&s))
        for (const auto& [id, pl] : k->placement)
          if (p.graph.node(id).name == "x" && pl.registerReuse) return true;
    return false;
  };
  // B ≤ 2: two long rows split across a wave of blocks, the sum behind a grid barrier; at
  // most 2 × split tiles, one per block, so each block's threads can hold their x from the
  // sum to the scaling (the guard's upper bound; without it the tiles are unbounded).
  CHECK(splitOf(v.front().plan) > 1);
  CHECK(reusesX(v.front().plan));
}

TEST_CASE("two symbols are versioned independently, rows by their divisibility") {
  // Softmax over [B, S]: the row length S decides warp or block per row and, when a multiple
  // of 4, 128-bit vectors; B (the rows) decides nothing here.
  auto v = fusion::planVersions(softmaxRows(DType::f32), *deviceSpecProfile("h100"),
                                fusion::Policy::AStitch);
  std::vector<ir::ShapeGuard> guards = guardsOf(v);
  auto vectorOf = [&](const ir::Binding& b) { return rowVectorWidth(v, guards, b); };
  // Divisible rows run a divisible version, whatever B's class among those of more than 8192
  // elements; a tiny tensor (B = 1) takes 32 lanes of width 1 for code size (thread_mapping.cc).
  CHECK(vectorOf({{"B", 1000}, {"S", 64}}) == 4);
  CHECK(vectorOf({{"B", 5000}, {"S", 64}}) == 4);
  CHECK(vectorOf({{"B", 1}, {"S", 64}}) == 1);
  CHECK(vectorOf({{"B", 1}, {"S", 63}}) == 1);
  CHECK(fusion::versionFor(guards, {{"B", 1000}, {"S", 64}}) ==
        fusion::versionFor(guards, {{"B", 5000}, {"S", 64}}));
  CHECK(ir::guardStr(v.front().guard).find("S % 4 == 0") != std::string::npos);
}

TEST_CASE("a bf16 row of symbolic length gets 16-byte vectors where it is a multiple of 8") {
  // bf16 softmax over [B, S]: S a multiple of 8 runs 8 elements (16 bytes) per access, a
  // multiple of 4 only 4, any other length 1; the multiples of 8 are tried first.
  auto v = fusion::planVersions(softmaxRows(DType::bf16), *deviceSpecProfile("h100"),
                                fusion::Policy::AStitch);
  std::vector<ir::ShapeGuard> guards = guardsOf(v);
  auto vectorOf = [&](const ir::Binding& b) { return rowVectorWidth(v, guards, b); };
  CHECK(vectorOf({{"B", 4096}, {"S", 512}}) == 8);
  CHECK(vectorOf({{"B", 4096}, {"S", 516}}) == 4);
  CHECK(vectorOf({{"B", 4096}, {"S", 514}}) == 1);
  CHECK(ir::guardStr(v.front().guard).find("S % 8 == 0") != std::string::npos);
  // An f32 graph has no such versions.
  for (const fusion::PlanVersion& pv : fusion::planVersions(
           softmaxRows(DType::f32), *deviceSpecProfile("h100"), fusion::Policy::AStitch))
    CHECK(ir::guardStr(pv.guard).find("% 8") == std::string::npos);
}

TEST_CASE("a declared range plans only the classes inside it, the last up to its upper bound") {
  const DeviceSpec spec = *deviceSpecProfile("h100");
  ir::Graph g = biasGrad();
  std::vector<fusion::PlanVersion> open = fusion::planVersions(g, spec, fusion::Policy::AStitch);
  ir::SymbolRanges declared{{"B", SymbolRange{1, 100, 1}}};
  std::vector<fusion::PlanVersion> bounded =
      fusion::planVersions(g, spec, fusion::Policy::AStitch, declared);
  REQUIRE_FALSE(bounded.empty());
  CHECK(bounded.size() <= open.size());
  // Every plan is made for sizes within 1..100: no class past it is planned...
  for (const fusion::PlanVersion& v : bounded) {
    INFO(ir::rangesStr(v.plan.symbolRanges));
    CHECK(v.plan.symbolRanges.at("B").hi <= 100);
    for (const ir::SymbolRanges& box : v.guard)
      CHECK(box.at("B").hi <= 100);
  }
  // ...and the last, which serves every binding no other admits, is planned for [17, 100]:
  // it may rely on B <= 100, which the compiled graph enforces on every binding.
  CHECK(bounded.back().guard.empty());
  CHECK(bounded.back().plan.symbolRanges.at("B") == (SymbolRange{17, 100, 1}));
  // Sizes in the classes the range holds whole pick the plans they get without it.
  for (int64_t b : {1, 2, 3, 16}) {
    INFO("B = " << b);
    const auto& withRange = bounded[fusion::versionFor(guardsOf(bounded), {{"B", b}})].plan;
    const auto& without = open[fusion::versionFor(guardsOf(open), {{"B", b}})].plan;
    CHECK(splitOf(withRange) == splitOf(without));
  }
}

TEST_CASE("a declared range of only the empty size (0..0) plans as if undeclared") {
  // No size class holds 0 (a generic program never serves it: weft::compile specialises a
  // binding of 0), so 0..0 leaves nothing to restrict the classes to.
  const DeviceSpec spec = *deviceSpecProfile("h100");
  ir::Graph g = biasGrad();
  std::vector<fusion::PlanVersion> open = fusion::planVersions(g, spec, fusion::Policy::AStitch);
  ir::SymbolRanges empty{{"B", SymbolRange{0, 0, 1}}};
  std::vector<fusion::PlanVersion> v = fusion::planVersions(g, spec, fusion::Policy::AStitch, empty);
  REQUIRE(v.size() == open.size());
  CHECK(v.back().guard.empty());
  CHECK(v.back().plan.symbolRanges.at("B") == open.back().plan.symbolRanges.at("B"));
}
