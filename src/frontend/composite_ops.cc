#include "frontend/composite_ops.h"

#include <algorithm>
#include <fmt/format.h>

#include "ir/log_sum_exp.h"
#include "weft/error.h"

namespace weft::frontend {

using ir::NodeId;
using ir::OpKind;
using ir::Shape;

void Site::fail(const std::string& what) const {
  if (failer) failer(what);
  throw InputError(what); // a failer that returned: still an error
}

namespace {

/// Composites check their operand's dtype before building anything, so that a bad one is
/// reported as the op the user wrote ("gelu takes floating-point values"), not as a
/// constant or primitive of its expansion ("y.rsqrt2 ... is not a i8 value").
void requireFloat(const Site& s, NodeId x, const std::string& op) {
  ir::DType t = s.type(x).dtype;
  if (!ir::isFloat(t))
    s.fail(fmt::format("input 0 has dtype {} but {} takes floating-point values; convert it "
                       "first",
                       ir::dtypeName(t), op));
}

void requireNumeric(const Site& s, NodeId x, const std::string& op) {
  ir::DType t = s.type(x).dtype;
  if (ir::isBool(t))
    s.fail(fmt::format("input 0 has dtype {} but {} takes numbers; convert it first",
                       ir::dtypeName(t), op));
}

} // namespace

// --- axes and counts ---

std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

ReducedCount reducedCount(const Shape& shape, const std::vector<int64_t>& axes) {
  ReducedCount out;
  for (int64_t a : axes) {
    const ir::Dim& d = shape[static_cast<size_t>(a)];
    if (!d.isStatic()) {
      out.symbolicAxis = a;
      return out;
    }
    out.count *= d.size();
  }
  return out;
}

Shape reducedShape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (!reduced)
      out.push_back(shape[d]);
    else if (keepdims)
      out.push_back(ir::Dim(1));
  }
  return out;
}

// --- numpy broadcasting ---

namespace {

/// How many times `symbol` occurs in `shapes` (a dim B*B counts twice).
size_t occurrences(const std::vector<Shape>& shapes, const std::string& symbol) {
  size_t n = 0;
  for (const Shape& s : shapes)
    for (const ir::Dim& d : s)
      n += static_cast<size_t>(std::count(d.symbols().begin(), d.symbols().end(), symbol));
  return n;
}

} // namespace

std::optional<Shape> broadcastShape(const std::vector<Shape>& shapes, size_t* offending) {
  size_t rank = 0;
  for (const Shape& s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, ir::Dim(1));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (size_t k = 0; k < s.size(); ++k) {
      ir::Dim& o = out[rank - s.size() + k];
      const ir::Dim& d = s[k];
      bool oneO = o.isOne(), oneD = d.isOne();
      if (o == d || oneD) continue;
      if (oneO) {
        o = d;
        continue;
      }
      // Two sizes that differ only by a symbol's name are taken to be equal (the graph unifies
      // them where they meet, ir/symbol_unification.h), unless the symbol also sizes another
      // dim here: [B, 768] / [B] is a missing unit dim, not B = 768. The result is the same
      // whichever shape comes first: a static size over a symbol, else the smaller dim.
      auto u = ir::unifier(o, d);
      if (u && occurrences(shapes, u->first) == 1) {
        if (!o.isStatic() && (d.isStatic() || d < o)) o = d;
        continue;
      }
      if (offending) *offending = i;
      return std::nullopt;
    }
  }
  return out;
}

