#include "fusion/policy_astitch.h"

#include <algorithm>
#include <set>

#include "fusion/dominants.h"
#include "fusion/epilogue_planner.h"
#include "fusion/graph_queries.h"
#include "fusion/kernel_builder.h"
#include "fusion/plan_assembly.h"
#include "fusion/stitch_scope.h"

namespace weft::fusion {
namespace {

std::vector<ir::NodeId> outputsOf(const ir::Graph& g, const Users& users,
                                  const std::vector<ir::NodeId>& scopeOps) {
  std::set<ir::NodeId> in(scopeOps.begin(), scopeOps.end());
  std::vector<ir::NodeId> outputs;
  for (ir::NodeId op : scopeOps) {
    const auto& us = users[static_cast<size_t>(op)];
    bool readOutside =
        std::any_of(us.begin(), us.end(), [&](ir::NodeId u) { return !in.count(u); });
    // A regenerated source read by another scope is regenerated there too, not passed on.
    bool regenerated = isSource(g.node(op)) && !g.isOutput(op) &&
                       std::all_of(us.begin(), us.end(), [&](ir::NodeId u) {
                         return ir::isMemoryIntensive(g.node(u).kind);
                       });
    if (g.isOutput(op) || (readOutside && !regenerated)) outputs.push_back(op);
  }
  return outputs;
}

} // namespace

std::vector<ir::NodeId> scopeOutputs(const ir::Graph& g, const std::vector<ir::NodeId>& scopeOps) {
  return outputsOf(g, g.users(), scopeOps);
}

FusionPlan planAStitch(const ir::Graph& g, const DeviceSpec& spec,
                       const ir::SymbolRanges& ranges, bool gemmEpilogues) {
  std::vector<KernelPlan> kernels;
  const Users users = g.users(); // once: per scope it made planning quadratic in the graph
  // A dot's elementwise consumers run in its GEMM's epilogue; the scopes stitch the rest.
  std::map<ir::NodeId, GemmEpilogue> epilogues;
  if (gemmEpilogues) epilogues = planEpilogues(g, users);
  StitchScopeOptions options;
  options.excluded = epilogueOps(g, epilogues);
  for (const StitchScope& scope : findStitchScopes(g, options)) {
    std::vector<ir::NodeId> outputs = outputsOf(g, users, scope.ops);
    std::vector<GroupSeed> groups = identifyDominants(g, users, scope.ops, outputs);
    std::string name = "stitch" + std::to_string(kernels.size()) + "_" +
                       ptxIdentifier(g.node(groups.front().dominant).name);
    kernels.push_back(buildKernel(g, scope.ops, outputs, groups, spec, std::move(name), ranges));
  }
  return assemblePlan(g, spec, Policy::AStitch, std::move(kernels), ranges, epilogues);
}

} // namespace weft::fusion
