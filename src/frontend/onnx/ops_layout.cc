// Layout and shape ONNX operators: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand,
// Concat, Slice, Pad, CenterCropPad, Col2Im, Gather, and the import-time shape computations
// Shape, Constant and ConstantOfShape (whose results are literals, so Reshape and friends see
// static shapes).
#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <numeric>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// Element counts above this are not unrolled into per-element slices (negative-step Slice,
/// reflect Pad, Gather by constant indices).
constexpr int64_t kMaxUnrolled = 1024;
/// ConstantOfShape results larger than this are splat constants in the graph, not literals.
constexpr int64_t kMaxLiteralElements = int64_t(1) << 20;


Dim product(const Shape& s, size_t begin, size_t end) {
  Dim p(1);
  for (size_t i = begin; i < end; ++i)
    p = p * s[i];
  return p;
}

/// Reshape's target: 0 copies the input dim (unless allowzero), -1 takes what is left.
void lowerReshape(NodeContext& c) {
  std::vector<int64_t> target =
      c.opset < 5 ? c.attrInts("shape").value_or(std::vector<int64_t>{}) : c.constInts(1, "shape");
  bool allowZero = c.opset >= 14 && c.attrInt("allowzero", 0) != 0;
  NodeId x = c.in(0);
  Shape in = c.typeOf(x).shape;
  Shape out;
  int inferred = -1;
  Dim known(1);
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (inferred >= 0) c.fail(fmt::format("shape {} has more than one -1", listStr(target)));
      inferred = static_cast<int>(i);
      out.push_back(Dim(1));
      continue;
    }
    if (t < -1) c.fail(fmt::format("shape {} has a negative size {}", listStr(target), t));
    if (t == 0 && !allowZero) {
      if (i >= in.size())
        c.fail(fmt::format("shape {}: a 0 at position {} copies no input dim (input rank {})",
                           listStr(target), i, in.size()));
      out.push_back(in[i]);
    } else {
      out.push_back(Dim(t));
    }
    known = known * out.back();
  }
  if (inferred >= 0) {
    auto rest = ir::numElements(in).dividedBy(known);
    if (!rest)
      c.fail(fmt::format("cannot infer the -1 of shape {}: {} elements of {} do not divide by {}",
                         listStr(target), ir::numElements(in).str(), ir::shapeStr(in),
                         known.str()));
    out[static_cast<size_t>(inferred)] = *rest;
  }
  if (ir::numElements(out) != ir::numElements(in))
    c.fail(fmt::format("cannot reshape {} into {} (shape input {})", ir::shapeStr(in),
                       ir::shapeStr(out), listStr(target)));
  c.setOutput(0, c.g.reshape(x, out, c.name()));
}

void lowerFlatten(NodeContext& c) {
  NodeId x = c.in(0);
  Shape in = c.typeOf(x).shape;
  int64_t r = static_cast<int64_t>(in.size());
  int64_t a = c.attrInt("axis", 1);
  if (a < 0) a += r;
  if (a < 0 || a > r)
    c.fail(fmt::format("axis {} is out of range for rank {}", c.attrInt("axis", 1), r));
  size_t axis = static_cast<size_t>(a);
  c.setOutput(0, c.g.reshape(x, {product(in, 0, axis), product(in, axis, in.size())}, c.name()));
}

/// `axes` (the operand named `what`) normalized for `rank`, sorted; fails when one repeats.
std::vector<int64_t> normalizedAxes(NodeContext& c, std::vector<int64_t> axes, size_t rank,
                                    const char* what) {
  std::vector<int64_t> given = axes;
  for (int64_t& a : axes)
    a = c.axis(a, rank, "axis");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    c.fail(fmt::format("{} {} repeat an axis", what, listStr(given)));
  return axes;
}

/// Axes from the attribute (before `inputOpset`) or from input 1 (from it on); nullopt when
/// absent.
std::optional<std::vector<int64_t>> axesOf(NodeContext& c, int inputOpset) {
  if (c.opset < inputOpset) return c.attrInts("axes");
  if (!c.has(1)) return std::nullopt;
  return c.constInts(1, "axes");
}

void lowerSqueeze(NodeContext& c) {
  NodeId x = c.in(0);
  Shape in = c.typeOf(x).shape;
  auto given = axesOf(c, 13);
  std::vector<int64_t> axes;
  if (given) {
    axes = normalizedAxes(c, *given, in.size(), "axes");
  } else {
    // Every dim of size 1 goes: whether a symbolic dim is 1 is known only at run time, and
    // the output's rank may not depend on it.
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].isStatic())
        c.unsupported(fmt::format(
            "Squeeze without axes of an input with the symbolic dim {} ({}) is not supported: "
            "whether it is 1, and so the output's rank, is known only at run time; give axes",
            in[i].str(), ir::shapeStr(in)));
      if (in[i].isOne()) axes.push_back(static_cast<int64_t>(i));
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool squeezed = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (!squeezed) {
      out.push_back(in[i]);
      continue;
    }
    if (!in[i].isOne())
      c.fail(fmt::format("cannot squeeze axis {} of {}: its size is {}, not 1", i, ir::shapeStr(in),
                         in[i].str()));
  }
  c.setOutput(0, c.reshapeTo(x, out, c.name()));
}