namespace {

/// x's dims placed on the trailing dims of a result of rank `rank` (numpy alignment).
std::vector<int64_t> trailingDims(size_t xRank, size_t rank) {
  std::vector<int64_t> dims;
  for (size_t k = 0; k < xRank; ++k)
    dims.push_back(static_cast<int64_t>(rank - xRank + k));
  return dims;
}

void requireBroadcastable(const Site& s, const Shape& from, const Shape& to) {
  if (from.size() > to.size())
    s.fail(fmt::format("cannot broadcast {} to the lower-rank shape {}", ir::shapeStr(from),
                       ir::shapeStr(to)));
  if (broadcastShape({from, to}) != to)
    s.fail(fmt::format("cannot broadcast {} to {} (numpy rules: trailing dims must match or be 1)",
                       ir::shapeStr(from), ir::shapeStr(to)));
}

/// When x is a reshape that only put size-1 dims around its operand's (a keepdims reduce),
/// the dims of `shape` its operand's dims go to; nullopt otherwise.
std::optional<std::pair<NodeId, std::vector<int64_t>>> unitReshapeSource(const Site& s, NodeId x,
                                                                         const Shape& shape) {
  const ir::Node& n = s.g.node(x);
  if (n.kind != OpKind::Reshape) return std::nullopt;
  const Shape& from = n.type.shape;
  NodeId src = n.operands[0];
  const Shape& inner = s.type(src).shape;
  size_t offset = shape.size() - from.size();
  std::vector<int64_t> dims;
  size_t j = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    if (j < inner.size() && inner[j] == from[i]) {
      dims.push_back(static_cast<int64_t>(offset + i));
      ++j;
    } else if (!from[i].isOne()) {
      break;
    }
  }
  if (j != inner.size() || dims.size() != inner.size()) return std::nullopt;
  return std::make_pair(src, std::move(dims));
}

/// gamma or beta of a norm broadcast to x's shape: always one broadcast_in_dim, also when p
/// has that shape already (the JSON reader's graphs have it; the canonicalizer removes it).
NodeId normParam(const Site& s, NodeId p, const ir::TensorType& out, const std::string& role) {
  const Shape& shape = out.shape;
  if (s.type(p).dtype != out.dtype)
    s.fail(fmt::format("{} has dtype {} but the normalized input has dtype {}; convert one of them",
                       role, ir::dtypeName(s.type(p).dtype), ir::dtypeName(out.dtype)));
  Shape ps = s.type(p).shape;
  if (ps.size() > shape.size() || broadcastShape({ps, shape}) != shape)
    s.fail(fmt::format("{} has shape {}, which does not broadcast to the normalized input's {}",
                       role, ir::shapeStr(ps), ir::shapeStr(shape)));
  return s.g.broadcastInDim(p, shape, trailingDims(ps.size(), shape.size()),
                            s.name(role + "_broadcast"));
}

} // namespace

NodeId broadcastTo(const Site& s, NodeId x, const Shape& shape, const std::string& name) {
  Shape from = s.type(x).shape;
  if (from == shape) return x;
  requireBroadcastable(s, from, shape);
  if (s.lookThroughUnitReshapes)
    if (auto source = unitReshapeSource(s, x, shape))
      return s.g.broadcastInDim(source->first, shape, std::move(source->second), name);
  return s.g.broadcastInDim(x, shape, trailingDims(from.size(), shape.size()), name);
}

NodeId broadcastBack(const Site& s, NodeId reduced, const Shape& shape,
                     const std::vector<int64_t>& axes, const std::string& name) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) dims.push_back(d);
  return s.g.broadcastInDim(reduced, shape, std::move(dims), name);
}

NodeId splatLike(const Site& s, NodeId x, double v, const std::string& name) {
  ir::TensorType t = s.type(x);
  return s.g.constant(t.dtype, std::move(t.shape), {v}, name);
}

// --- reductions ---

NodeId mean(const Site& s, NodeId x, const std::vector<int64_t>& axes, const std::string& tag,
            const std::string& name) {
  requireNumeric(s, x, "mean");
  ReducedCount n = reducedCount(s.type(x).shape, axes);
  if (n.symbolicAxis)
    s.fail(fmt::format("the mean over axis {} of symbolic size {} divides by its size, which "
                       "must be static",
                       *n.symbolicAxis, s.type(x).shape[static_cast<size_t>(*n.symbolicAxis)].str()));
  NodeId sum = s.g.reduce(ir::ReduceKind::Sum, x, axes, s.name(tag + "_sum"));
  NodeId count = splatLike(s, sum, static_cast<double>(n.count), s.name(tag + "_count"));
  return s.g.binary(OpKind::Div, sum, count, name);
}

