// Signal-processing ONNX operators: HannWindow, HammingWindow and BlackmanWindow (opset 17),
// MelWeightMatrix (17), LRN (1, 13), ReverseSequence (10), DFT (17, 20) and STFT (17).
//
// The windows are literals: their size must be known at import time, and their values are the
// spec's cosine sums worked out in double and rounded once to the output type. MelWeightMatrix
// is a literal too, worked out as ONNX's reference does. LRN sums the squares of each
// channel's neighbours as strided slices of the zero-padded squares. ReverseSequence gathers
// each output element from its source along the time axis, a position computed from the
// run-time sequence lengths. A DFT is linear in its input: it is one dot of the signal,
// flattened to rows of (position, real/imaginary) pairs, with a constant table of cosines and
// sines of the exact angles 2 pi (j k mod n) / n, so that weft's GEMM runs it; STFT frames the
// signal with slices, weights the frames by the window and runs the same dot.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>

#include "frontend/onnx/importer.h"
#include "weft/tensor.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// Window literals up to this many elements; DFT tables up to this many entries.
constexpr int64_t kMaxLiteralElements = int64_t(1) << 20;
constexpr int64_t kMaxTableEntries = int64_t(1) << 22;
/// Slices unrolled at most (LRN's taps, STFT's frames).
constexpr int64_t kMaxSlices = 1024;

/// A 0/1 attribute (periodic, inverse, onesided); other values fail.
bool flagAttr(NodeContext& c, const std::string& name, int64_t dflt) {
  int64_t v = c.attrInt(name, dflt);
  if (v != 0 && v != 1) c.fail(fmt::format("{} is {}; it must be 0 or 1", name, v));
  return v == 1;
}

/// Input i as one integer known at import time: a scalar (rank 0) as the spec requires.
int64_t scalarInput(NodeContext& c, size_t i, const std::string& what) {
  std::vector<int64_t> v = c.constInts(i, what);
  if (!c.requireLiteral(i, what).shape.empty())
    c.fail(fmt::format("input {} ({}) has shape [{}]; it must be a scalar", i, what,
                       fmt::join(c.requireLiteral(i, what).shape, ", ")));
  return v.at(0);
}

void requireFloat(NodeContext& c, size_t i, const std::string& what) {
  DType t = c.type(i).dtype;
  if (!ir::isFloat(t))
    c.fail(fmt::format("{} has dtype {}; {} takes floating-point tensors", what, ir::dtypeName(t),
                       c.node.op_type()));
}

// ---------------------------------------------------------------- windows

/// The output_datatype attribute (default FLOAT) of a literal-making operator: a numeric ONNX
/// type, with the IR dtype that holds it.
std::pair<int, DType> numericOutputType(NodeContext& c) {
  int onnxType = static_cast<int>(c.attrInt("output_datatype", ::onnx::TensorProto::FLOAT));
  std::optional<DType> t = irDTypeOf(onnxType);
  if (!t || ir::isBool(*t))
    c.fail(fmt::format("output_datatype {} ({}) is not a numeric type", onnxType,
                       onnxTypeName(onnxType)));
  return {onnxType, *t};
}

/// cos and sin of 2 pi r / n for 0 <= r < n, exact at the quarter turns (so that a spectrum's
/// mathematically zero parts come out zero).
std::pair<double, double> unitRoot(int64_t r, int64_t n) {
  if ((4 * r) % n == 0) {
    switch ((4 * r) / n) {
    case 0:
      return {1, 0};
    case 1:
      return {0, 1};
    case 2:
      return {-1, 0};
    default:
      return {0, -1};
    }
  }
  double angle = 2 * std::numbers::pi * static_cast<double>(r) / static_cast<double>(n);
  return {std::cos(angle), std::sin(angle)};
}

/// A generalized cosine window: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N).
struct CosineSum {
  double a0, a1, a2;
};

