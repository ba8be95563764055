// f16 and bf16 dots on Hopper's warpgroup MMA (issue 20, "a real GEMM": wgmma on sm_90): the
// planner takes it on sm_90 only; the emitted GEMM (tiles staged as K-major core matrices,
// wgmma.mma_async m64nNk16 through shared-memory descriptors) gives bit for bit the results of
// the mma.sync GEMM (both round each 16-wide K step's exact sum once to f32, in the same
// order) and matches the interpreter on odd, batched, symbolic and transposed shapes, with
// epilogues; a100 keeps mma.sync and its sm_80 PTX; ptxas assembles every variant for sm_90a
// without spills; the bf16 GEMMs move at most 3x their operands and result.
#include <catch2/catch.hpp>

#include <cstring>
#include <fmt/format.h>
#include <tuple>

#include "bench/perf_model.h"
#include "codegen/compile.h"
#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "gemm_layouts.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ptxas_or_skip.h"
#include "sim_runner.h"

#include "../fusion/test_graphs.h"

using namespace weft;
using ir::DType;
using Engine = fusion::GemmPlan::Engine;
using fusion::testing::dotGraph;
using test::Feed;

using test::gemmOf;

namespace {

DeviceSpec h100() {
  return *deviceSpecProfile("h100");
}

/// The plan with every dot on mma.sync instead (GemmOptions::warpgroupMma off).
fusion::FusionPlan onMmaSync(fusion::FusionPlan plan) {
  fusion::replanGemms(plan, {.warpgroupMma = false});
  return plan;
}

struct Run {
  std::vector<HostTensor> out;
  LaunchCounters dot; // the last launch's counters
};

Run runPlan(const fusion::FusionPlan& plan, const ir::Binding& binding = {}) {
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  auto inputs = test::makeInputs(plan.graph, binding);
  std::vector<LaunchCounters> counters;
  Run r;
  r.out = test::runOnSim(plan, m, inputs, binding, &counters);
  REQUIRE(!counters.empty());
  r.dot = counters.back();
  return r;
}

/// The wgmma plan's outputs: within the dtype's rounding of the interpreter's, and bit for bit
/// those of the same graph on mma.sync.
LaunchCounters checkWgmma(const fusion::FusionPlan& plan, const ir::Binding& binding = {},
                          double tolerance = 2e-2) {
  INFO(gemmOf(plan).str());
  REQUIRE(gemmOf(plan).engine == Engine::Warpgroup);
  Run got = runPlan(plan, binding);
  auto want = ir::interpret(plan.graph, test::makeInputs(plan.graph, binding), binding);
  fusion::FusionPlan sync = onMmaSync(plan);
  REQUIRE(gemmOf(sync).engine == Engine::TensorCore);
  Run mma = runPlan(sync, binding);
  REQUIRE(got.out.size() == want.size());
  for (size_t i = 0; i < got.out.size(); ++i) {
    CHECK(test::maxError(got.out[i], want[i]) <= tolerance);
    CHECK(got.out[i].bytes == mma.out[i].bytes);
  }
  return got.dot;
}

} // namespace

TEST_CASE("gemm wgmma: the planner takes it for f16 and bf16 on sm_90 only",
          "[codegen][gemm][wgmma]") {
  for (DType t : {DType::f16, DType::bf16}) {
    ir::Graph g = dotGraph(t, {}, 128, 768, 768);
    auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    const fusion::GemmPlan& p = gemmOf(plan);
    CHECK(p.engine == Engine::Warpgroup);
    CHECK(p.blockSize == 128 * (p.blockM / 64));
    CHECK(p.warpM == 64);
    CHECK(p.warpN == p.blockN);
    CHECK(p.sharedPad == 0);
    CHECK(p.str().find("gemm wgmma") == 0);
    CHECK(p.str().find(fmt::format("wgmma m64n{}k16 per warpgroup", p.blockN)) !=
          std::string::npos);
    CHECK(codegen::ptxTarget(plan) == "sm_90a");
    // a100: mma.sync, sm_80 PTX as before
    auto a100 = fusion::plan(g, *deviceSpecProfile("a100"), fusion::Policy::AStitch);
    CHECK(gemmOf(a100).engine == Engine::TensorCore);
    CHECK(codegen::ptxTarget(a100) == "sm_80");
    codegen::CompiledModule m = codegen::compileToPtx(a100);
    CHECK(m.ptx.find(".target sm_80\n") != std::string::npos);
    CHECK(m.ptx.find("wgmma") == std::string::npos);
  }
  // f32 stays on FMA (tf32 on mma.sync), and without the option h100 runs mma.sync
  auto f32 = fusion::plan(dotGraph(DType::f32, {}, 128, 768, 768), h100(), fusion::Policy::AStitch);
  CHECK(gemmOf(f32).engine == Engine::Fma);
  CHECK(codegen::ptxTarget(f32) == "sm_90");
  fusion::replanGemms(f32, {.tf32 = true});
  CHECK(gemmOf(f32).engine == Engine::TensorCore);
  auto sync = onMmaSync(fusion::plan(dotGraph(DType::bf16, {}, 64, 64, 64), h100(),
                                     fusion::Policy::AStitch));
  CHECK(gemmOf(sync).engine == Engine::TensorCore);
  CHECK(codegen::ptxTarget(sync) == "sm_90");
}

