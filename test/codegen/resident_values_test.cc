// Resident values (fusion/resident_values.h): a value later phases read at their own rows in the
// same tiles stays in shared memory across the grid barriers, each block keeping its tiles of
// it; no store and no reloads through global memory. Outputs match the interpreter, byte counts
// are the simulator's, and a grid smaller than the plan's traps instead of overwriting.
#include <catch2/catch.hpp>

#include "bench/synthetic_graphs.h"
#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "fusion/launch_config.h"
#include "fusion/plan.h"
#include "fusion/plan_explainer.h"
#include "fusion/plan_printer.h"
#include "ir/graph.h"
#include "ptxas_or_skip.h"
#include "device_profiles.h"
#include "sim_runner.h"
#include "two_phase_graph.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

using test::bytesOf;
using test::h100;
using test::onlyKernel;
using test::TwoPhase;

TEST_CASE("a value the next phase reads at its own rows stays in shared memory across the grid "
          "barrier",
          "[codegen][traffic][sim]") {
  // 4096 rows: more tiles than one wave of blocks, so each block keeps several tiles of w.
  TwoPhase t(4096, 256);
  fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  REQUIRE(k.hasGridBarrier());
  const fusion::ValuePlacement& p = k.placement.at(t.w);
  REQUIRE(p.resident);
  CHECK(p.storage == fusion::Storage::Shared);
  CHECK(p.buffer < 0);
  CHECK(p.resident->lastPhase > p.resident->firstPhase);
  CHECK(p.resident->savedBytes == 2 * bytesOf(t.g, t.w)); // a store and one reload
  int64_t tiles = k.launch.tiles.size();
  CHECK(k.residentTiles == (tiles + k.launch.maxBlocks - 1) / k.launch.maxBlocks);
  CHECK(k.residentTiles >= 2);
  // Its slots: one tile of w per tile the block handles.
  CHECK(p.sharedBytes >= k.residentTiles * k.residentSpace.unitsPerTile * 256 * 4);
  CHECK(k.launch.sharedBytes >= p.sharedOffset + p.sharedBytes);
  // The launch keeps its blocks: the grid is still one wave with the room taken.
  CHECK(k.launch.maxBlocks == fusion::blocksPerWave(plan.device, k.launch.blockSize,
                                            k.launch.maxRegisters,
                                            k.launch.sharedBytes + k.stagingBytes +
                                                k.reduceScratchBytes));
  std::string text = fusion::printFusionPlan(plan);
  CHECK(text.find("resident across grid barriers") != std::string::npos);

  codegen::CompiledModule m = codegen::compileToPtx(plan);
  std::vector<LaunchCounters> counters;
  test::checkOnSim(plan, m, 1e-3, &counters); // out scales by sums of 4096 rows
  REQUIRE(counters.size() == 1);
  // x, y and z read once, out written once; the column sum's partials and its staged copies are
  // the rest (under a quarter of w, which no longer goes through global memory at all).
  int64_t reads = bytesOf(t.g, t.x) + bytesOf(t.g, t.y) + bytesOf(t.g, t.z);
  int64_t writes = bytesOf(t.g, t.out);
  int64_t read = int64_t(counters[0].globalSectorsRead) * 32;
  int64_t written = int64_t(counters[0].globalSectorsWritten) * 32;
  CHECK(read >= reads);
  CHECK(read <= reads + bytesOf(t.g, t.w) / 4);
  CHECK(written >= writes);
  CHECK(written <= writes + bytesOf(t.g, t.w) / 4);
}

