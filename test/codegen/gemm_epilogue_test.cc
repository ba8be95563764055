// GEMM epilogues (issue 20, part 3): a dot's elementwise consumers computed in its GEMM kernel
// under astitch. Results against the interpreter (bias, bias + GELU, residual, casts, batched,
// odd sizes, f32 on CUDA cores and f16/bf16 on tensor cores); the bytes the fused kernel no
// longer moves and the kernels it no longer launches against xla; ptxas on sm_80 and sm_90.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <random>

#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "fusion/policy_astitch.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/pipeline.h"
#include "ptxas_or_skip.h"
#include "sim_runner.h"

#include "../fusion/test_graphs.h"

using namespace weft;
using fusion::testing::DotConsumers;
using fusion::testing::dotEpilogueGraph;
using ir::DType;

namespace {

const fusion::LibraryCall& callOf(const fusion::FusionPlan& p) {
  for (const auto& s : p.steps)
    if (const auto* c = std::get_if<fusion::LibraryCall>(&s)) return *c;
  FAIL("no library call in the plan");
  throw 0;
}

struct Moved {
  int64_t bytes = 0;
  size_t launches = 0;
};

/// Runs the plan on the simulator against the interpreter; returns the bytes all its launches
/// moved.
Moved check(const fusion::FusionPlan& plan, double tolerance) {
  std::vector<LaunchCounters> counters;
  test::checkOnSim(plan, codegen::compileToPtx(plan), tolerance, &counters);
  Moved r;
  r.launches = counters.size();
  for (const LaunchCounters& c : counters)
    r.bytes += int64_t(c.globalSectorsRead + c.globalSectorsWritten) * 32;
  return r;
}

double toleranceFor(DType t) {
  return t == DType::f16 || t == DType::bf16 ? 3e-2 : t == DType::f32 ? 1e-4 : 1e-9;
}

const char* consumersName(DotConsumers c) {
  switch (c) {
  case DotConsumers::Bias:
    return "bias";
  case DotConsumers::BiasGelu:
    return "bias+gelu";
  case DotConsumers::Residual:
    return "residual";
  case DotConsumers::BiasCast:
    return "bias+cast";
  case DotConsumers::BiasLayerNorm:
    return "bias+layer norm";
  }
  return "?";
}

DeviceSpec specFor(int sm) {
  DeviceSpec d = *deviceSpecProfile(sm == 80 ? "a100" : "h100");
  d.computeCapability = sm;
  return d;
}

} // namespace

TEST_CASE("gemm epilogue: bias, GELU, residual, casts match the interpreter on odd sizes, every "
          "engine and dtype",
          "[codegen][sim][gemm][epilogue]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  struct Case {
    ir::Shape batch;
    int64_t m, k, n;
  };
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32})
    for (DotConsumers consumers : {DotConsumers::Bias, DotConsumers::BiasGelu,
                                   DotConsumers::Residual, DotConsumers::BiasCast})
      for (const Case& c : {Case{{}, 37, 29, 53}, Case{{3}, 70, 96, 130}, Case{{}, 64, 64, 64}}) {
        if (consumers == DotConsumers::BiasCast && t != DType::f32) continue;
        if (consumers == DotConsumers::BiasGelu && !ir::isFloat(t)) continue;
        ir::Graph g = dotEpilogueGraph(t, c.batch, c.m, c.k, c.n, consumers);
        auto plan = fusion::plan(g, h100, fusion::Policy::AStitch);
        INFO(fmt::format("{} {} [{}] {}x{}x{}: {}", ir::dtypeName(t), consumersName(consumers),
                         ir::shapeStr(c.batch), c.m, c.k, c.n, callOf(plan).gemm.str()));
        REQUIRE_FALSE(callOf(plan).epilogue.empty());
        CHECK(plan.kernelCount() == 0);
        bool lowFloat = t == DType::f16 || t == DType::bf16;
        // h100: f16 and bf16 on Hopper's warpgroup MMA (wgmma)
        CHECK(callOf(plan).gemm.engine ==
              (lowFloat ? fusion::GemmPlan::Engine::Warpgroup : fusion::GemmPlan::Engine::Fma));
        Moved moved =
            check(plan, toleranceFor(consumers == DotConsumers::BiasCast ? DType::f16 : t));
        CHECK(moved.launches == 1);
      }
}

