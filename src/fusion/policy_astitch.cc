#include "fusion/policy_astitch.h"

#include <algorithm>
#include <set>

#include "fusion/dominants.h"
#include "fusion/epilogue_planner.h"
#include "fusion/graph_queries.h"
#include "fusion/kernel_builder.h"
#include "fusion/plan_assembly.h"
#include "fusion/reduction_split.h"
#include "fusion/scope_recompute.h"
#include "fusion/stitch_scope.h"

namespace weft::fusion {
namespace {

/// `recomputed`: where ops are computed (scope_recompute.h), or null when each op is in one
/// scope. A value is an output of its home scope only, when a reader needs it from memory: the
/// caller, a library call, or a scope that does not compute it itself.
std::vector<ir::NodeId> outputsOf(const ir::Graph& g, const Users& users,
                                  const std::vector<ir::NodeId>& scopeOps, int scope = -1,
                                  const ScopeRecomputation* recomputed = nullptr) {
  std::set<ir::NodeId> in(scopeOps.begin(), scopeOps.end());
  auto readFromMemory = [&](ir::NodeId op, ir::NodeId u) {
    if (!recomputed) return !in.count(u);
    // Every scope that computes u (this one and those recomputing u) reads op from memory
    // unless it computes op too.
    const auto& computedBy = recomputed->scopesOf[static_cast<size_t>(u)];
    return computedBy.empty() ||
           std::any_of(computedBy.begin(), computedBy.end(), [&](int s) {
             const auto& own = recomputed->scopesOf[static_cast<size_t>(op)];
             return std::find(own.begin(), own.end(), s) == own.end();
           });
  };
  std::vector<ir::NodeId> outputs;
  for (ir::NodeId op : scopeOps) {
    if (recomputed && recomputed->home[static_cast<size_t>(op)] != scope) continue;
    const auto& us = users[static_cast<size_t>(op)];
    bool readOutside =
        std::any_of(us.begin(), us.end(), [&](ir::NodeId u) { return readFromMemory(op, u); });
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

FusionPlan planAStitch(const ir::Graph& given, const DeviceSpec& spec,
                       const ir::SymbolRanges& ranges, bool gemmEpilogues) {
  // Reductions over rows and more read their operand in its row loop (reduction_split.h).
  SplitReductions split = splitRowReductions(given);
  const ir::Graph& g = split.graph;
  std::vector<KernelPlan> kernels;
  const Users users = g.users(); // once: per scope it made planning quadratic in the graph
  // A dot's elementwise consumers run in its GEMM's epilogue; the scopes stitch the rest.
  std::map<ir::NodeId, GemmEpilogue> epilogues;
  if (gemmEpilogues) epilogues = planEpilogues(g, users);
  StitchScopeOptions options;
  options.excluded = epilogueOps(g, epilogues);
  std::vector<StitchScope> scopes = findStitchScopes(g, options);
  // Values read after their scope: recomputed by the reader where that reads fewer bytes.
  ScopeRecomputation recomputed = recomputeAcrossScopes(g, users, scopes, ranges);
  for (const StitchScope& scope : scopes) {
    std::vector<ir::NodeId> outputs =
        outputsOf(g, users, scope.ops, static_cast<int>(kernels.size()), &recomputed);
    std::vector<GroupSeed> groups = identifyDominants(g, users, scope.ops, outputs);
    std::string name = "stitch" + std::to_string(kernels.size()) + "_" +
                       ptxIdentifier(g.node(groups.front().dominant).name);
    kernels.push_back(buildKernel(g, scope.ops, outputs, groups, spec, std::move(name), ranges));
  }
  FusionPlan plan = assemblePlan(g, spec, Policy::AStitch, std::move(kernels), ranges, epilogues);
  plan.notes = std::move(split.notes);
  plan.notes.insert(plan.notes.end(), recomputed.notes.begin(), recomputed.notes.end());
  return plan;
}

} // namespace weft::fusion