void lowerUnsqueeze(NodeContext& c) {
  NodeId x = c.in(0);
  Shape in = c.typeOf(x).shape;
  auto given = axesOf(c, 13);
  if (!given)
    c.fail(c.opset < 13 ? "the required attribute \"axes\" (INTS) is missing"
                        : "input 1 (axes) is required but missing");
  size_t outRank = in.size() + given->size();
  std::vector<int64_t> axes = normalizedAxes(c, *given, outRank, "axes");
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < outRank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i)))
      out.push_back(Dim(1));
    else
      out.push_back(in[next++]);
  }
  c.setOutput(0, c.g.reshape(x, out, c.name()));
}

void lowerTranspose(NodeContext& c) {
  NodeId x = c.in(0);
  size_t r = c.typeOf(x).shape.size();
  std::vector<int64_t> perm(r);
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = c.attrInts("perm")) perm = *p;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = sorted.size() == r;
  for (size_t i = 0; i < sorted.size(); ++i)
    permutation &= sorted[i] == static_cast<int64_t>(i);
  if (!permutation)
    c.fail(fmt::format("perm {} is not a permutation of 0..{} (the input has rank {})",
                       listStr(perm), static_cast<int64_t>(r) - 1, r));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == static_cast<int64_t>(i);
  if (identity && perm.size() == r) {
    c.setOutput(0, x);
    return;
  }
  c.setOutput(0, c.g.transpose(x, perm, c.name()));
}

void lowerExpand(NodeContext& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> target = c.constInts(1, "shape");
  Shape t;
  for (int64_t d : target) {
    if (d < 0) c.fail(fmt::format("shape {} has a negative size", listStr(target)));
    t.push_back(Dim(d));
  }
  Shape out = c.broadcastShape(c.typeOf(x).shape, t);
  NodeId y = c.broadcastTo(x, out, c.name());
  c.setOutput(0, y);
}

void lowerConcat(NodeContext& c) {
  if (c.numInputs() == 0) c.fail("needs at least one input");
  size_t r = c.type(0).shape.size();
  int64_t axis = c.axis(c.requireAttrInt("axis"), r, "axis");
  std::vector<NodeId> xs;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    if (!c.has(i)) continue;
    xs.push_back(c.in(i));
  }
  if (xs.size() == 1) {
    c.setOutput(0, xs[0]);
    return;
  }
  // A dim is a product of symbols times a factor: P + 1 (a KV cache's past ++ new) has no
  // such form. (Ranks and the other dims are the IR's to check.)
  ir::Dim total = c.typeOf(xs[0]).shape.size() > static_cast<size_t>(axis)
                      ? c.typeOf(xs[0]).shape[static_cast<size_t>(axis)]
                      : ir::Dim(0);
  for (size_t i = 1; i < xs.size(); ++i) {
    const Shape& si = c.typeOf(xs[i]).shape;
    if (si.size() <= static_cast<size_t>(axis)) break;
    std::optional<Dim> sum;
    try {
      sum = total.plus(si[static_cast<size_t>(axis)]);
    } catch (const InputError&) {
      break; // past int64: the IR's message
    }
    if (!sum)
      c.unsupported(fmt::format(
          "Concat along axis {} of sizes {} and {} is not supported: weft's dims cannot express "
          "{} + {} (a dim is a product of symbols and a number; a symbolic size that grows, as "
          "a KV cache's past ++ new, is not one)",
          axis, total.str(), si[static_cast<size_t>(axis)].str(), total.str(),
          si[static_cast<size_t>(axis)].str()));
    total = *sum;
  }
  c.setOutput(0, c.g.concatenate(xs, axis, c.name()));
}

/// x[index] along `axis`, keeping the axis (size 1).
NodeId unitSlice(NodeContext& c, NodeId x, size_t axis, int64_t index) {
  Shape s = c.typeOf(x).shape;
  std::vector<int64_t> starts(s.size(), 0), limits(s.size(), -1), strides(s.size(), 1);
  starts[axis] = index;
  limits[axis] = index + 1;
  return c.g.slice(x, starts, limits, strides);
}

