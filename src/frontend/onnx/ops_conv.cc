// Convolutions: Conv and ConvTranspose (opsets 1 and 11; every attribute, 1-D to n-D, groups,
// the optional bias), built from layout ops and one IR dot so that weft's GEMM path does the
// multiply-accumulate.
//
// Conv is an im2col: the input goes channels last and is padded; each kernel tap is a strided
// slice of it, [N, O1..On, G, C/G]; the taps are concatenated along the channel axis into one
// matrix [G, N*O, taps*C/G] and multiplied by the weights rearranged to [G, taps*C/G, M/G].
// One dot with K = taps*C/G rather than one dot per tap summed: the graph has one slice per tap
// and a fixed number of other nodes whatever the kernel (a dot and an add per tap would be
// three nodes per tap and taps small dots), and the single dot is as large as the layer allows,
// which is what the GEMM path is fast at. The price is the im2col matrix, taps times the input,
// which the planner can stitch into the dot's producer. The same core, over int32 operands
// summed in int32, is ConvInteger's and QLinearConv's (convolution(), importer.h).
//
// ConvTranspose is the Conv, stride 1, over its input dilated by the stride (zeros between the
// elements), padded by extent-1-pads on each side (plus output_padding at the end; a negative
// amount crops), with the kernel flipped and the weights' in/out channels swapped per group. The
// flip is not a rewrite of the weights: the taps' input slices are taken in reverse order
// instead, so an initializer reaches the dot through layout ops only and stays the model's
// weight. A direct lowering (a dot of the undilated input, then a col2im sum of the taps'
// shifted outputs) does stride^n fewer multiplies but costs several nodes and an output-sized
// add per tap; the dilated form keeps the graph as small as Conv's and its one large dot.
#include <algorithm>
#include <fmt/format.h>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::NodeId;
using ir::Shape;

/// Kernels with more taps are refused: each tap is a slice in the graph, and the im2col matrix
/// holds taps copies of the input.
constexpr int64_t kMaxTaps = 1024;


/// The product of sizes known not to overflow (a kernel's, at most kMaxTaps).
int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

/// a * b + add, failing when a size overflows int64 (absurd strides, dilations or pads).
int64_t mulAdd(NodeContext& c, int64_t a, int64_t b, int64_t add, size_t axis) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, add, &r))
    c.fail(fmt::format("the sizes on spatial axis {} overflow int64", axis));
  return r;
}

int64_t add(NodeContext& c, int64_t a, int64_t b, size_t axis) {
  return mulAdd(c, a, 1, b, axis);
}

/// Floor division (Python's //), which ONNX's formulas for the padding split use.
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/// What both operators read from X, W and B and the `group` attribute, checked.
struct ConvOperands {
  NodeId x = -1;
  Dim batch;                    // N, may be symbolic
  int64_t channels = 0;         // C, X's dim 1
  int64_t outChannels = 0;      // M
  int64_t group = 1;            // G: C and M divide by it
  std::vector<int64_t> spatial; // X's D1..Dn
  std::vector<int64_t> kernel;  // W's k1..kn
};

/// The spatial attribute `name`: `perAxis` values for each of the n spatial axes (pads has two),
/// each >= `min`; `dflt` everywhere when absent.
std::vector<int64_t> perAxis(NodeContext& c, const std::string& name, size_t n, int64_t dflt,
                             int64_t min, size_t valuesPerAxis = 1) {
  std::optional<std::vector<int64_t>> v = c.attrInts(name);
  if (!v) return std::vector<int64_t>(n * valuesPerAxis, dflt);
  if (v->size() != n * valuesPerAxis)
    c.fail(fmt::format("{} {} has {} values, not {} (the input has {} spatial axes)", name,
                       listStr(*v), v->size(), n * valuesPerAxis, n));
  for (int64_t x : *v)
    if (x < min) c.fail(fmt::format("{} {} has a value below {}", name, listStr(*v), min));
  return *v;
}

