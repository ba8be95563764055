// Resize (opsets 10, 11, 13, 18, 19) and its predecessor Upsample (opsets 1, 7, 9) expanded into
// IR primitives: modes nearest, linear and cubic, every coordinate_transformation_mode and
// nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes and
// keep_aspect_ratio_policy. Scales, sizes and (for tf_crop_and_resize) roi must be known at
// import time, and the resized axes must be static.
//
// Resizing is separable: along each resized axis, output o is a weighted sum of a window of
// consecutive input elements, and the window and its weights depend on o alone. They are
// computed here at import time as ONNX's reference does (onnx/reference/ops/op_resize.py): the
// source coordinate x of o, the K positions nearest x (2 for nearest and linear, 4 for cubic,
// more with antialias), positions past either end reading the edge element (or, with
// exclude_outside, weighing 0), and the kernel's weights. Each axis is then lowered one of two
// ways:
//  - phases: output p + P*i (phase p of a period P) mostly reads positions start(p) + k + Q*i,
//    the windows advancing Q inputs every P outputs (2x up: P = 2, Q = 1; 1/2 down: P = 1,
//    Q = 2; align_corners and other irregular ratios too, in a few segments where the advance
//    breaks). Each tap k of each segment of each phase is then one strided slice of the
//    edge-padded input; they are weighted, summed, and the phases interleaved by a
//    concatenate and a reshape, or, when the phases are all the same (integer-factor nearest
//    upsampling), by a broadcast and a reshape. The period needing the fewest slices is
//    chosen; the work is proportional to the outputs times the taps.
//  - gather, when every period needs too many slices: per tap t, each output's t-th element
//    is read by the IR's gather (the positions a constant index), then weighted and summed.
//    Exact for inf and NaN, unlike a dot with a one-hot matrix (0 * inf = NaN); the work is
//    proportional to the outputs times the taps. Windows of more than 4 taps (antialiased
//    downscaling) are instead summed over the whole input axis against a constant [outputs,
//    input length] weight matrix, the terms of zero weights selected away.
// A tap whose weight is 0 is never multiplied (0 * inf would be NaN): it is left out or
// selected away. Axes that shrink are resized first, so the later ones work on less data.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
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

/// Outputs of one resized axis at most (each has its own window, computed at import time).
constexpr int64_t kMaxAxisOutputs = int64_t(1) << 24;
/// Periods the phase lowering tries, and the strided slices it may use along one axis; an
/// axis whose best period needs more slices is gathered.
constexpr int64_t kMaxPeriod = 32;
constexpr int64_t kMaxPhaseSlices = 128;
/// Taps per output up to which an axis that is not lowered by phases is gathered tap by tap;
/// wider windows are summed against a dense weight matrix, of at most kMaxDenseWeights.
constexpr size_t kMaxGathers = 4;
constexpr int64_t kMaxDenseWeights = int64_t(1) << 24;

enum class Mode { Nearest, Linear, Cubic };
enum class Coordinates {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfCropAndResize,
  TfHalfPixelForNN,
};
/// nearest_mode, and Legacy for Upsample and Resize-10, which have none: the element at or
/// before x when upsampling, at or after it when downsampling (as ONNX Runtime and ONNX's
/// Resize-10 tests read them).
enum class Rounding { PreferFloor, PreferCeil, Floor, Ceil, Legacy };

/// What the node's attributes ask for.
struct Interpolation {
  Mode mode = Mode::Nearest;
  Coordinates coordinates = Coordinates::HalfPixel;
  Rounding rounding = Rounding::PreferFloor;
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double extrapolation = 0;
};

/// One axis of the input and what becomes of it.
struct AxisTarget {
  Dim in, out;
  bool listed = false; // named by scales or sizes (every axis unless `axes` says otherwise)
  double scale = 1;    // output over input length, as the coordinate formulas use it
  double width = 1;    // the output length before flooring: fractional when from scales
  double roiStart = 0, roiEnd = 1;
};

