// Code size of big plans (issue 17, item 2): small tensors' rows mapped at width 1 (fewer
// copies of each op per thread), and graphs of thousands of nodes compiled for size
// (codegen/compile.h, compactCode: math compiled once per module and called, O2, no unrolling).
// Sizes, counts and values; no timings (those are in docs/performance.md).
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <variant>

#include "bench/synthetic_graphs.h"
#include "codegen/compile.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "sim_runner.h"
#include "device_profiles.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::h100;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

/// y = tanh(exp(tanh(...))) `rounds` times over x: f32[4, 8]: 3 math ops a round, bounded.
ir::Graph mathChain(int rounds) {
  ir::Graph g;
  auto v = g.parameter("x", {DType::f32, {4, 8}});
  for (int i = 0; i < rounds; ++i) {
    std::string n = std::to_string(i);
    v = g.unary(OpKind::Tanh, g.unary(OpKind::Exp, g.unary(OpKind::Tanh, v, "a" + n), "e" + n),
                "t" + n);
  }
  g.setOutputs({v});
  return g;
}

codegen::CompiledModule compile(const fusion::FusionPlan& plan, bool libdevice) {
  codegen::CodegenOptions o;
  o.useLibdevice = libdevice;
  return codegen::compileToPtx(plan, o);
}

} // namespace

TEST_CASE("a graph of thousands of nodes defines each math function once and calls it",
          "[codegen][code-size][sim]") {
  fusion::FusionPlan plan = fusion::plan(mathChain(700), h100(), fusion::Policy::AStitch);
  REQUIRE(codegen::compactCode(plan)); // 2,101 nodes, 2,100 math ops in one kernel
  for (bool libdevice : {true, false}) {
    DYNAMIC_SECTION((libdevice ? "libdevice" : "weft's own math")) {
      codegen::CompiledModule m = compile(plan, libdevice);
      const std::string exp = libdevice ? "__nv_expf" : "weft_exp_f32";
      const std::string tanh = libdevice ? "__nv_tanhf" : "weft_tanh_f32";
      for (const std::string& f : {exp, tanh}) {
        INFO(f);
        CHECK(count(m.ptx, ".func  (.param .b32 func_retval0) " + f + "(") == 1);
      }
      // every use is a call: 700 exps and 1,400 tanhs for each element a thread computes
      CHECK(count(m.ptx, "\t" + exp + ", ") >= 700);
      CHECK(count(m.ptx, "\t" + tanh + ", ") >= 1400);
      test::checkOnSim(plan, m, 1e-5);
    }
  }
}

TEST_CASE("a graph of few nodes keeps its math inlined", "[codegen][code-size][sim]") {
  fusion::FusionPlan plan = fusion::plan(mathChain(4), h100(), fusion::Policy::AStitch);
  CHECK_FALSE(codegen::compactCode(plan));
  for (bool libdevice : {true, false}) {
    codegen::CompiledModule m = compile(plan, libdevice);
    CHECK(count(m.ptx, "__nv_expf") == 0);
    CHECK(count(m.ptx, "weft_exp_f32") == 0);
    CHECK(count(m.ptx, "call.uni") == 0);
    test::checkOnSim(plan, m, 1e-5);
  }
}

TEST_CASE("graph_10000's [64, 64] clusters run their rows at width 1 and match the interpreter",
          "[codegen][code-size][sim]") {
  ir::Graph g = bench::clusteredGraph(200, 64, 64);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  int rowReduces = 0;
  for (const fusion::Step& s : plan.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&s))
      for (const fusion::Group& group : k->groups)
        if (const auto* m = std::get_if<fusion::RowReduceMapping>(&group.mapping)) {
          ++rowReduces;
          CHECK(m->vectorWidth == 1);
          CHECK(m->threadsPerRow == 32);
        }
  CHECK(rowReduces > 0);
  test::checkOnSim(plan, compile(plan, true), 1e-3);
}

TEST_CASE("a big graph's library kernels with identical bodies share one entry",
          "[codegen][code-size][sim]") {
  // graph_10000's family at 2,000 nodes: its GEMMs ([64, 64] x [64, 64], with epilogues) repeat.
  ir::Graph g = bench::clusteredGraph(2000, 64, 64);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  REQUIRE(codegen::compactCode(plan));
  codegen::CompiledModule m = compile(plan, true);
  size_t library = 0;
  std::set<std::string> names;
  for (const codegen::CompiledKernel& k : m.kernels) {
    names.insert(k.name);
    if (std::holds_alternative<fusion::LibraryCall>(plan.steps[size_t(k.planStep)])) ++library;
  }
  REQUIRE(m.kernels.size() == plan.steps.size());
  CHECK(library > 10);
  CHECK(names.size() < m.kernels.size()); // some steps launch another step's entry
  CHECK(count(m.ptx, ".visible .entry") == names.size());
  for (const std::string& n : names)
    CHECK(count(m.ptx, ".entry " + n + "(") == 1);
  test::checkOnSim(plan, m, 1e-3);
}
