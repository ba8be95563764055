// Thread-block clusters (fusion/cluster_plan.h, codegen/cluster_access.h): on sm_90 a cooperative
// stitched kernel loads the rows its phases stage once per cluster, each block its share, and
// combines its blocks' column-sum partials in shared memory before one row per cluster goes to
// global memory. Outputs match the interpreter for any cluster size the launch picks, and the
// bytes saved are exactly the per-block copies the cluster no longer makes.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "bench/sweep_workloads.h"
#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "device_profiles.h"
#include "fusion/cluster_plan.h"
#include "fusion/phase_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "ir/interpreter.h"
#include "random_graph.h"
#include "runtime/conditioning.h"
#include "runtime/output_check.h"
#include "ptxas_or_skip.h"
#include "sim_runner.h"
#include "two_phase_graph.h"

using namespace weft;
using ir::DType;

using test::h100;
using test::onlyKernel;
using test::TwoPhase;

namespace {

/// The plan with every cluster decision undone: what the kernel was before clusters.
fusion::FusionPlan withoutClusters(fusion::FusionPlan plan) {
  for (fusion::Step& step : plan.steps)
    if (auto* k = std::get_if<fusion::KernelPlan>(&step)) {
      k->launch.clusterSize = 1;
      for (fusion::PhasePlan& p : k->phases)
        p.throughCluster = false;
    }
  return plan;
}

uint64_t globalBytes(const std::vector<LaunchCounters>& counters) {
  uint64_t bytes = 0;
  for (const LaunchCounters& c : counters)
    bytes += c.globalBytes();
  return bytes;
}

} // namespace

TEST_CASE("the cluster size fits two SMs' blocks, the portable limit and the grid",
          "[planner]") {
  DeviceSpec h = h100();
  CHECK(fusion::clusterSizeFor(h, 264, 2) == 4);
  CHECK(fusion::clusterSizeFor(h, 132, 1) == 2);
  CHECK(fusion::clusterSizeFor(h, 528, 4) == 8);
  CHECK(fusion::clusterSizeFor(h, 1056, 8) == 8); // the portable limit
  CHECK(fusion::clusterSizeFor(h, 266, 2) == 2);  // 266 = 2 * 7 * 19
  CHECK(fusion::clusterSizeFor(h, 7, 2) == 1);
  CHECK(fusion::clusterSizeFor(h, 1, 2) == 1);
  CHECK(fusion::clusterSizeFor(*deviceSpecProfile("a100"), 216, 2) == 1); // sm_80: none
}

TEST_CASE("a cooperative kernel on sm_90 stages rows and combines partials through its cluster",
          "[codegen][traffic][sim]") {
  // 4096 rows in tiles of 4: more tiles than one wave, so the grid is the one-wave grid. Phase 0
  // sums w's columns (256 f32 partials per block), phase 1 stages the column sums (1 KiB).
  TwoPhase t(4096, 256);
  fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  REQUIRE(k.launch.cooperative);
  int64_t grid = k.launch.maxBlocks;
  REQUIRE(k.launch.tiles.size() >= grid);
  int64_t c = k.launch.clusterSize;
  CHECK(c == fusion::clusterSizeFor(plan.device, grid, grid / plan.device.smCount));
  REQUIRE(c > 1);
  REQUIRE(k.phases.size() == 2);
  CHECK(k.phases[0].throughCluster); // the column sum's partials
  CHECK(k.phases[1].throughCluster); // the staged column sums
  std::string printed = fusion::printFusionPlan(plan);
  CHECK_THAT(printed, Catch::Contains("staged in shared memory once per cluster"));
  CHECK_THAT(printed, Catch::Contains("block partials combined across the cluster"));
  CHECK_THAT(printed, Catch::Contains(fmt::format("cooperative yes, cluster {}", c)));

  codegen::CompiledModule m = codegen::compileToPtx(plan);
  CHECK_THAT(m.ptx, Catch::Contains("mapa.shared::cluster.u32"));
  CHECK_THAT(m.ptx, Catch::Contains("barrier.cluster.wait"));
  std::vector<LaunchCounters> with, without;
  // (column sums of 4096 rows: 2e-3 of max(1, |want|) holds with or without clusters)
  test::checkOnSim(plan, m, 2e-3, &with);
  fusion::FusionPlan plain = withoutClusters(plan);
  test::checkOnSim(plain, codegen::compileToPtx(plain), 2e-3, &without);
  REQUIRE(with.size() == 1);
  CHECK(with[0].clusterBarriers > 0);
  CHECK(with[0].clusterSharedLoads > 0);
  CHECK(without[0].clusterSharedLoads == 0);
  // Saved: the staged column sums' loads and the partial rows' stores and loads of every block
  // but one per cluster (1 KiB each, whole sectors).
  int64_t row = 256 * 4;
  CHECK(int64_t(globalBytes(without)) - int64_t(globalBytes(with)) == (grid - grid / c) * 3 * row);
}

