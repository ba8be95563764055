// Index and position ONNX operators: ArgMax, ArgMin, Hardmax, CumSum, GatherElements, OneHot,
// Trilu, EyeLike, Range, Size, Tile, DepthToSpace and SpaceToDepth.
//
// GatherElements is the IR's gather. The IR has no scan or argmax: what depends on an
// element's position is built from iota (the position along an axis), compare, select and a
// reduce. An argmax is the smallest position holding the maximum; a one-hot is
// `iota == index`; a cumulative sum is a sum masked by comparing two iotas. Shape-determining
// operands (CumSum's axis, OneHot's depth, Tile's repeats, Range's bounds) must be known at
// import time.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::CompareDir;
using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::ReduceKind;
using ir::Shape;

/// Range results up to this many elements are literals (folded onward); larger ones are an
/// iota scaled and shifted in the graph.
constexpr int64_t kMaxLiteralElements = int64_t(1) << 20;
/// Positions and offsets are compared as i64 and graph constants are doubles: a k (Trilu,
/// EyeLike) past 2^53 in magnitude behaves like 2^53, which no position difference reaches.
constexpr double kBeyondAnyPosition = 9007199254740992.0; // 2^53



/// The dims of `rank` axes all but `axis`, for broadcasting a value reduced over `axis` back.
std::vector<int64_t> allBut(size_t rank, size_t axis) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i)
    if (i != axis) dims.push_back(static_cast<int64_t>(i));
  return dims;
}

/// A scalar operand that must be known at import time, as an integer: one element (rank 0, or
/// rank 1 of size 1).
int64_t constIntScalar(NodeContext& c, size_t i, const std::string& what) {
  std::vector<int64_t> v = c.constInts(i, what);
  if (v.size() != 1)
    c.fail(fmt::format("input {} ({}) must hold one value, it holds {}", i, what, v.size()));
  return v[0];
}

// ---------------------------------------------------------------- ArgMax, ArgMin, Hardmax

/// The position (i64) along `axis` of x's maximum (`kind` Max) or minimum (Min): the first one,
/// or the last with `last`. Computed as reduce(x) compared with x broadcast back, the matching
/// positions kept by a select of iota, and their min (first) or max (last) reduced. A NaN
/// counts as the extreme (numpy's argmax/argmin, which ONNX's reference uses, returns the
/// first NaN): weft's float max/min propagate NaN, so a row with a NaN has a NaN extreme,
/// which `x == extreme` misses and `x != x` picks. An axis that is empty has no position to
/// give: a static one is refused, a symbolic one bound to 0 gives -1 (no element's position)
/// in both modes.
NodeId argExtreme(NodeContext& c, NodeId x, size_t axis, ReduceKind kind, bool last, bool keepdims,
                  const std::string& name) {
  ir::TensorType t = c.typeOf(x);
  const Shape& s = t.shape;
  if (ir::isBool(t.dtype)) c.fail("takes numbers, not bool (convert the input first)");
  if (s[axis].isStatic() && s[axis].size() == 0)
    c.fail(fmt::format("axis {} of input {} is empty: there is no element to pick", axis,
                       ir::shapeStr(s)));
  auto ax = static_cast<int64_t>(axis);
  NodeId extreme = c.g.reduce(kind, x, {ax});
  NodeId back = c.g.broadcastInDim(extreme, s, allBut(s.size(), axis));
  NodeId hit = c.g.compare(CompareDir::EQ, x, back);
  if (ir::isFloat(t.dtype)) hit = c.g.binary(OpKind::Or, hit, c.g.compare(CompareDir::NE, x, x));
  NodeId position = c.g.iota(DType::i64, s, ax);
  // A position no element has: -1 for the last match, past the axis for the first (every
  // row matches somewhere, so it never survives the reduce).
  double none =
      last ? -1.0 : (s[axis].isStatic() ? static_cast<double>(s[axis].size()) : kBeyondAnyPosition);
  NodeId candidate = c.g.select(hit, position, c.splatLike(position, none));
  ReduceKind pick = last ? ReduceKind::Max : ReduceKind::Min;
  if (s[axis].isStatic()) return c.reduceKeep(pick, candidate, {ax}, keepdims, name);
  // A symbolic axis bound to 0 reduces nothing and leaves the reduce's identity, the i64
  // minimum (last) or maximum (first), which no position reaches: -1 there.
  NodeId found = c.reduceKeep(pick, candidate, {ax}, keepdims, "");
  NodeId minusOne = c.splatLike(found, -1.0);
  if (last) return c.g.binary(OpKind::Max, found, minusOne, name);
  NodeId empty = c.g.compare(CompareDir::GE, found, c.splatLike(found, none));
  return c.g.select(empty, minusOne, found, name);
}

