#include "fusion/scope_recompute.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace weft::fusion {
namespace {

std::string megabytes(double bytes) {
  return bytes >= 1e5 ? fmt::format("{:.1f} MB", bytes / 1e6) : fmt::format("{:.1f} KB", bytes / 1e3);
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
      std::vector<ir::NodeId> ops = scopes_[p].ops; // the scope's own, before any is added
      for (ir::NodeId v : ops) {
        if (home(v) != static_cast<int>(p) || isSource(g_.node(v))) continue;
        std::set<int> readers;
        for (ir::NodeId u : users_[static_cast<size_t>(v)])
          for (int c : scopesOf_[static_cast<size_t>(u)])
            if (!in(v, c)) readers.insert(c);
        for (int c : readers)
          consider(v, static_cast<int>(p), c);
      }
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

  void consider(ir::NodeId v, int p, int c) {
    const ir::Dim elements = ir::numElements(g_.node(v).type.shape);
    std::vector<ir::NodeId> chain, leaves;
    std::set<ir::NodeId> seen;
    std::vector<ir::NodeId> work{v};
    while (!work.empty()) {
      ir::NodeId x = work.back();
      work.pop_back();
      if (!seen.insert(x).second || in(x, c)) continue;
      if (!chainable(x, p, elements)) {
        leaves.push_back(x);
        continue;
      }
      chain.push_back(x);
      if (chain.size() > kMaxRecomputedOps) return;
      const ir::Node& n = g_.node(x);
      for (ir::NodeId o : n.operands) {
        if (n.kind == ir::OpKind::BroadcastInDim && !(isSource(g_.node(o)) && chainable(o, p, 1)))
          leaves.push_back(o); // a broadcast's operand is loaded, not recomputed
        else
          work.push_back(o);
      }
    }
    double recompute = 0;
    std::vector<std::string> loaded;
    std::set<ir::NodeId> counted;
    for (ir::NodeId l : leaves) {
      if (!counted.insert(l).second || readBy(l, c)) continue;
      recompute += bytes(l) * (storedBesides(l, c) || !in(l, p) ? 1 : 2);
      loaded.push_back("%" + g_.node(l).name);
    }
    const double store = bytes(v) * (storedBesides(v, c) ? 1 : 2);
    if (recompute >= store) return;
    for (ir::NodeId x : chain) {
      scopes_[static_cast<size_t>(c)].ops.push_back(x);
      scopesOf_[static_cast<size_t>(x)].push_back(c);
    }
    std::string from;
    for (const std::string& name : loaded)
      from += (from.empty() ? "" : ", ") + name;
    result_.notes.push_back(fmt::format(
        "%{}: recomputed by stitch{} ({} op(s)) {} instead of stored by stitch{} and loaded ({} "
        "at the planned sizes)",
        g_.node(v).name, c, chain.size(),
        loaded.empty() ? std::string("from what it loads already")
                       : fmt::format("loading {} ({})", from, megabytes(recompute)),
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