TEST_CASE("an input two phases read at their own rows is loaded once and kept on chip",
          "[codegen][traffic][sim]") {
  // out = x * colsum(x - rowmax(x)): the row max and the column sum read x in the first phase
  // and out reads it again behind the grid barrier (x - rowmax(x) is cheaper to regenerate than
  // to store). The first phase loads each of its tiles of x into the block's slots; the second
  // reads them there.
  constexpr int64_t kRows = 4096, kCols = 256;
  ir::Graph g;
  ir::Shape shape = {kRows, kCols};
  auto x = g.parameter("x", {DType::f32, shape});
  auto row = g.reduce(ir::ReduceKind::Max, x, {1}, "row");
  auto w = g.binary(OpKind::Sub, x, g.broadcastInDim(row, shape, {0}), "w");
  auto col = g.reduce(ir::ReduceKind::Sum, w, {0}, "col");
  auto out = g.binary(OpKind::Mul, x, g.broadcastInDim(col, shape, {1}), "out");
  g.setOutputs({out});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  const fusion::ValuePlacement& p = k.placement.at(x);
  REQUIRE(p.resident);
  CHECK(p.storage == fusion::Storage::Input);
  CHECK(p.buffer >= 0); // its first phase loads it from there
  CHECK(p.resident->savedBytes == bytesOf(g, x));
  CHECK(fusion::explainPlan(plan).find("input, resident") != std::string::npos);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  std::vector<LaunchCounters> counters;
  test::checkOnSim(plan, m, 1e-3, &counters);
  REQUIRE(counters.size() == 1);
  int64_t read = int64_t(counters[0].globalSectorsRead) * 32;
  CHECK(read >= bytesOf(g, x));
  CHECK(read <= bytesOf(g, x) + bytesOf(g, x) / 4); // not twice: the partials and sums are left
  CHECK(int64_t(counters[0].globalSectorsWritten) * 32 <= bytesOf(g, out) + bytesOf(g, x) / 4);
}

TEST_CASE("without room in shared memory the value goes through global scratch, still correct",
          "[codegen][traffic][sim]") {
  // A device whose SMs hold little shared memory: keeping w's tiles would cost blocks per SM,
  // so w is stored once in global scratch and read back behind the barrier.
  TwoPhase t(4096, 256);
  DeviceSpec small = h100();
  small.sharedMemoryPerSM = 20 * 1024;
  small.sharedMemoryPerBlock = 20 * 1024;
  fusion::FusionPlan plan = fusion::plan(t.g, small, fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  const fusion::ValuePlacement& p = k.placement.at(t.w);
  CHECK(!p.resident);
  CHECK(p.storage == fusion::Storage::Global);
  CHECK(k.residentTiles == 0);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  std::vector<LaunchCounters> counters;
  test::checkOnSim(plan, m, 1e-3, &counters);
  REQUIRE(counters.size() == 1);
  int64_t reads = bytesOf(t.g, t.x) + bytesOf(t.g, t.y) + bytesOf(t.g, t.z) + bytesOf(t.g, t.w);
  CHECK(int64_t(counters[0].globalSectorsRead) * 32 >= reads);
  CHECK(int64_t(counters[0].globalSectorsWritten) * 32 >= bytesOf(t.g, t.w) + bytesOf(t.g, t.out));
}

TEST_CASE("a grid smaller than the plan's traps instead of overwriting a resident value",
          "[codegen][sim]") {
  // Each block has residentTiles slots: with half the planned blocks it would get more tiles
  // than slots. The kernel must stop with a trap, never write past its slots.
  TwoPhase t(4096, 256);
  fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
  REQUIRE(onlyKernel(plan).residentTiles > 0);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  CHECK(m.ptx.find("trap;") != std::string::npos);
  codegen::CompiledModule halved = m;
  halved.kernels.at(0).launch.maxBlocks /= 2;
  std::vector<HostTensor> inputs = test::makeInputs(t.g);
  CHECK_THROWS_WITH(test::runOnSim(plan, halved, inputs),
                    Catch::Matchers::Contains("trap executed"));
}

TEST_CASE("resident values keep symbolic and non-cooperative kernels as they were", "[planner]") {
  // Tiles per block have no static bound with a symbolic row count: global scratch.
  ir::Graph g;
  ir::Shape shape = {ir::Dim::symbol("B"), 256};
  auto x = g.parameter("x", {DType::f32, shape});
  auto v = g.unary(OpKind::Tanh, g.unary(OpKind::Exp, g.unary(OpKind::Tanh, x)), "v");
  auto row = g.reduce(ir::ReduceKind::Max, v, {1}, "row");
  auto w = g.binary(OpKind::Sub, v, g.broadcastInDim(row, shape, {0}), "w");
  auto col = g.reduce(ir::ReduceKind::Sum, w, {0}, "col");
  g.setOutputs({g.binary(OpKind::Mul, w, g.broadcastInDim(col, shape, {1}), "out")});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  for (const fusion::Step& step : plan.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&step)) {
      CHECK(k->residentTiles == 0);
      for (const auto& [id, p] : k->placement)
        CHECK(!p.resident);
    }
}

