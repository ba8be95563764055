// Selection and scatter ONNX operators: TopK, GatherND, ScatterElements (and Scatter, its
// deprecated alias), ScatterND and MaxUnpool.
//
// GatherND is the IR's gather, which reads only the elements it gathers. The IR has no sort
// or scatter: what depends on an index is a mask `index == iota` over a second copy of the
// indexed axis, and a select and a reduce over one of the two copies: a scatter reduces over
// the updates (any number of them may land on one element), TopK's ranks over the positions
// of a row (one of them is marked). TopK ranks each element against every other one of its
// row and then picks by rank, or, for a small k, picks k times and gathers the values.
//
// Indices are data, so an index out of range cannot be refused at import (ONNX calls it an
// error). Here a gather reads 0 for it and a scatter drops its update. Where several updates
// land on one element with reduction "none", ONNX leaves the result undefined: here the last
// one in the indices' row-major order wins, as in ONNX's reference implementation.
#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

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

constexpr double kInfinity = std::numeric_limits<double>::infinity();


/// x broadcast to `shape`, x's axes being its leading ones; x itself when it has that shape.
NodeId leading(NodeContext& c, NodeId x, const Shape& shape) {
  size_t r = c.typeOf(x).shape.size();
  if (c.typeOf(x).shape == shape) return x;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < r; ++i)
    dims.push_back(static_cast<int64_t>(i));
  return c.g.broadcastInDim(x, shape, dims);
}

/// Shape `s` from axis `from` to axis `to` (excluded).
Shape axes(const Shape& s, size_t from, size_t to) {
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(from),
               s.begin() + static_cast<std::ptrdiff_t>(to));
}

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The one element of `values` that `mask` (of values' shape) marks along `axis`, the axis
/// dropped, kept exactly (a float's NaN and sign of zero too): the maximum over -inf for
/// floats, the sum over 0 for integers, any of (mask and value) for bools. Where the mask marks
/// nothing: -inf, 0 or false.
NodeId pickMarked(NodeContext& c, NodeId mask, NodeId values, int64_t axis,
                  const std::string& name) {
  DType t = c.typeOf(values).dtype;
  if (ir::isBool(t))
    return c.g.reduce(ReduceKind::Any, c.g.binary(OpKind::And, mask, values), {axis}, name);
  bool real = ir::isFloat(t);
  NodeId kept = c.g.select(mask, values, c.splatLike(values, real ? -kInfinity : 0.0));
  return c.g.reduce(real ? ReduceKind::Max : ReduceKind::Sum, kept, {axis}, name);
}

/// Input i, which holds indices, as i64; fails unless it holds integers.
NodeId indicesOf(NodeContext& c, size_t i) {
  NodeId idx = c.in(i);
  DType t = c.typeOf(idx).dtype;
  if (!ir::isInteger(t)) c.fail(fmt::format("indices must be integers, not {}", ir::dtypeName(t)));
  return c.convertTo(idx, DType::i64);
}

/// Where each index tuple (idx's last axis, of static length m = sizes.size(), i64) points
/// into the static `sizes`, as a row-major position among their product; negative entries
/// count from the end. A tuple with an entry out of range gets -1, which no position has.
/// The result has idx's shape without its last axis.
NodeId flatPositions(NodeContext& c, NodeId idx, const std::vector<int64_t>& sizes) {
  Shape is = c.typeOf(idx).shape;
  Shape tuples = axes(is, 0, is.size() - 1);
  auto m = static_cast<int64_t>(sizes.size());
  if (m == 0) return c.splat(DType::i64, tuples, 0.0); // the empty tuple: the one position
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t t = sizes.size() - 1; t > 0; --t)
    strides[t - 1] = strides[t] * sizes[t];
  auto along = [&](const std::vector<int64_t>& v) {
    NodeId lit = c.constant(Literal::ofInts(DType::i64, {m}, v));
    return c.g.broadcastInDim(lit, is, {static_cast<int64_t>(is.size() - 1)});
  };
  NodeId size = along(sizes);
  NodeId zero = c.splatLike(idx, 0.0);
  NodeId wrapped =
      c.g.select(c.g.compare(CompareDir::LT, idx, zero), c.g.binary(OpKind::Add, idx, size), idx);
  NodeId inRange = c.g.binary(OpKind::And, c.g.compare(CompareDir::GE, wrapped, zero),
                              c.g.compare(CompareDir::LT, wrapped, size));
  auto last = static_cast<int64_t>(is.size() - 1);
  NodeId valid = c.g.reduce(ReduceKind::All, inRange, {last});
  // An out-of-range entry may overflow its product; the tuple is replaced by -1 anyway.
  NodeId offset = c.g.binary(OpKind::Mul, wrapped, along(strides));
  NodeId position = c.g.reduce(ReduceKind::Sum, offset, {last});
  return c.g.select(valid, position, c.splatLike(position, -1.0));
}

