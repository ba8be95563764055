// f32 dots on TF32 tensor cores (issue 20, CompileOptions::tf32): the planner takes them only
// when asked and only on sm_80+; the emitted mma.sync m16n8k8 GEMM matches a reference with
// the operands rounded to tf32 (nearest, ties away) and summed exactly, on every operand layout,
// edge, batch, prologue and epilogue; its results differ from exact f32 FMA's (the test would
// not see a GEMM that silently stayed on FMA); ptxas assembles every variant without spills.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <tuple>

#include "codegen/compile.h"
#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "gemm_layouts.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ptxas_or_skip.h"
#include "runtime/output_check.h"
#include "sim_runner.h"

#include "../fusion/test_graphs.h"

using namespace weft;
using ir::DType;
using Engine = fusion::GemmPlan::Engine;
using test::Feed;

using test::gemmOf;

namespace {

DeviceSpec specFor(int sm) {
  DeviceSpec d = *deviceSpecProfile(sm >= 90 ? "h100" : sm >= 80 ? "a100" : "v100");
  d.computeCapability = sm;
  return d;
}

/// The plan with every dot planned again under --tf32.
fusion::FusionPlan withTf32(fusion::FusionPlan plan) {
  fusion::replanGemms(plan, {.tf32 = true});
  return plan;
}

fusion::FusionPlan tf32Plan(const ir::Graph& g, int sm = 90,
                            fusion::Policy policy = fusion::Policy::AStitch) {
  return withTf32(fusion::plan(g, specFor(sm), policy));
}

/// An f32 rounded to tf32 as cvt.rna.tf32.f32: the 13 low significand bits dropped, to nearest
/// with ties away from zero (on the magnitude: sign and magnitude are apart in the bits).
float roundTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x1000u) & 0xffffe000u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

TEST_CASE("tf32 rounding: nearest, ties away from zero, 10 significand bits", "[gemm][tf32]") {
  CHECK(roundTf32(1.0f) == 1.0f);
  CHECK(roundTf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f); // a tie rounds away
  CHECK(roundTf32(-1.0f - 0x1p-11f) == -1.0f - 0x1p-10f);
  CHECK(roundTf32(1.0f + 0x1p-12f) == 1.0f);
  CHECK(roundTf32(1.0f + 0x1p-11f + 0x1p-20f) == 1.0f + 0x1p-10f);
}

/// `f` applied to each element of the float inputs of `g` named in `names` (empty: all).
std::vector<HostTensor> mapInputs(const ir::Graph& g, std::vector<HostTensor> in, float (*f)(float),
                                  const std::vector<std::string>& names = {}) {
  for (size_t k = 0; k < in.size(); ++k) {
    HostTensor& t = in[k];
    const std::string& name = g.node(g.inputs()[k]).name;
    if (!ir::isFloat(t.dtype) ||
        (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()))
      continue;
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, double(f(float(t.get(i)))));
  }
  return in;
}

struct Tf32Result {
  std::vector<HostTensor> got;
  LaunchCounters counters; // the GEMM's launch
};

