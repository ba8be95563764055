// Plans codegen cannot emit are refused with a weft::Error naming the kernel and the op.
#include <catch2/catch.hpp>

#include "codegen/compile.h"
#include "fusion/phase_planner.h"
#include "fusion/policy_none.h"
#include "hand_plans.h"
#include "ir/graph.h"
#include "weft/error.h"
#include "device_profiles.h"

using namespace weft;
using Catch::Matchers::Contains;
using ir::DType;

namespace {
using test::h100;
fusion::KernelPlan& kernel0(fusion::FusionPlan& p) {
  return std::get<fusion::KernelPlan>(p.steps[0]);
}
/// Codegen of a plan edited after planning: its phases are planned again first, as the planner
/// plans them for any plan it makes.
codegen::CompiledModule compileEdited(fusion::FusionPlan& plan) {
  fusion::planPhases(plan);
  return codegen::compileToPtx(plan);
}
} // namespace

TEST_CASE("a grid of more than 2^31-1 blocks is refused", "[codegen][errors]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {int64_t(1) << 22, int64_t(1) << 22}});
  g.setOutputs({g.unary(ir::OpKind::Neg, x, "neg")});
  auto plan = fusion::planNone(g, h100());
  kernel0(plan).launch.maxBlocks = 0; // one block per tile: the planner caps grids at one wave
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("kernel \"k0_neg\": op \"neg\" (neg)") && Contains("2^31-1"));
}

TEST_CASE("a split reduce of an unsupported dtype or kind is refused", "[codegen][errors]") {
  auto plan = test::splitRowReduce(h100(), 2, 64, 2);
  // Turn the reduce into a product: no atomic exists for it.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f16, {2, 64}});
  auto s = g.reduce(ir::ReduceKind::Sum, x, {1}, "row_sum");
  g.setOutputs({s});
  plan.graph = g;
  plan.buffers[0].dtype = DType::f16;
  plan.buffers[1].dtype = DType::f16;
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("kernel \"split_row_sum\": op \"row_sum\" (reduce)") &&
                        Contains("sum of f16") && Contains("splitFactor 1"));
}

TEST_CASE("a split reduce needs a cooperative launch", "[codegen][errors]") {
  auto plan = test::splitRowReduce(h100(), 2, 64, 2);
  kernel0(plan).launch.cooperative = false;
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("op \"row_sum\"") && Contains("cooperative"));
}

TEST_CASE("a grid barrier without a cooperative launch is refused", "[codegen][errors]") {
  auto plan = test::gridBarrierKernel(h100(), 8, 8, 2);
  kernel0(plan).launch.cooperative = false;
  CHECK_THROWS_WITH(compileEdited(plan), Contains("kernel \"global_stitch\"") &&
                                                     Contains("grid barrier") &&
                                                     Contains("cooperative"));
}

TEST_CASE("a warp-per-row mapping with a bad lane count is refused", "[codegen][errors]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64, 16}});
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, x, {1}, "s")});
  auto plan = fusion::planNone(g, h100());
  std::get<fusion::RowReduceMapping>(kernel0(plan).groups[0].mapping).threadsPerRow = 12;
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("kernel \"k0_s\": op \"s\" (reduce)") && Contains("power of two"));
}

TEST_CASE("a block larger than the device allows is refused", "[codegen][errors]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64}});
  g.setOutputs({g.unary(ir::OpKind::Exp, x, "e")});
  auto plan = fusion::planNone(g, h100());
  kernel0(plan).launch.blockSize = 2048;
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("op \"e\" (exp)") && Contains("block size 2048"));
}

TEST_CASE("shared memory beyond the device's budget is refused", "[codegen][errors]") {
  auto plan = test::layerNormOneKernel(h100(), 4, 64);
  kernel0(plan).placement[plan.graph.find("centered").value()].sharedBytes = int64_t(1) << 20;
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("kernel \"layer_norm_one_kernel\"") && Contains("shared memory"));
}

TEST_CASE("a row reduce in a phase tiled by columns is refused", "[codegen][errors]") {
  auto plan = test::layerNormOneKernel(h100(), 4, 64);
  // The first reduce now tiles the phase by columns; the variance's row reduce cannot share it.
  kernel0(plan).groups[0].mapping = fusion::ColumnReduceMapping{32, 4, 1, false};
  CHECK_THROWS_WITH(compileEdited(plan),
                    Contains("kernel \"layer_norm_one_kernel\": op \"var_sum\" (reduce)") &&
                        Contains("differs in kind"));
}

TEST_CASE("a plan whose phases were not planned is refused", "[codegen][errors]") {
  auto plan = test::layerNormOneKernel(h100(), 4, 64);
  kernel0(plan).phases.clear();
  CHECK_THROWS_WITH(codegen::compileToPtx(plan), Contains("kernel \"layer_norm_one_kernel\"") &&
                                                     Contains("fusion::planPhases"));
}
