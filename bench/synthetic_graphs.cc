#include "synthetic_graphs.h"

#include <string>
#include <vector>

namespace weft::bench {
namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// splitmix64: the same sequence on every machine and standard library.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

private:
  uint64_t state_;
};

/// Builds clusters into one graph; `live` holds the recent [rows, cols] values a binary op
/// may combine (so the cluster is a DAG with reuse, not a chain).
class ClusterBuilder {
public:
  ClusterBuilder(Graph& g, Rng& rng, int64_t rows, int64_t cols)
      : g_(g), rng_(rng), rows_(rows), cols_(cols) {}

  /// Appends motifs after `x` until exactly `ops` nodes were added (a motif adds at most 5,
  /// and only motifs that fit the budget left are drawn); returns the last value.
  NodeId cluster(NodeId x, int ops) {
    const size_t start = g_.size();
    live_ = {x};
    NodeId cur = x;
    while (static_cast<int>(g_.size() - start) < ops)
      cur = motif(cur, ops - static_cast<int>(g_.size() - start));
    return cur;
  }

  /// One unary op: what a cluster ends with when its budget is almost spent.
  NodeId unary(NodeId x) {
    static constexpr OpKind kinds[] = {OpKind::Tanh, OpKind::Neg, OpKind::Sigmoid, OpKind::Abs};
    return remember(g_.unary(kinds[rng_.below(4)], x));
  }

private:
  NodeId remember(NodeId v) {
    live_.push_back(v);
    if (live_.size() > 6) live_.erase(live_.begin());
    return v;
  }
  NodeId other() { return live_[static_cast<size_t>(rng_.below(static_cast<int>(live_.size())))]; }
  ir::Shape full() const { return {rows_, cols_}; }

  NodeId motif(NodeId x, int budget) {
    if (budget < 3) return unary(x);
    switch (rng_.below(budget < 5 ? 3 : 6)) {
    case 0:
      return unary(x);
    case 1: { // binary with a recent value
      static constexpr OpKind kinds[] = {OpKind::Add, OpKind::Mul, OpKind::Sub, OpKind::Max};
      return remember(g_.binary(kinds[rng_.below(4)], x, other()));
    }
    case 2: { // bias add: a [cols] parameter broadcast over the rows
      NodeId bias = g_.parameter("bias" + std::to_string(params_++), {ir::DType::f32, {cols_}});
      NodeId b = g_.broadcastInDim(bias, full(), {1});
      return remember(g_.binary(OpKind::Add, x, b));
    }
    case 3: { // LayerNorm-like centering: x - mean(x) over the row
      NodeId sum = g_.reduce(ir::ReduceKind::Sum, x, {1});
      NodeId mean =
          g_.binary(OpKind::Mul, sum, g_.constant(ir::DType::f32, {rows_}, {1.0 / double(cols_)}));
      NodeId b = g_.broadcastInDim(mean, full(), {0});
      return remember(g_.binary(OpKind::Sub, x, b));
    }
    case 4: { // softmax-like: exp(x - max(x)) over the row
      NodeId mx = g_.reduce(ir::ReduceKind::Max, x, {1});
      NodeId b = g_.broadcastInDim(mx, full(), {0});
      return remember(g_.unary(OpKind::Exp, g_.binary(OpKind::Sub, x, b)));
    }
    default: { // column reduce spread back over the rows (a bias-gradient-like dependency)
      NodeId col = g_.reduce(ir::ReduceKind::Sum, x, {0});
      NodeId b = g_.broadcastInDim(col, full(), {1});
      return remember(g_.binary(OpKind::Add, g_.unary(OpKind::Tanh, x), b));
    }
    }
  }

  Graph& g_;
  Rng& rng_;
  int64_t rows_, cols_;
  std::vector<NodeId> live_;
  int params_ = 0;
};

} // namespace

ir::Graph elementwiseCluster(int ops, int64_t rows, int64_t cols, uint64_t seed) {
  Graph g;
  Rng rng(seed);
  NodeId x = g.parameter("x", {ir::DType::f32, {rows, cols}});
  ClusterBuilder b(g, rng, rows, cols);
  g.addOutput(b.cluster(x, ops));
  return g;
}

ir::Graph clusteredGraph(int nodes, int64_t rows, int64_t cols, int clusterOps, uint64_t seed) {
  Graph g;
  Rng rng(seed);
  ClusterBuilder b(g, rng, rows, cols);
  NodeId cur = g.parameter("x", {ir::DType::f32, {rows, cols}});
  int layer = 0;
  // Each layer: a cluster, then a matmul (weight parameter + dot = 2 nodes). Stop while a
  // whole layer still fits, then pad with unary ops to exactly `nodes`.
  while (static_cast<int>(g.size()) + clusterOps + 2 + 8 <= nodes) {
    cur = b.cluster(cur, clusterOps);
    NodeId w = g.parameter("w" + std::to_string(layer++), {ir::DType::f32, {cols, cols}});
    cur = g.dot(cur, w);
  }
  while (static_cast<int>(g.size()) < nodes)
    cur = b.unary(cur);
  g.addOutput(cur);
  return g;
}

ir::Graph chainedSoftmaxes(int n, int64_t rows, int64_t cols) {
  Graph g;
  const ir::Shape full = {rows, cols};
  NodeId cur = g.parameter("x", {ir::DType::f32, full});
  for (int i = 0; i < n; ++i) {
    std::string p = "s" + std::to_string(i) + "_";
    NodeId mx = g.reduce(ir::ReduceKind::Max, cur, {1}, p + "max");
    NodeId e = g.unary(OpKind::Exp,
                       g.binary(OpKind::Sub, cur, g.broadcastInDim(mx, full, {0}, p + "maxb"), p + "sub"),
                       p + "exp");
    NodeId sum = g.reduce(ir::ReduceKind::Sum, e, {1}, p + "sum");
    cur = g.binary(OpKind::Div, e, g.broadcastInDim(sum, full, {0}, p + "sumb"), p + "out");
  }
  g.addOutput(cur);
  return g;
}

} // namespace weft::bench
