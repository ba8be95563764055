#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/log_sum_exp.h"
#include "passes/pipeline.h"
#include "passes/rewriter.h"

using namespace weft;
using namespace weft::ir;

namespace {

constexpr int64_t kRows = 5, kCols = 12;

/// The reduces of `g` of kind k.
int countReduces(const Graph& g, ReduceKind k) {
  int n = 0;
  for (const Node& node : g.nodes())
    n += node.kind == OpKind::Reduce && node.attr<ReduceAttrs>().kind == k;
  return n;
}

int countOps(const Graph& g, OpKind k) {
  int n = 0;
  for (const Node& node : g.nodes())
    n += node.kind == k;
  return n;
}

/// Whether every logsumexp reads a parameter (not x - max: its max is a sibling), directly or
/// converted to f32.
bool logSumExpsReadParameters(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (n.kind != OpKind::Reduce || n.attr<ReduceAttrs>().kind != ReduceKind::LogSumExp) continue;
    const Node* read = &g.node(n.operands[0]);
    if (read->kind == OpKind::Convert) read = &g.node(read->operands[0]);
    if (read->kind != OpKind::Parameter) return false;
  }
  return true;
}

/// x [kRows, kCols]: ordinary values, then rows with +inf, NaN, -inf, all -inf, and values
/// whose exp overflows f32.
HostTensor rowsOf(DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  HostTensor x(t, {kRows, kCols});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, std::sin(double(i) * 1.3) * 3);
  x.set(1 * kCols + 4, inf);
  x.set(2 * kCols + 7, std::nan(""));
  x.set(3 * kCols + 1, -inf);
  for (int64_t c = 0; c < kCols; ++c)
    x.set(4 * kCols + c, c == 0 ? 95.0 : 90.0 - double(c)); // exp(95) overflows f32
  return x;
}

/// The hand-decomposed log-softmax over the rows of x: (x - m) - log(sum(exp(x - m))), m the
/// row max, with `keepdims` as ONNX spells it (reduces reshaped to [rows, 1], broadcasts that
/// stretch the 1).
Graph decomposedLogSoftmax(DType t, bool keepdims) {
  Graph g;
  Shape s{Dim(kRows), Dim(kCols)};
  NodeId x = g.parameter("x", {t, s});
  auto back = [&](NodeId rowValue, const std::string& name) {
    if (!keepdims) return g.broadcastInDim(rowValue, s, {0}, name);
    NodeId kept = g.reshape(rowValue, {Dim(kRows), Dim(1)});
    return g.broadcastInDim(kept, s, {0, 1}, name);
  };
  NodeId m = g.reduce(ReduceKind::Max, x, {1}, "m");
  NodeId shifted = g.binary(OpKind::Sub, x, back(m, "m_b"), "shifted");
  NodeId sum = g.reduce(ReduceKind::Sum, g.unary(OpKind::Exp, shifted, "e"), {1}, "sum");
  NodeId logSum = keepdims ? g.unary(OpKind::Log, g.reshape(sum, {Dim(kRows), Dim(1)}), "log_sum")
                           : g.unary(OpKind::Log, sum, "log_sum");
  NodeId logSumBack = keepdims ? g.broadcastInDim(logSum, s, {0, 1}, "log_sum_b")
                               : g.broadcastInDim(logSum, s, {0}, "log_sum_b");
  g.addOutput(g.binary(OpKind::Sub, shifted, logSumBack, "logp"));
  return g;
}

/// a's and b's outputs agree within `relative` x max(1, |value|) (rounding of the output's
/// type) plus `noise` x (1 + the largest finite |input|): a logsumexp rounded at the magnitude
/// of the row's max (runtime/conditioning.cc).
void checkClose(const Graph& a, const Graph& b, const std::vector<HostTensor>& in,
                double relative, double noise) {
  double largest = 0;
  for (const HostTensor& t : in)
    for (int64_t i = 0; i < t.numElements(); ++i)
      if (std::isfinite(t.get(i))) largest = std::max(largest, std::abs(t.get(i)));
  std::vector<HostTensor> ea = interpret(a, in), eb = interpret(b, in);
  REQUIRE(ea.size() == eb.size());
  for (size_t o = 0; o < ea.size(); ++o)
    for (int64_t i = 0; i < ea[o].numElements(); ++i) {
      double x = ea[o].get(i), y = eb[o].get(i);
      CAPTURE(o, i, x, y);
      if (std::isnan(x) || std::isinf(x))
        CHECK((x == y || (std::isnan(x) && std::isnan(y))));
      else
        CHECK(std::abs(x - y) <= relative * std::max(1.0, std::abs(x)) + noise * (1 + largest));
    }
}

} // namespace

