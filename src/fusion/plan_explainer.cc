#include "fusion/plan_explainer.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "fusion/graph_queries.h"
#include "fusion/plan_printer.h"
#include "ir/op.h"

namespace weft::fusion {
namespace {

/// xla's duplication limit (policy_xla.cc): quoted, not decided, here.
constexpr size_t kXlaMaxFusedOps = 48;

std::string name(const ir::Graph& g, ir::NodeId id) {
  return "%" + g.node(id).name;
}

/// A source (constant, iota) every kernel that reads it regenerates inline, as the policies
/// treat them: not a graph output, read only by memory-intensive ops.
bool isRegenerated(const ir::Graph& g, const Users& users, ir::NodeId op) {
  const auto& us = users[static_cast<size_t>(op)];
  return isSource(g.node(op)) && !g.isOutput(op) &&
         std::all_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return ir::isMemoryIntensive(g.node(u).kind); });
}

/// What the plan knows of each step: its name, the steps that compute each op (a policy may
/// recompute an op in several kernels: xla fuses a non-root op into each root that reads it)
/// and the step that produces each value another step reads.
struct StepIndex {
  std::vector<std::string> names;
  std::vector<std::vector<int>> stepsOf; // op → the steps computing it, in order
  std::vector<int> producer;             // value → the step that writes it for others, or -1
};

StepIndex indexSteps(const FusionPlan& plan) {
  const ir::Graph& g = plan.graph;
  StepIndex idx;
  idx.stepsOf.assign(g.size(), {});
  idx.producer.assign(g.size(), -1);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (const auto* call = std::get_if<LibraryCall>(&plan.steps[s])) {
      idx.names.push_back(fmt::format("library call {}", name(g, call->op)));
      idx.stepsOf[size_t(call->op)].push_back(int(s));
      for (const auto* ops :
           {&call->epilogue.ops, &call->epilogue.a.ops, &call->epilogue.b.ops,
            &call->epilogue.a.leaves, &call->epilogue.b.leaves, &call->epilogue.store})
        for (ir::NodeId op : *ops)
          idx.stepsOf[size_t(op)].push_back(int(s));
      idx.producer[size_t(call->result())] = int(s);
      continue;
    }
    const auto& k = std::get<KernelPlan>(plan.steps[s]);
    idx.names.push_back("kernel " + k.name);
    for (ir::NodeId op : k.ops)
      idx.stepsOf[size_t(op)].push_back(int(s));
    for (ir::NodeId v : k.outputs)
      idx.producer[size_t(v)] = int(s);
  }
  return idx;
}

/// The values step `s` reads from other steps.
std::vector<ir::NodeId> stepReads(const FusionPlan& plan, size_t s) {
  if (const auto* call = std::get_if<LibraryCall>(&plan.steps[s])) return call->reads(plan.graph);
  return std::get<KernelPlan>(plan.steps[s]).inputs;
}

std::string spaceName(OpSpace s) {
  switch (s) {
  case OpSpace::Loop:
    return "loop space";
  case OpSpace::Row:
    return "row space";
  case OpSpace::Other:
    return "own index space";
  }
  return "?";
}

/// Why `v` lives where the plan put it.
std::string storageReason(const KernelPlan& k, ir::NodeId v, const ValuePlacement& p) {
  switch (p.storage) {
  case Storage::Register: {
    std::string why = "registers: recomputed inline where it is read (local stitching)";
    for (const PhasePlan& phase : k.phases)
      for (const StagedInput& s : phase.staged)
        if (s.input == v && s.computed)
          return "shared memory, computed by each block: a small value computed from the "
                 "kernel's inputs alone, so every phase that reads it through a broadcast "
                 "computes it once per block instead of one stage storing it behind a grid "
                 "barrier";
    bool kept = p.registerReuse;
    for (const PhasePlan& phase : k.phases)
      kept = kept || (phase.slots && phase.slots->reused.count(v));
    return kept ? why + "; kept in registers across its group's stages (operator-level reuse)"
                : why;
  }
  case Storage::Shared:
    if (p.resident)
      return fmt::format(
          "shared memory [{} B at {}], resident: phases {} to {} read it at their own rows in the "
          "same tiles, so each block keeps its {} tile(s) of it across the grid barriers instead "
          "of a store and reloads through global memory ({} B saved)",
          p.sharedBytes, p.sharedOffset, p.resident->firstPhase, p.resident->lastPhase,
          k.residentTiles, p.resident->savedBytes);
    return fmt::format("shared memory [{} B at {}]: read by a later stage of the same tile "
                       "(regional stitching)",
                       p.sharedBytes, p.sharedOffset);
  case Storage::Global:
    return p.partialsBuffer >= 0
               ? "global scratch: combined from per-block partials behind a grid barrier"
               : "global scratch: read in a later phase, behind a grid barrier (global "
                 "stitching)";
  case Storage::Output:
    return "output buffer: a graph output, or read by a later step";
  case Storage::Input:
    if (p.resident)
      return fmt::format("input, resident: phase {} loads it into shared memory [{} B at {}] and "
                         "phases up to {} read it there at their own rows, not from global "
                         "memory again ({} B saved)",
                         p.resident->firstPhase, p.sharedBytes, p.sharedOffset,
                         p.resident->lastPhase, p.resident->savedBytes);
    return "input: produced before this kernel";
  }
  return "?";
}