TEST_CASE("gemm wgmma: odd, batched and square shapes match the interpreter and mma.sync bit "
          "for bit",
          "[codegen][sim][gemm][wgmma]") {
  for (DType t : {DType::f16, DType::bf16})
    for (auto [batch, m, k, n] :
         {std::tuple{ir::Shape{}, 37, 29, 53}, {ir::Shape{3}, 70, 96, 130},
          {ir::Shape{}, 128, 256, 256}, {ir::Shape{2, 2}, 33, 8, 31}, {ir::Shape{}, 1, 1, 1},
          {ir::Shape{}, 200, 48, 72}}) {
      INFO(fmt::format("{} [{}] {}x{}x{}", ir::dtypeName(t), ir::shapeStr(batch), m, k, n));
      ir::Graph g = dotGraph(t, batch, m, k, n);
      auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      codegen::CompiledModule mod = codegen::compileToPtx(plan);
      CHECK(mod.ptx.find(".target sm_90a") != std::string::npos);
      CHECK(mod.ptx.find(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{}",
                                     gemmOf(plan).warpN, ir::dtypeName(t), ir::dtypeName(t))) !=
            std::string::npos);
      CHECK(mod.ptx.find("fence.proxy.async.shared::cta") != std::string::npos);
      CHECK(mod.ptx.find("ldmatrix") == std::string::npos);
      checkWgmma(plan);
    }
}

TEST_CASE("gemm wgmma: symbolic dims, one program for every binding", "[codegen][sim][gemm][wgmma]") {
  ir::Dim B = ir::Dim::symbol("B"), S = ir::Dim::symbol("S");
  ir::Graph g = dotGraph(DType::bf16, {B}, S, 64, S);
  auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  CHECK_FALSE(gemmOf(plan).tiles.isStatic());
  CHECK(gemmOf(plan).maxBlocks > 0);
  for (auto [b, s] : {std::pair{1, 1}, {3, 37}, {2, 129}}) {
    INFO("B " << b << " S " << s);
    checkWgmma(plan, {{"B", b}, {"S", s}});
  }
}

TEST_CASE("gemm wgmma: transposed and head-split operands, K-major or MN-major core matrices",
          "[codegen][sim][gemm][wgmma]") {
  struct Case {
    Feed a, b;
    int64_t batch, m, k, n;
  };
  for (const Case& c : {Case{Feed::Dense, Feed::Transposed, 0, 64, 256, 256},
                        Case{Feed::Transposed, Feed::Dense, 0, 72, 40, 56},
                        Case{Feed::Transposed, Feed::Transposed, 0, 37, 29, 53},
                        Case{Feed::Heads, Feed::HeadsT, 4, 64, 64, 64}})
    for (DType t : {DType::f16, DType::bf16}) {
      INFO(fmt::format("{} a {} b {} {}x{}x{}x{}", ir::dtypeName(t), test::feedName(c.a),
                       test::feedName(c.b), c.batch, c.m, c.k, c.n));
      ir::Graph g = test::layoutGraph(t, c.batch, c.m, c.k, c.n, c.a, c.b);
      auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      const fusion::GemmPlan& p = gemmOf(plan);
      // staged as they lie: an operand contiguous along M or N in MN-major core matrices
      // (imm-trans 1), cp.async whenever the vectors allow
      CHECK(p.asyncCopy == (p.stages == 2 && p.vectorA >= 2 && p.vectorB >= 2));
      codegen::CompiledModule mod = codegen::compileToPtx(plan);
      CHECK(mod.ptx.find(fmt::format("1, 1, 1, {}, {};", int(!p.a.rowMajor()),
                                     int(p.b.rowMajor()))) != std::string::npos);
      checkWgmma(plan);
    }
}

TEST_CASE("gemm wgmma: the epilogue (bias, GELU, residual) runs on its accumulators",
          "[codegen][sim][gemm][wgmma]") {
  using fusion::testing::DotConsumers;
  for (DType t : {DType::f16, DType::bf16})
    for (DotConsumers consumers :
         {DotConsumers::Bias, DotConsumers::BiasGelu, DotConsumers::Residual})
      for (auto [batch, m, k, n] :
           {std::tuple{ir::Shape{}, 37, 29, 53}, {ir::Shape{3}, 70, 96, 130}}) {
        ir::Graph g = fusion::testing::dotEpilogueGraph(t, batch, m, k, n, consumers);
        auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
        INFO(fmt::format("{} consumers {} [{}] {}x{}x{}", ir::dtypeName(t), int(consumers),
                         ir::shapeStr(batch), m, k, n));
        REQUIRE(plan.kernelCount() == 0);
        checkWgmma(plan, {}, 3e-2);
      }
}

