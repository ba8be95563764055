#include <catch2/catch.hpp>

#include "fusion/launch_config.h"
#include "fusion/plan.h"
#include "fusion/thread_mapping.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {
DeviceSpec profile(const std::string& name) {
  auto s = deviceSpecProfile(name);
  REQUIRE(s.has_value());
  return *s;
}
MappingChoice mapRowReduce(int64_t rows, int64_t length, const DeviceSpec& spec) {
  ir::Graph g = rowReduce(rows, length);
  return chooseThreadMapping(loopSpaceOf(g, id(g, "row_sum")), spec);
}
} // namespace

TEST_CASE("thread mapping: Figure 6(a) <750000,32> packs rows into 1024-thread blocks and one wave",
          "[planner][mapping][fig6]") {
  for (std::string dev : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      DeviceSpec spec = profile(dev);
      MappingChoice c = mapRowReduce(750000, 32, spec);
      auto m = std::get<RowReduceMapping>(c.mapping);
      CHECK(m.kind == RowReduceMapping::Kind::WarpPerRow);
      CHECK(m.threadsPerRow == 8); // 8 lanes of 4-wide vectors per row of 32
      CHECK(m.vectorWidth == 4);
      CHECK(c.blockSize == 1024);
      CHECK(m.rowsPerBlock == 128); // horizontal packing: 128 rows per block, not 750000 blocks of 32
      CHECK(m.splitFactor == 1);
      CHECK(c.tiles == 5860);
      CHECK(c.blocksPerWave == 2 * spec.smCount);
      CHECK(c.waveUtilization >= 0.9);
      CHECK(c.waveUtilization == Approx(1.0));

      // the kernel itself: vertical packing caps the grid at one wave
      FusionPlan p = plan(rowReduce(750000, 32), spec, Policy::AStitch);
      auto ks = kernelsOf(p);
      REQUIRE(ks.size() == 1);
      CHECK(ks[0]->launch.blockSize == 1024);
      CHECK(ks[0]->launch.maxBlocks == 2 * spec.smCount);
      CHECK(ks[0]->launch.tiles == ir::Dim(5860));
    }
  }
}

TEST_CASE("thread mapping: Figure 6(b) <64,30000> runs a block per row: a split would not pay "
          "for its grid barrier",
          "[planner][mapping][fig6]") {
  // AStitch splits these rows across blocks to fill the wave. On the H100 the split ran slower
  // (10.5 µs against 8.8 unsplit, docs/performance.md): 64 blocks of 1024 threads with 16-byte
  // loads keep enough bytes in flight, and the grid barrier costs more than the idle SMs. The
  // cost model (fusion/cost_model.h) says the same on every profile. On sm_90 a row of 30000
  // is longer than one block keeps in registers: a cluster of 2 blocks shares each row (128
  // blocks, still no grid barrier).
  for (std::string dev : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      DeviceSpec spec = profile(dev);
      int cluster = dev == "h100" ? 2 : 1;
      MappingChoice c = mapRowReduce(64, 30000, spec);
      auto m = std::get<RowReduceMapping>(c.mapping);
      CHECK(m.kind == RowReduceMapping::Kind::BlockPerRow);
      CHECK(c.blockSize == 1024);
      CHECK(m.splitFactor == 1);
      CHECK(m.clusterBlocks == cluster);
      CHECK(c.tiles == 64 * cluster);

      FusionPlan p = plan(rowReduce(64, 30000), spec, Policy::AStitch);
      auto ks = kernelsOf(p);
      REQUIRE(ks.size() == 1);
      CHECK_FALSE(ks[0]->launch.cooperative);
      CHECK(ks[0]->launch.tiles == ir::Dim(64 * cluster));
      CHECK(ks[0]->launch.clusterRequired == (cluster > 1));
      CHECK(ks[0]->placement.at(id(p.graph, "row_sum")).partialsBuffer < 0);
    }
  }
}

TEST_CASE("thread mapping: a few very long rows split across blocks to fill the wave",
          "[planner][mapping][fig6]") {
  // 4 rows of 2^20 floats: 4 blocks would stream 16 MB from 4 SMs; split over the wave, the
  // grid barrier is cheap beside it.
  for (std::string dev : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      DeviceSpec spec = profile(dev);
      MappingChoice c = mapRowReduce(4, 1 << 20, spec);
      auto m = std::get<RowReduceMapping>(c.mapping);
      CHECK(m.kind == RowReduceMapping::Kind::BlockPerRow);
      CHECK(m.splitFactor > 1);
      CHECK(c.tiles == 4 * m.splitFactor);
      CHECK(c.tiles <= c.blocksPerWave);
      CHECK(c.waveUtilization >= 0.9);

      FusionPlan p = plan(rowReduce(4, 1 << 20), spec, Policy::AStitch);
      auto ks = kernelsOf(p);
      REQUIRE(ks.size() == 1);
      CHECK(ks[0]->launch.cooperative); // partials combined across blocks
      CHECK(ks[0]->placement.at(id(p.graph, "row_sum")).partialsBuffer >= 0);
    }
  }
}

