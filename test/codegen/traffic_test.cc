// Global-memory traffic of emitted kernels, as the simulator counts it (32-byte sectors per
// warp request): vector groups load and store whole sectors, row-reduce results leave
// coalesced, and operator-level reuse reads a row-reduce group's input once per tile.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "ptxas_or_skip.h"
#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/pipeline.h"
#include "sim_runner.h"
#include "device_profiles.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::h100;

ir::Graph example(const std::string& name, int64_t rows) {
  std::filesystem::path f =
      std::filesystem::path(WEFT_SOURCE_DIR) / "examples" / "graphs" / (name + ".json");
  ir::Graph g = frontend::readGraphFile(f.string()).graph;
  ir::Binding bind;
  for (const std::string& s : g.symbols())
    bind[s] = rows;
  return ir::bindSymbols(g, bind);
}

int64_t sectorsOf(const ir::Graph& g, ir::NodeId v) {
  const ir::Node& n = g.node(v);
  int64_t bytes = ir::numElements(n.type.shape).size() * ir::dtypeBytes(n.type.dtype);
  return (bytes + 31) / 32;
}

/// Runs the plan's single kernel on the simulator, checks its outputs against the
/// interpreter and returns its counters.
LaunchCounters runOne(const fusion::FusionPlan& plan, codegen::CompiledModule* out = nullptr) {
  return test::checkOneKernelOnSim(plan, 1e-4, out);
}

const fusion::KernelPlan& onlyKernel(const fusion::FusionPlan& plan) {
  REQUIRE(plan.steps.size() == 1);
  return std::get<fusion::KernelPlan>(plan.steps[0]);
}

} // namespace

TEST_CASE("gelu_bias loads and stores whole vectors", "[codegen][traffic]") {
  fusion::FusionPlan plan = fusion::plan(example("gelu_bias", 64), h100(), fusion::Policy::AStitch);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  CHECK(m.ptx.find("ld.global.nc.v4.f32") != std::string::npos);
  CHECK(m.ptx.find("st.global.v4.f32") != std::string::npos);
  CHECK(m.ptx.find("ld.global.nc.f32") == std::string::npos); // no scalar input loads left
}

TEST_CASE("a vectorised elementwise kernel moves exactly its compulsory sectors",
          "[codegen][traffic][sim]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64, 128}});
  auto z = g.parameter("z", {DType::f32, {64, 128}});
  auto y = g.binary(OpKind::Mul, g.unary(OpKind::Exp, x, "e"), z, "y");
  g.setOutputs({y});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const auto& e = std::get<fusion::ElementwiseMapping>(onlyKernel(plan).groups.at(0).mapping);
  REQUIRE(e.vectorWidth == 4);
  LaunchCounters c = runOne(plan);
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x) + sectorsOf(g, z)));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, y)));
  CHECK(c.globalLoadRequests * 16 == c.globalSectorsRead); // 32 lanes x 16 bytes per request
}

TEST_CASE("f16 and f64 vector groups split into chunks of at most 16 bytes",
          "[codegen][traffic][sim]") {
  for (DType t : {DType::f16, DType::f64}) {
    INFO(ir::dtypeName(t));
    ir::Graph g;
    auto x = g.parameter("x", {t, {32, 256}});
    auto y = g.unary(OpKind::Neg, x, "y");
    g.setOutputs({y});
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    LaunchCounters c = runOne(plan);
    CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x)));
    CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, y)));
  }
}

TEST_CASE("warp-per-row results are stored coalesced", "[codegen][traffic][sim]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {4096, 32}});
  auto y = g.reduce(ir::ReduceKind::Sum, x, {1}, "y");
  g.setOutputs({y});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const auto& r = std::get<fusion::RowReduceMapping>(onlyKernel(plan).groups.at(0).mapping);
  REQUIRE(r.kind == fusion::RowReduceMapping::Kind::WarpPerRow);
  LaunchCounters c = runOne(plan);
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x)));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, y))); // not one sector per row
}

TEST_CASE("layer norm reads x once: operator-level reuse in registers", "[codegen][traffic][sim]") {
  ir::Graph g = example("layer_norm", 64);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  ir::NodeId x = g.inputs().at(0), gamma = g.inputs().at(1), beta = g.inputs().at(2);
  REQUIRE(g.node(x).name == "x");
  CHECK(k.placement.at(x).registerReuse);
  codegen::CompiledModule m;
  LaunchCounters c = runOne(plan, &m);
  // x once; gamma and beta once per block (staged in shared memory); y once.
  int64_t blocks = int64_t(c.blocks);
  CHECK(c.globalSectorsRead ==
        uint64_t(sectorsOf(g, x) + blocks * (sectorsOf(g, gamma) + sectorsOf(g, beta))));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, g.outputs().at(0))));
  CHECK(m.ptx.find(".maxnreg") == std::string::npos); // the kept values need the registers
}

