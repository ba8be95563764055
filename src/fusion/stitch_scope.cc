#include "fusion/stitch_scope.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

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
    for (size_t i = 0; i < g.size(); ++i) {
      if (inCluster_[i]) members_[i] = {static_cast<ir::NodeId>(i)};
      hasGathers_ = hasGathers_ || g.node(ir::NodeId(i)).kind == ir::OpKind::Gather;
    }
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
  /// Nodes after `limit` are not searched: when nothing after it is in a cluster with more
  /// than one member yet (clusters grow in node order), no path through them comes back.
  bool reachesThroughOthers(ir::NodeId from, ir::NodeId to, bool directToo = false,
                            ir::NodeId limit = std::numeric_limits<ir::NodeId>::max()) {
    from = find(from), to = find(to);
    ++stamp_; // seen_ marks this search's nodes: no O(nodes) clearing per search
    std::vector<ir::NodeId>& work = work_;
    work.clear();
    auto push = [&](ir::NodeId n) {
      if (n > limit || seen_[static_cast<size_t>(n)] == stamp_) return;
      seen_[static_cast<size_t>(n)] = stamp_;
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

  /// Whether an op of one cluster gathers from a value of the other (graph_queries.h): a read
  /// through memory, which one kernel cannot make of its own values.
  bool gathersAcross(ir::NodeId a, ir::NodeId b) {
    if (!hasGathers_) return false; // no search in the (many) graphs without one
    a = find(a), b = find(b);
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}})
      for (ir::NodeId m : members_[static_cast<size_t>(from)])
        for (ir::NodeId u : users_[static_cast<size_t>(m)])
          if (inCluster_[static_cast<size_t>(u)] && find(u) == to &&
              readsAtDataPositions(g_.node(u), m))
            return true;
    return false;
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
  std::vector<uint32_t> seen_ = std::vector<uint32_t>(g_.size(), 0);
  uint32_t stamp_ = 0;
  std::vector<ir::NodeId> work_;
  bool hasGathers_ = false;
};

/// Which clusters each cluster reaches (paths of one edge or more, each cluster contracted to
/// one node), kept transitively closed while clusters merge: remote stitching asks it once
/// per pair of clusters, which searching the graph each time made quadratic in the graph.
class ClusterReach {
public:
  /// `roots`: one member of each cluster; cluster i is roots[i].
  ClusterReach(const ir::Graph& g, Clusters& clusters, const std::vector<bool>& inCluster,
               const std::vector<ir::NodeId>& roots)
      : words_((roots.size() + 63) / 64) {
    // Contracted nodes: the clusters, then every node in no cluster.
    std::vector<size_t> index(g.size());
    std::vector<size_t> clusterIndex(g.size(), 0);
    for (size_t i = 0; i < roots.size(); ++i)
      clusterIndex[static_cast<size_t>(clusters.find(roots[i]))] = i;
    size_t count = roots.size();
    for (size_t v = 0; v < g.size(); ++v)
      index[v] = inCluster[v] ? clusterIndex[static_cast<size_t>(clusters.find(ir::NodeId(v)))]
                              : count++;
    std::vector<std::vector<size_t>> next(count);
    std::vector<int> pending(count, 0);
    for (size_t v = 0; v < g.size(); ++v)
      for (ir::NodeId u : clusters.users()[v])
        if (index[static_cast<size_t>(u)] != index[v]) {
          next[index[v]].push_back(index[static_cast<size_t>(u)]);
          ++pending[index[static_cast<size_t>(u)]];
        }
    std::vector<size_t> order;
    for (size_t c = 0; c < count; ++c)
      if (pending[c] == 0) order.push_back(c);
    for (size_t i = 0; i < order.size(); ++i)
      for (size_t n : next[order[i]])
        if (--pending[n] == 0) order.push_back(n);
    if (order.size() != count)
      throw std::logic_error("fusion: stitch scopes depend on each other in a cycle");
    reach_.assign(count * words_, 0);
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      for (size_t n : next[*it]) {
        for (size_t w = 0; w < words_; ++w)
          reach_[*it * words_ + w] |= reach_[n * words_ + w];
        if (n < roots.size()) reach_[*it * words_ + n / 64] |= uint64_t(1) << (n % 64);
      }
    reach_.resize(roots.size() * words_); // only clusters are asked about
    members_.assign(roots.size() * words_, 0);
    for (size_t i = 0; i < roots.size(); ++i)
      members_[i * words_ + i / 64] |= uint64_t(1) << (i % 64);
  }