TEST_CASE("log-sum-exp: a hand-decomposed log-softmax becomes max and logsumexp, siblings",
          "[passes][log_sum_exp]") {
  for (bool keepdims : {false, true})
    for (DType t : {DType::f32, DType::f16}) {
      CAPTURE(keepdims, t);
      Graph g = decomposedLogSoftmax(t, keepdims);
      Graph rewritten = passes::recognizeLogSumExp(g);
      verify(rewritten);
      Graph canonical = passes::canonicalize(g);
      // One logsumexp of x itself, next to the max: no exp, no sum of exps, no log left.
      CHECK(countReduces(canonical, ReduceKind::LogSumExp) == 1);
      CHECK(countReduces(canonical, ReduceKind::Max) == 1);
      CHECK(countReduces(canonical, ReduceKind::Sum) == 0);
      CHECK(countOps(canonical, OpKind::Exp) == 0);
      CHECK(countOps(canonical, OpKind::Log) == 0);
      CHECK(logSumExpsReadParameters(canonical));
      // The same values: the source never overflows here (it subtracts the max first), and
      // the rows of +inf, NaN and -inf give what the source gives. In f16 within two of the
      // output's ulps, though the row of 95 has an ulp of 0.06: the log of the row's sum is
      // taken in f32 before it is rounded (ir/log_sum_exp.h).
      if (t == DType::f16)
        checkClose(g, canonical, {rowsOf(t)}, 2 * std::ldexp(1.0, -10), 0);
      else
        checkClose(g, canonical, {rowsOf(t)}, 1e-6, 1e-7);
      // A fixed point.
      CHECK(passes::sameGraph(passes::recognizeLogSumExp(canonical), canonical));
    }
}

TEST_CASE("log-sum-exp: log(sum(exp(z))) without a max stays, with its overflow and underflow",
          "[passes][log_sum_exp]") {
  // As written, exp(95) overflows f32 (+inf) and a row of -200 underflows to log(0) = -inf;
  // a logsumexp would give 95.0... and -197.5: other values than the graph's, so none.
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim(kRows), Dim(kCols)}});
  NodeId sum = g.reduce(ReduceKind::Sum, g.unary(OpKind::Exp, x), {1});
  g.addOutput(g.unary(OpKind::Log, sum, "lse"));
  Graph rewritten = passes::canonicalize(g);
  CHECK(countReduces(rewritten, ReduceKind::LogSumExp) == 0);
  HostTensor in = rowsOf(DType::f32);
  for (int64_t c = 0; c < kCols; ++c)
    in.set(0 * kCols + c, -200.0 - double(c));
  std::vector<HostTensor> before = interpret(g, {in}), after = interpret(rewritten, {in});
  CHECK(std::isinf(after[0].get(4)));
  CHECK(after[0].get(0) == -std::numeric_limits<double>::infinity());
  for (int64_t r = 0; r < kRows; ++r)
    CHECK((after[0].get(r) == before[0].get(r) ||
           (std::isnan(after[0].get(r)) && std::isnan(before[0].get(r)))));
}

TEST_CASE("log-sum-exp: a log-softmax over an empty axis keeps the source's -inf",
          "[passes][log_sum_exp]") {
  // Over no elements the max is -inf and log(sum(exp(x - max))) is log(0) = -inf; lse(x) - max
  // would be -inf - (-inf) = NaN. Such axes (and symbolic ones, which may bind to 0) stay.
  for (Dim cols : {Dim(0), Dim::symbol("C")}) {
    Graph g;
    Shape s{Dim(4), cols};
    NodeId x = g.parameter("x", {DType::f32, s});
    NodeId m = g.reduce(ReduceKind::Max, x, {1});
    NodeId z = g.binary(OpKind::Sub, x, g.broadcastInDim(m, s, {0}));
    g.addOutput(g.unary(OpKind::Log, g.reduce(ReduceKind::Sum, g.unary(OpKind::Exp, z), {1}), "y"));
    Graph rewritten = passes::canonicalize(g);
    CHECK(countReduces(rewritten, ReduceKind::LogSumExp) == 0);
    if (cols.isStatic()) {
      std::vector<HostTensor> out = interpret(rewritten, {HostTensor(DType::f32, {4, 0})});
      for (int64_t r = 0; r < 4; ++r)
        CHECK(out[0].get(r) == -std::numeric_limits<double>::infinity());
    }
  }
}

