// Sampling ONNX operators: GridSample (opsets 16, 20), AffineGrid (20) and RoiAlign (10, 16).
//
// GridSample and RoiAlign read their input at positions computed at run time (from the grid,
// from the rois), each read a gather (the IR's), which reads only the elements it gathers. A
// position is a float holding an integer; one outside its axis, or NaN, becomes the index -1,
// which reads 0 (GridSample's zeros padding), so that no float is converted to an integer it
// does not fit. GridSample interpolates the last spatial axis innermost, as ONNX's reference
// does: an output position has taps along each axis (2 for linear, 4 for cubic, 1 for
// nearest), and its value is the sum over the first axis's taps of each one's weight times
// the sum over the next axis's taps of ..., one gather per combination of taps, each reading
// one element per output position. A tap outside its axis is selected away rather than
// multiplied by the 0 it reads, whatever its weight. RoiAlign gathers the four corners of each
// bilinear sample of each bin at once and averages them weighted (avg) or takes the largest
// weighted corner (max).
//
// The spatial sizes must be static; batch, channel and roi counts may be symbolic.
#include <algorithm>
#include <array>
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

/// Corners RoiAlign gathers per roi and channel at most (bins x samples x 4), and samples per
/// bin an adaptive grid takes at most along an axis.
constexpr int64_t kMaxReadsPerChannel = int64_t(1) << 24;

// ---------------------------------------------------------------- arithmetic helpers

NodeId plus(NodeContext& c, NodeId x, double v) {
  return c.g.binary(OpKind::Add, x, c.splatLike(x, v));
}
NodeId times(NodeContext& c, NodeId x, double v) {
  return c.g.binary(OpKind::Mul, x, c.splatLike(x, v));
}
/// v - x
NodeId minus(NodeContext& c, double v, NodeId x) {
  return c.g.binary(OpKind::Sub, c.splatLike(x, v), x);
}
NodeId compareTo(NodeContext& c, CompareDir dir, NodeId x, double v) {
  return c.g.compare(dir, x, c.splatLike(x, v));
}

/// The product of `sizes`, saturated at int64's maximum.
int64_t product(std::initializer_list<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(p, s, &p)) return std::numeric_limits<int64_t>::max();
  return p;
}

/// A spatial size, which must be static: fails (unsupported) naming `what` otherwise.
int64_t staticSize(NodeContext& c, const Dim& d, const std::string& what) {
  if (!d.isStatic())
    c.unsupported(fmt::format("{} has symbolic size {}; {} needs static spatial sizes (the "
                              "positions it reads are worked out from them)",
                              what, d.str(), c.node.op_type()));
  return d.size();
}

/// Fails (unsupported) when RoiAlign would gather more than kMaxReadsPerChannel corners per roi
/// and channel.
void checkCorners(NodeContext& c, int64_t corners) {
  if (corners <= kMaxReadsPerChannel) return;
  c.unsupported(fmt::format("RoiAlign gathers {} corners (bins x samples x 4) per roi and "
                            "channel, past weft's limit of 2^24",
                            corners));
}

/// Fails unless input i is floating point.
void requireFloat(NodeContext& c, size_t i, const std::string& what) {
  DType t = c.type(i).dtype;
  if (!ir::isFloat(t))
    c.fail(fmt::format("{} has dtype {}; {} takes floating-point {}", what, ir::dtypeName(t),
                       c.node.op_type(), what));
}

/// An INT attribute that must be 0 or 1.
bool flagAttr(NodeContext& c, const std::string& name) {
  int64_t v = c.attrInt(name, 0);
  if (v != 0 && v != 1) c.fail(fmt::format("{} {} is not 0 or 1", name, v));
  return v == 1;
}

// ---------------------------------------------------------------- reads

/// A position along an axis of `length` elements (a float holding an integer) as a gather
/// index: `at` is the position as i64 where `inside` holds (it lies in [0, length - 1]), -1
/// (which reads 0) elsewhere and for NaN.
struct Index {
  NodeId at = -1, inside = -1;
};
Index indexOf(NodeContext& c, NodeId position, int64_t length) {
  NodeId inside =
      c.g.binary(OpKind::And, compareTo(c, CompareDir::GE, position, 0),
                 compareTo(c, CompareDir::LE, position, static_cast<double>(length - 1)));
  NodeId at = c.g.select(inside, position, c.splatLike(position, -1));
  return {c.g.convert(at, DType::i64), inside};
}

// ---------------------------------------------------------------- GridSample