/// The elements of x at `indices` along `axis`, in that order (concatenated unit slices).
NodeId takeAlong(NodeContext& c, NodeId x, size_t axis, const std::vector<int64_t>& indices,
                 const std::string& name = "") {
  if (static_cast<int64_t>(indices.size()) > kMaxUnrolled)
    c.unsupported(
        fmt::format("taking {} single elements along an axis is not supported: it is more than "
                    "weft unrolls ({})",
                    indices.size(), kMaxUnrolled));
  Shape s = c.typeOf(x).shape;
  if (indices.empty()) {
    std::vector<int64_t> starts(s.size(), 0), limits(s.size(), -1), strides(s.size(), 1);
    limits[axis] = 0;
    return c.g.slice(x, starts, limits, strides, name);
  }
  std::vector<NodeId> parts;
  for (int64_t i : indices)
    parts.push_back(unitSlice(c, x, axis, i));
  if (parts.size() == 1) return parts[0];
  return c.g.concatenate(parts, static_cast<int64_t>(axis), name);
}

void lowerSlice(NodeContext& c) {
  NodeId x = c.in(0);
  Shape in = c.typeOf(x).shape;
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.requireAttrInts("starts");
    ends = c.requireAttrInts("ends");
    if (auto a = c.attrInts("axes")) axes = *a;
  } else {
    starts = c.constInts(1, "starts");
    ends = c.constInts(2, "ends");
    if (c.has(3)) axes = c.constInts(3, "axes");
    if (c.has(4)) steps = c.constInts(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail(fmt::format("starts {}, ends {}, axes {} and steps {} need one entry per sliced axis",
                       listStr(starts), listStr(ends), listStr(axes), listStr(steps)));
  size_t r = in.size();
  std::vector<int64_t> lo(r, 0), hi(r, -1), st(r, 1);
  std::vector<std::pair<size_t, std::vector<int64_t>>> reversed; // negative steps: explicit indices
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t a = static_cast<size_t>(c.axis(axes[k], r, "axis"));
    if (seen[a]) c.fail(fmt::format("axis {} is sliced twice", a));
    seen[a] = true;
    int64_t step = steps[k];
    if (step == 0) c.fail("a step of 0 is not allowed");
    if (!in[a].isStatic()) {
      bool whole = step == 1 && (starts[k] == 0) && ends[k] >= std::numeric_limits<int32_t>::max();
      if (!whole)
        c.unsupported(fmt::format(
            "slicing axis {} of symbolic size {} other than whole is not supported (the part's "
            "size would depend on the run-time size)",
            a, in[a].str()));
      continue;
    }
    int64_t n = in[a].size();
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += n;
    if (e < 0) e += n;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      lo[a] = s;
      hi[a] = std::max(s, e);
      st[a] = step;
    } else {
      if (n == 0) { // nothing to take (and clamping to [0, -1] has no range)
        reversed.push_back({a, {}});
        continue;
      }
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      // s - e <= n and -step >= 1: neither the count nor the indices below overflow (an
      // index plus a step of INT64_MIN stays at or above INT64_MIN).
      uint64_t stride = 0 - static_cast<uint64_t>(step);
      int64_t count =
          s > e ? static_cast<int64_t>((static_cast<uint64_t>(s - e) - 1) / stride + 1) : 0;
      if (count > kMaxUnrolled)
        c.unsupported(fmt::format("a negative step taking {} elements along axis {} is not "
                                  "supported: it is more than weft unrolls ({})",
                                  count, a, kMaxUnrolled));
      std::vector<int64_t> idx;
      for (int64_t i = s, j = 0; j < count; ++j, i += step)
        idx.push_back(i);
      reversed.push_back({a, idx});
    }
  }
  bool plain = std::all_of(lo.begin(), lo.end(), [](int64_t v) { return v == 0; }) &&
               std::all_of(st.begin(), st.end(), [](int64_t v) { return v == 1; });
  for (size_t a = 0; a < r && plain; ++a)
    plain = hi[a] == -1 || (in[a].isStatic() && hi[a] == in[a].size());
  NodeId y = x;
  if (!plain) y = c.g.slice(x, lo, hi, st, reversed.empty() ? c.name() : "");
  for (size_t k = 0; k < reversed.size(); ++k)
    y = takeAlong(c, y, reversed[k].first, reversed[k].second,
                  k + 1 == reversed.size() ? c.name() : "");
  c.setOutput(0, y);
}