TEST_CASE("gemm epilogue: a result read by a kernel and a dot is written once",
          "[codegen][sim][gemm][epilogue]") {
  // h = a · b + bias, read by a second dot and by tanh (a kernel): the GEMM stores h
  ir::Graph g;
  auto a = g.parameter("a", {DType::f32, {70, 40}});
  auto b = g.parameter("b", {DType::f32, {40, 40}});
  auto bias = g.parameter("bias", {DType::f32, {40}});
  auto mm = g.dot(a, b, "mm");
  auto h = g.binary(ir::OpKind::Add, mm, g.broadcastInDim(bias, {70, 40}, {1}), "h");
  g.setOutputs({g.dot(h, b, "mm2"), g.unary(ir::OpKind::Tanh, h, "t")});
  auto plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
  REQUIRE_FALSE(callOf(plan).epilogue.empty());
  CHECK(check(plan, 1e-4).launches == 3);
}

TEST_CASE("gemm epilogue: symbolic rows, one program for every binding",
          "[codegen][sim][gemm][epilogue]") {
  // relu(x · w + bias) + x2 over [B, S] rows: bias broadcast, a residual, a max with 0
  ir::Dim B = ir::Dim::symbol("B"), S = ir::Dim::symbol("S");
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {B, S, 40}});
  auto w = g.parameter("w", {DType::f32, {B, 40, 24}});
  auto bias = g.parameter("bias", {DType::f32, {24}});
  auto r = g.parameter("r", {DType::f32, {B, S, 24}});
  auto mm = g.dot(x, w, "mm");
  auto biased = g.binary(ir::OpKind::Add, mm, g.broadcastInDim(bias, {B, S, 24}, {2}), "biased");
  auto zero = g.constant(DType::f32, {B, S, 24}, {0.0}, "zero");
  auto relu = g.binary(ir::OpKind::Max, biased, zero, "relu");
  g.setOutputs({g.binary(ir::OpKind::Add, relu, r, "out")});
  auto plan = fusion::plan(g, *deviceSpecProfile("a100"), fusion::Policy::AStitch);
  REQUIRE(callOf(plan).result() == plan.graph.outputs()[0]);
  CHECK(plan.kernelCount() == 0);
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  for (auto [b, s] : {std::pair{1, 1}, {2, 37}, {3, 130}}) {
    ir::Binding binding{{"B", b}, {"S", s}};
    auto inputs = test::makeInputs(plan.graph, binding);
    auto want = ir::interpret(plan.graph, inputs, binding);
    auto got = test::runOnSim(plan, m, inputs, binding);
    INFO("B=" << b << " S=" << s);
    CHECK(test::maxError(got[0], want[0]) <= 1e-4);
  }
}

// Random consumers of a dot: chains of elementwise ops whose other operands are what an epilogue
// may read (bias rows and columns, residuals, constants) or may not (a kernel's value, a row sum
// of the dot's own result), several outputs, batched or not, odd sizes; the plan must stay
// acyclic and the results match the interpreter under astitch (epilogues) and xla (none).
TEST_CASE("gemm epilogue: random consumer graphs match the interpreter",
          "[codegen][sim][gemm][epilogue]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  int fusedGraphs = 0;
  for (unsigned seed = 0; seed < 40; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % unsigned(n)); };
    const int64_t m = 1 + pick(40), k = 1 + pick(24), n = 1 + pick(40);
    const bool batched = pick(3) == 0;
    ir::Shape lead = batched ? ir::Shape{2} : ir::Shape{};
    auto shape = [&](std::initializer_list<int64_t> dims) {
      ir::Shape s = lead;
      s.insert(s.end(), dims.begin(), dims.end());
      return s;
    };
    const ir::Shape out = shape({m, n});
    const int64_t rank = int64_t(out.size());
    ir::Graph g;
    auto a = g.parameter("a", {DType::f32, shape({m, k})});
    auto b = g.parameter("b", {DType::f32, shape({k, n})});
    std::vector<ir::NodeId> pool{g.dot(a, b, "c")};
    int params = 0;
    auto param = [&](ir::Shape s) {
      return g.parameter("p" + std::to_string(params++), {DType::f32, std::move(s)});
    };
    auto other = [&]() -> ir::NodeId {
      switch (pick(7)) {
      case 0:
        return g.broadcastInDim(param({n}), out, {rank - 1}); // a bias row
      case 1:
        return g.broadcastInDim(param({m}), out, {rank - 2}); // a per-row scale
      case 2:
        return param(out); // a residual
      case 3:
        return g.constant(DType::f32, out, {double(pick(5)) - 2.5}); // a constant
      case 4:
        return g.unary(ir::OpKind::Exp, param(out)); // a kernel's value
      case 5: {                                      // the dot's row sums
        ir::NodeId v = pool[size_t(pick(int(pool.size())))];
        return g.broadcastInDim(g.reduce(ir::ReduceKind::Sum, v, {rank - 1}), out,
                                batched ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0});
      }
      default:
        return pool[size_t(pick(int(pool.size())))];
      }
    };
    const ir::OpKind binaries[] = {ir::OpKind::Add, ir::OpKind::Sub, ir::OpKind::Mul,
                                   ir::OpKind::Max};
    const ir::OpKind unaries[] = {ir::OpKind::Tanh, ir::OpKind::Sigmoid, ir::OpKind::Neg,
                                  ir::OpKind::Abs};
    for (int i = 0, ops = 1 + pick(6); i < ops; ++i) {
      ir::NodeId x = pick(2) ? pool.back() : pool[size_t(pick(int(pool.size())))];
      pool.push_back(pick(3) == 0 ? g.unary(unaries[pick(4)], x)
                                  : g.binary(binaries[pick(4)], x, other()));
    }
    std::vector<ir::NodeId> outputs{pool.back()};
    if (pick(3) == 0 && pool.size() > 2)
      outputs.push_back(pool[size_t(pick(int(pool.size()) - 1))]);
    g.setOutputs(outputs);
    INFO("seed " << seed << ": [" << ir::shapeStr(lead) << "] " << m << "x" << k << "x" << n << ", "
                 << g.size() << " nodes");
    for (auto policy : {fusion::Policy::AStitch, fusion::Policy::Xla}) {
      auto plan = fusion::plan(g, h100, policy);
      if (!callOf(plan).epilogue.empty()) ++fusedGraphs;
      check(plan, 1e-4);
    }
  }
  CHECK(fusedGraphs >= 10); // the generator reaches the epilogue planner's cases
}