enum class Interpolation { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

/// One read along an axis for each element of `position` (a tensor of positions, integral
/// values; one outside the axis reads 0), weighted by `weight` (same shape; unset: nearest).
struct Tap {
  NodeId position = -1;
  std::optional<NodeId> weight;
};

struct GridSampling {
  Interpolation mode = Interpolation::Linear;
  Padding padding = Padding::Zeros;
  bool alignCorners = false;
};

/// GridSample's attributes: mode is bilinear / nearest / bicubic in GridSample-16 and linear /
/// nearest / cubic from 20 (the default being the (bi)linear one).
GridSampling readGridSampling(NodeContext& c) {
  GridSampling s;
  const bool v20 = c.opset >= 20;
  const std::string linear = v20 ? "linear" : "bilinear", cubic = v20 ? "cubic" : "bicubic";
  std::string mode = c.attrString("mode", linear);
  if (mode == "nearest")
    s.mode = Interpolation::Nearest;
  else if (mode == linear)
    s.mode = Interpolation::Linear;
  else if (mode == cubic)
    s.mode = Interpolation::Cubic;
  else
    c.fail(fmt::format("mode \"{}\" is not {}, nearest or {}{}", mode, linear, cubic,
                       v20 ? " (bilinear and bicubic are GridSample-16's names)"
                           : " (linear and cubic are GridSample-20's names)"));
  std::string padding = c.attrString("padding_mode", "zeros");
  if (padding == "zeros")
    s.padding = Padding::Zeros;
  else if (padding == "border")
    s.padding = Padding::Border;
  else if (padding == "reflection")
    s.padding = Padding::Reflection;
  else
    c.fail(fmt::format("padding_mode \"{}\" is not zeros, border or reflection", padding));
  s.alignCorners = flagAttr(c, "align_corners");
  return s;
}

/// The coordinates along an axis that need no padding: from the first element's center to
/// the last's with align_corners, from the first's outer edge to the last's without.
struct Border {
  double lo = 0, hi = 0;
};
Border borderOf(int64_t length, bool alignCorners) {
  auto n = static_cast<double>(length);
  return alignCorners ? Border{0, n - 1} : Border{-0.5, n - 0.5};
}

/// The grid's normalized coordinate g (-1 to 1 spans the border) as a position along an axis
/// of `length` elements: (g + 1) / 2 * (length - 1) with align_corners, ((g + 1) * length - 1)
/// / 2 without, in that order of operations as ONNX's reference has it.
NodeId denormalized(NodeContext& c, NodeId g, int64_t length, bool alignCorners) {
  auto n = static_cast<double>(length);
  NodeId shifted = plus(c, g, 1);
  if (alignCorners) return times(c, c.g.binary(OpKind::Div, shifted, c.splatLike(g, 2)), n - 1);
  return c.g.binary(OpKind::Div, plus(c, times(c, shifted, n), -1), c.splatLike(g, 2));
}

/// x rounded to the nearest integer, halves to the even one (numpy's rint, which ONNX's
/// reference uses for nearest).
NodeId roundHalfEven(NodeContext& c, NodeId x) {
  NodeId below = c.g.unary(OpKind::Floor, x);
  NodeId fraction = c.g.binary(OpKind::Sub, x, below);
  NodeId odd = compareTo(c, CompareDir::NE, c.g.binary(OpKind::Rem, below, c.splatLike(x, 2)), 0);
  NodeId half = compareTo(c, CompareDir::EQ, fraction, 0.5);
  NodeId up = c.g.binary(OpKind::Or, compareTo(c, CompareDir::GT, fraction, 0.5),
                         c.g.binary(OpKind::And, half, odd));
  return c.g.select(up, plus(c, below, 1), below);
}

/// x reflected at the border's ends until it lies between them, as ONNX's reference does it:
/// its distance d past the end it passed folds floor(d / span) times, the rest r is measured
/// from that end (an even number of folds) or from the other one (odd). A border of span 0
/// (one element, align_corners) reflects everything onto its one position.
NodeId reflected(NodeContext& c, NodeId x, Border b) {
  double span = b.hi - b.lo;
  if (span == 0) return c.splatLike(x, b.lo);
  NodeId below = compareTo(c, CompareDir::LT, x, b.lo);
  NodeId past = c.g.select(below, minus(c, b.lo, x), plus(c, x, -b.hi));
  NodeId folds = c.g.unary(OpKind::Floor, c.g.binary(OpKind::Div, past, c.splatLike(x, span)));
  NodeId rest = c.g.binary(OpKind::Sub, past, times(c, folds, span));
  NodeId odd = compareTo(c, CompareDir::NE, c.g.binary(OpKind::Rem, folds, c.splatLike(x, 2)), 0);
  NodeId fromLo = plus(c, rest, b.lo), fromHi = minus(c, b.hi, rest);
  return c.g.select(below, c.g.select(odd, fromHi, fromLo), c.g.select(odd, fromLo, fromHi));
}

/// A coordinate or a tap's position past the border, padded: clamped into the axis (border) or
/// reflected (reflection); zeros leaves it, and a tap outside the axis then reads 0.
NodeId padded(NodeContext& c, NodeId x, int64_t length, Border b, Padding p) {
  if (p == Padding::Zeros) return x;
  NodeId outside = c.g.binary(OpKind::Or, compareTo(c, CompareDir::LT, x, b.lo),
                              compareTo(c, CompareDir::GT, x, b.hi));
  NodeId moved = p == Padding::Border ? c.g.clamp(c.splatLike(x, 0), x,
                                                  c.splatLike(x, static_cast<double>(length - 1)))
                                      : reflected(c, x, b);
  return c.g.select(outside, moved, x);
}

/// Keys' cubic convolution weights (a = -0.75, PyTorch's) of the elements -1, 0, 1 and 2 from
/// the one at or before the coordinate, t being its distance past that one (0 <= t < 1).
std::array<NodeId, 4> cubicWeights(NodeContext& c, NodeId t) {
  constexpr double a = -0.75;
  auto outer = [&](NodeId d) { // ((a d - 5a) d + 8a) d - 4a, for 1 <= d <= 2
    NodeId v = c.g.binary(OpKind::Mul, plus(c, times(c, d, a), -5 * a), d);
    return plus(c, c.g.binary(OpKind::Mul, plus(c, v, 8 * a), d), -4 * a);
  };
  auto inner = [&](NodeId d) { // ((a + 2) d - (a + 3)) d d + 1, for 0 <= d <= 1
    NodeId v = c.g.binary(OpKind::Mul, plus(c, times(c, d, a + 2), -(a + 3)), d);
    return plus(c, c.g.binary(OpKind::Mul, v, d), 1);
  };
  return {outer(plus(c, t, 1)), inner(t), inner(minus(c, 1, t)), outer(minus(c, 2, t))};
}

/// The taps of coordinate x (already padded) along an axis: nearest reads x itself (an
/// integer once rounded), linear the two elements around it, cubic the four, each tap's
/// position padded again as ONNX's reference reads a pixel.
std::vector<Tap> tapsAt(NodeContext& c, NodeId x, int64_t length, Border b, const GridSampling& s) {
  auto tap = [&](NodeId position, std::optional<NodeId> weight) {
    return Tap{padded(c, position, length, b, s.padding), weight};
  };
  if (s.mode == Interpolation::Nearest) return {tap(x, std::nullopt)};
  NodeId first = c.g.unary(OpKind::Floor, x);
  NodeId t = c.g.binary(OpKind::Sub, x, first);
  if (s.mode == Interpolation::Linear)
    return {tap(first, minus(c, 1, t)), tap(plus(c, first, 1), t)};
  std::array<NodeId, 4> w = cubicWeights(c, t);
  std::vector<Tap> taps;
  for (int k = 0; k < 4; ++k)
    taps.push_back(tap(plus(c, first, k - 1), w[static_cast<size_t>(k)]));
  return taps;
}

/// A tap read over the output [N, C, P]: its gather index (-1 outside the axis), where it lies
/// inside the axis, and its weight in the values' dtype (unset: nearest).
struct Read {
  NodeId index = -1, inside = -1;
  std::optional<NodeId> weight;
};

/// The sum over axis a's reads (a = at.size(), `at` holding an index of each earlier axis) of
/// each one's weight times the same sum over the next axis, the last axis innermost, and there
/// X's element at the indices: one gather per combination of reads, each converted to
/// `valueType`. A read outside its axis adds nothing: its term is selected away whatever its
/// weight. Without weights (nearest) the gathered element itself.
NodeId interpolate(NodeContext& c, NodeId x, DType valueType,
                   const std::vector<std::vector<Read>>& reads, std::vector<NodeId>& at) {
  const size_t a = at.size();
  if (a == reads.size()) {
    std::vector<int64_t> axes;
    for (size_t i = 0; i < reads.size(); ++i)
      axes.push_back(static_cast<int64_t>(2 + i));
    return c.convertTo(c.g.gather(x, at, std::move(axes), {0, 1}), valueType);
  }
  std::optional<NodeId> sum;
  for (const Read& r : reads[a]) {
    at.push_back(r.index);
    NodeId v = interpolate(c, x, valueType, reads, at);
    at.pop_back();
    if (r.weight)
      v = c.g.select(r.inside, c.g.binary(OpKind::Mul, *r.weight, v), c.splatLike(v, 0));
    sum = sum ? c.g.binary(OpKind::Add, *sum, v) : v;
  }
  return *sum;
}

/// Records output 0's ONNX type as X's where weft holds X in a wider integer (UINT8 in i32..):
/// the output has X's type and holds its values (or values cast to it).
void keepInputType(NodeContext& c) {
  if (heldNarrowBits(c.onnxType(0)) != 0) c.setOutputOnnxType(0, c.onnxType(0));
}

/// GridSample (opset 16: 4-D X; opset 20: X of any rank 3 or more): Y[n, c, o] is X[n, c]
/// interpolated at the position grid[n, o] gives (its components listed from the last spatial
/// axis to the first), denormalized per align_corners, padded per padding_mode, its taps read
/// by gathers (interpolate). Nearest copies elements (any dtype); linear and
/// cubic interpolate floats in their compute dtype, and other types in f64 cast back to X's
/// type at the end, as the spec says. Positions are computed in the grid's compute dtype.
void lowerGridSample(NodeContext& c) {
  if (c.opset < 16) c.fail("GridSample is defined from opset 16");
  const GridSampling s = readGridSampling(c);
  NodeId x = c.in(0);
  const ir::TensorType xt = c.typeOf(x), gt = c.type(1);
  const size_t rank = xt.shape.size();
  if (c.opset < 20 && rank != 4)
    c.fail(fmt::format("X {} must be 4-D (N, C, H, W) in GridSample-16 (N-D inputs are "
                       "GridSample-20's)",
                       ir::shapeStr(xt.shape)));
  if (rank < 3)
    c.fail(fmt::format("X {} needs rank 3 or more (N, C, D1, ...)", ir::shapeStr(xt.shape)));
  const size_t r = rank - 2;
  requireFloat(c, 1, "grid");
  if (gt.shape.size() != rank || gt.shape.back() != Dim(static_cast<int64_t>(r)))
    c.fail(fmt::format("grid {} must be (N, D1_out, .., Dr_out, r) with r = {}, the spatial axes "
                       "of X {}",
                       ir::shapeStr(gt.shape), r, ir::shapeStr(xt.shape)));
  if (xt.shape[0].isStatic() && gt.shape[0].isStatic() && xt.shape[0] != gt.shape[0])
    c.fail(fmt::format("grid {} and X {} have different batch sizes", ir::shapeStr(gt.shape),
                       ir::shapeStr(xt.shape)));
  std::vector<int64_t> in(r), out(r);
  int64_t elements = 1, positions = 1;
  for (size_t a = 0; a < r; ++a) {
    in[a] = staticSize(c, xt.shape[2 + a], fmt::format("spatial axis {} of X", 2 + a));
    out[a] = staticSize(c, gt.shape[1 + a], fmt::format("output axis {} of grid", 1 + a));
    elements = product({elements, in[a]});
    positions = product({positions, out[a]});
  }
  if (elements == 0 && s.padding != Padding::Zeros)
    c.fail(fmt::format("X {} has an empty spatial axis: {} padding has no element to read",
                       ir::shapeStr(xt.shape),
                       s.padding == Padding::Border ? "border" : "reflection"));

  const bool interpolates = s.mode != Interpolation::Nearest;
  const DType valueType =
      !interpolates ? xt.dtype : ir::isFloat(xt.dtype) ? computeDType(xt.dtype) : DType::f64;
  const DType coordType = computeDType(gt.dtype);
  const Dim n = gt.shape[0];
  const auto components = static_cast<int64_t>(r);
  NodeId grid = c.g.reshape(c.convertTo(c.in(1), coordType), {n, Dim(positions), Dim(components)});
  // Each axis's reads over the output [N, C, P], from taps over the grid's [N, P].
  const Shape flat = {xt.shape[0], xt.shape[1], Dim(positions)};
  auto overOutput = [&](NodeId v) { return c.g.broadcastInDim(v, flat, {0, 2}); };
  std::vector<std::vector<Read>> reads(r);
  for (size_t a = r; a-- > 0 && elements > 0;) { // the last axis first; the grid lists it first
    auto k = static_cast<int64_t>(r - 1 - a);
    NodeId g =
        c.g.reshape(c.g.slice(grid, {0, 0, k}, {-1, -1, k + 1}, {1, 1, 1}), {n, Dim(positions)});
    Border b = borderOf(in[a], s.alignCorners);
    NodeId coordinate = denormalized(c, g, in[a], s.alignCorners);
    if (s.mode == Interpolation::Nearest) coordinate = roundHalfEven(c, coordinate);
    coordinate = padded(c, coordinate, in[a], b, s.padding);
    for (const Tap& tap : tapsAt(c, coordinate, in[a], b, s)) {
      Index i = indexOf(c, tap.position, in[a]);
      std::optional<NodeId> w;
      if (tap.weight) w = overOutput(c.convertTo(*tap.weight, valueType));
      reads[a].push_back({overOutput(i.at), overOutput(i.inside), w});
    }
  }
  std::vector<NodeId> at;
  NodeId v = elements == 0 ? c.splat(valueType, flat, 0) // nothing to read: zeros padding
                           : interpolate(c, x, valueType, reads, at);
  Shape outShape = {xt.shape[0], xt.shape[1]};
  for (int64_t o : out)
    outShape.push_back(Dim(o));
  const bool converts = c.typeOf(v).dtype != xt.dtype;
  NodeId y = c.g.reshape(v, outShape, converts ? "" : c.name());
  if (converts) {
    if (ir::isFloat(xt.dtype) || c.onnxType(0) == 0)
      y = c.g.convert(y, xt.dtype, c.name());
    else
      y = castTo(c, y, c.onnxType(0), c.name());
  }
  c.setOutput(0, y);
  keepInputType(c);
}

// ---------------------------------------------------------------- AffineGrid

/// AffineGrid (opset 20): the sampling grid of theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D) for
/// an output of `size` (N, C, H, W) or (N, C, D, H, W), known at import time: each output
/// position's normalized coordinates (x, y[, z], 1), x along the last axis, spaced evenly from
/// -1 to 1 (the end elements' centers with align_corners, their outer edges without), times
/// theta. The coordinates are iotas scaled and shifted, multiplied by theta broadcast and
/// summed over the homogeneous axis, in theta's compute dtype.
void lowerAffineGrid(NodeContext& c) {
  if (c.opset < 20) c.fail("AffineGrid is defined from opset 20");
  const bool alignCorners = flagAttr(c, "align_corners");
  requireFloat(c, 0, "theta");
  const ir::TensorType tt = c.type(0);
  std::vector<int64_t> size = c.constInts(1, "size");
  if (size.size() != 4 && size.size() != 5)
    c.fail(fmt::format("size {} must be (N, C, H, W) or (N, C, D, H, W)", listStr(size)));
  const size_t r = size.size() - 2;
  const auto ri = static_cast<int64_t>(r);
  if (tt.shape.size() != 3 || tt.shape[1] != Dim(ri) || tt.shape[2] != Dim(ri + 1))
    c.fail(fmt::format("theta {} must be (N, {}, {}) for size {}", ir::shapeStr(tt.shape), r, r + 1,
                       listStr(size)));
  if (tt.shape[0].isStatic() && tt.shape[0].size() != size[0])
    c.fail(fmt::format("theta {} and size {} have different batch sizes", ir::shapeStr(tt.shape),
                       listStr(size)));
  Shape spatial;
  for (size_t a = 0; a < r; ++a) {
    if (size[2 + a] < 1) c.fail(fmt::format("size {} has a spatial size below 1", listStr(size)));
    spatial.push_back(Dim(size[2 + a]));
  }
  const DType t = computeDType(tt.dtype);
  // The homogeneous coordinates [D.., r + 1]: component k is the position along spatial axis
  // r - 1 - k (x first), the last one 1.
  Shape one = spatial;
  one.push_back(Dim(1));
  std::vector<NodeId> parts;
  for (size_t k = 0; k < r; ++k) {
    auto axis = static_cast<int64_t>(r - 1 - k);
    auto n = static_cast<double>(size[2 + static_cast<size_t>(axis)]);
    double step = alignCorners ? (n > 1 ? 2 / (n - 1) : 0) : 2 / n;
    double start = alignCorners ? -1 : -1 + step / 2;
    parts.push_back(plus(c, times(c, c.g.iota(t, one, axis), step), start));
  }
  parts.push_back(c.splat(t, one, 1));
  NodeId base = c.g.concatenate(parts, ri);
  // [N, D.., r, r + 1]: theta[n, j, k] * base[d.., k], summed over k
  Shape wide = {tt.shape[0]};
  wide.insert(wide.end(), spatial.begin(), spatial.end());
  wide.push_back(Dim(ri));
  wide.push_back(Dim(ri + 1));
  std::vector<int64_t> baseDims;
  for (int64_t a = 1; a <= ri; ++a)
    baseDims.push_back(a);
  baseDims.push_back(ri + 2);
  NodeId theta = c.g.broadcastInDim(c.convertTo(c.in(0), t), wide, {0, ri + 1, ri + 2});
  NodeId terms = c.g.binary(OpKind::Mul, theta, c.g.broadcastInDim(base, wide, baseDims));
  const bool converts = t != tt.dtype;
  NodeId grid = c.g.reduce(ReduceKind::Sum, terms, {ri + 2}, converts ? "" : c.name());
  if (converts) grid = c.g.convert(grid, tt.dtype, c.name());
  c.setOutput(0, grid);
}

// ---------------------------------------------------------------- RoiAlign

struct RoiAlignAttrs {
  bool max = false;
  int64_t height = 1, width = 1; // output bins
  int64_t samplingRatio = 0;     // 0: adaptive
  double scale = 1;
  bool halfPixel = false;
};

RoiAlignAttrs readRoiAlign(NodeContext& c) {
  RoiAlignAttrs a;
  std::string mode = c.attrString("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail(fmt::format("mode \"{}\" is not avg or max", mode));
  a.max = mode == "max";
  a.height = c.attrInt("output_height", 1);
  a.width = c.attrInt("output_width", 1);
  if (a.height < 1 || a.width < 1)
    c.fail(fmt::format("output_height {} and output_width {} must be positive", a.height, a.width));
  a.samplingRatio = c.attrInt("sampling_ratio", 0);
  if (a.samplingRatio < 0) c.fail(fmt::format("sampling_ratio {} is negative", a.samplingRatio));
  a.scale = c.attrFloat("spatial_scale", 1.0f);
  if (c.opset < 16) {
    if (c.hasAttr("coordinate_transformation_mode"))
      c.fail("RoiAlign-10 has no attribute \"coordinate_transformation_mode\" (defined from "
             "opset 16)");
    return a; // output_half_pixel, the only behaviour before opset 16
  }
  std::string ctm = c.attrString("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    c.fail(fmt::format("coordinate_transformation_mode \"{}\" is not half_pixel or "
                       "output_half_pixel",
                       ctm));
  a.halfPixel = ctm == "half_pixel";
  return a;
}

