// Codegen end to end: plans → PTX → the simulator, compared with the reference interpreter.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "codegen/compile.h"
#include "frontend/json_reader.h"
#include "fusion/phase_planner.h"
#include "fusion/plan.h"
#include "fusion/policy_none.h"
#include "hand_plans.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "sim_runner.h"
#include "weft/error.h"
#include "device_profiles.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::h100;

/// Compiles `plan`, runs it on the simulator and checks every output against ir::interpret.
/// Runs the plan on the simulator against the reference interpreter; returns what the
/// simulator counted per launch.
std::vector<LaunchCounters> checkAgainstInterpreter(const fusion::FusionPlan& plan,
                                                    double tolerance,
                                                    const ir::Binding& binding = {},
                                                    codegen::CodegenOptions options = {}) {
  codegen::CompiledModule m = codegen::compileToPtx(plan, options);
  auto inputs = test::makeInputs(plan.graph, binding);
  auto want = ir::interpret(plan.graph, inputs, binding);
  std::vector<LaunchCounters> counters;
  auto got = test::runOnSim(plan, m, inputs, binding, &counters);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << plan.graph.node(plan.graph.outputs()[i]).name << " " << want[i].typeStr());
    double err = test::maxError(got[i], want[i]);
    CHECK(err <= tolerance);
  }
  return counters;
}

} // namespace

TEST_CASE("none policy: elementwise, layout and reduce ops match the interpreter",
          "[codegen][sim]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {6, 40}});
  auto z = g.parameter("z", {DType::f32, {6, 40}});
  auto e = g.unary(OpKind::Exp, g.binary(OpKind::Mul, x, z, "xz"), "e");
  auto sm = g.reduce(ir::ReduceKind::Sum, e, {1}, "row_sum");
  auto cm = g.reduce(ir::ReduceKind::Max, x, {0}, "col_max");
  auto t = g.transpose(x, {1, 0}, "t");
  auto p = g.pad(t, {1, 0}, {2, 3}, 0.5, "p");
  auto c = g.concatenate({x, z}, 1, "cat");
  auto sl = g.slice(c, {1, 3}, {5, 77}, {2, 3}, "sl");
  auto r = g.reshape(sl, {ir::Dim(25), ir::Dim(2)}, "r");
  auto io = g.iota(DType::f32, {6, 40}, 1, "io");
  auto sel = g.select(g.compare(ir::CompareDir::GT, x, io, "gt"), x, g.unary(OpKind::Tanh, z, "tz"),
                      "sel");
  auto cl = g.clamp(g.constant(DType::f32, {6, 40}, {-0.5}, "lo"), x,
                    g.constant(DType::f32, {6, 40}, {0.5}, "hi"), "cl");
  g.setOutputs({e, sm, cm, p, r, sel, cl});
  checkAgainstInterpreter(fusion::planNone(g, h100()), 2e-6);
}

TEST_CASE("none policy: f16, bf16, integer and bool dtypes", "[codegen][sim]") {
  ir::Graph g;
  auto h = g.parameter("h", {DType::f16, {4, 64}});
  auto b = g.parameter("b", {DType::bf16, {4, 64}});
  auto i = g.parameter("i", {DType::i32, {4, 64}});
  auto l = g.parameter("l", {DType::i64, {4, 64}});
  auto q = g.parameter("q", {DType::i8, {4, 64}});
  auto hh = g.binary(OpKind::Add, h, g.unary(OpKind::Sigmoid, h, "sig"), "hh");
  auto bb = g.binary(OpKind::Mul, b, b, "bb");
  auto hs = g.reduce(ir::ReduceKind::Sum, hh, {1}, "h_sum");
  auto id = g.binary(OpKind::Div, i,
                     g.binary(OpKind::Add, g.unary(OpKind::Abs, i, "ai"),
                              g.constant(DType::i32, {4, 64}, {1}, "one"), "den"),
                     "idiv");
  auto ir_ = g.binary(OpKind::Rem, l, g.constant(DType::i64, {4, 64}, {3}, "three"), "lrem");
  auto imax = g.reduce(ir::ReduceKind::Max, i, {1}, "i_max");
  auto qsum = g.reduce(ir::ReduceKind::Sum, q, {0}, "q_sum");
  auto pos = g.compare(ir::CompareDir::GT, i, g.constant(DType::i32, {4, 64}, {0}, "zero"), "pos");
  auto anyPos = g.reduce(ir::ReduceKind::Any, pos, {1}, "any_pos");
  auto allPos = g.reduce(ir::ReduceKind::All, pos, {1}, "all_pos");
  auto conv = g.convert(g.binary(OpKind::Mul, g.convert(h, DType::f32, "hf"),
                                 g.constant(DType::f32, {4, 64}, {40}, "forty"), "h40"),
                        DType::i8, "to_i8");
  g.setOutputs({hh, bb, hs, id, ir_, imax, qsum, anyPos, allPos, conv});
  checkAgainstInterpreter(fusion::planNone(g, h100()), 1e-2);
}

