#include "passes/log_sum_exp.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "ir/log_sum_exp.h"
#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

namespace {

std::vector<int64_t> sortedAxes(const Node& reduce) {
  std::vector<int64_t> axes = reduce.attr<ReduceAttrs>().axes;
  std::sort(axes.begin(), axes.end());
  return axes;
}

/// The dims of `s` that are not a static 1, in order.
Shape withoutOnes(const Shape& s) {
  Shape out;
  for (const Dim& d : s)
    if (!d.isOne()) out.push_back(d);
  return out;
}

/// The max over `axes` of x that broadcast `b` spreads back over x's shape along those axes
/// (directly, or through a reshape that only adds or drops 1s: ONNX's keepdims), as a result
/// value; nullopt when b is anything else.
std::optional<NodeId> maxSpreadBack(const Graph& r, const Node& b, NodeId x,
                                    const std::vector<int64_t>& axes) {
  if (b.kind != OpKind::BroadcastInDim) return std::nullopt;
  const Shape& xs = r.node(x).type.shape;
  const Node* source = &r.node(b.operands[0]);
  const Shape& spread = source->type.shape;
  const auto& dims = b.attr<BroadcastAttrs>().dims;
  // The operand's dims that are not stretched 1s land, in order, on x's kept dims that are not
  // 1s themselves.
  std::vector<int64_t> landed, kept;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!spread[i].isOne()) landed.push_back(dims[i]);
  for (size_t d = 0; d < xs.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(d)) && !xs[d].isOne())
      kept.push_back(int64_t(d));
  if (landed != kept) return std::nullopt;
  if (source->kind == OpKind::Reshape) {
    const Node& inner = r.node(source->operands[0]);
    if (withoutOnes(inner.type.shape) != withoutOnes(spread)) return std::nullopt;
    source = &inner;
  }
  if (source->kind != OpKind::Reduce || source->operands[0] != x) return std::nullopt;
  if (source->attr<ReduceAttrs>().kind != ReduceKind::Max || sortedAxes(*source) != axes)
    return std::nullopt;
  return source->id;
}

/// Whether `axes` (sorted) are the last of a shape of `rank` dims: a row reduce's.
bool trailing(const std::vector<int64_t>& axes, size_t rank) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != int64_t(rank - axes.size() + i)) return false;
  return true;
}

/// logsumexp over `axes` of x as m0 + log(sum(exp(x - m0))), m0 = max over the axes where
/// finite, else 0 (so +inf, -inf and NaN rows give what logsumexp gives: x - m would be NaN
/// where both are infinite). In f32 for f16 and bf16 x, rounded once.
NodeId emitTwoPass(Graph& g, NodeId x, const std::vector<int64_t>& axes,
                   const std::function<std::string(const std::string&)>& name) {
  const DType t = g.node(x).type.dtype;
  const NodeId xc = dtypeBytes(t) < 4 ? g.convert(x, DType::f32, name("x_f32")) : x;
  const DType c = g.node(xc).type.dtype;
  const Shape xs = g.node(xc).type.shape;
  std::vector<int64_t> kept;
  for (size_t d = 0; d < xs.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(d))) kept.push_back(int64_t(d));
  const NodeId m = g.reduce(ReduceKind::Max, xc, axes, name("max"));
  const Shape ms = g.node(m).type.shape;
  auto splat = [&](double v, const std::string& what) {
    return g.broadcastInDim(g.scalar(c, v, name(what)), ms, {}, name(what + "_b"));
  };
  const NodeId finite = g.compare(CompareDir::LT, g.unary(OpKind::Abs, m, name("max_abs")),
                                  splat(std::numeric_limits<double>::infinity(), "inf"),
                                  name("max_finite"));
  const NodeId m0 = g.select(finite, m, splat(0.0, "zero"), name("shift"));
  const NodeId e = g.unary(
      OpKind::Exp, g.binary(OpKind::Sub, xc, g.broadcastInDim(m0, xs, kept, name("shift_b")),
                            name("shifted")),
      name("exp"));
  const NodeId sum = g.reduce(ReduceKind::Sum, e, axes, name("sum"));
  const NodeId lse =
      g.binary(OpKind::Add, m0, g.unary(OpKind::Log, sum, name("log_sum")), name("lse"));
  return c == t ? lse : g.convert(lse, t, name("lse_rounded"));
}

