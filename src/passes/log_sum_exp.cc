#include "passes/log_sum_exp.h"

#include <algorithm>
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

/// (logsumexp over `axes` of x) - m, emitted, where z = x - broadcast(m) and m is x's max over
/// the same axes; nullopt when z is anything else.
std::optional<NodeId> emitUnshifted(Rewriter& rw, NodeId z, const std::vector<int64_t>& axes,
                                    const std::string& name) {
  const Graph& r = rw.result();
  const Node& zn = r.node(z);
  if (zn.kind != OpKind::Sub) return std::nullopt;
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
      if (sum->kind == OpKind::Reduce && sum->attr<ReduceAttrs>().kind == ReduceKind::Sum &&
          onlyReader(sum->id) && g.node(sum->operands[0]).kind == OpKind::Exp) {
        NodeId z = rw.mapped(g.node(sum->operands[0]).operands[0]);
        const std::vector<int64_t> axes = sortedAxes(*sum);
        std::optional<NodeId> unshifted = emitUnshifted(rw, z, axes, n.name + ".lse");
        NodeId lse = unshifted ? *unshifted
                               : rw.emitter().reduce(ReduceKind::LogSumExp, z, axes,
                                                     rw.freshName(n.name + ".lse"));
        if (reshape) lse = rw.emitter().reshape(lse, n.type.shape, rw.freshName(n.name + ".lse"));
        rw.replaceWith(n, lse);
        continue;
      }
    }
    if (n.kind == OpKind::Reduce && n.attr<ReduceAttrs>().kind == ReduceKind::LogSumExp)
      if (auto unshifted = emitUnshifted(rw, rw.mapped(n.operands[0]), sortedAxes(n), n.name)) {
        rw.replaceWith(n, *unshifted);
        continue;
      }
    rw.copy(n);
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