TEST_CASE("thread mapping: the naive mappings XLA uses for Figure 6 waste the wave",
          "[planner][mapping][fig6]") {
  DeviceSpec v100 = profile("v100");
  // (a) 750000 blocks of 32 threads: 32 blocks per SM at most → 32 x 32 threads of 2048
  double a =
      double(std::min<int64_t>(750000, blocksPerWave(v100, 32))) * 32 / double(v100.threadSlots());
  CHECK(a == Approx(0.5));
  // (b) 64 blocks of 1024 threads on a device that holds 160
  double b = 64.0 * 1024 / double(v100.threadSlots());
  CHECK(b == Approx(0.4));
}

TEST_CASE("thread mapping: row lengths pick warp-per-row or block-per-row", "[planner][mapping]") {
  DeviceSpec spec = profile("a100");
  auto warp = std::get<RowReduceMapping>(mapRowReduce(16384, 768, spec).mapping);
  CHECK(warp.kind == RowReduceMapping::Kind::WarpPerRow);
  CHECK(warp.threadsPerRow == 32);
  CHECK(warp.vectorWidth == 4);
  auto small = std::get<RowReduceMapping>(mapRowReduce(100000, 8, spec).mapping);
  CHECK(small.threadsPerRow == 2); // sub-warp rows: 2 lanes of 4-wide vectors each
  CHECK(small.vectorWidth == 4);
  auto odd = std::get<RowReduceMapping>(mapRowReduce(100000, 7, spec).mapping);
  CHECK(odd.threadsPerRow == 8); // no vectors: one element per lane, lanes a power of two
  CHECK(odd.vectorWidth == 1);
  auto block = std::get<RowReduceMapping>(mapRowReduce(16384, 8192, spec).mapping);
  CHECK(block.kind == RowReduceMapping::Kind::BlockPerRow);
  CHECK(block.splitFactor == 1); // plenty of rows: no splitting
}

TEST_CASE("thread mapping: column reduce tiles 32 columns and splits the reduced dim when columns "
          "are few",
          "[planner][mapping]") {
  DeviceSpec spec = profile("v100");
  ir::Graph g = columnReduce(65536, 256);
  MappingChoice c = chooseThreadMapping(loopSpaceOf(g, id(g, "colsum")), spec);
  auto m = std::get<ColumnReduceMapping>(c.mapping);
  CHECK(m.tileColumns == 32);
  CHECK(m.tileRows == c.blockSize / 32);
  CHECK(m.splitFactor > 1);
  CHECK(c.tiles == 8 * m.splitFactor);
  CHECK(c.waveUtilization >= 0.9);
}

TEST_CASE("thread mapping: elementwise is vectorised by 4 when the innermost dim allows",
          "[planner][mapping]") {
  DeviceSpec spec = profile("h100");
  ir::Graph g = geluBias(256, 1024);
  MappingChoice c = chooseThreadMapping(loopSpaceOf(g, id(g, "gelu")), spec);
  auto m = std::get<ElementwiseMapping>(c.mapping);
  CHECK(m.vectorWidth == 4);
  CHECK(c.rowsPerTile == int64_t(c.blockSize) * m.elementsPerThread);
}

TEST_CASE("thread mapping: rows of a small tensor take more lanes of width 1 (half the code per "
          "thread); larger ones keep 4-wide vectors",
          "[planner][mapping][code-size]") {
  DeviceSpec spec = profile("h100");
  // graph_10000's clusters: [64, 64]. Width 4 would give 16 lanes of 4 per row; width 1 gives
  // 32 lanes of 2, and 64 rows still take a handful of blocks, each on an SM of its own.
  MappingChoice small = mapRowReduce(64, 64, spec);
  auto m = std::get<RowReduceMapping>(small.mapping);
  CHECK(m.kind == RowReduceMapping::Kind::WarpPerRow);
  CHECK(m.threadsPerRow == 32);
  CHECK(m.vectorWidth == 1);
  CHECK(small.tiles <= spec.smCount);
  // Rows of 8 in a tiny tensor: 8 lanes of 1 instead of 2 lanes of 4.
  auto tiny = std::get<RowReduceMapping>(mapRowReduce(4, 8, spec).mapping);
  CHECK(tiny.threadsPerRow == 8);
  CHECK(tiny.vectorWidth == 1);
  // Over 8192 elements (the suite's smallest rows, MLP's [1024, 64]) nothing changes.
  auto bigger = std::get<RowReduceMapping>(mapRowReduce(1024, 64, spec).mapping);
  CHECK(bigger.threadsPerRow == 16);
  CHECK(bigger.vectorWidth == 4);
  // Rows already 32 lanes of 4 wide gain nothing from width 1: they keep their vectors.
  auto wide = std::get<RowReduceMapping>(mapRowReduce(16, 128, spec).mapping);
  CHECK(wide.threadsPerRow == 32);
  CHECK(wide.vectorWidth == 4);

  // The stitched kernel's elementwise groups follow the row reduce's tiles: 16 rows of 64 over
  // 512 threads, 2 elements each, width 1. The plan prints the widths.
  FusionPlan p = plan(rowReduce(64, 64), spec, Policy::AStitch);
  auto ks = kernelsOf(p);
  REQUIRE(ks.size() == 1);
  auto km = std::get<RowReduceMapping>(ks[0]->groups.at(0).mapping);
  CHECK(km.vectorWidth == 1);
  CHECK(km.threadsPerRow == 32);
}

