#include "fusion/dominants.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "fusion/graph_queries.h"
#include "fusion/thread_mapping.h"

namespace weft::fusion {
namespace {

struct UnionFind {
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(size_t a, size_t b) { parent[find(a)] = find(b); }
  std::vector<size_t> parent;
};

/// Whether candidate `c` can be scheduled by dominant `d`'s thread mapping: its result lives
/// in d's loop space or row space (a reduce must also reduce the same loop over the same dims).
bool fitsSchedule(const ir::Graph& g, const LoopSpace& d, ir::NodeId c) {
  const ir::Node& n = g.node(c);
  if (n.kind == ir::OpKind::Reduce) {
    LoopSpace s = loopSpaceOf(g, c);
    return s.kind == d.kind && s.shape == d.shape && s.tileDims == d.tileDims;
  }
  return n.type.shape == d.shape || n.type.shape == rowShapeOf(d.shape, d.tileDims);
}

ir::NodeId pickDominant(const ir::Graph& g, const std::vector<ir::NodeId>& candidates) {
  // A row reduce first: its consumers read its rows in the block that reduced them, which a
  // column reduce's consumers cannot (a column is finished only when all rows are).
  for (ir::NodeId c : candidates)
    if (g.node(c).kind == ir::OpKind::Reduce &&
        loopSpaceOf(g, c).kind == LoopSpace::Kind::RowReduce)
      return c;
  for (ir::NodeId c : candidates)
    if (g.node(c).kind == ir::OpKind::Reduce) return c;
  ir::NodeId best = candidates.front();
  int64_t bestSize = -1;
  for (ir::NodeId c : candidates) {
    int64_t size = staticElementsOr(g.node(c).type.shape, int64_t(1) << 40);
    if (size >= bestSize) best = c, bestSize = size; // ties: the later one, closer to the outputs
  }
  return best;
}

} // namespace

bool isDominantCandidate(const ir::Graph& g, const Users& users, const std::vector<bool>& inScope,
                         const std::vector<bool>& scopeOutput, ir::NodeId op) {
  const ir::Node& n = g.node(op);
  if (!inScope[static_cast<size_t>(op)]) return false;
  if (scopeOutput[static_cast<size_t>(op)] || n.kind == ir::OpKind::Reduce) return true;
  return isExpensiveBroadcastSource(g, users, op);
}

std::vector<GroupSeed> identifyDominants(const ir::Graph& g,
                                         const std::vector<ir::NodeId>& scopeOps,
                                         const std::vector<ir::NodeId>& scopeOutputs) {
  Users users = g.users();
  std::vector<bool> inScope(g.size(), false), output(g.size(), false), candidate(g.size(), false);
  for (ir::NodeId op : scopeOps)
    inScope[static_cast<size_t>(op)] = true;
  for (ir::NodeId op : scopeOutputs)
    output[static_cast<size_t>(op)] = true;
  std::vector<ir::NodeId> candidates;
  for (ir::NodeId op : scopeOps)
    if (isDominantCandidate(g, users, inScope, output, op))
      candidate[static_cast<size_t>(op)] = true, candidates.push_back(op);

  // Connectivity through local ops: an edge out of a candidate is where a stitching scheme
  // applies, so it does not connect; values from outside the scope (parameters, dot results)
  // connect their readers (operator-level reuse). Sources never connect.
  UnionFind uf(g.size());
  for (ir::NodeId op : scopeOps) {
    const ir::Node& n = g.node(op);
    if (isSource(n) && !candidate[static_cast<size_t>(op)]) continue;
    for (ir::NodeId p : n.operands) {
      if (isSource(g.node(p)) && !candidate[static_cast<size_t>(p)]) continue;
      if (inScope[static_cast<size_t>(p)] && candidate[static_cast<size_t>(p)]) continue;
      uf.unite(static_cast<size_t>(op), static_cast<size_t>(p));
    }
  }

  // Candidates per component → groups (dominant + the sub-dominants that fit its schedule).
  std::map<size_t, std::vector<ir::NodeId>> byComponent;
  for (ir::NodeId c : candidates)
    byComponent[uf.find(static_cast<size_t>(c))].push_back(c);
  std::vector<GroupSeed> seeds;
  std::vector<int> groupOf(g.size(), -1);
  for (auto& [component, members] : byComponent) {
    std::vector<ir::NodeId> left = members;
    while (!left.empty()) {
      GroupSeed seed;
      seed.dominant = pickDominant(g, left);
      LoopSpace space = loopSpaceOf(g, seed.dominant);
      std::vector<ir::NodeId> rest;
      for (ir::NodeId c : left) {
        if (c == seed.dominant) continue;
        if (fitsSchedule(g, space, c))
          seed.subDominants.push_back(c);
        else
          rest.push_back(c);
      }
      int index = static_cast<int>(seeds.size());
      groupOf[static_cast<size_t>(seed.dominant)] = index;
      for (ir::NodeId s : seed.subDominants)
        groupOf[static_cast<size_t>(s)] = index;
      seeds.push_back(std::move(seed));
      left = std::move(rest);
    }
  }

  // Local ops join the group of the first candidate they feed (through local ops only);
  // sources follow their first reader.
  for (auto it = scopeOps.rbegin(); it != scopeOps.rend(); ++it) {
    ir::NodeId op = *it;
    if (groupOf[static_cast<size_t>(op)] >= 0) continue;
    int group = -1;
    for (ir::NodeId u : users[static_cast<size_t>(op)]) {
      if (!inScope[static_cast<size_t>(u)] || groupOf[static_cast<size_t>(u)] < 0) continue;
      if (group < 0 || u < seeds[static_cast<size_t>(group)].dominant)
        group = groupOf[static_cast<size_t>(u)];
    }
    groupOf[static_cast<size_t>(op)] = group >= 0 ? group : 0;
  }
  for (ir::NodeId op : scopeOps)
    seeds[static_cast<size_t>(groupOf[static_cast<size_t>(op)])].ops.push_back(op);

  std::vector<size_t> order(seeds.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return seeds[a].dominant < seeds[b].dominant; });
  std::vector<GroupSeed> sorted;
  for (size_t i : order)
    sorted.push_back(std::move(seeds[i]));
  return sorted;
}

} // namespace weft::fusion