/// Pad in constant, edge or reflect mode; negative pads crop.
void lowerPad(NodeContext& c) {
  NodeId x = c.in(0);
  Shape in = c.typeOf(x).shape;
  size_t r = in.size();
  std::vector<int64_t> pads;
  double value = 0;
  std::string mode = c.attrString("mode", "constant");
  if (mode == "wrap" && c.opset >= 19) c.unsupported("Pad mode \"wrap\" is not supported");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    c.fail(fmt::format("mode \"{}\" is not one of constant, reflect, edge{}", mode,
                       c.opset >= 19 ? ", wrap" : ""));
  if (c.opset < 11) {
    pads = c.requireAttrInts(c.opset < 2 ? "paddings" : "pads");
    value = c.attrFloat("value", 0.0f);
  } else {
    pads = c.constInts(1, "pads");
    if (c.has(2)) value = c.constScalar(2, "constant_value");
  }
  std::vector<int64_t> axes(r);
  std::iota(axes.begin(), axes.end(), 0);
  if (c.opset >= 18 && c.has(3)) axes = normalizedAxes(c, c.constInts(3, "axes"), r, "axes");
  if (pads.size() != 2 * axes.size())
    c.fail(fmt::format("pads {} needs {} entries (begin and end for each of {} axes)",
                       listStr(pads), 2 * axes.size(), axes.size()));
  std::vector<int64_t> low(r, 0), high(r, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    low[static_cast<size_t>(axes[k])] = pads[k];
    high[static_cast<size_t>(axes[k])] = pads[k + axes.size()];
  }
  // crop first (negative pads)
  std::vector<int64_t> cropLo(r, 0), cropHi(r, -1), one(r, 1);
  bool crop = false;
  for (size_t a = 0; a < r; ++a) {
    if (low[a] >= 0 && high[a] >= 0) continue;
    if (!in[a].isStatic())
      c.unsupported(fmt::format("cropping (a negative pad on) axis {} of symbolic size {} is not "
                                "supported",
                                a, in[a].str()));
    crop = true;
    int64_t n = in[a].size();
    // Checked before negating: a pad below -n crops more than the axis holds, and -INT64_MIN
    // does not exist.
    bool below = low[a] < -n || high[a] < -n;
    if (!below) {
      cropLo[a] = std::max<int64_t>(0, -low[a]);
      cropHi[a] = n - std::max<int64_t>(0, -high[a]);
      below = cropHi[a] < cropLo[a];
    }
    if (below)
      c.fail(
          fmt::format("pads {} crop axis {} of size {} below zero elements", listStr(pads), a, n));
    low[a] = std::max<int64_t>(0, low[a]);
    high[a] = std::max<int64_t>(0, high[a]);
  }
  if (crop) x = c.g.slice(x, cropLo, cropHi, one);
  bool any = std::any_of(low.begin(), low.end(), [](int64_t v) { return v > 0; }) ||
             std::any_of(high.begin(), high.end(), [](int64_t v) { return v > 0; });
  if (!any) {
    c.setOutput(0, x);
    return;
  }
  if (mode == "constant") {
    c.setOutput(0, c.g.pad(x, low, high, value, c.name()));
    return;
  }
  for (size_t a = 0; a < r; ++a) {
    if (low[a] == 0 && high[a] == 0) continue;
    Shape s = c.typeOf(x).shape;
    if (!s[a].isStatic())
      c.unsupported(fmt::format("{} padding of axis {} of symbolic size {} is not supported", mode,
                                a, s[a].str()));
    int64_t n = s[a].size();
    if (std::max(low[a], high[a]) > kMaxUnrolled)
      c.unsupported(
          fmt::format("{} padding of {} elements on axis {} is not supported: it is more than "
                      "weft unrolls ({})",
                      mode, std::max(low[a], high[a]), a, kMaxUnrolled));
    std::vector<int64_t> before, after;
    for (int64_t i = low[a]; i >= 1; --i)
      before.push_back(mode == "edge" ? 0 : i);
    for (int64_t i = 1; i <= high[a]; ++i)
      after.push_back(mode == "edge" ? n - 1 : n - 1 - i);
    // reflect takes pad + 1 elements at most (the edge is not repeated); edge takes one
    for (int64_t i : before)
      if (i >= n)
        c.fail(fmt::format("{} padding {} on axis {} needs more than {} elements", mode, low[a], a,
                           n));
    for (int64_t i : after)
      if (i < 0)
        c.fail(fmt::format("{} padding {} on axis {} needs more than {} elements", mode, high[a], a,
                           n));
    std::vector<NodeId> parts;
    if (!before.empty()) parts.push_back(takeAlong(c, x, a, before));
    parts.push_back(x);
    if (!after.empty()) parts.push_back(takeAlong(c, x, a, after));
    x = c.g.concatenate(parts, static_cast<int64_t>(a));
  }
  c.setOutput(0, x);
}