// Each fused consumer saves the [M, N] result's write by the GEMM and its read by the kernel
// that computed the consumers; xla pays both, and a launch more.
TEST_CASE("gemm epilogue: the [M, N] result is neither written nor read back",
          "[codegen][sim][gemm][epilogue][traffic]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  for (DType t : {DType::f32, DType::bf16})
    for (DotConsumers consumers : {DotConsumers::BiasGelu, DotConsumers::Residual}) {
      const int64_t m = 128, k = 256, n = 768;
      ir::Graph g = dotEpilogueGraph(t, {}, m, k, n, consumers);
      Moved fused = check(fusion::plan(g, h100, fusion::Policy::AStitch), toleranceFor(t));
      Moved apart = check(fusion::plan(g, h100, fusion::Policy::Xla), toleranceFor(t));
      const int64_t result = m * n * int64_t(ir::dtypeBytes(t));
      INFO(fmt::format("{} {}: astitch {} B in {} launch(es), xla {} B in {}", ir::dtypeName(t),
                       consumersName(consumers), fused.bytes, fused.launches, apart.bytes,
                       apart.launches));
      CHECK(fused.launches == 1);
      CHECK(apart.launches == 2);
      // the write and the re-read of the result, less what the epilogue reads of the bias;
      // on tensor cores a residual is read in the mma fragments' layout (four lanes of a row
      // read 8 or 16 bytes of a 32-byte sector, as their stores write it: each sector twice),
      // which costs one of the two results saved
      bool fragmentReads = t != DType::f32 && consumers == DotConsumers::Residual;
      CHECK(apart.bytes - fused.bytes >= (fragmentReads ? 1 : 2) * result * 95 / 100);
    }
}

TEST_CASE("gemm epilogue: every variant assembles on sm_80 and sm_90 without spills",
          "[ptxas][gemm][epilogue]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  struct Case {
    DType t;
    ir::Shape batch;
    int64_t m, k, n;
    DotConsumers consumers;
  };
  std::vector<Case> cases;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (DotConsumers c : {DotConsumers::Bias, DotConsumers::BiasGelu, DotConsumers::Residual}) {
      cases.push_back({t, {}, 128, 768, 3072, c});
      cases.push_back({t, {}, 37, 29, 53, c});
      cases.push_back({t, {12}, 128, 64, 128, c});
    }
  cases.push_back({DType::f32, {}, 128, 768, 768, DotConsumers::BiasCast});
  for (int sm : {80, 90})
    for (const Case& c : cases) {
      ir::Graph g = dotEpilogueGraph(c.t, c.batch, c.m, c.k, c.n, c.consumers);
      auto plan = fusion::plan(g, specFor(sm), fusion::Policy::AStitch);
      REQUIRE_FALSE(callOf(plan).epilogue.empty());
      INFO(consumersName(c.consumers) << " " << callOf(plan).gemm.str() << " on sm_" << sm);
      test::checkAssemblesWithoutSpills(ptxas, plan);
    }
}

