#include "passes/one_hot_pick.h"

#include <algorithm>
#include <map>
#include <optional>

#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

namespace {

/// Leaves read through masked sums at most: each is one more reduction over the row.
constexpr int kMaxMaskedSums = 4;
/// Ops of F visited at most: F is evaluated per row, not per element, so it stays small.
constexpr int kMaxPickedOps = 64;

bool isSplatConstant(const Node& n) {
  return n.kind == OpKind::Constant && n.attr<ConstantAttrs>().values.size() == 1;
}

bool isZero(const Node& n) { return isSplatConstant(n) && n.attr<ConstantAttrs>().values[0] == 0; }

/// The broadcast's dims with the picked axis dropped: where its operand's dims land in the
/// row's (kept) shape.
std::vector<int64_t> keptDims(const std::vector<int64_t>& dims, int64_t axis) {
  std::vector<int64_t> out;
  for (int64_t d : dims)
    out.push_back(d > axis ? d - 1 : d);
  return out;
}

/// One sum over `axis` of select(mask, F, 0), matched.
struct OneHotSum {
  int64_t axis = 0;
  int64_t length = 0; // the axis' (static) size: labels in [0, length) pick
  NodeId mask = -1;
  NodeId label = -1; // broadcast_in_dim of the label, constant along axis
  NodeId value = -1; // F
};

std::optional<OneHotSum> matchOneHotSum(const Graph& r, const Node& reduce, NodeId operand) {
  const auto& a = reduce.attr<ReduceAttrs>();
  if (a.kind != ReduceKind::Sum || a.axes.size() != 1) return std::nullopt;
  const Node& sel = r.node(operand);
  if (sel.kind != OpKind::Select || !isZero(r.node(sel.operands[2]))) return std::nullopt;
  const Node& mask = r.node(sel.operands[0]);
  if (mask.kind != OpKind::Compare || mask.attr<CompareAttrs>().dir != CompareDir::EQ)
    return std::nullopt;
  OneHotSum m;
  m.axis = a.axes[0];
  const Dim& length = sel.type.shape[size_t(m.axis)];
  if (!length.isStatic()) return std::nullopt;
  m.length = length.size();
  m.mask = mask.id;
  m.value = sel.operands[1];
  // One operand an i32 or i64 iota along the axis (distinct values, where i8 wraps: one match
  // per row at most),
  // the other a broadcast constant along it.
  for (int side = 0; side < 2; ++side) {
    const Node& iota = r.node(mask.operands[size_t(side)]);
    const Node& label = r.node(mask.operands[size_t(1 - side)]);
    if (iota.kind != OpKind::Iota || iota.attr<IotaAttrs>().axis != m.axis ||
        (iota.type.dtype != DType::i32 && iota.type.dtype != DType::i64) ||
        label.kind != OpKind::BroadcastInDim)
      continue;
    const auto& dims = label.attr<BroadcastAttrs>().dims;
    if (std::find(dims.begin(), dims.end(), m.axis) != dims.end()) continue;
    m.label = label.id;
    return m;
  }
  return std::nullopt;
}

/// Builds F' (the header's): F's value at each row's label, in the row's shape.
class Picker {
public:
  Picker(Rewriter& rw, const OneHotSum& m, const std::string& base)
      : rw_(rw), g_(rw.emitter()), m_(m), base_(base) {
    kept_ = g_.node(m.mask).type.shape;
    kept_.erase(kept_.begin() + m.axis);
  }

  /// F' for v, or nothing where F holds what the pass does not pick through.
  std::optional<NodeId> pick(NodeId v) {
    if (auto it = picked_.find(v); it != picked_.end()) return it->second;
    if (++visited_ > kMaxPickedOps) return std::nullopt;
    std::optional<NodeId> p = pickNew(v);
    if (p) picked_[v] = *p;
    return p;
  }

  /// Whether F read a value other than a constant or the label through a broadcast.
  bool readsRowStatistic() const { return readsStatistic_; }

  NodeId label() { return *pick(m_.label); }

private:
  std::string name(const std::string& tag) { return rw_.freshName(base_ + "." + tag); }