/// One spatial axis of RoiAlign: each roi's start and bin size along it ([R], in the compute
/// dtype), and its sample grid: `samples` per bin for every roi, or, adaptive, `grid` per roi
/// ([R], integral) of at most `samples`.
struct RoiAxis {
  NodeId start = -1, bin = -1;
  int64_t bins = 1, length = 1, samples = 1;
  std::optional<NodeId> grid;
};

/// Where each roi r's sample i of bin p reads along an axis ([R, bins, samples]): the bilinear
/// taps `low` and `high` (high is low + 1, or low itself at the last element) with weights
/// `lowWeight` = 1 - f and `highWeight` = f, f the sample's distance past low; `inside` where
/// the sample is within a pixel of the input (ONNX's reference gives a sample outside 0), and
/// with an adaptive grid `inGrid` where i is one of the roi's samples.
struct AxisSamples {
  NodeId low = -1, high = -1, lowWeight = -1, highWeight = -1, inside = -1;
  std::optional<NodeId> inGrid;
};

/// The samples of an axis, computed as ONNX's reference does: start + p * bin + (i + 0.5) *
/// bin / grid, outside [-1, length] none, else clamped at 0 and split between the element at
/// or before it and the next (the last element alone past it).
AxisSamples roiSamples(NodeContext& c, const RoiAxis& ax) {
  const ir::TensorType t = c.typeOf(ax.start);
  const Shape s = {t.shape[0], Dim(ax.bins), Dim(ax.samples)};
  auto perRoi = [&](NodeId v) { return c.g.broadcastInDim(v, s, {0}); };
  NodeId bin = perRoi(ax.bin);
  NodeId p = c.g.iota(t.dtype, s, 1), i = c.g.iota(t.dtype, s, 2);
  NodeId grid = ax.grid ? perRoi(c.g.binary(OpKind::Max, *ax.grid, c.splatLike(*ax.grid, 1)))
                        : c.splat(t.dtype, s, static_cast<double>(ax.samples));
  NodeId offset = c.g.binary(OpKind::Div, c.g.binary(OpKind::Mul, plus(c, i, 0.5), bin), grid);
  NodeId y = c.g.binary(OpKind::Add,
                        c.g.binary(OpKind::Add, perRoi(ax.start), c.g.binary(OpKind::Mul, p, bin)),
                        offset);
  auto last = static_cast<double>(ax.length - 1);
  AxisSamples out;
  out.inside = c.g.unary(
      OpKind::Not, c.g.binary(OpKind::Or, compareTo(c, CompareDir::LT, y, -1),
                              compareTo(c, CompareDir::GT, y, static_cast<double>(ax.length))));
  if (ax.grid) out.inGrid = c.g.compare(CompareDir::LT, i, perRoi(*ax.grid));
  NodeId clamped = c.g.binary(OpKind::Max, y, c.splatLike(y, 0));
  NodeId low = c.g.unary(OpKind::Floor, clamped);
  NodeId atEnd = compareTo(c, CompareDir::GE, low, last);
  NodeId lastElement = c.splatLike(y, last);
  out.low = c.g.select(atEnd, lastElement, low);
  out.high = c.g.select(atEnd, lastElement, plus(c, low, 1));
  clamped = c.g.select(atEnd, lastElement, clamped);
  out.highWeight = c.g.binary(OpKind::Sub, clamped, out.low);
  out.lowWeight = minus(c, 1, out.highWeight);
  return out;
}