template <class T> std::string listStr(const std::vector<T>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

/// Upsample and Resize-10 map output o to o / scale and have no coordinate or nearest mode.
bool legacy(const NodeContext& c) {
  return c.node.op_type() == "Upsample" || c.opset < 11;
}

/// An INT attribute that must be 0 or 1.
bool flagAttr(NodeContext& c, const std::string& name) {
  int64_t v = c.attrInt(name, 0);
  if (v != 0 && v != 1) c.fail(fmt::format("{} {} is not 0 or 1", name, v));
  return v == 1;
}

Mode readMode(NodeContext& c) {
  std::string m = c.attrString("mode", "nearest");
  bool upsample1 = c.node.op_type() == "Upsample" && c.opset < 7;
  if (m == "nearest") return Mode::Nearest;
  if (m == (upsample1 ? "bilinear" : "linear")) return Mode::Linear;
  if (m == "cubic" && !legacy(c)) return Mode::Cubic;
  c.fail(fmt::format("mode \"{}\" is not {}", m,
                     upsample1   ? "nearest or bilinear"
                     : legacy(c) ? "nearest or linear (cubic is a mode from Resize-11)"
                                 : "nearest, linear or cubic"));
}

Coordinates readCoordinates(NodeContext& c) {
  static const std::map<std::string, Coordinates> names = {
      {"half_pixel", Coordinates::HalfPixel},
      {"half_pixel_symmetric", Coordinates::HalfPixelSymmetric},
      {"pytorch_half_pixel", Coordinates::PytorchHalfPixel},
      {"align_corners", Coordinates::AlignCorners},
      {"asymmetric", Coordinates::Asymmetric},
      {"tf_crop_and_resize", Coordinates::TfCropAndResize},
      {"tf_half_pixel_for_nn", Coordinates::TfHalfPixelForNN}};
  std::string m = c.attrString("coordinate_transformation_mode", "half_pixel");
  auto it = names.find(m);
  if (it == names.end())
    c.fail(fmt::format("coordinate_transformation_mode \"{}\" is not half_pixel, "
                       "half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, "
                       "tf_crop_and_resize or tf_half_pixel_for_nn",
                       m));
  if (it->second == Coordinates::TfHalfPixelForNN && c.opset >= 13)
    c.fail("coordinate_transformation_mode \"tf_half_pixel_for_nn\" is a mode of Resize-11 only "
           "(removed at opset 13)");
  if (it->second == Coordinates::HalfPixelSymmetric && c.opset < 19)
    c.fail("coordinate_transformation_mode \"half_pixel_symmetric\" is a mode from opset 19");
  return it->second;
}

Rounding readRounding(NodeContext& c) {
  std::string m = c.attrString("nearest_mode", "round_prefer_floor");
  if (m == "round_prefer_floor") return Rounding::PreferFloor;
  if (m == "round_prefer_ceil") return Rounding::PreferCeil;
  if (m == "floor") return Rounding::Floor;
  if (m == "ceil") return Rounding::Ceil;
  c.fail(fmt::format(
      "nearest_mode \"{}\" is not round_prefer_floor, round_prefer_ceil, floor or ceil", m));
}

/// The node's attributes. Those its opset does not define were refused by its signature, so
/// they read as their defaults here.
Interpolation readInterpolation(NodeContext& c) {
  Interpolation ip;
  ip.mode = readMode(c);
  if (legacy(c)) {
    ip.coordinates = Coordinates::Asymmetric;
    ip.rounding = Rounding::Legacy;
    return ip;
  }
  ip.coordinates = readCoordinates(c);
  ip.rounding = readRounding(c);
  ip.cubicA = c.attrFloat("cubic_coeff_a", -0.75f);
  ip.excludeOutside = flagAttr(c, "exclude_outside");
  ip.antialias = flagAttr(c, "antialias");
  ip.extrapolation = c.attrFloat("extrapolation_value", 0.0f);
  return ip;
}

// ---------------------------------------------------------------- output sizes

/// The axes scales, sizes and roi name: `axes` (opset 18), normalized and unique, else all.
std::vector<size_t> listedAxes(NodeContext& c, size_t rank) {
  std::vector<size_t> axes;
  std::optional<std::vector<int64_t>> given = c.attrInts("axes");
  if (!given) {
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(i);
    return axes;
  }
  for (int64_t a : *given) {
    auto axis = static_cast<size_t>(c.axis(a, rank, "axes"));
    if (std::find(axes.begin(), axes.end(), axis) != axes.end())
      c.fail(fmt::format("axes {} names axis {} twice", listStr(*given), axis));
    axes.push_back(axis);
  }
  return axes;
}

/// Input i is given and not an empty tensor (Resize-11 takes an empty scales or roi for an
/// absent one).
bool given(NodeContext& c, size_t i) {
  if (!c.has(i)) return false;
  Dim n = ir::numElements(c.type(i).shape);
  return !(n.isStatic() && n.size() == 0);
}

/// Float input i's values, which must be known at import time.
std::vector<double> floatValues(NodeContext& c, size_t i, const std::string& what) {
  const Literal& lit = c.requireLiteral(i, what);
  if (lit.integral())
    c.fail(fmt::format("input {} ({}) must be a float tensor, not {}", i, what,
                       ir::dtypeName(lit.dtype)));
  return lit.reals;
}

/// The scales the node gives, one per listed axis: Upsample-1's height_scale and width_scale,
/// Upsample-7's scales attribute, or the scales input.
std::optional<std::vector<double>> readScales(NodeContext& c, size_t rank) {
  const bool upsample = c.node.op_type() == "Upsample";
  if (upsample && c.opset < 7) {
    if (rank != 4)
      c.fail(fmt::format("Upsample-1 takes a 4-D input (N, C, H, W), not rank {}", rank));
    for (const char* a : {"height_scale", "width_scale"})
      if (!c.hasAttr(a)) c.fail(fmt::format("attribute {} is required", a));
    return std::vector<double>{1, 1, c.attrFloat("height_scale", 1), c.attrFloat("width_scale", 1)};
  }
  if (upsample && c.opset < 9) {
    std::optional<std::vector<float>> s = c.attrFloats("scales");
    if (!s) c.fail("attribute scales is required");
    return std::vector<double>(s->begin(), s->end());
  }
  size_t at = legacy(c) ? 1 : 2;
  if (legacy(c) ? !c.has(at) : !given(c, at)) {
    if (legacy(c)) c.fail(fmt::format("input {} (scales) is required but missing", at));
    return std::nullopt;
  }
  return floatValues(c, at, "scales");
}

/// Each listed axis's output length from its scale: floor(length * scale), in float as ONNX's
/// shape inference and ONNX Runtime compute it (so that 10 * 0.7f gives 7, not 6).
void applyScales(NodeContext& c, const std::vector<double>& scales, const std::vector<size_t>& axes,
                 std::vector<AxisTarget>& t) {
  const bool upsample = c.node.op_type() == "Upsample";
  if (scales.size() != axes.size())
    c.fail(fmt::format("scales {} has {} values; it needs one per resized axis ({})",
                       listStr(scales), scales.size(), axes.size()));
  for (size_t i = 0; i < axes.size(); ++i) {
    double s = scales[i];
    if (!(std::isfinite(s) && (upsample ? s >= 1 : s > 0)))
      c.fail(fmt::format("scales {} has {}; each must be {}", listStr(scales), s,
                         upsample ? "1 or more (Upsample only enlarges)" : "positive"));
    AxisTarget& a = t[axes[i]];
    if (!a.in.isStatic()) {
      if (s != 1)
        c.unsupported(fmt::format("axis {} has symbolic size {} and scale {}: only static axes "
                                  "can be resized",
                                  axes[i], a.in.str(), s));
      continue;
    }
    double width = static_cast<double>(static_cast<float>(a.in.size()) * static_cast<float>(s));
    if (width > static_cast<double>(kMaxAxisOutputs))
      c.unsupported(fmt::format("axis {} would have {} elements; weft resizes an axis to at most "
                                "{}",
                                axes[i], width, kMaxAxisOutputs));
    a.out = static_cast<int64_t>(std::floor(width));
    a.scale = s;
    a.width = s * static_cast<double>(a.in.size());
  }
}

/// Each listed axis's output length from sizes: as given (keep_aspect_ratio_policy stretch),
/// or one scale for all the listed axes, the smallest (not_larger) or largest (not_smaller) of
/// size / length, each length times it rounded half up.
void applySizes(NodeContext& c, const std::vector<int64_t>& sizes, const std::string& policy,
                const std::vector<size_t>& axes, std::vector<AxisTarget>& t) {
  if (sizes.size() != axes.size())
    c.fail(fmt::format("sizes {} has {} values; it needs one per resized axis ({})", listStr(sizes),
                       sizes.size(), axes.size()));
  std::optional<double> common;
  for (size_t i = 0; i < axes.size(); ++i) {
    const AxisTarget& a = t[axes[i]];
    if (sizes[i] < 0)
      c.fail(fmt::format("sizes {} has {}; sizes cannot be negative", listStr(sizes), sizes[i]));
    if (sizes[i] > kMaxAxisOutputs)
      c.unsupported(fmt::format("sizes {} has {}; weft resizes an axis to at most {}",
                                listStr(sizes), sizes[i], kMaxAxisOutputs));
    if (!a.in.isStatic())
      c.unsupported(fmt::format("axis {} has symbolic size {}: only static axes can be resized "
                                "to sizes",
                                axes[i], a.in.str()));
    if (a.in.size() == 0 && (sizes[i] != 0 || policy != "stretch"))
      c.fail(fmt::format("axis {} is empty: it cannot be resized to {}{}", axes[i], sizes[i],
                         policy != "stretch" ? " keeping its aspect ratio" : ""));
    if (policy == "stretch") continue;
    double s = static_cast<double>(sizes[i]) / static_cast<double>(a.in.size());
    common = !common ? s : policy == "not_larger" ? std::min(*common, s) : std::max(*common, s);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    AxisTarget& a = t[axes[i]];
    auto n = static_cast<double>(a.in.size());
    if (!common) {
      a.out = sizes[i];
      a.scale = n == 0 ? 1 : static_cast<double>(sizes[i]) / n;
      a.width = static_cast<double>(sizes[i]);
      continue;
    }
    double width = *common * n;
    if (width + 0.5 > static_cast<double>(kMaxAxisOutputs))
      c.unsupported(fmt::format("axis {} would have {} elements; weft resizes an axis to at most "
                                "{}",
                                axes[i], width, kMaxAxisOutputs));
    a.out = static_cast<int64_t>(std::floor(width + 0.5));
    a.scale = *common;
    a.width = width;
  }
}

/// tf_crop_and_resize's roi: [start1, ..., startN, end1, ..., endN] over the listed axes, in
/// normalized coordinates. An axis whose size is symbolic may only keep all of itself.
void applyRoi(NodeContext& c, const std::vector<size_t>& axes, std::vector<AxisTarget>& t) {
  if (!given(c, 1)) c.fail("coordinate_transformation_mode tf_crop_and_resize needs roi (input 1)");
  std::vector<double> roi = floatValues(c, 1, "roi");
  if (roi.size() != 2 * axes.size())
    c.fail(fmt::format("roi {} has {} values; it needs a start and an end per resized axis ({})",
                       listStr(roi), roi.size(), 2 * axes.size()));
  for (size_t i = 0; i < axes.size(); ++i) {
    AxisTarget& a = t[axes[i]];
    a.roiStart = roi[i];
    a.roiEnd = roi[i + axes.size()];
    if (!a.in.isStatic() && (a.roiStart != 0 || a.roiEnd != 1))
      c.unsupported(fmt::format("axis {} has symbolic size {} and roi [{}, {}]: only static axes "
                                "can be cropped",
                                axes[i], a.in.str(), a.roiStart, a.roiEnd));
  }
}

/// Every axis of an input of shape `s`: its output length, scale and roi.
std::vector<AxisTarget> readTargets(NodeContext& c, const Interpolation& ip, const Shape& s) {
  std::vector<AxisTarget> t(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    t[i].in = t[i].out = s[i];
  std::vector<size_t> axes = listedAxes(c, s.size());
  for (size_t a : axes)
    t[a].listed = true;
  std::string policy = c.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    c.fail(fmt::format("keep_aspect_ratio_policy \"{}\" is not stretch, not_larger or not_smaller",
                       policy));
  std::optional<std::vector<double>> scales = readScales(c, s.size());
  bool sized = !legacy(c) && given(c, 3);
  if (scales && sized) c.fail("takes scales (input 2) or sizes (input 3), not both");
  if (scales) // keep_aspect_ratio_policy applies to sizes only
    applyScales(c, *scales, axes, t);
  else if (sized)
    applySizes(c, c.constInts(3, "sizes"), policy, axes, t);
  else
    c.fail("needs scales (input 2) or sizes (input 3)");
  if (ip.coordinates == Coordinates::TfCropAndResize) applyRoi(c, axes, t);
  return t;
}

// ---------------------------------------------------------------- windows and weights

/// The input coordinate output o of the axis maps to. `width` stands for length_resized,
/// which ONNX defines as scale * length_original (so fractional when from scales); for
/// pytorch_half_pixel a width of 1 maps to 0 as the spec says (ONNX's reference uses -0.5).
double sourceCoordinate(const Interpolation& ip, const AxisTarget& t, int64_t o) {
  auto n = static_cast<double>(t.in.size());
  auto x = static_cast<double>(o);
  switch (ip.coordinates) {
  case Coordinates::HalfPixel:
    return (x + 0.5) / t.scale - 0.5;
  case Coordinates::HalfPixelSymmetric: {
    double adjustment = static_cast<double>(t.out.size()) / t.width;
    double offset = n / 2 * (1 - adjustment);
    return offset + (x + 0.5) / t.scale - 0.5;
  }
  case Coordinates::PytorchHalfPixel:
    return t.width > 1 ? (x + 0.5) / t.scale - 0.5 : 0;
  case Coordinates::AlignCorners:
    return t.width == 1 ? 0 : x * (n - 1) / (t.width - 1);
  case Coordinates::Asymmetric:
    return x / t.scale;
  case Coordinates::TfCropAndResize: {
    double span = t.roiEnd - t.roiStart;
    double along = t.width == 1 ? span * (n - 1) / 2 : x * span * (n - 1) / (t.width - 1);
    return along + t.roiStart * (n - 1);
  }
  case Coordinates::TfHalfPixelForNN:
    return (x + 0.5) / t.scale;
  }
  return 0;
}

/// The cubic convolution kernel with coefficient a (Keys 1981): W(d) for |d| < 2, else 0.
double cubicKernel(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

/// Antialiasing stretches the kernel (support `radius`) by 1 / scale when downscaling: taps
/// at start + k - ratio for k < 2 - 2 * start, each weighing kernel(scale * distance),
/// normalized to sum to 1.
template <class Kernel>
std::vector<double> stretchedWeights(double ratio, double scale, double radius, Kernel kernel) {
  scale = std::min(scale, 1.0);
  auto start = static_cast<int64_t>(std::floor(-radius / scale) + 1);
  std::vector<double> w;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    w.push_back(kernel(scale * (static_cast<double>(i) - ratio)));
    sum += w.back();
  }
  for (double& v : w)
    v /= sum;
  return w;
}

/// The weights of the window around x, `ratio` being x's distance past the position before
/// it, in (0, 1] (1 when x is an integer: the window then ends at x rather than starting
/// there, as ONNX's reference places it).
std::vector<double> kernelWeights(const Interpolation& ip, double ratio, double scale) {
  switch (ip.mode) {
  case Mode::Nearest: {
    Rounding r = ip.rounding;
    if (r == Rounding::Legacy) r = scale < 1 ? Rounding::Ceil : Rounding::Floor;
    bool before = ratio != 1 && (r == Rounding::PreferFloor  ? ratio <= 0.5
                                 : r == Rounding::PreferCeil ? ratio < 0.5
                                                             : r == Rounding::Floor);
    return before ? std::vector<double>{1, 0} : std::vector<double>{0, 1};
  }
  case Mode::Linear:
    if (ip.antialias)
      return stretchedWeights(ratio, scale, 1,
                              [](double d) { return std::max(0.0, 1 - std::abs(d)); });
    return {1 - ratio, ratio};
  case Mode::Cubic: {
    double a = ip.cubicA;
    if (ip.antialias)
      return stretchedWeights(ratio, scale, 2, [a](double d) { return cubicKernel(d, a); });
    return {cubicKernel(ratio + 1, a), cubicKernel(ratio, a), cubicKernel(1 - ratio, a),
            cubicKernel(2 - ratio, a)};
  }
  }
  return {};
}

/// The inputs one output reads: weights[k] applies to position start + k. Positions before 0
/// or past the end read the edge element, or, with exclude_outside, 0 (their weight is 0).
struct Window {
  int64_t start = 0;
  std::vector<double> weights;
  bool extrapolated = false; // tf_crop_and_resize outside the input: extrapolation_value
};

/// Output o's window: the K positions nearest x (ties to the smaller), kept within K / 2 of
/// the input's ends as ONNX's reference pads it; an extrapolated output's is not kept there
/// (its values are not used, only read) but is bounded.
Window windowOf(const Interpolation& ip, const AxisTarget& t, int64_t o) {
  int64_t n = t.in.size();
  double x = sourceCoordinate(ip, t, o);
  Window w;
  w.extrapolated = ip.coordinates == Coordinates::TfCropAndResize &&
                   !(x >= 0 && x <= static_cast<double>(n - 1));
  if (!std::isfinite(x)) x = 0;
  double before = std::floor(x);
  w.weights = kernelWeights(ip, x == before ? 1.0 : x - before, t.scale);
  auto k = static_cast<int64_t>(w.weights.size());
  double bound = static_cast<double>(n + 2 * k);
  auto start =
      static_cast<int64_t>(std::clamp(std::ceil(x - static_cast<double>(k) / 2), -bound, bound));
  int64_t pad = (k + 1) / 2;
  w.start = w.extrapolated ? start : std::clamp(start, -pad, n + pad - k);
  if (ip.excludeOutside) {
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      int64_t at = w.start + i;
      if (at < 0 || at >= n) w.weights[static_cast<size_t>(i)] = 0;
      sum += w.weights[static_cast<size_t>(i)];
    }
    for (double& v : w.weights) // all 0 (no position inside): 0 / 0, NaN, as the reference gives
      v /= sum;
  }
  return w;
}

/// A weighted input element, its position within the input.
struct Tap {
  int64_t at = 0;
  double weight = 0;
};

/// The window's taps on input elements: positions clamped into the input, those on one
/// element merged (their weights summed), weights of 0 left out. None when extrapolated.
std::vector<Tap> tapsOf(const Window& w, int64_t n) {
  std::vector<Tap> taps;
  if (w.extrapolated) return taps;
  for (size_t k = 0; k < w.weights.size(); ++k) {
    if (w.weights[k] == 0) continue;
    int64_t at = std::clamp<int64_t>(w.start + static_cast<int64_t>(k), 0, n - 1);
    if (!taps.empty() && taps.back().at == at)
      taps.back().weight += w.weights[k];
    else
      taps.push_back({at, w.weights[k]});
  }
  taps.erase(std::remove_if(taps.begin(), taps.end(), [](const Tap& t) { return t.weight == 0; }),
             taps.end());
  return taps;
}

/// One resized axis, output by output.
struct AxisPlan {
  size_t axis = 0;
  int64_t in = 0, out = 0;
  bool zeroOutside = false; // positions outside the input read 0 (exclude_outside), not the edge
  std::vector<Window> windows;
  std::vector<std::vector<Tap>> taps;
  /// Every output is one input element (weight 1): no arithmetic, any dtype. Its windows are
  /// then that element alone (positions past the ends read the edge).
  bool selective = true;
  bool identity = false;
  bool extrapolates = false;
};

AxisPlan planAxis(const Interpolation& ip, const AxisTarget& t, size_t axis) {
  AxisPlan p;
  p.axis = axis;
  p.in = t.in.size();
  p.out = t.out.size();
  p.zeroOutside = ip.excludeOutside;
  for (int64_t o = 0; o < p.out; ++o) {
    p.windows.push_back(windowOf(ip, t, o));
    p.taps.push_back(tapsOf(p.windows.back(), p.in));
    const std::vector<Tap>& taps = p.taps.back();
    p.extrapolates |= p.windows.back().extrapolated;
    p.selective &= taps.size() == 1 && taps[0].weight == 1;
  }
  if (!p.selective) return p;
  p.identity = p.in == p.out;
  for (int64_t o = 0; o < p.out; ++o) {
    int64_t at = p.taps[static_cast<size_t>(o)][0].at;
    p.identity &= at == o;
    // A window with one weight (of 1) keeps its position unclamped, reading the edge padding
    // past the ends: clamping would break the regular pattern the phases look for.
    Window& w = p.windows[static_cast<size_t>(o)];
    auto nonzero = [](double v) { return v != 0; };
    if (std::count_if(w.weights.begin(), w.weights.end(), nonzero) == 1)
      at =
          w.start + (std::find_if(w.weights.begin(), w.weights.end(), nonzero) - w.weights.begin());
    w = Window{at, {1.0}, false};
  }
  return p;
}

// ---------------------------------------------------------------- building blocks

/// `s` with axis `axis` replaced by `dims`.
Shape replaced(Shape s, size_t axis, const std::vector<Dim>& dims) {
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(axis));
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(axis), dims.begin(), dims.end());
  return s;
}