/// Runs a tf32 plan on the simulator and checks each element of each output against the
/// interpreter on the dot's operands (the inputs named `operands`; empty: every input) rounded
/// to tf32 (exact products, summed in double): within 2^-20 of sum |a b| (plus the epilogue's
/// inputs' magnitudes: f32 accumulation of the m16n8k8 steps, a few f32 roundings), and checks
/// that the rounding is visible: some element is further than that from exact f32.
Tf32Result checkTf32(const fusion::FusionPlan& plan, const ir::Binding& binding = {},
                     const std::vector<std::string>& operands = {}) {
  INFO(gemmOf(plan).str());
  REQUIRE(gemmOf(plan).engine == Engine::TensorCore);
  REQUIRE(gemmOf(plan).tf32);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  CHECK(m.ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(m.ptx.find("cvt.rna.tf32.f32") != std::string::npos); // fragments rounded, not cut
  auto inputs = test::makeInputs(plan.graph, binding);
  auto rounded = mapInputs(plan.graph, inputs, roundTf32, operands);
  auto want = ir::interpret(plan.graph, rounded, binding);
  auto magnitude = ir::interpret(
      plan.graph, mapInputs(plan.graph, rounded, [](float x) { return std::fabs(x); }), binding);
  auto exact = ir::interpret(plan.graph, inputs, binding);
  std::vector<LaunchCounters> counters;
  Tf32Result r;
  r.got = test::runOnSim(plan, m, inputs, binding, &counters);
  REQUIRE(r.got.size() == want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    double worst = 0, exactWorst = 0;
    int64_t n = want[o].numElements();
    for (int64_t i = 0; i < n; ++i) {
      double allowed = 0x1p-20 * magnitude[o].get(i) + 1e-30;
      worst = std::max(worst, std::fabs(r.got[o].get(i) - want[o].get(i)) / allowed);
      exactWorst = std::max(exactWorst, std::fabs(r.got[o].get(i) - exact[o].get(i)) / allowed);
    }
    INFO("output " << o << ": worst error " << worst << "x the allowed, exact f32's " << exactWorst
                   << "x");
    CHECK(worst <= 1.0);
    if (n >= 16) CHECK(exactWorst > 1.0); // tf32's rounding shows: not exact f32
  }
  REQUIRE(!counters.empty());
  r.counters = counters.back();
  return r;
}

/// Elements of `a` bit for bit equal to `b`'s.
int64_t identical(const HostTensor& a, const HostTensor& b) {
  int64_t same = 0;
  for (int64_t i = 0; i < a.numElements(); ++i)
    same += a.get(i) == b.get(i);
  return same;
}

} // namespace

TEST_CASE("tf32: an f32 dot takes tensor cores only when asked and on sm_80+",
          "[fusion][gemm][tf32]") {
  ir::Graph g = fusion::testing::dotGraph(DType::f32, {}, 128, 768, 768);
  for (int sm : {80, 90}) {
    auto off = fusion::plan(g, specFor(sm), fusion::Policy::AStitch);
    CHECK(gemmOf(off).engine == Engine::Fma); // f32 stays exact by default
    CHECK_FALSE(gemmOf(off).tf32);
    auto on = withTf32(off);
    const fusion::GemmPlan& p = gemmOf(on);
    INFO(p.str());
    CHECK(p.engine == Engine::TensorCore);
    CHECK(p.tf32);
    CHECK(p.mmaK() == 8);
    CHECK(p.blockK == 16);
    CHECK(p.sharedPad == 4);
    CHECK(p.asyncCopy); // staged as the operands lie: cp.async, double buffered
    CHECK(p.stages == 2);
    CHECK(p.sharedBytes <= 48 * 1024);
    CHECK_THAT(p.str(), Catch::Contains("mma m16n8k8 (tensor cores tf32) per warp, a by ldmatrix, "
                                        "b by ld.shared, pad 4"));
    CHECK_THAT(fusion::printFusionPlan(on), Catch::Contains("tensor cores tf32"));
  }
  // No tf32 tensor cores before sm_80: FMA, and the plan says why.
  auto v100 = tf32Plan(g, 70);
  CHECK(gemmOf(v100).engine == Engine::Fma);
  CHECK_FALSE(gemmOf(v100).tf32);
  CHECK_THAT(gemmOf(v100).str(),
             Catch::Contains("fma (tf32 asked for, but sm_70 has no tf32 tensor cores (sm_80+))"));
  // Other dtypes are planned as without the option.
  for (DType t : {DType::f16, DType::bf16, DType::f64, DType::i32}) {
    ir::Graph h = fusion::testing::dotGraph(t, {}, 128, 256, 256);
    auto plain = fusion::plan(h, specFor(90), fusion::Policy::AStitch);
    INFO(ir::dtypeName(t));
    CHECK(gemmOf(tf32Plan(h)).str() == gemmOf(plain).str());
    CHECK_FALSE(gemmOf(tf32Plan(h)).tf32);
  }
}