/// [R, bins, samples, 2]: an axis's low and high taps side by side.
NodeId corners(NodeContext& c, NodeId low, NodeId high) {
  Shape one = c.typeOf(low).shape;
  one.push_back(Dim(1));
  return c.g.concatenate({c.g.reshape(low, one), c.g.reshape(high, one)}, 3);
}

/// The four corners of every sample of every bin of every roi, over [R, C, PH, SY, 2, PW, SX,
/// 2]: X's values there (one gather at the rois' batch indices, rows and columns, converted to
/// the compute dtype t; an index out of range reads 0) and their bilinear weights wy * wx; and
/// where each corner's row ([R, PH, SY, 2]) and column ([R, PW, SX, 2]) lie inside X.
struct Corners {
  NodeId values = -1, weights = -1, rowInside = -1, columnInside = -1;
};
Corners gatherCorners(NodeContext& c, NodeId x, NodeId batchIndices, const AxisSamples& y,
                      const AxisSamples& xs, const RoiAxis& ay, const RoiAxis& ax, DType t) {
  const Dim R = c.typeOf(y.low).shape[0], C = c.typeOf(x).shape[1];
  const Shape cornerShape = {R, C, Dim(ay.bins), Dim(ay.samples), Dim(2),
                             Dim(ax.bins), Dim(ax.samples), Dim(2)};
  const Index row = indexOf(c, corners(c, y.low, y.high), ay.length);
  const Index column = indexOf(c, corners(c, xs.low, xs.high), ax.length);
  auto alongY = [&](NodeId v) { return c.g.broadcastInDim(v, cornerShape, {0, 2, 3, 4}); };
  auto alongX = [&](NodeId v) { return c.g.broadcastInDim(v, cornerShape, {0, 5, 6, 7}); };
  NodeId batch = c.g.broadcastInDim(batchIndices, cornerShape, {0});
  NodeId values = c.g.gather(x, {batch, alongY(row.at), alongX(column.at)}, {0, 2, 3}, {1});
  NodeId weights =
      c.g.binary(OpKind::Mul, alongY(corners(c, y.lowWeight, y.highWeight)),
                 alongX(corners(c, xs.lowWeight, xs.highWeight)));
  return {c.convertTo(values, t), weights, row.inside, column.inside};
}

