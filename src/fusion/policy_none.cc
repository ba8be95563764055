#include "fusion/policy_none.h"

#include <algorithm>

#include "fusion/dominants.h"
#include "fusion/graph_queries.h"
#include "fusion/kernel_builder.h"
#include "fusion/plan_assembly.h"

namespace weft::fusion {
namespace {

/// A constant or iota that every kernel reading it regenerates: one read only by
/// memory-intensive ops and not a graph output (a dot or the caller needs it in a buffer).
bool isRegenerated(const ir::Graph& g, const Users& users, ir::NodeId op) {
  const auto& us = users[static_cast<size_t>(op)];
  return isSource(g.node(op)) && !g.isOutput(op) &&
         std::all_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return ir::isMemoryIntensive(g.node(u).kind); });
}

} // namespace

FusionPlan planNone(const ir::Graph& g, const DeviceSpec& spec,
                    const ir::SymbolRanges& ranges) {
  Users users = g.users();
  std::vector<KernelPlan> kernels;
  size_t steps = 0; // kernels and library calls before this op, in graph order: its kernel's name
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::OpKind::Parameter || isRegenerated(g, users, n.id)) continue;
    if (!ir::isMemoryIntensive(n.kind)) { // a library call (assemblePlan adds it)
      ++steps;
      continue;
    }
    // The op and the sources it regenerates.
    std::vector<ir::NodeId> scope{n.id};
    for (ir::NodeId o : n.operands)
      if (isRegenerated(g, users, o) && std::find(scope.begin(), scope.end(), o) == scope.end())
        scope.push_back(o);
    std::sort(scope.begin(), scope.end());
    std::vector<GroupSeed> groups = identifyDominants(g, users, scope, {n.id});
    std::string name = ptxIdentifier("k" + std::to_string(steps++) + "_" + n.name);
    kernels.push_back(buildKernel(g, scope, {n.id}, groups, spec, std::move(name), ranges));
  }
  return assemblePlan(g, spec, Policy::None, std::move(kernels), ranges);
}

} // namespace weft::fusion