std::vector<int64_t> allDims(size_t rank) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i)
    dims.push_back(static_cast<int64_t>(i));
  return dims;
}

/// A constant vector along `axis` of `shape` (static along it).
NodeId alongAxis(NodeContext& c, DType t, std::vector<double> values, const Shape& shape,
                 size_t axis) {
  auto n = static_cast<int64_t>(values.size());
  return c.g.broadcastInDim(c.g.constant(t, {n}, std::move(values)), shape,
                            {static_cast<int64_t>(axis)});
}

/// x's elements first + step * i along `axis` for i < count (step 0: the one element
/// repeated); x itself when that is all of it.
NodeId strided(NodeContext& c, NodeId x, size_t axis, int64_t first, int64_t step, int64_t count,
               const std::string& name = "") {
  Shape s = c.typeOf(x).shape;
  size_t rank = s.size();
  std::vector<int64_t> starts(rank, 0), limits(rank, -1), strides(rank, 1);
  starts[axis] = first;
  if (step == 0 && count > 1) {
    limits[axis] = first + 1;
    NodeId one = c.g.slice(x, starts, limits, strides);
    return c.g.broadcastInDim(one, replaced(s, axis, {count}), allDims(rank), name);
  }
  step = std::max<int64_t>(step, 1);
  limits[axis] = first + (count - 1) * step + 1;
  strides[axis] = step;
  if (first == 0 && step == 1 && s[axis] == Dim(count)) return x;
  return c.g.slice(x, starts, limits, strides, name);
}