/// RoiAlign's mode avg before the division by the samples per bin: each bin's weighted corners
/// summed over its samples that count (inside the input and, with an adaptive grid, in the
/// roi's grid; a corner whose position is NaN counts for nothing), [R, C, PH, PW].
NodeId summedSamples(NodeContext& c, const Corners& k, const AxisSamples& y,
                     const AxisSamples& x) {
  const Shape cornerShape = c.typeOf(k.values).shape;
  auto counts = [&](const AxisSamples& a, NodeId cornerInside, std::vector<int64_t> dims) {
    NodeId keep = a.inGrid ? c.g.binary(OpKind::And, a.inside, *a.inGrid) : a.inside;
    Shape four = c.typeOf(keep).shape;
    four.push_back(Dim(2));
    keep = c.g.binary(OpKind::And, c.g.broadcastInDim(keep, four, {0, 1, 2}), cornerInside);
    return c.g.broadcastInDim(keep, cornerShape, std::move(dims));
  };
  NodeId keep = c.g.binary(OpKind::And, counts(y, k.rowInside, {0, 2, 3, 4}),
                           counts(x, k.columnInside, {0, 5, 6, 7}));
  NodeId weighted = c.g.binary(OpKind::Mul, k.weights, k.values);
  NodeId terms = c.g.select(keep, weighted, c.splatLike(weighted, 0));
  return c.g.reduce(ReduceKind::Sum, terms, {3, 4, 6, 7});
}