/// The sizes of data's axes [from, from + m), which index tuples address: they must be static
/// (the position of a tuple is computed with them).
std::vector<int64_t> addressedSizes(NodeContext& c, const Shape& ds, size_t from, size_t m) {
  std::vector<int64_t> sizes;
  for (size_t d = from; d < from + m; ++d) {
    if (!ds[d].isStatic())
      c.unsupported(fmt::format("{} indexing axis {} of symbolic size {} of data {} is not "
                                "supported",
                                c.node.op_type(), d, ds[d].str(), ir::shapeStr(ds)));
    sizes.push_back(ds[d].size());
  }
  return sizes;
}

/// The product of `sizes`, failing when it is past int64 (no tensor has that many elements).
int64_t product(NodeContext& c, const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) c.fail("the indexed axes have more than 2^63 elements");
  return n;
}

/// Marks the output's ONNX element type as data's when weft holds it in a wider integer
/// (UINT8 in i32, ...) or as UINT64 in i64: the output holds data's elements (or their max and min), so the
/// narrow type carries on (keepNarrowTypes in importer.cc, for the operators it lists).
void keepDataType(NodeContext& c, size_t output) {
  if (heldNarrowBits(c.onnxType(0)) != 0 || isUnsigned64(c.onnxType(0)))
    c.setOutputOnnxType(output, c.onnxType(0));
}

// ---------------------------------------------------------------- TopK

/// Whether a comes after b in ascending order with NaN above everything (numpy's sort, which
/// ONNX's reference TopK uses): a > b, or a is NaN and b is not.
NodeId sortsAfter(NodeContext& c, NodeId a, NodeId b) {
  NodeId after = c.g.compare(CompareDir::GT, a, b);
  if (!ir::isFloat(c.typeOf(a).dtype)) return after;
  NodeId nanOverNumber =
      c.g.binary(OpKind::And, c.g.compare(CompareDir::NE, a, a), c.g.compare(CompareDir::EQ, b, b));
  return c.g.binary(OpKind::Or, after, nanOverNumber);
}

/// Each element's place in TopK's order of its row along `axis` (i64, 0 first): the number of
/// elements of the row that come before it. Element j comes before element i when it is
/// larger (largest) or smaller (smallest), NaN counting as larger than any number, or when the
/// two are tied (NaNs tie with each other, -0 with 0) and j < i: ONNX puts the lower index
/// first. This is a strict total order, so the places of a row are 0 .. n-1, each once. It is
/// computed over every pair [.., n(i), n(j), ..]: quadratic in the axis length.
NodeId placesInOrder(NodeContext& c, NodeId x, size_t axis, bool largest) {
  Shape s = c.typeOf(x).shape;
  size_t r = s.size(), j = axis + 1;
  Shape pairs = inserted(s, j, s[axis]);
  NodeId xi = c.g.broadcastInDim(x, pairs, skipping(r, j));
  NodeId xj = c.g.broadcastInDim(x, pairs, skipping(r, axis));
  NodeId jBeyond = largest ? sortsAfter(c, xj, xi) : sortsAfter(c, xi, xj);
  NodeId iBeyond = largest ? sortsAfter(c, xi, xj) : sortsAfter(c, xj, xi);
  NodeId jLower = c.g.compare(CompareDir::LT, c.g.iota(DType::i64, pairs, static_cast<int64_t>(j)),
                              c.g.iota(DType::i64, pairs, static_cast<int64_t>(axis)));
  NodeId tieFirst = c.g.binary(OpKind::And, c.g.unary(OpKind::Not, iBeyond), jLower);
  NodeId before = c.g.binary(OpKind::Or, jBeyond, tieFirst);
  return c.g.reduce(ReduceKind::Sum, c.g.convert(before, DType::i64), {static_cast<int64_t>(j)});
}

/// Rounds beat ranks when k is this small against a static row of n: k rounds of a reduce
/// over n elements cost k n, the ranks n^2 (a row of 50,000 would be 2.5e9 pairs).
bool pickByRounds(const Dim& n, int64_t k) {
  return n.isStatic() && k <= 64 && k * 8 < n.size();
}