/// ArgMax / ArgMin: axis (default 0), keepdims (default 1), select_last_index (opset 12 on;
/// honored whenever given). The result is int64.
Lowering argReduce(ReduceKind kind) {
  return [kind](NodeContext& c) {
    NodeId x = c.in(0);
    size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", 0), c.rank(0), "axis"));
    bool keepdims = c.attrInt("keepdims", 1) != 0;
    bool last = c.attrInt("select_last_index", 0) != 0;
    c.setOutput(0, argExtreme(c, x, axis, kind, last, keepdims, c.name()));
  };
}

/// 1 at the first maximum, 0 elsewhere, in x's dtype. Before opset 13 the input is coerced to
/// 2-D at `axis` (default 1): the maximum is over every axis from it on, flattened row-major;
/// from 13 over `axis` (default -1) alone.
void lowerHardmax(NodeContext& c) {
  NodeId x = c.in(0);
  ir::TensorType t = c.typeOf(x);
  size_t r = t.shape.size();
  if (r == 0) c.fail("needs an input of rank 1 or more");
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", c.opset >= 13 ? -1 : 1), r, "axis"));
  if (ir::numElements(t.shape).factor() == 0) { // nothing to mark (and no maximum to find)
    c.setOutput(0, x);
    return;
  }
  NodeId rows = x;
  size_t along = axis;
  bool coerced = c.opset < 13 && axis + 1 < r;
  if (coerced) {
    Dim outer(1), inner(1);
    for (size_t i = 0; i < axis; ++i)
      outer = outer * t.shape[i];
    for (size_t i = axis; i < r; ++i)
      inner = inner * t.shape[i];
    rows = c.g.reshape(x, {outer, inner});
    along = 1;
  }
  const Shape rowShape = c.typeOf(rows).shape;
  NodeId first = argExtreme(c, rows, along, ReduceKind::Max, false, /*keepdims=*/false, "");
  NodeId firstBack = c.g.broadcastInDim(first, rowShape, allBut(rowShape.size(), along));
  NodeId hot = c.g.compare(CompareDir::EQ,
                           c.g.iota(DType::i64, rowShape, static_cast<int64_t>(along)), firstBack);
  NodeId y = c.g.convert(hot, t.dtype, coerced ? "" : c.name());
  if (coerced) y = c.g.reshape(y, t.shape, c.name());
  c.setOutput(0, y);
}

// ---------------------------------------------------------------- CumSum