/// The coefficients of the operators' function bodies (Hamming's a0 is 25/46).
constexpr CosineSum kHann{0.5, 0.5, 0.0};
constexpr CosineSum kHamming{25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineSum kBlackman{0.42, 0.5, 0.08};

/// HannWindow, HammingWindow, BlackmanWindow: `size` values of the cosine sum with N = size
/// (periodic) or size - 1 (symmetric), cast to output_datatype as the function body's final
/// Cast does (integers truncate toward zero). A symmetric window of size 1 is 0 / 0, NaN, as
/// the spec's formula gives.
Lowering cosineWindow(CosineSum w) {
  return [w](NodeContext& c) {
    int64_t size = scalarInput(c, 0, "size");
    if (size <= 0) c.fail(fmt::format("size is {}; it must be greater than 0", size));
    if (size > kMaxLiteralElements)
      c.unsupported(fmt::format("a window of {} elements is not supported (at most {}: it is "
                                "built as a literal)",
                                size, kMaxLiteralElements));
    bool periodic = flagAttr(c, "periodic", 1);
    auto [onnxType, t] = numericOutputType(c);
    int64_t n = periodic ? size : size - 1;
    std::vector<double> values;
    for (int64_t i = 0; i < size; ++i) {
      double v = std::numeric_limits<double>::quiet_NaN();
      if (n > 0) v = w.a0 - w.a1 * unitRoot(i % n, n).first + w.a2 * unitRoot(2 * i % n, n).first;
      if (std::isnan(v) && !ir::isFloat(t))
        c.fail(fmt::format("a symmetric window of size 1 is 0 / 0 (NaN), which output_datatype "
                           "{} cannot hold",
                           onnxTypeName(onnxType)));
      values.push_back(roundToDType(v, t));
    }
    c.setOutput(0, Literal::ofReals(t, {size}, std::move(values)));
    c.setOutputOnnxType(0, onnxType);
  };
}

// ---------------------------------------------------------------- MelWeightMatrix

/// Input i, a float known at import time given as a scalar, and its dtype.
std::pair<double, DType> floatScalarInput(NodeContext& c, size_t i, const std::string& what) {
  const Literal& lit = c.requireLiteral(i, what);
  if (!ir::isFloat(lit.dtype))
    c.fail(fmt::format("input {} ({}) has dtype {}; it must be a float", i, what,
                       ir::dtypeName(lit.dtype)));
  if (!lit.shape.empty())
    c.fail(fmt::format("input {} ({}) has shape {}; it must be a scalar", i, what,
                       listStr(lit.shape)));
  return {lit.value(0), lit.dtype};
}

/// a // b for doubles as Python (and numpy) computes it: from fmod, so that the quotient is the
/// floor of the exact one even where a / b rounds up to an integer.
double floorDivide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  return div - floored > 0.5 ? floored + 1 : floored;
}

/// MelWeightMatrix: the [dft_length / 2 + 1, num_mel_bins] matrix of triangular filters that
/// maps a onesided spectrum's bins to mel bands, worked out as ONNX's reference does (and so
/// its node test): the edges' mel values 2595 log10(1 + hz / 700) in the edges' float type,
/// num_mel_bins + 2 points from the lower by (mel(upper) - mel(lower)) / (num_mel_bins + 2)
/// (the reference's step, which stops one step short of the upper edge), each back in hertz and
/// made a spectrogram bin floor((dft_length + 1) hz / sample_rate) in double; band i rises
/// from bin[i] to 1 at bin[i + 1] and falls to bin[i + 2] (excluded). All inputs must be known
/// at import time; a band that reaches outside the spectrogram's bins fails.
void lowerMelWeightMatrix(NodeContext& c) {
  if (c.opset < 17) c.fail("MelWeightMatrix is defined from opset 17");
  int64_t mels = scalarInput(c, 0, "num_mel_bins");
  int64_t dftLength = scalarInput(c, 1, "dft_length");
  int64_t sampleRate = scalarInput(c, 2, "sample_rate");
  auto [lowerHz, edgeType] = floatScalarInput(c, 3, "lower_edge_hertz");
  auto [upperHz, upperType] = floatScalarInput(c, 4, "upper_edge_hertz");
  if (mels < 0) c.fail(fmt::format("num_mel_bins is {}; it must not be negative", mels));
  if (dftLength < 1) c.fail(fmt::format("dft_length is {}; it must be 1 or more", dftLength));
  if (sampleRate < 1) c.fail(fmt::format("sample_rate is {}; it must be 1 or more", sampleRate));
  if (upperType != edgeType)
    c.fail(fmt::format("lower_edge_hertz is {} but upper_edge_hertz is {}; they must have one "
                       "type",
                       ir::dtypeName(edgeType), ir::dtypeName(upperType)));
  auto [onnxType, t] = numericOutputType(c);
  const int64_t bins = dftLength / 2 + 1;
  if (mels > kMaxLiteralElements / bins)
    c.unsupported(fmt::format("a {} x {} mel weight matrix is not supported (at most {} "
                              "elements: it is built as a literal)",
                              bins, mels, kMaxLiteralElements));
  // The mel scale's edges and step in the edges' type, each operation rounded to it.
  auto r = [&](double v) { return roundToDType(v, edgeType); };
  auto mel = [&](double hz) { return r(2595 * r(std::log10(r(1 + r(hz / 700))))); };
  const double lowMel = mel(lowerHz), highMel = mel(upperHz);
  const double step = r(r(highMel - lowMel) / static_cast<double>(mels + 2));
  std::vector<int64_t> edge;
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + lowMel) / 2595) - 1);
    double b =
        floorDivide((static_cast<double>(dftLength) + 1) * hz, static_cast<double>(sampleRate));
    if (!(std::abs(b) < 0x1p53))
      c.fail(fmt::format("the edges {} and {} Hz put mel point {} at spectrogram bin {}", lowerHz,
                         upperHz, i, b));
    edge.push_back(static_cast<int64_t>(b));
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= bins)
      c.fail(fmt::format("the edges {} and {} Hz put mel band {} over spectrogram bin {}, outside "
                         "the {} bins of a {}-point DFT at {} Hz",
                         lowerHz, upperHz, i, j, bins, dftLength, sampleRate));
    w[static_cast<size_t>(j * mels + i)] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)],
            right = edge[static_cast<size_t>(i + 2)];
    if (center == left) {
      set(center, i, 1);
    } else {
      for (int64_t j = left; j <= center; ++j)
        set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
    }
    for (int64_t j = center; j < right; ++j)
      set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
  }
  for (double& v : w)
    v = roundToDType(v, t);
  c.setOutput(0, Literal::ofReals(t, {bins, mels}, std::move(w)));
  c.setOutputOnnxType(0, onnxType);
}

