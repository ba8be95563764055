// The GEMM behind every dot's library step (issue 20, part 2): results against the
// interpreter on odd, batched, symbolic and every-dtype shapes under each policy; bytes moved
// at the sizes against the operands and result; ptxas with no spills on sm_80/sm_90.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_explainer.h"
#include "fusion/plan_printer.h"
#include "gemm_layouts.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ptxas_or_skip.h"
#include "sim_runner.h"

#include "../fusion/test_graphs.h"

using namespace weft;
using ir::DType;

using test::gemmOf;

namespace {

using fusion::testing::dotGraph;

/// Runs the plan on the simulator against the interpreter; returns the dot's counters.
LaunchCounters check(const fusion::FusionPlan& plan, double tolerance,
                     const ir::Binding& binding = {}) {
  INFO(gemmOf(plan).str());
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  auto inputs = test::makeInputs(plan.graph, binding);
  auto want = ir::interpret(plan.graph, inputs, binding);
  std::vector<LaunchCounters> counters;
  auto got = test::runOnSim(plan, m, inputs, binding, &counters);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(test::maxError(got[i], want[i]) <= tolerance);
  REQUIRE(!counters.empty());
  return counters.back();
}

double toleranceFor(DType t) {
  return t == DType::f16 || t == DType::bf16 ? 2e-2 : t == DType::f32 ? 1e-4 : 1e-9;
}

DeviceSpec specFor(int sm) {
  DeviceSpec d = *deviceSpecProfile(sm == 80 ? "a100" : "h100");
  d.computeCapability = sm;
  return d;
}

} // namespace

TEST_CASE("gemm: odd shapes, every edge guarded, match the interpreter", "[codegen][sim][gemm]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  struct Case {
    ir::Shape batch;
    int64_t m, k, n;
  };
  for (const Case& c : {Case{{}, 1, 1, 1}, Case{{}, 37, 29, 53}, Case{{}, 130, 17, 65},
                        Case{{3}, 5, 70, 9}, Case{{2, 2}, 33, 8, 31}, Case{{}, 200, 300, 3}}) {
    ir::Graph g = dotGraph(DType::f32, c.batch, c.m, c.k, c.n);
    INFO(fmt::format("[{}] {}x{}x{}", ir::shapeStr(c.batch), c.m, c.k, c.n));
    check(fusion::plan(g, h100, fusion::Policy::AStitch), 1e-4);
  }
}

TEST_CASE("gemm: every dtype dots exactly or within its rounding", "[codegen][sim][gemm]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  for (DType t :
       {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i8, DType::i32, DType::i64}) {
    INFO(ir::dtypeName(t));
    ir::Graph g = dotGraph(t, {2}, 70, 96, 130);
    check(fusion::plan(g, h100, fusion::Policy::AStitch), toleranceFor(t));
  }
}

TEST_CASE("gemm: the same kernel under every policy", "[codegen][sim][gemm]") {
  DeviceSpec a100 = *deviceSpecProfile("a100");
  ir::Graph g = dotGraph(DType::f32, {}, 64, 96, 48);
  for (auto policy : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch})
    check(fusion::plan(g, a100, policy), 1e-4);
}

TEST_CASE("gemm: symbolic dims are i64 parameters, any binding", "[codegen][sim][gemm]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  ir::Dim B = ir::Dim::symbol("B"), S = ir::Dim::symbol("S");
  ir::Graph g = dotGraph(DType::f32, {B}, S, 40, S);
  auto plan = fusion::plan(g, h100, fusion::Policy::AStitch);
  CHECK_FALSE(gemmOf(plan).tiles.isStatic());
  CHECK(gemmOf(plan).maxBlocks > 0);
  for (auto [b, s] : {std::pair{1, 1}, {3, 37}, {2, 129}})
    check(plan, 1e-4, {{"B", b}, {"S", s}});
}

