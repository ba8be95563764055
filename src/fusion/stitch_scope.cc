#include "fusion/stitch_scope.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "fusion/graph_queries.h"

namespace weft::fusion {
namespace {

/// Clusters of ops under construction: union-find plus the member lists, so that a cycle
/// check can treat a whole cluster as the single kernel it will become.
class Clusters {
public:
  Clusters(const ir::Graph& g, std::vector<bool> inCluster)
      : g_(g), users_(g.users()), inCluster_(std::move(inCluster)), parent_(g.size()),
        members_(g.size()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (size_t i = 0; i < g.size(); ++i)
      if (inCluster_[i]) members_[i] = {static_cast<ir::NodeId>(i)};
  }

  ir::NodeId find(ir::NodeId x) {
    while (parent_[static_cast<size_t>(x)] != x)
      x = parent_[static_cast<size_t>(x)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
    return x;
  }

  void unite(ir::NodeId a, ir::NodeId b) {
    a = find(a), b = find(b);
    if (a == b) return;
    if (members_[static_cast<size_t>(a)].size() < members_[static_cast<size_t>(b)].size())
      std::swap(a, b);
    parent_[static_cast<size_t>(b)] = a;
    auto& ma = members_[static_cast<size_t>(a)];
    auto& mb = members_[static_cast<size_t>(b)];
    ma.insert(ma.end(), mb.begin(), mb.end());
    mb.clear();
  }

  /// Whether cluster `to` depends on cluster `from` through at least one node outside both
  /// (a compute-intensive op, a parameter, or a third cluster, which runs as one kernel).
  /// With `directToo`, direct edges from `from` to `to` count as well.
  bool reachesThroughOthers(ir::NodeId from, ir::NodeId to, bool directToo = false) {
    from = find(from), to = find(to);
    std::vector<char> seen(g_.size(), 0);
    std::vector<ir::NodeId> work;
    auto push = [&](ir::NodeId n) {
      if (seen[static_cast<size_t>(n)]) return;
      seen[static_cast<size_t>(n)] = 1;
      work.push_back(n);
    };
    for (ir::NodeId m : members_[static_cast<size_t>(from)])
      for (ir::NodeId u : users_[static_cast<size_t>(m)])
        if (!inCluster_[static_cast<size_t>(u)] ||
            (find(u) != from && (directToo || find(u) != to)))
          push(u);
    while (!work.empty()) {
      ir::NodeId n = work.back();
      work.pop_back();
      if (inCluster_[static_cast<size_t>(n)]) {
        ir::NodeId c = find(n);
        if (c == to) return true;
        for (ir::NodeId m : members_[static_cast<size_t>(c)])
          push(m);
      }
      for (ir::NodeId u : users_[static_cast<size_t>(n)])
        push(u);
    }
    return false;
  }

  bool connected(ir::NodeId a, ir::NodeId b) {
    return reachesThroughOthers(a, b, true) || reachesThroughOthers(b, a, true);
  }

  const std::vector<ir::NodeId>& members(ir::NodeId root) {
    return members_[static_cast<size_t>(find(root))];
  }
  const Users& users() const { return users_; }

private:
  const ir::Graph& g_;
  Users users_;
  std::vector<bool> inCluster_;
  std::vector<ir::NodeId> parent_;
  std::vector<std::vector<ir::NodeId>> members_;
};

} // namespace

std::vector<StitchScope> findStitchScopes(const ir::Graph& g, const StitchScopeOptions& options) {
  Users users = g.users();
  // Sources are regenerated per kernel unless something outside the stitched world needs them
  // in memory (a compute-intensive op or the caller).
  auto materialisedSource = [&](ir::NodeId id) {
    if (g.isOutput(id)) return true;
    return std::any_of(users[static_cast<size_t>(id)].begin(), users[static_cast<size_t>(id)].end(),
                       [&](ir::NodeId u) { return !ir::isMemoryIntensive(g.node(u).kind); });
  };
  std::vector<bool> inCluster(g.size(), false);
  for (const ir::Node& n : g.nodes())
    inCluster[static_cast<size_t>(n.id)] =
        ir::isMemoryIntensive(n.kind) && (!isSource(n) || materialisedSource(n.id));

  Clusters clusters(g, inCluster);
  // BFS-equivalent growth: every producer→consumer edge between memory-intensive ops joins
  // their clusters, unless the two clusters already depend on each other through something
  // else (a dot between them), which would put a cycle through the dot.
  for (const ir::Node& n : g.nodes()) {
    if (!inCluster[static_cast<size_t>(n.id)]) continue;
    for (ir::NodeId p : n.operands) {
      if (!inCluster[static_cast<size_t>(p)] || clusters.find(p) == clusters.find(n.id)) continue;
      if (clusters.reachesThroughOthers(p, n.id)) continue;
      clusters.unite(p, n.id);
    }
  }

  std::vector<ir::NodeId> roots;
  for (const ir::Node& n : g.nodes())
    if (inCluster[static_cast<size_t>(n.id)] && clusters.find(n.id) == n.id) roots.push_back(n.id);
  std::sort(roots.begin(), roots.end(), [&](ir::NodeId a, ir::NodeId b) {
    return *std::min_element(clusters.members(a).begin(), clusters.members(a).end()) <
           *std::min_element(clusters.members(b).begin(), clusters.members(b).end());
  });

  // Remote stitching: merge a cluster into the first earlier one it has no path to or from.
  std::vector<ir::NodeId> merged;
  for (ir::NodeId r : roots) {
    bool placed = false;
    if (options.remoteStitching) {
      for (ir::NodeId m : merged) {
        if (clusters.connected(m, r)) continue;
        clusters.unite(m, r);
        placed = true;
        break;
      }
      for (ir::NodeId& m : merged)
        m = clusters.find(m);
    }
    if (!placed) merged.push_back(clusters.find(r));
  }

  std::vector<StitchScope> scopes;
  std::map<ir::NodeId, size_t> scopeOfRoot;
  for (ir::NodeId m : merged) {
    scopeOfRoot[clusters.find(m)] = scopes.size();
    scopes.push_back({clusters.members(m)});
  }
  // Regenerated sources join every scope that reads them.
  for (const ir::Node& n : g.nodes()) {
    if (!ir::isMemoryIntensive(n.kind) || inCluster[static_cast<size_t>(n.id)]) continue;
    std::set<size_t> readers;
    for (ir::NodeId u : users[static_cast<size_t>(n.id)])
      if (inCluster[static_cast<size_t>(u)]) readers.insert(scopeOfRoot.at(clusters.find(u)));
    for (size_t s : readers)
      scopes[s].ops.push_back(n.id);
  }
  for (StitchScope& s : scopes)
    std::sort(s.ops.begin(), s.ops.end());
  return scopes;
}

} // namespace weft::fusion
