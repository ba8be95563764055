// Every kernel of every example graph (three policies, generic versions and bound shapes) and of
// the hand-built plans assembles with ptxas for sm_80 and sm_90, without errors and without
// register spills, within the register bound the planner sized its launch by. Skipped (with the
// reason) when no ptxas is installed, failed instead under WEFT_REQUIRE_PTXAS=1 (CI).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "ptxas_or_skip.h"
#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "frontend/json_reader.h"
#include "fusion/launch_config.h"
#include "fusion/plan.h"
#include "fusion/plan_versions.h"
#include "hand_plans.h"
#include "ir/graph.h"
#include "passes/pipeline.h"

using namespace weft;

namespace {

DeviceSpec specFor(int sm) {
  DeviceSpec d = *deviceSpecProfile(sm == 80 ? "a100" : "h100");
  d.computeCapability = sm;
  return d;
}

void assemble(const std::string& what, const fusion::FusionPlan& plan, const std::string& ptxas) {
  INFO(what << " on " << plan.device.smName());
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
  INFO(r.log);
  REQUIRE(r.ok());
  for (const auto& k : m.kernels) {
    bool found = false;
    for (const auto& f : r.functions) {
      if (f.name != k.name) continue;
      found = true;
      INFO("kernel " << k.name << ": " << f.registers << " registers");
      CHECK(f.spillStores == 0);
      CHECK(f.spillLoads == 0);
    }
    CHECK(found);
  }
}

} // namespace

TEST_CASE("ptxas -v output is parsed per function", "[ptxas]") {
  std::string log = "ptxas info    : Compiling entry function 'k0' for 'sm_90'\n"
                    "ptxas info    : Function properties for k0\n"
                    "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                    "ptxas info    : Used 40 registers, used 1 barriers\n";
  auto fs = codegen::parsePtxasLog(log);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].name == "k0");
  CHECK(fs[0].registers == 40);
  CHECK(fs[0].spillStores == 4);
  CHECK(fs[0].spillLoads == 12);
  CHECK(fs[0].stackFrame == 8);
}

namespace {

std::vector<std::filesystem::path> exampleGraphs() {
  std::filesystem::path dir = std::filesystem::path(WEFT_SOURCE_DIR) / "examples" / "graphs";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

/// Assembles `plan` and holds every kernel to the register bound the planner gave it: no spills
/// at that bound, ptxas's register count within launch.maxRegisters, .maxnreg emitted from it
/// where the plan bounds the kernel (registerLimit), and a cooperative grid of maxBlocks blocks
/// co-resident at the registers ptxas really uses (the grid barrier's guarantee).
void assembleWithinBound(const std::string& what, const fusion::FusionPlan& plan,
                         const std::string& ptxas) {
  INFO(what << " on " << plan.device.smName());
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
  INFO(r.log);
  REQUIRE(r.ok());
  for (const codegen::CompiledKernel& k : m.kernels) {
    const auto* kp = std::get_if<fusion::KernelPlan>(&plan.steps.at(size_t(k.planStep)));
    if (!kp) continue; // library calls: gemm_test.cc
    auto f = std::find_if(r.functions.begin(), r.functions.end(),
                          [&](const codegen::PtxasFunctionReport& x) { return x.name == k.name; });
    REQUIRE(f != r.functions.end());
    fusion::RegisterEstimate e = fusion::estimateRegisters(plan.graph, *kp);
    INFO("kernel " << k.name << ": " << f->registers << " registers, bound "
                   << kp->launch.maxRegisters << " (estimate " << e.total() << " = base " << e.base
                   << " + pointers " << e.pointers << " + max(stream " << e.stream << ", combine "
                   << e.combine << ") + slots " << e.slots << "), block " << kp->launch.blockSize);
    CHECK(f->spillStores == 0);
    CHECK(f->spillLoads == 0);
    CHECK(f->registers <= kp->launch.maxRegisters);
    if (kp->registerLimit > 0) {
      CHECK(kp->registerLimit == kp->launch.maxRegisters);
      size_t entry = m.ptx.find(".entry " + k.name + "(");
      REQUIRE(entry != std::string::npos);
      size_t body = m.ptx.find('{', entry);
      CHECK(m.ptx.substr(entry, body - entry)
                .find(".maxnreg " + std::to_string(kp->launch.maxRegisters) + "\n") !=
            std::string::npos);
    }
    if (kp->launch.cooperative) {
      CHECK(kp->registerLimit == kp->launch.maxRegisters);
      CHECK(blocksPerSM(plan.device, kp->launch.blockSize, f->registers, kp->launch.sharedBytes) *
                int64_t(plan.device.smCount) >=
            kp->launch.maxBlocks);
    }
  }
}

} // namespace

TEST_CASE("every example graph's kernels assemble with ptxas without spills within their "
          "register bound",
          "[ptxas]") {
  // Every policy, sm_80 and sm_90, every generic version (symbolic sizes, i64 kernel
  // parameters) and the graph bound at B = 64: the register estimate (fusion/launch_config.h)
  // must cover what each kernel keeps live, split scalar reduces, recomputed chains in column
  // reduces and 64-bit addressing included.
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  std::vector<std::filesystem::path> files = exampleGraphs();
  REQUIRE(files.size() >= 12);
  for (int sm : {80, 90})
    for (const auto& f : files) {
      // As weft::compile does: bind (or not), then canonicalize.
      ir::Graph raw = frontend::readGraphFile(f.string()).graph;
      ir::Binding bind;
      for (const std::string& s : raw.symbols())
        bind[s] = 64;
      ir::Graph g = passes::canonicalize(raw);
      ir::Graph bound = passes::canonicalize(ir::bindSymbols(raw, bind));
      for (fusion::Policy p : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch}) {
        std::string name = f.filename().string() + " under " + std::string(fusion::policyName(p));
        assembleWithinBound(name, fusion::plan(bound, specFor(sm), p), ptxas);
        if (g.symbols().empty()) continue;
        std::vector<fusion::PlanVersion> versions = fusion::planVersions(g, specFor(sm), p);
        for (size_t v = 0; v < versions.size(); ++v)
          assembleWithinBound(name + " (generic version " + std::to_string(v + 1) + " of " +
                                  std::to_string(versions.size()) + ")",
                              versions[v].plan, ptxas);
      }
    }
}

