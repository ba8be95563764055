#include "fusion/epilogue_planner.h"

#include <algorithm>
#include <set>

namespace weft::fusion {
namespace {

/// Epilogue candidates considered per dot: a bound on the search in graphs of thousands of ops.
constexpr size_t kMaxCandidates = 64;

/// A value that is in a buffer whatever the epilogue: a graph input, a dot's result, a graph
/// output, or a value some dot reads.
bool alreadyInMemory(const ir::Graph& g, const Users& users, ir::NodeId x) {
  const ir::Node& n = g.node(x);
  if (!ir::isMemoryIntensive(n.kind) || g.isOutput(x)) return true;
  const auto& us = users[size_t(x)];
  return std::any_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return !ir::isMemoryIntensive(g.node(u).kind); });
}

/// Whether `x` depends on `dot` (searching only nodes up to x: ids are topological).
bool dependsOn(const Users& users, ir::NodeId dot, ir::NodeId x) {
  if (x < dot) return false;
  std::vector<ir::NodeId> work{dot};
  std::set<ir::NodeId> seen{dot};
  while (!work.empty()) {
    ir::NodeId n = work.back();
    work.pop_back();
    if (n == x) return true;
    for (ir::NodeId u : users[size_t(n)])
      if (u <= x && seen.insert(u).second) work.push_back(u);
  }
  return false;
}

/// How an op of the epilogue reads an operand from outside it.
struct Leaf {
  bool ok = false;
  ir::NodeId member = -1; // a broadcast evaluated in the epilogue (-1: none)
  ir::NodeId read = -1;   // a value loaded from its buffer (-1: none)
  EpilogueRead::Kind kind = EpilogueRead::Kind::Element;
};

class EpiloguePlanner {
public:
  EpiloguePlanner(const ir::Graph& g, const Users& users) : g_(g), users_(users) {}

  /// The epilogue of `dot` (empty when none pays); its ops are taken from later dots.
  GemmEpilogue plan(ir::NodeId dot);

private:
  /// How an epilogue op reads operand x; with `anyShape` (a broadcast's operand) x need not
  /// have the result's shape.
  Leaf leaf(ir::NodeId dot, ir::NodeId x, bool anyShape = false) const;
  bool readOnlyIn(ir::NodeId x, const std::set<ir::NodeId>& region) const {
    const auto& us = users_[size_t(x)];
    return std::all_of(us.begin(), us.end(), [&](ir::NodeId u) { return region.count(u) > 0; });
  }

  const ir::Graph& g_;
  const Users& users_;
  std::set<ir::NodeId> taken_; // ops of epilogues planned so far
};

Leaf EpiloguePlanner::leaf(ir::NodeId dot, ir::NodeId x, bool anyShape) const {
  const ir::Shape& out = g_.node(dot).type.shape;
  const ir::Node& n = g_.node(x);
  Leaf l;
  if (taken_.count(x)) return l;
  if (isSource(n)) {
    l.ok = true;
    return l;
  }
  auto inMemory = [&](ir::NodeId v) {
    return alreadyInMemory(g_, users_, v) && !dependsOn(users_, dot, v);
  };
  if (anyShape || n.type.shape == out || n.type.shape.empty()) {
    l.ok = inMemory(x);
    l.read = x;
    l.kind = n.type.shape == out ? EpilogueRead::Kind::Element : EpilogueRead::Kind::Broadcast;
    return l;
  }
  return l;
}