/// TopK by k rounds along `axis` of x (static length n): each round picks, among the elements
/// not picked yet, the largest (smallest) value — NaN counting as larger than any number, as in
/// placesInOrder — at its lowest position, and marks it; the values are then gathered from
/// those positions. The values and positions ([.., k, ..]) are named `valuesName` and
/// `positionsName`. Integers are ranked by a key whose largest is the wanted one (x, or -1 - x
/// for the smallest: exact, order reversed), so that the lowest integer marks an element
/// picked already.
std::pair<NodeId, NodeId> topKByRounds(NodeContext& c, NodeId x, size_t axis, int64_t k,
                                       bool largest, const std::string& valuesName,
                                       const std::string& positionsName) {
  const Shape s = c.typeOf(x).shape;
  const DType t = c.typeOf(x).dtype;
  const bool real = ir::isFloat(t);
  const auto ax = static_cast<int64_t>(axis);
  const int64_t n = s[axis].size();
  std::vector<int64_t> kept; // x's axes but `axis`, into a reduced value's broadcast
  for (size_t i = 0; i < s.size(); ++i)
    if (i != axis) kept.push_back(static_cast<int64_t>(i));
  auto spread = [&](NodeId reduced) { return c.g.broadcastInDim(reduced, s, kept); };
  Shape one = s;
  one[axis] = Dim(1);
  auto asSlot = [&](NodeId reduced) { return c.g.reshape(reduced, one); };
  const bool useMax = largest || !real;
  const NodeId key = real || largest ? x : c.g.binary(OpKind::Sub, c.splatLike(x, -1), x);
  const double picked = real ? (largest ? -kInfinity : kInfinity) : lowestValue(t);
  const NodeId position = c.g.iota(DType::i64, s, ax);
  const NodeId isNaN = real ? c.g.compare(CompareDir::NE, x, x) : c.splat(DType::boolean, s, 0);
  const NodeId isNumber = c.g.unary(OpKind::Not, isNaN);
  NodeId left = c.splat(DType::boolean, s, 1); // not picked yet
  std::vector<NodeId> positions;
  for (int64_t r = 0; r < k; ++r) {
    NodeId leftNumber = c.g.binary(OpKind::And, left, isNumber);
    NodeId candidates = c.g.select(leftNumber, key, c.splatLike(key, picked));
    NodeId best = c.g.reduce(useMax ? ReduceKind::Max : ReduceKind::Min, candidates, {ax});
    NodeId hit =
        c.g.binary(OpKind::And, leftNumber, c.g.compare(CompareDir::EQ, key, spread(best)));
    if (real) { // a NaN left goes first (largest) or only once no number is left (smallest)
      NodeId leftNaN = c.g.binary(OpKind::And, left, isNaN);
      NodeId nanNext = largest ? c.g.reduce(ReduceKind::Any, leftNaN, {ax})
                               : c.g.unary(OpKind::Not, c.g.reduce(ReduceKind::Any, leftNumber, {ax}));
      hit = c.g.select(spread(nanNext), leftNaN, hit);
    }
    NodeId at = c.g.reduce(ReduceKind::Min,
                           c.g.select(hit, position, c.splatLike(position, double(n))), {ax});
    NodeId mark = c.g.compare(CompareDir::EQ, position, spread(at));
    positions.push_back(asSlot(at));
    left = c.g.binary(OpKind::And, left, c.g.unary(OpKind::Not, mark));
  }
  NodeId picks = c.g.concatenate(positions, ax, positionsName);
  // The values: x at the picked positions (each within the row), a gather.
  return {c.g.gather(x, {picks}, {ax}, kept, valuesName), picks};
}

/// TopK: the k largest (or, with largest = 0 from opset 11, smallest) elements along `axis`
/// (default -1) and their positions (int64), in order, ties to the lower position; NaN counts
/// as the largest value. k is an attribute in opset 1 and input K (one int64) from opset 10,
/// which must be known at import time: it is the outputs' size. `sorted` = 0 lets the order be
/// anything; the sorted order is returned. Built as each element's place in the order
/// (placesInOrder) and a one-hot pick of the places 0 .. k-1, or, for a small k against a long
/// static row, as k rounds of picking the next one's position and a gather of the values
/// there (topKByRounds). A symbolic axis is allowed: a run-time length below k leaves the value
/// -inf (0 for integers) and the index 0 past it (pickMarked).
void lowerTopK(NodeContext& c) {
  NodeId x = c.in(0);
  ir::TensorType t = c.typeOf(x);
  const Shape& s = t.shape;
  if (s.empty()) c.fail("needs an input of rank 1 or more");
  if (ir::isBool(t.dtype)) c.fail("takes numbers, not bool");
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", -1), s.size(), "axis"));
  int64_t k = 0;
  if (c.opset < 10) {
    k = c.requireAttrInt("k");
  } else {
    std::vector<int64_t> given = c.constInts(1, "K");
    if (given.size() != 1) c.fail(fmt::format("K must hold one value, it holds {}", given.size()));
    k = given[0];
  }
  if (k < 0) c.fail(fmt::format("k {} must not be negative", k));
  if (s[axis].isStatic() && k > s[axis].size())
    c.fail(fmt::format("k {} is more than the {} elements of axis {} of input {}", k,
                       s[axis].size(), axis, ir::shapeStr(s)));
  bool largest = c.opset < 11 || c.attrInt("largest", 1) != 0;
  (void)c.attrInt("sorted", 1); // any order is allowed unsorted: the sorted one is given either way
  if (k > 0 && pickByRounds(s[axis], k)) {
    auto [values, positions] = topKByRounds(c, x, axis, k, largest, c.name(0), c.name(1));
    c.setOutput(0, values);
    keepDataType(c, 0);
    c.setOutput(1, positions);
    return;
  }
  NodeId places = placesInOrder(c, x, axis, largest);
  size_t rankAxis = axis + 1;
  Shape picks = inserted(s, rankAxis, Dim(k)); // [.., n, k, ..]: element, place
  NodeId wanted = c.g.iota(DType::i64, picks, static_cast<int64_t>(rankAxis));
  NodeId hit = c.g.compare(CompareDir::EQ,
                           c.g.broadcastInDim(places, picks, skipping(s.size(), rankAxis)), wanted);
  auto ax = static_cast<int64_t>(axis);
  if (c.wantsOutput(0)) {
    NodeId xs = c.g.broadcastInDim(x, picks, skipping(s.size(), rankAxis));
    c.setOutput(0, pickMarked(c, hit, xs, ax, c.name(0)));
    keepDataType(c, 0);
  }
  if (c.wantsOutput(1))
    c.setOutput(1, pickMarked(c, hit, c.g.iota(DType::i64, picks, ax), ax, c.name(1)));
}