Variance variance(const Site& s, NodeId x, const std::vector<int64_t>& axes,
                  const std::string& name) {
  requireNumeric(s, x, "variance");
  Shape shape = s.type(x).shape;
  Variance v;
  v.mean = mean(s, x, axes, "mean", s.name("mean"));
  NodeId meanB = broadcastBack(s, v.mean, shape, axes, s.name("mean_broadcast"));
  v.centered = s.g.binary(OpKind::Sub, x, meanB, s.name("centered"));
  NodeId squared = s.g.binary(OpKind::Mul, v.centered, v.centered, s.name("squared"));
  v.variance = mean(s, squared, axes, "var", name);
  return v;
}

NodeId softmax(const Site& s, NodeId x, const std::vector<int64_t>& axes, bool logarithm,
               const std::string& name) {
  requireFloat(s, x, logarithm ? "log_softmax" : "softmax");
  Shape shape = s.type(x).shape;
  NodeId max = s.g.reduce(ir::ReduceKind::Max, x, axes, s.name("max"));
  NodeId shifted = s.g.binary(OpKind::Sub, x,
                              broadcastBack(s, max, shape, axes, s.name("max_broadcast")),
                              s.name("shifted"));
  if (logarithm) {
    // (x - max) - (logsumexp(x) - max): the max and the logsumexp are sibling reductions of x,
    // read in one pass, where log(sum(exp(x - max))) waits for the max and reads the row again.
    // What is broadcast back is the small log of the row's sum, not the logsumexp, so a
    // low-precision consumer (f16 under --amp) rounds it as it did log(sum(...)).
    NodeId logSum = ir::logSumBelowMax(s.g, x, max, axes,
                                       [&](const std::string& base) { return s.name(base); });
    return s.g.binary(OpKind::Sub, shifted,
                      broadcastBack(s, logSum, shape, axes, s.name("log_sum_broadcast")), name);
  }
  NodeId e = s.g.unary(OpKind::Exp, shifted, s.name("exp"));
  NodeId sum = s.g.reduce(ir::ReduceKind::Sum, e, axes, s.name("sum"));
  return s.g.binary(OpKind::Div, e, broadcastBack(s, sum, shape, axes, s.name("sum_broadcast")),
                    name);
}

// --- normalizations ---

namespace {

/// x in the compute dtype (a convert when it differs from x's).
NodeId toCompute(const Site& s, NodeId x, const NormOptions& o) {
  if (!o.compute || *o.compute == s.type(x).dtype) return x;
  return s.g.convert(x, *o.compute, s.name("compute"));
}

/// What follows the normalized value: a convert back to x's dtype when the statistics were
/// computed in another, then gamma and beta.
struct NormTail {
  bool converted, affine;
  NormTail(const Site& s, NodeId x, ir::DType outType, const NormOptions& o)
      : converted(s.type(x).dtype != outType), affine(o.gamma || o.beta) {}
  /// The normalized value's name: `name` when it is the last node.
  std::string normalizedName(const Site& s, const std::string& name) const {
    return converted || affine ? s.name("normalized") : name;
  }
  NodeId finish(const Site& s, NodeId y, const ir::TensorType& out, const NormOptions& o,
                const std::string& name) const {
    if (converted) y = s.g.convert(y, out.dtype, affine ? s.name("normalized_out") : name);
    if (o.gamma)
      y = s.g.binary(OpKind::Mul, y, normParam(s, *o.gamma, out, "gamma"),
                     o.beta ? s.name("scaled") : name);
    if (o.beta) y = s.g.binary(OpKind::Add, y, normParam(s, *o.beta, out, "beta"), name);
    return y;
  }
};

} // namespace