/// RoiAlign's mode max, as ONNX's reference (and ONNX Runtime) define it: each sample's value
/// is the largest of its four weighted corners (w * X, not their sum), and a bin's the largest
/// of its samples' (0 for a sample outside the input; 0 for a bin without samples).
NodeId maxPooled(NodeContext& c, const Corners& k, const AxisSamples& y, const AxisSamples& x,
                 const RoiAxis& ay, const RoiAxis& ax, const std::string& name) {
  NodeId weighted = c.g.binary(OpKind::Mul, k.weights, k.values);
  NodeId sample = c.g.reduce(ReduceKind::Max, weighted, {4, 7}); // [R, C, PH, SY, PW, SX]
  const Shape sampleShape = c.typeOf(sample).shape;
  auto both = [&](NodeId ys, NodeId xs) {
    return c.g.binary(OpKind::And, c.g.broadcastInDim(ys, sampleShape, {0, 2, 3}),
                      c.g.broadcastInDim(xs, sampleShape, {0, 4, 5}));
  };
  sample = c.g.select(both(y.inside, x.inside), sample, c.splatLike(sample, 0));
  const bool adaptive = y.inGrid.has_value();
  if (adaptive)
    sample = c.g.select(both(*y.inGrid, *x.inGrid), sample,
                        c.splatLike(sample, -std::numeric_limits<double>::infinity()));
  NodeId pooled = c.g.reduce(ReduceKind::Max, sample, {3, 5}, adaptive ? "" : name);
  if (!adaptive) return pooled;
  // A roi whose grid has no sample has the -inf of an empty max: 0, as the reference gives.
  NodeId count = c.g.binary(OpKind::Mul, *ay.grid, *ax.grid);
  NodeId some =
      c.g.broadcastInDim(compareTo(c, CompareDir::GT, count, 0), c.typeOf(pooled).shape, {0});
  return c.g.select(some, pooled, c.splatLike(pooled, 0), name);
}