/// CumSum along the `axis` input (opset 11 on), inclusive or `exclusive`, forward or `reverse`:
/// y[.., i, ..] = sum of x[.., j, ..] over the j that the mode admits (j <= i, j < i, j >= i or
/// j > i). Built as a masked sum over a second copy of the axis: x broadcast to [.., n(i),
/// n(j), ..], kept where the two iotas compare as the mode says, summed over j. This is
/// quadratic in the axis length (n^2 terms per row) where a scan would be linear; the IR has
/// no scan. Sizes 0 and 1 need nothing special: an empty axis sums nothing, one element is
/// itself (or 0 when exclusive).
void lowerCumSum(NodeContext& c) {
  NodeId x = c.in(0);
  ir::TensorType t = c.typeOf(x);
  if (ir::isBool(t.dtype)) c.fail("takes numbers, not bool");
  if (t.shape.empty()) c.fail("needs an input of rank 1 or more");
  size_t axis = static_cast<size_t>(c.axis(constIntScalar(c, 1, "axis"), t.shape.size(), "axis"));
  bool exclusive = c.attrInt("exclusive", 0) != 0;
  bool reverse = c.attrInt("reverse", 0) != 0;
  size_t j = axis + 1; // the summed copy of the axis, right after it
  Shape wide = inserted(t.shape, j, t.shape[axis]);
  auto ai = static_cast<int64_t>(axis), aj = static_cast<int64_t>(j);
  NodeId terms = c.g.broadcastInDim(x, wide, skipping(t.shape.size(), axis));
  CompareDir dir = reverse ? (exclusive ? CompareDir::GT : CompareDir::GE)
                           : (exclusive ? CompareDir::LT : CompareDir::LE);
  NodeId admitted =
      c.g.compare(dir, c.g.iota(DType::i64, wide, aj), c.g.iota(DType::i64, wide, ai));
  NodeId masked = c.g.select(admitted, terms, c.splatLike(terms, 0));
  c.setOutput(0, c.g.reduce(ReduceKind::Sum, masked, {aj}, c.name()));
}

// ---------------------------------------------------------------- GatherElements, OneHot

/// GatherElements (opset 11, 13): y[.., i, ..] = data[.., indices[.., i, ..], ..] along `axis`,
/// y shaped as indices: numpy's take_along_axis, the IR's gather (frontend::takeAlongAxis),
/// which reads only the elements it gathers. Every other axis of indices is at most data's
/// (data is sliced to it). Negative indices count from the end; an index out of range gives 0
/// (ONNX calls it an error).
void lowerGatherElements(NodeContext& c) {
  NodeId data = c.in(0), idx = c.in(1);
  const Shape ds = c.typeOf(data).shape, is = c.typeOf(idx).shape;
  if (!ir::isInteger(c.typeOf(idx).dtype))
    c.fail(fmt::format("indices must be integers, not {}", ir::dtypeName(c.typeOf(idx).dtype)));
  if (ds.empty()) c.fail("needs data of rank 1 or more");
  if (is.size() != ds.size())
    c.fail(fmt::format("indices {} must have the rank of data {}", ir::shapeStr(is),
                       ir::shapeStr(ds)));
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", 0), ds.size(), "axis"));
  if (!ds[axis].isStatic())
    c.unsupported(fmt::format("GatherElements along axis {} of symbolic size {} is not supported "
                              "(a negative index counts from its end)",
                              axis, ds[axis].str()));
  for (size_t d = 0; d < ds.size(); ++d) {
    if (d == axis || !is[d].isStatic() || !ds[d].isStatic() || is[d] == ds[d]) continue;
    if (is[d].size() > ds[d].size()) // shorter is allowed: takeAlongAxis slices data to it
      c.fail(fmt::format("indices {} exceed data {} on axis {} (only the gathered axis {} may "
                         "be longer)",
                         ir::shapeStr(is), ir::shapeStr(ds), d, axis));
  }
  // A symbolic dim must equal its counterpart: a reshape of the indices to data's dim unifies
  // the two (symbol_unification.h), or fails naming both.
  for (size_t d = 0; d < ds.size(); ++d) {
    Shape now = c.typeOf(idx).shape;
    const Dim want = c.typeOf(data).shape[d];
    if (d == axis || now[d] == want || (now[d].isStatic() && want.isStatic())) continue;
    now[d] = want;
    idx = c.g.reshape(idx, now);
  }
  c.setOutput(0, frontend::takeAlongAxis(c.site(), data, idx, static_cast<int64_t>(axis),
                                         c.name()));
}