/// CenterCropPad (opset 18): each axis of `axes` (default: every axis) cropped or padded with
/// zeros to the size `shape` gives it (input 1, known at import time), centred: a crop starts at
/// floor((n - size) / 2), a pad puts floor((size - n) / 2) before and the rest (one more when
/// odd) after. The output keeps the input's ONNX type.
void lowerCenterCropPad(NodeContext& c) {
  if (c.opset < 18) c.fail("CenterCropPad is defined from opset 18");
  NodeId x = c.in(0);
  const Shape in = c.typeOf(x).shape;
  const size_t r = in.size();
  std::vector<int64_t> sizes = c.constInts(1, "shape");
  if (c.rank(1) != 1)
    c.fail(fmt::format("shape has rank {}; it must be a 1-D tensor of sizes", c.rank(1)));
  std::vector<int64_t> axes(r);
  std::iota(axes.begin(), axes.end(), 0);
  if (auto given = c.attrInts("axes")) {
    axes = *given;
    normalizedAxes(c, *given, r, "axes"); // fails when one repeats
    for (int64_t& a : axes)
      a = c.axis(a, r, "axis");
  }
  if (sizes.size() != axes.size())
    c.fail(fmt::format("shape {} has {} sizes but there are {} axes ({})", listStr(sizes),
                       sizes.size(), axes.size(),
                       c.hasAttr("axes") ? "attribute axes" : "the rank"));
  std::vector<int64_t> lo(r, 0), hi(r, -1), st(r, 1), padLow(r, 0), padHigh(r, 0);
  bool crop = false, pad = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t a = static_cast<size_t>(axes[k]);
    int64_t size = sizes[k];
    if (size < 0) c.fail(fmt::format("shape {} has a negative size", listStr(sizes)));
    if (!in[a].isStatic())
      c.unsupported(fmt::format("CenterCropPad of axis {} of symbolic size {} is not supported "
                                "(whether it is cropped or padded, and by how much, depends on "
                                "the run-time size)",
                                a, in[a].str()));
    int64_t n = in[a].size();
    if (size < n) {
      lo[a] = (n - size) / 2;
      hi[a] = lo[a] + size;
      crop = true;
    } else if (size > n) {
      padLow[a] = (size - n) / 2;
      padHigh[a] = size - n - padLow[a];
      pad = true;
    }
  }
  NodeId y = x;
  if (crop) y = c.g.slice(y, lo, hi, st, pad ? "" : c.name());
  if (pad) y = c.g.pad(y, padLow, padHigh, 0.0, c.name());
  c.setOutput(0, y);
  if (int type = c.onnxType(0)) c.setOutputOnnxType(0, type);
}

/// a * b + d, failing (naming `what`) past int64.
int64_t checkedMulAdd(NodeContext& c, int64_t a, int64_t b, int64_t d, const std::string& what) {
  int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p) || __builtin_add_overflow(p, d, &p))
    c.fail(fmt::format("{} does not fit in int64", what));
  return p;
}

/// x with its axis `axis` (size L) spread `stride` apart: L elements at 0, stride, 2 stride...
/// and zeros between, (L - 1) * stride + 1 in all. x[..., L, 1, ...] padded to [..., L, stride,
/// ...] and read row-major as [..., L * stride, ...] has each element at l * stride.
NodeId spreadAxis(NodeContext& c, NodeId x, size_t axis, int64_t stride) {
  Shape s = c.typeOf(x).shape;
  int64_t n = s[axis].size();
  if (stride == 1 || n <= 1) return x;
  Shape unit = s;
  unit.insert(unit.begin() + static_cast<std::ptrdiff_t>(axis) + 1, Dim(1));
  std::vector<int64_t> low(unit.size(), 0), high(unit.size(), 0);
  high[axis + 1] = stride - 1;
  NodeId padded = c.g.pad(c.g.reshape(x, unit), low, high, 0.0);
  Shape flat = s;
  flat[axis] = Dim(n * stride);
  std::vector<int64_t> lo(s.size(), 0), hi(s.size(), -1), st(s.size(), 1);
  hi[axis] = (n - 1) * stride + 1;
  return c.g.slice(c.g.reshape(padded, flat), lo, hi, st);
}