TEST_CASE("residual add + layer norm: the stored sum is not read back", "[codegen][traffic][sim]") {
  ir::Graph g = example("residual_add_layer_norm", 64);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  LaunchCounters c = runOne(plan);
  int64_t inputs = 0, outputs = 0;
  for (ir::NodeId p : g.inputs())
    inputs += sectorsOf(g, p);
  for (ir::NodeId o : g.outputs())
    outputs += sectorsOf(g, o);
  CHECK(c.globalSectorsWritten == uint64_t(outputs));
  // Every input once, plus gamma and beta once more per block beyond the first.
  int64_t rowSized = 0;
  for (ir::NodeId p : g.inputs())
    if (g.node(p).type.shape.size() == 1) rowSized += sectorsOf(g, p);
  CHECK(c.globalSectorsRead == uint64_t(inputs + (int64_t(c.blocks) - 1) * rowSized));
}

TEST_CASE("softmax reads its mask once per tile, not once per row", "[codegen][traffic][sim]") {
  ir::Graph g = example("softmax", 2); // scores [2, 12, 128, 128], mask [2, 1, 1, 128]
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::Group& group = onlyKernel(plan).groups.at(0);
  REQUIRE(group.rows.isStatic());
  int64_t tiles = (group.rows.size() + group.rowsPerTile - 1) / group.rowsPerTile;
  LaunchCounters c = runOne(plan);
  ir::NodeId scores = g.inputs().at(0);
  int64_t maskRow = 128 * 4 / 32; // one batch's mask row, copied to shared memory per tile
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, scores) + tiles * maskRow));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, g.outputs().at(0))));
}

TEST_CASE("kernels that keep values in registers assemble without spills", "[ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (const char* sm : {"a100", "h100"})
    for (const char* name :
         {"layer_norm", "rms_norm", "softmax", "residual_add_layer_norm", "layer_norm_backward"}) {
      INFO(name << " on " << sm);
      fusion::FusionPlan plan =
          fusion::plan(example(name, 256), *deviceSpecProfile(sm), fusion::Policy::AStitch);
      codegen::CompiledModule m = codegen::compileToPtx(plan);
      codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
      INFO(r.log);
      REQUIRE(r.ok());
      for (const auto& f : r.functions) {
        CHECK(f.spillStores == 0);
        CHECK(f.spillLoads == 0);
      }
    }
}

TEST_CASE("a broadcast input reached through a convert is staged once per block",
          "[codegen][traffic][sim]") {
  // f16 RMSNorm computing in f32: w is converted before its broadcast over the rows.
  ir::Graph g;
  const int64_t rows = 256, hidden = 768;
  ir::Shape full = {rows, hidden};
  ir::NodeId x = g.parameter("x", {DType::f16, full});
  ir::NodeId w = g.parameter("w", {DType::f16, {hidden}});
  ir::NodeId xf = g.convert(x, DType::f32);
  ir::NodeId ss = g.reduce(ir::ReduceKind::Sum, g.binary(OpKind::Mul, xf, xf), {1});
  ir::NodeId ms =
      g.binary(OpKind::Div, ss, g.broadcastInDim(g.scalar(DType::f32, hidden), {rows}, {}));
  ir::NodeId r = g.unary(OpKind::Rsqrt, ms);
  ir::NodeId scaled = g.binary(OpKind::Mul, xf, g.broadcastInDim(r, full, {0}));
  g.addOutput(
      g.binary(OpKind::Mul, scaled, g.broadcastInDim(g.convert(w, DType::f32), full, {1}), "y"));
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  LaunchCounters c = runOne(plan);
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x) + int64_t(c.blocks) * sectorsOf(g, w)));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, g.outputs().at(0))));
}

TEST_CASE("one row per tile, several tiles per block: the weight is staged once per block",
          "[codegen][traffic][sim]") {
  ir::Graph g = example("rms_norm", 1024); // x [1024, 4096] block per row, weight [4096]
  for (const char* profile : {"h100", "a100"}) {
    INFO(profile);
    fusion::FusionPlan plan = fusion::plan(g, *deviceSpecProfile(profile), fusion::Policy::AStitch);
    const fusion::KernelPlan& k = onlyKernel(plan);
    REQUIRE(k.groups.at(0).rowsPerTile == 1);
    REQUIRE(k.launch.tiles.size() > k.launch.maxBlocks);
    // Not cooperative: no cluster shares the weight, on sm_90 either (fusion/cluster_plan.h:
    // the H200 ran RMSNorm 1.29x faster with each block loading it, an L2 hit).
    CHECK_FALSE(k.launch.cooperative);
    CHECK(k.launch.clusterSize == 1);
    LaunchCounters c = runOne(plan);
    ir::NodeId x = g.inputs().at(0), weight = g.inputs().at(1);
    CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x) + int64_t(c.blocks) * sectorsOf(g, weight)));
  }
}