  std::optional<NodeId> pickNew(NodeId v) {
    const Node n = g_.node(v); // a copy: emitting ops moves the graph's nodes
    TensorType type{n.type.dtype, kept_};
    if (isSplatConstant(n))
      return g_.constant(n.type.dtype, kept_, n.attr<ConstantAttrs>().values, name("constant"));
    if (n.kind == OpKind::Iota) {
      int64_t axis = n.attr<IotaAttrs>().axis;
      if (axis != m_.axis) return g_.iota(n.type.dtype, kept_, axis > m_.axis ? axis - 1 : axis, name("iota"));
      NodeId label = this->label(); // iota along the axis at the label is the label
      return g_.node(label).type.dtype == n.type.dtype ? label : g_.convert(label, n.type.dtype, name("label"));
    }
    if (n.kind == OpKind::BroadcastInDim) {
      const auto& dims = n.attr<BroadcastAttrs>().dims;
      if (std::find(dims.begin(), dims.end(), m_.axis) == dims.end()) {
        NodeId x = n.operands[0];
        if (v != m_.label && !isSplatConstant(g_.node(x))) readsStatistic_ = true;
        std::vector<int64_t> to = keptDims(dims, m_.axis);
        bool identity = g_.node(x).type.shape == kept_;
        for (size_t i = 0; i < to.size() && identity; ++i)
          identity = to[i] == int64_t(i);
        return identity ? x : g_.broadcastInDim(x, kept_, to, name("broadcast"));
      }
    }
    if (isElementwise(n.kind)) {
      // Integer division at an unpicked row's garbage could trap the reference; not worth it.
      if ((n.kind == OpKind::Div || n.kind == OpKind::Rem) && !isFloat(n.type.dtype))
        return std::nullopt;
      std::vector<NodeId> operands;
      for (NodeId o : n.operands) {
        std::optional<NodeId> p = pick(o);
        if (!p) return std::nullopt;
        operands.push_back(*p);
      }
      return g_.add(n.kind, operands, n.attrs, type, name(std::string(opName(n.kind))));
    }
    // A value that varies along the axis: its one selected element, summed with zeros.
    if (isBool(n.type.dtype) || ++maskedSums_ > kMaxMaskedSums) return std::nullopt;
    NodeId zero = g_.constant(n.type.dtype, n.type.shape, {0.0}, name("zero"));
    NodeId only = g_.select(m_.mask, v, zero, name("masked"));
    return g_.reduce(ReduceKind::Sum, only, {m_.axis}, name("picked"));
  }

  Rewriter& rw_;
  Graph& g_;
  const OneHotSum& m_;
  std::string base_;
  Shape kept_;
  std::map<NodeId, NodeId> picked_;
  int visited_ = 0, maskedSums_ = 0;
  bool readsStatistic_ = false;
};

} // namespace

Graph pickThroughOneHot(const Graph& g) {
  bool any = false; // most graphs have none: no rebuild then
  for (const Node& n : g.nodes())
    any = any || (n.kind == OpKind::Reduce && matchOneHotSum(g, n, n.operands[0]));
  if (!any) return g;
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    if (n.kind != OpKind::Reduce) {
      rw.copy(n);
      continue;
    }
    std::optional<OneHotSum> m = matchOneHotSum(rw.result(), n, rw.mapped(n.operands[0]));
    if (!m) {
      rw.copy(n);
      continue;
    }
    // Built on a copy first: a graph that does not pick through keeps no half-built ops.
    Graph before = rw.result();
    Picker picker(rw, *m, n.name);
    std::optional<NodeId> value = picker.pick(m->value);
    if (!value || !picker.readsRowStatistic()) {
      rw.emitter() = std::move(before);
      rw.copy(n);
      continue;
    }
    Graph& r = rw.emitter();
    NodeId label = picker.label();
    DType lt = r.node(label).type.dtype;
    const Shape& kept = n.type.shape;
    NodeId low = r.compare(CompareDir::GE, label,
                           r.constant(lt, kept, {0.0}, rw.freshName(n.name + ".zero_label")),
                           rw.freshName(n.name + ".label_from_zero"));
    NodeId high = r.compare(CompareDir::LT, label,
                            r.constant(lt, kept, {double(m->length)}, rw.freshName(n.name + ".length")),
                            rw.freshName(n.name + ".label_below_length"));
    NodeId inside = r.binary(OpKind::And, low, high, rw.freshName(n.name + ".label_inside"));
    NodeId zero = r.constant(n.type.dtype, kept, {0.0}, rw.freshName(n.name + ".unpicked"));
    rw.replaceWithNew(n, OpKind::Select, {inside, *value, zero}, NoAttrs{});
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
