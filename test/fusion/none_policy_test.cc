// The `none` policy: one kernel per memory-intensive op, buffers between them, each op mapped
// and launched by the shared builder exactly as it would be alone in a kernel under xla or
// astitch (AStitch Figure 6 shapes included).
#include <catch2/catch.hpp>

#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "fusion/policy_none.h"
#include "fusion/thread_mapping.h"
#include "ir/graph.h"
#include "weft/error.h"
#include "device_profiles.h"

using namespace weft;
using namespace weft::fusion;
using ir::DType;

namespace {

using test::h100;

const KernelPlan& kernelAt(const FusionPlan& p, size_t i) {
  return std::get<KernelPlan>(p.steps.at(i));
}

FusionPlan rowReduce(int64_t rows, int64_t cols) {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {rows, cols}});
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, x, {1}, "s")});
  return planNone(g, h100());
}

} // namespace

TEST_CASE("Figure 6: [750000, 32] row reduce is warp-per-row with horizontal packing",
          "[fusion][none]") {
  FusionPlan p = rowReduce(750000, 32);
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = kernelAt(p, 0);
  const auto& m = std::get<RowReduceMapping>(k.groups.at(0).mapping);
  CHECK(m.kind == RowReduceMapping::Kind::WarpPerRow);
  CHECK(m.vectorWidth == 4);
  CHECK(m.threadsPerRow == 8);   // 32 elements / 4 per lane
  CHECK(m.rowsPerBlock == 128);  // 1024 threads / 8 lanes
  CHECK(m.splitFactor == 1);
  CHECK(k.launch.blockSize == 1024);
  CHECK(k.launch.tiles == ir::Dim(5860)); // ceil(750000 / 128)
  CHECK(k.launch.maxBlocks == 264);       // one wave (vertical packing)
  CHECK_FALSE(k.launch.cooperative);
}

TEST_CASE("Figure 6: [64, 30000] row reduce is block-per-row, not split (the barrier would not "
          "pay)",
          "[fusion][none]") {
  // The split-row rule weighs the grid barrier with the cost model (fusion/cost_model.h): 64
  // blocks of 1024 threads with 16-byte loads stream these rows faster than a split wave that
  // then waits at a barrier (8.8 µs against 10.5 on an H100, docs/performance.md).
  FusionPlan p = rowReduce(64, 30000);
  REQUIRE(p.kernelCount() == 1);
  const KernelPlan& k = kernelAt(p, 0);
  const auto& m = std::get<RowReduceMapping>(k.groups.at(0).mapping);
  CHECK(m.kind == RowReduceMapping::Kind::BlockPerRow);
  CHECK(m.threadsPerRow == 1024);
  CHECK(m.rowsPerBlock == 1);
  CHECK(m.vectorWidth == 4);
  CHECK(m.splitFactor == 1);
  CHECK(k.launch.blockSize == 1024);
  // h100: a row of 30,000 is more than one block keeps in registers; a cluster of 2 blocks
  // shares it (fusion/cluster_plan.h), so 128 blocks, combined without a grid barrier
  CHECK(m.clusterBlocks == 2);
  CHECK(k.launch.tiles == ir::Dim(128));
  CHECK_FALSE(k.launch.cooperative);
  ir::NodeId s = p.graph.outputs().at(0);
  CHECK(k.placement.at(s).partialsBuffer < 0);
}

TEST_CASE("a column reduce is tiled 32 columns wide and split down the reduced dim",
          "[fusion][none]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {30000, 64}});
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, x, {0}, "c")});
  FusionPlan p = planNone(g, h100());
  const KernelPlan& k = kernelAt(p, 0);
  const auto& m = std::get<ColumnReduceMapping>(k.groups.at(0).mapping);
  CHECK(m.tileColumns == 32);
  CHECK(m.tileRows == 32);
  CHECK(m.splitFactor == 132); // two column tiles fill one wave of 264 blocks
  CHECK(k.launch.blockSize == 1024);
  CHECK(k.launch.tiles == ir::Dim(264));
  CHECK(k.launch.cooperative);
}

TEST_CASE("each op is mapped and launched as the shared builder maps it alone",
          "[fusion][none]") {
  // The ops of layer norm, one kernel each: the mapping and block size the thread mapping
  // chooses for the op's loop space, the launch of a one-group kernel under xla.
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {4096, 768}});
  auto sum = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  auto mean = g.binary(ir::OpKind::Div, sum, g.constant(DType::f32, {4096}, {768.0}, "n"), "mean");
  auto centered = g.binary(ir::OpKind::Sub, x, g.broadcastInDim(mean, {4096, 768}, {0}, "mb"), "c");
  g.setOutputs({centered});
  FusionPlan none = planNone(g, h100());
  FusionPlan xla = plan(g, h100(), Policy::Xla);
  REQUIRE(none.kernelCount() == 4); // sum, mean, mb, c
  for (const Step& st : none.steps) {
    const KernelPlan& k = std::get<KernelPlan>(st);
    REQUIRE(k.groups.size() == 1);
    REQUIRE(k.stages.size() == 1);
    const Group& group = k.groups[0];
    INFO(k.name);
    MappingChoice alone = chooseThreadMapping(loopSpaceOf(g, group.dominant), h100());
    CHECK(group.mapping == alone.mapping);
    CHECK(k.launch.blockSize == alone.blockSize);
    CHECK(k.launch.tiles == ir::Dim(alone.tiles));
    CHECK(k.launch.maxBlocks > 0);
  }
  // sum is xla's first kernel too, alone with its input: the same kernel but for its name.
  KernelPlan first = kernelAt(none, 0), xlaFirst = kernelAt(xla, 0);
  REQUIRE(xlaFirst.ops == first.ops);
  CHECK(xlaFirst.groups[0].mapping == first.groups[0].mapping);
  CHECK(xlaFirst.launch.blockSize == first.launch.blockSize);
  CHECK(xlaFirst.launch.maxBlocks == first.launch.maxBlocks);
  CHECK(xlaFirst.launch.maxRegisters == first.launch.maxRegisters);
}