// ---------------------------------------------------------------- LRN

/// LRN: y = x / (bias + alpha / size * square_sum)^beta, square_sum over the channels
/// max(0, c - floor((size-1)/2)) ..= min(C-1, c + ceil((size-1)/2)). The squares are padded
/// with zeros on the channel axis and summed as one slice per tap; taps that reach past every
/// channel only read padding and are left out. In f32 for f16 and bf16 inputs.
void lowerLRN(NodeContext& c) {
  NodeId x0 = c.in(0);
  const ir::TensorType t = c.typeOf(x0);
  requireFloat(c, 0, "X");
  if (t.dtype == DType::bf16 && c.opset < 13)
    c.fail("X is bfloat16, which LRN takes from opset 13");
  if (t.shape.size() < 2)
    c.fail(fmt::format("input {} needs rank 2 or more (N, C, ...)", ir::shapeStr(t.shape)));
  int64_t size = c.requireAttrInt("size");
  if (size < 1) c.fail(fmt::format("size is {}; it must be 1 or more", size));
  const Dim channels = t.shape[1];
  if (!channels.isStatic())
    c.unsupported(fmt::format("the channel axis of input {} has symbolic size {}; LRN needs a "
                              "static channel count",
                              ir::shapeStr(t.shape), channels.str()));
  const int64_t C = channels.size();
  if (C == 0) {
    c.setOutput(0, x0);
    return;
  }
  double alpha = c.attrFloat("alpha", 1e-4f), beta = c.attrFloat("beta", 0.75f),
         bias = c.attrFloat("bias", 1.0f);
  int64_t before = std::min((size - 1) / 2, C - 1), after = std::min(size / 2, C - 1);
  if (before + after + 1 > kMaxSlices)
    c.unsupported(fmt::format("a window of {} channels is not supported (at most {} taps)",
                              before + after + 1, kMaxSlices));
  NodeId x = c.convertTo(x0, computeDType(t.dtype));
  bool converted = x != x0;
  NodeId squares = c.g.binary(OpKind::Mul, x, x);
  size_t rank = t.shape.size();
  std::vector<int64_t> low(rank, 0), high(rank, 0);
  low[1] = before;
  high[1] = after;
  NodeId padded = before + after == 0 ? squares : c.g.pad(squares, low, high, 0);
  std::optional<NodeId> sum;
  for (int64_t j = 0; j <= before + after; ++j) {
    std::vector<int64_t> starts(rank, 0), limits(rank, -1), strides(rank, 1);
    starts[1] = j;
    limits[1] = j + C;
    NodeId tap = before + after == 0 ? padded : c.g.slice(padded, starts, limits, strides);
    sum = sum ? c.g.binary(OpKind::Add, *sum, tap) : tap;
  }
  NodeId scaled =
      c.g.binary(OpKind::Mul, *sum, c.splatLike(*sum, alpha / static_cast<double>(size)));
  NodeId base = c.g.binary(OpKind::Add, scaled, c.splatLike(scaled, bias));
  NodeId denominator = c.g.binary(OpKind::Pow, base, c.splatLike(base, beta));
  NodeId y = c.g.binary(OpKind::Div, x, denominator, converted ? "" : c.name());
  c.setOutput(0, converted ? c.g.convert(y, t.dtype, c.name()) : y);
}

