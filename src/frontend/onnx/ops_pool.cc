// Pooling ONNX operators expanded into IR primitives: MaxPool (with its Indices output),
// AveragePool and LpPool over any number of spatial axes (ONNX's 1-D, 2-D and 3-D), with
// kernel_shape, strides, pads, auto_pad, ceil_mode, dilations, count_include_pad,
// storage_order and p.
//
// A window is a box, so pooling is separable: the input is padded once (with the identity of
// the combination: -inf or the lowest integer for max, 0 for sums) and then pooled one spatial
// axis at a time, the last axis first. Along an axis, output o's window reads the padded
// elements o * stride + j * dilation for the taps j < kernel: one strided slice per tap,
// combined with max or add. A kernel of k1 x k2 x k3 takes k1 + k2 + k3 slices, not their
// product. An average divides each sum by its window's count, the product of the counts along
// each axis, which are known at import time (the spatial sizes must be static).
#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

enum class PoolKind { Max, Average, Lp };

/// Kernels with more taps than this along one axis are not unrolled into slices.
constexpr int64_t kMaxTaps = 1024;

/// One spatial axis of a pooling, in input coordinates: output o's window reads the input
/// positions o * stride - padBegin + j * dilation for the taps j < kernel. Positions before 0
/// are padding, as are those from `size` up to size + padEnd; the last window of ceil_mode may
/// run further (`overrun`): those positions are ignored, not padding.
struct AxisWindow {
  int64_t size = 0, kernel = 1, stride = 1, dilation = 1, padBegin = 0, padEnd = 0, out = 0;

  /// The positions a window spans, first to last tap.
  int64_t extent() const { return (kernel - 1) * dilation + 1; }
  int64_t position(int64_t o, int64_t j) const { return o * stride - padBegin + j * dilation; }
  /// How far the last window runs past the end padding.
  int64_t overrun() const {
    return std::max<int64_t>(0, (out - 1) * stride + extent() - (size + padBegin + padEnd));
  }
  /// The taps of output o's window an average divides by: those on input elements, and with
  /// `includePad` those on the padding too; never the overrun's.
  int64_t count(int64_t o, bool includePad) const {
    int64_t lo = includePad ? -padBegin : 0, hi = includePad ? size + padEnd : size, n = 0;
    for (int64_t j = 0; j < kernel; ++j)
      n += position(o, j) >= lo && position(o, j) < hi;
    return n;
  }
};


/// The INTS attribute `name` with one value per spatial axis (`per` of them per axis), each at
/// least `least`; `dflt` for every axis when absent.
std::vector<int64_t> perAxisAttr(NodeContext& c, const std::string& name, size_t axes, size_t per,
                                 int64_t dflt, int64_t least) {
  std::optional<std::vector<int64_t>> given = c.attrInts(name);
  if (!given) return std::vector<int64_t>(axes * per, dflt);
  if (given->size() != axes * per)
    c.fail(fmt::format("{} {} has {} values; the input has {} spatial axes, so it needs {}", name,
                       listStr(*given), given->size(), axes, axes * per));
  for (int64_t v : *given)
    if (v < least)
      c.fail(fmt::format("{} {} has {}; each must be {} or more", name, listStr(*given), v, least));
  return *given;
}

/// Where ONNX's auto_pad puts the padding of an axis: SAME_UPPER and SAME_LOWER pad so that
/// the output has ceil(size / stride) elements, the odd one at the end (UPPER) or the
/// beginning (LOWER); VALID does not pad.
void autoPad(NodeContext& c, const std::string& mode, bool ceilMode, AxisWindow& w, size_t axis) {
  if (mode == "VALID") {
    if (ceilMode)
      c.unsupported("ceil_mode with auto_pad VALID is not supported (ONNX's reference refuses "
                    "the combination)");
    if (w.size < w.extent())
      c.fail(fmt::format("axis {} has size {}, smaller than the kernel's extent {} "
                         "(auto_pad VALID does not pad)",
                         axis, w.size, w.extent()));
    w.out = (w.size - w.extent()) / w.stride + 1;
    return;
  }
  w.out = (w.size + w.stride - 1) / w.stride;
  int64_t total = std::max<int64_t>(0, (w.out - 1) * w.stride + w.extent() - w.size);
  w.padBegin = mode == "SAME_LOWER" ? total - total / 2 : total / 2;
  w.padEnd = total - w.padBegin;
}