TEST_CASE("tf32: odd, batched and symbolic shapes match the tf32 reference",
          "[codegen][sim][gemm][tf32]") {
  struct Case {
    ir::Shape batch;
    int64_t m, k, n;
  };
  for (int sm : {80, 90})
    for (const Case& c : {Case{{}, 1, 1, 1}, Case{{}, 37, 29, 53}, Case{{}, 130, 17, 65},
                          Case{{3}, 5, 70, 9}, Case{{2, 2}, 33, 8, 31}, Case{{}, 200, 300, 3},
                          Case{{}, 128, 256, 256}, Case{{2}, 70, 96, 130}}) {
      INFO(fmt::format("sm_{} [{}] {}x{}x{}", sm, ir::shapeStr(c.batch), c.m, c.k, c.n));
      checkTf32(tf32Plan(fusion::testing::dotGraph(DType::f32, c.batch, c.m, c.k, c.n), sm));
    }
  ir::Dim B = ir::Dim::symbol("B"), S = ir::Dim::symbol("S");
  auto plan = tf32Plan(fusion::testing::dotGraph(DType::f32, {B}, S, 40, S));
  CHECK_FALSE(gemmOf(plan).tiles.isStatic());
  for (auto [b, s] : {std::pair{1, 1}, {3, 37}, {2, 129}})
    checkTf32(plan, {{"B", b}, {"S", s}});
}

TEST_CASE("tf32: every operand layout, under every policy", "[codegen][sim][gemm][tf32]") {
  using L = fusion::GemmOperand::Layout;
  struct Case {
    int64_t batch, m, k, n;
    Feed a, b;
    L la, lb;
  };
  std::vector<Case> cases = {
      {0, 37, 29, 53, Feed::Transposed, Feed::Dense, L::ColumnMajor, L::RowMajor},
      {0, 37, 29, 53, Feed::Dense, Feed::Transposed, L::RowMajor, L::ColumnMajor},
      {0, 64, 96, 128, Feed::Transposed, Feed::Transposed, L::ColumnMajor, L::ColumnMajor},
      {0, 128, 64, 256, Feed::Dense, Feed::Dense, L::RowMajor, L::RowMajor},
      {3, 33, 40, 17, Feed::Transposed, Feed::Transposed, L::ColumnMajor, L::ColumnMajor},
      {4, 64, 64, 64, Feed::Heads, Feed::HeadsT, L::RowMajor, L::ColumnMajor},
      {4, 64, 64, 64, Feed::Dense, Feed::Heads, L::RowMajor, L::RowMajor},
      {2, 30, 24, 40, Feed::Heads, Feed::HeadsT, L::RowMajor, L::ColumnMajor}};
  for (const Case& c : cases) {
    ir::Graph g = test::layoutGraph(DType::f32, c.batch, c.m, c.k, c.n, c.a, c.b);
    auto plan = tf32Plan(g);
    INFO("a " << test::feedName(c.a) << " b " << test::feedName(c.b));
    CHECK(plan.kernelCount() == 0); // read in place
    CHECK(gemmOf(plan).a.layout == c.la);
    CHECK(gemmOf(plan).b.layout == c.lb);
    codegen::CompiledModule mod = codegen::compileToPtx(plan);
    // ldmatrix (never .trans: it moves 16-bit halves) for tiles staged [outer][k]: a row-major
    // A, a column-major B; the K-major ones are read with ld.shared
    CHECK((mod.ptx.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos) ==
          (c.la == L::RowMajor));
    CHECK((mod.ptx.find("ldmatrix.sync.aligned.m8n8.x2.shared.b16") != std::string::npos) ==
          (c.lb == L::ColumnMajor));
    CHECK(mod.ptx.find(".trans") == std::string::npos);
    checkTf32(plan);
    for (auto policy : {fusion::Policy::Xla, fusion::Policy::None}) {
      auto other = tf32Plan(g, 90, policy);
      // the transposes in kernels of their own
      CHECK((other.kernelCount() > 0) == (c.a != Feed::Dense || c.b != Feed::Dense));
      checkTf32(other);
    }
  }
}

