#include "autodiff/adjoints.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "weft/error.h"

namespace weft::autodiff {

std::string unusedName(const ir::Graph& g, const std::string& base) {
  if (!g.find(base)) return base;
  for (int k = 1;; ++k)
    if (std::string n = fmt::format("{}.{}", base, k); !g.find(n)) return n;
}

using namespace ir;

namespace {

/// Builds the adjoint's nodes under names "d_<y>.<k>", so that a training graph written as
/// JSON says which forward value each backward value belongs to.
class Builder {
public:
  Builder(Graph& g, const Node& y) : g_(g), prefix_("d_" + y.name) {}

  std::string name() {
    for (;;) {
      std::string n = fmt::format("{}.{}", prefix_, counter_++);
      if (!g_.find(n)) return n;
    }
  }
  const TensorType& type(NodeId v) const { return g_.node(v).type; }
  const Shape& shape(NodeId v) const { return g_.node(v).type.shape; }

  /// A splat constant of v's type (symbolic shapes included).
  NodeId splatLike(NodeId v, double value) {
    return g_.constant(type(v).dtype, shape(v), {value}, name());
  }
  NodeId un(OpKind k, NodeId x) { return g_.unary(k, x, name()); }
  NodeId bin(OpKind k, NodeId a, NodeId b) { return g_.binary(k, a, b, name()); }
  NodeId mul(NodeId a, NodeId b) { return bin(OpKind::Mul, a, b); }
  NodeId div(NodeId a, NodeId b) { return bin(OpKind::Div, a, b); }
  NodeId sub(NodeId a, NodeId b) { return bin(OpKind::Sub, a, b); }
  NodeId neg(NodeId a) { return un(OpKind::Neg, a); }
  NodeId scale(NodeId a, double c) { return mul(a, splatLike(a, c)); }
  NodeId cmp(CompareDir d, NodeId a, NodeId b) { return g_.compare(d, a, b, name()); }
  /// dy where `pred` holds, 0 elsewhere (and the other way round with `onTrue` false).
  NodeId mask(NodeId pred, NodeId dy, bool onTrue = true) {
    NodeId zero = splatLike(dy, 0.0);
    return onTrue ? g_.select(pred, dy, zero, name()) : g_.select(pred, zero, dy, name());
  }
  NodeId convert(NodeId x, DType to) { return g_.convert(x, to, name()); }
  NodeId reshape(NodeId x, const Shape& s) {
    return shape(x) == s ? x : g_.reshape(x, s, name());
  }
  NodeId broadcast(NodeId x, const Shape& s, std::vector<int64_t> dims) {
    return g_.broadcastInDim(x, s, std::move(dims), name());
  }
  NodeId reduce(ReduceKind kind, NodeId x, std::vector<int64_t> axes) {
    return g_.reduce(kind, x, std::move(axes), name());
  }
  NodeId reduceSum(NodeId x, std::vector<int64_t> axes) {
    return axes.empty() ? x : g_.reduce(ReduceKind::Sum, x, std::move(axes), name());
  }
  NodeId transpose(NodeId x, std::vector<int64_t> perm) {
    return g_.transpose(x, std::move(perm), name());
  }
  NodeId slice(NodeId x, std::vector<int64_t> starts, std::vector<int64_t> limits) {
    std::vector<int64_t> strides(starts.size(), 1);
    return g_.slice(x, std::move(starts), std::move(limits), std::move(strides), name());
  }
  NodeId pad(NodeId x, std::vector<int64_t> low, std::vector<int64_t> high) {
    bool none = std::all_of(low.begin(), low.end(), [](int64_t v) { return v == 0; }) &&
                std::all_of(high.begin(), high.end(), [](int64_t v) { return v == 0; });
    return none ? x : g_.pad(x, std::move(low), std::move(high), 0.0, name());
  }
  NodeId dot(NodeId a, NodeId b) { return g_.dot(a, b, name()); }
  NodeId select(NodeId p, NodeId t, NodeId f) { return g_.select(p, t, f, name()); }
  NodeId iota(DType t, const Shape& s, int64_t axis) { return g_.iota(t, s, axis, name()); }

private:
  Graph& g_;
  std::string prefix_;
  int counter_ = 0;
};

/// The axes of a rank-`rank` value that a reduce over `axes` keeps, in order: where its
/// result's dims come from, so the broadcast that undoes the reduce.
std::vector<int64_t> keptAxes(size_t rank, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) kept.push_back(d);
  return kept;
}

/// Swaps the last two axes (dot's operands, transposed as matrices).
NodeId transposeLast(Builder& b, NodeId x) {
  std::vector<int64_t> perm(b.shape(x).size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return b.transpose(x, perm);
}

/// Elements of a shape, a symbolic dim counted as kAssumedSymbol: a symbol is a batch or row
/// count, large beside the static feature dims it meets in a dot.
constexpr int64_t kAssumedSymbol = 4096;
double elements(const Shape& s) {
  double n = 1;
  for (const Dim& d : s) n *= d.isStatic() ? static_cast<double>(d.size()) : kAssumedSymbol;
  return n;
}

/// dot's adjoint, C = A B with A [.., M, K], B [.., K, N]: dA = dC B^T and dB = A^T dC. The IR's
/// dot has no transposed operands, so each form materialises a transposed copy, and a
/// transpose writes across rows (a sector per element where the rows are long). Each gradient
/// has a second form: dA = (B dC^T)^T and dB = (dC^T A)^T, which transpose dC [M, N] (shared by
/// both) and the result instead of the operand. The form that transposes fewer elements is
/// taken: for a layer's weight gradient dB with many rows M and few outputs N (a classifier's
/// last layer, [M, 512] x [512, 64]), dC^T and the [64, 512] result are a fraction of A^T.
std::vector<NodeId> dotAdjoint(Builder& b, NodeId a, NodeId w, NodeId dy, bool wantA, bool wantB) {
  double ea = elements(b.shape(a)), ew = elements(b.shape(w)), ec = elements(b.shape(dy));
  NodeId dyT = -1;
  auto transposedDy = [&] { return dyT >= 0 ? dyT : (dyT = transposeLast(b, dy)); };
  std::vector<NodeId> d(2, -1);
  if (wantA)
    d[0] = ew <= ec + ea ? b.dot(dy, transposeLast(b, w))
                         : transposeLast(b, b.dot(w, transposedDy()));
  if (wantB)
    d[1] = ea <= ec + ew ? b.dot(transposeLast(b, a), dy)
                         : transposeLast(b, b.dot(transposedDy(), a));
  return d;
}

/// broadcast_in_dim's adjoint: dy summed over the result axes the operand does not supply
/// (new axes and stretched size-1 ones), then reshaped to the operand (its size-1 dims back).
NodeId broadcastAdjoint(Builder& b, const Node& y, const Node& x, NodeId dy) {
  const auto& dims = y.attr<BroadcastAttrs>().dims;
  const Shape& out = y.type.shape;
  std::vector<bool> supplied(out.size(), false);
  for (size_t i = 0; i < dims.size(); ++i)
    if (x.type.shape[i] == out[static_cast<size_t>(dims[i])]) supplied[static_cast<size_t>(dims[i])] = true;
  std::vector<int64_t> summed;
  for (size_t d = 0; d < out.size(); ++d)
    if (!supplied[d]) summed.push_back(static_cast<int64_t>(d));
  return b.reshape(b.reduceSum(dy, summed), x.type.shape);
}

/// slice's adjoint: dy put back where the slice read it, zeros elsewhere. A stride s > 1
/// first interleaves s - 1 zeros after each element (reshape to [.., n, 1, ..], pad the new
/// axis to s, merge to n * s, cut the trailing s - 1), then one pad restores the margins.
NodeId sliceAdjoint(Builder& b, const Node& y, const Node& x, NodeId dy) {
  const auto& a = y.attr<SliceAttrs>();
  const Shape& in = x.type.shape;
  size_t rank = in.size();
  for (const Dim& d : y.type.shape)
    if (d.isStatic() && d.size() == 0) return b.splatLike(x.id, 0.0); // nothing was read
  NodeId r = dy;
  for (size_t i = 0; i < rank; ++i) {
    int64_t s = a.strides[i];
    if (s == 1) continue; // strided axes are static (inferSlice)
    Shape cur = b.shape(r);
    int64_t n = cur[i].size();
    Shape spread = cur;
    spread.insert(spread.begin() + static_cast<std::ptrdiff_t>(i) + 1, Dim(1));
    std::vector<int64_t> low(rank + 1, 0), high(rank + 1, 0);
    high[i + 1] = s - 1;
    NodeId padded = b.pad(b.reshape(r, spread), low, high);
    Shape merged = cur;
    merged[i] = Dim(n * s);
    NodeId flat = b.reshape(padded, merged);
    std::vector<int64_t> starts(rank, 0), limits(rank, -1);
    limits[i] = (n - 1) * s + 1;
    r = b.slice(flat, starts, limits);
  }
  std::vector<int64_t> low(rank, 0), high(rank, 0);
  const Shape& spanned = b.shape(r);
  for (size_t i = 0; i < rank; ++i) {
    if (!in[i].isStatic()) continue; // symbolic axes are taken whole
    low[i] = a.starts[i];
    high[i] = in[i].size() - a.starts[i] - spanned[i].size();
  }
  return b.pad(r, low, high);
}

/// pad's adjoint: the operand's window of dy (symbolic axes are never padded).
NodeId padAdjoint(Builder& b, const Node& y, const Node& x, NodeId dy) {
  const auto& a = y.attr<PadAttrs>();
  const Shape& in = x.type.shape;
  std::vector<int64_t> starts(in.size(), 0), limits(in.size(), -1);
  bool identity = true;
  for (size_t i = 0; i < in.size(); ++i) {
    if (a.low[i] == 0 && a.high[i] == 0) continue;
    identity = false;
    starts[i] = a.low[i];
    limits[i] = a.low[i] + in[i].size();
  }
  return identity ? dy : b.slice(dy, starts, limits);
}

/// concatenate's adjoint for operand k: its part of dy along the axis. Static sizes slice at
/// their offsets; equal symbolic sizes (concatenating n values of size D gives n*D) reshape
/// the axis to [n, D] and slice row k; anything else cannot be cut and is an InputError.
NodeId concatAdjoint(Builder& b, const Graph& g, const Node& y, size_t k, NodeId dy) {
  auto axis = static_cast<size_t>(y.attr<ConcatAttrs>().axis);
  size_t rank = y.type.shape.size();
  bool allStatic = true, allEqual = true;
  const Dim& first = g.node(y.operands[0]).type.shape[axis];
  for (NodeId o : y.operands) {
    const Dim& d = g.node(o).type.shape[axis];
    allStatic = allStatic && d.isStatic();
    allEqual = allEqual && d == first;
  }
  const Shape xs = g.node(y.operands[k]).type.shape; // a copy: g grows below
  std::vector<int64_t> starts(rank, 0), limits(rank, -1);
  if (allStatic) {
    int64_t offset = 0;
    for (size_t j = 0; j < k; ++j) offset += g.node(y.operands[j]).type.shape[axis].size();
    starts[axis] = offset;
    limits[axis] = offset + xs[axis].size();
    return b.slice(dy, starts, limits);
  }
  if (!allEqual)
    throw InputError(fmt::format("{}: cannot differentiate: concatenated sizes along axis {} are "
                                 "symbolic and unequal, so the gradient cannot be cut back apart",
                                 describe(y), axis));
  Shape split = y.type.shape;
  split[axis] = first;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(axis),
               Dim(static_cast<int64_t>(y.operands.size())));
  starts.insert(starts.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(k));
  limits.insert(limits.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(k) + 1);
  return b.reshape(b.slice(b.reshape(dy, split), starts, limits), xs);
}

/// gather's adjoint for its operand: each of dy's elements added at the position it was read
/// from (none for an index out of range). Written with IR primitives as a one-hot sum: dy
/// spread over the gathered axes' sizes, kept where the index operands name that position,
/// summed over the result dims no operand axis maps to, then put in the operand's axis order.
/// Costs |dy| x the gathered axes' sizes; a scatter-add op would cost |dy|.
NodeId gatherAdjoint(Builder& b, const Node& y, const Node& x, NodeId dy) {
  const auto& a = y.attr<GatherAttrs>();
  const Shape& out = y.type.shape;
  size_t q = out.size(), k = a.axes.size(), rank = x.type.shape.size();
  Shape wide = out;
  for (int64_t axis : a.axes)
    wide.push_back(x.type.shape[static_cast<size_t>(axis)]);
  std::vector<int64_t> lead(q);
  std::iota(lead.begin(), lead.end(), 0);
  NodeId hot = -1;
  for (size_t j = 0; j < k; ++j) {
    NodeId idx = y.operands[j + 1];
    NodeId at = b.cmp(CompareDir::EQ, b.broadcast(idx, wide, lead),
                      b.iota(b.type(idx).dtype, wide, static_cast<int64_t>(q + j)));
    hot = hot < 0 ? at : b.bin(OpKind::And, hot, at);
  }
  NodeId spread = b.mask(hot, b.broadcast(dy, wide, lead));
  std::vector<bool> mapped(q, false);
  for (int64_t r : a.dims)
    mapped[static_cast<size_t>(r)] = true;
  std::vector<int64_t> summed, kept;
  for (size_t r = 0; r < q; ++r)
    (mapped[r] ? kept : summed).push_back(static_cast<int64_t>(r));
  NodeId reduced = b.reduceSum(spread, summed);
  // reduced's axes: the kept result dims in order, then the gathered axes in `axes` order.
  std::vector<int64_t> resultDim = gatherResultDims(a, rank);
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) {
    auto at = std::find(a.axes.begin(), a.axes.end(), static_cast<int64_t>(d));
    perm[d] = at != a.axes.end()
                  ? static_cast<int64_t>(kept.size()) + (at - a.axes.begin())
                  : std::find(kept.begin(), kept.end(), resultDim[d]) - kept.begin();
  }
  bool identity = true;
  for (size_t d = 0; d < rank; ++d)
    identity = identity && perm[d] == static_cast<int64_t>(d);
  return identity ? reduced : b.transpose(reduced, perm);
}