/// The output size of an axis with explicit pads: floor((padded - extent) / stride) + 1, or
/// with ceil_mode the ceiling, less a last window that would start in the end padding (ONNX's
/// reference drops it, as PyTorch does).
void explicitOutput(NodeContext& c, bool ceilMode, AxisWindow& w, size_t axis) {
  int64_t padded = w.size + w.padBegin + w.padEnd;
  if (padded < w.extent())
    c.fail(fmt::format("axis {} has size {} (padded {}), smaller than the kernel's extent {}", axis,
                       w.size, padded, w.extent()));
  int64_t span = padded - w.extent();
  w.out = (ceilMode ? (span + w.stride - 1) / w.stride : span / w.stride) + 1;
  if (ceilMode && (w.out - 1) * w.stride >= w.size + w.padBegin) --w.out;
}

/// The window of each spatial axis of input `s` (N, C, D1, ..., Dn) from the node's
/// attributes. Attributes the node's opset does not define were refused by its signature, so
/// they read as absent here.
std::vector<AxisWindow> poolWindows(NodeContext& c, const Shape& s) {
  if (s.size() < 3)
    c.fail(fmt::format("input {} needs rank 3 or more (N, C, D1, ...)", ir::shapeStr(s)));
  size_t n = s.size() - 2;
  for (size_t i = 2; i < s.size(); ++i) {
    if (!s[i].isStatic())
      c.unsupported(fmt::format("spatial axis {} of input {} has symbolic size {}; pooling needs "
                                "static spatial sizes",
                                i, ir::shapeStr(s), s[i].str()));
    if (s[i].size() == 0)
      c.unsupported(fmt::format("spatial axis {} of input {} has size 0", i, ir::shapeStr(s)));
  }
  std::vector<int64_t> kernel = c.requireAttrInts("kernel_shape");
  if (kernel.size() != n)
    c.fail(fmt::format("kernel_shape {} has {} values but the input {} has {} spatial axes",
                       listStr(kernel), kernel.size(), ir::shapeStr(s), n));
  for (int64_t k : kernel)
    if (k < 1)
      c.fail(fmt::format("kernel_shape {} has {}; each must be 1 or more", listStr(kernel), k));
  std::vector<int64_t> strides = perAxisAttr(c, "strides", n, 1, 1, 1);
  std::vector<int64_t> dilations = perAxisAttr(c, "dilations", n, 1, 1, 1);
  std::vector<int64_t> pads = perAxisAttr(c, "pads", n, 2, 0, 0);
  std::string mode = c.attrString("auto_pad", "NOTSET");
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
    c.fail(fmt::format("auto_pad \"{}\" is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", mode));
  if (mode != "NOTSET" && std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    c.fail(fmt::format("pads {} cannot be given with auto_pad {}", listStr(pads), mode));
  bool ceilMode = c.attrInt("ceil_mode", 0) != 0;
  std::vector<AxisWindow> windows(n);
  for (size_t i = 0; i < n; ++i) {
    AxisWindow& w = windows[i];
    w.size = s[i + 2].size();
    w.kernel = kernel[i];
    w.stride = strides[i];
    w.dilation = dilations[i];
    if (w.kernel > kMaxTaps)
      c.unsupported(
          fmt::format("kernel_shape {} has {} taps along axis {}; weft unrolls at most {}",
                      listStr(kernel), w.kernel, i + 2, kMaxTaps));
    if (mode == "NOTSET") {
      w.padBegin = pads[i];
      w.padEnd = pads[i + n];
      explicitOutput(c, ceilMode, w, i + 2);
    } else {
      autoPad(c, mode, ceilMode, w, i + 2);
    }
  }
  return windows;
}

/// Fails unless X's dtype is one the operator takes: floats, and for MaxPool from opset 12
/// int8 and uint8 (held in i32; an i32 whose ONNX type the importer lost is taken as one).
void requirePoolDType(NodeContext& c, PoolKind kind) {
  ir::DType t = c.type(0).dtype;
  if (ir::isFloat(t)) return;
  bool maxInts = kind == PoolKind::Max && c.opset >= 12;
  int onnx = c.onnxType(0);
  if (maxInts && (t == ir::DType::i8 ||
                  (t == ir::DType::i32 && (onnx == 0 || onnx == ::onnx::TensorProto::UINT8))))
    return;
  std::string type = onnx != 0 ? onnxTypeName(onnx) : std::string(ir::dtypeName(t));
  c.fail(fmt::format("X has element type {}; {} takes float, double and float16 tensors{}", type,
                     c.node.op_type(),
                     kind != PoolKind::Max ? ""
                     : maxInts             ? ", int8 and uint8"
                                           : " (int8 and uint8 from opset 12)"));
}

/// The value padding takes: one that never changes a window's result.
double padValue(PoolKind kind, ir::DType t) {
  return kind == PoolKind::Max ? lowestValue(t) : 0;
}

/// x padded on its spatial axes as the windows say (the overrun too), with `value`.
NodeId padSpatial(NodeContext& c, NodeId x, const std::vector<AxisWindow>& windows, double value) {
  size_t rank = windows.size() + 2;
  std::vector<int64_t> low(rank, 0), high(rank, 0);
  for (size_t i = 0; i < windows.size(); ++i) {
    low[i + 2] = windows[i].padBegin;
    high[i + 2] = windows[i].padEnd + windows[i].overrun();
  }
  if (std::all_of(low.begin(), low.end(), [](int64_t v) { return v == 0; }) &&
      std::all_of(high.begin(), high.end(), [](int64_t v) { return v == 0; }))
    return x;
  return c.g.pad(x, low, high, value);
}

/// Tap j of every window along `axis` of the padded x: the elements j * dilation + o * stride
/// for o < out. x itself when that is all of it.
NodeId tap(NodeContext& c, NodeId x, size_t axis, const AxisWindow& w, int64_t j,
           const std::string& name = "") {
  size_t rank = c.typeOf(x).shape.size();
  std::vector<int64_t> starts(rank, 0), limits(rank, -1), strides(rank, 1);
  starts[axis] = j * w.dilation;
  limits[axis] = starts[axis] + (w.out - 1) * w.stride + 1;
  strides[axis] = w.stride;
  if (starts[axis] == 0 && w.stride == 1 && c.typeOf(x).shape[axis] == Dim(limits[axis])) return x;
  return c.g.slice(x, starts, limits, strides, name);
}

/// The windows along `axis` of the padded x combined with `op` (max or add), each output's
/// taps in order; the last op is named `name`.
NodeId poolAxis(NodeContext& c, NodeId x, size_t axis, const AxisWindow& w, OpKind op,
                const std::string& name) {
  NodeId y = tap(c, x, axis, w, 0, w.kernel == 1 ? name : "");
  for (int64_t j = 1; j < w.kernel; ++j)
    y = c.g.binary(op, y, tap(c, x, axis, w, j), j + 1 == w.kernel ? name : "");
  return y;
}

/// The padded x pooled over every spatial axis, the last first; the last op is named `name`.
NodeId pool(NodeContext& c, NodeId x, const std::vector<AxisWindow>& windows, OpKind op,
            const std::string& name) {
  for (size_t i = windows.size(); i-- > 0;)
    x = poolAxis(c, x, i + 2, windows[i], op, i == 0 ? name : "");
  return x;
}

/// A value and where in the input it came from (MaxPool's Y and Indices).
struct Argmax {
  NodeId value = -1, index = -1;
};

/// MaxPool along `axis` keeping the index of each window's maximum: the first tap whose value
/// is greater than every earlier one's, as ONNX's reference scans (NaN never is). With
/// `last`, the value and the index are named for outputs 0 and 1.
Argmax poolAxisWithIndex(NodeContext& c, Argmax x, size_t axis, const AxisWindow& w, bool last) {
  auto named = [&](size_t out, int64_t j) { return last && j + 1 == w.kernel ? c.name(out) : ""; };
  Argmax y{tap(c, x.value, axis, w, 0, named(0, 0)), tap(c, x.index, axis, w, 0, named(1, 0))};
  for (int64_t j = 1; j < w.kernel; ++j) {
    NodeId v = tap(c, x.value, axis, w, j);
    NodeId greater = c.g.compare(ir::CompareDir::GT, v, y.value);
    y.value = c.g.select(greater, v, y.value, named(0, j));
    y.index = c.g.select(greater, tap(c, x.index, axis, w, j), y.index, named(1, j));
  }
  return y;
}

/// The flat index of each element of an input of shape `s` (N, C, D1, ..., Dn), as MaxPool's
/// Indices count: (n * C + c) * D1 * ... * Dn plus the spatial offset, row-major
/// (storage_order 0) or column-major (1: D1 varies fastest). Symbolic N and C work: their
/// part is an iota over N * C.
NodeId flatIndex(NodeContext& c, const Shape& s, bool columnMajor) {
  size_t n = s.size() - 2;
  Shape rows{s[0] * s[1]};
  int64_t spatial = 1;
  for (size_t i = 2; i < s.size(); ++i) {
    rows.push_back(s[i]);
    spatial *= s[i].size();
  }
  NodeId index = c.g.iota(ir::DType::i64, rows, 0);
  index = c.g.binary(OpKind::Mul, index, c.splatLike(index, static_cast<double>(spatial)));
  int64_t step = 1;
  for (size_t k = 0; k < n; ++k) {
    size_t i = columnMajor ? k : n - 1 - k; // from the fastest-varying axis
    NodeId along = c.g.iota(ir::DType::i64, rows, static_cast<int64_t>(i + 1));
    if (step != 1)
      along = c.g.binary(OpKind::Mul, along, c.splatLike(along, static_cast<double>(step)));
    index = c.g.binary(OpKind::Add, index, along);
    step *= s[i + 2].size();
  }
  return c.g.reshape(index, s);
}

/// MaxPool: the max of each window, ignoring padding. An output whose window holds only
/// padding (pads as large as the kernel) is -inf (the lowest integer), its index -1. Indices
/// (opset 8) is the flat index of the maximum in X (flatIndex).
void lowerMaxPool(NodeContext& c) {
  if (c.opset < 8 && c.numOutputs() > 1)
    c.fail("MaxPool-1 has one output (Y); Indices is an output from opset 8");
  if (c.numOutputs() > 2)
    c.fail(fmt::format("has {} outputs; MaxPool has two (Y, Indices)", c.numOutputs()));
  requirePoolDType(c, PoolKind::Max);
  NodeId x = c.in(0);
  const ir::TensorType t = c.typeOf(x);
  std::vector<AxisWindow> windows = poolWindows(c, t.shape);
  double lowest = padValue(PoolKind::Max, t.dtype);
  if (!c.wantsOutput(1)) {
    c.setOutput(0, pool(c, padSpatial(c, x, windows, lowest), windows, OpKind::Max, c.name()));
  } else {
    int64_t order = c.attrInt("storage_order", 0);
    if (order != 0 && order != 1)
      c.fail(fmt::format("storage_order {} is not 0 (row major) or 1 (column major)", order));
    Argmax a{padSpatial(c, x, windows, lowest),
             padSpatial(c, flatIndex(c, t.shape, order == 1), windows, -1)};
    for (size_t i = windows.size(); i-- > 0;)
      a = poolAxisWithIndex(c, a, i + 2, windows[i], i == 0);
    c.setOutput(0, a.value);
    c.setOutput(1, a.index);
  }
  if (!ir::isFloat(t.dtype) && c.onnxType(0) != 0) c.setOutputOnnxType(0, c.onnxType(0));
}

/// The per-window counts an average divides by, broadcast to `shape` (N, C, out...): the
/// product over the axes of each axis's count. An axis whose windows all count alike adds a
/// factor to one scalar; the others a constant of their counts, broadcast along the axis.
NodeId windowCounts(NodeContext& c, const std::vector<AxisWindow>& windows, bool includePad,
                    const Shape& shape, ir::DType t) {
  double uniform = 1;
  std::optional<NodeId> counts;
  for (size_t i = 0; i < windows.size(); ++i) {
    const AxisWindow& w = windows[i];
    std::vector<double> along;
    for (int64_t o = 0; o < w.out; ++o)
      along.push_back(static_cast<double>(w.count(o, includePad)));
    if (std::all_of(along.begin(), along.end(), [&](double v) { return v == along[0]; })) {
      uniform *= along[0];
      continue;
    }
    NodeId axis =
        c.g.broadcastInDim(c.g.constant(t, {w.out}, along), shape, {static_cast<int64_t>(i + 2)});
    counts = counts ? c.g.binary(OpKind::Mul, *counts, axis) : axis;
  }
  if (!counts) return c.splat(t, shape, uniform);
  if (uniform != 1) counts = c.g.binary(OpKind::Mul, *counts, c.splat(t, shape, uniform));
  return *counts;
}

/// AveragePool: each window's sum over its count, in f32 for f16 and bf16 inputs. Without
/// count_include_pad (opset 7; the default) padding is not counted; with it, it is. The
/// overrun of ceil_mode's last window never is. A window with nothing to count (only padding)
/// is 0 / 0.
void lowerAveragePool(NodeContext& c) {
  if (c.numOutputs() > 1)
    c.fail(fmt::format("has {} outputs; AveragePool has one (Y)", c.numOutputs()));
  requirePoolDType(c, PoolKind::Average);
  NodeId x0 = c.in(0);
  const ir::TensorType t = c.typeOf(x0);
  std::vector<AxisWindow> windows = poolWindows(c, t.shape);
  bool includePad = c.attrInt("count_include_pad", 0) != 0;
  NodeId x = c.convertTo(x0, computeDType(t.dtype));
  bool converted = x != x0;
  NodeId sum = pool(c, padSpatial(c, x, windows, 0), windows, OpKind::Add, "");
  ir::TensorType st = c.typeOf(sum);
  NodeId y = c.g.binary(OpKind::Div, sum, windowCounts(c, windows, includePad, st.shape, st.dtype),
                        converted ? "" : c.name());
  if (converted) y = c.g.convert(y, t.dtype, c.name());
  c.setOutput(0, y);
}

/// LpPool: the p-norm of each window, (sum |x|^p)^(1/p), padding adding nothing; in f32 for
/// f16 and bf16 inputs. p is a float attribute in opset 1, an integer from opset 2 (default 2).
void lowerLpPool(NodeContext& c) {
  if (c.numOutputs() > 1) c.fail(fmt::format("has {} outputs; LpPool has one (Y)", c.numOutputs()));
  requirePoolDType(c, PoolKind::Lp);
  double p = c.opset < 2 ? c.attrFloat("p", 2.0f) : static_cast<double>(c.attrInt("p", 2));
  if (!(p > 0)) c.fail(fmt::format("p {} must be positive", p));
  NodeId x0 = c.in(0);
  const ir::TensorType t = c.typeOf(x0);
  std::vector<AxisWindow> windows = poolWindows(c, t.shape);
  NodeId x = c.convertTo(x0, computeDType(t.dtype));
  bool converted = x != x0;
  NodeId powered = p == 2 ? c.g.binary(OpKind::Mul, x, x) : c.g.unary(OpKind::Abs, x);
  if (p != 1 && p != 2) powered = c.g.binary(OpKind::Pow, powered, c.splatLike(powered, p));
  std::string name = converted ? "" : c.name();
  NodeId sum =
      pool(c, padSpatial(c, powered, windows, 0), windows, OpKind::Add, p == 1 ? name : "");
  NodeId y = p == 1   ? sum
             : p == 2 ? c.g.unary(OpKind::Sqrt, sum, name)
                      : c.g.binary(OpKind::Pow, sum, c.splatLike(sum, 1.0 / p), name);
  if (converted) y = c.g.convert(y, t.dtype, c.name());
  c.setOutput(0, y);
}

} // namespace

void addPoolOps(OperatorTable& t) {
  t["MaxPool"] = lowerMaxPool;
  t["AveragePool"] = lowerAveragePool;
  t["LpPool"] = lowerLpPool;
}

} // namespace weft::onnx