TEST_CASE("resident slots are counted for the grid the kernel launches, not its block cap",
          "[codegen][sim]") {
  // Random graph 411: the launch's grid is min(tiles of the first stage's group, maxBlocks).
  // The first group (a row sum in warp-per-row tiles of 16 rows) has 3 tiles, the resident space
  // (a block-per-row max over 40 rows) 40: 3 blocks take 14 tiles each. Slots counted for
  // maxBlocks (one per block) trapped on every run.
  constexpr int64_t kRows = 40, kCols = 1000;
  ir::Graph g;
  ir::Shape shape = {kRows, kCols}, wide = {kRows, 2 * kCols};
  auto x = g.parameter("x", {DType::f32, shape});
  auto sum = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  auto one = g.broadcastInDim(g.scalar(DType::f32, 1.0), shape, {});
  auto d = g.binary(OpKind::Div, x,
                    g.binary(OpKind::Add, g.unary(OpKind::Abs, g.broadcastInDim(sum, shape, {0})),
                             one),
                    "d");
  auto c = g.concatenate({g.unary(OpKind::Neg, d), x}, 1, "c");
  auto rmax = g.reduce(ir::ReduceKind::Max, c, {1}, "rmax");
  auto a = g.binary(OpKind::Add, c, g.broadcastInDim(rmax, wide, {0}), "a");
  auto cmax = g.reduce(ir::ReduceKind::Max, a, {0}, "cmax");
  auto m = g.binary(OpKind::Max, a, g.broadcastInDim(cmax, wide, {1}), "m");
  g.setOutputs({d, m});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  REQUIRE(k.placement.at(rmax).resident);
  // Every block the launch has holds a slot for each of its tiles of the resident space.
  const fusion::TileSpace& s = k.residentSpace;
  REQUIRE(s.units.isStatic());
  REQUIRE(k.launch.tiles.isStatic());
  int64_t tiles = (s.units.size() + s.unitsPerTile - 1) / s.unitsPerTile;
  int64_t grid = std::min(k.launch.tiles.size(), k.launch.maxBlocks);
  CHECK(grid < tiles);
  CHECK(k.residentTiles * grid >= tiles);
  codegen::CompiledModule module = codegen::compileToPtx(plan);
  test::checkOnSim(plan, module, 1e-4);
}

TEST_CASE("resident values of 2-byte dtypes keep their slots apart and match the interpreter",
          "[codegen][sim]") {
  // f16 and bf16 slots: element indices into 16-byte aligned arrays; an odd number of columns
  // makes each tile's slot an odd number of elements (slot i starts at i * 37 * rowsPerTile).
  for (DType dtype : {DType::f16, DType::bf16}) {
    INFO(ir::dtypeName(dtype));
    TwoPhase t(4096, 37, dtype);
    fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
    const fusion::KernelPlan& k = onlyKernel(plan);
    int resident = 0;
    for (const auto& [v, p] : k.placement)
      if (p.resident) {
        ++resident;
        CHECK(p.sharedOffset % 16 == 0);
        CHECK(p.sharedBytes >= k.residentTiles * k.residentSpace.unitsPerTile * 37 * 2);
      }
    REQUIRE(resident > 0);
    CHECK(k.residentTiles >= 2);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    test::checkOnSim(plan, m, 5e-2);
  }
}

