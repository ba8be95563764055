#include <catch2/catch.hpp>

#include "frontend/json_reader.h"
#include "fusion/launch_config.h"
#include "fusion/plan.h"
#include "fusion/stitching_scheme.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {
DeviceSpec profile(const std::string& name) {
  return *deviceSpecProfile(name);
}
int64_t blocksPerWaveOf(const DeviceSpec& spec, const KernelPlan& k) {
  return blocksPerWave(spec, k.launch.blockSize, k.launch.maxRegisters, k.launch.sharedBytes);
}
} // namespace

/// Figure 7 as the paper plans it: power.1 (over `columns` > 4,096) is reduce.1's sub-dominant,
/// stored in global memory behind a grid barrier; at the paper's 128 columns every block
/// computes it for itself instead (fusion/graph_queries.h, blockComputable), one grid barrier
/// fewer.
static void checkFig7(const FusionPlan& p, bool blockComputed) {
  const ir::Graph& g = p.graph;
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = *kernelsOf(p)[0];
  CHECK(dominants(g, k) == std::vector<std::string>{"reduce.1", "reduce.2"});
  CHECK(names(g, groupDominatedBy(g, k, "reduce.1").subDominants) ==
        (blockComputed ? std::vector<std::string>{} : std::vector<std::string>{"power.1"}));
  CHECK(names(g, groupDominatedBy(g, k, "reduce.2").subDominants) ==
        std::vector<std::string>{"multiply.1"});

  CHECK(storageOf(g, k, "reduce.1") == Storage::Shared); // regional
  CHECK(storageOf(g, k, "power.1") ==
        (blockComputed ? Storage::Register : Storage::Global)); // block-local or global
  CHECK(storageOf(g, k, "reduce.2") == Storage::Global);   // global
  CHECK(storageOf(g, k, "multiply.1") == Storage::Output); // "independent": no reader here
  for (std::string local :
       {"broadcast.1", "add.1", "divide.1", "broadcast.2", "add.2", "broadcast.3"})
    CHECK(storageOf(g, k, local) == Storage::Register);

  // power.1 first (its readers need all of it), unless each block computes its own; then
  // reduce.1 and, in the same tiles, the column reduce over its rows (so add.1 reads reduce.1 in
  // the block that reduced it); then multiply.1 once reduce.2 is combined across blocks
  std::vector<std::vector<std::string>> stages = {{"reduce.1"}, {"reduce.2"}, {"multiply.1"}};
  std::vector<Barrier> expected = {Barrier::None, Barrier::Block, Barrier::Grid};
  if (!blockComputed) {
    stages.insert(stages.begin(), {"power.1"});
    expected = {Barrier::None, Barrier::Grid, Barrier::Block, Barrier::Grid};
  }
  CHECK(barriers(k) == expected);
  REQUIRE(k.stages.size() == stages.size());
  for (size_t i = 0; i < stages.size(); ++i)
    CHECK(names(g, k.stages[i].materialized) == stages[i]);
  CHECK(k.launch.cooperative);
  CHECK(k.launch.maxBlocks > 0);
  // Each phase that reads power.1 computes it into shared memory, or copies it from global
  size_t staging = 0;
  for (const PhasePlan& phase : k.phases)
    for (const StagedInput& in : phase.staged)
      if (in.input == id(g, "power.1")) {
        CHECK(in.computed == blockComputed);
        ++staging;
      }
  if (blockComputed) CHECK(staging == 2); // reduce.2's phase and multiply.1's

  const Group& g1 = groupDominatedBy(g, k, "reduce.1");
  auto m1 = std::get<RowReduceMapping>(g1.mapping);
  CHECK(m1.kind == RowReduceMapping::Kind::WarpPerRow); // rows of 32: packed 128 to a block
  CHECK(m1.threadsPerRow == 8);                         // 8 lanes of 4-wide vectors
  CHECK(g1.space.at(id(g, "reduce.1")) == OpSpace::Row);
  if (!blockComputed)
    CHECK(g1.space.at(id(g, "power.1")) == OpSpace::Other); // a projection of the rows
  const Group& g2 = groupDominatedBy(g, k, "reduce.2");
  CHECK(g2.follows == 0);
  CHECK(g2.acrossTiles); // the column sum runs in reduce.1's tiles, partials across blocks
  CHECK(g2.rowsPerTile == g1.rowsPerTile);
  CHECK(g2.space.at(id(g, "add.1")) == OpSpace::Loop);
  CHECK(g2.space.at(id(g, "multiply.1")) == OpSpace::Loop);
  CHECK(k.placement.at(id(g, "reduce.2")).partialsBuffer >= 0);
}