/// Static dims of `s` from `from` on; unsupported naming `what` when one is symbolic.
std::vector<int64_t> staticDims(NodeContext& c, const Shape& s, size_t from,
                                const std::string& what) {
  std::vector<int64_t> dims;
  for (size_t i = from; i < s.size(); ++i) {
    if (!s[i].isStatic())
      c.unsupported(fmt::format("{} {} has the symbolic dim {} (axis {}); only the batch dim of "
                                "a convolution may be symbolic",
                                what, ir::shapeStr(s), s[i].str(), i));
    dims.push_back(s[i].size());
  }
  return dims;
}

/// The geometry of a convolution of x [N, C, D1..Dn] by w ([M, C/G, k...] for Conv, [C, M/G,
/// k...] for ConvTranspose): the group and kernel_shape attributes, checked against the shapes.
/// The operands' dtypes are the caller's to check (requireFloatOperands, or the integer
/// operators' own checks).
ConvOperands readOperands(NodeContext& c, NodeId x, NodeId w, bool transposed) {
  ConvOperands o;
  o.x = x;
  ir::TensorType xt = c.typeOf(x), wt = c.typeOf(w);
  if (xt.shape.size() < 3)
    c.fail(fmt::format("X {} needs rank 3 or more (N, C, D1, ...)", ir::shapeStr(xt.shape)));
  if (wt.shape.size() != xt.shape.size())
    c.fail(fmt::format("W {} must have X's rank {} ({}, {}, k1, ...)", ir::shapeStr(wt.shape),
                       xt.shape.size(), transposed ? "C" : "M",
                       transposed ? "M/group" : "C/group"));
  o.batch = xt.shape[0];
  std::vector<int64_t> xDims = staticDims(c, xt.shape, 1, "X");
  std::vector<int64_t> wDims = staticDims(c, wt.shape, 0, "W");
  o.channels = xDims[0];
  o.spatial.assign(xDims.begin() + 1, xDims.end());
  o.kernel.assign(wDims.begin() + 2, wDims.end());
  int64_t taps = 1;
  for (int64_t k : o.kernel) {
    if (k == 0) c.fail(fmt::format("W {} has an empty kernel", ir::shapeStr(wt.shape)));
    if (k > kMaxTaps || (taps *= k) > kMaxTaps)
      c.unsupported(fmt::format("the kernel {} of W {} has more than {} taps, which is not "
                                "supported (each is a slice of the input)",
                                listStr(o.kernel), ir::shapeStr(wt.shape), kMaxTaps));
  }
  o.group = c.attrInt("group", 1);
  if (o.group < 1) c.fail(fmt::format("group {} must be 1 or more", o.group));
  if (o.channels % o.group != 0)
    c.fail(fmt::format("X's {} channels do not divide into group {}", o.channels, o.group));
  if (transposed) {
    if (wDims[0] != o.channels)
      c.fail(fmt::format("W {} must have X's {} channels as dim 0", ir::shapeStr(wt.shape),
                         o.channels));
    if (__builtin_mul_overflow(wDims[1], o.group, &o.outChannels))
      c.fail(fmt::format("W {}'s {} output channels per group times group {} overflow int64",
                         ir::shapeStr(wt.shape), wDims[1], o.group));
  } else {
    if (wDims[1] != o.channels / o.group)
      c.fail(fmt::format("W {} has {} input channels per group; X's {} channels in group {} need "
                         "{}",
                         ir::shapeStr(wt.shape), wDims[1], o.channels, o.group,
                         o.channels / o.group));
    if (wDims[0] % o.group != 0)
      c.fail(fmt::format("W {}'s {} output channels do not divide into group {}",
                         ir::shapeStr(wt.shape), wDims[0], o.group));
    o.outChannels = wDims[0];
  }
  if (auto k = c.attrInts("kernel_shape"); k && *k != o.kernel)
    c.fail(fmt::format("kernel_shape {} differs from W's kernel {} (W {})", listStr(*k),
                       listStr(o.kernel), ir::shapeStr(wt.shape)));
  return o;
}