// ---------------------------------------------------------------- GatherND

/// GatherND (opset 11; batch_dims from 12): data [B.., N0..Nm-1, R..] and indices [B.., I..,
/// m] give y [B.., I.., R..], y[b, i, r] = data[b, indices[b, i, :], r]: the IR's gather, which
/// reads only the slices it gathers. Its m index operands are the columns of indices, each
/// broadcast over R.., negative entries counted from the end of their axis (which must be
/// static). A tuple with an entry out of range gives a slice of 0.
void lowerGatherND(NodeContext& c) {
  if (c.opset < 11) c.fail("GatherND is defined from opset 11");
  NodeId data = c.in(0);
  const Shape ds = c.typeOf(data).shape;
  NodeId idx = indicesOf(c, 1);
  const Shape is = c.typeOf(idx).shape;
  if (ds.empty() || is.empty())
    c.fail(fmt::format("data {} and indices {} need rank 1 or more", ir::shapeStr(ds),
                       ir::shapeStr(is)));
  if (c.opset < 12 && c.hasAttr("batch_dims"))
    c.fail("GatherND-11 has no attribute \"batch_dims\" (defined from opset 12)");
  int64_t b = c.attrInt("batch_dims", 0);
  if (b < 0 || static_cast<size_t>(b) >= std::min(ds.size(), is.size()))
    c.fail(fmt::format("batch_dims {} must be at least 0 and less than the ranks of data {} and "
                       "indices {}",
                       b, ir::shapeStr(ds), ir::shapeStr(is)));
  auto batch = static_cast<size_t>(b);
  const Dim& tuple = is.back();
  if (!tuple.isStatic())
    c.unsupported(fmt::format("indices {} with a symbolic last axis (the index tuple's length) "
                              "are not supported",
                              ir::shapeStr(is)));
  int64_t m = tuple.size();
  if (m < 1 || static_cast<size_t>(m) > ds.size() - batch)
    c.fail(fmt::format("the last axis of indices {} ({}) must be from 1 to {} (data {} less "
                       "batch_dims {})",
                       ir::shapeStr(is), m, ds.size() - batch, ir::shapeStr(ds), b));
  for (size_t d = 0; d < batch; ++d)
    if (ds[d].isStatic() && is[d].isStatic() && ds[d] != is[d])
      c.fail(fmt::format("data {} and indices {} differ on batch axis {}", ir::shapeStr(ds),
                         ir::shapeStr(is), d));
  auto um = static_cast<size_t>(m);
  std::vector<int64_t> sizes = addressedSizes(c, ds, batch, um);
  // A symbolic batch dim must equal data's: a reshape of the indices to it unifies the two
  // (symbol_unification.h), or fails naming both.
  for (size_t d = 0; d < batch; ++d) {
    Shape now = c.typeOf(idx).shape;
    const Dim want = c.typeOf(data).shape[d];
    if (now[d] == want) continue;
    now[d] = want;
    idx = c.g.reshape(idx, now);
  }
  const Shape unified = c.typeOf(idx).shape;
  const Shape lead = axes(unified, 0, unified.size() - 1);
  const Shape out = concat(lead, axes(c.typeOf(data).shape, batch + um, ds.size()));
  std::vector<NodeId> columns;
  std::vector<int64_t> gathered, dims;
  for (size_t j = 0; j < um; ++j) {
    std::vector<int64_t> lo(unified.size(), 0), hi(unified.size(), -1), st(unified.size(), 1);
    lo.back() = static_cast<int64_t>(j);
    hi.back() = static_cast<int64_t>(j) + 1;
    NodeId column = c.g.reshape(c.g.slice(idx, lo, hi, st), lead);
    NodeId wrapped = frontend::wrapNegativeIndices(c.site(), column, Dim(sizes[j]), "GatherND");
    columns.push_back(leading(c, wrapped, out));
    gathered.push_back(static_cast<int64_t>(batch + j));
  }
  for (size_t d = 0; d < batch; ++d) // data's batch axes are the result's first ones
    dims.push_back(static_cast<int64_t>(d));
  for (size_t d = batch + um; d < ds.size(); ++d) // and its R.. axes its last ones
    dims.push_back(static_cast<int64_t>(lead.size() + d - batch - um));
  c.setOutput(0, c.g.gather(data, std::move(columns), std::move(gathered), std::move(dims),
                            c.name()));
  keepDataType(c, 0);
}