TEST_CASE("stitching: AStitch Figure 7 — reduce.1 regional, power.1 computed per block, reduce.2 "
          "global, one kernel",
          "[planner][stitching][fig7]") {
  for (std::string dev : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      checkFig7(plan(astitchFig7(), profile(dev), Policy::AStitch), true);
    }
  }
}

TEST_CASE("stitching: AStitch Figure 7 over 8,192 columns — power.1 global behind a grid barrier",
          "[planner][stitching][fig7]") {
  for (std::string dev : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      checkFig7(plan(astitchFig7(64, 8192), profile(dev), Policy::AStitch), false);
    }
  }
}

TEST_CASE("stitching: examples/graphs/astitch_fig7.json plans like the built Figure 7",
          "[planner][stitching][fig7]") {
  frontend::ParsedGraph parsed =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/astitch_fig7.json");
  CHECK(parsed.graph.size() == astitchFig7().size());
  for (std::string dev : {"v100", "a100", "h100"}) {
    DYNAMIC_SECTION(dev) {
      checkFig7(plan(ir::bindSymbols(parsed.graph, {{"B", 4096}}), profile(dev), Policy::AStitch),
                true);
    }
  }
}

TEST_CASE("stitching: layer norm is one kernel whose stages wait for their warp",
          "[planner][stitching]") {
  FusionPlan p = plan(layerNorm(16384, 768), profile("a100"), Policy::AStitch);
  const ir::Graph& g = p.graph;
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = *kernelsOf(p)[0];
  CHECK(dominants(g, k) == std::vector<std::string>{"sum"});
  const Group& g0 = k.groups[0];
  CHECK(g0.space.at(id(g, "mean")) == OpSpace::Row);
  CHECK(g0.space.at(id(g, "rstd")) == OpSpace::Row);
  CHECK(g0.space.at(id(g, "centered")) == OpSpace::Loop);
  CHECK(storageOf(g, k, "sum") == Storage::Shared);
  CHECK(storageOf(g, k, "mean") == Storage::Shared);
  CHECK(storageOf(g, k, "sqsum") == Storage::Shared);
  CHECK(storageOf(g, k, "rstd") == Storage::Shared);
  CHECK(storageOf(g, k, "out") == Storage::Output);
  CHECK(storageOf(g, k, "centered") == Storage::Register);
  // A warp per row: sum and sqsum are combined by the row's lanes, mean and rstd computed by
  // every lane of the row from them, and every reader is in the row's lanes (the reduces, the
  // output over the loop in the row slots): each stage waits for its warp only.
  for (const char* v : {"sum", "mean", "sqsum", "rstd"})
    CHECK(k.placement.at(id(g, v)).warpLocal);
  CHECK(barriers(k) == std::vector<Barrier>{Barrier::None, Barrier::Warp, Barrier::Warp,
                                            Barrier::Warp, Barrier::Warp});
  CHECK_FALSE(hasGrid(k));
  CHECK_FALSE(k.launch.cooperative);
  // x is read by three stages of the same group: loaded once, kept in registers
  CHECK(k.placement.at(id(g, "x")).registerReuse);
  auto m = std::get<RowReduceMapping>(groupDominatedBy(g, k, "sum").mapping);
  CHECK(m.kind == RowReduceMapping::Kind::WarpPerRow);
  CHECK(k.launch.blockSize == 256); // stages that wait for the warp: packsRowsBetweenStages
  CHECK(k.launch.sharedBytes < 4096); // a few floats per row of the tile
}

