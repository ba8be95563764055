#include "fusion/epilogue_planner.h"

#include <algorithm>
#include <set>

#include "fusion/gemm_planner.h"

namespace weft::fusion {
namespace {

/// Epilogue candidates considered per dot: a bound on the search in graphs of thousands of ops.
constexpr size_t kMaxCandidates = 64;

/// Ops a GEMM prologue absorbs (by node id): computed by no kernel, read in place by dots.
using Absorbed = std::vector<bool>;

/// Whether `u` reads its operands in a kernel: a memory-intensive op no prologue absorbs (a dot
/// or an absorbed layout op reads them in a GEMM's loads).
bool kernelReads(const ir::Graph& g, const Absorbed& absorbed, ir::NodeId u) {
  return ir::isMemoryIntensive(g.node(u).kind) && !absorbed[size_t(u)];
}

/// A value that is in a buffer whatever the epilogue: a graph input, a dot's result, a graph
/// output, or a value some dot reads (directly or through a prologue).
bool alreadyInMemory(const ir::Graph& g, const Users& users, const Absorbed& absorbed,
                     ir::NodeId x) {
  const ir::Node& n = g.node(x);
  if (absorbed[size_t(x)]) return false;
  if (!ir::isMemoryIntensive(n.kind) || g.isOutput(x)) return true;
  const auto& us = users[size_t(x)];
  return std::any_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return !kernelReads(g, absorbed, u); });
}

bool isLayoutOp(ir::OpKind k) {
  return k == ir::OpKind::Transpose || k == ir::OpKind::Reshape || k == ir::OpKind::BroadcastInDim;
}

/// A constant, or a broadcast of one: evaluated inline wherever it is read.
bool isConstantLeaf(const ir::Graph& g, ir::NodeId x) {
  const ir::Node& n = g.node(x);
  if (n.kind == ir::OpKind::Constant) return true;
  return n.kind == ir::OpKind::BroadcastInDim && g.node(n.operands[0]).kind == ir::OpKind::Constant;
}

/// The operand a prologue op reads from the chain (-1: it cannot be in one): a layout op's
/// only operand, or an elementwise op's one operand that is not a constant leaf.
ir::NodeId chainOperand(const ir::Graph& g, ir::NodeId x) {
  const ir::Node& n = g.node(x);
  if (isLayoutOp(n.kind)) return n.operands[0];
  // floats only: the GEMM converts each element between float storage and compute types
  if (!ir::isElementwise(n.kind) || !ir::isFloat(n.type.dtype)) return -1;
  ir::NodeId from = -1;
  for (ir::NodeId o : n.operands) {
    if (isConstantLeaf(g, o)) continue;
    if (from >= 0 && from != o) return -1;
    from = o;
  }
  return from >= 0 && ir::isFloat(g.node(from).type.dtype) ? from : -1;
}