// ---------------------------------------------------------------- ScatterElements, ScatterND

enum class Reduction { None, Add, Mul, Max, Min };

/// The `reduction` attribute: from opset 16 "none" (the default), "add" or "mul", from 18
/// "max" and "min" too; before 16 (and in Scatter) there is none.
Reduction reductionOf(NodeContext& c) {
  bool defined = c.node.op_type() != "Scatter" && c.opset >= 16;
  if (!defined) {
    if (c.hasAttr("reduction"))
      c.fail(fmt::format("{} at opset {} has no attribute \"reduction\" (ScatterElements and "
                         "ScatterND have it from opset 16)",
                         c.node.op_type(), c.opset));
    return Reduction::None;
  }
  std::string r = c.attrString("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max" || r == "min") {
    if (c.opset < 18)
      c.fail(fmt::format("reduction \"{}\" is defined from opset 18 (opset {} has none, add and "
                         "mul)",
                         r, c.opset));
    return r == "max" ? Reduction::Max : Reduction::Min;
  }
  c.fail(fmt::format("reduction \"{}\" must be none, add, mul, max or min", r));
}

/// data (shape D) with the updates combined in. `updates` has shape W, which is D with the
/// updates' axis `j` inserted; `hit` (bool, W's leading axes, j among them) marks where each
/// update lands. With reduction none an element takes its last (largest j) landing update,
/// and keeps data's value where none lands; add, mul, max and min combine data's value with
/// every landing update (for bools: add and max are or, mul and min are and, as numpy's).
/// Float max and min propagate NaN; float sums and products are rounded in another order than
/// the reference's one update after another.
NodeId combineUpdates(NodeContext& c, NodeId data, NodeId hit, NodeId updates, int64_t j,
                      Reduction reduction, const std::string& name) {
  const Shape wide = c.typeOf(updates).shape, hitShape = c.typeOf(hit).shape;
  const Shape dataShape = c.typeOf(data).shape;
  const bool bools = ir::isBool(c.typeOf(data).dtype);
  NodeId hitWide = leading(c, hit, wide);
  if (bools && reduction != Reduction::None) {
    bool any = reduction == Reduction::Add || reduction == Reduction::Max;
    // or: some landing update is true; and: no landing update is false
    NodeId voted = any ? c.g.binary(OpKind::And, hitWide, updates)
                       : c.g.select(hitWide, updates, c.splatLike(updates, 1.0));
    NodeId folded = c.g.reduce(any ? ReduceKind::Any : ReduceKind::All, voted, {j});
    return c.g.binary(any ? OpKind::Or : OpKind::And, data, folded, name);
  }
  switch (reduction) {
  case Reduction::None: {
    NodeId order = c.g.iota(DType::i64, hitShape, j);
    NodeId landed = c.g.select(hit, order, c.splatLike(order, -1.0));
    NodeId last = c.g.reduce(ReduceKind::Max, landed, {j}); // -1 (or less) where none lands
    NodeId lastBack =
        c.g.broadcastInDim(last, hitShape, skipping(hitShape.size() - 1, static_cast<size_t>(j)));
    NodeId taken = leading(c, c.g.compare(CompareDir::EQ, order, lastBack), wide);
    NodeId picked = pickMarked(c, taken, updates, j, "");
    NodeId any = c.g.compare(CompareDir::GE, last, c.splatLike(last, 0.0));
    return c.g.select(leading(c, any, dataShape), picked, data, name);
  }
  case Reduction::Add: {
    NodeId terms = c.g.select(hitWide, updates, c.splatLike(updates, 0.0));
    NodeId sum = c.g.reduce(ReduceKind::Sum, terms, {j});
    // data itself where nothing lands: data + 0 would turn -0 into 0
    NodeId any = leading(c, c.g.reduce(ReduceKind::Any, hit, {j}), dataShape);
    return c.g.select(any, c.g.binary(OpKind::Add, data, sum), data, name);
  }
  case Reduction::Mul: {
    NodeId factors = c.g.select(hitWide, updates, c.splatLike(updates, 1.0));
    return c.g.binary(OpKind::Mul, data, c.g.reduce(ReduceKind::Prod, factors, {j}), name);
  }
  case Reduction::Max:
  case Reduction::Min: {
    // Unmarked terms are data's own value, which leaves the extreme as it is.
    NodeId dataWide =
        c.g.broadcastInDim(data, wide, skipping(dataShape.size(), static_cast<size_t>(j)));
    NodeId terms = c.g.select(hitWide, updates, dataWide);
    bool max = reduction == Reduction::Max;
    NodeId extreme = c.g.reduce(max ? ReduceKind::Max : ReduceKind::Min, terms, {j});
    return c.g.binary(max ? OpKind::Max : OpKind::Min, data, extreme, name);
  }
  }
  return data;
}