TEST_CASE("integer div and rem give a defined result for every divisor: 0, -1 and INT_MIN too",
          "[codegen][sim]") {
  // sdiv / srem by 0, and INT_MIN / -1, are undefined behaviour in LLVM IR; the kernels give
  // x / 0 = -1, x % 0 = x, x / -1 = -x (wrapping) and x % -1 = 0 (the interpreter refuses 0).
  for (DType t : {DType::i8, DType::i32, DType::i64}) {
    INFO(ir::dtypeName(t));
    const int64_t minimum = t == DType::i8    ? INT8_MIN
                            : t == DType::i32 ? int64_t(INT32_MIN)
                                              : INT64_MIN;
    const std::vector<int64_t> xs = {7, -7, minimum, minimum, 5, -6, 0, 7};
    const std::vector<int64_t> ys = {0, 0, -1, 0, -1, 4, 0, -3};
    ir::Graph g;
    auto x = g.parameter("x", {t, {8}});
    auto y = g.parameter("y", {t, {8}});
    g.setOutputs({g.binary(OpKind::Div, x, y, "q"), g.binary(OpKind::Rem, x, y, "r")});
    auto plan = fusion::planNone(g, h100());
    HostTensor hx(t, {8}), hy(t, {8});
    for (int64_t i = 0; i < 8; ++i) {
      hx.setInt(i, xs[size_t(i)]);
      hy.setInt(i, ys[size_t(i)]);
    }
    auto got = test::runOnSim(plan, codegen::compileToPtx(plan), {hx, hy});
    REQUIRE(got.size() == 2);
    for (int64_t i = 0; i < 8; ++i) {
      INFO(xs[size_t(i)] << " by " << ys[size_t(i)]);
      const int64_t a = xs[size_t(i)], b = ys[size_t(i)];
      const int64_t q = b == 0 ? -1 : b == -1 ? wrapToDType(int64_t(uint64_t(0) - uint64_t(a)), t) : a / b;
      const int64_t r = b == 0 ? a : b == -1 ? 0 : a % b;
      CHECK(got[0].getInt(i) == wrapToDType(q, t));
      CHECK(got[1].getInt(i) == r);
    }
  }
}

TEST_CASE("none policy: the Figure 6 row reduces (scaled down) and a dot", "[codegen][sim]") {
  ir::Graph g;
  auto a = g.parameter("a", {DType::f32, {300, 32}});
  auto b = g.parameter("b", {DType::f32, {3, 3000}});
  auto m = g.parameter("m", {DType::f32, {2, 8, 5}});
  auto n = g.parameter("n", {DType::f32, {2, 5, 3}});
  auto ra = g.reduce(ir::ReduceKind::Sum, a, {1}, "ra");
  auto rb = g.reduce(ir::ReduceKind::Min, b, {1}, "rb");
  auto d = g.dot(m, n, "d");
  g.setOutputs({ra, rb, d});
  checkAgainstInterpreter(fusion::planNone(g, h100()), 1e-5);
}

TEST_CASE("symbolic dims become i64 kernel parameters", "[codegen][sim]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {ir::Dim::symbol("B"), 48}});
  auto s = g.reduce(ir::ReduceKind::Sum, g.unary(OpKind::Neg, x, "nx"), {1}, "s");
  g.setOutputs({s});
  auto plan = fusion::planNone(g, h100());
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  bool hasSymbol = false;
  for (const auto& k : m.kernels)
    for (const auto& p : k.params)
      hasSymbol = hasSymbol || (p.kind == codegen::KernelParam::Kind::Symbol && p.symbol == "B");
  CHECK(hasSymbol);
  CHECK(m.ptx.find(".param .u64") != std::string::npos);
  checkAgainstInterpreter(plan, 1e-5, {{"B", 37}});
}

TEST_CASE("LayerNorm as one kernel: shared-memory stages with block barriers", "[codegen][sim]") {
  for (bool warp : {false, true}) {
    INFO("warp per row: " << warp);
    auto plan = test::layerNormOneKernel(h100(), 7, 96, warp);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    REQUIRE(m.kernels.size() == 1);
    CHECK(m.kernels[0].dynamicSharedBytes > 96 * 4);
    CHECK(m.ptx.find("bar.sync") != std::string::npos);
    checkAgainstInterpreter(plan, 1e-4);
  }
}