/// Adaptive sampling (sampling_ratio 0) takes ceil(roi size / bins) samples per bin along each
/// axis, a count that depends on the rois: weft computes it at import time, from rois known
/// then, as ONNX's reference does (in float for an f32 model), and refuses rois computed at
/// run time. Returns each roi's grid along x (column 0) or y (column 1), clamped at 0.
template <class T>
std::vector<double> adaptiveGrid(NodeContext& c, const Literal& rois, int column,
                                 const RoiAlignAttrs& a, int64_t bins) {
  std::vector<double> grid;
  const T offset = a.halfPixel ? T(0.5) : T(0);
  const auto scale = static_cast<T>(a.scale);
  for (size_t i = 0; i + 3 < rois.size(); i += 4) {
    T start = static_cast<T>(rois.value(i + static_cast<size_t>(column))) * scale - offset;
    T end = static_cast<T>(rois.value(i + 2 + static_cast<size_t>(column))) * scale - offset;
    T extent = end - start;
    if (!a.halfPixel) extent = std::max(extent, T(1));
    T samples = std::ceil(extent / static_cast<T>(bins));
    if (!std::isfinite(samples) || samples > static_cast<T>(kMaxReadsPerChannel))
      c.unsupported(fmt::format("roi {} spans {} elements; an adaptive grid (sampling_ratio 0) "
                                "of that many samples per bin is past weft's limit",
                                i / 4, static_cast<double>(extent)));
    grid.push_back(std::max(static_cast<double>(samples), 0.0));
  }
  return grid;
}