// ---------------------------------------------------------------- ReverseSequence

/// The size of `d` as an i64 scalar: a constant, or for a symbolic size the sum of a splat of
/// ones of that size (read from the bound shape at run time).
NodeId sizeValue(NodeContext& c, const Dim& d) {
  if (d.isStatic()) return c.splat(DType::i64, {}, static_cast<double>(d.size()));
  return c.g.reduce(ir::ReduceKind::Sum, c.splat(DType::i64, {d}, 1), {0});
}

/// ReverseSequence: for each batch entry b, the first sequence_lens[b] elements along the time
/// axis reversed, the rest copied. Output position t reads position L - 1 - t when t < L,
/// else t (L clamped to [0, T], as slicing clamps it), always within the axis: a gather.
void lowerReverseSequence(NodeContext& c) {
  NodeId x = c.in(0);
  const ir::TensorType t = c.typeOf(x);
  const Shape& s = t.shape;
  if (s.size() < 2) c.fail(fmt::format("input {} needs rank 2 or more", ir::shapeStr(s)));
  int64_t batch = c.attrInt("batch_axis", 1), time = c.attrInt("time_axis", 0);
  if ((batch != 0 && batch != 1) || (time != 0 && time != 1))
    c.fail(fmt::format("batch_axis {} and time_axis {} must each be 0 or 1", batch, time));
  if (batch == time)
    c.fail(fmt::format("batch_axis and time_axis are both {}; they must differ", batch));
  const ir::TensorType lt = c.type(1);
  if (lt.dtype != DType::i64)
    c.fail(fmt::format("sequence_lens has dtype {}; it must be int64", ir::dtypeName(lt.dtype)));
  const Dim B = s[static_cast<size_t>(batch)], T = s[static_cast<size_t>(time)];
  if (lt.shape != Shape{B})
    c.fail(fmt::format("sequence_lens has shape {} but needs [{}] (the batch axis {} of input {})",
                       ir::shapeStr(lt.shape), B.str(), batch, ir::shapeStr(s)));
  if (const Literal* lens = c.literal(1); lens && T.isStatic())
    for (int64_t v : lens->exact)
      if (v < 0 || v > T.size())
        c.fail(fmt::format("sequence_lens holds {}; each must be in [0, {}] (the time axis's size)",
                           v, T.size()));
  NodeId lens = c.in(1);
  lens = c.g.clamp(c.splatLike(lens, 0), lens, c.g.broadcastInDim(sizeValue(c, T), lt.shape, {}));
  NodeId L = c.g.broadcastInDim(lens, s, {batch});
  NodeId pos = c.g.iota(DType::i64, s, time);
  NodeId reversed = c.g.binary(OpKind::Sub, c.g.binary(OpKind::Sub, L, c.splatLike(L, 1)), pos);
  NodeId from = c.g.select(c.g.compare(ir::CompareDir::LT, pos, L), reversed, pos);
  std::vector<int64_t> dims; // every axis but time's, in place
  for (size_t i = 0; i < s.size(); ++i)
    if (static_cast<int64_t>(i) != time) dims.push_back(static_cast<int64_t>(i));
  NodeId y = c.g.gather(x, {from}, {time}, std::move(dims), c.name());
  c.setOutput(0, y);
  if (c.onnxType(0) != 0) c.setOutputOnnxType(0, c.onnxType(0));
}

// ---------------------------------------------------------------- DFT and STFT

