// The gather op end to end: shape rules and their messages, the reference interpreter's values
// worked out by hand (out-of-range indices give 0), the simulator under every policy (bounds-
// checked: an index out of range is never read), plans that keep the gathered operand in
// memory, the bytes an embedding lookup moves, and ptxas.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <variant>

#include "codegen/compile.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ptxas_or_skip.h"
#include "sim_runner.h"
#include "device_profiles.h"
#include "weft/error.h"

using namespace weft;
using ir::DType;
using ir::NodeId;
using ir::OpKind;

namespace {

HostTensor tensor(DType t, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostTensor h(t, std::move(shape));
  REQUIRE(static_cast<size_t>(h.numElements()) == values.size());
  for (size_t i = 0; i < values.size(); ++i)
    h.set(static_cast<int64_t>(i), values[i]);
  return h;
}

HostTensor indices(DType t, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  HostTensor h(t, std::move(shape));
  REQUIRE(static_cast<size_t>(h.numElements()) == values.size());
  for (size_t i = 0; i < values.size(); ++i)
    h.setInt(static_cast<int64_t>(i), values[i]);
  return h;
}

std::vector<double> elements(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.push_back(t.get(i));
  return out;
}

/// Every policy's plan of `g`, compiled and run on the simulator with `inputs`: each output
/// equal to `want` element for element.
void checkEveryPolicy(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                      const std::vector<double>& want) {
  for (fusion::Policy p : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch}) {
    INFO("policy " << fusion::policyName(p));
    fusion::FusionPlan plan = fusion::plan(g, test::h100(), p);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    std::vector<HostTensor> got = test::runOnSim(plan, m, inputs);
    REQUIRE(got.size() == 1);
    CHECK(elements(got[0]) == want);
  }
}

} // namespace

TEST_CASE("gather checks its operands and attributes, one line naming what is wrong",
          "[gather][ir]") {
  ir::Graph g;
  NodeId x = g.parameter("x", {DType::f32, {4, 3}});
  NodeId i = g.parameter("i", {DType::i32, {5, 3}});
  NodeId f = g.parameter("f", {DType::f32, {5, 3}});
  NodeId j = g.parameter("j", {DType::i64, {5, 2}});
  CHECK(g.node(g.gather(x, {i}, {0}, {1})).type.str() == "f32[5, 3]");
  using Catch::Contains;
  CHECK_THROWS_WITH(g.gather(x, {f}, {0}, {1}), Contains("index operand 1 has dtype f32"));
  CHECK_THROWS_WITH(g.gather(x, {i, j}, {0, 1}, {}),
                    Contains("index operand 2 has shape [5, 2] but index operand 1 has [5, 3]"));
  CHECK_THROWS_WITH(g.gather(x, {i}, {0, 1}, {}), Contains("names 2 axis(es) but the gather has 1"));
  CHECK_THROWS_WITH(g.gather(x, {i, i}, {1, 1}, {}), Contains("names axis 1 twice"));
  CHECK_THROWS_WITH(g.gather(x, {i}, {2}, {1}), Contains("gather axis"));
  CHECK_THROWS_WITH(g.gather(x, {i}, {0}, {}), Contains("dims [] has 0 entries"));
  CHECK_THROWS_WITH(g.gather(x, {i}, {0}, {0}),
                    Contains("dims [0] maps operand axis 1 (size 3) to result dimension 0, of size 5"));
  CHECK_THROWS_WITH(g.add(OpKind::Gather, {x}, ir::GatherAttrs{{0}, {1}}),
                    Contains("at least one index operand"));
}

TEST_CASE("gather reads the operand at the indices, and out of range gives 0", "[gather][interpreter]") {
  // take along axis 0 of a [4, 3] table by [2, 2] indices, as an embedding lookup: the index
  // broadcast along the row, each result row a table row (or zeros).
  ir::Graph g;
  NodeId table = g.parameter("table", {DType::f32, {4, 3}});
  NodeId ids = g.parameter("ids", {DType::i32, {2, 2}});
  NodeId spread = g.broadcastInDim(ids, {2, 2, 3}, {0, 1});
  g.addOutput(g.gather(table, {spread}, {0}, {2}, "rows"));
  std::vector<HostTensor> in = {
      tensor(DType::f32, {4, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}),
      indices(DType::i32, {2, 2}, {3, -1, 4, 1})};
  std::vector<double> want = {30, 31, 32, 0, 0, 0, 0, 0, 0, 10, 11, 12};
  CHECK(elements(ir::interpret(g, in)[0]) == want);
  checkEveryPolicy(g, in, want);
}