/// Weights rounded to the dtype they are computed in.
double roundedTo(DType t, double v) {
  return t == DType::f64 ? v : static_cast<double>(static_cast<float>(v));
}

/// v times `weights` along `axis`: v itself when all are 1, a splat when they are equal, else
/// a constant broadcast along the axis. The multiply is named `name`.
NodeId weighted(NodeContext& c, NodeId v, size_t axis, std::vector<double> weights,
                const std::string& name) {
  ir::TensorType t = c.typeOf(v);
  for (double& w : weights)
    w = roundedTo(t.dtype, w);
  bool equal = std::all_of(weights.begin(), weights.end(), [&](double w) {
    return w == weights[0] || (std::isnan(w) && std::isnan(weights[0]));
  });
  if (equal && weights[0] == 1) return v;
  NodeId factor =
      equal ? c.splatLike(v, weights[0]) : alongAxis(c, t.dtype, std::move(weights), t.shape, axis);
  return c.g.binary(OpKind::Mul, v, factor, name);
}

/// A bool mask along `axis` of `shape`.
NodeId maskAlong(NodeContext& c, const std::vector<bool>& mask, const Shape& shape, size_t axis) {
  return alongAxis(c, DType::boolean, std::vector<double>(mask.begin(), mask.end()), shape, axis);
}