/// OneHot (opset 9, 11): a new axis of size `depth` at `axis` (default -1, of the result's
/// rank), on_value where its position equals the index and off_value elsewhere, in the dtype
/// of `values` ([off, on]). From opset 11 an index in [-depth, -1] counts from the end; any
/// other index outside [0, depth) gives a row of off_value. Float indices and depth are
/// truncated toward zero (a cast to int64). `depth` must be known at import time; `values`
/// may be computed at run time.
void lowerOneHot(NodeContext& c) {
  NodeId idx = c.in(0);
  ir::TensorType it = c.typeOf(idx);
  if (ir::isBool(it.dtype)) c.fail("indices must be numbers, not bool");
  double depthValue = c.constScalar(1, "depth");
  if (!(std::trunc(depthValue) >= 1) || depthValue >= 9007199254740992.0)
    c.fail(fmt::format("depth {} must be a positive integer", depthValue));
  auto depth = static_cast<int64_t>(std::trunc(depthValue));
  size_t r = it.shape.size();
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", -1), r + 1, "axis"));
  ir::TensorType vt = c.type(2);
  if (vt.shape.size() != 1 || vt.shape[0] != Dim(2))
    c.fail(fmt::format("values must be [off_value, on_value] (shape [2]), not {}",
                       ir::shapeStr(vt.shape)));
  idx = c.convertTo(idx, DType::i64);
  if (c.opset >= 11) idx = frontend::wrapNegativeIndices(c.site(), idx, Dim(depth), "OneHot");
  Shape wide = inserted(it.shape, axis, Dim(depth));
  NodeId at = c.g.broadcastInDim(idx, wide, skipping(r, axis));
  NodeId hot =
      c.g.compare(CompareDir::EQ, at, c.g.iota(DType::i64, wide, static_cast<int64_t>(axis)));
  NodeId off, on;
  if (const Literal* v = c.literal(2)) {
    off = c.splat(vt.dtype, wide, v->value(0));
    on = c.splat(vt.dtype, wide, v->value(1));
  } else {
    NodeId values = c.in(2);
    auto element = [&](int64_t i) {
      NodeId one = c.g.reshape(c.g.slice(values, {i}, {i + 1}, {1}), {});
      return c.g.broadcastInDim(one, wide, {});
    };
    off = element(0);
    on = element(1);
  }
  c.setOutput(0, c.g.select(hot, on, off, c.name()));
}

// ---------------------------------------------------------------- Trilu, EyeLike

/// col - row over the last two axes of `shape` (i64), the offset of each element from the
/// main diagonal.
NodeId diagonalOffset(NodeContext& c, const Shape& shape) {
  auto r = static_cast<int64_t>(shape.size());
  NodeId row = c.g.iota(DType::i64, shape, r - 2);
  NodeId col = c.g.iota(DType::i64, shape, r - 1);
  return c.g.binary(OpKind::Sub, col, row);
}

/// A diagonal offset k known at import time, clamped to what no position difference passes.
double clampedOffset(int64_t k) {
  return std::clamp(static_cast<double>(k), -kBeyondAnyPosition, kBeyondAnyPosition);
}

/// Trilu (opset 14): x where col - row >= k (upper, the default) or <= k (lower), 0
/// elsewhere, over the last two axes. k (input 1, default 0) may be computed at run time.
void lowerTrilu(NodeContext& c) {
  NodeId x = c.in(0);
  Shape s = c.typeOf(x).shape;
  if (s.size() < 2) c.fail(fmt::format("input {} needs rank 2 or more", ir::shapeStr(s)));
  bool upper = c.attrInt("upper", 1) != 0;
  NodeId offset = diagonalOffset(c, s);
  NodeId k;
  if (!c.has(1)) {
    k = c.splatLike(offset, 0);
  } else if (c.literal(1)) {
    k = c.splatLike(offset, clampedOffset(constIntScalar(c, 1, "k")));
  } else {
    ir::TensorType kt = c.type(1);
    if (!ir::isInteger(kt.dtype) || ir::numElements(kt.shape) != Dim(1))
      c.fail(fmt::format("k must be one integer, not {}", kt.str()));
    NodeId scalar = c.reshapeTo(c.convertTo(c.in(1), DType::i64), {});
    k = c.g.broadcastInDim(scalar, s, {});
  }
  NodeId keep = c.g.compare(upper ? CompareDir::GE : CompareDir::LE, offset, k);
  c.setOutput(0, c.g.select(keep, x, c.splatLike(x, 0), c.name()));
}