TEST_CASE("softmax's stages wait for their warp, not the block", "[codegen][sim]") {
  // A warp per row: each reduce is combined by its row's lanes and read by them, so the stages
  // are separated by bar.warp.sync, and so are the tiles. The block barriers left guard the
  // mask's slice, copied to shared memory where a tile's batch differs from the block's previous
  // tile's (before the copy and after it): each block takes a contiguous run of tiles.
  auto parsed = frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/softmax.json");
  const int64_t batches = 3;
  ir::Graph g = ir::bindSymbols(parsed.graph, {{"B", batches}});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& kp = std::get<fusion::KernelPlan>(plan.steps.front());
  REQUIRE(kp.phases.size() == 1);
  CHECK(kp.phases[0].contiguousTiles);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = m.ptx.find(what); at != std::string::npos; at = m.ptx.find(what, at + 1))
      ++n;
    return n;
  };
  CHECK(count("bar.warp.sync") == 3);
  CHECK(count("bar.sync") == 2);
  // Bytes read: the scores once, and one 512-byte mask row per block and batch it meets, not
  // one per tile (a grid smaller than the tiles, so blocks run several).
  std::vector<LaunchCounters> counters = checkAgainstInterpreter(plan, 1e-5);
  REQUIRE(counters.size() == 1);
  const uint64_t scores = uint64_t(batches) * 12 * 128 * 128 * 4;
  const uint64_t tiles = uint64_t(batches) * 12 * 128 / uint64_t(kp.groups.front().rowsPerTile);
  REQUIRE(counters[0].blocks < tiles);
  CHECK(counters[0].globalSectorsRead * 32 <= scores + (counters[0].blocks + batches) * 512);

  // Rows that leave the last tile ragged: its idle rows' lanes read the tile's first row (in
  // bounds), which another warp wrote, so the stages wait for the block again.
  ir::Graph r;
  auto x = r.parameter("x", {DType::f32, {1001, 128}});
  auto max = r.reduce(ir::ReduceKind::Max, x, {1}, "max");
  auto e = r.unary(OpKind::Exp, r.binary(OpKind::Sub, x, r.broadcastInDim(max, {1001, 128}, {0})), "e");
  auto sum = r.reduce(ir::ReduceKind::Sum, e, {1}, "sum");
  r.setOutputs({r.binary(OpKind::Div, e, r.broadcastInDim(sum, {1001, 128}, {0}), "y")});
  fusion::FusionPlan ragged = fusion::plan(r, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = std::get<fusion::KernelPlan>(ragged.steps.front());
  REQUIRE(1001 % k.groups.front().rowsPerTile != 0);
  for (const fusion::Stage& st : k.stages) CHECK(st.barrierBefore != fusion::Barrier::Warp);
  CHECK(codegen::compileToPtx(ragged).ptx.find("bar.warp.sync") == std::string::npos);
  checkAgainstInterpreter(ragged, 1e-5);
}

TEST_CASE("layer norm's row values are computed in their row's lanes, its stages wait for the warp",
          "[codegen][sim]") {
  // mean and rstd, one per row, are computed by every lane of the row from the sums its own
  // warp combined, so all four stage barriers are the warp's. With 7 rows the last tile is
  // ragged: its idle rows read the tile's first row, another warp's, so the block waits.
  auto parsed = frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/layer_norm.json");
  for (int64_t rows : {64, 7}) {
    INFO(rows << " rows");
    ir::Graph g = ir::bindSymbols(parsed.graph, {{"B", rows}});
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    const fusion::KernelPlan& k = std::get<fusion::KernelPlan>(plan.steps.front());
    int warp = 0;
    for (const fusion::Stage& st : k.stages)
      warp += st.barrierBefore == fusion::Barrier::Warp;
    CHECK(warp == (rows == 64 ? 4 : 0));
    std::string ptx = codegen::compileToPtx(plan).ptx;
    CHECK((ptx.find("bar.warp.sync") != std::string::npos) == (rows == 64));
    checkAgainstInterpreter(plan, 1e-4);
  }
}