TEST_CASE("stitching: each workload becomes exactly one kernel under astitch",
          "[planner][stitching]") {
  struct Case {
    std::string name;
    ir::Graph graph;
    bool gridBarrier;
  };
  std::vector<Case> cases;
  cases.push_back({"softmax", softmax(), false});
  cases.push_back({"residual layer norm", residualLayerNorm(), false});
  cases.push_back({"gelu bias", geluBias(), false});
  cases.push_back({"rms norm", rmsNorm(), false});
  cases.push_back({"column reduce", columnReduce(), true});
  cases.push_back({"layer norm backward", layerNormBackward(), true});
  for (const Case& c : cases) {
    for (std::string dev : {"v100", "a100", "h100"}) {
      DYNAMIC_SECTION(c.name << " on " << dev) {
        FusionPlan p = plan(c.graph, profile(dev), Policy::AStitch);
        CHECK(p.kernelCount() == 1);
        const KernelPlan& k = *kernelsOf(p)[0];
        CHECK(k.launch.cooperative == c.gridBarrier);
        CHECK(k.outputs.size() == c.graph.outputs().size());
      }
    }
  }
}

TEST_CASE("stitching: softmax keeps both reductions on chip", "[planner][stitching]") {
  FusionPlan p = plan(softmax(4096, 1024), profile("h100"), Policy::AStitch);
  const ir::Graph& g = p.graph;
  const KernelPlan& k = *kernelsOf(p)[0];
  CHECK(dominants(g, k) == std::vector<std::string>{"max"});
  CHECK(names(g, k.groups[0].subDominants) == std::vector<std::string>{"sum", "out"});
  CHECK(storageOf(g, k, "max") == Storage::Shared);
  CHECK(storageOf(g, k, "sum") == Storage::Shared);
  CHECK(storageOf(g, k, "exp") == Storage::Register); // recomputed per stage: exp is one-to-one
  // A warp per row: max and sum are combined by the row's lanes and read by them (the sum's
  // elements and the output's, in the row slots), so the stages wait for the warp only.
  CHECK(std::get<RowReduceMapping>(k.groups[0].mapping).kind == RowReduceMapping::Kind::WarpPerRow);
  CHECK(k.placement.at(id(g, "max")).warpLocal);
  CHECK(k.placement.at(id(g, "sum")).warpLocal);
  CHECK(barriers(k) == std::vector<Barrier>{Barrier::None, Barrier::Warp, Barrier::Warp});
  // A block per row: the block's threads combine each reduce, so they wait for the block.
  FusionPlan wide = plan(softmax(64, 8192), profile("h100"), Policy::AStitch);
  const KernelPlan& kw = *kernelsOf(wide)[0];
  CHECK(std::get<RowReduceMapping>(kw.groups[0].mapping).kind == RowReduceMapping::Kind::BlockPerRow);
  CHECK_FALSE(kw.placement.at(id(wide.graph, "max")).warpLocal);
  CHECK(barriers(kw) == std::vector<Barrier>{Barrier::None, Barrier::Block, Barrier::Block});
}