/// Conv's and ConvTranspose's X (input 0) is floating point and W (input 1) has its dtype.
void requireFloatOperands(NodeContext& c) {
  ir::TensorType xt = c.type(0), wt = c.type(1);
  if (!ir::isFloat(xt.dtype))
    c.fail(fmt::format("X has dtype {}; {} takes floating-point tensors", ir::dtypeName(xt.dtype),
                       c.node.op_type()));
  if (wt.dtype != xt.dtype)
    c.fail(fmt::format("W has dtype {} but X has dtype {}", ir::dtypeName(wt.dtype),
                       ir::dtypeName(xt.dtype)));
}

/// Fails unless the bias b is [M], one value per output channel.
void checkBiasShape(NodeContext& c, NodeId b, const ConvOperands& o) {
  Shape s = c.typeOf(b).shape;
  if (s != Shape{Dim(o.outChannels)})
    c.fail(fmt::format("B {} must be [{}], one value per output channel", ir::shapeStr(s),
                       o.outChannels));
}

enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

AutoPad readAutoPad(NodeContext& c) {
  std::string s = c.attrString("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::NotSet;
  if (s == "VALID") return AutoPad::Valid;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  c.fail(fmt::format("auto_pad \"{}\" is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", s));
}

/// The explicit pads [x1_begin, ..., xn_begin, x1_end, ..., xn_end], each >= 0, when auto_pad
/// is NOTSET; otherwise auto_pad computes them and `pads` may only be given as zeros (which
/// exporters write).
void readPads(NodeContext& c, AutoPad autoPad, size_t n, std::vector<int64_t>& low,
              std::vector<int64_t>& high) {
  std::vector<int64_t> pads = perAxis(c, "pads", n, 0, 0, 2);
  if (autoPad != AutoPad::NotSet) {
    for (int64_t p : pads)
      if (p != 0)
        c.fail(fmt::format("pads {} cannot be used with auto_pad {}", listStr(pads),
                           c.attrString("auto_pad", "")));
  }
  low.assign(pads.begin(), pads.begin() + static_cast<long>(n));
  high.assign(pads.begin() + static_cast<long>(n), pads.end());
}

/// Where each output element of a stride-`strides`, dilation-`dilations` window reads: the
/// padding of the input (negative crops) and the output's spatial size.
struct Window {
  std::vector<int64_t> strides, dilations, padLow, padHigh, out;
};

/// The elements a kernel spans: (kernel - 1) * dilation + 1.
int64_t extent(NodeContext& c, int64_t kernel, int64_t dilation, size_t axis) {
  return mulAdd(c, kernel - 1, dilation, 1, axis);
}

/// Conv's window: explicit pads, or those auto_pad gives (VALID: none; SAME_*: the output is
/// ceil(D / stride), the odd element of padding at the end for SAME_UPPER, at the start for
/// SAME_LOWER).
Window convWindow(NodeContext& c, const ConvOperands& o) {
  size_t n = o.spatial.size();
  Window w;
  w.strides = perAxis(c, "strides", n, 1, 1);
  w.dilations = perAxis(c, "dilations", n, 1, 1);
  AutoPad autoPad = readAutoPad(c);
  readPads(c, autoPad, n, w.padLow, w.padHigh);
  for (size_t i = 0; i < n; ++i) {
    int64_t e = extent(c, o.kernel[i], w.dilations[i], i);
    if (autoPad == AutoPad::SameUpper || autoPad == AutoPad::SameLower) {
      int64_t out = o.spatial[i] / w.strides[i] + (o.spatial[i] % w.strides[i] != 0);
      int64_t total = std::max<int64_t>(0, mulAdd(c, out - 1, w.strides[i], e, i) - o.spatial[i]);
      w.padLow[i] = autoPad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      w.padHigh[i] = total - w.padLow[i];
    }
    int64_t padded = add(c, add(c, o.spatial[i], w.padLow[i], i), w.padHigh[i], i);
    if (padded < e)
      c.fail(fmt::format("on spatial axis {} the kernel spans {} elements (kernel {}, dilation "
                         "{}) but the padded input has {}",
                         i, e, o.kernel[i], w.dilations[i], padded));
    w.out.push_back((padded - e) / w.strides[i] + 1);
  }
  return w;
}

/// ConvTranspose's output geometry as the equivalent stride-1 Conv over the input dilated by
/// the stride: the Conv's window (padLow/padHigh relative to the dilated input's length
/// (D - 1) * stride + 1) and the output size
///   stride * (D - 1) + output_padding + extent - pads_begin - pads_end,
/// the pads given, from auto_pad SAME_* (output D * stride) or from output_shape (which takes
/// precedence over pads; the total split with floor division, the larger half at the end for
/// SAME_UPPER and at the start otherwise, as the spec's formulas say).
Window transposedWindow(NodeContext& c, const ConvOperands& o, std::vector<int64_t>& strides) {
  size_t n = o.spatial.size();
  strides = perAxis(c, "strides", n, 1, 1);
  std::vector<int64_t> dilations = perAxis(c, "dilations", n, 1, 1);
  std::vector<int64_t> outPadding = perAxis(c, "output_padding", n, 0, 0);
  AutoPad autoPad = readAutoPad(c);
  std::vector<int64_t> low, high;
  readPads(c, autoPad, n, low, high);
  std::optional<std::vector<int64_t>> outShape = c.attrInts("output_shape");
  if (outShape) {
    // The spatial sizes; some exporters write the whole shape (N, M, D1, ...).
    const std::vector<int64_t> given = *outShape;
    bool whole = given.size() == n + 2;
    if (whole && (given[1] != o.outChannels || (o.batch.isStatic() && given[0] != o.batch.size())))
      c.fail(fmt::format("output_shape {} gives a whole shape, but it does not start with the "
                         "output's N {} and M {}",
                         listStr(given), o.batch.str(), o.outChannels));
    if (whole) outShape->erase(outShape->begin(), outShape->begin() + 2);
    if (outShape->size() != n)
      c.fail(fmt::format("output_shape {} has {} values, not {} (the input has {} spatial axes)",
                         listStr(given), given.size(), n, n));
    for (int64_t d : *outShape)
      if (d < 0) c.fail(fmt::format("output_shape {} has a negative size", listStr(*outShape)));
  }
  Window w;
  w.strides.assign(n, 1);
  w.dilations = dilations;
  for (size_t i = 0; i < n; ++i) {
    if (outPadding[i] >= strides[i] && outPadding[i] >= dilations[i])
      c.fail(fmt::format("output_padding {} must be less than the stride {} or the dilation {} "
                         "on spatial axis {}",
                         outPadding[i], strides[i], dilations[i], i));
    if (o.spatial[i] == 0)
      c.unsupported(fmt::format("X's spatial axis {} has size 0; the transposed convolution of "
                                "an empty input is not supported",
                                i));
    int64_t e = extent(c, o.kernel[i], dilations[i], i);
    int64_t full = mulAdd(c, strides[i], o.spatial[i] - 1, add(c, outPadding[i], e, i), i);
    bool same = autoPad == AutoPad::SameUpper || autoPad == AutoPad::SameLower;
    if (outShape || same) {
      int64_t target = outShape ? (*outShape)[i] : mulAdd(c, o.spatial[i], strides[i], 0, i);
      int64_t total = full - target;
      low[i] = autoPad == AutoPad::SameUpper ? floorDiv(total, 2) : total - floorDiv(total, 2);
      high[i] = total - low[i];
    }
    int64_t out = add(c, add(c, full, -low[i], i), -high[i], i);
    if (out < 0)
      c.fail(fmt::format("pads {} and {} leave spatial axis {} a negative size {}", low[i], high[i],
                         i, out));
    w.out.push_back(out);
    w.padLow.push_back(add(c, e - 1, -low[i], i));
    w.padHigh.push_back(add(c, add(c, e - 1, -high[i], i), outPadding[i], i));
  }
  return w;
}

// --- building the graph ---

/// X [N, C, D...] as [N, D..., C].
NodeId channelsLast(NodeContext& c, NodeId x, size_t n) {
  std::vector<int64_t> perm{0};
  for (size_t i = 0; i < n; ++i)
    perm.push_back(static_cast<int64_t>(i) + 2);
  perm.push_back(1);
  return c.g.transpose(x, perm);
}

/// x [N, D..., C] with (stride - 1) zeros after each element of each spatial axis:
/// [N, D1*s1, ..., C]. Each strided axis gets a unit axis after it, padded to the stride, and
/// the two are merged again.
NodeId dilate(NodeContext& c, NodeId x, const std::vector<int64_t>& strides) {
  bool any = false;
  for (int64_t s : strides)
    any |= s > 1;
  if (!any) return x;
  Shape s = c.typeOf(x).shape, split{s[0]}, merged{s[0]};
  std::vector<int64_t> low, high{0};
  for (size_t i = 0; i < strides.size(); ++i) {
    split.push_back(s[i + 1]);
    split.push_back(Dim(1));
    merged.push_back(s[i + 1] * Dim(strides[i]));
    high.push_back(0);
    high.push_back(strides[i] - 1);
  }
  split.push_back(s.back());
  merged.push_back(s.back());
  high.push_back(0);
  low.assign(high.size(), 0);
  NodeId padded = c.g.pad(c.g.reshape(x, split), low, high, 0.0);
  return c.g.reshape(padded, merged);
}

/// x [N, D..., C] padded with zeros by low/high on the spatial axes; a negative amount crops.
NodeId padOrCrop(NodeContext& c, NodeId x, const std::vector<int64_t>& low,
                 const std::vector<int64_t>& high) {
  size_t r = low.size() + 2;
  std::vector<int64_t> padLow(r, 0), padHigh(r, 0);
  bool pad = false, crop = false;
  for (size_t i = 0; i < low.size(); ++i) {
    padLow[i + 1] = std::max<int64_t>(low[i], 0);
    padHigh[i + 1] = std::max<int64_t>(high[i], 0);
    pad |= low[i] > 0 || high[i] > 0;
    crop |= low[i] < 0 || high[i] < 0;
  }
  if (pad) x = c.g.pad(x, padLow, padHigh, 0.0);
  if (!crop) return x;
  Shape s = c.typeOf(x).shape;
  std::vector<int64_t> starts(r, 0), limits(r, -1), steps(r, 1);
  for (size_t i = 0; i < low.size(); ++i) {
    starts[i + 1] = std::max<int64_t>(-low[i], 0);
    limits[i + 1] = s[i + 1].size() - std::max<int64_t>(-high[i], 0);
  }
  limits[r - 1] = s.back().size();
  return c.g.slice(x, starts, limits, steps);
}

/// The im2col matrix of the padded channels-last input xp [N, P..., C]: row (n, o...) holds,
/// tap after tap (row-major over the kernel), the C/G channels of group g that the tap reads
/// for output o: xp[n, o*stride + k*dilation, g*C/G : (g+1)*C/G]. [N*O, taps*C] for one group,
/// [G, N*O, taps*C/G] for several. With `flip` the tap of kernel index k reads at index K-1-k
/// (K the kernel's size on that axis) instead: ConvTranspose's flipped kernel.
NodeId im2col(NodeContext& c, NodeId xp, const ConvOperands& o, const Window& w, bool flip) {
  size_t n = o.kernel.size();
  int64_t perGroup = o.channels / o.group;
  Shape s = c.typeOf(xp).shape;
  if (o.group > 1) { // [N, P..., G, C/G]: each tap's slice is then already split by group
    s.back() = Dim(o.group);
    s.push_back(Dim(perGroup));
    xp = c.g.reshape(xp, s);
  }
  size_t r = s.size();
  std::vector<NodeId> taps;
  std::vector<int64_t> k(n, 0); // the tap's kernel index
  for (int64_t t = 0; t < product(o.kernel); ++t) {
    std::vector<int64_t> starts(r, 0), limits(r, -1), steps(r, 1);
    bool whole = true;
    for (size_t i = 0; i < n; ++i) {
      int64_t ki = flip ? o.kernel[i] - 1 - k[i] : k[i];
      int64_t start = ki * w.dilations[i], out = w.out[i];
      starts[i + 1] = start;
      steps[i + 1] = w.strides[i];
      limits[i + 1] = out > 0 ? start + (out - 1) * w.strides[i] + 1 : start;
      whole &= start == 0 && limits[i + 1] == s[i + 1].size() && (w.strides[i] == 1 || out <= 1);
    }
    for (size_t i = n + 1; i < r; ++i)
      limits[i] = s[i].size();
    taps.push_back(whole ? xp : c.g.slice(xp, starts, limits, steps));
    for (size_t i = n; i-- > 0;) { // the next kernel index, row-major
      if (++k[i] < o.kernel[i]) break;
      k[i] = 0;
    }
  }
  NodeId cols = taps.size() == 1 ? taps[0] : c.g.concatenate(taps, static_cast<int64_t>(r) - 1);
  Dim rows = o.batch;
  for (int64_t d : w.out)
    rows = rows * Dim(d);
  int64_t depth = product(o.kernel) * perGroup;
  if (o.group == 1) return c.g.reshape(cols, {rows, Dim(depth)});
  std::vector<int64_t> perm{static_cast<int64_t>(n) + 1}; // [G, N, O..., taps*C/G]
  for (size_t i = 0; i <= n; ++i)
    perm.push_back(static_cast<int64_t>(i));
  perm.push_back(static_cast<int64_t>(n) + 2);
  return c.g.reshape(c.g.transpose(cols, perm), {Dim(o.group), rows, Dim(depth)});
}

/// W as the dot's right operand, rows in im2col's order (tap, then input channel of the
/// group): [taps*C, M] for one group, [G, taps*C/G, M/G] for several. Conv's W is
/// [M, C/G, k...] (output channel first), ConvTranspose's [C, M/G, k...] (input channel first).
NodeId weightMatrix(NodeContext& c, NodeId wt, const ConvOperands& o, bool transposed) {
  size_t n = o.kernel.size();
  int64_t inPerGroup = o.channels / o.group, outPerGroup = o.outChannels / o.group;
  int64_t depth = product(o.kernel) * inPerGroup;
  // [G, A, B, k...], A and B the two channel axes as W has them.
  Shape grouped{Dim(o.group)};
  grouped.push_back(Dim(transposed ? inPerGroup : outPerGroup));
  grouped.push_back(Dim(transposed ? outPerGroup : inPerGroup));
  for (int64_t k : o.kernel)
    grouped.push_back(Dim(k));
  std::vector<int64_t> perm{0}; // to [G, k..., C/G, M/G]
  for (size_t i = 0; i < n; ++i)
    perm.push_back(static_cast<int64_t>(i) + 3);
  perm.push_back(transposed ? 1 : 2);
  perm.push_back(transposed ? 2 : 1);
  NodeId m = c.g.transpose(c.g.reshape(wt, grouped), perm);
  if (o.group == 1) return c.g.reshape(m, {Dim(depth), Dim(outPerGroup)});
  return c.g.reshape(m, {Dim(o.group), Dim(depth), Dim(outPerGroup)});
}

/// The convolution of the padded channels-last input xp by W (`wt`) and the window `w` as one
/// dot, back in NCHW order [N, M, O...], plus the bias [M] when given; the last op is named
/// `name`.
NodeId convolve(NodeContext& c, NodeId xp, NodeId wt, const ConvOperands& o, const Window& w,
                bool transposed, std::optional<NodeId> bias, const std::string& name) {
  size_t n = o.kernel.size();
  NodeId y = c.g.dot(im2col(c, xp, o, w, transposed), weightMatrix(c, wt, o, transposed));
  Shape out{o.batch, Dim(o.outChannels)}; // [N, M, O...]
  for (int64_t d : w.out)
    out.push_back(Dim(d));
  std::string last = bias ? "" : name;
  std::vector<int64_t> perm;
  if (o.group == 1) { // [N*O, M] -> [N, O..., M] -> [N, M, O...]
    Shape s{o.batch};
    s.insert(s.end(), out.begin() + 2, out.end());
    s.push_back(Dim(o.outChannels));
    perm = {0, static_cast<int64_t>(n) + 1};
    for (size_t i = 0; i < n; ++i)
      perm.push_back(static_cast<int64_t>(i) + 1);
    y = c.g.transpose(c.g.reshape(y, s), perm, last);
  } else { // [G, N*O, M/G] -> [G, N, O..., M/G] -> [N, G, M/G, O...] -> [N, M, O...]
    Shape s{Dim(o.group), o.batch};
    s.insert(s.end(), out.begin() + 2, out.end());
    s.push_back(Dim(o.outChannels / o.group));
    perm = {1, 0, static_cast<int64_t>(n) + 2};
    for (size_t i = 0; i < n; ++i)
      perm.push_back(static_cast<int64_t>(i) + 2);
    y = c.g.transpose(c.g.reshape(y, s), perm);
    y = c.g.reshape(y, out, last);
  }
  if (bias) y = c.g.binary(ir::OpKind::Add, y, c.g.broadcastInDim(*bias, out, {1}), name);
  return y;
}

/// Conv's bias, input 2, when given: of X's dtype, one value per output channel.
std::optional<NodeId> floatBias(NodeContext& c, const ConvOperands& o) {
  if (!c.has(2)) return std::nullopt;
  ir::DType bt = c.type(2).dtype, xt = c.type(0).dtype;
  if (bt != xt)
    c.fail(fmt::format("B has dtype {} but X has dtype {}", ir::dtypeName(bt), ir::dtypeName(xt)));
  NodeId b = c.in(2);
  checkBiasShape(c, b, o);
  return b;
}

/// The convolution core shared by Conv and the integer convolutions: X as read by
/// readOperands, padded by Conv's window and multiplied in one dot.
NodeId convolveForward(NodeContext& c, const ConvOperands& o, NodeId w, std::optional<NodeId> bias,
                       const std::string& name) {
  Window win = convWindow(c, o);
  NodeId xp = padOrCrop(c, channelsLast(c, o.x, o.spatial.size()), win.padLow, win.padHigh);
  return convolve(c, xp, w, o, win, /*transposed=*/false, bias, name);
}

void lowerConv(NodeContext& c) {
  requireFloatOperands(c);
  ConvOperands o = readOperands(c, c.in(0), c.in(1), /*transposed=*/false);
  std::optional<NodeId> bias = floatBias(c, o);
  c.setOutput(0, convolveForward(c, o, c.in(1), bias, c.name()));
}

void lowerConvTranspose(NodeContext& c) {
  requireFloatOperands(c);
  ConvOperands o = readOperands(c, c.in(0), c.in(1), /*transposed=*/true);
  std::optional<NodeId> bias = floatBias(c, o);
  std::vector<int64_t> strides;
  Window w = transposedWindow(c, o, strides);
  // dilate() leaves stride - 1 zeros after the last element too: the end padding drops them.
  std::vector<int64_t> high = w.padHigh;
  for (size_t i = 0; i < high.size(); ++i)
    high[i] -= strides[i] - 1;
  NodeId xp = channelsLast(c, o.x, o.spatial.size());
  xp = padOrCrop(c, dilate(c, xp, strides), w.padLow, high);
  c.setOutput(0, convolve(c, xp, c.in(1), o, w, /*transposed=*/true, bias, c.name()));
}

} // namespace

NodeId convolution(NodeContext& c, NodeId x, NodeId w, ir::DType accumulate,
                   std::optional<NodeId> bias, const std::string& name) {
  x = c.convertTo(x, accumulate);
  w = c.convertTo(w, accumulate);
  ConvOperands o = readOperands(c, x, w, /*transposed=*/false);
  if (bias) {
    ir::DType bt = c.typeOf(*bias).dtype;
    if (bt != accumulate)
      c.fail(fmt::format("B has dtype {} but the convolution sums in {}", ir::dtypeName(bt),
                         ir::dtypeName(accumulate)));
    checkBiasShape(c, *bias, o);
  }
  return convolveForward(c, o, w, bias, name);
}

void addConvOps(OperatorTable& t) {
  t["Conv"] = lowerConv;
  t["ConvTranspose"] = lowerConvTranspose;
}

} // namespace weft::onnx