  /// Whether a path leads from cluster a to cluster b or back (a, b: indices into roots).
  bool connected(size_t a, size_t b) const {
    return intersects(reach_, a, members_, b) || intersects(reach_, b, members_, a);
  }

  /// Cluster b joins cluster a (they are not connected); `live`: the clusters still asked about.
  void merge(size_t a, size_t b, const std::vector<size_t>& live) {
    for (size_t w = 0; w < words_; ++w) {
      members_[a * words_ + w] |= members_[b * words_ + w];
      reach_[a * words_ + w] |= reach_[b * words_ + w];
    }
    for (size_t x : live)
      if (x != a && intersects(reach_, x, members_, a))
        for (size_t w = 0; w < words_; ++w)
          reach_[x * words_ + w] |= reach_[a * words_ + w];
  }

private:
  bool intersects(const std::vector<uint64_t>& s, size_t i, const std::vector<uint64_t>& t,
                  size_t j) const {
    for (size_t w = 0; w < words_; ++w)
      if (s[i * words_ + w] & t[j * words_ + w]) return true;
    return false;
  }

  size_t words_;
  std::vector<uint64_t> reach_;   // per cluster: the clusters it reaches
  std::vector<uint64_t> members_; // per cluster: the original clusters merged into it
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
        ir::isMemoryIntensive(n.kind) && (!isSource(n) || materialisedSource(n.id)) &&
        (options.excluded.empty() || !options.excluded[static_cast<size_t>(n.id)]);

  Clusters clusters(g, inCluster);
  // BFS-equivalent growth: every producer→consumer edge between memory-intensive ops joins
  // their clusters, unless the two clusters already depend on each other through something
  // else (a dot between them), which would put a cycle through the dot.
  for (const ir::Node& n : g.nodes()) {
    if (!inCluster[static_cast<size_t>(n.id)]) continue;
    for (ir::NodeId p : n.operands) {
      if (!inCluster[static_cast<size_t>(p)] || clusters.find(p) == clusters.find(n.id)) continue;
      if (clusters.gathersAcross(p, n.id)) continue; // through memory: another kernel stores it
      if (clusters.reachesThroughOthers(p, n.id, false, n.id)) continue;
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
  if (options.remoteStitching) {
    ClusterReach reach(g, clusters, inCluster, roots);
    std::vector<size_t> kept;  // indices into roots of the merged clusters
    std::vector<size_t> live(roots.size()); // kept ones and those not yet placed
    std::iota(live.begin(), live.end(), 0);
    for (size_t r = 0; r < roots.size(); ++r) {
      bool placed = false;
      for (size_t m : kept) {
        if (reach.connected(m, r)) continue;
        clusters.unite(roots[m], roots[r]);
        live.erase(std::find(live.begin(), live.end(), r));
        reach.merge(m, r, live);
        placed = true;
        break;
      }
      if (!placed) kept.push_back(r);
    }
    for (size_t m : kept)
      merged.push_back(clusters.find(roots[m]));
  } else {
    for (ir::NodeId r : roots)
      merged.push_back(clusters.find(r));
  }

  std::vector<StitchScope> scopes;
  std::map<ir::NodeId, size_t> scopeOfRoot;
  for (ir::NodeId m : merged) {
    scopeOfRoot[clusters.find(m)] = scopes.size();
    scopes.push_back({clusters.members(m)});
  }
  // Regenerated sources join every scope that reads them.
  for (const ir::Node& n : g.nodes()) {
    if (!ir::isMemoryIntensive(n.kind) || inCluster[static_cast<size_t>(n.id)] || !isSource(n))
      continue;
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