TEST_CASE("stitching: layer norm backward — one pass: sibling reduces share a stage, column "
          "reduces accumulate across the row tiles",
          "[planner][stitching]") {
  FusionPlan p = plan(layerNormBackward(16384, 768), profile("v100"), Policy::AStitch);
  const ir::Graph& g = p.graph;
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = *kernelsOf(p)[0];
  CHECK(dominants(g, k) == std::vector<std::string>{"dgamma", "sum_dxhat"});
  const Group& columns = groupDominatedBy(g, k, "dgamma");
  CHECK(columns.acrossTiles);
  CHECK(columns.follows == 1);
  REQUIRE(k.stages.size() == 3);
  CHECK(names(g, k.stages[0].materialized) == std::vector<std::string>{"dgamma", "dbeta"});
  CHECK(names(g, k.stages[1].materialized) ==
        std::vector<std::string>{"sum_dxhat", "sum_dxhat_xhat", "scale"});
  CHECK(names(g, k.stages[2].materialized) == std::vector<std::string>{"dx"});
  // dx reads the row sums and scale, each combined or computed in its row's lanes: the warp's
  // barrier (fusion/stitching_scheme.cc, warpLocalBarriers)
  CHECK(barriers(k) == std::vector<Barrier>{Barrier::None, Barrier::None, Barrier::Warp});
  CHECK(storageOf(g, k, "dgamma") == Storage::Output);
  CHECK(k.placement.at(id(g, "dgamma")).partialsBuffer >= 0);
  CHECK(k.placement.at(id(g, "dbeta")).partialsBuffer >= 0);
  CHECK(storageOf(g, k, "sum_dxhat") == Storage::Shared);
  CHECK(storageOf(g, k, "scale") == Storage::Shared);
  CHECK(k.launch.cooperative); // the column partials are combined across blocks
}

TEST_CASE(
    "stitching: regional values over the shared-memory budget are demoted to global one at a time",
    "[planner][stitching]") {
  // layer norm's four row statistics take 32 rows x 4 bytes each per tile, beside the row
  // reduce's 256 bytes of scratch for coalesced results (32 rows per pass x 8); a budget of
  // 456 bytes holds one of them: demote sum, then mean, then sqsum, and stop
  DeviceSpec spec = profile("a100");
  spec.sharedMemoryPerBlock = 456;
  FusionPlan p = plan(layerNorm(16384, 768), spec, Policy::AStitch);
  const ir::Graph& g = p.graph;
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = *kernelsOf(p)[0];
  CHECK(storageOf(g, k, "sum") == Storage::Global);
  CHECK(storageOf(g, k, "mean") == Storage::Global);
  CHECK(storageOf(g, k, "sqsum") == Storage::Global);
  CHECK(storageOf(g, k, "rstd") == Storage::Shared);
  CHECK(barriers(k) == std::vector<Barrier>{Barrier::None, Barrier::Grid, Barrier::Grid,
                                            Barrier::Grid, Barrier::Block});
  CHECK(k.launch.sharedBytes == 128);
  CHECK(k.launch.sharedBytes <= spec.sharedMemoryPerBlock);
  CHECK(k.launch.cooperative);
  CHECK(k.launch.maxBlocks <= blocksPerWaveOf(spec, k));
}

TEST_CASE("stitching: an across-tiles column max of a square loop is one value per result",
          "[planner][stitching]") {
  // Over [2, 2] in tiles of rows, the column max (and what is computed from it off the loop)
  // has the rows' shape but not their index: it is Other, never a row value; what the group
  // broadcasts back over the loop is Loop again (random graph 200809).
  ir::Graph g;
  auto x = g.parameter("x", {ir::DType::f32, {2, 2}});
  auto rowmin = g.reduce(ir::ReduceKind::Min, x, {1}, "rowmin");
  auto d = g.binary(ir::OpKind::Sub, x, g.broadcastInDim(rowmin, {2, 2}, {0}), "d");
  auto colmax = g.reduce(ir::ReduceKind::Max, d, {0}, "colmax");
  auto s = g.unary(ir::OpKind::Sin, colmax, "s");
  auto e = g.binary(ir::OpKind::Sub, d, g.broadcastInDim(s, {2, 2}, {1}), "e");
  g.setOutputs({e, g.unary(ir::OpKind::Abs, d, "a")});
  FusionPlan p = plan(g, profile("h100"), Policy::AStitch);
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = *kernelsOf(p)[0];
  const Group& across = groupDominatedBy(p.graph, k, "colmax");
  REQUIRE(across.acrossTiles);
  CHECK(across.space.at(colmax) == OpSpace::Other);
  CHECK(across.space.at(s) == OpSpace::Other);
  CHECK(across.space.at(e) == OpSpace::Loop);
  CHECK(across.space.at(d) == OpSpace::Loop);
}

