// The GEMM planner: tiles from the problem's size, vectors only where divisibility allows,
// symbolic dims planned as large with a capped grid, and the plan printed by `weft plan`.
#include <catch2/catch.hpp>

#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"

#include "test_graphs.h"

using namespace weft;
using ir::DType;

namespace {

using fusion::testing::dotGraph;

fusion::GemmPlan planOf(const ir::Graph& g) {
  return fusion::planGemm(g, g.outputs().at(0), *deviceSpecProfile("h100"));
}

} // namespace

TEST_CASE("gemm planner: big tiles for big problems, small ones for small", "[planner][gemm]") {
  auto big = planOf(dotGraph(DType::f32, {}, 128, 768, 3072));
  CHECK(big.blockM == 128);
  CHECK(big.blockN == 128);
  CHECK(big.threadM * big.threadN == 64);
  CHECK(big.tiles == ir::Dim(24));
  CHECK(double(big.modeledBytes) <= 2.0 * double(big.compulsoryBytes));
  auto tiny = planOf(dotGraph(DType::f32, {}, 8, 5, 3));
  CHECK(tiny.blockM == 32);
  CHECK(tiny.tiles == ir::Dim(1));
  // every plan's threads cover the block tile exactly
  for (const auto& p : {big, tiny}) {
    CHECK(p.warpsM() * p.warpsN() * 32 == p.blockSize);
    CHECK((p.warpM / p.threadM) * p.lanesN() == 32);
    CHECK(p.threadN % p.columnRun == 0);
  }
}

TEST_CASE("gemm planner: vectors where the dims divide, scalars elsewhere", "[planner][gemm]") {
  auto even = planOf(dotGraph(DType::f32, {}, 64, 256, 256));
  CHECK(even.vectorA == 4);
  CHECK(even.vectorB == 4);
  CHECK(even.vectorC == 4);
  auto odd = planOf(dotGraph(DType::f32, {}, 37, 29, 53));
  CHECK(odd.vectorA == 1);
  CHECK(odd.vectorB == 1);
  CHECK(odd.vectorC == 1);
  auto half = planOf(dotGraph(DType::f16, {}, 64, 256, 256));
  CHECK(half.vectorA == 8); // 16 bytes
  CHECK(half.vectorB == 8);
}

TEST_CASE("gemm planner: f16 and bf16 on tensor cores from sm_80, FMA before", "[planner][gemm]") {
  for (DType t : {DType::f16, DType::bf16}) {
    ir::Graph g = dotGraph(t, {}, 128, 768, 768);
    auto h100 = fusion::planGemm(g, g.outputs()[0], *deviceSpecProfile("h100"));
    auto h100Sync =
        fusion::planGemm(g, g.outputs()[0], *deviceSpecProfile("h100"), {}, {.warpgroupMma = false});
    auto a100 = fusion::planGemm(g, g.outputs()[0], *deviceSpecProfile("a100"));
    auto v100 = fusion::planGemm(g, g.outputs()[0], *deviceSpecProfile("v100"));
    CHECK(h100.engine == fusion::GemmPlan::Engine::Warpgroup);
    CHECK(h100Sync.engine == fusion::GemmPlan::Engine::TensorCore);
    CHECK(a100.engine == fusion::GemmPlan::Engine::TensorCore);
    CHECK(v100.engine == fusion::GemmPlan::Engine::Fma);
    // mma.sync: whole m16n8 tiles per warp, two k16 steps per K tile, padded rows for ldmatrix
    for (const fusion::GemmPlan* p : {&a100, &h100Sync}) {
      CHECK(p->warpM % 16 == 0);
      CHECK(p->warpN % 8 == 0);
      CHECK(p->blockK == 32);
      CHECK(p->sharedPad == 8);
      CHECK_FALSE(p->tileSums);
      CHECK(p->asyncCopy); // 16-byte vectors: cp.async.cg
      CHECK_THAT(p->str(), Catch::Contains("mma m16n8k16"));
    }
    // wgmma: warpgroups of 64 rows by the whole blockN, core matrices without padding, each
    // tile as it lies (the row-major B N-major), double-buffered with cp.async
    CHECK(h100.warpM == 64);
    CHECK(h100.warpN == h100.blockN);
    CHECK(h100.blockSize == 128 * (h100.blockM / 64));
    CHECK(h100.blockK == 32);
    CHECK(h100.sharedPad == 0);
    CHECK(h100.asyncCopy);
    CHECK(h100.stages == 2);
    CHECK(h100.sharedBytes == 2 * (h100.blockM + h100.blockN) * 32 * 2);
    CHECK_THAT(h100.str(), Catch::Contains("gemm wgmma"));
    CHECK_THAT(h100.str(), Catch::Contains("core matrices (no swizzle, a K-major, b N-major)"));
    CHECK_FALSE(v100.asyncCopy);
  }
  // f32 stays on FMA (TF32 is not planned)
  auto f32 = planOf(dotGraph(DType::f32, {}, 128, 768, 768));
  CHECK(f32.engine == fusion::GemmPlan::Engine::Fma);
}

TEST_CASE("gemm planner: double buffering and two-level sums for long K", "[planner][gemm]") {
  auto shortK = planOf(dotGraph(DType::f32, {}, 64, 8, 64));
  CHECK(shortK.stages == 1);
  CHECK_FALSE(shortK.tileSums);
  auto longK = planOf(dotGraph(DType::f32, {}, 64, 768, 64));
  CHECK(longK.stages == 2);
  CHECK(longK.tileSums);
  CHECK(longK.sharedBytes == 2 * (longK.blockM + longK.blockN) * longK.blockK * 4);
  CHECK_FALSE(planOf(dotGraph(DType::i32, {}, 64, 768, 64)).tileSums);
}

TEST_CASE("gemm planner: symbolic dims, a capped grid, printed by weft plan", "[planner][gemm]") {
  ir::Dim B = ir::Dim::symbol("B"), S = ir::Dim::symbol("S");
  ir::Graph g = dotGraph(DType::f32, {B}, S, 40, S);
  auto p = planOf(g);
  CHECK_FALSE(p.tiles.isStatic());
  CHECK(p.maxBlocks > 0);
  CHECK(p.vectorB == 1); // N is symbolic: no alignment to rely on
  CHECK(p.vectorA == 4); // K = 40 is static
  std::string text =
      fusion::printFusionPlan(fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::None));
  CHECK_THAT(text, Catch::Contains("gemm fma batch B M S N S K 40"));
}
