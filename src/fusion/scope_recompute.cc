#include "fusion/scope_recompute.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weft::fusion {
namespace {

std::string megabytes(double bytes) {
  return bytes >= 1e5 ? fmt::format("{:.1f} MB", bytes / 1e6) : fmt::format("{:.1f} KB", bytes / 1e3);
}

/// What a recomputing kernel loads for it, for the plan's note.
std::string loadText(const std::vector<std::string>& loaded, double bytes) {
  if (loaded.empty()) return "from what it loads already";
  return fmt::format("loading {} ({})", fmt::join(loaded, ", "), megabytes(bytes));
}

class Recomputer {
public:
  Recomputer(const ir::Graph& g, const Users& users, std::vector<StitchScope>& scopes,
             const ir::SymbolRanges& ranges)
      : g_(g), users_(users), scopes_(scopes), ranges_(ranges), scopesOf_(result_.scopesOf) {
    scopesOf_.assign(g.size(), {});
    result_.home.assign(g.size(), -1);
    for (size_t s = 0; s < scopes.size(); ++s)
      for (ir::NodeId op : scopes[s].ops) {
        scopesOf_[static_cast<size_t>(op)].push_back(static_cast<int>(s));
        int& home = result_.home[static_cast<size_t>(op)];
        if (home < 0) home = static_cast<int>(s);
      }
  }

  ScopeRecomputation run() {
    for (size_t p = 0; p < scopes_.size(); ++p) {
      // The values each later scope reads from this one, in order.
      std::map<int, std::vector<ir::NodeId>> crossing;
      for (ir::NodeId v : scopes_[p].ops) {
        if (home(v) != static_cast<int>(p) || isSource(g_.node(v))) continue;
        std::set<int> readers;
        for (ir::NodeId u : users_[static_cast<size_t>(v)])
          for (int c : scopesOf_[static_cast<size_t>(u)])
            if (!in(v, c)) readers.insert(c);
        for (int c : readers)
          crossing[c].push_back(v);
      }
      for (auto& [c, values] : crossing)
        if (!together(values, static_cast<int>(p), c))
          for (ir::NodeId v : values)
            alone(v, static_cast<int>(p), c);
    }
    for (StitchScope& s : scopes_)
      std::sort(s.ops.begin(), s.ops.end());
    ScopeRecomputation out = std::move(result_);
    return out;
  }

private:
  int home(ir::NodeId v) const { return result_.home[static_cast<size_t>(v)]; }
  bool in(ir::NodeId v, int s) const {
    const auto& ss = scopesOf_[static_cast<size_t>(v)];
    return std::find(ss.begin(), ss.end(), s) != ss.end();
  }
  double bytes(ir::NodeId v) const {
    const ir::Node& n = g_.node(v);
    double e = 1;
    for (const ir::Dim& d : n.type.shape)
      e *= static_cast<double>(ir::assumedSize(d, ranges_));
    return e * static_cast<double>(ir::dtypeBytes(n.type.dtype));
  }
  /// Whether a reader that is not scope `except` needs v in memory (or the caller does).
  bool storedBesides(ir::NodeId v, int except) const {
    if (scopesOf_[static_cast<size_t>(v)].empty() || g_.isOutput(v)) return true;
    for (ir::NodeId u : users_[static_cast<size_t>(v)]) {
      if (scopesOf_[static_cast<size_t>(u)].empty()) return true; // a library call reads it
      for (int s : scopesOf_[static_cast<size_t>(u)])
        if (s != except && !in(v, s)) return true;
    }
    return false;
  }
  bool readBy(ir::NodeId v, int c) const {
    if (in(v, c)) return true;
    for (ir::NodeId u : users_[static_cast<size_t>(v)])
      if (in(u, c)) return true;
    return false;
  }
  /// Ops a reading scope may recompute: elementwise ops, reshapes and broadcasts of the
  /// value's element count, computed by scope p itself; sources it regenerates.
  bool chainable(ir::NodeId x, int p, const ir::Dim& elements) const {
    const ir::Node& n = g_.node(x);
    if (!in(x, p)) return false;
    if (isSource(n)) return !storedBesides(x, -1);
    return home(x) == p &&
           (ir::isElementwise(n.kind) || n.kind == ir::OpKind::Reshape ||
            n.kind == ir::OpKind::BroadcastInDim) &&
           ir::numElements(n.type.shape) == elements;
  }

  struct Chain {
    std::vector<ir::NodeId> ops, leaves;
    bool recomputable = false; // within kMaxRecomputedOps, and v itself chainable
  };