/// Why xla made `op` a fusion root (policy_xla.cc's rules, in its order).
std::string xlaRootReason(const ir::Graph& g, const Users& users, ir::NodeId op) {
  const ir::Node& n = g.node(op);
  if (g.isOutput(op)) return "it is a graph output";
  if (n.kind == ir::OpKind::Reduce) return "xla does not fuse a reduce into its consumers";
  if (isExpensiveBroadcastSource(g, users, op))
    return "xla does not fuse an expensive op into a broadcast of it";
  if (gatheredFromMemory(g, users, op))
    return "a gather reads it at run-time positions, which only memory serves";
  const auto& us = users[size_t(op)];
  if (std::any_of(us.begin(), us.end(),
                  [&](ir::NodeId u) { return !ir::isMemoryIntensive(g.node(u).kind); }))
    return "a library call reads it";
  return fmt::format("fusing it would recompute more than {} ops (xla's duplication limit)",
                     kXlaMaxFusedOps);
}

/// Whether step `step` computes op `op` (an op recomputed by several steps is in each).
bool computedIn(const StepIndex& idx, ir::NodeId op, int step) {
  const auto& steps = idx.stepsOf[size_t(op)];
  return std::find(steps.begin(), steps.end(), step) != steps.end();
}

/// A library call on a path from step `from` to step `to` (through any steps): the cycle that
/// joining the two would close. -1 when there is none.
ir::NodeId libraryCallBetween(const FusionPlan& plan, const StepIndex& idx, const Users& users,
                              int from, int to) {
  const ir::Graph& g = plan.graph;
  // Ops `to` depends on, transitively.
  std::vector<char> before(g.size(), 0);
  std::vector<ir::NodeId> work;
  for (const ir::Node& n : g.nodes())
    if (computedIn(idx, n.id, to)) work.push_back(n.id);
  while (!work.empty()) {
    ir::NodeId v = work.back();
    work.pop_back();
    for (ir::NodeId o : g.node(v).operands)
      if (!before[size_t(o)]) {
        before[size_t(o)] = 1;
        work.push_back(o);
      }
  }
  // Library calls reachable from `from` that `to` depends on.
  std::vector<char> seen(g.size(), 0);
  for (const ir::Node& n : g.nodes())
    if (computedIn(idx, n.id, from)) work.push_back(n.id);
  while (!work.empty()) {
    ir::NodeId v = work.back();
    work.pop_back();
    for (ir::NodeId u : users[size_t(v)]) {
      if (seen[size_t(u)]) continue;
      seen[size_t(u)] = 1;
      if (!ir::isMemoryIntensive(g.node(u).kind) && g.node(u).kind != ir::OpKind::Parameter &&
          before[size_t(u)])
        return u;
      work.push_back(u);
    }
  }
  return -1;
}

/// A value step `from` computes that an op of step `to` gathers from (graph_queries.h,
/// readsAtDataPositions): the read that keeps the two apart. -1 when there is none.
ir::NodeId gatheredBetween(const FusionPlan& plan, const StepIndex& idx, int from, int to) {
  const ir::Graph& g = plan.graph;
  for (const ir::Node& n : g.nodes())
    if (n.kind == ir::OpKind::Gather && computedIn(idx, n.id, to) &&
        computedIn(idx, n.operands[0], from))
      return n.operands[0];
  return -1;
}