LayerNorm layerNorm(const Site& s, NodeId x0, const NormOptions& o, const std::string& name) {
  requireFloat(s, x0, "layer_norm");
  if (o.compute && !ir::isFloat(*o.compute))
    s.fail(fmt::format("layer_norm computes its statistics in floating point, not {}",
                       ir::dtypeName(*o.compute)));
  ir::TensorType in = s.type(x0);
  NodeId x = toCompute(s, x0, o);
  Variance v = variance(s, x, o.axes, s.name("var"));
  NodeId varEps = s.g.binary(OpKind::Add, v.variance,
                             splatLike(s, v.variance, o.epsilon, s.name("epsilon")),
                             s.name("var_eps"));
  LayerNorm out;
  out.mean = v.mean;
  out.rstd = s.g.unary(OpKind::Rsqrt, varEps, s.name("rstd"));
  NormTail tail(s, x, in.dtype, o);
  NodeId y = s.g.binary(OpKind::Mul, v.centered,
                        broadcastBack(s, out.rstd, in.shape, o.axes, s.name("rstd_broadcast")),
                        tail.normalizedName(s, name));
  out.y = tail.finish(s, y, in, o, name);
  return out;
}

NodeId rmsNorm(const Site& s, NodeId x0, const NormOptions& o, const std::string& name) {
  if (o.beta) s.fail("RMS norm has no shift (beta)");
  requireFloat(s, x0, "rms_norm");
  if (o.compute && !ir::isFloat(*o.compute))
    s.fail(fmt::format("rms_norm computes its statistics in floating point, not {}",
                       ir::dtypeName(*o.compute)));
  ir::TensorType in = s.type(x0);
  NodeId x = toCompute(s, x0, o);
  NodeId squared = s.g.binary(OpKind::Mul, x, x, s.name("squared"));
  NodeId meanSquare = mean(s, squared, o.axes, "mean_square", s.name("mean_square"));
  NodeId msEps = s.g.binary(OpKind::Add, meanSquare,
                            splatLike(s, meanSquare, o.epsilon, s.name("epsilon")),
                            s.name("ms_eps"));
  NodeId rrms = s.g.unary(OpKind::Rsqrt, msEps, s.name("rrms"));
  NormTail tail(s, x, in.dtype, o);
  NodeId y = s.g.binary(OpKind::Mul, x,
                        broadcastBack(s, rrms, in.shape, o.axes, s.name("rrms_broadcast")),
                        tail.normalizedName(s, name));
  return tail.finish(s, y, in, o, name);
}

// --- activations ---

namespace {

/// 0.5 * x * (1 + inner), the common tail of both GELUs.
NodeId geluTail(const Site& s, NodeId x, NodeId inner, const std::string& name) {
  NodeId onePlus =
      s.g.binary(OpKind::Add, inner, splatLike(s, x, 1.0, s.name("one")), s.name("one_plus"));
  NodeId half = s.g.binary(OpKind::Mul, x, splatLike(s, x, 0.5, s.name("half")), s.name("half_x"));
  return s.g.binary(OpKind::Mul, half, onePlus, name);
}

} // namespace

NodeId gelu(const Site& s, NodeId x, const std::string& name) {
  requireFloat(s, x, "gelu");
  NodeId scaled = s.g.binary(OpKind::Mul, x,
                             splatLike(s, x, 0.70710678118654752440, s.name("rsqrt2")),
                             s.name("scaled"));
  return geluTail(s, x, s.g.unary(OpKind::Erf, scaled, s.name("erf")), name);
}

NodeId geluTanh(const Site& s, NodeId x, const std::string& name) {
  requireFloat(s, x, "gelu_tanh");
  NodeId x2 = s.g.binary(OpKind::Mul, x, x, s.name("x2"));
  NodeId x3 = s.g.binary(OpKind::Mul, x2, x, s.name("x3"));
  NodeId cubic =
      s.g.binary(OpKind::Mul, x3, splatLike(s, x, 0.044715, s.name("coeff")), s.name("cubic"));
  NodeId inner = s.g.binary(OpKind::Add, x, cubic, s.name("inner"));
  NodeId arg = s.g.binary(OpKind::Mul, inner,
                          splatLike(s, x, 0.79788456080286535588, s.name("sqrt_2_over_pi")),
                          s.name("arg"));
  return geluTail(s, x, s.g.unary(OpKind::Tanh, arg, s.name("tanh")), name);
}