/// Where weft holds data's ONNX type in a wider integer (UINT8 in i32, ...), a sum or product
/// may leave its range and is brought back into it (castTo, as Cast wraps).
bool wrapsNarrow(NodeContext& c, Reduction reduction) {
  return heldNarrowBits(c.onnxType(0)) != 0 &&
         (reduction == Reduction::Add || reduction == Reduction::Mul);
}

/// The name of the scatter's last op before setScatterOutput: the output's, unless a wrap
/// follows.
std::string scatterName(NodeContext& c, Reduction reduction) {
  return wrapsNarrow(c, reduction) ? "" : c.name();
}

/// Sets the scatter's output y, wrapped into data's narrow ONNX type where it needs (the type
/// carries on).
void setScatterOutput(NodeContext& c, NodeId y, Reduction reduction) {
  if (wrapsNarrow(c, reduction)) y = castTo(c, y, c.onnxType(0), c.name());
  c.setOutput(0, y);
  keepDataType(c, 0);
}

/// data and updates must have one dtype; updates must have the shape of `expected` (where
/// both are static: a symbolic pair is unified by the broadcasts that follow).
void checkUpdates(NodeContext& c, NodeId data, NodeId updates, const Shape& expected,
                  const std::string& rule) {
  requireSameDType(c, data, updates);
  Shape us = c.typeOf(updates).shape;
  bool fits = us.size() == expected.size();
  for (size_t d = 0; fits && d < us.size(); ++d)
    fits = !(us[d].isStatic() && expected[d].isStatic() && us[d] != expected[d]);
  if (!fits)
    c.fail(fmt::format("updates {} must have the shape {} ({})", ir::shapeStr(us),
                       ir::shapeStr(expected), rule));
}

/// ScatterElements (opset 11; reduction from 16) and Scatter (opset 9, its deprecated alias;
/// ONNX keeps the same schema at 11): y = data, then for each position p of indices (data's
/// rank), y[p with axis a replaced by indices[p]] = updates[p] (or combined by the reduction).
/// Built over W = data's shape with the indices' axis inserted after `axis`: an update lands
/// where its index equals the iota of data's axis. Indices shorter than data on another axis
/// are padded with -1 (lands nowhere); negative indices count from the end; one out of range
/// lands nowhere either.
void lowerScatterElements(NodeContext& c) {
  const std::string& op = c.node.op_type();
  int since = op == "Scatter" ? 9 : 11;
  if (c.opset < since) c.fail(fmt::format("{} is defined from opset {}", op, since));
  Reduction reduction = reductionOf(c);
  NodeId data = c.in(0), updates = c.in(2);
  Shape ds = c.typeOf(data).shape;
  NodeId idx = indicesOf(c, 1);
  Shape is = c.typeOf(idx).shape;
  if (ds.empty()) c.fail("needs data of rank 1 or more");
  if (is.size() != ds.size())
    c.fail(fmt::format("indices {} must have the rank of data {}", ir::shapeStr(is),
                       ir::shapeStr(ds)));
  checkUpdates(c, data, updates, is, "the shape of indices");
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", 0), ds.size(), "axis"));
  if (!ds[axis].isStatic())
    c.unsupported(fmt::format("{} along axis {} of symbolic size {} is not supported", op, axis,
                              ds[axis].str()));
  int64_t n = ds[axis].size();
  NodeId negative = c.g.compare(CompareDir::LT, idx, c.splatLike(idx, 0.0));
  idx = c.g.select(negative, c.g.binary(OpKind::Add, idx, c.splatLike(idx, static_cast<double>(n))),
                   idx);
  std::vector<int64_t> low(ds.size(), 0), high(ds.size(), 0);
  bool padded = false;
  for (size_t d = 0; d < ds.size(); ++d) {
    // A symbolic dim must equal its counterpart: the broadcasts below unify them.
    if (d == axis || !is[d].isStatic() || !ds[d].isStatic() || is[d] == ds[d]) continue;
    if (is[d].size() > ds[d].size())
      c.fail(fmt::format("indices {} exceed data {} on axis {} (only axis {} may be longer)",
                         ir::shapeStr(is), ir::shapeStr(ds), d, axis));
    high[d] = ds[d].size() - is[d].size();
    padded = true;
  }
  if (padded) {
    idx = c.g.pad(idx, low, high, -1.0);
    updates = c.g.pad(updates, low, high, 0.0);
  }
  size_t j = axis + 1; // the updates' axis, next to data's
  Shape wide = inserted(ds, j, is[axis]);
  NodeId at = c.g.broadcastInDim(idx, wide, skipping(ds.size(), axis));
  NodeId hit =
      c.g.compare(CompareDir::EQ, at, c.g.iota(DType::i64, wide, static_cast<int64_t>(axis)));
  NodeId spread = c.g.broadcastInDim(updates, wide, skipping(ds.size(), axis));
  NodeId y = combineUpdates(c, data, hit, spread, static_cast<int64_t>(j), reduction,
                            scatterName(c, reduction));
  setScatterOutput(c, y, reduction);
}