// Issue 20's sizes: each GEMM moves at most 3x its operands and result (the naive kernel,
// one output per thread, moved 53x on the first: 21 MB for 0.39 MB).
TEST_CASE("gemm: bytes moved at most 3x the operands and result", "[codegen][sim][gemm][traffic]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  struct Case {
    ir::Shape batch;
    int64_t m, k, n;
  };
  for (const Case& c : {Case{{}, 64, 256, 256}, Case{{}, 128, 768, 768}, Case{{}, 128, 768, 3072},
                        Case{{12}, 128, 64, 128}}) {
    ir::Graph g = dotGraph(DType::f32, c.batch, c.m, c.k, c.n);
    auto plan = fusion::plan(g, h100, fusion::Policy::AStitch);
    LaunchCounters lc = check(plan, 1e-4);
    int64_t batch = c.batch.empty() ? 1 : c.batch[0].size();
    int64_t compulsory = batch * (c.m * c.k + c.k * c.n + c.m * c.n) * 4;
    double moved = double(lc.globalSectorsRead + lc.globalSectorsWritten) * 32;
    INFO(fmt::format("{}x{}x{}x{}: {} bytes for {} ({:.2f}x)", batch, c.m, c.k, c.n, moved,
                     compulsory, moved / double(compulsory)));
    CHECK(moved <= 3.0 * double(compulsory));
    // the planner's model of the traffic is what the simulator counts, within 5%
    CHECK(double(gemmOf(plan).modeledBytes) >= 0.95 * moved);
  }
}

TEST_CASE("gemm: f16 and bf16 on tensor cores (mma.sync, ldmatrix) match the interpreter",
          "[codegen][sim][gemm]") {
  // h100 takes wgmma by default (test_gemm_wgmma); mma.sync on sm_90 when asked
  for (const char* profile : {"a100", "h100"})
    for (DType t : {DType::f16, DType::bf16}) {
      INFO(profile << " " << ir::dtypeName(t));
      for (auto [batch, m, k, n] : {std::tuple{ir::Shape{}, 37, 29, 53},
                                    {ir::Shape{3}, 70, 96, 130},
                                    {ir::Shape{}, 128, 256, 256}}) {
        ir::Graph g = dotGraph(t, batch, m, k, n);
        auto plan = fusion::plan(g, *deviceSpecProfile(profile), fusion::Policy::AStitch);
        fusion::replanGemms(plan, {.warpgroupMma = false});
        REQUIRE(gemmOf(plan).engine == fusion::GemmPlan::Engine::TensorCore);
        codegen::CompiledModule mod = codegen::compileToPtx(plan);
        CHECK(mod.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32") != std::string::npos);
        CHECK(mod.ptx.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
        CHECK(mod.ptx.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") != std::string::npos);
        if (gemmOf(plan).asyncCopy) {
          CHECK(mod.ptx.find("cp.async.") != std::string::npos);
          CHECK(mod.ptx.find("cp.async.wait_group 1") != std::string::npos);
        }
        check(plan, toleranceFor(t));
      }
    }
}

TEST_CASE("gemm: tensor-core GEMMs at the issue's sizes move at most 3x",
          "[codegen][sim][gemm][traffic]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  for (auto [batch, m, k, n] :
       {std::tuple{int64_t(1), 128, 768, 768}, {int64_t(12), 128, 64, 128}}) {
    ir::Graph g = dotGraph(DType::bf16, batch > 1 ? ir::Shape{batch} : ir::Shape{}, m, k, n);
    auto plan = fusion::plan(g, h100, fusion::Policy::AStitch);
    LaunchCounters lc = check(plan, 2e-2);
    int64_t compulsory = batch * (m * k + k * n + m * n) * 2;
    double moved = double(lc.globalSectorsRead + lc.globalSectorsWritten) * 32;
    INFO(moved << " bytes for " << compulsory);
    CHECK(moved <= 3.0 * double(compulsory));
    // the planner's model counts the result's sectors as the simulator does
    CHECK(double(gemmOf(plan).modeledBytes) >= 0.95 * moved);
  }
}

TEST_CASE("gemm: every variant assembles on sm_80 and sm_90 without spills", "[ptxas][gemm]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  struct Case {
    DType t;
    ir::Shape batch;
    ir::Dim m, k, n;
  };
  ir::Dim S = ir::Dim::symbol("S");
  std::vector<Case> cases = {{DType::f32, {}, 64, 256, 256},
                             {DType::f32, {}, 128, 768, 768},
                             {DType::f32, {}, 128, 768, 3072},
                             {DType::f32, {12}, 128, 64, 128},
                             {DType::f32, {}, 37, 29, 53},
                             {DType::f32, {ir::Dim::symbol("B")}, S, 40, S},
                             {DType::f16, {}, 128, 768, 768},
                             {DType::bf16, {}, 128, 768, 3072},
                             {DType::f16, {}, 37, 29, 53},
                             {DType::bf16, {12}, 128, 64, 128},
                             {DType::f16, {ir::Dim::symbol("B")}, S, 64, S},
                             {DType::f64, {}, 128, 256, 256},
                             {DType::i8, {}, 70, 96, 130},
                             {DType::i32, {}, 70, 96, 130},
                             {DType::i64, {}, 256, 96, 256}};
  for (int sm : {80, 90})
    for (const Case& c : cases) {
      ir::Graph g = dotGraph(c.t, c.batch, c.m, c.k, c.n);
      auto plan = fusion::plan(g, specFor(sm), fusion::Policy::AStitch);
      INFO(gemmOf(plan).str() << " on sm_" << sm);
      test::checkAssemblesWithoutSpills(ptxas, plan);
    }
}

namespace {

using test::Feed;
using test::feedName;
using test::layoutGraph;

const fusion::LibraryCall& callOf(const fusion::FusionPlan& p) {
  for (const auto& s : p.steps)
    if (const auto* c = std::get_if<fusion::LibraryCall>(&s)) return *c;
  FAIL("no library call in the plan");
  throw 0;
}

} // namespace

// Issue 20: transposes feeding dots (MatMul with a transposed weight, Gemm's transA/transB,
// attention's head split and K^T) are read in place by the GEMM, no transpose kernel.
TEST_CASE("gemm: transposed and head-split operands are read in place, on FMA and tensor cores",
          "[codegen][sim][gemm]") {
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
      {3, 33, 40, 17, Feed::Transposed, Feed::Transposed, L::ColumnMajor, L::ColumnMajor},
      {4, 64, 64, 64, Feed::Heads, Feed::HeadsT, L::RowMajor, L::ColumnMajor},
      {4, 64, 64, 64, Feed::Dense, Feed::Heads, L::RowMajor, L::RowMajor},
      {2, 30, 24, 40, Feed::Heads, Feed::HeadsT, L::RowMajor, L::ColumnMajor}};
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const Case& c : cases) {
      ir::Graph g = layoutGraph(t, c.batch, c.m, c.k, c.n, c.a, c.b);
      auto plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
      // the ldmatrix forms of mma.sync (wgmma's staging: test_gemm_wgmma)
      fusion::replanGemms(plan, {.warpgroupMma = false});
      INFO(ir::dtypeName(t) << " a " << feedName(c.a) << " b " << feedName(c.b) << ": "
                            << gemmOf(plan).str());
      CHECK(plan.kernelCount() == 0); // no transpose kernel
      CHECK(gemmOf(plan).a.layout == c.la);
      CHECK(gemmOf(plan).b.layout == c.lb);
      CHECK(callOf(plan).epilogue.a.empty() == (c.a == Feed::Dense));
      CHECK(callOf(plan).epilogue.b.empty() == (c.b == Feed::Dense));
      if (t != DType::f32) {
        REQUIRE(gemmOf(plan).engine == fusion::GemmPlan::Engine::TensorCore);
        codegen::CompiledModule mod = codegen::compileToPtx(plan);
        // a K-major tile is read with .trans: a column-major A, a row-major B
        CHECK((mod.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") !=
               std::string::npos) == (c.la == L::ColumnMajor));
        CHECK((mod.ptx.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") !=
               std::string::npos) == (c.lb == L::RowMajor));
      }
      check(plan, toleranceFor(t));
      // xla and none keep the transposes in kernels of their own
      for (auto policy : {fusion::Policy::Xla, fusion::Policy::None}) {
        auto other = fusion::plan(g, *deviceSpecProfile("h100"), policy);
        CHECK(other.kernelCount() > 0);
        CHECK(gemmOf(other).a.rowMajor());
        check(other, toleranceFor(t));
      }
    }
}