TEST_CASE("tf32: prologues and epilogues run around the tensor-core GEMM",
          "[codegen][sim][gemm][tf32]") {
  // A scale by a constant applied on load (x * 0.5, exact in tf32's rounding too) and an f16
  // weight converted to f32 on load (f16's 10 significand bits are tf32's: exact).
  for (bool transposed : {false, true}) {
    ir::Graph g;
    const int64_t M = 70, K = 96, N = 130;
    ir::NodeId x = g.parameter("x", {DType::f32, {M, K}});
    ir::NodeId w = g.parameter("w", {DType::f16, transposed ? ir::Shape{N, K} : ir::Shape{K, N}});
    if (transposed) w = g.transpose(w, {1, 0});
    ir::NodeId half = g.broadcastInDim(g.constant(DType::f32, {}, {0.5}), {M, K}, {});
    ir::NodeId xs = g.binary(ir::OpKind::Mul, x, half, "x.scaled");
    g.addOutput(g.dot(xs, g.convert(w, DType::f32, "w.f32"), "out"));
    auto plan = tf32Plan(g);
    INFO((transposed ? "transposed: " : "") << gemmOf(plan).str());
    CHECK(plan.kernelCount() == 0);
    CHECK(gemmOf(plan).a.computed());
    CHECK(gemmOf(plan).b.computed());
    CHECK(gemmOf(plan).b.sourceType == DType::f16);
    CHECK_FALSE(gemmOf(plan).asyncCopy); // computed on load: staged through registers
    checkTf32(plan);
  }
  // Epilogues (bias, bias + GELU, a residual) at each result element of the mma fragments.
  using fusion::testing::DotConsumers;
  for (auto e : {DotConsumers::Bias, DotConsumers::BiasGelu, DotConsumers::Residual}) {
    ir::Graph g = fusion::testing::dotEpilogueGraph(DType::f32, {2}, 37, 64, 70, e);
    auto plan = tf32Plan(g);
    CHECK(plan.kernelCount() == 0);
    checkTf32(plan, {}, {"a", "b"}); // the bias and residual are added in f32
  }
}

TEST_CASE("tf32: results differ from exact f32 FMA's, and move the bytes FMA's do or fewer",
          "[codegen][sim][gemm][tf32][traffic]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  struct Case {
    int64_t batch, m, k, n;
  };
  for (const Case& c : {Case{1, 64, 256, 256}, Case{1, 128, 768, 768}, Case{1, 128, 768, 3072},
                        Case{12, 128, 64, 128}}) {
    ir::Graph g = fusion::testing::dotGraph(
        DType::f32, c.batch > 1 ? ir::Shape{c.batch} : ir::Shape{}, c.m, c.k, c.n);
    auto fma = fusion::plan(g, h100, fusion::Policy::AStitch);
    auto tf32 = withTf32(fma);
    Tf32Result t = checkTf32(tf32);
    auto inputs = test::makeInputs(g);
    std::vector<LaunchCounters> counters;
    auto exact = test::runOnSim(fma, codegen::compileToPtx(fma), inputs, {}, &counters);
    int64_t elements = exact[0].numElements();
    // tf32 ran: (nearly) no element is what exact f32 FMA computes
    CHECK(identical(t.got[0], exact[0]) < elements / 10);
    int64_t compulsory = c.batch * (c.m * c.k + c.k * c.n + c.m * c.n) * 4;
    auto moved = [](const LaunchCounters& lc) {
      return double(lc.globalSectorsRead + lc.globalSectorsWritten) * 32;
    };
    INFO(fmt::format("{}x{}x{}x{}: tf32 {} bytes, fma {} bytes, compulsory {}", c.batch, c.m, c.k,
                     c.n, moved(t.counters), moved(counters.back()), compulsory));
    CHECK(moved(t.counters) <= 3.0 * double(compulsory));
    CHECK(moved(t.counters) <= 1.05 * moved(counters.back()));
    // the planner's model counts what the simulator does, within 5%
    CHECK(double(gemmOf(tf32).modeledBytes) >= 0.95 * moved(t.counters));
  }
}

TEST_CASE("tf32: every variant assembles on sm_80 and sm_90 without spills",
          "[ptxas][gemm][tf32]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  ir::Dim S = ir::Dim::symbol("S");
  std::vector<ir::Graph> graphs;
  for (auto [batch, m, k, n] : {std::tuple{ir::Shape{}, ir::Dim(64), ir::Dim(256), ir::Dim(256)},
                                {ir::Shape{}, 128, 768, 768},
                                {ir::Shape{}, 128, 768, 3072},
                                {ir::Shape{12}, 128, 64, 128},
                                {ir::Shape{}, 37, 29, 53},
                                {ir::Shape{ir::Dim::symbol("B")}, S, 40, S}})
    graphs.push_back(fusion::testing::dotGraph(DType::f32, batch, m, k, n));
  for (auto [a, b] : {std::pair{Feed::Transposed, Feed::Transposed},
                      {Feed::Dense, Feed::Dense},
                      {Feed::Heads, Feed::HeadsT},
                      {Feed::Transposed, Feed::Dense}})
    graphs.push_back(test::layoutGraph(DType::f32, 4, 128, 768, 768, a, b));
  graphs.push_back(fusion::testing::dotEpilogueGraph(DType::f32, {}, 128, 768, 768,
                                                     fusion::testing::DotConsumers::BiasGelu));
  {
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {DType::f32, {128, 768}});
    ir::NodeId w = g.transpose(g.parameter("w", {DType::f16, {3072, 768}}), {1, 0});
    g.addOutput(g.dot(x, g.convert(w, DType::f32), "out"));
    graphs.push_back(std::move(g));
  }
  for (int sm : {80, 90})
    for (const ir::Graph& g : graphs) {
      auto plan = tf32Plan(g, sm);
      INFO(gemmOf(plan).str() << " on sm_" << sm);
      REQUIRE(gemmOf(plan).tf32);
      test::checkAssemblesWithoutSpills(ptxas, plan);
    }
}