// What epilogues save on a whole model (docs/performance.md): WEFT_EPILOGUE_GRAPH=path/to.json
// (e.g. the encoder layer of test/onnx/encoder_model.h, through weft import) planned under
// astitch with and without GEMM epilogues, each run on the simulator against the interpreter.
TEST_CASE("gemm epilogue: kernels and bytes of a model with and without epilogues",
          "[.epilogue_measure]") {
  const char* path = std::getenv("WEFT_EPILOGUE_GRAPH");
  REQUIRE(path);
  ir::Graph g = passes::canonicalize(frontend::readGraphFile(path).graph);
  DeviceSpec h100 = *deviceSpecProfile("h100");
  for (bool epilogues : {false, true}) {
    fusion::FusionPlan plan = fusion::planAStitch(g, h100, {}, epilogues);
    Moved moved = check(plan, 1e-3);
    size_t fused = 0;
    for (const auto& s : plan.steps)
      if (const auto* c = std::get_if<fusion::LibraryCall>(&s)) fused += c->epilogue.ops.size();
    WARN(fmt::format("{}: astitch {} epilogues: {} stitched kernels + {} library calls = {} "
                     "launches, {} ops in epilogues, {} bytes moved (sim)",
                     path, epilogues ? "with" : "without", plan.kernelCount(),
                     plan.steps.size() - size_t(plan.kernelCount()), moved.launches, fused,
                     moved.bytes));
  }
}

// Mixed precision writes a bias add after an f32 dot as add(convert(dot), convert(broadcast(
// bias))): the casts and the broadcast are members of the epilogue, the bias is read once per
// column, and no kernel is left.
TEST_CASE("gemm epilogue: casts of the dot and of a broadcast bias run in the epilogue",
          "[codegen][sim][gemm][epilogue]") {
  for (DType t : {DType::bf16, DType::f16}) {
    ir::Graph g;
    const int64_t M = 70, K = 96, N = 130;
    ir::NodeId x = g.parameter("x", {DType::f32, {M, K}});
    ir::NodeId w = g.parameter("w", {DType::f32, {K, N}});
    ir::NodeId bias = g.parameter("bias", {DType::f32, {N}});
    ir::NodeId mm = g.dot(x, w, "mm");
    ir::NodeId b = g.convert(g.broadcastInDim(bias, {M, N}, {1}), t, "bias.cast");
    g.addOutput(g.binary(ir::OpKind::Add, g.convert(mm, t, "mm.cast"), b, "y"));
    auto plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
    INFO(ir::dtypeName(t));
    CHECK(plan.kernelCount() == 0);
    const fusion::GemmEpilogue& e = callOf(plan).epilogue;
    CHECK(e.ops.size() == 4); // the broadcast, both casts, the add
    REQUIRE(e.reads.size() == 1);
    CHECK(e.reads[0].value == bias);
    CHECK(e.reads[0].kind == fusion::EpilogueRead::Kind::Broadcast);
    check(plan, toleranceFor(t));
  }
}

// A device that runs plain GEMMs on a library (DeviceSpec::gemmLibrary: cuBLASLt on the cuda
// device) gets its dots plain under astitch: their consumers and operand casts are stitched
// into kernels of their own, and the results are the same.
TEST_CASE("gemm epilogue: none where the device has a GEMM library, whose consumers are stitched",
          "[codegen][sim][gemm][epilogue]") {
  DeviceSpec library = *deviceSpecProfile("h100");
  library.gemmLibrary = true;
  for (DotConsumers consumers : {DotConsumers::Bias, DotConsumers::BiasGelu,
                                 DotConsumers::Residual, DotConsumers::BiasCast}) {
    ir::Graph g = dotEpilogueGraph(DType::f32, {}, 70, 96, 130, consumers);
    INFO(consumersName(consumers));
    auto fused = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
    REQUIRE_FALSE(callOf(fused).epilogue.empty());
    auto plain = fusion::plan(g, library, fusion::Policy::AStitch);
    const fusion::LibraryCall& call = callOf(plain);
    CHECK(call.epilogue.empty());
    CHECK(call.result() == call.op);
    CHECK_FALSE(call.gemm.a.computed());
    CHECK_FALSE(call.gemm.b.computed());
    CHECK(plain.kernelCount() == 1); // the consumers, in one stitched kernel
    Moved moved = check(plain, toleranceFor(consumers == DotConsumers::BiasCast ? DType::f16
                                                                               : DType::f32));
    CHECK(moved.launches == 2);
  }
}