TEST_CASE("gemm: read in place, a transposed operand moves no more than a dense one",
          "[codegen][sim][gemm][traffic]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  for (DType t : {DType::f32, DType::bf16}) {
    int64_t e = t == DType::f32 ? 4 : 2;
    for (auto [batch, m, k, n, a, b] :
         {std::tuple{int64_t(0), int64_t(64), int64_t(256), int64_t(256), Feed::Dense,
                     Feed::Transposed},
          {int64_t(0), int64_t(128), int64_t(768), int64_t(768), Feed::Transposed, Feed::Dense},
          {int64_t(4), int64_t(64), int64_t(64), int64_t(64), Feed::Heads, Feed::HeadsT},
          {int64_t(12), int64_t(128), int64_t(64), int64_t(128), Feed::Heads, Feed::HeadsT}}) {
      ir::Graph g = layoutGraph(t, batch, m, k, n, a, b);
      auto plan = fusion::plan(g, h100, fusion::Policy::AStitch);
      REQUIRE(plan.kernelCount() == 0);
      LaunchCounters lc = check(plan, toleranceFor(t));
      int64_t compulsory = std::max<int64_t>(batch, 1) * (m * k + k * n + m * n) * e;
      double moved = double(lc.globalSectorsRead + lc.globalSectorsWritten) * 32;
      INFO(fmt::format("{} {}x{}x{}x{} a {} b {}: {} bytes for {} ({:.2f}x)", ir::dtypeName(t),
                       batch, m, k, n, feedName(a), feedName(b), moved, compulsory,
                       moved / double(compulsory)));
      CHECK(moved <= 3.0 * double(compulsory));
      CHECK(double(gemmOf(plan).modeledBytes) >= 0.95 * moved);
    }
  }
}

