#include "random_graph.h"

#include <algorithm>
#include <random>

namespace weft::testing {
namespace {

using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;

class Generator {
public:
  Generator(uint64_t seed, const RandomGraphOptions& o)
      : rng_(seed), gatherRng_(seed ^ 0x6a09e667f3bcc909ull), o_(o) {}

  Graph run() {
    dtype_ = DType::f32;
    if (o_.allowHalf && pick(6) == 0) dtype_ = pick(2) ? DType::f16 : DType::bf16;
    int inputs = 1 + pick(3);
    std::vector<int64_t> base = randomShape();
    for (int i = 0; i < inputs; ++i) {
      std::vector<int64_t> s = i == 0 || pick(3) ? base : randomShape();
      values_.push_back(g_.parameter("in" + std::to_string(i), {dtype_, toShape(s)}));
    }
    int ops = o_.minOps + pick(o_.maxOps - o_.minOps + 1);
    for (int i = 0; i < ops; ++i) {
      step();
      // Gathers come from a stream of their own: a graph without one is the graph this seed
      // gave before gathers existed.
      if (o_.allowGather && gatherPick(8) == 0) gatherStep();
    }
    // outputs: the last value plus a few others (multi-output kernels)
    g_.addOutput(values_.back());
    for (int i = 0, n = pick(3); i < n; ++i) {
      NodeId v = values_[static_cast<size_t>(pick(static_cast<int>(values_.size())))];
      if (g_.node(v).kind != OpKind::Parameter) g_.addOutput(v);
    }
    return std::move(g_);
  }

private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  int gatherPick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(gatherRng_); }