TEST_CASE("an elementwise kernel whose blocks handle many tiles reads its bias once per block",
          "[codegen][traffic][sim]") {
  ir::Graph g;
  const int64_t rows = 4096, hidden = 768;
  ir::Shape full = {rows, hidden};
  ir::NodeId x = g.parameter("x", {DType::f32, full});
  ir::NodeId bias = g.parameter("bias", {DType::f32, {hidden}});
  g.addOutput(g.binary(OpKind::Add, x, g.broadcastInDim(bias, full, {1}), "y"));
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  CHECK(onlyKernel(plan).launch.clusterSize == 1); // not cooperative (gelu_bias: 1.19x without)
  LaunchCounters c = runOne(plan);
  REQUIRE(int64_t(c.blocks) < rows * hidden / 1024); // fewer blocks than tiles: staged, not per tile
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x) + int64_t(c.blocks) * sectorsOf(g, bias)));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, g.outputs().at(0))));
}

TEST_CASE("layer norm backward reads x and dy once: column sums accumulate in the row slots",
          "[codegen][traffic][sim]") {
  ir::Graph g = example("layer_norm_backward", 1024);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  REQUIRE(k.launch.cooperative);
  LaunchCounters c = runOne(plan);
  auto input = [&](const std::string& name) {
    for (ir::NodeId p : g.inputs())
      if (g.node(p).name == name) return p;
    FAIL("no input " << name);
    return ir::NodeId(-1);
  };
  // On sm_90 the blocks of a thread-block cluster stage gamma once between them and combine
  // their partials before one row per cluster goes out (fusion/cluster_plan.h).
  int64_t cluster = std::get<fusion::KernelPlan>(plan.steps.at(0)).launch.clusterSize;
  REQUIRE(int64_t(c.blocks) % cluster == 0);
  int64_t clusters = int64_t(c.blocks) / cluster;
  int64_t partialSectors = clusters * 768 * 4 / 32; // one row of partials per cluster and reduce
  int64_t outputs = 0;
  for (ir::NodeId o : g.outputs())
    outputs += sectorsOf(g, o);
  // Outputs once, and each cluster's partials of dgamma and dbeta.
  CHECK(c.globalSectorsWritten == uint64_t(outputs + 2 * partialSectors));
  // x and dy once, gamma once per cluster (staged, each block its share of whole sectors), the
  // partials once; mean and rstd are read by each warp for its row (one sector per row each).
  int64_t rows = 1024;
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, input("x")) + sectorsOf(g, input("dy")) +
                                        clusters * sectorsOf(g, input("gamma")) +
                                        2 * partialSectors + 2 * rows));
}

TEST_CASE("Figure 7: power.1 is computed per block, global scratch written once and read per cluster",
          "[codegen][traffic][sim]") {
  ir::Graph g = example("astitch_fig7", 1024); // parameter.1 [1024, 128, 32]
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  codegen::CompiledModule m;
  LaunchCounters c = runOne(plan, &m);
  // The phases share one staging array, sized by the largest: parameter.2, power.1 (computed by
  // each block from parameter.2) and reduce.2's partials before the grid barrier (3 x 512 B),
  // power.1 and reduce.2 after it.
  CHECK(m.ptx.find("stitch0_reduce_1_staged[1536]") != std::string::npos);
  CHECK(c.gridBarriers == 2); // reduce.2: its partials, then its sum; none for power.1
  int64_t blocks = int64_t(c.blocks);
  int64_t column = 128 * 4 / 32; // sectors of one [128] f32 vector
  // multiply.1 once; reduce.2 once; power.1 never (each block computes it into shared memory);
  // reduce.2's partials once per thread-block cluster (they accumulate in shared memory over the
  // block's tiles, and the cluster's blocks combine theirs through distributed shared memory:
  // fusion/cluster_plan.h).
  int64_t cluster = std::get<fusion::KernelPlan>(plan.steps.at(0)).launch.clusterSize;
  REQUIRE(cluster > 1);
  REQUIRE(blocks % cluster == 0);
  CHECK(c.clusterSharedLoads > 0);
  CHECK(c.globalSectorsWritten ==
        uint64_t(sectorsOf(g, g.outputs().at(0)) + column + blocks / cluster * column));
  int64_t compulsory = sectorsOf(g, g.inputs().at(0)) + sectorsOf(g, g.inputs().at(1)) +
                       sectorsOf(g, g.outputs().at(0));
  CHECK(double(c.globalSectorsRead + c.globalSectorsWritten) <= 1.10 * double(compulsory));
}