TEST_CASE("gemm: transposed-operand variants assemble on sm_80 and sm_90 without spills",
          "[ptxas][gemm]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (int sm : {80, 90})
    for (DType t : {DType::f32, DType::bf16})
      for (auto [batch, m, k, n, a, b] :
           {std::tuple{int64_t(0), int64_t(128), int64_t(768), int64_t(768), Feed::Transposed,
                       Feed::Transposed},
            {int64_t(0), int64_t(128), int64_t(768), int64_t(3072), Feed::Dense, Feed::Transposed},
            {int64_t(0), int64_t(37), int64_t(29), int64_t(53), Feed::Transposed, Feed::Dense},
            {int64_t(12), int64_t(128), int64_t(64), int64_t(128), Feed::Heads, Feed::HeadsT}}) {
        ir::Graph g = layoutGraph(t, batch, m, k, n, a, b);
        auto plan = fusion::plan(g, specFor(sm), fusion::Policy::AStitch);
        INFO(gemmOf(plan).str() << " on sm_" << sm);
        test::checkAssemblesWithoutSpills(ptxas, plan);
      }
}

// The encoder's attention as an exporter writes it: projections, head split (reshape and
// transpose), K^T, scores, context, head merge (transpose and reshape), output projection.
// Under astitch every layout op is read or stored in place by a GEMM: no kernel at all.
TEST_CASE("gemm: attention's head split, K^T and head merge run inside the GEMMs",
          "[codegen][sim][gemm]") {
  for (DType t : {DType::f32, DType::bf16}) {
    const int64_t S = 48, H = 128, NH = 4, D = H / NH;
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {t, {S, H}});
    auto heads = [&](const char* name, std::vector<int64_t> perm) {
      ir::NodeId w = g.parameter(std::string("w") + name, {t, {H, H}});
      ir::NodeId p = g.dot(x, w, name);
      return g.transpose(g.reshape(p, {S, NH, D}), perm);
    };
    ir::NodeId q = heads("q", {1, 0, 2}), k = heads("k", {1, 2, 0}), v = heads("v", {1, 0, 2});
    ir::NodeId probs = g.unary(ir::OpKind::Exp, g.dot(q, k, "scores"), "probs");
    ir::NodeId context = g.dot(probs, v, "context.heads");
    ir::NodeId merged = g.reshape(g.transpose(context, {1, 0, 2}), {S, H}, "context");
    g.addOutput(g.dot(merged, g.parameter("wo", {t, {H, H}}), "out"));
    auto plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
    INFO(ir::dtypeName(t));
    CHECK(plan.kernelCount() == 0);
    CHECK(plan.steps.size() == 6);
    for (const auto& s : plan.steps) {
      const auto& call = std::get<fusion::LibraryCall>(s);
      const std::string& name = plan.graph.node(call.op).name;
      INFO(name << ": " << call.gemm.str());
      if (name == "scores") {
        CHECK(call.gemm.a.rowMajor());
        CHECK_FALSE(call.gemm.b.rowMajor()); // K^T read as [N, K] row-major
        CHECK(call.gemm.b.ld == ir::Dim(H));
        CHECK(call.gemm.b.batchStride == ir::Dim(D));
      }
      if (name == "context.heads") {
        REQUIRE(call.epilogue.store.size() >= 1);
        CHECK(call.gemm.c.ld == ir::Dim(H)); // stored into [S, NH, D] in place
        CHECK(call.gemm.c.batchStride == ir::Dim(D));
      }
    }
    // every op is listed once in the kernel map, prologue and store ops with their GEMM
    std::map<std::string, int> owners;
    const nlohmann::json map = nlohmann::json::parse(fusion::kernelMapJson(plan));
    for (const auto& step : map.at("steps"))
      for (const auto& op : step.at("ops"))
        ++owners[op.get<std::string>()];
    for (const ir::Node& n : plan.graph.nodes()) {
      INFO(n.name);
      CHECK(owners[n.name] == (n.kind == ir::OpKind::Parameter ? 0 : 1));
    }
    CHECK_THAT(fusion::explainPlan(plan),
               Catch::Contains("in the GEMM's prologue, applied as %q is loaded") &&
                   Catch::Contains("the GEMM stores through it; stored by the library call"));
    CHECK_THAT(fusion::fusionPlanDot(plan),
               Catch::Contains("+ prologue of 2 op(s) on q") &&
                   Catch::Contains("+ stored through 1 layout op(s) as transpose"));
    check(plan, t == DType::f32 ? 1e-4 : 5e-2);
    auto xla = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::Xla);
    CHECK(xla.kernelCount() > 0);
    check(xla, t == DType::f32 ? 1e-4 : 5e-2);
  }
}