/// Col2Im (opset 18): input [N, C * prod(block_shape), L] holds, for each channel and block
/// element k (row-major over block_shape), the value of each of the L = prod(L_i) sliding
/// blocks (row-major), L_i = (image_i + pads - dilation_i (block_i - 1) - 1) / stride_i + 1.
/// Block l's element k lands on l_i stride_i + k_i dilation_i of the padded image, where the
/// values landing on one pixel add up; the pads are cut off at the end. Lowered with
/// image_shape and block_shape known at import time: the block axes spread stride apart, then
/// for each block element its values padded into place and the whole summed (or-ed for bools).
void lowerCol2Im(NodeContext& c) {
  if (c.opset < 18) c.fail("Col2Im is defined from opset 18");
  NodeId x = c.in(0);
  const ir::TensorType t = c.typeOf(x);
  if (t.shape.size() != 3)
    c.fail(fmt::format("input {} must have rank 3 (N, C * prod(block_shape), L)",
                       ir::shapeStr(t.shape)));
  std::vector<int64_t> image = c.constInts(1, "image_shape");
  std::vector<int64_t> block = c.constInts(2, "block_shape");
  if (c.rank(1) != 1 || c.rank(2) != 1) c.fail("image_shape and block_shape must be 1-D tensors");
  const size_t n = image.size();
  if (n == 0) c.fail("image_shape is empty; Col2Im needs at least one spatial axis");
  if (block.size() != n)
    c.fail(fmt::format("block_shape {} and image_shape {} need one entry per spatial axis",
                       listStr(block), listStr(image)));
  auto perAxis = [&](const char* name, int64_t dflt, size_t count, int64_t least) {
    std::vector<int64_t> v = c.attrInts(name).value_or(std::vector<int64_t>(count, dflt));
    if (v.size() != count)
      c.fail(fmt::format("{} {} needs {} entries for {} spatial axes", name, listStr(v), count, n));
    for (int64_t e : v)
      if (e < least)
        c.fail(fmt::format("{} {} has {}; each must be {} or more", name, listStr(v), e, least));
    return v;
  };
  std::vector<int64_t> dilations = perAxis("dilations", 1, n, 1);
  std::vector<int64_t> strides = perAxis("strides", 1, n, 1);
  std::vector<int64_t> pads = perAxis("pads", 0, 2 * n, 0);
  for (int64_t b : block)
    if (b < 1) c.fail(fmt::format("block_shape {} has a size below 1", listStr(block)));
  for (int64_t i : image)
    if (i < 0) c.fail(fmt::format("image_shape {} has a negative size", listStr(image)));
  std::vector<int64_t> blocks(n), padded(n);
  int64_t blockElements = 1, blockCount = 1;
  for (size_t i = 0; i < n; ++i) {
    padded[i] = checkedMulAdd(c, 1, image[i], pads[i], "the padded image size");
    padded[i] = checkedMulAdd(c, 1, padded[i], pads[i + n], "the padded image size");
    int64_t span = checkedMulAdd(c, dilations[i], block[i] - 1, 1, "the dilated block size");
    if (span > padded[i])
      c.fail(fmt::format("a block of {} (dilation {}) spans {} elements, more than the {} of "
                         "spatial axis {} padded",
                         block[i], dilations[i], span, padded[i], i));
    blocks[i] = (padded[i] - span) / strides[i] + 1;
    blockElements = checkedMulAdd(c, blockElements, block[i], 0, "prod(block_shape)");
    blockCount = checkedMulAdd(c, blockCount, blocks[i], 0, "the block count");
  }
  if (!t.shape[1].isStatic() || !t.shape[2].isStatic())
    c.unsupported(fmt::format("Col2Im of input {} with symbolic dims 1 or 2 is not supported",
                              ir::shapeStr(t.shape)));
  if (t.shape[1].size() % blockElements != 0)
    c.fail(fmt::format("dim 1 of input {} is not a multiple of prod(block_shape {}) = {}",
                       ir::shapeStr(t.shape), listStr(block), blockElements));
  if (t.shape[2].size() != blockCount)
    c.fail(fmt::format("dim 2 of input {} must be the block count {} ({} blocks per spatial "
                       "axis)",
                       ir::shapeStr(t.shape), blockCount, listStr(blocks)));
  if (blockElements > kMaxUnrolled)
    c.unsupported(fmt::format("Col2Im with {} elements per block is not supported: it is more "
                              "than weft unrolls ({})",
                              blockElements, kMaxUnrolled));
  const int64_t channels = t.shape[1].size() / blockElements;
  // [N, C, b_1..b_n, L_1..L_n], the L_i axes spread stride_i apart
  Shape split = {t.shape[0], Dim(channels)};
  for (int64_t b : block)
    split.push_back(Dim(b));
  for (int64_t l : blocks)
    split.push_back(Dim(l));
  NodeId spread = c.g.reshape(x, split);
  for (size_t i = 0; i < n; ++i)
    spread = spreadAxis(c, spread, 2 + n + i, strides[i]);
  const Shape spreadShape = c.typeOf(spread).shape;
  Shape part = {t.shape[0], Dim(channels)}; // one block element's values: [N, C, S_1..S_n]
  part.insert(part.end(), spreadShape.begin() + 2 + static_cast<std::ptrdiff_t>(n),
              spreadShape.end());
  const bool logical = ir::isBool(t.dtype);
  // a narrow type weft holds widened wraps its sums back into range (castTo)
  const int type = c.onnxType(0);
  const bool wraps = heldNarrowBits(type) != 0;
  const bool padding = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  std::optional<NodeId> sum;
  std::vector<int64_t> k(n, 0); // the block element, row-major
  for (int64_t e = 0; e < blockElements; ++e) {
    std::vector<int64_t> lo(split.size(), 0), hi(split.size(), -1), st(split.size(), 1);
    std::vector<int64_t> low(2 + n, 0), high(2 + n, 0);
    for (size_t i = 0; i < n; ++i) {
      lo[2 + i] = k[i];
      hi[2 + i] = k[i] + 1;
      low[2 + i] = k[i] * dilations[i];
      high[2 + i] = padded[i] - low[2 + i] - part[2 + i].size();
    }
    const std::string name = e + 1 == blockElements && !padding && !wraps ? c.name() : "";
    NodeId values = c.g.reshape(c.g.slice(spread, lo, hi, st), part);
    NodeId placed = c.g.pad(values, low, high, 0.0, sum ? "" : name);
    sum = sum ? c.g.binary(logical ? OpKind::Or : OpKind::Add, *sum, placed, name) : placed;
    for (size_t i = n; i-- > 0;) { // the next block element
      if (++k[i] < block[i]) break;
      k[i] = 0;
    }
  }
  NodeId y = *sum;
  if (padding) {
    std::vector<int64_t> lo(2 + n, 0), hi(2 + n, -1), st(2 + n, 1);
    for (size_t i = 0; i < n; ++i) {
      lo[2 + i] = pads[i];
      hi[2 + i] = pads[i] + image[i];
    }
    y = c.g.slice(y, lo, hi, st, wraps ? "" : c.name());
  }
  if (wraps) y = castTo(c, y, type, c.name());
  c.setOutput(0, y);
  if (type) c.setOutputOnnxType(0, type);
}