// ---------------------------------------------------------------- phases

/// Tap k of a phase's windows, with its weight for each of the phase's outputs; `keep` is false
/// where a weight of 0 falls on an element that may be inf or NaN, which is selected away
/// rather than multiplied.
struct PhaseTap {
  int64_t k = 0;
  std::vector<double> weights;
  std::vector<bool> keep;
  bool masked() const { return std::find(keep.begin(), keep.end(), false) != keep.end(); }
};

/// Outputs begin .. begin + count - 1 of a phase, whose windows start at start, start + step...
struct Segment {
  int64_t begin = 0, count = 0, start = 0;
};

/// The outputs p, p + period, p + 2 * period... of an axis.
struct Phase {
  std::vector<int64_t> starts; // each output's window start
  std::vector<Segment> segments;
  std::vector<PhaseTap> taps;
  int64_t count() const { return static_cast<int64_t>(starts.size()); }
};

/// An axis's outputs split into `period` phases whose windows advance by `step` from one
/// output of the phase to the next, but at the starts of segments.
struct Phases {
  int64_t period = 1, step = 0;
  int64_t low = 0, high = 0; // the padding the positions need before and after the input
  std::vector<Phase> phases;
};

/// The step by which most windows advance every `period` outputs (0 or more), and how many do
/// not (each starts a segment).
std::pair<int64_t, int64_t> commonStep(const AxisPlan& p, int64_t period) {
  std::map<int64_t, int64_t> seen;
  for (int64_t o = period; o < p.out; ++o)
    ++seen[p.windows[static_cast<size_t>(o)].start -
           p.windows[static_cast<size_t>(o - period)].start];
  int64_t step = 0, most = 0;
  for (auto [s, n] : seen)
    if (s >= 0 && n > most) {
      step = s;
      most = n;
    }
  return {step, p.out - period - most};
}