// Prologue fusion: a convert (mixed precision's f32 weight → bf16) or a scale by a constant that
// only feeds a dot operand is applied as each element is loaded, before it is staged.
TEST_CASE("gemm: a cast or a scale feeding an operand runs in the GEMM's loads",
          "[codegen][sim][gemm]") {
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    for (bool transposed : {false, true}) {
      ir::Graph g;
      const int64_t M = 70, K = 96, N = 130;
      ir::NodeId x = g.parameter("x", {t, {M, K}});
      ir::Shape ws = transposed ? ir::Shape{N, K} : ir::Shape{K, N};
      ir::NodeId w = g.parameter("w", {DType::f32, ws});
      if (transposed) w = g.transpose(w, {1, 0});
      ir::NodeId wt = t == DType::f32 ? w : g.convert(w, t, "w.cast");
      ir::NodeId half = g.broadcastInDim(g.constant(t, {}, {0.5}), {M, K}, {});
      ir::NodeId xs = g.binary(ir::OpKind::Mul, x, half, "x.scaled");
      g.addOutput(g.dot(xs, wt, "out"));
      auto plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
      INFO(ir::dtypeName(t) << (transposed ? " transposed" : "") << ": " << gemmOf(plan).str());
      CHECK(plan.kernelCount() == 0); // neither the cast nor the scale is a kernel
      CHECK(gemmOf(plan).a.computed());
      CHECK(gemmOf(plan).b.computed() == (t != DType::f32));
      CHECK(gemmOf(plan).b.sourceType == DType::f32);
      CHECK(gemmOf(plan).b.rowMajor() == !transposed);
      CHECK_FALSE(gemmOf(plan).asyncCopy);
      CHECK_THAT(fusion::printFusionPlan(plan),
                 Catch::Contains("prologue a: %x.scaled") && Catch::Contains("computed on load"));
      check(plan, toleranceFor(t));
      for (auto policy : {fusion::Policy::Xla, fusion::Policy::None}) {
        auto other = fusion::plan(g, *deviceSpecProfile("h100"), policy);
        CHECK(other.kernelCount() > 0);
        CHECK_FALSE(gemmOf(other).a.computed());
        check(other, toleranceFor(t));
      }
    }
}

TEST_CASE("gemm: operands computed on load assemble on sm_80 and sm_90 without spills",
          "[ptxas][gemm]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (int sm : {80, 90})
    for (DType t : {DType::bf16, DType::f16})
      for (auto [m, k, n, transposed] :
           {std::tuple{int64_t(128), int64_t(768), int64_t(768), false},
            {int64_t(128), int64_t(768), int64_t(3072), true},
            {int64_t(37), int64_t(29), int64_t(53), true}}) {
        ir::Graph g;
        ir::NodeId x = g.parameter("x", {t, {m, k}});
        ir::NodeId w =
            g.parameter("w", {DType::f32, transposed ? ir::Shape{n, k} : ir::Shape{k, n}});
        if (transposed) w = g.transpose(w, {1, 0});
        g.addOutput(g.dot(x, g.convert(w, t), "out"));
        auto plan = fusion::plan(g, specFor(sm), fusion::Policy::AStitch);
        REQUIRE(gemmOf(plan).b.computed());
        INFO(gemmOf(plan).str() << " on sm_" << sm);
        test::checkAssemblesWithoutSpills(ptxas, plan);
      }
}