/// EyeLike (opset 9): ones where col - row == k (attribute, default 0), zeros elsewhere, with
/// the shape of the 2-D input and `dtype` (default: the input's). Only the input's shape is read.
void lowerEyeLike(NodeContext& c) {
  ir::TensorType t = c.type(0);
  if (t.shape.size() != 2) c.fail(fmt::format("input {} must be 2-D", ir::shapeStr(t.shape)));
  DType out = t.dtype;
  if (c.hasAttr("dtype")) {
    int64_t onnxType = c.attrInt("dtype", 0);
    auto d = irDTypeOf(static_cast<int>(onnxType));
    if (!d)
      c.unsupported(
          fmt::format("dtype {} is not supported", onnxTypeName(static_cast<int>(onnxType))));
    out = *d;
  }
  NodeId offset = diagonalOffset(c, t.shape);
  double k = clampedOffset(c.attrInt("k", 0));
  NodeId diagonal = c.g.compare(CompareDir::EQ, offset, c.splatLike(offset, k));
  c.setOutput(0, c.convertTo(diagonal, out, c.name()));
}

// ---------------------------------------------------------------- Range, Size

/// Range (opset 11): start, start + delta, ... up to limit (excluded), max(ceil((limit -
/// start) / delta), 0) elements. The three scalars must be known at import time (the result's
/// length depends on them); integers are computed exactly, floats in double.
void lowerRange(NodeContext& c) {
  const Literal& start = c.requireLiteral(0, "start");
  const Literal& limit = c.requireLiteral(1, "limit");
  const Literal& delta = c.requireLiteral(2, "delta");
  for (const Literal* l : {&start, &limit, &delta})
    if (l->size() != 1)
      c.fail(fmt::format("start, limit and delta must be scalars, not {}", l->type().str()));
  DType t = start.dtype;
  if (limit.dtype != t || delta.dtype != t)
    c.fail(fmt::format("start ({}), limit ({}) and delta ({}) must have one dtype",
                       ir::dtypeName(t), ir::dtypeName(limit.dtype), ir::dtypeName(delta.dtype)));
  if (ir::isBool(t)) c.fail("takes numbers, not bool");
  if (delta.value(0) == 0) c.fail("delta must not be 0");
  int64_t n = 0;
  if (start.integral()) {
    __int128 span = static_cast<__int128>(limit.exact[0]) - start.exact[0];
    __int128 step = delta.exact[0];
    if (step < 0) span = -span, step = -step;
    __int128 count = span > 0 ? (span + step - 1) / step : 0;
    if (count > std::numeric_limits<int64_t>::max())
      c.fail("the range has more than 2^63 elements");
    n = static_cast<int64_t>(count);
  } else {
    double count = std::ceil((limit.reals[0] - start.reals[0]) / delta.reals[0]);
    if (std::isnan(count) || count >= 9223372036854775808.0)
      c.fail(fmt::format("start {}, limit {} and delta {} give no finite number of elements",
                         start.reals[0], limit.reals[0], delta.reals[0]));
    n = static_cast<int64_t>(std::max(count, 0.0));
  }
  if (n <= kMaxLiteralElements) {
    Literal out{t, {n}, {}, {}};
    for (int64_t i = 0; i < n; ++i) {
      if (start.integral()) // between start and limit, so in range (i * delta may not be)
        out.exact.push_back(
            static_cast<int64_t>(start.exact[0] + static_cast<__int128>(i) * delta.exact[0]));
      else
        out.reals.push_back(start.reals[0] + static_cast<double>(i) * delta.reals[0]);
    }
    c.setOutput(0, std::move(out));
    return;
  }
  if (start.integral() && !(ir::exactInDouble(start.exact[0]) && ir::exactInDouble(delta.exact[0])))
    c.unsupported(fmt::format("a Range of {} elements (more than {} are built in the graph, "
                              "whose constants are doubles) from start {} by delta {} past 2^53 "
                              "is not supported",
                              n, kMaxLiteralElements, start.exact[0], delta.exact[0]));
  // start + i * delta in the graph: i64 for integers (exact), f64 for floats, then converted.
  DType wideType = start.integral() ? DType::i64 : DType::f64;
  NodeId i = c.g.iota(wideType, {Dim(n)}, 0);
  NodeId scaled = c.g.binary(OpKind::Mul, i, c.splatLike(i, delta.value(0)));
  NodeId shifted = c.g.binary(OpKind::Add, scaled, c.splatLike(scaled, start.value(0)),
                              t == wideType ? c.name() : "");
  c.setOutput(0, t == wideType ? shifted : c.g.convert(shifted, t, c.name()));
}

