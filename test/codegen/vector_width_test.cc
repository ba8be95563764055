// Vectors of 16 bytes (fusion/thread_mapping.h, vectorWidthFor): a kernel's vectors are sized
// for the widest element it streams, so f16 and bf16 rows move 8 elements per access, f32 4
// and f64 2, wherever the row length is a known multiple of the width. Each graph runs on the
// simulator against the interpreter, and the counters pin the access size: a warp's request of
// 16 bytes a lane touches 16 sectors.
#include <catch2/catch.hpp>

#include "codegen/compile.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "device_profiles.h"
#include "sim_runner.h"
#include "two_phase_graph.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::h100;
using test::onlyKernel;

/// y = x * rsqrt(mean(x^2) + eps) * w in `t`, statistics in f32 (LLaMA's RMSNorm).
ir::Graph rmsNorm(DType t, int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {t, {rows, hidden}});
  ir::NodeId w = g.parameter("w", {t, {hidden}});
  ir::NodeId x32 = g.convert(x, DType::f32);
  ir::NodeId ms = g.reduce(ir::ReduceKind::Sum, g.binary(OpKind::Mul, x32, x32), {1}, "ms");
  ir::NodeId r = g.unary(
      OpKind::Rsqrt,
      g.binary(OpKind::Add,
               g.binary(OpKind::Div, ms, g.constant(DType::f32, {rows}, {double(hidden)})),
               g.constant(DType::f32, {rows}, {1e-6})));
  ir::NodeId normed = g.binary(OpKind::Mul, x32, g.broadcastInDim(r, {rows, hidden}, {0}));
  g.addOutput(g.binary(OpKind::Mul, g.convert(normed, t), g.broadcastInDim(w, {rows, hidden}, {1}),
                       "y"));
  return g;
}

/// y = tanh(x) * 2 in `t` over [rows, length]: one elementwise kernel.
ir::Graph elementwise(DType t, int64_t rows, int64_t length) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {t, {rows, length}});
  g.addOutput(g.binary(OpKind::Mul, g.unary(OpKind::Tanh, x),
                       g.constant(t, {rows, length}, {2.0}), "y"));
  return g;
}

int vectorWidthOf(const fusion::KernelPlan& k) {
  const fusion::Group& group = k.groups.front();
  if (const auto* m = std::get_if<fusion::RowReduceMapping>(&group.mapping)) return m->vectorWidth;
  return std::get<fusion::ElementwiseMapping>(group.mapping).vectorWidth;
}

} // namespace

TEST_CASE("f16 and bf16 rows are loaded and stored 16 bytes at a time", "[codegen][traffic][sim]") {
  for (DType t : {DType::bf16, DType::f16}) {
    DYNAMIC_SECTION(ir::dtypeName(t)) {
      // rows of 1,024 (a warp per row, 32 lanes of 8) and of 4,096 (a block per row)
      for (int64_t hidden : {1024, 4096}) {
        ir::Graph g = rmsNorm(t, 64, hidden);
        fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
        CHECK(vectorWidthOf(onlyKernel(plan)) == 8); // the f32 statistics would ask for 4
        codegen::CompiledModule module;
        LaunchCounters c = test::checkOneKernelOnSim(plan, 2e-2, &module);
        CHECK(module.ptx.find("v4.u16") == std::string::npos); // no 8-byte accesses
        CHECK(c.globalSectorsWritten == 16 * c.globalStoreRequests); // 512 bytes a request
      }
      ir::Graph e = elementwise(t, 96, 520); // 520 = 8 x 65
      fusion::FusionPlan plan = fusion::plan(e, h100(), fusion::Policy::AStitch);
      CHECK(vectorWidthOf(onlyKernel(plan)) == 8);
      LaunchCounters c = test::checkOneKernelOnSim(plan, 2e-2);
      CHECK(c.globalSectorsRead == 16 * c.globalLoadRequests);
      CHECK(c.globalSectorsWritten == 16 * c.globalStoreRequests);
    }
  }
}

TEST_CASE("rows that are no multiple of 8 fall back to vectors of 4, then to single elements",
          "[codegen][sim]") {
  for (auto [hidden, width] : {std::pair<int64_t, int>{1028, 4}, {1030, 1}, {516, 4}, {520, 8}}) {
    DYNAMIC_SECTION("bf16 rows of " << hidden) {
      ir::Graph g = rmsNorm(DType::bf16, 37, hidden);
      fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
      CHECK(vectorWidthOf(onlyKernel(plan)) == width);
      test::checkOneKernelOnSim(plan, 2e-2);
    }
  }
}

TEST_CASE("vectors follow the widest streamed element, not a small input's",
          "[codegen][planner][sim]") {
  SECTION("a bf16 kernel with a small f32 row vector keeps vectors of 8") {
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {DType::bf16, {256, 1024}});
    ir::NodeId s = g.parameter("s", {DType::f32, {1024}});
    ir::NodeId scaled = g.binary(OpKind::Mul, g.convert(x, DType::f32),
                                 g.broadcastInDim(s, {256, 1024}, {1}));
    g.addOutput(g.convert(scaled, DType::bf16, "y"));
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    CHECK(vectorWidthOf(onlyKernel(plan)) == 8);
    LaunchCounters c = test::checkOneKernelOnSim(plan, 1e-2);
    CHECK(c.globalSectorsWritten == 16 * c.globalStoreRequests);
  }
  SECTION("an f32 to bf16 cast keeps vectors of 4: 16-byte f32 loads, 8-byte bf16 stores") {
    // 8 a thread would make its f32 loads two 16-byte accesses 32 bytes apart, each warp
    // access touching 32 sectors for 16 sectors' worth
    ir::Graph g;
    ir::NodeId x = g.parameter("x", {DType::f32, {128, 1024}});
    g.addOutput(g.convert(g.unary(OpKind::Exp, x), DType::bf16, "y"));
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    CHECK(vectorWidthOf(onlyKernel(plan)) == 4);
    LaunchCounters c = test::checkOneKernelOnSim(plan, 1e-2);
    CHECK(c.globalSectorsRead == 16 * c.globalLoadRequests);
    CHECK(c.globalSectorsWritten == 8 * c.globalStoreRequests);
  }
  SECTION("f64 rows move 2 elements per access") {
    ir::Graph g = elementwise(DType::f64, 64, 256);
    fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
    CHECK(vectorWidthOf(onlyKernel(plan)) == 2);
    LaunchCounters c = test::checkOneKernelOnSim(plan, 1e-12);
    CHECK(c.globalSectorsRead == 16 * c.globalLoadRequests);
  }
}
