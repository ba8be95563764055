#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/one_hot_pick.h"
#include "passes/pipeline.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;

namespace {

constexpr int64_t kRows = 6, kVocab = 10;

struct Loss {
  Graph g;
  NodeId logits = -1, labels = -1;
};

/// -mean over rows of log_softmax(logits)[row, label[row]], as frameworks lower it: a one-hot
/// mask from an iota over the vocabulary, a select and a row sum. `value` builds what is
/// picked from the logits and the row's logsumexp broadcast back (log-softmax: x - lse).
template <class Value>
Loss oneHotLoss(DType iotaType, double unpicked, Value value) {
  Loss l;
  Graph& g = l.g;
  Shape s{Dim(kRows), Dim(kVocab)};
  l.logits = g.parameter("logits", {DType::f32, s});
  l.labels = g.parameter("labels", {iotaType, {Dim(kRows)}});
  NodeId lse = g.reduce(ReduceKind::LogSumExp, l.logits, {1}, "lse");
  NodeId f = value(g, l.logits, g.broadcastInDim(lse, s, {0}, "lse_b"));
  NodeId mask = g.compare(CompareDir::EQ, g.iota(iotaType, s, 1, "vocab"),
                          g.broadcastInDim(l.labels, s, {0}, "labels_b"), "is_label");
  NodeId picked = g.select(mask, f, g.constant(DType::f32, s, {unpicked}, "zero"), "picked");
  NodeId token = g.reduce(ReduceKind::Sum, picked, {1}, "token");
  NodeId total = g.reduce(ReduceKind::Sum, token, {0}, "total");
  g.setOutputs({g.binary(OpKind::Mul, total, g.constant(DType::f32, {}, {-1.0 / kRows}), "loss"),
                token});
  return l;
}

NodeId logSoftmax(Graph& g, NodeId x, NodeId lse) { return g.binary(OpKind::Sub, x, lse); }

/// Whether v reads, through any chain of ops, a reduce over a rank-2 operand (a row statistic).
bool readsRowReduce(const Graph& g, NodeId v) {
  const Node& n = g.node(v);
  if (n.kind == OpKind::Reduce && g.node(n.operands[0]).type.shape.size() == 2) return true;
  for (NodeId o : n.operands)
    if (readsRowReduce(g, o)) return true;
  return false;
}

/// Every reduce over a row reads values that need no other row reduce first.
bool rowsReadOnce(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.kind == OpKind::Reduce && g.node(n.operands[0]).type.shape.size() == 2 &&
        readsRowReduce(g, n.operands[0]))
      return false;
  return true;
}

std::vector<HostTensor> inputs(const Loss& l, DType labelType) {
  HostTensor x(DType::f32, {kRows, kVocab});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, std::sin(double(i) * 1.7) * 4 + double(i % 7));
  const double inf = std::numeric_limits<double>::infinity();
  x.set(1 * kVocab + 8, inf);   // row 1: +inf off the label
  x.set(2 * kVocab + 0, std::nan("")); // row 2: NaN off the label
  x.set(3 * kVocab + 2, -inf);  // row 3: -inf off the label
  HostTensor labels(labelType, {kRows});
  const double picks[kRows] = {3, 0, 9, 5, -1, kVocab}; // the last two pick nothing
  for (int64_t i = 0; i < kRows; ++i)
    labels.set(i, picks[i]);
  (void)l;
  return {x, labels};
}

void checkSameValues(const Graph& a, const Graph& b, const std::vector<HostTensor>& in) {
  std::vector<HostTensor> ea = interpret(a, in), eb = interpret(b, in);
  REQUIRE(ea.size() == eb.size());
  for (size_t o = 0; o < ea.size(); ++o)
    for (int64_t i = 0; i < ea[o].numElements(); ++i) {
      double x = ea[o].get(i), y = eb[o].get(i);
      CAPTURE(o, i, x, y);
      CHECK((x == y || (std::isnan(x) && std::isnan(y))));
    }
}

} // namespace