NodeId silu(const Site& s, NodeId x, const std::string& name) {
  requireFloat(s, x, "silu");
  NodeId sigmoid = s.g.unary(OpKind::Sigmoid, x, s.name("sigmoid"));
  return s.g.binary(OpKind::Mul, x, sigmoid, name);
}

NodeId wrapNegativeIndices(const Site& s, NodeId indices, const ir::Dim& n,
                           const std::string& what) {
  ir::DType t = s.type(indices).dtype;
  if (!ir::isInteger(t))
    s.fail(fmt::format("{} indices must be integers, got {}", what, ir::dtypeName(t)));
  if (!n.isStatic())
    s.fail(fmt::format("{} along an axis of symbolic size {}: a negative index needs its size",
                       what, n.str()));
  if (t == ir::DType::i8 || (t == ir::DType::i32 && n.size() > 2147483647)) {
    t = t == ir::DType::i8 && n.size() <= 2147483647 ? ir::DType::i32 : ir::DType::i64;
    indices = s.g.convert(indices, t, s.name("indices_wide"));
  }
  NodeId zero = splatLike(s, indices, 0.0, s.name("zero"));
  NodeId size = splatLike(s, indices, static_cast<double>(n.size()), s.name("size"));
  NodeId negative = s.g.compare(ir::CompareDir::LT, indices, zero, s.name("negative"));
  NodeId moved = s.g.binary(OpKind::Add, indices, size, s.name("from_end"));
  return s.g.select(negative, moved, indices, s.name("wrapped"));
}

NodeId take(const Site& s, NodeId x, NodeId indices, int64_t axis, const std::string& name) {
  const ir::Shape xs = s.type(x).shape; // copies: the graph grows below
  const ir::Shape is = s.type(indices).shape;
  auto a = static_cast<size_t>(axis);
  NodeId idx = wrapNegativeIndices(s, indices, xs[a], "take");
  ir::Shape out(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), xs.begin() + static_cast<std::ptrdiff_t>(a) + 1, xs.end());
  std::vector<int64_t> idxDims, dims;
  for (size_t i = 0; i < is.size(); ++i)
    idxDims.push_back(static_cast<int64_t>(a + i));
  for (size_t d = 0; d < xs.size(); ++d)
    if (d != a) dims.push_back(static_cast<int64_t>(d < a ? d : d - 1 + is.size()));
  NodeId spread = s.type(idx).shape == out
                      ? idx
                      : s.g.broadcastInDim(idx, out, idxDims, s.name("indices_broadcast"));
  return s.g.gather(x, {spread}, {axis}, std::move(dims), name);
}

NodeId takeAlongAxis(const Site& s, NodeId x, NodeId indices, int64_t axis,
                     const std::string& name) {
  const ir::Shape xs = s.type(x).shape;
  const ir::Shape is = s.type(indices).shape;
  auto a = static_cast<size_t>(axis);
  if (is.size() != xs.size())
    s.fail(fmt::format("indices have rank {} but the data has rank {}", is.size(), xs.size()));
  // Shapes first: a refused call adds no nodes.
  std::vector<int64_t> dims;
  std::vector<int64_t> starts(xs.size(), 0), limits(xs.size(), -1), strides(xs.size(), 1);
  bool sliced = false;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (d == a) continue;
    dims.push_back(static_cast<int64_t>(d));
    if (is[d] == xs[d]) continue;
    // Smaller indices elsewhere (GatherElements allows it): the data's leading part there.
    if (!is[d].isStatic() || !xs[d].isStatic() || is[d].size() > xs[d].size())
      s.fail(fmt::format("indices have size {} along axis {} where the data has {}", is[d].str(),
                         d, xs[d].str()));
    limits[d] = is[d].size();
    sliced = true;
  }
  NodeId idx = wrapNegativeIndices(s, indices, xs[a], "take_along_axis");
  NodeId data = sliced ? s.g.slice(x, starts, limits, strides, s.name("window")) : x;
  return s.g.gather(data, {idx}, {axis}, std::move(dims), name);
}

} // namespace weft::frontend