/// ScatterND (opset 11; reduction from 16): data [N0..Nm-1, R..], indices [P.., m] and updates
/// [P.., R..]: y = data, then y[indices[p, :]] = updates[p] (a slice [R..]; combined by the
/// reduction) for each p in row-major order. The m indexed axes (static) are flattened to one
/// of N positions and the P axes to one of U updates; over W = [N, U, R..] an update lands
/// where its tuple's position (flatPositions) equals the iota of N. A tuple out of range lands
/// nowhere.
void lowerScatterND(NodeContext& c) {
  if (c.opset < 11) c.fail("ScatterND is defined from opset 11");
  Reduction reduction = reductionOf(c);
  NodeId data = c.in(0), updates = c.in(2);
  Shape ds = c.typeOf(data).shape;
  NodeId idx = indicesOf(c, 1);
  Shape is = c.typeOf(idx).shape;
  if (ds.empty() || is.empty())
    c.fail(fmt::format("data {} and indices {} need rank 1 or more", ir::shapeStr(ds),
                       ir::shapeStr(is)));
  if (!is.back().isStatic())
    c.unsupported(fmt::format("indices {} with a symbolic last axis (the index tuple's length) "
                              "are not supported",
                              ir::shapeStr(is)));
  int64_t m = is.back().size();
  if (static_cast<size_t>(m) > ds.size())
    c.fail(fmt::format("the last axis of indices {} ({}) exceeds the rank of data {}",
                       ir::shapeStr(is), m, ir::shapeStr(ds)));
  auto um = static_cast<size_t>(m);
  Shape lead = axes(is, 0, is.size() - 1), rest = axes(ds, um, ds.size());
  checkUpdates(c, data, updates, concat(lead, rest),
               "indices' but the last axis, then data's past the indexed ones");
  std::vector<int64_t> sizes = addressedSizes(c, ds, 0, um);
  int64_t n = product(c, sizes);
  Dim u = ir::numElements(lead);
  NodeId position = c.reshapeTo(flatPositions(c, idx, sizes), {u});
  NodeId flatData = c.reshapeTo(data, inserted(rest, 0, Dim(n)));
  NodeId flatUpdates = c.reshapeTo(updates, inserted(rest, 0, u));
  Shape hitShape{Dim(n), u};
  NodeId hit = c.g.compare(CompareDir::EQ, c.g.broadcastInDim(position, hitShape, {1}),
                           c.g.iota(DType::i64, hitShape, 0));
  Shape wide = concat(hitShape, rest);
  NodeId spread = c.g.broadcastInDim(flatUpdates, wide, skipping(rest.size() + 1, 0));
  bool flattened = c.typeOf(flatData).shape != ds;
  NodeId y = combineUpdates(c, flatData, hit, spread, 1, reduction,
                            flattened ? "" : scatterName(c, reduction));
  if (flattened) y = c.g.reshape(y, ds, scatterName(c, reduction));
  setScatterOutput(c, y, reduction);
}

// ---------------------------------------------------------------- MaxUnpool

/// MaxUnpool's spatial attribute `name`: n values (2n for pads), each >= `min`; `dflt` for each
/// when absent.
std::vector<int64_t> unpoolAttr(NodeContext& c, const std::string& name, size_t n, int64_t dflt,
                                int64_t min) {
  std::optional<std::vector<int64_t>> v = c.attrInts(name);
  if (!v) return std::vector<int64_t>(n, dflt);
  if (v->size() != n)
    c.fail(fmt::format("{} {} has {} values, not {} (X has {} spatial axes)", name, listStr(*v),
                       v->size(), n, name == "pads" ? n / 2 : n));
  for (int64_t x : *v)
    if (x < min) c.fail(fmt::format("{} {} has a value below {}", name, listStr(*v), min));
  return *v;
}