TEST_CASE("gemm wgmma: bf16 GEMMs at the issue's sizes move at most 3x",
          "[codegen][sim][gemm][wgmma][traffic]") {
  for (auto [batch, m, k, n] : {std::tuple{int64_t(1), 64, 256, 256}, {int64_t(1), 128, 768, 768},
                                {int64_t(12), 128, 64, 128}}) {
    ir::Graph g = dotGraph(DType::bf16, batch > 1 ? ir::Shape{batch} : ir::Shape{}, m, k, n);
    auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    LaunchCounters lc = checkWgmma(plan);
    int64_t compulsory = batch * (m * k + k * n + m * n) * 2;
    double moved = double(lc.globalSectorsRead + lc.globalSectorsWritten) * 32;
    INFO(fmt::format("{}x{}x{}x{}: {} bytes for {} ({:.2f}x), {}", batch, m, k, n, moved,
                     compulsory, moved / double(compulsory), gemmOf(plan).str()));
    CHECK(moved <= 3.0 * double(compulsory));
    CHECK(double(gemmOf(plan).modeledBytes) >= 0.95 * moved);
  }
}

TEST_CASE("gemm wgmma: every variant assembles for sm_90a without spills", "[ptxas][gemm][wgmma]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  ir::Dim S = ir::Dim::symbol("S");
  struct Case {
    DType t;
    ir::Shape batch;
    ir::Dim m, k, n;
  };
  for (const Case& c : {Case{DType::f16, {}, 128, 768, 768}, Case{DType::bf16, {}, 128, 768, 3072},
                        Case{DType::bf16, {}, 64, 256, 256}, Case{DType::f16, {}, 37, 29, 53},
                        Case{DType::bf16, {12}, 128, 64, 128},
                        Case{DType::f16, {ir::Dim::symbol("B")}, S, 64, S}}) {
    auto plan = fusion::plan(dotGraph(c.t, c.batch, c.m, c.k, c.n), h100(), fusion::Policy::AStitch);
    INFO(gemmOf(plan).str());
    REQUIRE(gemmOf(plan).engine == Engine::Warpgroup);
    test::checkAssemblesWithoutSpills(ptxas, plan);
  }
  for (auto [a, b] : {std::pair{Feed::Dense, Feed::Transposed}, {Feed::Transposed, Feed::Dense}}) {
    auto plan = fusion::plan(test::layoutGraph(DType::bf16, 0, 128, 768, 768, a, b), h100(),
                             fusion::Policy::AStitch);
    INFO(gemmOf(plan).str());
    test::checkAssemblesWithoutSpills(ptxas, plan);
  }
}

// The figures of docs (modeled, not measured): `test_gemm_wgmma "[.figures]" -s`. Hidden: it
// asserts nothing beyond what the cases above do.
TEST_CASE("gemm wgmma: modeled figures against mma.sync at the issue's sizes", "[.figures]") {
  bench::ModelProfile profile = bench::modelProfile(h100());
  for (auto [batch, m, k, n] : {std::tuple{int64_t(1), 64, 256, 256}, {int64_t(1), 128, 768, 768},
                                {int64_t(1), 128, 768, 3072}, {int64_t(12), 128, 64, 128}})
    for (DType t : {DType::bf16, DType::f16}) {
      ir::Graph g = dotGraph(t, batch > 1 ? ir::Shape{batch} : ir::Shape{}, m, k, n);
      auto plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      for (bool wgmma : {false, true}) {
        fusion::FusionPlan p = wgmma ? plan : onMmaSync(plan);
        Run r = runPlan(p);
        const LaunchCounters& c = r.dot;
        bench::ModeledTime mt = bench::modelProgram({c}, profile, {});
        int64_t compulsory = batch * (m * k + k * n + m * n) * 2;
        uint64_t moved = (c.globalSectorsRead + c.globalSectorsWritten) * 32;
        WARN(fmt::format("{} {}x({}x{} by {}x{}) {}: {} bytes ({:.2f}x), {} warp instructions, "
                         "{} shared loads, {} shared stores, {} block barriers, modeled {:.2f} us "
                         "| {}",
                         ir::dtypeName(t), batch, m, k, k, n, wgmma ? "wgmma" : "mma.sync", moved,
                         double(moved) / double(compulsory), c.warpInstructions, c.sharedLoads,
                         c.sharedStores, c.blockBarriers, mt.totalUs(), gemmOf(p).str()));
      }
    }
}
