// weft plan G.json [--policy P] [--device-spec S] [--bind B=64] [--shapes generic]
// [--dot | --explain]: what the
// planner decided, without generating code: the kernels in order with their groups, dominants
// and sub-dominants, thread mappings, where each value lives (register, shared, global, output),
// the stages with the barrier before each, the phases (slots, staging, tile slices), the launch
// configuration and shared memory; or the same as Graphviz DOT; or, with --explain, why: each
// op's kernel, group and storage, and why each value crossing steps was not stitched, then
// whether cuBLASLt may run each GEMM on the cuda device.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "fusion/plan_explainer.h"
#include "fusion/plan_printer.h"
#include "runtime/cuda/cublaslt_gemm.h"

namespace weft::tools {
namespace {

struct PlanArgs {
  PlanOptions plan;
  bool dot = false;
  bool explain = false;
};

std::string printed(const PlanArgs& a, const fusion::FusionPlan& plan) {
  if (a.explain) { // and who may run each GEMM on the cuda device
    std::string providers = runtime::cuda::lt::explainProviders(plan);
    return fusion::explainPlan(plan) + (providers.empty() ? "" : "\n" + providers);
  }
  return a.dot ? fusion::fusionPlanDot(plan) : fusion::printFusionPlan(plan);
}

/// A generic program prints every version under its guard, or with --bind the one version
/// that binding runs (DOT: that version, or the last: one graph per file).
void printPlan(const PlanArgs& a) {
  PlanVersions v = plansFromOptions(a.plan, loadGraph(a.plan.file));
  if (v.plans.size() == 1 || a.dot)
    return fmt::print("{}", printed(a, v.plans[v.selected].plan));
  auto guard = [&](size_t i) {
    return i + 1 < v.plans.size() ? ir::guardStr(v.plans[i].guard)
                                  : std::string("every binding the versions above do not serve");
  };
  if (v.bound)
    return fmt::print("== version {} of {} (the one --bind selects; without --bind, all): {}\n{}",
                      v.selected + 1, v.plans.size(), guard(v.selected),
                      printed(a, v.plans[v.selected].plan));
  for (size_t i = 0; i < v.plans.size(); ++i)
    fmt::print("== version {} of {}: {}\n{}", i + 1, v.plans.size(), guard(i),
               printed(a, v.plans[i].plan));
}

} // namespace

void addPlanCommand(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Print the fusion plan: kernels, groups, dominants, mappings, storage, barriers");
  addPlanOptions(cmd, a->plan);
  auto* dot = cmd->add_flag("--dot", a->dot, "Print Graphviz DOT instead of text");
  cmd->add_flag("--explain", a->explain,
                "Say why: each op's kernel, group and storage, why values cross kernels, and "
                "which GEMMs cuBLASLt may run on the cuda device")
      ->excludes(dot);
  cmd->callback([a] { printPlan(*a); });
}

} // namespace weft::tools