void lowerShape(NodeContext& c) {
  Shape s = c.type(0).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t start = c.attrInt("start", 0), end = c.attrInt("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    const Dim& d = s[static_cast<size_t>(i)];
    if (!d.isStatic())
      c.unsupported(
          fmt::format("Shape of {} is not supported: it has the symbolic dim {}, which cannot be "
                      "folded at import time",
                      ir::shapeStr(s), d.str()));
    dims.push_back(d.size());
  }
  int64_t n = static_cast<int64_t>(dims.size());
  c.setOutput(0, Literal::ofInts(ir::DType::i64, {n}, std::move(dims)));
}

/// Constant: exactly one of its value attributes (ONNX requires one).
void lowerConstant(NodeContext& c) {
  static const char* const kValueAttrs[] = {"value",         "value_float", "value_floats",
                                            "value_int",     "value_ints",  "value_string",
                                            "value_strings", "sparse_value"};
  std::vector<std::string> given;
  for (const char* a : kValueAttrs)
    if (c.hasAttr(a)) given.push_back(a);
  if (given.size() > 1)
    c.fail(fmt::format("has {} value attributes ({}); a Constant takes exactly one", given.size(),
                       fmt::join(given, ", ")));
  std::string where = c.where();
  if (const auto* t = c.attrTensor("value")) {
    c.setOutput(0, literalFromTensorProto(*t, where));
    c.setOutputOnnxType(0, t->data_type());
    return;
  }
  if (c.hasAttr("value_float")) {
    c.setOutput(0, Literal::ofReals(ir::DType::f32, {}, {c.attrFloat("value_float", 0)}));
    return;
  }
  if (auto v = c.attrFloats("value_floats")) {
    int64_t n = static_cast<int64_t>(v->size());
    c.setOutput(0,
                Literal::ofReals(ir::DType::f32, {n}, std::vector<double>(v->begin(), v->end())));
    return;
  }
  if (c.hasAttr("value_int")) {
    c.setOutput(0, Literal::ofInts(ir::DType::i64, {}, {c.attrInt("value_int", 0)}));
    return;
  }
  if (auto v = c.attrInts("value_ints")) {
    int64_t n = static_cast<int64_t>(v->size());
    c.setOutput(0, Literal::ofInts(ir::DType::i64, {n}, std::move(*v)));
    return;
  }
  c.unsupported("Constant without a value, value_float(s) or value_int(s) attribute (sparse and "
                "string constants "
                "are not supported)");
}

void lowerConstantOfShape(NodeContext& c) {
  std::vector<int64_t> shape = c.constInts(0, "shape");
  Literal value = Literal::ofReals(ir::DType::f32, {1}, {0.0});
  int onnxType = ::onnx::TensorProto::FLOAT;
  if (const auto* t = c.attrTensor("value")) {
    value = literalFromTensorProto(*t, c.where());
    onnxType = t->data_type();
    if (value.size() != 1) c.fail("attribute value must hold exactly one element");
  }
  for (int64_t d : shape)
    if (d < 0) c.fail(fmt::format("shape {} has a negative size", listStr(shape)));
  int64_t n = 0;
  try {
    n = ir::checkedProduct(shape);
  } catch (const InputError& e) {
    c.fail(fmt::format("shape {}: {}", listStr(shape), e.what()));
  }
  if (n > kMaxLiteralElements) { // a splat node rather than n values on the host
    c.setOutput(0, c.splat(value.dtype, Shape(shape.begin(), shape.end()), value.value(0)));
    c.setOutputOnnxType(0, onnxType);
    return;
  }
  Literal lit{value.dtype, shape, {}, {}};
  if (lit.integral())
    lit.exact.assign(static_cast<size_t>(n), value.exact[0]);
  else
    lit.reals.assign(static_cast<size_t>(n), value.reals[0]);
  c.setOutput(0, std::move(lit));
  c.setOutputOnnxType(0, onnxType);
}