TEST_CASE("a kernel planned in clusters is correct in clusters of any size the launch picks",
          "[codegen][sim]") {
  // Rows of 301 f32 or 603 f16 (worth a cluster over the grid): the ranks' shares are uneven
  // (76, 76, 76, 73 and 151, 151, 151, 150 in clusters of 4); f16 keeps its partials in f32.
  for (DType dtype : {DType::f32, DType::f16}) {
    TwoPhase t(2048, dtype == DType::f32 ? 301 : 603, dtype);
    fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
    REQUIRE(onlyKernel(plan).launch.clusterSize > 1);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    for (int size : {1, 2, onlyKernel(plan).launch.clusterSize}) {
      INFO(ir::dtypeName(dtype) << " in clusters of " << size);
      m.kernels.at(0).launch.clusterSize = size;
      std::vector<LaunchCounters> counters;
      test::checkOnSim(plan, m, dtype == DType::f16 ? 5e-2 : 2e-3, &counters);
      CHECK((counters.at(0).clusterSharedLoads > 0) == (size > 1));
    }
  }
}

TEST_CASE("kernels in clusters assemble with ptxas for sm_90 without spills", "[ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    TwoPhase t(4096, 512, dtype);
    fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
    REQUIRE(onlyKernel(plan).launch.clusterSize > 1);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
    INFO(ir::dtypeName(dtype) << "\n" << r.log);
    REQUIRE(r.ok());
    for (const codegen::PtxasFunctionReport& f : r.functions) {
      CHECK(f.spillStores == 0);
      CHECK(f.spillLoads == 0);
    }
  }
}

TEST_CASE("random graphs with every cooperative kernel in clusters match the interpreter",
          "[codegen][sim][differential]") {
  // Clusters wherever a cooperative kernel's grid allows one, however few bytes they save
  // (planClusters with a threshold of one byte): staged inputs of every dtype and shape, partials of
  // every reduce kind, uneven shares. Checked as `weft run --check` checks. (Seeds 400 to 3999
  // passed too when the clusters landed: about 240 graphs with a kernel in clusters.)
  int clustered = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    ir::Graph g = testing::randomGraph(seed);
    fusion::FusionPlan plan;
    try {
      plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      codegen::compileToPtx(plan);
    } catch (const std::exception&) {
      continue; // needs compile()'s passes first: test_runtime's differential test has it
    }
    bool any = false;
    for (fusion::Step& step : plan.steps)
      if (auto* k = std::get_if<fusion::KernelPlan>(&step)) {
        fusion::planClusters(plan.graph, plan.device, *k, 1);
        any = any || k->launch.clusterSize > 1;
      }
    if (!any) continue;
    ++clustered;
    INFO("seed " << seed << "\n" << fusion::printFusionPlan(plan));
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    std::vector<HostTensor> inputs = frontend::randomInputs(g, {}, seed);
    std::vector<HostTensor> expected = ir::interpret(g, inputs);
    std::vector<HostTensor> got = test::runOnSim(plan, m, inputs);
    std::vector<std::vector<double>> spread =
        runtime::conditioningSpread(g, inputs, expected, {}, seed);
    for (size_t i = 0; i < expected.size(); ++i) {
      runtime::TensorCheck c =
          runtime::checkTensor(g.node(g.outputs()[i]).name, expected[i], got[i], &spread[i]);
      INFO(c.str());
      CHECK(c.passed);
    }
  }
  CHECK(clustered >= 20);
}

