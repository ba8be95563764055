#include "fusion/plan_assembly.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>

#include "fusion/cluster_plan.h"
#include "fusion/gemm_planner.h"
#include "fusion/memory_planning.h"
#include "fusion/phase_planner.h"

namespace weft::fusion {
namespace {

/// Steps in an order where every value is produced before it is read; among ready steps the
/// one with the smallest first op goes first (the graph's own order).
std::vector<Step> orderSteps(const ir::Graph& g, std::vector<Step> steps) {
  std::map<ir::NodeId, size_t> producer;
  std::vector<std::vector<ir::NodeId>> reads(steps.size());
  std::vector<ir::NodeId> firstOp(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    if (auto* k = std::get_if<KernelPlan>(&steps[s])) {
      for (ir::NodeId v : k->outputs)
        producer[v] = s;
      reads[s] = k->inputs;
      firstOp[s] = k->ops.empty() ? 0 : k->ops.front();
    } else {
      const LibraryCall& call = std::get<LibraryCall>(steps[s]);
      producer[call.result()] = s;
      reads[s] = call.reads(g);
      firstOp[s] = call.op;
    }
  }
  std::vector<std::set<size_t>> next(steps.size());
  std::vector<int> pending(steps.size(), 0);
  for (size_t s = 0; s < steps.size(); ++s)
    for (ir::NodeId v : reads[s]) {
      auto it = producer.find(v);
      if (it == producer.end() || it->second == s || !next[it->second].insert(s).second) continue;
      ++pending[s];
    }
  using Item = std::pair<ir::NodeId, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t s = 0; s < steps.size(); ++s)
    if (pending[s] == 0) ready.push({firstOp[s], s});
  std::vector<Step> ordered;
  while (!ready.empty()) {
    size_t s = ready.top().second;
    ready.pop();
    ordered.push_back(std::move(steps[s]));
    for (size_t n : next[s])
      if (--pending[n] == 0) ready.push({firstOp[n], n});
  }
  if (ordered.size() != steps.size())
    throw std::logic_error("fusion: the steps of the plan depend on each other in a cycle");
  return ordered;
}

} // namespace

FusionPlan assemblePlan(const ir::Graph& g, const DeviceSpec& spec, Policy policy,
                        std::vector<KernelPlan> kernels, const ir::SymbolRanges& ranges,
                        const std::map<ir::NodeId, GemmEpilogue>& epilogues) {
  FusionPlan plan;
  plan.symbolRanges = ranges;
  plan.policy = policy;
  plan.device = spec;
  plan.graph = g;
  std::vector<Step> steps;
  for (KernelPlan& k : kernels)
    steps.emplace_back(std::move(k));
  for (const ir::Node& n : g.nodes())
    if (!ir::isMemoryIntensive(n.kind) && n.kind != ir::OpKind::Parameter) {
      auto e = epilogues.find(n.id);
      GemmEpilogue fused = e == epilogues.end() ? GemmEpilogue{} : e->second;
      GemmPlan gemm = n.kind == ir::OpKind::Dot ? planGemm(g, n.id, spec, fused) : GemmPlan{};
      steps.emplace_back(LibraryCall{n.id, std::move(gemm), std::move(fused)});
    }
  plan.steps = orderSteps(g, std::move(steps));

  plan.bufferOfValue.assign(g.size(), -1);
  auto addBuffer = [&](Buffer::Kind kind, ir::NodeId v, ir::Dim elements) {
    Buffer b;
    b.kind = kind;
    b.value = v;
    b.dtype = g.node(v).type.dtype;
    b.elements = elements;
    plan.buffers.push_back(b);
    return static_cast<int>(plan.buffers.size()) - 1;
  };
  auto valueBuffer = [&](Buffer::Kind kind, ir::NodeId v) {
    int& b = plan.bufferOfValue[static_cast<size_t>(v)];
    if (b < 0) b = addBuffer(kind, v, ir::numElements(g.node(v).type.shape));
    return b;
  };
  for (ir::NodeId in : g.inputs())
    valueBuffer(Buffer::Kind::Input, in);
  for (ir::NodeId out : g.outputs())
    valueBuffer(Buffer::Kind::Output, out);
  // Values crossing steps, in step order.
  for (const Step& step : plan.steps) {
    if (auto* k = std::get_if<KernelPlan>(&step)) {
      for (ir::NodeId v : k->outputs)
        valueBuffer(Buffer::Kind::Intermediate, v);
    } else {
      valueBuffer(Buffer::Kind::Intermediate, std::get<LibraryCall>(step).result());
    }
  }
  for (Step& step : plan.steps) {
    auto* k = std::get_if<KernelPlan>(&step);
    if (!k) continue;
    for (auto& [v, p] : k->placement) {
      switch (p.storage) {
      case Storage::Input:
      case Storage::Output:
        p.buffer = valueBuffer(Buffer::Kind::Intermediate, v);
        break;
      case Storage::Global:
        p.buffer = addBuffer(Buffer::Kind::Scratch, v, ir::numElements(g.node(v).type.shape));
        break;
      default:
        break;
      }
    }
    for (const Group& group : k->groups) {
      // split reduces: one partial per split part; acrossTiles: one per block of the grid
      int64_t split = group.acrossTiles ? k->launch.maxBlocks : splitFactor(group.mapping);
      if (split <= 1) continue;
      for (ir::NodeId op : group.ops) {
        if (g.node(op).kind != ir::OpKind::Reduce || !k->placement.count(op)) continue;
        ValuePlacement& p = k->placement[op];
        if (p.storage == Storage::Register) continue;
        p.partialsBuffer = addBuffer(Buffer::Kind::Scratch, op,
                                     ir::numElements(g.node(op).type.shape) * ir::Dim(split));
      }
    }
  }
  bool symbolic = std::any_of(plan.buffers.begin(), plan.buffers.end(),
                              [](const Buffer& b) { return !b.elements.isStatic(); });
  if (!symbolic) planMemory(plan);
  planPhases(plan); // the emission decisions, once every kernel's buffers are known
  for (Step& step : plan.steps)
    if (auto* k = std::get_if<KernelPlan>(&step)) {
      keepRowClustersWhereEmittable(plan.graph, plan.device, *k, plan.symbolRanges);
      planClusters(plan.graph, plan.device, *k);
    }
  return plan;
}

} // namespace weft::fusion