/// Gather along `axis`: y = numpy's take(data, indices, axis). Known indices (up to
/// kMaxUnrolled of them) become slices, checked against the axis at import. Run-time indices
/// become the IR's gather (frontend::take), which reads only the elements it gathers: a
/// negative index counts from the end once, and one still out of range reads 0 (ONNX calls
/// it an error). Both need the axis's size, so a symbolic axis is refused.
void lowerGather(NodeContext& c) {
  NodeId data = c.in(0);
  Shape ds = c.typeOf(data).shape;
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", 0), ds.size(), "axis"));
  if (!ds[axis].isStatic())
    c.unsupported(fmt::format("Gather along axis {} of symbolic size {} is not supported (a "
                              "negative index counts from its end)",
                              axis, ds[axis].str()));
  int64_t n = ds[axis].size();
  if (const Literal* idx = c.literal(1); idx && idx->numElements() <= kMaxUnrolled) {
    std::vector<int64_t> indices;
    try {
      indices = idx->ints();
    } catch (const InputError& e) {
      c.fail(fmt::format("indices: {}", e.what()));
    }
    for (int64_t& i : indices) {
      if (i < -n || i >= n)
        c.fail(fmt::format("index {} is out of range for axis {} of size {}", i, axis, n));
      if (i < 0) i += n;
    }
    Shape is = c.type(1).shape;
    Shape out(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), is.begin(), is.end());
    out.insert(out.end(), ds.begin() + static_cast<std::ptrdiff_t>(axis) + 1, ds.end());
    NodeId taken = takeAlong(c, data, axis, indices);
    c.setOutput(0, c.reshapeTo(taken, out, c.name()));
    return;
  }
  c.setOutput(0, frontend::take(c.site(), data, c.in(1), static_cast<int64_t>(axis), c.name()));
}

/// Split along `axis` into slices: sizes from the `split` attribute (before opset 13) or input
/// (from 13), else equal parts, one per output (`num_outputs` from opset 18 says how many).
void lowerSplit(NodeContext& c) {
  NodeId x = c.in(0);
  Shape s = c.typeOf(x).shape;
  size_t axis = static_cast<size_t>(c.axis(c.attrInt("axis", 0), s.size(), "axis"));
  if (!s[axis].isStatic())
    c.unsupported(
        fmt::format("Split of axis {} of symbolic size {} is not supported", axis, s[axis].str()));
  int64_t n = s[axis].size();
  std::vector<int64_t> sizes;
  if (c.opset >= 18 && c.has(1) && c.hasAttr("num_outputs"))
    c.fail("takes either input 1 (split) or the attribute num_outputs, not both");
  if (c.opset < 13)
    sizes = c.attrInts("split").value_or(std::vector<int64_t>{});
  else if (c.has(1))
    sizes = c.constInts(1, "split");
  if (sizes.empty()) {
    int64_t parts = c.opset >= 18 && c.hasAttr("num_outputs")
                        ? c.attrInt("num_outputs", 1)
                        : static_cast<int64_t>(c.numOutputs());
    if (parts <= 0) c.fail("needs at least one output");
    if (parts != static_cast<int64_t>(c.numOutputs()))
      c.fail(
          fmt::format("num_outputs {} differs from the node's {} outputs", parts, c.numOutputs()));
    int64_t each = (n + parts - 1) / parts; // the last part may be smaller (opset 18)
    for (int64_t start = 0, k = 0; k < parts; ++k, start += each)
      sizes.push_back(std::max<int64_t>(0, std::min(each, n - start)));
  }
  int64_t total = 0;
  for (int64_t v : sizes) {
    if (v < 0) c.fail(fmt::format("split {} has a negative size", listStr(sizes)));
    if (__builtin_add_overflow(total, v, &total))
      c.fail(fmt::format("split {} adds up past int64", listStr(sizes)));
  }
  if (total != n)
    c.fail(fmt::format("split {} adds up to {} but axis {} has {} elements", listStr(sizes), total,
                       axis, n));
  if (sizes.size() != c.numOutputs())
    c.fail(fmt::format("split {} makes {} parts but the node has {} outputs", listStr(sizes),
                       sizes.size(), c.numOutputs()));
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<int64_t> lo(s.size(), 0), hi(s.size(), -1), st(s.size(), 1);
    lo[axis] = start;
    hi[axis] = start + sizes[k];
    start += sizes[k];
    if (c.wantsOutput(k)) c.setOutput(k, c.g.slice(x, lo, hi, st, c.name(k)));
  }
}

} // namespace

void addLayoutOps(OperatorTable& t) {
  t["Reshape"] = lowerReshape;
  t["Flatten"] = lowerFlatten;
  t["Squeeze"] = lowerSqueeze;
  t["Unsqueeze"] = lowerUnsqueeze;
  t["Transpose"] = lowerTranspose;
  t["Expand"] = lowerExpand;
  t["Concat"] = lowerConcat;
  t["Slice"] = lowerSlice;
  t["Pad"] = lowerPad;
  t["CenterCropPad"] = lowerCenterCropPad;
  t["Col2Im"] = lowerCol2Im;
  t["Shape"] = lowerShape;
  t["Constant"] = lowerConstant;
  t["ConstantOfShape"] = lowerConstantOfShape;
  t["Gather"] = lowerGather;
  t["Split"] = lowerSplit;
}

} // namespace weft::onnx
