#include "fusion/dominants.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

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
  if (n.type.shape == d.shape) return true;
  // The row space, or a projection of it (a value broadcast along some row dims, like
  // power.1 in Figure 7): materialised by the group in its own index space.
  ir::Shape rows = rowShapeOf(d.shape, d.tileDims);
  size_t i = 0;
  for (const ir::Dim& dim : rows)
    if (i < n.type.shape.size() && n.type.shape[i] == dim) ++i;
  return i == n.type.shape.size() && !n.type.shape.empty();
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
  // A small row vector that every block computes for itself needs no stage of its own
  // (blockComputable); a per-row value stays one, materialized in its rows' blocks.
  return isExpensiveBroadcastSource(g, users, op) &&
         !(blockComputable(g, inScope, op) != BlockComputable::No &&
           isBroadcastAlongOuterDim(g, users, op));
}

std::vector<GroupSeed> identifyDominants(const ir::Graph& g,
                                         const std::vector<ir::NodeId>& scopeOps,
                                         const std::vector<ir::NodeId>& scopeOutputs) {
  return identifyDominants(g, g.users(), scopeOps, scopeOutputs);
}

std::vector<GroupSeed> identifyDominants(const ir::Graph& g, const Users& users,
                                         const std::vector<ir::NodeId>& scopeOps,
                                         const std::vector<ir::NodeId>& scopeOutputs) {
  // Scope-local numbering of the scope's ops and the values they read: the work per scope
  // follows the scope's size, not the graph's (the none policy plans one scope per op).
  std::unordered_map<ir::NodeId, size_t> local;
  for (ir::NodeId op : scopeOps)
    local.emplace(op, local.size());
  for (ir::NodeId op : scopeOps)
    for (ir::NodeId p : g.node(op).operands)
      local.emplace(p, local.size());
  auto at = [&](ir::NodeId v) { return local.at(v); };
  std::vector<bool> inScope(g.size(), false), output(g.size(), false), candidate(g.size(), false);
  for (ir::NodeId op : scopeOps)
    inScope[static_cast<size_t>(op)] = true;
  for (ir::NodeId op : scopeOutputs)
    output[static_cast<size_t>(op)] = true;
  std::vector<ir::NodeId> candidates;
  for (ir::NodeId op : scopeOps)
    if (isDominantCandidate(g, users, inScope, output, op))
      candidate[static_cast<size_t>(op)] = true, candidates.push_back(op);

  // The local graph: a candidate's one-to-many use (a broadcast that expands it, possibly after
  // reshapes) is where a stitching scheme applies, so that edge does not connect; its
  // one-to-one uses do (reduce.1 → add.1 in Figure 7). Values from outside the scope
  // (parameters, dot results) connect their readers (operator-level reuse, parameter.2 in
  // Figure 9). Sources never connect.
  std::vector<bool> fromCandidate(g.size(), false); // a candidate or a reshape of one
  for (ir::NodeId op : scopeOps) {
    const ir::Node& n = g.node(op);
    fromCandidate[static_cast<size_t>(op)] =
        candidate[static_cast<size_t>(op)] ||
        (n.kind == ir::OpKind::Reshape && fromCandidate[static_cast<size_t>(n.operands[0])]);
  }
  auto expands = [&](const ir::Node& n) {
    return n.kind == ir::OpKind::BroadcastInDim &&
           ir::numElements(n.type.shape) != ir::numElements(g.node(n.operands[0]).type.shape);
  };
  std::vector<std::vector<ir::NodeId>> adjacent(local.size());
  UnionFind uf(local.size());
  for (ir::NodeId op : scopeOps) {
    const ir::Node& n = g.node(op);
    if (isSource(n) && !candidate[static_cast<size_t>(op)]) continue;
    for (ir::NodeId p : n.operands) {
      if (isSource(g.node(p)) && !candidate[static_cast<size_t>(p)]) continue;
      if (inScope[static_cast<size_t>(p)] && fromCandidate[static_cast<size_t>(p)] && expands(n))
        continue;
      uf.unite(at(op), at(p));
      adjacent[at(op)].push_back(p);
      adjacent[at(p)].push_back(op);
    }
  }
  // Hops from `from` to every candidate through local ops (other candidates end a path).
  auto distancesFrom = [&](ir::NodeId from) {
    std::map<ir::NodeId, int> dist{{from, 0}};
    std::vector<ir::NodeId> frontier{from};
    for (int d = 1; !frontier.empty(); ++d) {
      std::vector<ir::NodeId> next;
      for (ir::NodeId n : frontier) {
        if (n != from && candidate[static_cast<size_t>(n)]) continue;
        for (ir::NodeId m : adjacent[at(n)])
          if (dist.emplace(m, d).second) next.push_back(m);
      }
      frontier = std::move(next);
    }
    return dist;
  };

  std::map<size_t, std::vector<ir::NodeId>> byComponent;
  for (ir::NodeId c : candidates)
    byComponent[uf.find(at(c))].push_back(c);
  std::vector<GroupSeed> seeds;
  std::vector<int> groupOf(local.size(), -1); // by local number
  auto addSeed = [&](GroupSeed seed) {
    int index = static_cast<int>(seeds.size());
    groupOf[at(seed.dominant)] = index;
    for (ir::NodeId sd : seed.subDominants)
      groupOf[at(sd)] = index;
    seeds.push_back(std::move(seed));
  };
  for (auto& [component, members] : byComponent) {
    // Reduces over the same loop and dims share a group; the first row reduce's group leads.
    std::vector<std::vector<ir::NodeId>> classes;
    std::vector<LoopSpace> classSpace;
    for (ir::NodeId c : members) {
      if (g.node(c).kind != ir::OpKind::Reduce) continue;
      LoopSpace s = loopSpaceOf(g, c);
      size_t k = 0;
      while (k < classes.size() &&
             !(classSpace[k].kind == s.kind && classSpace[k].shape == s.shape &&
               classSpace[k].tileDims == s.tileDims))
        ++k;
      if (k == classes.size()) classes.push_back({}), classSpace.push_back(s);
      classes[k].push_back(c);
    }
    std::stable_partition(classes.begin(), classes.end(), [&](const std::vector<ir::NodeId>& cl) {
      return loopSpaceOf(g, cl.front()).kind == LoopSpace::Kind::RowReduce;
    });
    size_t firstSeed = seeds.size();
    for (const auto& cl : classes)
      addSeed({cl.front(), std::vector<ir::NodeId>(cl.begin() + 1, cl.end()), {}});

    // Other candidates join the nearest reduce group whose schedule they fit.
    std::vector<ir::NodeId> left;
    for (ir::NodeId c : members) {
      if (g.node(c).kind == ir::OpKind::Reduce) continue;
      auto dist = distancesFrom(c);
      int best = -1, bestDist = 0;
      for (size_t si = firstSeed; si < seeds.size(); ++si) {
        if (!fitsSchedule(g, loopSpaceOf(g, seeds[si].dominant), c)) continue;
        std::vector<ir::NodeId> members{seeds[si].dominant};
        members.insert(members.end(), seeds[si].subDominants.begin(), seeds[si].subDominants.end());
        for (ir::NodeId m : members) {
          auto it = dist.find(m);
          if (it == dist.end() || g.node(m).kind != ir::OpKind::Reduce) continue;
          if (best < 0 || it->second < bestDist) best = static_cast<int>(si), bestDist = it->second;
        }
      }
      if (best < 0) {
        left.push_back(c);
        continue;
      }
      seeds[static_cast<size_t>(best)].subDominants.push_back(c);
      groupOf[at(c)] = best;
    }
    // What is left forms elementwise groups: the biggest result dominates what fits it.
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
      addSeed(std::move(seed));
      left = std::move(rest);
    }
  }
  for (GroupSeed& seed : seeds)
    std::sort(seed.subDominants.begin(), seed.subDominants.end());

  // Local ops join the group of their first reader (so, through local ops, of a candidate
  // they feed); sources too. Dead ops go to the first group (nothing materialises them).
  for (auto it = scopeOps.rbegin(); it != scopeOps.rend(); ++it) {
    ir::NodeId op = *it;
    if (groupOf[at(op)] >= 0) continue;
    for (ir::NodeId u : users[static_cast<size_t>(op)]) {
      if (!inScope[static_cast<size_t>(u)] || groupOf[at(u)] < 0) continue;
      groupOf[at(op)] = groupOf[at(u)];
      break;
    }
    if (groupOf[at(op)] < 0) groupOf[at(op)] = 0;
  }
  for (ir::NodeId op : scopeOps)
    seeds[static_cast<size_t>(groupOf[at(op)])].ops.push_back(op);

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