TEST_CASE("a Global value read after a grid barrier (cooperative kernel)", "[codegen][sim]") {
  auto plan = test::gridBarrierKernel(h100(), 100, 24, 3);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].launch.cooperative);
  CHECK(m.kernels[0].params.back().kind == codegen::KernelParam::Kind::BarrierState);
  CHECK(m.ptx.find(".func weft_grid_barrier") != std::string::npos);
  CHECK(m.ptx.find("call.uni") != std::string::npos);
  std::vector<LaunchCounters> counters = checkAgainstInterpreter(plan, 1e-5);
  REQUIRE(counters.size() == 1);
  CHECK(counters[0].gridBarriers == 1);
}

TEST_CASE("a split row reduce combines partials across blocks with atomics", "[codegen][sim]") {
  auto plan = test::splitRowReduce(h100(), 3, 1000, 4);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  CHECK(m.ptx.find("atom.global.add.f32") != std::string::npos);
  checkAgainstInterpreter(plan, 1e-5);
}

TEST_CASE("a column-reduce stage materialises a value computed from the reduce", "[codegen][sim]") {
  checkAgainstInterpreter(test::columnReduceThenScale(h100(), 37, 70), 0);
}

TEST_CASE("a value outside the phase's tiles beside a row value in shared memory",
          "[codegen][sim]") {
  // Random graph 13907, reduced: sin of a column max (128 elements, computed by a grid-stride
  // loop) shares a phase over 100 rows with a row max kept in shared memory. The sin reads only
  // the column max from global memory, so the phase is emitted as planned (it was refused).
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {100, 128}});
  auto colmax = g.reduce(ir::ReduceKind::Max, x, {0}, "colmax");
  auto s = g.unary(OpKind::Sin, colmax, "s");
  auto d = g.binary(OpKind::Sub, x, g.broadcastInDim(colmax, {100, 128}, {1}), "d");
  auto rowmax = g.reduce(ir::ReduceKind::Max, d, {1}, "rowmax");
  auto e = g.binary(OpKind::Sub, d, g.broadcastInDim(rowmax, {100, 128}, {0}), "e");
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, e, {1}, "rowsum"), s});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  REQUIRE(plan.steps.size() == 1);
  const auto& k = std::get<fusion::KernelPlan>(plan.steps[0]);
  // The plan this test is about: s's stage and the shared row max in one phase.
  bool together = false;
  for (const fusion::PhasePlan& ph : k.phases) {
    bool hasS = false, hasShared = false;
    for (size_t i = ph.firstStage; i < ph.firstStage + ph.stageCount; ++i)
      for (ir::NodeId v : k.stages[i].materialized) {
        hasS = hasS || v == s;
        hasShared = hasShared || k.placement.at(v).storage == fusion::Storage::Shared;
      }
    together = together || (hasS && hasShared);
  }
  CHECK(together);
  checkAgainstInterpreter(plan, 1e-5);
}

TEST_CASE("a column max of a square loop across row tiles beside a loop value",
          "[codegen][sim]") {
  // Random graph 200809, reduced: over [2, 2] in tiles of rows, the column max has the rows'
  // shape. Taken for a row value, it shared its combine's stage with t, a loop value of 4
  // elements that stage cannot compute ("not one per result"); t now has a stage of its own.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {2, 2}});
  auto rowmin = g.reduce(ir::ReduceKind::Min, x, {1}, "rowmin");
  auto d = g.binary(OpKind::Sub, x, g.broadcastInDim(rowmin, {2, 2}, {0}), "d");
  auto colmax = g.reduce(ir::ReduceKind::Max, d, {0}, "colmax");
  auto e = g.binary(OpKind::Sub, d, g.broadcastInDim(colmax, {2, 2}, {1}), "e");
  auto t = g.unary(OpKind::Sqrt, g.unary(OpKind::Abs, d), "t");
  g.setOutputs({t, e});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  REQUIRE(plan.steps.size() == 1);
  const auto& k = std::get<fusion::KernelPlan>(plan.steps[0]);
  for (const fusion::Stage& st : k.stages)
    if (std::find(st.materialized.begin(), st.materialized.end(), colmax) != st.materialized.end())
      CHECK(st.materialized == std::vector<ir::NodeId>{colmax});
  checkAgainstInterpreter(plan, 1e-6);
}