TEST_CASE("kernels with resident values assemble with ptxas without spills, their grid "
          "co-resident",
          "[ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  std::vector<std::pair<std::string, ir::Graph>> graphs;
  graphs.emplace_back("cluster_200", bench::elementwiseCluster(200, 2048, 768));
  graphs.emplace_back("two phases f32", TwoPhase(4096, 256).g);
  graphs.emplace_back("two phases f16", TwoPhase(4096, 37, DType::f16).g);
  for (int sm : {80, 90})
    for (auto& [name, g] : graphs) {
      DeviceSpec d = *deviceSpecProfile(sm == 80 ? "a100" : "h100");
      fusion::FusionPlan plan = fusion::plan(g, d, fusion::Policy::AStitch);
      INFO(name << " on sm_" << sm);
      int withResident = 0;
      for (const fusion::Step& step : plan.steps)
        if (const auto* k = std::get_if<fusion::KernelPlan>(&step))
          withResident += k->residentTiles > 0;
      CHECK(withResident > 0);
      codegen::CompiledModule m = codegen::compileToPtx(plan);
      codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
      INFO(r.log);
      REQUIRE(r.ok());
      for (const codegen::CompiledKernel& ck : m.kernels) {
        const auto* k = std::get_if<fusion::KernelPlan>(&plan.steps.at(size_t(ck.planStep)));
        if (!k) continue;
        auto f = std::find_if(r.functions.begin(), r.functions.end(),
                              [&](const codegen::PtxasFunctionReport& x) { return x.name == ck.name; });
        REQUIRE(f != r.functions.end());
        INFO(ck.name << ": " << f->registers << " registers, " << ck.dynamicSharedBytes
                     << " B dynamic shared, " << k->stagingBytes << " B staging, "
                     << k->reduceScratchBytes << " B reduce scratch");
        CHECK(f->spillStores == 0);
        CHECK(f->spillLoads == 0);
        CHECK(f->registers <= k->launch.maxRegisters);
        if (k->launch.cooperative) {
          // All of the block's shared memory (resident slots, staging, reduce scratch) still
          // lets the planned grid be resident at once.
          int64_t shared = int64_t(ck.dynamicSharedBytes) + k->stagingBytes + k->reduceScratchBytes;
          CHECK(blocksPerSM(d, k->launch.blockSize, f->registers, shared) * int64_t(d.smCount) >=
                k->launch.maxBlocks);
        }
      }
    }
}

TEST_CASE("resident bool and i8 inputs of an odd row length match the interpreter",
          "[codegen][sim]") {
  // b (a 1-byte bool, or i8 compared with 0) and x are read at their own rows by the first
  // phase (the row max and the column sum) and by the second (out): both are loaded once into
  // each block's slots. 37 columns: slots of an odd number of 1-byte elements.
  for (DType mask : {DType::boolean, DType::i8}) {
    INFO(ir::dtypeName(mask));
    constexpr int64_t kRows = 4096, kCols = 37;
    ir::Graph g;
    ir::Shape shape = {kRows, kCols};
    auto x = g.parameter("x", {DType::f32, shape});
    auto b = g.parameter("b", {mask, shape});
    auto zero = g.broadcastInDim(g.scalar(DType::f32, 0.0), shape, {});
    auto pred = mask == DType::boolean
                    ? b
                    : g.compare(ir::CompareDir::GT, b,
                                g.broadcastInDim(g.scalar(mask, 0.0), shape, {}), "pred");
    auto row = g.reduce(ir::ReduceKind::Max, x, {1}, "row");
    auto w = g.binary(OpKind::Sub, g.select(pred, x, zero), g.broadcastInDim(row, shape, {0}), "w");
    auto col = g.reduce(ir::ReduceKind::Sum, w, {0}, "col");
    auto out = g.select(pred, g.binary(OpKind::Mul, x, g.broadcastInDim(col, shape, {1})), x, "out");
    g.setOutputs({out});
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    const fusion::KernelPlan& k = onlyKernel(plan);
    REQUIRE(k.placement.at(b).resident);
    CHECK(k.placement.at(b).sharedOffset % 16 == 0);
    CHECK(k.residentTiles >= 2);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    test::checkOnSim(plan, m, 1e-2);
  }
}