/// The prologues of every dot that has one. A layout op is absorbed when every reader is a dot
/// or another absorbed op; an operand's prologue is the chain of absorbed ops behind it, cut
/// where the GEMM could no longer say where its elements lie (operandLayout). Ops left out of
/// every chain are computed by kernels, so their operands are too: repeated until nothing
/// changes.
std::map<ir::NodeId, std::pair<GemmPrologue, GemmPrologue>>
planPrologues(const ir::Graph& g, const Users& users, Absorbed& absorbed) {
  absorbed.assign(g.size(), false);
  for (size_t i = g.size(); i-- > 0;) {
    const ir::Node& n = g.node(ir::NodeId(i));
    const auto& us = users[i];
    absorbed[i] = chainOperand(g, n.id) >= 0 && !g.isOutput(n.id) && !us.empty() &&
                  std::all_of(us.begin(), us.end(), [&](ir::NodeId u) {
                    return g.node(u).kind == ir::OpKind::Dot || absorbed[size_t(u)];
                  });
  }
  std::map<ir::NodeId, std::pair<GemmPrologue, GemmPrologue>> prologues;
  for (bool changed = true; changed;) {
    changed = false;
    prologues.clear();
    std::vector<bool> inChain(g.size(), false);
    for (const ir::Node& d : g.nodes()) {
      if (d.kind != ir::OpKind::Dot) continue;
      GemmPrologue ps[2];
      for (size_t i = 0; i < 2; ++i) {
        GemmPrologue& p = ps[i];
        ir::NodeId x = d.operands[i];
        while (absorbed[size_t(x)]) {
          p.ops.push_back(x);
          x = chainOperand(g, x);
        }
        p.source = x;
        while (!p.empty() && !operandLayout(g, p)) {
          p.source = p.ops.back();
          p.ops.pop_back();
        }
        for (ir::NodeId op : p.ops)
          inChain[size_t(op)] = true;
      }
      if (!ps[0].empty() || !ps[1].empty()) prologues[d.id] = {ps[0], ps[1]};
    }
    auto absorbedBy = [&](ir::NodeId dot, ir::NodeId x) {
      auto it = prologues.find(dot);
      if (it == prologues.end()) return false;
      const auto& [a, b] = it->second;
      return std::count(a.ops.begin(), a.ops.end(), x) + std::count(b.ops.begin(), b.ops.end(), x) >
             0;
    };
    for (size_t i = 0; i < g.size(); ++i) {
      if (!absorbed[i]) continue;
      bool keep = inChain[i] && std::all_of(users[i].begin(), users[i].end(), [&](ir::NodeId u) {
                    return g.node(u).kind == ir::OpKind::Dot ? absorbedBy(u, ir::NodeId(i))
                                                             : bool(absorbed[size_t(u)]);
                  });
      if (!keep) {
        absorbed[i] = false;
        changed = true;
      }
    }
  }
  // The constant operands of elementwise prologue ops that nothing else reads.
  auto onlyAbsorbed = [&](ir::NodeId x) {
    return !g.isOutput(x) && std::all_of(users[size_t(x)].begin(), users[size_t(x)].end(),
                                         [&](ir::NodeId u) { return bool(absorbed[size_t(u)]); });
  };
  for (auto& [dot, ps] : prologues)
    for (GemmPrologue* p : {&ps.first, &ps.second})
      for (ir::NodeId op : p->ops)
        for (ir::NodeId o : g.node(op).operands) {
          if (!isConstantLeaf(g, o) || absorbed[size_t(o)] || !onlyAbsorbed(o)) continue;
          p->leaves.push_back(o);
          absorbed[size_t(o)] = true; // read by no kernel now
          ir::NodeId c = g.node(o).operands.empty() ? -1 : g.node(o).operands[0];
          if (c >= 0 && !absorbed[size_t(c)] && onlyAbsorbed(c)) {
            p->leaves.push_back(c);
            absorbed[size_t(c)] = true;
          }
        }
  return prologues;
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
  /// Ops evaluated in the epilogue between the value read and the op reading it: a broadcast,
  /// casts (mixed precision's convert of a bias or residual), outermost first.
  std::vector<ir::NodeId> members;
  ir::NodeId read = -1; // a value loaded from its buffer (-1: none)
  EpilogueRead::Kind kind = EpilogueRead::Kind::Element;
};

/// The layout ops the GEMM storing `x` can store through instead (GemmEpilogue::store): each
/// the only reader of the value before it (x's too), a transpose or reshape no prologue
/// absorbs, cut where the GEMM could no longer say where an element goes (storeLayout). They
/// save the pass a kernel would make to move the result.
std::vector<ir::NodeId> planStore(const ir::Graph& g, const Users& users, const Absorbed& absorbed,
                                  ir::NodeId x) {
  std::vector<ir::NodeId> chain;
  ir::NodeId from = x;
  while (!g.isOutput(x) && users[size_t(x)].size() == 1) {
    ir::NodeId u = users[size_t(x)].front();
    ir::OpKind k = g.node(u).kind;
    if ((k != ir::OpKind::Transpose && k != ir::OpKind::Reshape) || absorbed[size_t(u)]) break;
    chain.push_back(u);
    x = u;
  }
  while (!chain.empty() && !storeLayout(g, from, chain))
    chain.pop_back();
  return chain;
}