TEST_CASE("log-sum-exp: a logsumexp down the columns becomes max, then a sum below it",
          "[passes][log_sum_exp]") {
  // Over leading axes the reduce would be combined one partial at a time (codegen's column
  // and across-tiles paths), rounding at the magnitude of x each step; max + log(sum(exp(x -
  // max))) sums values of at most 1 instead. The columns of rowsOf' transpose hold +inf, NaN,
  // -inf and exp overflow, and a last column of -inf: each gives what the logsumexp gives.
  for (DType t : {DType::f32, DType::f16}) {
    CAPTURE(t);
    Graph g;
    NodeId x = g.parameter("x", {t, {Dim(kCols), Dim(kRows + 1)}});
    g.addOutput(g.reduce(ReduceKind::LogSumExp, x, {0}, "lse"));
    Graph rewritten = passes::canonicalize(g);
    verify(rewritten);
    CHECK(countReduces(rewritten, ReduceKind::LogSumExp) == 0);
    CHECK(countReduces(rewritten, ReduceKind::Max) == 1);
    CHECK(countReduces(rewritten, ReduceKind::Sum) == 1);
    HostTensor rows = rowsOf(t), columns(t, {kCols, kRows + 1});
    for (int64_t c = 0; c < kCols; ++c) {
      for (int64_t r = 0; r < kRows; ++r)
        columns.set(c * (kRows + 1) + r, rows.get(r * kCols + c));
      columns.set(c * (kRows + 1) + kRows, -std::numeric_limits<double>::infinity());
    }
    if (t == DType::f16)
      checkClose(g, rewritten, {columns}, 2 * std::ldexp(1.0, -10), 0);
    else
      checkClose(g, rewritten, {columns}, 1e-6, 1e-7);
    CHECK(passes::sameGraph(passes::recognizeLogSumExp(rewritten), rewritten));
  }
}

TEST_CASE("log-sum-exp: what does not match stays as it was", "[passes][log_sum_exp]") {
  auto unchanged = [](const Graph& g) {
    return passes::sameGraph(passes::recognizeLogSumExp(g), g);
  };
  Shape s{Dim(kRows), Dim(kCols)};
  // A softmax divides by the sum too: the sum stays, so no logsumexp beside it.
  {
    Graph g;
    NodeId x = g.parameter("x", {DType::f32, s});
    NodeId e = g.unary(OpKind::Exp, x);
    NodeId sum = g.reduce(ReduceKind::Sum, e, {1});
    g.setOutputs({g.unary(OpKind::Log, sum),
                  g.binary(OpKind::Div, e, g.broadcastInDim(sum, s, {0}))});
    CHECK(unchanged(g));
  }
  // A log of a sum of something else.
  {
    Graph g;
    NodeId x = g.parameter("x", {DType::f32, s});
    g.addOutput(g.unary(OpKind::Log, g.reduce(ReduceKind::Sum, g.unary(OpKind::Abs, x), {1})));
    CHECK(unchanged(g));
  }
  // logsumexp over axis 1 of x - broadcast(reduce `kind` over `axis`): only the max over the
  // same axis is unshifted.
  auto shifted = [&](ReduceKind kind, int64_t axis) {
    Graph g;
    NodeId x = g.parameter("x", {DType::f32, s});
    NodeId m = g.reduce(kind, x, {axis});
    NodeId z = g.binary(OpKind::Sub, x, g.broadcastInDim(m, s, {1 - axis}));
    g.addOutput(g.reduce(ReduceKind::LogSumExp, z, {1}));
    return g;
  };
  CHECK_FALSE(unchanged(shifted(ReduceKind::Max, 1)));
  CHECK(unchanged(shifted(ReduceKind::Max, 0))); // over the other axis: no sibling
  CHECK(unchanged(shifted(ReduceKind::Min, 1))); // x - min is not x - max
}