TEST_CASE("stitching: symbolic shapes plan too (rows unknown until launch)",
          "[planner][stitching]") {
  ir::Graph g;
  ir::Dim b = ir::Dim::symbol("B");
  ir::NodeId x = g.parameter("x", {ir::DType::f32, {b, 768}});
  ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  ir::NodeId mean =
      g.binary(ir::OpKind::Div, sum, g.constant(ir::DType::f32, {b}, {768.0}), "mean");
  ir::NodeId centered =
      g.binary(ir::OpKind::Sub, x, g.broadcastInDim(mean, {b, 768}, {0}), "centered");
  g.addOutput(centered);
  FusionPlan p = plan(g, profile("h100"), Policy::AStitch);
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = *kernelsOf(p)[0];
  CHECK(storageOf(p.graph, k, "sum") == Storage::Shared);
  CHECK(storageOf(p.graph, k, "mean") == Storage::Shared);
  CHECK_FALSE(k.launch.tiles.isStatic());
  // x is kept in registers between the sum and the subtraction, so the launch assumes 64
  // registers: one 1024-thread block per SM, still one wave. The rows are symbolic, so a tile
  // may be ragged: its stages wait for the block, and it keeps the big blocks.
  CHECK(k.placement.at(x).registerReuse);
  CHECK(k.launch.maxRegisters == 64);
  CHECK(k.launch.blockSize == 1024);
  CHECK(k.launch.maxBlocks == 132);
  CHECK(barriers(k) == std::vector<Barrier>{Barrier::None, Barrier::Block, Barrier::Block});
  CHECK(k.groups[0].rows == b);
}

namespace {
/// n chained softmaxes over axis 1 of x: f32[rows, cols] (bench::chainedSoftmaxes's graph).
ir::Graph softmaxChain(int n, int64_t rows, int64_t cols) {
  ir::Graph g;
  const ir::Shape full = {rows, cols};
  ir::NodeId cur = g.parameter("x", {ir::DType::f32, full});
  for (int i = 0; i < n; ++i) {
    ir::NodeId mx = g.reduce(ir::ReduceKind::Max, cur, {1});
    ir::NodeId e = g.unary(ir::OpKind::Exp,
                           g.binary(ir::OpKind::Sub, cur, g.broadcastInDim(mx, full, {0})));
    ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, e, {1});
    cur = g.binary(ir::OpKind::Div, e, g.broadcastInDim(sum, full, {0}));
  }
  g.addOutput(cur);
  return g;
}
} // namespace

TEST_CASE("shared values leave room for the reduce emitters' scratch", "[fusion][stitching]") {
  // 128 chained softmaxes over [4096, 8] keep 2 KB per row reduce (tiles of 512 rows) in shared
  // memory until the planner demotes
  // some to global memory. It stopped at the device's limit without counting the 2 KB of
  // scratch a warp-per-row pass takes for coalesced results, and codegen refused the kernel
  // ("needs 234496 B of shared memory per block ... but h100 allows 232448 B").
  for (int n : {100, 128}) {
    FusionPlan p = plan(softmaxChain(n, 4096, 8), profile("h100"), Policy::AStitch);
    for (const auto& step : p.steps) {
      const auto* k = std::get_if<KernelPlan>(&step);
      if (!k) continue;
      int64_t end = 0, scratch = 0;
      for (const auto& [v, pl] : k->placement)
        if (pl.storage == Storage::Shared) end = std::max(end, pl.sharedOffset + pl.sharedBytes);
      for (const Group& g : k->groups)
        scratch = std::max(scratch, reduceEmitterScratchBytes(g.mapping, k->launch.blockSize));
      INFO(n << " softmaxes, kernel " << k->name);
      CHECK(end > 0);
      CHECK(end + scratch <= p.device.sharedMemoryPerBlock);
    }
  }
}
