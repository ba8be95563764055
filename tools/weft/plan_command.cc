// weft plan G.json [--policy P] [--device-spec S] [--bind B=64] [--dot]: what the planner
// decided, without generating code: the kernels in order with their groups, dominants and
// sub-dominants, thread mappings, where each value lives (register, shared, global, output),
// the stages with the barrier before each, the launch configuration and shared memory; or
// the same as Graphviz DOT.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "fusion/plan_printer.h"

namespace weft::tools {
namespace {

struct PlanArgs {
  std::string file, policy = "astitch", deviceSpec = "h100", bind;
  bool dot = false;
};

void printPlan(const PlanArgs& a) {
  DeviceSpec spec = deviceSpecOption(a.deviceSpec);
  fusion::Policy policy = policyOption(a.policy);
  frontend::ParsedGraph g = loadGraph(a.file);
  fusion::FusionPlan plan = planGraphFile(g, a.bind, spec, policy);
  fmt::print("{}", a.dot ? fusion::fusionPlanDot(plan) : fusion::printFusionPlan(plan));
}

} // namespace

void addPlanCommand(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Print the fusion plan: kernels, groups, dominants, mappings, storage, barriers");
  cmd->add_option("graph", a->file, "Graph file (weft JSON or ONNX)")->required();
  cmd->add_option("--policy", a->policy, "Fusion policy: none, xla, astitch")
      ->capture_default_str();
  cmd->add_option("--device-spec", a->deviceSpec, "Device profile: v100, a100, h100")
      ->capture_default_str();
  cmd->add_option("--bind", a->bind,
                  "Symbol sizes, e.g. B=64,S=128 (unbound symbols stay symbolic)");
  cmd->add_flag("--dot", a->dot, "Print Graphviz DOT instead of text");
  cmd->callback([a] { printPlan(*a); });
}

} // namespace weft::tools