TEST_CASE("gather by two index operands, 64-bit indices past every axis",
          "[gather][interpreter]") {
  // result[r] = x[i[r], j[r]]: indices near 2^32 and 2^63 must not wrap into range.
  ir::Graph g;
  NodeId x = g.parameter("x", {DType::i32, {3, 5}});
  NodeId i = g.parameter("i", {DType::i64, {6}});
  NodeId j = g.parameter("j", {DType::i64, {6}});
  g.addOutput(g.gather(x, {i, j}, {0, 1}, {}, "picked"));
  std::vector<double> xs;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c)
      xs.push_back(100 * r + c + 1);
  const int64_t big = int64_t(1) << 32, min = std::numeric_limits<int64_t>::min();
  std::vector<HostTensor> in = {tensor(DType::i32, {3, 5}, xs),
                                indices(DType::i64, {6}, {2, 0, big, 1, min, 2}),
                                indices(DType::i64, {6}, {4, 0, 0, big + 1, 3, 5})};
  std::vector<double> want = {205, 1, 0, 0, 0, 0};
  CHECK(elements(ir::interpret(g, in)[0]) == want);
  checkEveryPolicy(g, in, want);
}

TEST_CASE("gather along a middle axis keeps the others in place (take_along_axis)",
          "[gather][interpreter]") {
  // y[a, k, c] = x[a, idx[a, k, c], c] for x [2, 4, 2], idx [2, 3, 2]; bool data, i8 indices.
  ir::Graph g;
  NodeId x = g.parameter("x", {DType::boolean, {2, 4, 2}});
  NodeId idx = g.parameter("idx", {DType::i8, {2, 3, 2}});
  g.addOutput(g.gather(x, {idx}, {1}, {0, 2}, "y"));
  std::vector<double> xs = {1, 0, 0, 1, 1, 1, 0, 0, /* a = 1 */ 0, 1, 1, 0, 0, 0, 1, 1};
  std::vector<HostTensor> in = {tensor(DType::boolean, {2, 4, 2}, xs),
                                indices(DType::i8, {2, 3, 2}, {0, 0, 1, 2, 4, 1, 3, 3, 2, 1, -3, 0})};
  // a=0: (k0) x[0,0,0]=1 x[0,0,1]=0; (k1) x[0,1,0]=0 x[0,2,1]=1; (k2) out of range, x[0,1,1]=1
  // a=1: (k0) x[1,3,0]=1 x[1,3,1]=1; (k1) x[1,2,0]=0 x[1,1,1]=0; (k2) out of range, x[1,0,1]=1
  std::vector<double> want = {1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1};
  CHECK(elements(ir::interpret(g, in)[0]) == want);
  checkEveryPolicy(g, in, want);
}

TEST_CASE("a gathered value computed in the graph is stored by another kernel, under every policy",
          "[gather][planner]") {
  // softmax rows gathered at run-time columns: the gather's kernel reads the softmax from
  // memory, never from the registers or tiles of the kernel that computes it.
  ir::Graph g;
  NodeId x = g.parameter("x", {DType::f32, {64, 50}});
  NodeId col = g.parameter("col", {DType::i32, {64, 2}});
  NodeId m = g.reduce(ir::ReduceKind::Max, x, {1});
  NodeId e = g.unary(OpKind::Exp, g.binary(OpKind::Sub, x, g.broadcastInDim(m, {64, 50}, {0})));
  NodeId s = g.reduce(ir::ReduceKind::Sum, e, {1});
  NodeId p = g.binary(OpKind::Div, e, g.broadcastInDim(s, {64, 50}, {0}), "p");
  NodeId picked = g.gather(p, {col}, {1}, {0}, "picked");
  g.addOutput(g.binary(OpKind::Mul, picked, g.broadcastInDim(m, {64, 2}, {0}), "y"));
  for (fusion::Policy policy : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch}) {
    INFO("policy " << fusion::policyName(policy));
    fusion::FusionPlan plan = fusion::plan(g, test::h100(), policy);
    for (const fusion::Step& step : plan.steps) {
      const auto* k = std::get_if<fusion::KernelPlan>(&step);
      if (!k) continue;
      bool gathers = false, computesP = false;
      for (NodeId op : k->ops) {
        gathers = gathers || plan.graph.node(op).kind == OpKind::Gather;
        computesP = computesP || plan.graph.node(op).name == "p";
      }
      CHECK_FALSE((gathers && computesP));
    }
    codegen::CompiledModule module = codegen::compileToPtx(plan);
    test::checkOnSim(plan, module, 1e-5);
  }
}