namespace {

/// A sweep point's graph (bench/sweep_workloads.h) at a size the simulator runs in seconds.
ir::Graph rowGraph(const std::string& op, DType dtype, int64_t rows, int64_t row) {
  bench::SweepPoint p;
  p.op = op;
  p.dtype = dtype;
  p.rows = rows;
  p.row = row;
  return frontend::readGraphJson(bench::sweepGraphJson(p), p.name()).graph;
}

const fusion::RowReduceMapping& rowMapping(const fusion::KernelPlan& k) {
  return std::get<fusion::RowReduceMapping>(k.groups.at(0).mapping);
}

} // namespace

TEST_CASE("staged rows copy in 16-byte vectors where that saves instructions, at any cluster size",
          "[codegen][sim]") {
  // Vectors pay where the load/store pairs they save outnumber the second loop's cost per warp
  // (fusion/phase_planner.h): cluster_200's 768-float rows in 128-thread blocks, not a bias of
  // 32 in 1024-thread blocks.
  CHECK(fusion::stagedCopyVector(DType::f32, 768, 128) == 4);
  CHECK(fusion::stagedCopyVector(DType::f32, 32, 1024) == 1);
  CHECK(fusion::stagedCopyVector(DType::bf16, 4096, 256) == 8);
  CHECK(fusion::stagedCopyVector(DType::f64, 100000, 1024) == 2);
  // Column sums of 1,501 floats (odd: every rank's share is whole vectors but the last, whose
  // tail is copied one element at a time), staged through the cluster.
  TwoPhase t(1024, 1501);
  fusion::FusionPlan plan = fusion::plan(t.g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  REQUIRE(k.launch.clusterSize > 1);
  REQUIRE(k.phases.size() == 2);
  REQUIRE(k.phases[1].staged.size() == 1);
  CHECK(k.phases[1].staged[0].vector == 4);
  CHECK_THAT(fusion::printFusionPlan(plan), Catch::Contains("%col +0 (x4)"));
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  CHECK_THAT(m.ptx, Catch::Contains("ld.shared::cluster.v4.b32"));
  for (int size : {1, 2, k.launch.clusterSize}) {
    INFO("clusters of " << size);
    m.kernels.at(0).launch.clusterSize = size;
    std::vector<LaunchCounters> counters;
    test::checkOnSim(plan, m, 2e-3, &counters);
    CHECK((counters.at(0).clusterSharedLoads > 0) == (size > 1));
  }
}

TEST_CASE("rows too long for one block's registers are shared by a thread-block cluster",
          "[planner][codegen]") {
  // 1024 threads keep 16 elements each of a row: 16,384. Longer rows take the fewest blocks of a
  // cluster (a power of two up to 8) that hold their parts; a cluster of 4 such blocks gives way
  // to 8 blocks of 512 (two blocks an SM: one cluster's loads in flight while another's
  // barriers wait; the H200 measured it faster at 65,536 and slower at 32,768 in 4 x 512). Every
  // block keeps its part in registers (slots), so x is read once.
  struct Case {
    int64_t row;
    int cluster;
    int block;
  };
  for (Case c : {Case{16384, 1, 1024}, Case{20000, 2, 1024}, Case{32768, 2, 1024},
                 Case{65536, 8, 512}, Case{131072, 8, 1024}}) {
    INFO("softmax f32 row " << c.row);
    fusion::FusionPlan plan =
        fusion::plan(rowGraph("softmax", DType::f32, 256, c.row), h100(), fusion::Policy::AStitch);
    const fusion::KernelPlan& k = onlyKernel(plan);
    CHECK(rowMapping(k).clusterBlocks == c.cluster);
    CHECK(k.launch.blockSize == c.block);
    // ptxas is told the two blocks per SM the 512-thread plan counts on
    CHECK(k.minBlocksPerSM == (c.block == 512 ? 2 : 0));
    CHECK(k.launch.clusterSize == c.cluster);
    CHECK(k.launch.clusterRequired == (c.cluster > 1));
    REQUIRE(k.phases.size() == 1);
    CHECK(k.phases[0].space.clusterParts == c.cluster);
    CHECK(k.phases[0].slots.has_value());
    if (c.cluster > 1) {
      CHECK(k.launch.tiles.size() == 256 * c.cluster);
      CHECK(k.launch.maxBlocks % c.cluster == 0);
      CHECK_THAT(fusion::printFusionPlan(plan),
                 Catch::Contains(fmt::format("cluster_per_row={}", c.cluster)));
    }
  }
  // sm_80 has no clusters: a block per row, read again
  fusion::FusionPlan a100 = fusion::plan(rowGraph("softmax", DType::f32, 256, 65536),
                                         *deviceSpecProfile("a100"), fusion::Policy::AStitch);
  CHECK(rowMapping(onlyKernel(a100)).clusterBlocks == 1);
  CHECK_FALSE(onlyKernel(a100).launch.clusterRequired);
}

TEST_CASE("softmax, layer norm and RMSNorm over rows shared by a cluster read their input once "
          "and match the interpreter",
          "[codegen][traffic][sim]") {
  // 20,000 elements in 2 parts of 3 steps of 4,096: part 1 runs past the row (masked); 40,000
  // in 4 parts of 3 steps, the last one 3,136 long. bf16 keeps its statistics in f32. (Fewer
  // rows than SMs: rows of 65,536 would be split across the grid instead.)
  struct Case {
    std::string op;
    DType dtype;
    int64_t rows, row;
  };
  for (const Case& c : {Case{"softmax", DType::f32, 16, 20000}, Case{"softmax", DType::f32, 16, 40000},
                        Case{"layer_norm", DType::f32, 16, 20000},
                        Case{"layer_norm", DType::bf16, 16, 40000},
                        Case{"rms_norm", DType::f32, 16, 40000},
                        Case{"rms_norm", DType::bf16, 16, 20000}}) {
    INFO(c.op << " " << ir::dtypeName(c.dtype) << " [" << c.rows << ", " << c.row << "]");
    ir::Graph g = rowGraph(c.op, c.dtype, c.rows, c.row);
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    const fusion::KernelPlan& k = onlyKernel(plan);
    REQUIRE(k.launch.clusterRequired);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    std::vector<HostTensor> inputs = frontend::randomInputs(g, {}, 7);
    std::vector<HostTensor> expected = ir::interpret(g, inputs);
    std::vector<LaunchCounters> counters;
    std::vector<HostTensor> got = test::runOnSim(plan, m, inputs, {}, &counters);
    std::vector<std::vector<double>> spread =
        runtime::conditioningSpread(g, inputs, expected, {}, 7);
    for (size_t i = 0; i < expected.size(); ++i) {
      runtime::TensorCheck check =
          runtime::checkTensor(g.node(g.outputs()[i]).name, expected[i], got[i], &spread[i]);
      INFO(check.str());
      CHECK(check.passed);
    }
    // x read once and the output written once: no part of a row read again. gamma and beta
    // (layer norm, RMSNorm) are read by each row's cluster (a GPU's L2 serves them).
    int64_t bytes = 0;
    for (ir::NodeId v : g.inputs())
      bytes += test::bytesOf(g, v) * (g.node(v).type.shape.size() == 1 ? c.rows : 1);
    for (ir::NodeId v : g.outputs())
      bytes += test::bytesOf(g, v);
    REQUIRE(counters.size() == 1);
    CHECK(int64_t(counters[0].globalBytes()) <= bytes + bytes / 100);
    CHECK(counters[0].clusterSharedLoads > 0);
  }
}

TEST_CASE("a row shared by a cluster falls back to a block per row where its part cannot stay in "
          "registers",
          "[planner]") {
  // Two groups in the kernel (a row sum and a column sum of the same rows): the tile runs other
  // stages besides the row's, so the kernel is planned with a block per row.
  ir::Graph g;
  ir::Shape shape = {64, 65536};
  auto x = g.parameter("x", {DType::f32, shape});
  auto row = g.reduce(ir::ReduceKind::Sum, x, {1}, "row");
  auto centered = g.binary(ir::OpKind::Sub, x, g.broadcastInDim(row, shape, {0}), "centered");
  auto col = g.reduce(ir::ReduceKind::Sum, centered, {0}, "col");
  g.setOutputs({col});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  for (const fusion::Step& step : plan.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&step)) {
      for (const fusion::Group& group : k->groups)
        CHECK(fusion::clusterBlocks(group.mapping) == 1);
      CHECK_FALSE(k->launch.clusterRequired);
    }
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  test::checkOnSim(plan, m, 1e-2);
}