GemmEpilogue EpiloguePlanner::plan(ir::NodeId dot) {
  GemmEpilogue e;
  const ir::Node& d = g_.node(dot);
  if (g_.isOutput(dot) || users_[size_t(dot)].empty()) return e;
  const ir::Shape& out = d.type.shape;
  // Candidates: elementwise ops of the result's shape reachable from the dot through
  // candidates, whose other operands are cheap leaves; in id order, so an op's operands are
  // decided before it.
  std::vector<ir::NodeId> candidates;
  std::set<ir::NodeId> inC;
  std::map<ir::NodeId, std::vector<Leaf>> leavesOf;
  std::set<ir::NodeId> frontier(users_[size_t(dot)].begin(), users_[size_t(dot)].end());
  while (!frontier.empty() && candidates.size() < kMaxCandidates) {
    ir::NodeId u = *frontier.begin();
    frontier.erase(frontier.begin());
    const ir::Node& n = g_.node(u);
    if (taken_.count(u) || !ir::isElementwise(n.kind) || n.type.shape != out) continue;
    std::vector<Leaf> leaves;
    bool ok = true;
    for (ir::NodeId o : n.operands) {
      if (o == dot || inC.count(o)) continue;
      Leaf l = leaf(dot, o);
      const ir::Node& on = g_.node(o);
      if (!l.ok && on.kind == ir::OpKind::BroadcastInDim && on.type.shape == out) {
        // A broadcast of a source or of a value in memory runs in the epilogue (when the
        // region holds all its readers).
        Leaf inner = leaf(dot, on.operands[0], true);
        if (inner.ok) {
          l = inner;
          l.member = o;
          l.kind = EpilogueRead::Kind::Broadcast;
        }
      }
      if (!l.ok) {
        ok = false;
        break;
      }
      leaves.push_back(l);
    }
    if (!ok) continue;
    candidates.push_back(u);
    inC.insert(u);
    leavesOf[u] = std::move(leaves);
    for (ir::NodeId v : users_[size_t(u)])
      frontier.insert(v);
  }
  // The region ending at each candidate c: c and its ancestors among the candidates. It is
  // valid when only c is read outside it (and the dot only inside); the largest wins.
  std::set<ir::NodeId> best;
  ir::NodeId bestResult = -1;
  for (ir::NodeId c : candidates) {
    std::set<ir::NodeId> region{c};
    std::vector<ir::NodeId> work{c};
    while (!work.empty()) {
      ir::NodeId v = work.back();
      work.pop_back();
      for (ir::NodeId o : g_.node(v).operands)
        if (inC.count(o) && region.insert(o).second) work.push_back(o);
    }
    bool valid = readOnlyIn(dot, region);
    for (ir::NodeId v : region) {
      if (v != c && (g_.isOutput(v) || !readOnlyIn(v, region))) valid = false;
      for (const Leaf& l : leavesOf[v])
        if (l.member >= 0 && (g_.isOutput(l.member) || !readOnlyIn(l.member, region)))
          valid = false;
    }
    if (valid && region.size() >= best.size()) {
      best = std::move(region);
      bestResult = c;
    }
  }
  if (best.empty()) return e;
  // Passes over the [M, N] result saved. Unfused, the GEMM writes the dot's result and a kernel
  // reads it back; fused, the GEMM writes the epilogue's result instead. When kernels read that
  // result, they read it instead of the dot's: nothing saved, unless it had to be written
  // anyway (a dot or the caller reads it too), which the unfused kernel then did: one pass.
  const auto& readers = users_[size_t(bestResult)];
  bool stitchedReader = std::any_of(readers.begin(), readers.end(), [&](ir::NodeId u) {
    return ir::isMemoryIntensive(g_.node(u).kind);
  });
  int passes = !stitchedReader ? 2 : alreadyInMemory(g_, users_, bestResult) ? 1 : 0;
  if (passes == 0) return e; // traffic would only move: the consumers stay stitched
  std::set<ir::NodeId> ops = best;
  std::set<ir::NodeId> read;
  for (ir::NodeId v : best)
    for (const Leaf& l : leavesOf[v]) {
      if (l.member >= 0) ops.insert(l.member);
      if (l.read >= 0 && read.insert(l.read).second) e.reads.push_back({l.read, l.kind});
    }
  e.ops.assign(ops.begin(), ops.end());
  e.result = bestResult;
  if (ir::isStatic(out))
    e.savedBytes = passes * ir::numElements(out).size() * int64_t(ir::dtypeBytes(d.type.dtype));
  taken_.insert(ops.begin(), ops.end());
  return e;
}

} // namespace

std::map<ir::NodeId, GemmEpilogue> planEpilogues(const ir::Graph& g, const Users& users) {
  std::map<ir::NodeId, GemmEpilogue> epilogues;
  EpiloguePlanner planner(g, users);
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::OpKind::Dot) continue;
    GemmEpilogue e = planner.plan(n.id);
    if (!e.empty()) epilogues[n.id] = std::move(e);
  }
  return epilogues;
}

std::vector<bool> epilogueOps(const ir::Graph& g, const std::map<ir::NodeId, GemmEpilogue>& e) {
  std::vector<bool> in(g.size(), false);
  for (const auto& [dot, epilogue] : e)
    for (ir::NodeId op : epilogue.ops)
      in[size_t(op)] = true;
  return in;
}

} // namespace weft::fusion