/// The phases of `period` outputs advancing by `step`. An extrapolated output's weights are any
/// (its value is replaced): it takes those of another output of the phase, so that a tap's
/// weights stay equal where they can.
Phases phasesOf(const AxisPlan& p, int64_t period, int64_t step) {
  Phases ph;
  ph.period = period;
  ph.step = step;
  int64_t first = 0, last = p.in - 1;
  auto k = static_cast<int64_t>(p.windows[0].weights.size());
  for (int64_t phase = 0; phase < period; ++phase) {
    Phase& f = ph.phases.emplace_back();
    std::vector<const Window*> windows;
    for (int64_t o = phase; o < p.out; o += period) {
      windows.push_back(&p.windows[static_cast<size_t>(o)]);
      int64_t start = windows.back()->start, i = f.count();
      if (f.segments.empty() ||
          start != f.segments.back().start + step * (i - f.segments.back().begin))
        f.segments.push_back({i, 0, start});
      ++f.segments.back().count;
      f.starts.push_back(start);
    }
    for (int64_t j = 0; j < k; ++j) {
      PhaseTap tap{j, {}, {}};
      std::optional<double> known;
      for (const Window* w : windows) {
        double v = w->weights[static_cast<size_t>(j)];
        int64_t at = w->start + j;
        tap.weights.push_back(v);
        tap.keep.push_back(w->extrapolated || v != 0 || (p.zeroOutside && (at < 0 || at >= p.in)));
        if (!w->extrapolated && !known && v != 0) known = v;
      }
      if (!known) continue; // 0 wherever it matters
      for (size_t i = 0; i < windows.size(); ++i)
        if (windows[i]->extrapolated) tap.weights[i] = *known;
      for (int64_t s : f.starts) {
        first = std::min(first, s + j);
        last = std::max(last, s + j);
      }
      f.taps.push_back(std::move(tap));
    }
  }
  ph.low = -first;
  ph.high = last - (p.in - 1);
  return ph;
}

/// x extended along `axis` by `low` elements before and `high` after: copies of the edge
/// elements, or zeros.
NodeId padAlong(NodeContext& c, NodeId x, size_t axis, int64_t low, int64_t high, bool zeros) {
  if (low == 0 && high == 0) return x;
  size_t rank = c.typeOf(x).shape.size();
  if (zeros) {
    std::vector<int64_t> lo(rank, 0), hi(rank, 0);
    lo[axis] = low;
    hi[axis] = high;
    return c.g.pad(x, lo, hi, 0);
  }
  int64_t n = c.typeOf(x).shape[axis].size();
  std::vector<NodeId> parts;
  if (low > 0) parts.push_back(strided(c, x, axis, 0, 0, low));
  parts.push_back(x);
  if (high > 0) parts.push_back(strided(c, x, axis, n - 1, 0, high));
  return c.g.concatenate(parts, static_cast<int64_t>(axis));
}

/// Builds an axis's phases from its padded input, reusing the elements one tap reads for
/// another that reads the same (tap 1 of one phase is often tap 0 of the next).
class PhaseBuilder {
public:
  PhaseBuilder(NodeContext& c, NodeId padded, size_t axis, const Phases& ph)
      : c_(c), padded_(padded), axis_(axis), ph_(ph) {}

  /// One phase's outputs: its taps' elements, weighted and summed in window order; the last op
  /// is named `name`.
  NodeId values(size_t phase, const std::string& name) {
    const Phase& f = ph_.phases[phase];
    if (f.taps.empty()) // every output extrapolated: any value
      return c_.splat(c_.typeOf(padded_).dtype,
                      replaced(c_.typeOf(padded_).shape, axis_, {f.count()}), 0);
    std::optional<NodeId> sum;
    for (size_t j = 0; j < f.taps.size(); ++j) {
      const PhaseTap& tap = f.taps[j];
      bool last = j + 1 == f.taps.size();
      std::string termName = last && !sum ? name : "";
      NodeId term =
          weighted(c_, elements(f, tap.k), axis_, tap.weights, tap.masked() ? "" : termName);
      if (tap.masked())
        term = c_.g.select(maskAlong(c_, tap.keep, c_.typeOf(term).shape, axis_), term,
                           c_.splatLike(term, 0), termName);
      sum = sum ? c_.g.binary(OpKind::Add, *sum, term, last ? name : "") : term;
    }
    return *sum;
  }

private:
  /// The elements tap k of the phase's outputs read: a strided slice of the padded input per
  /// segment, concatenated.
  NodeId elements(const Phase& f, int64_t k) {
    std::vector<std::pair<int64_t, int64_t>> key;
    for (const Segment& s : f.segments)
      key.emplace_back(s.start + k, s.count);
    if (auto it = made_.find(key); it != made_.end()) return it->second;
    std::vector<NodeId> parts;
    for (auto [first, count] : key)
      parts.push_back(strided(c_, padded_, axis_, first + ph_.low, ph_.step, count));
    NodeId v = parts.size() == 1 ? parts[0] : c_.g.concatenate(parts, static_cast<int64_t>(axis_));
    made_.emplace(std::move(key), v);
    return v;
  }

  NodeContext& c_;
  NodeId padded_;
  size_t axis_;
  const Phases& ph_;
  std::map<std::vector<std::pair<int64_t, int64_t>>, NodeId> made_;
};

/// Whether every phase reads what the first does, with the same weights, over its outputs (a
/// later phase may have one output fewer).
bool samePhases(const Phases& ph) {
  const Phase& a = ph.phases[0];
  return std::all_of(ph.phases.begin(), ph.phases.end(), [&](const Phase& b) {
    if (b.taps.size() != a.taps.size() ||
        !std::equal(b.starts.begin(), b.starts.end(), a.starts.begin()))
      return false;
    for (size_t j = 0; j < b.taps.size(); ++j) {
      const PhaseTap &s = a.taps[j], &t = b.taps[j];
      if (s.k != t.k || !std::equal(t.weights.begin(), t.weights.end(), s.weights.begin()) ||
          !std::equal(t.keep.begin(), t.keep.end(), s.keep.begin()))
        return false;
    }
    return true;
  });
}