TEST_CASE("a row read once takes a cluster only where its rows leave SMs idle", "[planner][sim]") {
  // A row max keeps no value of the row for a later stage: each element is read once with or
  // without a cluster. With more rows than one wave of clusters holds, a block per row loses
  // nothing and saves the cluster barriers; with 64 rows the cluster of 2 puts 128 SMs on them
  // instead of 64. Softmax keeps its row in registers: a cluster at any count.
  auto rowMax = [](int64_t rows, int64_t row) {
    ir::Graph g;
    auto x = g.parameter("x", {DType::f32, {rows, row}});
    g.setOutputs({g.reduce(ir::ReduceKind::Max, x, {1}, "m")});
    return g;
  };
  for (fusion::Policy policy : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch}) {
    INFO(fusion::policyName(policy));
    fusion::FusionPlan many = fusion::plan(rowMax(512, 30000), h100(), policy);
    CHECK(rowMapping(onlyKernel(many)).clusterBlocks == 1);
    CHECK_FALSE(onlyKernel(many).launch.clusterRequired);
    fusion::FusionPlan few = fusion::plan(rowMax(64, 30000), h100(), policy);
    CHECK(rowMapping(onlyKernel(few)).clusterBlocks == 2);
    CHECK(onlyKernel(few).launch.clusterRequired);
  }
  fusion::FusionPlan softmax =
      fusion::plan(rowGraph("softmax", DType::f32, 512, 30000), h100(), fusion::Policy::AStitch);
  CHECK(rowMapping(onlyKernel(softmax)).clusterBlocks == 2);

  // Read once either way: 300 rows of 20,000 without a cluster, 64 with one (within 2%: the
  // warps past a ragged row's end re-read its last vector, one sector each).
  for (int64_t rows : {300, 64}) {
    INFO(rows << " rows");
    ir::Graph g = rowMax(rows, 20000);
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    CHECK(onlyKernel(plan).launch.clusterRequired == (rows == 64));
    std::vector<LaunchCounters> counters;
    test::checkOnSim(plan, codegen::compileToPtx(plan), 0, &counters);
    CHECK(globalBytes(counters) <= uint64_t(rows) * 20000 * 4 * 102 / 100);
  }
}

TEST_CASE("kernels whose rows a cluster shares assemble with ptxas for sm_90 without spills",
          "[ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (const char* op : {"softmax", "layer_norm", "rms_norm"})
    for (DType dtype : {DType::f32, DType::bf16})
      for (int64_t row : {20000, 65536, 262144}) {
        fusion::FusionPlan plan =
            fusion::plan(rowGraph(op, dtype, 256, row), h100(), fusion::Policy::AStitch);
        INFO(op << " " << ir::dtypeName(dtype) << " row " << row);
        REQUIRE(onlyKernel(plan).launch.clusterRequired);
        codegen::CompiledModule m = codegen::compileToPtx(plan);
        codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
        INFO(r.log);
        REQUIRE(r.ok());
        for (const codegen::PtxasFunctionReport& f : r.functions) {
          CHECK(f.spillStores == 0);
          CHECK(f.spillLoads == 0);
        }
      }
}