/// Why the value `v`, produced by step `from`, is read by step `to` from memory instead of being
/// stitched into it.
std::string boundaryReason(const FusionPlan& plan, const StepIndex& idx, const Users& users,
                           ir::NodeId v, int from, int to) {
  const ir::Graph& g = plan.graph;
  if (std::holds_alternative<LibraryCall>(plan.steps[size_t(from)]))
    return "a dot is compute-intensive: a library call, never stitched";
  if (const auto* call = std::get_if<LibraryCall>(&plan.steps[size_t(to)])) {
    const auto& operands = g.node(call->op).operands;
    if (std::find(operands.begin(), operands.end(), v) == operands.end())
      return "read per result element by the epilogue of " + name(g, call->op) +
             " (in memory already)";
    return "read by a dot, a library call: its operands are in memory";
  }
  switch (plan.policy) {
  case Policy::None:
    return "policy none: one kernel per op";
  case Policy::Xla:
    return "policy xla: " + name(g, v) + " is a fusion root: " + xlaRootReason(g, users, v);
  case Policy::AStitch: {
    ir::NodeId call = libraryCallBetween(plan, idx, users, from, to);
    if (call >= 0)
      return fmt::format("one kernel would both feed and wait for {} ({}): a cycle through a "
                         "library call",
                         name(g, call), ir::opName(g.node(call).kind));
    ir::NodeId gathered = gatheredBetween(plan, idx, from, to);
    if (gathered == v)
      return "a gather reads it at run-time positions, which only memory serves (another "
             "kernel's elements live in its threads' registers and tiles)";
    if (gathered >= 0)
      return fmt::format("the stitch scopes part where a gather reads {} at run-time positions, "
                         "from memory",
                         name(g, gathered));
    return "the two stitch scopes depend on each other through another step";
  }
  }
  return "?";
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", int(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

} // namespace

std::string explainPlan(const FusionPlan& plan) {
  const ir::Graph& g = plan.graph;
  Users users = g.users();
  StepIndex idx = indexSteps(plan);
  std::ostringstream os;
  os << fmt::format("plan under policy {} for {}: {} step(s), {} kernel(s)\n",
                    policyName(plan.policy), plan.device.name, plan.steps.size(),
                    plan.kernelCount());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (const auto* call = std::get_if<LibraryCall>(&plan.steps[s])) {
      os << fmt::format("\nstep {}: {} ({}): compute-intensive, run by a library, not stitched\n",
                        s, idx.names[s], ir::opName(g.node(call->op).kind));
      const GemmEpilogue& e = call->epilogue;
      for (const auto* p : {&e.a, &e.b})
        for (const auto* ops : {&p->ops, &p->leaves})
          for (ir::NodeId op : *ops)
            os << fmt::format("    {} ({}): in the GEMM's prologue, applied as {} is loaded\n",
                              name(g, op), ir::opName(g.node(op).kind), name(g, p->source));
      for (ir::NodeId op : e.ops)
        os << fmt::format("    {} ({}): in the GEMM's epilogue, per result element{}\n",
                          name(g, op), ir::opName(g.node(op).kind),
                          op == e.result && e.store.empty() ? "; stored by the library call" : "");
      for (ir::NodeId op : e.store)
        os << fmt::format("    {} ({}): the GEMM stores through it{}\n", name(g, op),
                          ir::opName(g.node(op).kind),
                          op == e.store.back() ? "; stored by the library call" : "");
      continue;
    }
    const auto& k = std::get<KernelPlan>(plan.steps[s]);
    std::string joined;
    if (k.hasGridBarrier()) joined += ", phases joined by grid barriers (cooperative)";
    if (k.handsOffToLastBlock())
      joined += ", its last phase run by the block that finishes the others last (no grid "
                "barrier before it)";
    os << fmt::format("\nstep {}: {}: {} op(s) in {} group(s), {} phase(s){}\n", s, idx.names[s],
                      k.ops.size(), k.groups.size(), k.phases.size(), joined);
    if (k.launch.clusterSize > 1)
      os << fmt::format("  in thread-block clusters of {} blocks (sm_90): its phases' staged rows "
                        "are loaded once per cluster and its block partials combined across the "
                        "cluster, so each of those copies is made by one block in {}\n",
                        k.launch.clusterSize, k.launch.clusterSize);
    for (size_t gi = 0; gi < k.groups.size(); ++gi) {
      const Group& grp = k.groups[gi];
      os << fmt::format("  group {}: dominant {} ({}), {}\n", gi, name(g, grp.dominant),
                        ir::opName(g.node(grp.dominant).kind), mappingStr(grp.mapping));
      for (ir::NodeId op : grp.ops) {
        std::string role = op == grp.dominant ? "the dominant"
                           : std::find(grp.subDominants.begin(), grp.subDominants.end(), op) !=
                                   grp.subDominants.end()
                               ? "a sub-dominant (materialised for its one-to-many uses)"
                               : "scheduled by the dominant";
        auto space = grp.space.find(op);
        if (space != grp.space.end()) role += ", " + spaceName(space->second);
        auto p = k.placement.find(op);
        std::string where = p == k.placement.end() ? "registers: recomputed inline where read"
                                                   : storageReason(k, op, p->second);
        if (isRegenerated(g, users, op)) {
          where += "; a source, regenerated in every kernel that reads it";
        } else if (idx.stepsOf[size_t(op)].size() > 1) {
          std::string others;
          for (int t : idx.stepsOf[size_t(op)])
            if (t != int(s)) others += (others.empty() ? "" : ", ") + std::to_string(t);
          where += "; also recomputed in step " + others;
        }
        os << fmt::format("    {} ({}): {}; {}\n", name(g, op), ir::opName(g.node(op).kind), role,
                          where);
      }
    }
    for (ir::NodeId in : k.inputs) // inputs are in no group: only where they are kept says more
      if (const ValuePlacement& p = k.placement.at(in); p.resident)
        os << fmt::format("  {}: {}\n", name(g, in), storageReason(k, in, p));
  }
  // Boundaries: every value one step reads from another.
  std::set<std::tuple<int, int, ir::NodeId>> crossings;
  for (size_t to = 0; to < plan.steps.size(); ++to)
    for (ir::NodeId v : stepReads(plan, to)) {
      int from = idx.producer[size_t(v)];
      if (from >= 0 && from != int(to)) crossings.insert({from, int(to), v});
    }
  os << "\nboundaries (values read from memory across steps):";
  if (crossings.empty()) os << " none";
  os << "\n";
  for (const auto& [from, to, v] : crossings)
    os << fmt::format("  {} from step {} ({}) to step {} ({}): {}\n", name(g, v), from,
                      idx.names[size_t(from)], to, idx.names[size_t(to)],
                      boundaryReason(plan, idx, users, v, from, to));
  return os.str();
}