/// RoiAlign (opsets 10, 16): for each roi r (rois[r] = x1, y1, x2, y2 in the input's scale,
/// times spatial_scale, less 0.5 with half_pixel; output_half_pixel (the only mode before 16)
/// makes a roi at least 1 x 1), each of output_height x output_width bins averages (or, max,
/// takes the largest of) grid x grid bilinear samples of X[batch_indices[r]], grid being
/// sampling_ratio or, when 0, adaptive (see adaptiveGrid). Rois and batch indices are read at
/// run time: the four corners of every sample are gathered (gatherCorners), weighted, and
/// averaged (summedSamples) or their largest taken (maxPooled). In X's compute dtype.
void lowerRoiAlign(NodeContext& c) {
  if (c.opset < 10) c.fail("RoiAlign is defined from opset 10");
  const RoiAlignAttrs a = readRoiAlign(c);
  requireFloat(c, 0, "X");
  requireFloat(c, 1, "rois");
  const ir::TensorType xt = c.type(0), rt = c.type(1), bt = c.type(2);
  if (xt.shape.size() != 4)
    c.fail(fmt::format("X {} must be 4-D (N, C, H, W)", ir::shapeStr(xt.shape)));
  if (rt.shape.size() != 2 || rt.shape[1] != Dim(4))
    c.fail(fmt::format("rois {} must be (num_rois, 4)", ir::shapeStr(rt.shape)));
  if (bt.shape.size() != 1 || !ir::isInteger(bt.dtype))
    c.fail(fmt::format("batch_indices {} must be a vector of integers", bt.str()));
  if (rt.shape[0].isStatic() && bt.shape[0].isStatic() && rt.shape[0] != bt.shape[0])
    c.fail(fmt::format("rois {} and batch_indices {} have different numbers of rois",
                       ir::shapeStr(rt.shape), ir::shapeStr(bt.shape)));
  const int64_t H = staticSize(c, xt.shape[2], "height H of X");
  const int64_t W = staticSize(c, xt.shape[3], "width W of X");
  const DType t = computeDType(xt.dtype);

  RoiAxis ay{-1, -1, a.height, H, a.samplingRatio, std::nullopt};
  RoiAxis ax{-1, -1, a.width, W, a.samplingRatio, std::nullopt};
  std::optional<NodeId> count; // adaptive: each roi's number of samples per bin
  if (a.samplingRatio == 0) {
    const Literal* rois = c.literal(1);
    if (!rois)
      c.unsupported("sampling_ratio 0 (adaptive: ceil(roi size / output size) samples per bin) "
                    "needs rois known at import time, the count depending on them; give a "
                    "positive sampling_ratio");
    for (RoiAxis* axis : {&ax, &ay}) {
      int column = axis == &ax ? 0 : 1;
      std::vector<double> grid = t == DType::f64
                                     ? adaptiveGrid<double>(c, *rois, column, a, axis->bins)
                                     : adaptiveGrid<float>(c, *rois, column, a, axis->bins);
      axis->samples = std::max<int64_t>(
          1, static_cast<int64_t>(grid.empty() ? 1 : *std::max_element(grid.begin(), grid.end())));
      axis->grid = c.constant(Literal::ofReals(t, {static_cast<int64_t>(grid.size())}, grid));
    }
    NodeId samples = c.g.binary(OpKind::Mul, *ay.grid, *ax.grid);
    count = c.g.binary(OpKind::Max, samples, c.splatLike(samples, 1));
  }
  checkCorners(c, product({a.height, ay.samples, 2, a.width, ax.samples, 2}));

  // Each roi's start and bin size along y and x, from its corners.
  NodeId rois = c.convertTo(c.in(1), t);
  const Dim R = rt.shape[0];
  auto corner = [&](int64_t k) {
    NodeId column = c.g.reshape(c.g.slice(rois, {0, k}, {-1, k + 1}, {1, 1}), {R});
    return plus(c, times(c, column, a.scale), a.halfPixel ? -0.5 : 0.0);
  };
  for (RoiAxis* axis : {&ax, &ay}) {
    int64_t k = axis == &ax ? 0 : 1;
    axis->start = corner(k);
    NodeId extent = c.g.binary(OpKind::Sub, corner(k + 2), axis->start);
    if (!a.halfPixel) extent = c.g.binary(OpKind::Max, extent, c.splatLike(extent, 1));
    axis->bin =
        c.g.binary(OpKind::Div, extent, c.splatLike(extent, static_cast<double>(axis->bins)));
  }
  AxisSamples ys = roiSamples(c, ay), xs = roiSamples(c, ax);
  const Corners k = gatherCorners(c, c.in(0), c.in(2), ys, xs, ay, ax, t);
  const bool converts = t != xt.dtype;
  const std::string last = converts ? "" : c.name();
  NodeId y;
  if (a.max) {
    y = maxPooled(c, k, ys, xs, ay, ax, last);
  } else {
    NodeId v = summedSamples(c, k, ys, xs);
    NodeId divisor = count ? c.g.broadcastInDim(*count, c.typeOf(v).shape, {0})
                           : c.splatLike(v, static_cast<double>(a.samplingRatio * a.samplingRatio));
    y = c.g.binary(OpKind::Div, v, divisor, last);
  }
  if (converts) y = c.g.convert(y, xt.dtype, c.name());
  c.setOutput(0, y);
}

} // namespace

void addSampleOps(OperatorTable& t) {
  t["GridSample"] = lowerGridSample;
  t["AffineGrid"] = lowerAffineGrid;
  t["RoiAlign"] = lowerRoiAlign;
}

} // namespace weft::onnx