TEST_CASE("a value beside a column max across row tiles that does not read it is stored",
          "[codegen][sim]") {
  // Random graph 100155, reduced: n = -log|x| over [64] is a sub-dominant of the group of a
  // [64] column max across the row min's tiles. With as many elements as the max's results it
  // joined the max's stage, computed after the cross-block combine, and was never stored (all
  // zeros). Only values computed from the combined reduces share that stage.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64}});
  auto xr = g.reshape(x, {2, 32});
  auto s = g.unary(OpKind::Sin, g.concatenate({xr, xr}, 1), "s");
  auto cmax = g.reduce(ir::ReduceKind::Max, s, {0}, "cmax");
  auto rmin = g.reduce(ir::ReduceKind::Min, s, {1}, "rmin");
  auto n = g.unary(OpKind::Neg, g.unary(OpKind::Log, g.unary(OpKind::Abs, x)), "n");
  g.setOutputs({rmin, n, g.unary(OpKind::Cos, cmax, "e")});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  REQUIRE(plan.steps.size() == 1);
  const auto& k = std::get<fusion::KernelPlan>(plan.steps[0]);
  for (const fusion::Stage& st : k.stages)
    if (std::find(st.materialized.begin(), st.materialized.end(), cmax) != st.materialized.end())
      CHECK(st.materialized == std::vector<ir::NodeId>{cmax});
  checkAgainstInterpreter(plan, 1e-5);
}

TEST_CASE("weft's own math (no libdevice) matches the interpreter", "[codegen][sim][math]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {2, 64}});
  auto ax = g.unary(OpKind::Abs, x, "ax");
  std::vector<ir::NodeId> outs;
  for (OpKind k : {OpKind::Exp, OpKind::Tanh, OpKind::Erf, OpKind::Sin, OpKind::Cos, OpKind::Sqrt,
                   OpKind::Sigmoid})
    outs.push_back(g.unary(k, x));
  outs.push_back(g.unary(OpKind::Log, ax));
  outs.push_back(g.unary(OpKind::Rsqrt, ax));
  outs.push_back(g.binary(OpKind::Pow, ax, x));
  auto xd = g.parameter("xd", {DType::f64, {2, 64}});
  outs.push_back(g.unary(OpKind::Exp, xd));
  g.setOutputs(outs);
  codegen::CodegenOptions own;
  own.useLibdevice = false;
  checkAgainstInterpreter(fusion::planNone(g, h100()), 2e-6, {}, own);
}

TEST_CASE("CompiledModule reports kernels, timings and optimised IR", "[codegen]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {1024}});
  g.setOutputs({g.unary(OpKind::Exp, x, "e")});
  codegen::CodegenOptions o;
  o.keepLlvmIr = true;
  auto plan = fusion::planNone(g, h100());
  auto m = codegen::compileToPtx(plan, o);
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].name == "k0_e");
  CHECK(m.kernels[0].planStep == 0);
  CHECK(m.ptx.find(".target sm_90") != std::string::npos);
  // 1,024 elements in vectors of 4: one tile of 256 threads (smallestBlockForOneTile).
  CHECK(m.ptx.find(".maxntid 256") != std::string::npos);
  CHECK(m.ptx.find("ld.global.nc.v4.f32") != std::string::npos);
  CHECK(m.ptx.find("st.global.v4.f32") != std::string::npos);
  CHECK(m.llvmIr.find("define") != std::string::npos);
  CHECK(m.llvmIr.find("__nv_expf") == std::string::npos); // libdevice was linked and inlined
  CHECK(m.timings.optimiseMs > 0);
  CHECK(m.timings.ptxMs > 0);
}

TEST_CASE("the plan's register limit becomes .maxnreg", "[codegen]") {
  auto plan = test::layerNormOneKernel(h100(), 4, 64);
  auto& k = std::get<fusion::KernelPlan>(plan.steps[0]);
  k.launch.maxRegisters = 40;
  fusion::planPhases(plan); // keeps nothing in registers across stages: the launch's bound
  REQUIRE(k.registerLimit == 40);
  CHECK(codegen::compileToPtx(plan).ptx.find(".maxnreg 40") != std::string::npos);
  k.registerLimit = 0; // none: .maxntid alone bounds the registers
  CHECK(codegen::compileToPtx(plan).ptx.find(".maxnreg") == std::string::npos);
}

TEST_CASE("every example graph under every policy matches the interpreter on the simulator",
          "[codegen][sim][examples]") {
  std::filesystem::path dir = std::filesystem::path(WEFT_SOURCE_DIR) / "examples" / "graphs";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (fusion::Policy policy : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch})
    for (const auto& f : files) {
      INFO(f.filename().string() << " under policy " << fusion::policyName(policy));
      ir::Graph g = frontend::readGraphFile(f.string()).graph;
      ir::Binding bind;
      for (const std::string& s : g.symbols())
        bind[s] = 8;
      ir::Graph bound = ir::bindSymbols(g, bind);
      fusion::FusionPlan plan = fusion::plan(bound, h100(), policy);
      checkAgainstInterpreter(plan, 1e-3);
    }
}