/// Size (opset 1, 13): the input's element count as an int64 scalar. A static shape folds to
/// a literal. A symbolic one is computed in the graph from its symbols: the static factor
/// times, for each symbol S, the sum of a splat of S ones (so a size is read from the bound
/// shape without touching the input's elements).
void lowerSize(NodeContext& c) {
  Dim count = ir::numElements(c.type(0).shape);
  if (count.isStatic() || count.factor() == 0) { // a static 0 times symbols is 0
    c.setOutput(0, Literal::ofInts(DType::i64, {}, {count.factor()}));
    return;
  }
  const std::vector<std::string>& symbols = count.symbols(); // B*B lists B twice
  std::optional<NodeId> total;
  if (count.factor() != 1) total = c.splat(DType::i64, {}, static_cast<double>(count.factor()));
  for (size_t i = 0; i < symbols.size(); ++i) {
    bool lastOp = i + 1 == symbols.size();
    NodeId ones = c.splat(DType::i64, {Dim::symbol(symbols[i])}, 1.0);
    NodeId extent = c.g.reduce(ReduceKind::Sum, ones, {0}, lastOp && !total ? c.name() : "");
    total = total ? c.g.binary(OpKind::Mul, *total, extent, lastOp ? c.name() : "") : extent;
  }
  c.setOutput(0, *total);
}

// ---------------------------------------------------------------- Tile, DepthToSpace, SpaceToDepth

/// Tile: each axis i repeated repeats[i] times, as a broadcast to [.., repeats[i], d_i, ..]
/// (a new axis before each repeated one) reshaped to [.., repeats[i] * d_i, ..]. From opset 6
/// `repeats` (input 1, one entry per axis) must be known at import time; opset 1 takes one
/// axis (input 2) and its count (input 1).
void lowerTile(NodeContext& c) {
  NodeId x = c.in(0);
  Shape s = c.typeOf(x).shape;
  std::vector<int64_t> repeats(s.size(), 1);
  if (c.opset < 6) {
    size_t axis = static_cast<size_t>(c.axis(constIntScalar(c, 2, "axis"), s.size(), "axis"));
    repeats[axis] = constIntScalar(c, 1, "tiles");
  } else {
    repeats = c.constInts(1, "repeats");
    if (repeats.size() != s.size())
      c.fail(fmt::format("repeats {} needs one entry per axis of the input {}", listStr(repeats),
                         ir::shapeStr(s)));
  }
  Shape wide, out;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.size(); ++i) {
    if (repeats[i] < 0) c.fail(fmt::format("repeats {} has a negative count", listStr(repeats)));
    if (repeats[i] != 1) wide.push_back(Dim(repeats[i]));
    dims.push_back(static_cast<int64_t>(wide.size()));
    wide.push_back(s[i]);
    out.push_back(Dim(repeats[i]) * s[i]);
  }
  if (wide.size() == s.size()) { // nothing repeated
    c.setOutput(0, x);
    return;
  }
  c.setOutput(0, c.g.reshape(c.g.broadcastInDim(x, wide, dims), out, c.name()));
}