TEST_CASE("one-hot pick: log-softmax's label is picked per row, so the row is read once",
          "[passes][one_hot_pick]") {
  for (DType t : {DType::i32, DType::i64}) {
    Loss l = oneHotLoss(t, 0.0, logSoftmax);
    REQUIRE_FALSE(rowsReadOnce(l.g)); // the row sum waits for the logsumexp
    Graph picked = passes::pickThroughOneHot(l.g);
    verify(picked);
    CHECK(rowsReadOnce(picked));
    Graph canonical = passes::canonicalize(l.g);
    CHECK(rowsReadOnce(canonical));
    // Equal values, labels outside the vocabulary and NaN and infinities off the label too.
    checkSameValues(l.g, picked, inputs(l, t));
    checkSameValues(l.g, canonical, inputs(l, t));
    // The pass reaches a fixed point: the masked sum it made is not picked again.
    CHECK(passes::sameGraph(passes::pickThroughOneHot(canonical), canonical));
  }
}

TEST_CASE("one-hot pick: several leaves that vary along the row are each picked",
          "[passes][one_hot_pick]") {
  // exp(x - lse) * x + iota: two uses of x, the iota at the label is the label.
  Loss l = oneHotLoss(DType::i32, 0.0, [](Graph& g, NodeId x, NodeId lse) {
    Shape s = g.node(x).type.shape;
    NodeId p = g.unary(OpKind::Exp, g.binary(OpKind::Sub, x, lse));
    NodeId column = g.convert(g.iota(DType::i32, s, 1), DType::f32);
    return g.binary(OpKind::Add, g.binary(OpKind::Mul, p, x), column);
  });
  Graph picked = passes::canonicalize(l.g);
  CHECK(rowsReadOnce(picked));
  checkSameValues(l.g, picked, inputs(l, DType::i32));
}

TEST_CASE("one-hot pick: what it does not pick through stays as it was",
          "[passes][one_hot_pick]") {
  auto unchanged = [](const Graph& g) {
    return passes::sameGraph(passes::pickThroughOneHot(g), g);
  };
  // No row statistic: the sum reads only the logits, nothing to gain.
  CHECK(unchanged(oneHotLoss(DType::i32, 0.0, [](Graph& g, NodeId x, NodeId) {
                    return g.unary(OpKind::Exp, x);
                  }).g));
  // The unselected value is not zero: every element counts.
  CHECK(unchanged(oneHotLoss(DType::i32, 1.0, logSoftmax).g));
  // sum over axis 1 of select(iota_{iotaAxis} == broadcast(label, {labelDim}), x - lse, 0).
  auto masked = [](DType iotaType, int64_t length, int64_t iotaAxis, int64_t labelDim) {
    Graph g;
    Shape s{Dim(4), Dim(length)};
    NodeId x = g.parameter("x", {DType::f32, s});
    NodeId label = g.parameter("label", {iotaType, {s[size_t(labelDim)]}});
    NodeId lse = g.broadcastInDim(g.reduce(ReduceKind::LogSumExp, x, {1}), s, {0});
    NodeId mask = g.compare(CompareDir::EQ, g.iota(iotaType, s, iotaAxis),
                            g.broadcastInDim(label, s, {labelDim}));
    NodeId sel = g.select(mask, g.binary(OpKind::Sub, x, lse), g.constant(DType::f32, s, {0.0}));
    g.setOutputs({g.reduce(ReduceKind::Sum, sel, {1})});
    return g;
  };
  CHECK_FALSE(unchanged(masked(DType::i32, 300, 1, 0))); // the pattern itself is picked
  // An i8 iota wraps past 127, so a row may match its label more than once.
  CHECK(unchanged(masked(DType::i8, 300, 1, 0)));
  // An iota along the kept axis, the label along the reduced one: a row holds many matches.
  CHECK(unchanged(masked(DType::i32, 4, 0, 1)));
}