TEST_CASE("softmax over ragged rows of 1000 reads its input once", "[codegen][traffic][sim]") {
  // 1000 elements over 32 lanes of 4: 7 whole steps and a ragged 8th (lanes past the row read
  // its last vector and are masked). The row stays in registers for all three passes.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {96, 1000}});
  auto max = g.reduce(ir::ReduceKind::Max, x, {1}, "max");
  auto shifted = g.binary(OpKind::Sub, x, g.broadcastInDim(max, {96, 1000}, {0}), "shifted");
  auto e = g.unary(OpKind::Exp, shifted, "e");
  auto sum = g.reduce(ir::ReduceKind::Sum, e, {1}, "sum");
  auto y = g.binary(OpKind::Div, e, g.broadcastInDim(sum, {96, 1000}, {0}), "y");
  g.setOutputs({y});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const auto& m = std::get<fusion::RowReduceMapping>(onlyKernel(plan).groups.at(0).mapping);
  REQUIRE(m.vectorWidth == 4);
  REQUIRE(1000 % (m.threadsPerRow * 4) != 0);
  CHECK(onlyKernel(plan).placement.at(x).registerReuse);
  LaunchCounters c = runOne(plan);
  CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x)));
  CHECK(c.globalSectorsWritten == uint64_t(sectorsOf(g, y)));
}

TEST_CASE("sibling row reduces of one operand read it once, in one pass over the row",
          "[codegen][traffic][sim]") {
  // A logsumexp, a sum and a max of the same rows, long enough to be streamed (no register
  // slots: no value is read after a reduce of its row): x's sectors once. Rows of 3001 floats
  // are read as scalars from starts off the 32-byte sectors, so a warp's request spans four or
  // five, as it falls with the loop's shape (LLVM unrolls the sum's and not the logsumexp's):
  // within 1% of the sum alone.
  for (int64_t length : {int64_t(3000), int64_t(3001)}) {
    CAPTURE(length);
    auto sectorsRead = [&](bool siblings) {
      ir::Graph g;
      auto x = g.parameter("x", {DType::f32, {24, length}});
      std::vector<ir::NodeId> outs = {g.reduce(ir::ReduceKind::Sum, x, {1}, "sum")};
      if (siblings) {
        outs.push_back(g.reduce(ir::ReduceKind::LogSumExp, x, {1}, "lse"));
        outs.push_back(g.reduce(ir::ReduceKind::Max, x, {1}, "max"));
      }
      g.setOutputs(outs);
      fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      for (const fusion::PhasePlan& phase : onlyKernel(plan).phases)
        CHECK_FALSE(phase.slots);
      LaunchCounters c = runOne(plan); // checked against the interpreter
      if (length % 4 == 0) CHECK(c.globalSectorsRead == uint64_t(sectorsOf(g, x)));
      return c.globalSectorsRead;
    };
    uint64_t siblings = sectorsRead(true), sum = sectorsRead(false);
    CHECK(siblings >= sum);
    CHECK(siblings * 100 <= sum * 101);
  }
}

TEST_CASE("log-softmax + NLL streams its logits once", "[codegen][traffic][sim]") {
  // bench/workloads/log_softmax_nll.json, canonicalized as compile() does: the one-hot pick
  // (passes/one_hot_pick.h) leaves a logsumexp and a masked sum of the logits, which share one
  // pass.
  std::filesystem::path f =
      std::filesystem::path(WEFT_SOURCE_DIR) / "bench" / "workloads" / "log_softmax_nll.json";
  ir::Graph g = passes::canonicalize(frontend::readGraphFile(f.string()).graph);
  REQUIRE(g.node(g.inputs().at(0)).name == "logits");
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  for (const fusion::PhasePlan& phase : onlyKernel(plan).phases)
    CHECK_FALSE(phase.slots); // streamed, not held in registers
  LaunchCounters c = runOne(plan);
  int64_t logits = sectorsOf(g, g.inputs().at(0)), rows = 512;
  int64_t warps = onlyKernel(plan).launch.blockSize / 32;
  // The logits once; each warp of a row's block reads the row's label (a sector); the rows'
  // statistics and token losses are a few KB.
  CHECK(c.globalSectorsRead >= uint64_t(logits));
  CHECK(c.globalSectorsRead <= uint64_t(logits + rows * warps + 1024));
}