std::string kernelMapJson(const FusionPlan& plan) {
  const ir::Graph& g = plan.graph;
  StepIndex idx = indexSteps(plan);
  auto list = [&](const std::vector<ir::NodeId>& ops) {
    std::string s = "[";
    for (size_t i = 0; i < ops.size(); ++i)
      s += (i ? ", " : "") + jsonString(g.node(ops[i]).name);
    return s + "]";
  };
  std::ostringstream os;
  os << "{\n  \"policy\": " << jsonString(std::string(policyName(plan.policy)))
     << ",\n  \"steps\": [";
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    os << (s ? ",\n" : "\n");
    if (const auto* call = std::get_if<LibraryCall>(&plan.steps[s])) {
      // the dot, then every op its kernel computes or reads through, in graph order
      const GemmEpilogue& e = call->epilogue;
      std::vector<ir::NodeId> fused;
      for (const auto* ops : {&e.a.ops, &e.a.leaves, &e.b.ops, &e.b.leaves, &e.ops, &e.store})
        fused.insert(fused.end(), ops->begin(), ops->end());
      std::sort(fused.begin(), fused.end());
      fused.erase(std::unique(fused.begin(), fused.end()), fused.end());
      std::vector<ir::NodeId> ops{call->op};
      ops.insert(ops.end(), fused.begin(), fused.end());
      os << fmt::format("    {{\"step\": {}, \"library_call\": {}, \"ops\": {}}}", s,
                        jsonString(g.node(call->op).name), list(ops));
      continue;
    }
    const auto& k = std::get<KernelPlan>(plan.steps[s]);
    std::vector<ir::NodeId> owned, recomputed;
    for (ir::NodeId op : k.ops)
      (idx.stepsOf[size_t(op)].front() == int(s) ? owned : recomputed).push_back(op);
    os << fmt::format("    {{\"step\": {}, \"kernel\": {}, \"ops\": {}, \"recomputed\": {}}}", s,
                      jsonString(k.name), list(owned), list(recomputed));
  }
  os << "\n  ]\n}\n";
  return os.str();
}

} // namespace weft::fusion