TEST_CASE("thread mapping: a column reduce over more than 2^31 assumed columns maps",
          "[planner][mapping]") {
  // [8, B, B] summed over its first dim: unbounded, B is assumed 2^20, so 2^40 columns. The
  // power of two above them overflowed an int and planning never ended (random graph 1059 with
  // a symbolic size).
  ir::Graph g;
  ir::Dim B = ir::Dim::symbol("B");
  auto x = g.parameter("x", {ir::DType::f32, {8, B, B}});
  g.addOutput(g.reduce(ir::ReduceKind::Sum, x, {0}, "col_sum"));
  LoopSpace space = loopSpaceOf(g, id(g, "col_sum"));
  REQUIRE(space.kind == LoopSpace::Kind::ColumnReduce);
  CHECK(space.assumedRows > (int64_t(1) << 31));
  MappingChoice c = chooseThreadMapping(space, profile("h100"));
  const auto& m = std::get<ColumnReduceMapping>(c.mapping);
  CHECK(m.tileColumns == 32);
  CHECK(m.splitFactor == 1);
}

TEST_CASE("thread mapping: rows packed into blocks between stitched stages take 256-thread blocks",
          "[planner][mapping]") {
  // Softmax over rows of 1024: a warp per row, three stages. In 1024-thread blocks an SM holds
  // one block and stalls at its barriers; in 256-thread blocks several share the SM.
  for (std::string dev : {"a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      FusionPlan p = plan(softmax(4096, 1024), profile(dev), Policy::AStitch);
      const KernelPlan& k = *kernelsOf(p).front();
      auto m = std::get<RowReduceMapping>(k.groups.front().mapping);
      CHECK(m.kind == RowReduceMapping::Kind::WarpPerRow);
      CHECK(k.stages.size() == 3);
      CHECK(k.launch.blockSize == 256);
      CHECK(m.rowsPerBlock == 8);
      CHECK(k.launch.maxBlocks >= 4 * profile(dev).smCount);
      // One stage (Figure 6(a)'s row sums): nothing to wait for, the big blocks stay.
      FusionPlan one = plan(rowReduce(750000, 32), profile(dev), Policy::AStitch);
      CHECK(kernelsOf(one).front()->launch.blockSize == 1024);
    }
  }
}

TEST_CASE("thread mapping: a kernel whose loops fit one tile with threads to spare takes the "
          "smallest block that holds them",
          "[planner][mapping]") {
  // Softmax over [4, 8]: 8 lanes a row, one warp's work. A 1024-thread block left 31 warps
  // loading their clamped row again and waiting at every barrier.
  DeviceSpec spec = profile("h100");
  FusionPlan p = plan(softmax(4, 8), spec, Policy::AStitch);
  const KernelPlan& k = *kernelsOf(p).front();
  auto m = std::get<RowReduceMapping>(k.groups.front().mapping);
  CHECK(m.kind == RowReduceMapping::Kind::WarpPerRow);
  CHECK(k.launch.blockSize == 32);
  CHECK(m.rowsPerBlock == 32 / m.threadsPerRow);
  // 12 rows of 8 lanes: 96 threads, a 128-thread block.
  CHECK(kernelsOf(plan(softmax(12, 8), spec, Policy::AStitch)).front()->launch.blockSize == 128);
  // Rows that take two tiles at the chosen block keep it.
  CHECK(kernelsOf(plan(rowReduce(64, 64), spec, Policy::AStitch)).front()->launch.blockSize ==
        1024);
  // A whole row per block whose threads take more than one step of it keeps its block.
  ir::Graph longRow = rowReduce(1, 4096);
  LoopSpace s = loopSpaceOf(longRow, id(longRow, "row_sum"));
  int chosen = chooseThreadMapping(s, spec).blockSize;
  CHECK(smallestBlockForOneTile({s}, spec, chosen) == chosen);
  // Elementwise over 40 f32 (vectors of 4): 10 threads' work, one warp.
  LoopSpace e;
  e.shape = {5, 8};
  e.tileDims = {0, 1};
  e.rows = 40;
  e.assumedRows = 40;
  e.innerDivisor = 8;
  CHECK(smallestBlockForOneTile({e}, spec, 1024) == 32);
  // A symbolic loop may be bound to any size: the chosen block stays.
  e.shape = {ir::Dim::symbol("B"), 8};
  CHECK(smallestBlockForOneTile({e}, spec, 1024) == 1024);
}