/// Whether every one of `axes` of `s` is a static dim of at least one element.
bool staticNonEmpty(const Shape& s, const std::vector<int64_t>& axes) {
  return std::all_of(axes.begin(), axes.end(), [&](int64_t a) {
    return s[size_t(a)].isStatic() && s[size_t(a)].size() > 0;
  });
}

/// (logsumexp over `axes` of x) - m, emitted, where z = x - broadcast(m) and m is x's max over
/// the same axes; nullopt when z is anything else. Only over axes known to hold elements: over
/// none, m is -inf, and -inf - (-inf) would be NaN where the graph as written gives log(0) =
/// -inf.
std::optional<NodeId> emitUnshifted(Rewriter& rw, NodeId z, const std::vector<int64_t>& axes,
                                    const std::string& name) {
  const Graph& r = rw.result();
  const Node& zn = r.node(z);
  if (zn.kind != OpKind::Sub || !staticNonEmpty(zn.type.shape, axes) ||
      !trailing(axes, zn.type.shape.size()))
    return std::nullopt;
  auto m = maxSpreadBack(r, r.node(zn.operands[1]), zn.operands[0], axes);
  if (!m) return std::nullopt;
  return logSumBelowMax(rw.emitter(), zn.operands[0], *m, axes, [&](const std::string& base) {
    return rw.freshName(name + "." + base);
  });
}

} // namespace

Graph recognizeLogSumExp(const Graph& g) {
  Rewriter rw(g);
  const auto users = g.users();
  auto onlyReader = [&](NodeId v) { return users[size_t(v)].size() == 1 && !g.isOutput(v); };
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    if (n.kind == OpKind::Log && isFloat(n.type.dtype)) {
      // log(sum(exp(z))), or log of the sum's keepdims reshape
      const Node* sum = &g.node(n.operands[0]);
      const Node* reshape = nullptr;
      if (sum->kind == OpKind::Reshape && onlyReader(sum->id)) {
        reshape = sum;
        sum = &g.node(sum->operands[0]);
      }
      // Only where z = x - max x: its exponentials lie in (0, 1] with a 1 among them, so the
      // sum neither overflows nor underflows and logsumexp(x) - max gives what the graph as
      // written does. Of any other z, log(sum(exp(z))) is inf where exp overflows and -inf
      // where every exp underflows (an f16 row below -17), and logsumexp(z) would be finite.
      if (sum->kind == OpKind::Reduce && sum->attr<ReduceAttrs>().kind == ReduceKind::Sum &&
          onlyReader(sum->id) && g.node(sum->operands[0]).kind == OpKind::Exp) {
        NodeId z = rw.mapped(g.node(sum->operands[0]).operands[0]);
        if (std::optional<NodeId> lse = emitUnshifted(rw, z, sortedAxes(*sum), n.name + ".lse")) {
          NodeId out = reshape ? rw.emitter().reshape(*lse, n.type.shape,
                                                      rw.freshName(n.name + ".lse"))
                               : *lse;
          rw.replaceWith(n, out);
          continue;
        }
      }
    }
    if (n.kind == OpKind::Reduce && n.attr<ReduceAttrs>().kind == ReduceKind::LogSumExp) {
      const std::vector<int64_t> axes = sortedAxes(n);
      if (!trailing(axes, g.node(n.operands[0]).type.shape.size())) {
        rw.replaceWith(n, emitTwoPass(rw.emitter(), rw.mapped(n.operands[0]), axes,
                                      [&](const std::string& base) {
                                        return rw.freshName(n.name + "." + base);
                                      }));
        continue;
      }
      if (auto unshifted = emitUnshifted(rw, rw.mapped(n.operands[0]), axes, n.name)) {
        rw.replaceWith(n, *unshifted);
        continue;
      }
    }
    rw.copy(n);
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