  /// A gather from any value (an input, or one computed earlier: another kernel's) along one
  /// or two of its axes, by a new integer input (random inputs are -8..8: negative, in range
  /// and past small axes all occur), shaped as the result or broadcast from one axis (an
  /// embedding lookup's form); the gathered axes resized, sometimes a leading result dim added.
  void gatherStep() {
    NodeId d = values_[static_cast<size_t>(gatherPick(static_cast<int>(values_.size())))];
    std::vector<int64_t> ds = shapeOf(d);
    if (ds.empty()) return;
    size_t rank = ds.size();
    size_t k = rank >= 2 && gatherPick(3) == 0 ? 2 : 1;
    std::vector<int64_t> axes;
    while (axes.size() < k) {
      auto a = static_cast<int64_t>(gatherPick(static_cast<int>(rank)));
      if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
    }
    static const int64_t sizes[] = {1, 3, 7, 33};
    std::vector<int64_t> out = ds;
    for (int64_t a : axes)
      if (gatherPick(3)) out[static_cast<size_t>(a)] = sizes[gatherPick(4)];
    bool lead = gatherPick(3) == 0;
    if (lead) out.insert(out.begin(), 2);
    if (count(out) > o_.maxElements) return;
    std::vector<int64_t> dims;
    for (size_t a = 0; a < rank; ++a)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) == axes.end())
        dims.push_back(static_cast<int64_t>(a) + (lead ? 1 : 0));
    std::vector<NodeId> indices;
    for (int64_t a : axes) {
      DType t = gatherPick(2) ? DType::i32 : DType::i64;
      std::string name = "idx" + std::to_string(indexInputs_++);
      if (k == 1 && gatherPick(2)) { // one index per position along the axis, broadcast
        int64_t at = a + (lead ? 1 : 0);
        NodeId i = g_.parameter(name, {t, toShape({out[static_cast<size_t>(at)]})});
        indices.push_back(g_.broadcastInDim(i, toShape(out), {at}));
      } else {
        indices.push_back(g_.parameter(name, {t, toShape(out)}));
      }
    }
    push(g_.gather(d, indices, axes, dims));
  }
  const std::vector<int64_t>& shapeOf(NodeId v) {
    cache_.clear();
    for (const Dim& d : g_.node(v).type.shape) cache_.push_back(d.size());
    return cache_;
  }
  static ir::Shape toShape(const std::vector<int64_t>& s) { return ir::Shape(s.begin(), s.end()); }
  static int64_t count(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t v : s) n *= v;
    return n;
  }

  std::vector<int64_t> randomShape() {
    static const int64_t sizes[] = {1, 2, 7, 32, 33, 64, 100, 128, 257, 1000};
    for (;;) {
      int rank = 1 + pick(3);
      std::vector<int64_t> s;
      for (int i = 0; i < rank; ++i) s.push_back(sizes[pick(10)]);
      if (count(s) <= o_.maxElements && count(s) >= 2) return s;
    }
  }

  NodeId anyValue() { return values_[static_cast<size_t>(pick(static_cast<int>(values_.size())))]; }
  NodeId recentValue() {
    size_t n = values_.size();
    size_t window = std::min<size_t>(n, 4);
    return values_[n - 1 - static_cast<size_t>(pick(static_cast<int>(window)))];
  }

  /// A second operand of the same shape: an existing value, or a broadcast of a smaller one.
  NodeId partnerFor(NodeId a) {
    std::vector<int64_t> s = shapeOf(a);
    std::vector<NodeId> same;
    for (NodeId v : values_)
      if (v != a && shapeOf(v) == s) same.push_back(v);
    if (!same.empty() && pick(3)) return same[static_cast<size_t>(pick(static_cast<int>(same.size())))];
    // broadcast a fresh reduced value or a new parameter along one axis
    if (s.size() >= 2 && pick(2)) {
      int64_t axis = pick(static_cast<int>(s.size()));
      NodeId r = g_.reduce(pick(2) ? ir::ReduceKind::Sum : ir::ReduceKind::Max, a, {axis});
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
        if (d != axis) dims.push_back(d);
      return g_.broadcastInDim(r, toShape(s), dims);
    }
    return g_.broadcastInDim(g_.scalar(dtype_, 0.25 * (1 + pick(8))), toShape(s), {});
  }

  void push(NodeId v) { values_.push_back(v); }

  void step() {
    NodeId a = recentValue();
    std::vector<int64_t> s = shapeOf(a);
    if (s.empty()) { // a full reduction: broadcast it back out
      push(g_.broadcastInDim(a, toShape({7}), {}));
      return;
    }
    switch (pick(12)) {
    case 0:
    case 1: { // safe unary
      static const OpKind safe[] = {OpKind::Neg, OpKind::Abs, OpKind::Tanh, OpKind::Sigmoid,
                                    OpKind::Sin, OpKind::Cos, OpKind::Floor, OpKind::Erf};
      push(g_.unary(safe[pick(8)], a));
      return;
    }
    case 2: { // guarded expensive ops: exp(tanh x), log(|x|+1), sqrt(|x|)
      int k = pick(3);
      if (k == 0) push(g_.unary(OpKind::Exp, g_.unary(OpKind::Tanh, a)));
      if (k == 1) {
        NodeId one = g_.broadcastInDim(g_.scalar(dtype_, 1.0), toShape(s), {});
        push(g_.unary(OpKind::Log, g_.binary(OpKind::Add, g_.unary(OpKind::Abs, a), one)));
      }
      if (k == 2) push(g_.unary(OpKind::Sqrt, g_.unary(OpKind::Abs, a)));
      return;
    }
    case 3:
    case 4: { // binary
      static const OpKind bin[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max, OpKind::Min};
      push(g_.binary(bin[pick(5)], a, partnerFor(a)));
      return;
    }
    case 5: { // division by a value bounded away from zero
      NodeId b = partnerFor(a);
      NodeId one = g_.broadcastInDim(g_.scalar(dtype_, 1.0), toShape(s), {});
      push(g_.binary(OpKind::Div, a, g_.binary(OpKind::Add, g_.unary(OpKind::Abs, b), one)));
      return;
    }
    case 6:
    case 7: { // reduce over one or two axes
      if (s.size() < 2 && pick(2)) break;
      std::vector<int64_t> axes;
      if (s.size() == 1) {
        axes = {0};
      } else if (pick(3) == 0 && s.size() == 3) {
        axes = pick(2) ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{0, 1};
      } else {
        axes = {static_cast<int64_t>(pick(static_cast<int>(s.size())))};
      }
      static const ir::ReduceKind kinds[] = {ir::ReduceKind::Sum, ir::ReduceKind::Max, ir::ReduceKind::Min};
      ir::ReduceKind kind = kinds[pick(3)];
      // A min over the last axis of a float is a logsumexp instead (log-softmax's row statistic),
      // chosen without a draw so that every other graph stays what it was.
      if (kind == ir::ReduceKind::Min && ir::isFloat(dtype_) &&
          axes.back() == static_cast<int64_t>(s.size()) - 1)
        kind = ir::ReduceKind::LogSumExp;
      NodeId r = g_.reduce(kind, a, axes);
      if (s.size() > axes.size() && pick(2)) { // broadcast back and combine: a reduce with consumers
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
          if (!std::count(axes.begin(), axes.end(), d)) dims.push_back(d);
        push(g_.binary(OpKind::Sub, a, g_.broadcastInDim(r, toShape(s), dims)));
      } else {
        push(r);
      }
      return;
    }
    case 8: { // broadcast to a new leading or trailing axis
      static const int64_t extra[] = {1, 3, 7, 32};
      int64_t e = extra[pick(4)];
      if (count(s) * e > o_.maxElements || s.size() >= 3) break;
      bool leading = pick(2);
      std::vector<int64_t> t = s;
      t.insert(leading ? t.begin() : t.end(), e);
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) dims.push_back(leading ? d + 1 : d);
      push(g_.broadcastInDim(a, toShape(t), dims));
      return;
    }
    case 9: { // reshape: flatten or split the first axis
      if (s.size() >= 2) {
        std::vector<int64_t> t = {s[0] * s[1]};
        t.insert(t.end(), s.begin() + 2, s.end());
        push(g_.reshape(a, toShape(t)));
      } else if (s[0] % 2 == 0) {
        push(g_.reshape(a, toShape({2, s[0] / 2})));
      } else {
        break;
      }
      return;
    }
    case 10: { // transpose
      if (s.size() < 2) break;
      std::vector<int64_t> perm(s.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
      std::shuffle(perm.begin(), perm.end(), rng_);
      push(g_.transpose(a, perm));
      return;
    }
    case 11: { // slice or concatenate along the last axis
      int64_t last = static_cast<int64_t>(s.size()) - 1;
      if (pick(2) && s.back() >= 3) {
        std::vector<int64_t> starts(s.size(), 0), limits(s.size(), -1), strides(s.size(), 1);
        starts[static_cast<size_t>(last)] = 1;
        strides[static_cast<size_t>(last)] = 1 + pick(2);
        push(g_.slice(a, starts, limits, strides));
      } else if (count(s) * 2 <= o_.maxElements) {
        push(g_.concatenate({a, partnerFor(a)}, last));
      } else {
        break;
      }
      return;
    }
    }
    push(g_.unary(OpKind::Neg, a)); // fallback when the chosen shape change did not fit
  }

  std::mt19937_64 rng_;
  std::mt19937_64 gatherRng_;
  int indexInputs_ = 0;
  RandomGraphOptions o_;
  Graph g_;
  DType dtype_ = DType::f32;
  std::vector<NodeId> values_;
  std::vector<int64_t> cache_;
};

} // namespace

ir::Graph randomGraph(uint64_t seed, const RandomGraphOptions& options) { return Generator(seed, options).run(); }

} // namespace weft::testing
