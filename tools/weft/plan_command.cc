// weft plan G.json [--policy P] [--device-spec S] [--bind B=64] [--dot | --explain]: what the
// planner decided, without generating code: the kernels in order with their groups, dominants
// and sub-dominants, thread mappings, where each value lives (register, shared, global, output),
// the stages with the barrier before each, the phases (slots, staging, tile slices), the launch
// configuration and shared memory; or the same as Graphviz DOT; or, with --explain, why: each
// op's kernel, group and storage, and why each value crossing steps was not stitched.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "fusion/plan_explainer.h"
#include "fusion/plan_printer.h"

namespace weft::tools {
namespace {

struct PlanArgs {
  PlanOptions plan;
  bool dot = false;
  bool explain = false;
};

void printPlan(const PlanArgs& a) {
  fusion::FusionPlan plan = planFromOptions(a.plan, loadGraph(a.plan.file));
  fmt::print("{}", a.dot       ? fusion::fusionPlanDot(plan)
                   : a.explain ? fusion::explainPlan(plan)
                               : fusion::printFusionPlan(plan));
}

} // namespace

void addPlanCommand(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Print the fusion plan: kernels, groups, dominants, mappings, storage, barriers");
  addPlanOptions(cmd, a->plan);
  auto* dot = cmd->add_flag("--dot", a->dot, "Print Graphviz DOT instead of text");
  cmd->add_flag("--explain", a->explain,
                "Say why: each op's kernel, group and storage, and why values cross kernels")
      ->excludes(dot);
  cmd->callback([a] { printPlan(*a); });
}

} // namespace weft::tools