  /// The ops scope c would add to compute v, and the values it would load for them; `added`:
  /// ops taken as computed by c already (chains of values decided with v).
  Chain chainOf(ir::NodeId v, int p, int c, const std::set<ir::NodeId>& added) const {
    const ir::Dim elements = ir::numElements(g_.node(v).type.shape);
    Chain chain;
    if (!chainable(v, p, elements)) return chain;
    std::set<ir::NodeId> seen;
    std::vector<ir::NodeId> work{v};
    while (!work.empty()) {
      ir::NodeId x = work.back();
      work.pop_back();
      if (!seen.insert(x).second || in(x, c) || added.count(x)) continue;
      if (!chainable(x, p, elements)) {
        chain.leaves.push_back(x);
        continue;
      }
      // A value gathered from (graph_queries.h) is read from memory: c never computes it.
      for (ir::NodeId u : users_[static_cast<size_t>(x)])
        if (in(u, c) && readsAtDataPositions(g_.node(u), x)) return chain;
      chain.ops.push_back(x);
      if (chain.ops.size() > kMaxRecomputedOps) return chain;
      const ir::Node& n = g_.node(x);
      for (ir::NodeId o : n.operands) {
        if (n.kind == ir::OpKind::BroadcastInDim && !(isSource(g_.node(o)) && chainable(o, p, 1)))
          chain.leaves.push_back(o); // a broadcast's operand is loaded, not recomputed
        else
          work.push_back(o);
      }
    }
    chain.recomputable = true;
    return chain;
  }

  /// Bytes scope c would load (and p store) for `leaves` it does not read yet; names them.
  double loadCost(const std::vector<ir::NodeId>& leaves, int p, int c,
                  std::set<ir::NodeId>& counted, std::vector<std::string>& loaded) const {
    double cost = 0;
    for (ir::NodeId l : leaves) {
      if (!counted.insert(l).second || readBy(l, c)) continue;
      cost += bytes(l) * (storedBesides(l, c) || !in(l, p) ? 1 : 2);
      loaded.push_back("%" + g_.node(l).name);
    }
    return cost;
  }
  double storeCost(ir::NodeId v, int c) const { return bytes(v) * (storedBesides(v, c) ? 1 : 2); }

  void add(const Chain& chain, int c) {
    for (ir::NodeId x : chain.ops) {
      scopes_[static_cast<size_t>(c)].ops.push_back(x);
      scopesOf_[static_cast<size_t>(x)].push_back(c);
    }
  }

  /// Every value c reads from p recomputed at once, when together they load fewer bytes than
  /// storing and loading them all (each alone may not: the first loads what the rest share).
  bool together(const std::vector<ir::NodeId>& values, int p, int c) {
    if (values.size() < 2) return false;
    std::set<ir::NodeId> added, counted;
    std::vector<Chain> chains;
    std::vector<ir::NodeId> taken;
    std::vector<std::string> loaded;
    double load = 0, store = 0;
    size_t ops = 0;
    for (ir::NodeId v : values) {
      Chain chain = chainOf(v, p, c, added);
      if (!chain.recomputable) continue;
      added.insert(chain.ops.begin(), chain.ops.end());
      load += loadCost(chain.leaves, p, c, counted, loaded);
      store += storeCost(v, c);
      ops += chain.ops.size();
      chains.push_back(std::move(chain));
      taken.push_back(v);
    }
    if (taken.size() < 2 || load >= store) return false;
    for (const Chain& chain : chains)
      add(chain, c);
    std::vector<std::string> names;
    for (ir::NodeId v : taken)
      names.push_back("%" + g_.node(v).name);
    result_.notes.push_back(fmt::format(
        "{}: recomputed by stitch{} together ({} op(s)) {} instead of stored by stitch{} and "
        "loaded ({} at the planned sizes)",
        fmt::join(names, ", "), c, ops,
        loadText(loaded, load),
        p, megabytes(store)));
    return true;
  }

  /// One value recomputed when that alone loads fewer bytes than storing and loading it.
  void alone(ir::NodeId v, int p, int c) {
    Chain chain = chainOf(v, p, c, {});
    if (!chain.recomputable) return;
    std::set<ir::NodeId> counted;
    std::vector<std::string> loaded;
    const double load = loadCost(chain.leaves, p, c, counted, loaded);
    const double store = storeCost(v, c);
    if (load >= store) return;
    add(chain, c);
    result_.notes.push_back(fmt::format(
        "%{}: recomputed by stitch{} ({} op(s)) {} instead of stored by stitch{} and loaded ({} "
        "at the planned sizes)",
        g_.node(v).name, c, chain.ops.size(),
        loadText(loaded, load),
        p, megabytes(store)));
  }

  const ir::Graph& g_;
  const Users& users_;
  std::vector<StitchScope>& scopes_;
  const ir::SymbolRanges& ranges_;
  ScopeRecomputation result_;
  std::vector<std::vector<int>>& scopesOf_; // result_.scopesOf
};

} // namespace

ScopeRecomputation recomputeAcrossScopes(const ir::Graph& g, const Users& users,
                                         std::vector<StitchScope>& scopes,
                                         const ir::SymbolRanges& ranges) {
  return Recomputer(g, users, scopes, ranges).run();
}

} // namespace weft::fusion