TEST_CASE("one kernel per memory-intensive op, constants inlined, dot is a library call",
          "[fusion][none]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {128, 64}});
  auto w = g.parameter("w", {DType::f32, {64, 32}});
  auto half = g.constant(DType::f32, {128, 64}, {0.5}, "half");
  auto y = g.binary(ir::OpKind::Mul, x, half, "y");
  auto e = g.unary(ir::OpKind::Exp, y, "e");
  auto d = g.dot(e, w, "d");
  auto s = g.reduce(ir::ReduceKind::Max, d, {1}, "s");
  g.setOutputs({s, e});
  FusionPlan p = planNone(g, h100());
  CHECK(p.policy == Policy::None);
  CHECK(p.kernelCount() == 3); // y, e, s — not the constant, not the dot
  REQUIRE(p.steps.size() == 4);
  CHECK(std::holds_alternative<LibraryCall>(p.steps[2]));
  const KernelPlan& ky = kernelAt(p, 0);
  CHECK(ky.ops == std::vector<ir::NodeId>{half, y});
  CHECK(ky.placement.at(half).storage == Storage::Register);
  CHECK(ky.placement.at(x).storage == Storage::Input);
  CHECK(ky.placement.at(y).storage == Storage::Output);
  CHECK(std::get<ElementwiseMapping>(ky.groups[0].mapping) == ElementwiseMapping{4, 4});
  // Buffers: inputs, the values crossing steps, outputs; none for the inlined constant.
  CHECK(p.bufferOfValue[size_t(half)] == -1);
  CHECK(p.buffers[size_t(p.bufferOfValue[size_t(x)])].kind == Buffer::Kind::Input);
  CHECK(p.buffers[size_t(p.bufferOfValue[size_t(y)])].kind == Buffer::Kind::Intermediate);
  CHECK(p.buffers[size_t(p.bufferOfValue[size_t(e)])].kind == Buffer::Kind::Output);
  CHECK(p.buffers[size_t(p.bufferOfValue[size_t(d)])].kind == Buffer::Kind::Intermediate);
  CHECK(p.buffers[size_t(p.bufferOfValue[size_t(s)])].kind == Buffer::Kind::Output);
  for (const Step& st : p.steps)
    if (const auto* k = std::get_if<KernelPlan>(&st)) {
      CHECK_FALSE(k->hasGridBarrier());
      CHECK(&k->groupOf(k->outputs[0]) == &k->groups[0]);
      CHECK_THROWS_AS(k->groupOf(w), std::out_of_range);
    }
}

TEST_CASE("odd sizes are not vectorised, symbolic sizes give symbolic tiles", "[fusion][none]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {ir::Dim::symbol("B"), 30}});
  auto n = g.unary(ir::OpKind::Neg, x, "n");
  auto v = g.parameter("v", {DType::f32, {7, 5}});
  g.setOutputs({n, g.unary(ir::OpKind::Abs, v, "a")});
  FusionPlan p = planNone(g, h100());
  const KernelPlan& kn = kernelAt(p, 0);
  CHECK(std::get<ElementwiseMapping>(kn.groups[0].mapping).vectorWidth == 1);
  CHECK_FALSE(kn.launch.tiles.isStatic());
  CHECK(kn.launch.maxBlocks > 0);
  CHECK(std::get<ElementwiseMapping>(kernelAt(p, 1).groups[0].mapping).vectorWidth == 1);
}

TEST_CASE("policy names, the dispatcher and the printers", "[fusion][none]") {
  CHECK(policyName(Policy::AStitch) == "astitch");
  CHECK(parsePolicy("none") == Policy::None);
  CHECK(parsePolicy("xla") == Policy::Xla);
  CHECK_FALSE(parsePolicy("fast").has_value());
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {64, 30000}});
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, x, {1}, "s")});
  FusionPlan p = plan(g, h100(), Policy::None);
  std::string text = printFusionPlan(p);
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "fusion plan: policy none, device h100 (sm_90), 1 step(s), 1 kernel(s)"));
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "group 0: dominant %s, sub-dominants -, mapping row_reduce(block_per_row, "
                       "threads_per_row=1024, rows_per_block=1, split=1, vector=4, "
                       "cluster_per_row=2)"));
  CHECK_THAT(text,
             Catch::Matchers::Contains("stage 0: group 0, barrier before none, materialize %s"));
  CHECK_THAT(text, Catch::Matchers::Contains("%x: input b0"));
  CHECK_THAT(text,
             Catch::Matchers::Contains("launch: block 1024, tiles 128, max blocks 264, shared 128 B"));
  CHECK_THAT(text, Catch::Matchers::Contains("cooperative no, cluster 2 (rows shared)"));
  CHECK(text == printFusionPlan(p)); // stable
  std::string dot = fusionPlanDot(p);
  CHECK(dot.rfind("digraph plan {", 0) == 0);
  CHECK_THAT(dot, Catch::Matchers::Contains("\"s0/x\" -> \"s0/s\"") ||
                      Catch::Matchers::Contains("-> \"s0/s\""));
  CHECK(kernelPlanDot(kernelAt(p, 0), p.graph).rfind("digraph \"k0_s\"", 0) == 0);
}