/// The strided slices the phases take: one per tap of each segment of each phase, of the first
/// phase only when they are all the same.
int64_t slicesOf(const Phases& ph) {
  auto slices = [](const Phase& f) {
    return static_cast<int64_t>(f.taps.size() * f.segments.size());
  };
  if (samePhases(ph)) return slices(ph.phases[0]);
  int64_t n = 0;
  for (const Phase& f : ph.phases)
    n += slices(f);
  return n;
}

/// The period (up to kMaxPeriod) whose phases take the fewest strided slices; nullopt when
/// even those are more than kMaxPhaseSlices. Periods whose windows break their step too often
/// to get there are not built.
std::optional<Phases> findPhases(const AxisPlan& p) {
  auto k = static_cast<int64_t>(p.windows[0].weights.size());
  std::optional<Phases> best;
  int64_t fewest = kMaxPhaseSlices + 1;
  for (int64_t period = 1; period <= std::min(p.out, kMaxPeriod); ++period) {
    auto [step, breaks] = commonStep(p, period);
    if (k * (1 + breaks) >= fewest * period) continue;
    Phases ph = phasesOf(p, period, step);
    if (int64_t slices = slicesOf(ph); slices < fewest) {
      fewest = slices;
      best = std::move(ph);
    }
  }
  return best;
}

/// The axis resized through its phases, interleaved (phase p's i-th output is output p +
/// period * i) by a concatenate and a reshape, or, when they are all the same, one phase
/// broadcast and reshaped; the last op is named `name`.
NodeId phaseAxis(NodeContext& c, NodeId x, const AxisPlan& p, const Phases& ph,
                 const std::string& name) {
  size_t axis = p.axis;
  PhaseBuilder build(c, padAlong(c, x, axis, ph.low, ph.high, p.zeroOutside), axis, ph);
  if (ph.period == 1) return build.values(0, name);
  int64_t rows = ph.phases[0].count(), period = ph.period;
  Shape s = replaced(c.typeOf(x).shape, axis, {rows});
  NodeId split;
  if (samePhases(ph)) {
    split = c.g.broadcastInDim(build.values(0, ""), replaced(s, axis, {rows, period}),
                               skipping(s.size(), axis + 1));
  } else {
    std::vector<NodeId> parts;
    for (size_t phase = 0; phase < ph.phases.size(); ++phase) {
      NodeId v = build.values(phase, "");
      if (int64_t missing = rows - ph.phases[phase].count(); missing > 0) {
        std::vector<int64_t> lo(s.size(), 0), hi(s.size(), 0);
        hi[axis] = missing;
        v = c.g.pad(v, lo, hi, 0);
      }
      parts.push_back(c.g.reshape(v, replaced(s, axis, {rows, 1})));
    }
    split = c.g.concatenate(parts, static_cast<int64_t>(axis + 1));
  }
  bool trim = rows * period != p.out;
  NodeId joined = c.g.reshape(split, replaced(s, axis, {rows * period}), trim ? "" : name);
  return trim ? strided(c, joined, axis, 0, 1, p.out, name) : joined;
}

// ---------------------------------------------------------------- gather

/// x's element at positions[o] along `axis` for each output o (-1: none, which reads 0; the
/// caller selects it away): a gather, its index the positions as a constant.
NodeId pickAlong(NodeContext& c, NodeId x, size_t axis, const std::vector<double>& positions) {
  ir::TensorType t = c.typeOf(x);
  auto m = static_cast<int64_t>(positions.size());
  Shape out = replaced(t.shape, axis, {m});
  NodeId at = alongAxis(c, DType::i64, positions, out, axis);
  std::vector<int64_t> dims; // x's other axes, in place
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (i != axis) dims.push_back(static_cast<int64_t>(i));
  return c.g.gather(x, {at}, {static_cast<int64_t>(axis)}, std::move(dims));
}

/// The axis's outputs as the sum over t of each output's t-th tap (merged and clamped, see
/// tapsOf), each picked by pickAlong and weighted; an output without a t-th tap keeps its sum
/// (a select). The last op is named `name`.
NodeId gatherAxis(NodeContext& c, NodeId x, const AxisPlan& p, const std::string& name) {
  size_t most = 0;
  for (const auto& taps : p.taps)
    most = std::max(most, taps.size());
  Shape out = replaced(c.typeOf(x).shape, p.axis, {p.out});
  if (most == 0) return c.splat(c.typeOf(x).dtype, out, 0); // every output extrapolated
  std::optional<NodeId> sum;
  for (size_t t = 0; t < most; ++t) {
    std::vector<double> positions, weights;
    std::vector<bool> present;
    std::optional<double> known; // an output without the tap takes another's weight
    for (const auto& taps : p.taps) {
      present.push_back(t < taps.size());
      positions.push_back(t < taps.size() ? static_cast<double>(taps[t].at) : -1.0);
      if (t < taps.size() && !known) known = taps[t].weight;
    }
    for (const auto& taps : p.taps)
      weights.push_back(t < taps.size() ? taps[t].weight : *known);
    bool all = std::find(present.begin(), present.end(), false) == present.end();
    bool last = t + 1 == most;
    NodeId picked = pickAlong(c, x, p.axis, positions);
    NodeId term = weighted(c, picked, p.axis, weights, all && !sum && last ? name : "");
    std::string stepName = last ? name : "";
    if (all) {
      sum = sum ? c.g.binary(OpKind::Add, *sum, term, stepName) : term;
      continue;
    }
    NodeId mask = maskAlong(c, present, out, p.axis);
    sum = sum ? c.g.select(mask, c.g.binary(OpKind::Add, *sum, term), *sum, stepName)
              : c.g.select(mask, term, c.splatLike(term, 0), stepName);
  }
  return *sum;
}