TEST_CASE("an embedding lookup reads the rows it gathers, not the table", "[gather][traffic]") {
  // 64 ids into a [30000, 64] f32 table (7.7 MB): a one-hot sum would read the table once per
  // id; the gather reads 64 rows of 256 bytes, plus the ids and the result's stores.
  ir::Graph g;
  NodeId table = g.parameter("table", {DType::f32, {30000, 64}});
  NodeId ids = g.parameter("ids", {DType::i64, {64}});
  NodeId rows = g.gather(table, {g.broadcastInDim(ids, {64, 64}, {0})}, {0}, {1}, "rows");
  g.addOutput(g.binary(OpKind::Mul, rows, rows, "y"));
  fusion::FusionPlan plan = fusion::plan(g, test::h100(), fusion::Policy::AStitch);
  std::vector<LaunchCounters> counters;
  test::checkOnSim(plan, codegen::compileToPtx(plan), 1e-6, &counters);
  uint64_t bytes = 0;
  for (const LaunchCounters& c : counters)
    bytes += c.globalBytes();
  // At most the rows (16 KB), the result (16 KB) and the ids (0.5 KB), each warp's index loads
  // a sector more; ids repeat (test inputs are -5..5), so rows read may share sectors.
  CHECK(bytes <= 40 * 1024);
  CHECK(bytes >= 16 * 1024);
}

TEST_CASE("gather kernels assemble without spills", "[gather][ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  ir::Graph g;
  NodeId table = g.parameter("table", {DType::bf16, {1000, 128}});
  const ir::Dim b = ir::Dim::symbol("B");
  NodeId ids = g.parameter("ids", {DType::i32, {b, 16}});
  NodeId rows = g.gather(table, {g.broadcastInDim(ids, {b, 16, 128}, {0, 1})}, {0}, {2});
  g.addOutput(g.convert(rows, DType::f32, "y"));
  ir::Graph bound = ir::bindSymbols(g, {{"B", 4}});
  test::checkAssemblesWithoutSpills(ptxas, fusion::plan(bound, test::h100(), fusion::Policy::AStitch));
}

TEST_CASE("a gather along an axis that is empty reads nothing (static, or symbolic bound to 0)",
          "[gather][shapes]") {
  // ids {0, 1, 2, -1} into a [N, 3] table: at N = 0 every index is out of range and no load
  // may be made (position 0 is past an empty buffer; the simulator checks every access).
  const ir::Dim n = ir::Dim::symbol("N");
  for (bool symbolic : {true, false}) {
    for (int64_t rows : {0, 2}) {
      INFO((symbolic ? "symbolic" : "static") << " N = " << rows);
      ir::Graph g;
      NodeId table = g.parameter("table", {DType::f32, {symbolic ? n : ir::Dim(rows), 3}});
      NodeId ids = g.parameter("ids", {DType::i32, {4}});
      g.addOutput(g.gather(table, {g.broadcastInDim(ids, {4, 3}, {0})}, {0}, {1}, "rows"));
      ir::Binding binding;
      if (symbolic) binding["N"] = rows;
      std::vector<double> values;
      for (int64_t i = 0; i < rows * 3; ++i)
        values.push_back(double(i + 1));
      std::vector<HostTensor> in = {tensor(DType::f32, {rows, 3}, values),
                                    indices(DType::i32, {4}, {0, 1, 2, -1})};
      std::vector<double> want(12, 0.0);
      for (int64_t r = 0; r < std::min<int64_t>(rows, 2); ++r)
        for (int c = 0; c < 3; ++c)
          want[size_t(r * 3 + c)] = double(r * 3 + c + 1);
      CHECK(elements(ir::interpret(g, in, binding)[0]) == want);
      for (fusion::Policy p : {fusion::Policy::None, fusion::Policy::AStitch}) {
        fusion::FusionPlan plan = fusion::plan(g, test::h100(), p);
        std::vector<HostTensor> got =
            test::runOnSim(plan, codegen::compileToPtx(plan), in, binding);
        CHECK(elements(got[0]) == want);
      }
    }
  }
}