class EpiloguePlanner {
public:
  EpiloguePlanner(const ir::Graph& g, const Users& users, const Absorbed& absorbed)
      : g_(g), users_(users), absorbed_(absorbed) {}

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
  const Absorbed& absorbed_;
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
    return alreadyInMemory(g_, users_, absorbed_, v) && !dependsOn(users_, dot, v);
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
    if (taken_.count(u) || absorbed_[size_t(u)] || !ir::isElementwise(n.kind) ||
        n.type.shape != out)
      continue;
    std::vector<Leaf> leaves;
    bool ok = true;
    for (ir::NodeId o : n.operands) {
      if (o == dot || inC.count(o)) continue;
      Leaf l = leaf(dot, o);
      if (!l.ok) {
        // A broadcast or casts of a source or of a value in memory run in the epilogue (when
        // the region holds all their readers): peel converts and one broadcast.
        std::vector<ir::NodeId> members;
        ir::NodeId x = o;
        bool broadcast = false;
        for (;;) {
          const ir::Node& xn = g_.node(x);
          bool cast = xn.kind == ir::OpKind::Convert;
          bool bcast = xn.kind == ir::OpKind::BroadcastInDim && !broadcast;
          if ((!cast && !bcast) || taken_.count(x) || absorbed_[size_t(x)] || g_.isOutput(x)) break;
          broadcast = broadcast || bcast;
          members.push_back(x);
          x = xn.operands[0];
        }
        Leaf inner = members.empty() ? Leaf{} : leaf(dot, x, true);
        if (inner.ok && (broadcast || g_.node(x).type.shape == out)) {
          l = inner;
          l.members = std::move(members);
          if (broadcast) l.kind = EpilogueRead::Kind::Broadcast;
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
    std::set<ir::NodeId> inside = region; // with the leaves' members
    for (ir::NodeId v : region)
      for (const Leaf& l : leavesOf[v])
        inside.insert(l.members.begin(), l.members.end());
    for (ir::NodeId v : region) {
      if (v != c && (g_.isOutput(v) || !readOnlyIn(v, region))) valid = false;
      for (const Leaf& l : leavesOf[v])
        for (ir::NodeId m : l.members)
          if (g_.isOutput(m) || !readOnlyIn(m, inside)) valid = false;
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
  bool stitchedReader = std::any_of(readers.begin(), readers.end(),
                                    [&](ir::NodeId u) { return kernelReads(g_, absorbed_, u); });
  int passes = !stitchedReader ? 2 : alreadyInMemory(g_, users_, absorbed_, bestResult) ? 1 : 0;
  if (passes == 0) return e; // traffic would only move: the consumers stay stitched
  std::set<ir::NodeId> ops = best;
  std::set<ir::NodeId> read;
  for (ir::NodeId v : best)
    for (const Leaf& l : leavesOf[v]) {
      ops.insert(l.members.begin(), l.members.end());
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
  Absorbed absorbed;
  auto prologues = planPrologues(g, users, absorbed);
  std::map<ir::NodeId, GemmEpilogue> epilogues;
  EpiloguePlanner planner(g, users, absorbed);
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::OpKind::Dot) continue;
    GemmEpilogue e = planner.plan(n.id);
    if (auto p = prologues.find(n.id); p != prologues.end()) {
      e.a = p->second.first;
      e.b = p->second.second;
    }
    e.store = planStore(g, users, absorbed, e.stored(n.id));
    if (!e.empty() || e.hasPrologue() || !e.store.empty()) epilogues[n.id] = std::move(e);
  }
  return epilogues;
}

std::vector<bool> epilogueOps(const ir::Graph& g, const std::map<ir::NodeId, GemmEpilogue>& e) {
  std::vector<bool> in(g.size(), false);
  for (const auto& [dot, epilogue] : e)
    for (const std::vector<ir::NodeId>* ops :
         {&epilogue.ops, &epilogue.a.ops, &epilogue.b.ops, &epilogue.a.leaves, &epilogue.b.leaves,
          &epilogue.store})
      for (ir::NodeId op : *ops)
        in[size_t(op)] = true;
  return in;
}

} // namespace weft::fusion