/// reduce's adjoint. sum: dy broadcast back. max/min: dy shared evenly among the elements
/// equal to the result (a tie splits it, as numpy-style amax gradients do). prod: dy * y / x.
/// logsumexp: dy * softmax(x) = dy * exp(x - m) / exp(y - m), m = max(x) (log-softmax's own max,
/// merged by CSE): x - m and the row's sum of exponentials keep their precision where a
/// low-precision x (f16 under --amp) would round the broadcast y itself.
NodeId reduceAdjoint(Builder& b, const Node& y, const Node& x, NodeId dy) {
  const auto& a = y.attr<ReduceAttrs>();
  const Shape& in = x.type.shape;
  std::vector<int64_t> kept = keptAxes(in.size(), a.axes);
  switch (a.kind) {
  case ReduceKind::Sum:
    return b.broadcast(dy, in, kept);
  case ReduceKind::Max:
  case ReduceKind::Min: {
    NodeId hit = b.cmp(CompareDir::EQ, x.id, b.broadcast(y.id, in, kept));
    NodeId count = b.reduceSum(b.convert(hit, y.type.dtype), a.axes);
    return b.mask(hit, b.broadcast(b.div(dy, count), in, kept));
  }
  case ReduceKind::Prod:
    return b.div(b.broadcast(b.mul(dy, y.id), in, kept), x.id);
  case ReduceKind::LogSumExp: {
    NodeId max = b.reduce(ReduceKind::Max, x.id, a.axes);
    NodeId e = b.un(OpKind::Exp, b.sub(x.id, b.broadcast(max, in, kept)));
    NodeId sum = b.un(OpKind::Exp, b.sub(y.id, max));
    return b.mul(b.broadcast(b.div(dy, sum), in, kept), e);
  }
  case ReduceKind::Any:
  case ReduceKind::All:
    return -1; // bool: never asked (want is false for bool operands)
  }
  return -1;
}

} // namespace