/// The shape MaxUnpool scatters into: X's N and C, and on each spatial axis
/// (D - 1) * stride - (pad_begin + pad_end) + kernel (the input of the MaxPool that made X).
Shape unpooledShape(NodeContext& c, const Shape& xs) {
  size_t n = xs.size() - 2;
  std::vector<int64_t> kernel = c.requireAttrInts("kernel_shape");
  if (kernel.size() != n)
    c.fail(fmt::format("kernel_shape {} has {} values, not {} (X {} has {} spatial axes)",
                       listStr(kernel), kernel.size(), n, ir::shapeStr(xs), n));
  for (int64_t k : kernel)
    if (k < 1) c.fail(fmt::format("kernel_shape {} has a value below 1", listStr(kernel)));
  std::vector<int64_t> strides = unpoolAttr(c, "strides", n, 1, 1);
  std::vector<int64_t> pads = unpoolAttr(c, "pads", 2 * n, 0, 0);
  Shape shape{xs[0], xs[1]};
  for (size_t i = 0; i < n; ++i) {
    const Dim& d = xs[i + 2];
    if (!d.isStatic())
      c.unsupported(fmt::format("X {} has the symbolic spatial dim {} (axis {}); MaxUnpool needs "
                                "static spatial sizes",
                                ir::shapeStr(xs), d.str(), i + 2));
    int64_t size;
    if (__builtin_mul_overflow(d.size() - 1, strides[i], &size) ||
        __builtin_sub_overflow(size, pads[i], &size) ||
        __builtin_sub_overflow(size, pads[i + n], &size) ||
        __builtin_add_overflow(size, kernel[i], &size))
      c.fail(fmt::format("the unpooled size of spatial axis {} overflows int64", i));
    if (size < 0)
      c.fail(fmt::format("on spatial axis {} the unpooled size (X's {} - 1) * stride {} - pads {} "
                         "and {} + kernel {} is {}, below 0",
                         i, d.size(), strides[i], pads[i], pads[i + n], kernel[i], size));
    shape.push_back(Dim(size));
  }
  return shape;
}

/// MaxUnpool (opset 9; 11 says more about pads, same schema): y = zeros of the unpooled shape
/// (unpooledShape), y.flat[I[p]] = X[p] for each position p of X, in row-major order (the
/// last of several updates of one element wins, as in ONNX's reference). With output_shape
/// (input 2, known at import time) y is that shape, the unpooled tensor at its start on each
/// axis and zeros after it (the reference's behaviour: the indices address the unpooled shape).
/// An index outside [0, size) lands nowhere (ONNX calls it an error). The scatter is a mask
/// over every (element of y, element of X) pair: quadratic in the sizes, as ScatterND's.
void lowerMaxUnpool(NodeContext& c) {
  if (c.opset < 9) c.fail("MaxUnpool is defined from opset 9");
  NodeId x = c.in(0);
  const ir::TensorType xt = c.typeOf(x);
  const Shape xs = xt.shape;
  if (!ir::isFloat(xt.dtype))
    c.fail(fmt::format("X has dtype {}; MaxUnpool takes floating-point tensors",
                       ir::dtypeName(xt.dtype)));
  if (xs.size() < 3)
    c.fail(fmt::format("X {} needs rank 3 or more (N, C, D1, ...)", ir::shapeStr(xs)));
  NodeId idx = indicesOf(c, 1);
  if (!(c.typeOf(idx).shape == xs))
    c.fail(fmt::format("I {} must have the shape of X {}", ir::shapeStr(c.typeOf(idx).shape),
                       ir::shapeStr(xs)));
  const Shape unpooled = unpooledShape(c, xs);
  std::vector<int64_t> high(xs.size(), 0);
  bool padded = false;
  if (c.has(2)) {
    std::vector<int64_t> given = c.constInts(2, "output_shape");
    if (given.size() != xs.size())
      c.fail(fmt::format("output_shape {} has {} values; it must give all of the output's {} dims",
                         listStr(given), given.size(), xs.size()));
    for (size_t d = 0; d < xs.size(); ++d) {
      if (!unpooled[d].isStatic())
        c.unsupported(fmt::format("output_shape {} with X {}'s symbolic dim {} (axis {}) is not "
                                  "supported",
                                  listStr(given), ir::shapeStr(xs), unpooled[d].str(), d));
      if (given[d] < unpooled[d].size())
        c.fail(fmt::format("output_shape {} is smaller than the unpooled shape {} on axis {}",
                           listStr(given), ir::shapeStr(unpooled), d));
      high[d] = given[d] - unpooled[d].size();
      padded |= high[d] > 0;
    }
  }
  const Dim total = ir::numElements(unpooled), count = ir::numElements(xs);
  NodeId positions = c.reshapeTo(idx, {count});
  NodeId updates = c.reshapeTo(x, {count});
  Shape wide{total, count}; // [element of y, element of X]
  NodeId hit = c.g.compare(CompareDir::EQ, c.g.broadcastInDim(positions, wide, {1}),
                           c.g.iota(DType::i64, wide, 0));
  NodeId spread = c.g.broadcastInDim(updates, wide, {1});
  NodeId zeros = c.splat(xt.dtype, {total}, 0.0);
  NodeId y = combineUpdates(c, zeros, hit, spread, 1, Reduction::None, "");
  y = c.g.reshape(y, unpooled, padded ? "" : c.name());
  if (padded) y = c.g.pad(y, std::vector<int64_t>(xs.size(), 0), high, 0.0, c.name());
  c.setOutput(0, y);
}

} // namespace

void addScatterOps(OperatorTable& t) {
  t["TopK"] = lowerTopK;
  t["GatherND"] = lowerGatherND;
  t["ScatterElements"] = lowerScatterElements;
  t["Scatter"] = lowerScatterElements;
  t["ScatterND"] = lowerScatterND;
  t["MaxUnpool"] = lowerMaxUnpool;
}

} // namespace weft::onnx
