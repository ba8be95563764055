#include "fusion/policy_xla.h"

#include <algorithm>
#include <set>

#include "fusion/dominants.h"
#include "fusion/graph_queries.h"
#include "fusion/kernel_builder.h"
#include "fusion/plan_assembly.h"

namespace weft::fusion {
namespace {

bool isRoot(const ir::Graph& g, const Users& users, ir::NodeId op) {
  const ir::Node& n = g.node(op);
  if (!ir::isMemoryIntensive(n.kind)) return false;
  if (g.isOutput(op) || n.kind == ir::OpKind::Reduce || isExpensiveBroadcastSource(g, users, op))
    return true;
  const auto& us = users[static_cast<size_t>(op)];
  return std::any_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return !ir::isMemoryIntensive(g.node(u).kind); });
}

} // namespace

FusionPlan planXla(const ir::Graph& g, const DeviceSpec& spec) {
  Users users = g.users();
  std::vector<KernelPlan> kernels;
  for (const ir::Node& root : g.nodes()) {
    if (!isRoot(g, users, root.id)) continue;
    // The root and every non-root memory-intensive op it reads, transitively.
    std::set<ir::NodeId> ops{root.id};
    std::vector<ir::NodeId> work{root.id};
    while (!work.empty()) {
      ir::NodeId v = work.back();
      work.pop_back();
      for (ir::NodeId o : g.node(v).operands)
        if (ir::isMemoryIntensive(g.node(o).kind) && !isRoot(g, users, o) && ops.insert(o).second)
          work.push_back(o);
    }
    GroupSeed seed;
    seed.dominant = root.id;
    seed.ops.assign(ops.begin(), ops.end());
    std::string name = "xla" + std::to_string(kernels.size()) + "_" + ptxIdentifier(root.name);
    kernels.push_back(buildKernel(g, seed.ops, {root.id}, {seed}, spec, std::move(name)));
  }
  return assemblePlan(g, spec, Policy::Xla, std::move(kernels));
}

} // namespace weft::fusion