// weft run --check under --tf32: the conditioning guard moves each f32 dot's result by up to
// 2^-10 sum |a b| (runtime::CheckOptions::tf32Dots). f32's own tolerance does not allow for
// tf32's rounding, and the tf32 allowance still catches a wrong result.
TEST_CASE("tf32: the output check allows tf32's rounding only when asked, and no more",
          "[codegen][sim][gemm][tf32]") {
  ir::Graph g = fusion::testing::dotEpilogueGraph(DType::f32, {}, 70, 768, 130,
                                                  fusion::testing::DotConsumers::BiasGelu);
  auto plan = tf32Plan(g);
  auto inputs = test::makeInputs(plan.graph);
  auto got = test::runOnSim(plan, codegen::compileToPtx(plan), inputs);
  auto exact = runtime::checkOutputs(plan.graph, inputs, {}, got);
  REQUIRE(exact.size() == 1);
  INFO(exact[0].str());
  CHECK_FALSE(exact[0].passed); // tf32's rounding is beyond f32's tolerance
  auto tf32 = runtime::checkOutputs(plan.graph, inputs, {}, got, {.tf32Dots = true});
  INFO(tf32[0].str());
  CHECK(tf32[0].passed);
  // A result off by 2 % of its row's magnitude is still a mismatch.
  got[0].set(5, got[0].get(5) + 0.02 * std::fabs(got[0].get(5)) + 0.5);
  CHECK_FALSE(runtime::checkOutputs(plan.graph, inputs, {}, got, {.tf32Dots = true})[0].passed);
}

// Rounding to tf32 is integer arithmetic on the bits: a NaN whose significand is all ones (the
// GPU's canonical 0x7fffffff) must stay a NaN, not carry into the sign; an infinity stays one,
// and the largest f32 rounds to +inf, as cvt.rna.tf32.f32 rounds it.
TEST_CASE("tf32: NaN and infinity survive the rounding to tf32", "[codegen][sim][gemm][tf32]") {
  ir::Graph g = fusion::testing::dotGraph(DType::f32, {}, 37, 29, 53);
  auto plan = tf32Plan(g);
  auto inputs = test::makeInputs(plan.graph);
  auto setBits = [](HostTensor& t, int64_t i, uint32_t bits) {
    std::memcpy(t.bytes.data() + i * 4, &bits, 4);
  };
  setBits(inputs[0], 3 * 29 + 5, 0x7fffffffu);  // a[3][5]: NaN, every significand bit set
  setBits(inputs[0], 9 * 29 + 1, 0xffffffffu);  // a[9][1]: a negative one
  setBits(inputs[1], 7 * 53 + 2, 0x7f800000u);  // b[7][2]: +inf
  setBits(inputs[1], 11 * 53 + 4, 0x7f7fffffu); // b[11][4]: the largest f32, rounds to +inf
  auto got = test::runOnSim(plan, codegen::compileToPtx(plan), inputs);
  for (int64_t n = 0; n < 53; ++n) {
    CHECK(std::isnan(got[0].get(3 * 53 + n)));
    CHECK(std::isnan(got[0].get(9 * 53 + n)));
  }
  for (int64_t m : {0, 1, 2, 20, 36}) {
    INFO("row " << m);
    CHECK(std::isinf(got[0].get(m * 53 + 2)));
    CHECK(std::isinf(got[0].get(m * 53 + 4))); // tf32(FLT_MAX) = +inf
    CHECK(std::isfinite(got[0].get(m * 53 + 3)));
  }
}