/// The axis's outputs as sums over the whole input axis, weighted by a constant [out, in]
/// matrix of each output's taps (tapsOf), the terms of zero weights selected away: for
/// windows too wide (antialiased downscaling) for a gather per tap.
NodeId denseAxis(NodeContext& c, NodeId x, const AxisPlan& p, const std::string& name) {
  ir::TensorType t = c.typeOf(x);
  if (p.out * p.in > kMaxDenseWeights)
    c.unsupported(fmt::format("resizing axis {} from {} to {} elements would take a {} x {} "
                              "weight matrix; weft builds at most {} weights",
                              p.axis, p.in, p.out, p.out, p.in, kMaxDenseWeights));
  std::vector<double> matrix(static_cast<size_t>(p.out * p.in), 0.0);
  for (int64_t o = 0; o < p.out; ++o)
    for (const Tap& tap : p.taps[static_cast<size_t>(o)])
      matrix[static_cast<size_t>(o * p.in + tap.at)] = roundedTo(t.dtype, tap.weight);
  Shape wide = replaced(t.shape, p.axis, {p.out, p.in});
  auto axis = static_cast<int64_t>(p.axis);
  NodeId w = c.g.broadcastInDim(c.g.constant(t.dtype, {p.out, p.in}, std::move(matrix)), wide,
                                {axis, axis + 1});
  NodeId xs = c.g.broadcastInDim(x, wide, skipping(t.shape.size(), p.axis));
  NodeId nonzero = c.g.compare(CompareDir::NE, w, c.splatLike(w, 0));
  NodeId terms = c.g.select(nonzero, c.g.binary(OpKind::Mul, xs, w), c.splatLike(xs, 0));
  return c.g.reduce(ReduceKind::Sum, terms, {axis + 1}, name);
}

/// x resized along the plan's axis (in x's dtype), extrapolated outputs set to `fill`; the
/// last op is named `name`.
NodeId resizeAxis(NodeContext& c, NodeId x, const AxisPlan& p, double fill,
                  const std::string& name) {
  std::string inner = p.extrapolates ? "" : name;
  size_t taps = 0;
  for (const auto& t : p.taps)
    taps = std::max(taps, t.size());
  std::optional<Phases> ph = findPhases(p);
  NodeId y = ph                    ? phaseAxis(c, x, p, *ph, inner)
             : taps <= kMaxGathers ? gatherAxis(c, x, p, inner)
                                   : denseAxis(c, x, p, inner);
  if (!p.extrapolates) return y;
  std::vector<bool> outside;
  for (const Window& w : p.windows)
    outside.push_back(w.extrapolated);
  NodeId mask = maskAlong(c, outside, c.typeOf(y).shape, p.axis);
  return c.g.select(mask, c.splatLike(y, fill), y, name);
}

/// The ONNX element type of an IR dtype, for a cast back when the input's is not known.
int onnxTypeOfDType(DType t) {
  switch (t) {
  case DType::i8:
    return ::onnx::TensorProto::INT8;
  case DType::i32:
    return ::onnx::TensorProto::INT32;
  default:
    return ::onnx::TensorProto::INT64;
  }
}

// ---------------------------------------------------------------- the operators

/// Resize (opset 10 on) and Upsample (opsets 1, 7 and 9; deprecated at 10). Elements are
/// computed in f32 for f16 and bf16 inputs and in f64 for integer inputs (cast back as ONNX's
/// reference does: truncated, and wrapped into narrow types); an axis that only selects
/// elements (nearest) copies them in the input's dtype, bool included.
void lowerResize(NodeContext& c) {
  const std::string& op = c.node.op_type();
  if (op == "Upsample" && c.opset >= 10)
    c.fail("Upsample is deprecated from opset 10 (use Resize)");
  if (op == "Resize" && c.opset < 10) c.fail("Resize is defined from opset 10");
  if (c.numOutputs() != 1)
    c.fail(fmt::format("has {} outputs; {} has one (Y)", c.numOutputs(), op));
  NodeId x = c.in(0);
  const ir::TensorType t = c.typeOf(x);
  if (t.shape.empty()) c.fail("X must have rank 1 or more");
  Interpolation ip = readInterpolation(c);
  std::vector<AxisTarget> targets = readTargets(c, ip, t.shape);
  int onnx = c.onnxType(0);
  Shape outShape;
  for (const AxisTarget& a : targets)
    outShape.push_back(a.out);
  NodeId y = x;
  if (ir::numElements(outShape).factor() == 0) {
    y = c.splat(t.dtype, outShape, 0);
  } else {
    std::vector<AxisPlan> plans;
    for (size_t i = 0; i < targets.size(); ++i)
      if (targets[i].listed && targets[i].in.isStatic())
        if (AxisPlan p = planAxis(ip, targets[i], i); !p.identity) plans.push_back(std::move(p));
    std::stable_sort(plans.begin(), plans.end(), [](const AxisPlan& a, const AxisPlan& b) {
      return static_cast<double>(a.out) / static_cast<double>(a.in) <
             static_cast<double>(b.out) / static_cast<double>(b.in);
    });
    bool selective =
        std::all_of(plans.begin(), plans.end(), [](const AxisPlan& p) { return p.selective; });
    if (!selective && ir::isBool(t.dtype))
      c.unsupported("interpolating bool elements is not supported (only selecting them: mode "
                    "nearest without extrapolation)");
    DType dt = selective ? t.dtype : ir::isFloat(t.dtype) ? computeDType(t.dtype) : DType::f64;
    if (dt != t.dtype) y = isUnsigned64(onnx) ? unsignedToFloat(c, x, dt) : c.g.convert(x, dt);
    for (size_t i = 0; i < plans.size(); ++i)
      y = resizeAxis(c, y, plans[i], ip.extrapolation,
                     i + 1 == plans.size() && dt == t.dtype ? c.name() : "");
    if (dt != t.dtype)
      y = ir::isFloat(t.dtype)
              ? c.g.convert(y, t.dtype, c.name())
              : castTo(c, y, onnx != 0 ? onnx : onnxTypeOfDType(t.dtype), c.name());
  }
  c.setOutput(0, y);
  if (onnx != 0) c.setOutputOnnxType(0, onnx);
}

} // namespace

void addResizeOps(OperatorTable& t) {
  t["Resize"] = lowerResize;
  t["Upsample"] = lowerResize;
}

} // namespace weft::onnx