/// Which transform a table computes, over a length-n DFT.
enum class Transform {
  Forward,     // y[k] = sum_j x[j] e^(-2 pi i jk/n), complex out
  Inverse,     // x[j] = 1/n sum_k y[k] e^(2 pi i jk/n), complex out
  InverseReal, // IRFFT: the inverse of the Hermitian spectrum whose first n/2+1 bins are given,
               // real out (numpy's irfft: a bin's imaginary part at 0 and n/2 drops out)
};

/// The axis sizes of a transform: `inLen` positions of `inParts` (1 real, 2 complex) in,
/// `outLen` of `outParts` out.
struct TransformShape {
  int64_t n, inLen, inParts, outLen, outParts;
};

/// The [inLen * inParts, outLen * outParts] table T of the transform: out = in . T, with
/// row j * inParts + p (p: 0 real, 1 imaginary) and column k * outParts + q.
std::vector<double> transformTable(Transform kind, const TransformShape& ts, DType t) {
  std::vector<double> table;
  table.reserve(static_cast<size_t>(ts.inLen * ts.inParts * ts.outLen * ts.outParts));
  const double scale = kind == Transform::Forward ? 1.0 : 1.0 / static_cast<double>(ts.n);
  for (int64_t j = 0; j < ts.inLen; ++j)
    for (int64_t p = 0; p < ts.inParts; ++p)
      for (int64_t k = 0; k < ts.outLen; ++k) {
        auto [cs, sn] = unitRoot((j % ts.n) * (k % ts.n) % ts.n, ts.n);
        double v[2];
        switch (kind) {
        case Transform::Forward: // (a + ib)(cos - i sin)
          v[0] = p == 0 ? cs : sn;
          v[1] = p == 0 ? -sn : cs;
          break;
        case Transform::Inverse: // (a + ib)(cos + i sin)
          v[0] = p == 0 ? cs : -sn;
          v[1] = p == 0 ? sn : cs;
          break;
        case Transform::InverseReal: { // the real part, bins 1 .. n/2 - 1 counted twice
          double weight = j == 0 || 2 * j == ts.n ? 1 : 2;
          v[0] = weight * (p == 0 ? cs : -sn);
          v[1] = 0;
          break;
        }
        }
        for (int64_t q = 0; q < ts.outParts; ++q)
          table.push_back(roundToDType(v[q] * scale, t));
      }
  return table;
}

/// The transform of x [others..., inLen, inParts] along its second-to-last axis: one dot of
/// x flattened to [M, inLen * inParts] with the table; the result is [others..., outLen,
/// outParts].
NodeId applyTransform(NodeContext& c, NodeId x, Transform kind, const TransformShape& ts) {
  if (ts.inLen * ts.inParts > kMaxTableEntries / (ts.outLen * ts.outParts))
    c.unsupported(fmt::format("a DFT of length {} is not supported: its table of cosines and "
                              "sines would have more than {} entries",
                              ts.n, kMaxTableEntries));
  const ir::TensorType t = c.typeOf(x);
  Shape others(t.shape.begin(), t.shape.end() - 2);
  Dim rows(1);
  for (const Dim& d : others)
    rows = rows * d;
  NodeId flat = c.reshapeTo(x, {rows, Dim(ts.inLen * ts.inParts)});
  NodeId table = c.g.constant(t.dtype, {Dim(ts.inLen * ts.inParts), Dim(ts.outLen * ts.outParts)},
                              transformTable(kind, ts, t.dtype));
  Shape out = others;
  out.push_back(Dim(ts.outLen));
  out.push_back(Dim(ts.outParts));
  return c.reshapeTo(c.g.dot(flat, table), out);
}

/// x with axis `axis` cut to its first `length` elements or zero-padded up to `length`.
NodeId fitLength(NodeContext& c, NodeId x, size_t axis, int64_t length) {
  const Shape s = c.typeOf(x).shape;
  int64_t have = s[axis].size();
  if (have == length) return x;
  size_t rank = s.size();
  if (have > length) {
    std::vector<int64_t> starts(rank, 0), limits(rank, -1), strides(rank, 1);
    limits[axis] = length;
    return c.g.slice(x, starts, limits, strides);
  }
  std::vector<int64_t> low(rank, 0), high(rank, 0);
  high[axis] = length - have;
  return c.g.pad(x, low, high, 0);
}