bool passesGradient(OpKind k) {
  switch (k) {
  case OpKind::Parameter:
  case OpKind::Constant:
  case OpKind::Iota:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Sign:
  case OpKind::Not:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Compare:
    return false;
  case OpKind::Neg: case OpKind::Abs: case OpKind::Exp: case OpKind::Log: case OpKind::Tanh:
  case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Erf: case OpKind::Sigmoid:
  case OpKind::Sin: case OpKind::Cos: case OpKind::Reciprocal: case OpKind::Convert:
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Pow:
  case OpKind::Max: case OpKind::Min: case OpKind::Rem: case OpKind::Select: case OpKind::Clamp:
  case OpKind::BroadcastInDim: case OpKind::Reshape: case OpKind::Transpose: case OpKind::Slice:
  case OpKind::Concatenate: case OpKind::Pad: case OpKind::Gather: case OpKind::Reduce:
  case OpKind::Dot:
    return true;
  }
  return false;
}

std::vector<NodeId> adjoint(Graph& g, const Node& y, NodeId dy, const std::vector<bool>& want) {
  std::vector<NodeId> d(y.operands.size(), -1);
  if (!passesGradient(y.kind)) return d;
  Builder b(g, y);
  auto operand = [&](size_t i) -> NodeId { return y.operands[i]; };
  // The operand's node, copied: the graph grows while the adjoint is built.
  auto node = [&](size_t i) -> Node { return g.node(y.operands[i]); };
  auto wants = [&](size_t i) { return i < want.size() && want[i]; };
  NodeId x = y.operands.empty() ? -1 : operand(0);
  switch (y.kind) {
  // sources and ops with no gradient (passesGradient returned above; listed so that a new op
  // kind is a compile error here until someone decides its adjoint)
  case OpKind::Parameter:
  case OpKind::Constant:
  case OpKind::Iota:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Sign:
  case OpKind::Not:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Compare:
    break;
  // elementwise unary: d = dy * f'(x), from y where that is the cheaper form
  case OpKind::Neg:
    d[0] = b.neg(dy);
    break;
  case OpKind::Abs:
    d[0] = b.mul(dy, b.un(OpKind::Sign, x));
    break;
  case OpKind::Exp:
    d[0] = b.mul(dy, y.id);
    break;
  case OpKind::Log:
    d[0] = b.div(dy, x);
    break;
  case OpKind::Tanh: // 1 - y^2: from the output alone (RAF)
    d[0] = b.mul(dy, b.sub(b.splatLike(y.id, 1.0), b.mul(y.id, y.id)));
    break;
  case OpKind::Sqrt: // 1 / (2 sqrt(x))
    d[0] = b.div(dy, b.scale(y.id, 2.0));
    break;
  case OpKind::Rsqrt: // -x^(-3/2) / 2 = -y^3 / 2
    d[0] = b.mul(dy, b.scale(b.mul(y.id, b.mul(y.id, y.id)), -0.5));
    break;
  case OpKind::Erf: // 2/sqrt(pi) exp(-x^2)
    d[0] = b.mul(dy, b.scale(b.un(OpKind::Exp, b.neg(b.mul(x, x))), 2.0 / std::sqrt(M_PI)));
    break;
  case OpKind::Sigmoid: // y (1 - y)
    d[0] = b.mul(dy, b.mul(y.id, b.sub(b.splatLike(y.id, 1.0), y.id)));
    break;
  case OpKind::Sin:
    d[0] = b.mul(dy, b.un(OpKind::Cos, x));
    break;
  case OpKind::Cos:
    d[0] = b.neg(b.mul(dy, b.un(OpKind::Sin, x)));
    break;
  case OpKind::Reciprocal: // -1/x^2 = -y^2
    d[0] = b.neg(b.mul(dy, b.mul(y.id, y.id)));
    break;
  case OpKind::Convert: // back to the operand's dtype (want is false for integer operands)
    if (wants(0)) d[0] = b.convert(dy, node(0).type.dtype);
    break;
  // elementwise binary
  case OpKind::Add:
    d[0] = dy;
    d[1] = dy;
    break;
  case OpKind::Sub:
    d[0] = dy;
    if (wants(1)) d[1] = b.neg(dy);
    break;
  case OpKind::Mul:
    if (wants(0)) d[0] = b.mul(dy, operand(1));
    if (wants(1)) d[1] = b.mul(dy, operand(0));
    break;
  case OpKind::Div: // a / b: 1/b and -a/b^2 = -y/b
    if (wants(0)) d[0] = b.div(dy, operand(1));
    if (wants(1)) d[1] = b.neg(b.div(b.mul(dy, y.id), operand(1)));
    break;
  case OpKind::Pow: { // a^b: b a^(b-1) and a^b ln a
    // Where a formula meets 0 × ±inf the function is flat: a^0 = 1 for every a (d/da = 0, not
    // 0 × 0^-1), and 0^b = 0 for every b > 0 (d/db = 0, not 0 × ln 0); PyTorch's convention,
    // which also gives 0 for d/db at a = 0, b = 0, where a^b jumps.
    NodeId zeroA = b.cmp(CompareDir::EQ, operand(0), b.splatLike(operand(0), 0.0));
    NodeId zeroB = b.cmp(CompareDir::EQ, operand(1), b.splatLike(operand(1), 0.0));
    if (wants(0)) {
      NodeId bm1 = b.sub(operand(1), b.splatLike(operand(1), 1.0));
      d[0] = b.mask(zeroB, b.mul(dy, b.mul(operand(1), b.bin(OpKind::Pow, operand(0), bm1))),
                    false);
    }
    if (wants(1)) {
      NodeId flat = b.bin(OpKind::And, zeroA,
                          b.cmp(CompareDir::GE, operand(1), b.splatLike(operand(1), 0.0)));
      d[1] = b.mask(flat, b.mul(dy, b.mul(y.id, b.un(OpKind::Log, operand(0)))), false);
    }
    break;
  }
  case OpKind::Max:
  case OpKind::Min: { // the chosen operand takes dy (a on a tie)
    NodeId first = b.cmp(y.kind == OpKind::Max ? CompareDir::GE : CompareDir::LE, operand(0),
                         operand(1));
    if (wants(0)) d[0] = b.mask(first, dy);
    if (wants(1)) d[1] = b.mask(first, dy, false);
    break;
  }
  case OpKind::Rem: // fmod(a, b) = a - trunc(a / b) b
    d[0] = dy;
    if (wants(1)) {
      NodeId q = b.div(operand(0), operand(1));
      NodeId trunc = b.mul(b.un(OpKind::Sign, q), b.un(OpKind::Floor, b.un(OpKind::Abs, q)));
      d[1] = b.neg(b.mul(dy, trunc));
    }
    break;
  // elementwise ternary
  case OpKind::Select:
    if (wants(1)) d[1] = b.mask(operand(0), dy);
    if (wants(2)) d[2] = b.mask(operand(0), dy, false);
    break;
  case OpKind::Clamp: { // min(max(x, lo), hi)
    NodeId lo = operand(0), v = operand(1), hi = operand(2);
    NodeId below = b.cmp(CompareDir::LE, b.bin(OpKind::Max, v, lo), hi);
    NodeId inner = b.mask(below, dy);
    NodeId fromX = b.cmp(CompareDir::GE, v, lo);
    if (wants(0)) d[0] = b.mask(fromX, inner, false);
    if (wants(1)) d[1] = b.mask(fromX, inner);
    if (wants(2)) d[2] = b.mask(below, dy, false);
    break;
  }
  // broadcast and layout
  case OpKind::BroadcastInDim:
    d[0] = broadcastAdjoint(b, y, node(0), dy);
    break;
  case OpKind::Reshape:
    d[0] = b.reshape(dy, node(0).type.shape);
    break;
  case OpKind::Transpose: {
    const auto& perm = y.attr<TransposeAttrs>().perm;
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    d[0] = b.transpose(dy, inverse);
    break;
  }
  case OpKind::Slice:
    d[0] = sliceAdjoint(b, y, node(0), dy);
    break;
  case OpKind::Concatenate:
    for (size_t k = 0; k < y.operands.size(); ++k)
      if (wants(k)) d[k] = concatAdjoint(b, g, y, k, dy);
    break;
  case OpKind::Pad:
    d[0] = padAdjoint(b, y, node(0), dy);
    break;
  case OpKind::Gather: // the index operands are integers: no gradient
    if (wants(0)) d[0] = gatherAdjoint(b, y, node(0), dy);
    break;
  case OpKind::Reduce:
    d[0] = reduceAdjoint(b, y, node(0), dy);
    break;
  // compute-intensive: C = A B; dA = dC B^T, dB = A^T dC (batch dims ride along)
  case OpKind::Dot:
    d = dotAdjoint(b, operand(0), operand(1), dy, wants(0), wants(1));
    break;
  }
  for (size_t i = 0; i < d.size(); ++i)
    if (!wants(i)) d[i] = -1;
  return d;
}

} // namespace weft::autodiff