TEST_CASE("every suite workload's kernels assemble with ptxas without spills within their "
          "register bound",
          "[ptxas]") {
  // bench/workloads (static shapes): the sizes the suite reports modeled times for.
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  std::filesystem::path dir = std::filesystem::path(WEFT_SOURCE_DIR) / "bench" / "workloads";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 12);
  for (int sm : {80, 90})
    for (const auto& f : files) {
      ir::Graph g = passes::canonicalize(frontend::readGraphFile(f.string()).graph);
      for (fusion::Policy p : {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch})
        assembleWithinBound(f.filename().string() + " under " + std::string(fusion::policyName(p)),
                            fusion::plan(g, specFor(sm), p), ptxas);
    }
}

TEST_CASE("the register estimate counts a split scalar reduce's combine", "[fusion]") {
  // layer_norm_loss under none: the loss is a scalar sum over [B, 768], split across a wave of
  // blocks whose partials one thread combines behind the grid barrier. With B symbolic each part
  // has its own 64-bit address: the estimate holds 3/8 of a register per part (at most 64), and
  // the launch bounds the kernel at least that much.
  ir::Graph g = frontend::readGraphFile(
                    (std::filesystem::path(WEFT_SOURCE_DIR) / "examples/graphs/layer_norm_loss.json")
                        .string())
                    .graph;
  std::vector<fusion::PlanVersion> versions =
      fusion::planVersions(g, specFor(90), fusion::Policy::None);
  const fusion::KernelPlan* loss = nullptr;
  for (const auto& step : versions.back().plan.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&step); k && k->name.find("_loss") != std::string::npos)
      loss = k;
  REQUIRE(loss);
  int split = fusion::splitFactor(loss->groups.at(0).mapping);
  REQUIRE(split > 1);
  REQUIRE(loss->launch.cooperative);
  fusion::RegisterEstimate e = fusion::estimateRegisters(versions.back().plan.graph, *loss);
  CHECK(e.combine == std::min(64, (3 * split + 7) / 8));
  CHECK(e.stream < e.combine);
  CHECK(loss->launch.maxRegisters >= e.total());
  CHECK(loss->registerLimit == loss->launch.maxRegisters);
}

TEST_CASE("the hand-built multi-stage plans assemble with ptxas without spills", "[ptxas]") {
  std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  for (int sm : {80, 90}) {
    DeviceSpec d = specFor(sm);
    assemble("layer norm (block per row)", test::layerNormOneKernel(d, 4096, 768), ptxas);
    assemble("layer norm (warp per row)", test::layerNormOneKernel(d, 4096, 64, true), ptxas);
    assemble("grid barrier", test::gridBarrierKernel(d, 4096, 64, d.smCount), ptxas);
    assemble("split reduce", test::splitRowReduce(d, 64, 30000, 4), ptxas);
    assemble("column reduce", test::columnReduceThenScale(d, 30000, 64), ptxas);
  }
}