/// The number of real/imaginary parts of input i's last axis: 1 or 2.
int64_t complexParts(NodeContext& c, size_t i, const std::string& what) {
  const Shape s = c.type(i).shape;
  if (s.empty() || !s.back().isStatic() || (s.back().size() != 1 && s.back().size() != 2))
    c.fail(fmt::format("{} has shape {}; its last axis must be 1 (real) or 2 (real and "
                       "imaginary parts)",
                       what, ir::shapeStr(s)));
  return s.back().size();
}

/// DFT (opset 17: axis an attribute, default 1; opset 20: an optional input, default -2) along
/// `axis`, of dft_length (default: the axis's size, or 2 * (size - 1) for IRFFT) after cutting
/// or zero-padding the signal. onesided forward keeps bins 0 .. n/2 of a real signal (RFFT);
/// onesided inverse takes those bins of a Hermitian spectrum and returns the real signal
/// (IRFFT). Computed in f32 for f16 and bf16 inputs.
void lowerDFT(NodeContext& c) {
  NodeId x0 = c.in(0);
  const ir::TensorType t = c.typeOf(x0);
  requireFloat(c, 0, "input");
  const size_t rank = t.shape.size();
  if (rank < 2)
    c.fail(fmt::format("input {} needs rank 2 or more (signal axes and the complex axis)",
                       ir::shapeStr(t.shape)));
  int64_t parts = complexParts(c, 0, "input");
  int64_t given =
      c.opset >= 20 ? (c.has(2) ? scalarInput(c, 2, "axis") : -2) : c.attrInt("axis", 1);
  int64_t r = static_cast<int64_t>(rank);
  if (given < -r || given == -1 || given >= r - 1)
    c.fail(fmt::format("axis {} is out of range for input {}: it must be in [{}, -2] or [0, {}] "
                       "(the last axis holds the complex parts)",
                       given, ir::shapeStr(t.shape), -r, r - 2));
  size_t axis = static_cast<size_t>(given < 0 ? given + r : given);
  bool inverse = flagAttr(c, "inverse", 0), onesided = flagAttr(c, "onesided", 0);
  if (onesided && !inverse && parts != 1)
    c.fail("onesided forward DFT (RFFT) takes a real input (last axis of size 1)");
  if (onesided && inverse && parts != 2)
    c.fail("onesided inverse DFT (IRFFT) takes a complex input (last axis of size 2)");
  const Dim length = t.shape[axis];
  if (!length.isStatic())
    c.unsupported(fmt::format("DFT along axis {} of symbolic size {} is not supported (the "
                              "table of cosines needs the signal's length)",
                              axis, length.str()));
  bool irfft = onesided && inverse;
  int64_t n = c.has(1) ? scalarInput(c, 1, "dft_length")
                       : (irfft ? 2 * (length.size() - 1) : length.size());
  if (n < 1)
    c.fail(fmt::format("dft_length is {}{}; it must be 1 or more", n,
                       c.has(1) ? "" : " (the default for the axis's size)"));
  Transform kind = !inverse ? Transform::Forward
                   : irfft  ? Transform::InverseReal
                            : Transform::Inverse;
  TransformShape ts{n, irfft ? n / 2 + 1 : n, parts, onesided && !inverse ? n / 2 + 1 : n,
                    irfft ? 1 : 2};

  // [others..., signal, parts] with the signal fitted to the table's length
  std::vector<int64_t> perm, back(rank);
  for (size_t i = 0; i + 1 < rank; ++i)
    if (i != axis) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(static_cast<int64_t>(axis));
  perm.push_back(r - 1);
  bool moved = axis != rank - 2;
  NodeId x = c.convertTo(x0, computeDType(t.dtype));
  if (moved) x = c.g.transpose(x, perm);
  x = fitLength(c, x, rank - 2, ts.inLen);
  NodeId y = applyTransform(c, x, kind, ts);
  bool converted = t.dtype != computeDType(t.dtype);
  if (moved) {
    for (size_t i = 0; i < rank; ++i)
      back[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    y = c.g.transpose(y, back, converted ? "" : c.name());
  }
  c.setOutput(0, c.convertTo(y, t.dtype, c.name()));
}

/// STFT: the DFT of each frame of frame_length samples, frame_step apart, weighted by the
/// window (ones when absent): [batch, frames, bins, 2] with frames = 1 + (length - frame_length)
/// / frame_step and bins frame_length / 2 + 1 when onesided (the default), frame_length
/// otherwise. frame_length defaults to the window's length, else the signal's.
void lowerSTFT(NodeContext& c) {
  NodeId x0 = c.in(0);
  const ir::TensorType t = c.typeOf(x0);
  requireFloat(c, 0, "signal");
  if (t.shape.size() != 3)
    c.fail(fmt::format("signal has shape {}; it must be [batch, length, 1 or 2]",
                       ir::shapeStr(t.shape)));
  int64_t parts = complexParts(c, 0, "signal");
  if (!t.shape[1].isStatic())
    c.unsupported(
        fmt::format("signal length {} is symbolic; STFT needs a static length", t.shape[1].str()));
  const int64_t length = t.shape[1].size();
  int64_t step = scalarInput(c, 1, "frame_step");
  if (step < 1) c.fail(fmt::format("frame_step is {}; it must be 1 or more", step));
  std::optional<int64_t> windowLength;
  if (c.has(2)) {
    const ir::TensorType wt = c.type(2);
    if (wt.dtype != t.dtype)
      c.fail(fmt::format("window has dtype {} but the signal has {}", ir::dtypeName(wt.dtype),
                         ir::dtypeName(t.dtype)));
    if (wt.shape.size() != 1 || !wt.shape[0].isStatic())
      c.fail(fmt::format("window has shape {}; it must have rank 1 and a static size",
                         ir::shapeStr(wt.shape)));
    windowLength = wt.shape[0].size();
  }
  int64_t frame = c.has(3) ? scalarInput(c, 3, "frame_length") : windowLength.value_or(length);
  if (frame < 1) c.fail(fmt::format("frame_length is {}; it must be 1 or more", frame));
  if (windowLength && *windowLength != frame)
    c.fail(fmt::format("the window has {} elements but frame_length is {}; they must match",
                       *windowLength, frame));
  if (frame > length)
    c.fail(fmt::format("frame_length {} is longer than the signal ({} samples)", frame, length));
  bool onesided = flagAttr(c, "onesided", 1);
  if (onesided && parts != 1)
    c.fail("onesided (the default) takes a real signal (last axis of size 1); give onesided=0 "
           "for a complex one");
  int64_t frames = 1 + (length - frame) / step;
  if (std::min(frames, frame) > kMaxSlices)
    c.unsupported(fmt::format("{} frames of {} samples are not supported (at most {} slices)",
                              frames, frame, kMaxSlices));

  // frames [batch, frames, frame, parts]: one slice per frame, or per position in the frames
  // (strided), whichever is fewer
  NodeId x = c.convertTo(x0, computeDType(t.dtype));
  const Dim batch = t.shape[0];
  std::vector<NodeId> pieces;
  bool perFrame = frames <= frame;
  for (int64_t i = 0; i < (perFrame ? frames : frame); ++i) {
    std::vector<int64_t> starts{0, perFrame ? i * step : i, 0}, limits{-1, 0, -1},
        strides{1, perFrame ? 1 : step, 1};
    limits[1] = perFrame ? starts[1] + frame : starts[1] + (frames - 1) * step + 1;
    NodeId piece = c.g.slice(x, starts, limits, strides);
    pieces.push_back(c.g.reshape(piece, perFrame ? Shape{batch, 1, frame, parts}
                                                 : Shape{batch, frames, 1, parts}));
  }
  NodeId framed = pieces.size() == 1 ? pieces[0] : c.g.concatenate(pieces, perFrame ? 1 : 2);
  if (c.has(2)) {
    NodeId window = c.convertTo(c.in(2), computeDType(t.dtype));
    framed =
        c.g.binary(OpKind::Mul, framed, c.g.broadcastInDim(window, c.typeOf(framed).shape, {2}));
  }
  TransformShape ts{frame, frame, parts, onesided ? frame / 2 + 1 : frame, 2};
  NodeId y = applyTransform(c, framed, Transform::Forward, ts);
  c.setOutput(0, c.convertTo(y, t.dtype, c.name()));
}

} // namespace

void addSignalOps(OperatorTable& t) {
  t["HannWindow"] = cosineWindow(kHann);
  t["HammingWindow"] = cosineWindow(kHamming);
  t["BlackmanWindow"] = cosineWindow(kBlackman);
  t["MelWeightMatrix"] = lowerMelWeightMatrix;
  t["LRN"] = lowerLRN;
  t["ReverseSequence"] = lowerReverseSequence;
  t["DFT"] = lowerDFT;
  t["STFT"] = lowerSTFT;
}

} // namespace weft::onnx
