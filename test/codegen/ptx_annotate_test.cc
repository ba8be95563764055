// codegen/ptx_annotate.h: every kernel's entry in the PTX carries one comment line naming the
// graph ops it computes, and the annotation adds nothing but that line (issue 19).
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

#include "codegen/compile.h"
#include "codegen/ptx_annotate.h"
#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "ir/graph.h"

using namespace weft;

TEST_CASE("each kernel's .entry is preceded by the ops it computes, and only comments are added") {
  ir::Graph g = frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) +
                                        "/examples/graphs/astitch_fig7.json").graph;
  g = ir::bindSymbols(g, {{"B", 64}});
  for (fusion::Policy policy : {fusion::Policy::None, fusion::Policy::AStitch}) {
    fusion::FusionPlan plan = fusion::plan(g, *deviceSpecProfile("h100"), policy);
    codegen::CompiledModule m = codegen::compileToPtx(plan);
    std::istringstream lines(m.ptx);
    std::string line, previous, stripped;
    std::set<std::string> annotated;
    while (std::getline(lines, line)) {
      if (line.find(".entry ") != std::string::npos) {
        INFO(line);
        REQUIRE(previous.starts_with(std::string(codegen::kKernelCommentPrefix) + "kernel "));
        annotated.insert(previous);
      }
      if (!line.starts_with(codegen::kKernelCommentPrefix)) stripped += line + "\n";
      previous = line;
    }
    int kernels = 0;
    for (const fusion::Step& step : plan.steps) {
      const auto* k = std::get_if<fusion::KernelPlan>(&step);
      if (!k) continue;
      ++kernels;
      std::string want = std::string(codegen::kKernelCommentPrefix) + "kernel " + k->name +
                         " computes " + plan.graph.node(k->ops.front()).name;
      bool found = false;
      for (const std::string& a : annotated) found = found || a.starts_with(want);
      CHECK(found);
    }
    CHECK(int(annotated.size()) == kernels);
    // Stripping the annotations gives back the PTX as emitted before it.
    CHECK(codegen::annotateKernels(stripped, plan) == m.ptx);
  }
}

TEST_CASE("an op name with a line break or other control characters stays inside its comment") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {2, 3}});
  g.setOutputs({g.unary(ir::OpKind::Exp, x, "a\nb\r\t\x01")});
  fusion::FusionPlan plan = fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
  codegen::CompiledModule m = codegen::compileToPtx(plan); // parses its own PTX: fails if broken
  CHECK(m.ptx.find("computes a\\nb\\r\\t\\x01\n") != std::string::npos);
  CHECK(m.ptx.find("\nb") == std::string::npos);
}