/// The blocksize attribute (required, positive) and the rank-4 [N, C, H, W] input shape.
int64_t blockSize(NodeContext& c, const Shape& s) {
  if (s.size() != 4) c.fail(fmt::format("input {} must be 4-D [N, C, H, W]", ir::shapeStr(s)));
  int64_t b = c.requireAttrInt("blocksize");
  if (b < 1) c.fail(fmt::format("blocksize {} must be positive", b));
  int64_t square = 0;
  if (__builtin_mul_overflow(b, b, &square))
    c.fail(fmt::format("blocksize {} is too large: a block of {} x {} elements is past int64", b, b,
                       b));
  return b;
}

/// d / by, exactly; fails naming `what` otherwise (unsupported for a symbolic d that may
/// divide once bound).
Dim exactQuotient(NodeContext& c, const Dim& d, int64_t by, const std::string& what) {
  auto q = d.dividedBy(Dim(by));
  if (q) return *q;
  if (!d.isStatic())
    c.unsupported(fmt::format("{} of symbolic size {} is not supported: it must divide by {}, "
                              "and whether it does is known only at run time",
                              what, d.str(), by));
  c.fail(fmt::format("{} ({}) does not divide by {}", what, d.str(), by));
}

/// DepthToSpace: channels moved into b x b blocks of space. DCR (the default; the only mode
/// before opset 11) takes the block position from the channel's high part: [N, b, b, C/b², H,
/// W]; CRD from its low part: [N, C/b², b, b, H, W]. Both are transposed to [N, C/b², H, b, W,
/// b] and reshaped to [N, C/b², H*b, W*b].
void lowerDepthToSpace(NodeContext& c) {
  NodeId x = c.in(0);
  Shape s = c.typeOf(x).shape;
  int64_t b = blockSize(c, s);
  std::string mode = c.opset >= 11 ? c.attrString("mode", "DCR") : "DCR";
  if (mode != "DCR" && mode != "CRD")
    c.fail(fmt::format("mode \"{}\" must be \"DCR\" or \"CRD\"", mode));
  Dim depth = exactQuotient(c, s[1], b * b, "channels C");
  Dim bd(b);
  bool dcr = mode == "DCR";
  Shape split =
      dcr ? Shape{s[0], bd, bd, depth, s[2], s[3]} : Shape{s[0], depth, bd, bd, s[2], s[3]};
  std::vector<int64_t> perm =
      dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
  NodeId moved = c.g.transpose(c.g.reshape(x, split), perm);
  c.setOutput(0, c.g.reshape(moved, {s[0], depth, s[2] * bd, s[3] * bd}, c.name()));
}

/// SpaceToDepth, the inverse of DepthToSpace in DCR mode: [N, C, H/b, b, W/b, b] transposed to
/// [N, b, b, C, H/b, W/b] and reshaped to [N, C*b², H/b, W/b].
void lowerSpaceToDepth(NodeContext& c) {
  NodeId x = c.in(0);
  Shape s = c.typeOf(x).shape;
  int64_t b = blockSize(c, s);
  Dim bd(b);
  Dim h = exactQuotient(c, s[2], b, "height H"), w = exactQuotient(c, s[3], b, "width W");
  NodeId split = c.g.reshape(x, {s[0], s[1], h, bd, w, bd});
  NodeId moved = c.g.transpose(split, {0, 3, 5, 1, 2, 4});
  c.setOutput(0, c.g.reshape(moved, {s[0], s[1] * bd * bd, h, w}, c.name()));
}

} // namespace

void addIndexOps(OperatorTable& t) {
  t["ArgMax"] = argReduce(ReduceKind::Max);
  t["ArgMin"] = argReduce(ReduceKind::Min);
  t["Hardmax"] = lowerHardmax;
  t["CumSum"] = lowerCumSum;
  t["GatherElements"] = lowerGatherElements;
  t["OneHot"] = lowerOneHot;
  t["Trilu"] = lowerTrilu;
  t["EyeLike"] = lowerEyeLike;
  t["Range"] = lowerRange;
  t["Size"] = lowerSize;
  t["Tile"] = lowerTile;
  t["DepthToSpace"] = lowerDepthToSpace;
  t["SpaceToDepth"] = lowerSpaceToDepth;
}

} // namespace weft::onnx
