#include "fusion/policy_xla.h"

#include <algorithm>
#include <set>

#include "fusion/dominants.h"
#include "fusion/graph_queries.h"
#include "fusion/kernel_builder.h"
#include "fusion/plan_assembly.h"

namespace weft::fusion {
namespace {

/// The most ops one kernel recomputes for a fused value: an op whose fused producers (itself
/// and every non-root memory-intensive op it reads, transitively) would exceed this becomes a
/// root itself, materialised once, as XLA refuses fusions that duplicate too much code.
/// Without it a chain of n softmaxes recomputes the whole chain before each reduce (n^2 ops).
constexpr size_t kMaxFusedOps = 48;

bool isNaturalRoot(const ir::Graph& g, const Users& users, ir::NodeId op) {
  const ir::Node& n = g.node(op);
  if (!ir::isMemoryIntensive(n.kind)) return false;
  if (g.isOutput(op) || n.kind == ir::OpKind::Reduce || isExpensiveBroadcastSource(g, users, op) ||
      gatheredFromMemory(g, users, op))
    return true;
  const auto& us = users[static_cast<size_t>(op)];
  return std::any_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return !ir::isMemoryIntensive(g.node(u).kind); });
}

/// Fusion roots by node id: the natural ones, then, in topological order, every op whose fused
/// producers would exceed kMaxFusedOps.
std::vector<bool> fusionRoots(const ir::Graph& g, const Users& users) {
  std::vector<bool> root(g.size(), false);
  std::vector<std::set<ir::NodeId>> fused(g.size()); // of each non-root op: its fused ops
  for (const ir::Node& n : g.nodes()) {
    root[static_cast<size_t>(n.id)] = isNaturalRoot(g, users, n.id);
    if (!ir::isMemoryIntensive(n.kind)) continue;
    std::set<ir::NodeId> ops{n.id};
    for (ir::NodeId o : n.operands)
      if (ir::isMemoryIntensive(g.node(o).kind) && !root[static_cast<size_t>(o)])
        ops.insert(fused[static_cast<size_t>(o)].begin(), fused[static_cast<size_t>(o)].end());
    if (ops.size() > kMaxFusedOps && !isSource(n)) root[static_cast<size_t>(n.id)] = true;
    if (!root[static_cast<size_t>(n.id)]) fused[static_cast<size_t>(n.id)] = std::move(ops);
  }
  return root;
}

} // namespace

FusionPlan planXla(const ir::Graph& g, const DeviceSpec& spec,
                   const ir::SymbolRanges& ranges) {
  Users users = g.users();
  std::vector<bool> isRoot = fusionRoots(g, users);
  std::vector<KernelPlan> kernels;
  for (const ir::Node& root : g.nodes()) {
    if (!isRoot[static_cast<size_t>(root.id)]) continue;
    // The root and every non-root memory-intensive op it reads, transitively.
    std::set<ir::NodeId> ops{root.id};
    std::vector<ir::NodeId> work{root.id};
    while (!work.empty()) {
      ir::NodeId v = work.back();
      work.pop_back();
      for (ir::NodeId o : g.node(v).operands)
        if (ir::isMemoryIntensive(g.node(o).kind) && !isRoot[static_cast<size_t>(o)] &&
            ops.insert(o).second)
          work.push_back(o);
    }
    GroupSeed seed;
    seed.dominant = root.id;
    seed.ops.assign(ops.begin(), ops.end());
    std::string name = "xla" + std::to_string(kernels.size()) + "_" + ptxIdentifier(root.name);
    kernels.push_back(buildKernel(g, seed.ops, {root.id}, {seed}, spec, std::move(name), ranges));
  }
  return assemblePlan(g, spec, Policy::Xla, std::move(kernels), ranges);
}

} // namespace weft::fusion
