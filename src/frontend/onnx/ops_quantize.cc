// ONNX's linear quantization operators composed from IR primitives: QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv.
//
// Quantized values are integers weft holds exactly: INT8 in i8, UINT8, UINT16 and INT16 in i32
// (heldNarrowBits); a lowering that makes one records its ONNX type (setOutputOnnxType), so
// that the operators after it know it. Quantizing divides in the input's float dtype as the
// spec does (an IEEE division, not a multiplication by a reciprocal; int32 inputs in f64, as
// numpy promotes them), rounds half to even in that dtype, adds the zero point as an integer
// and saturates to the type's range. ONNX leaves NaN undefined: weft quantizes it as 0, to the
// zero point. The float8 and 4-bit types (opsets 19 and 21) are refused: weft has none.
//
// The integer products (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv) subtract the
// zero points in int32 and multiply and sum there, as ONNX's reference does; the convolutions
// are Conv's lowering (ops_conv.cc) over those int32 operands, so their padding is a zero
// *after* the zero point is subtracted, as the reference pads.
#include <fmt/format.h>
#include <limits>
#include <optional>
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
using ir::Shape;
using ::onnx::TensorProto;

/// Fails unless the model's opset has the operator.
Lowering since(int opset, Lowering lower) {
  return [opset, lower](NodeContext& c) {
    if (c.opset < opset)
      c.fail(fmt::format("{} is defined from opset {}", c.node.op_type(), opset));
    lower(c);
  };
}

// --- element types ---------------------------------------------------------------------------

/// The float8 and 4-bit ONNX element types (TensorProto 17 to 23), which this ONNX release's
/// enum does not name.
std::optional<std::string> float8OrInt4Name(int t) {
  switch (t) {
  case 17:
    return "FLOAT8E4M3FN";
  case 18:
    return "FLOAT8E4M3FNUZ";
  case 19:
    return "FLOAT8E5M2";
  case 20:
    return "FLOAT8E5M2FNUZ";
  case 21:
    return "UINT4";
  case 22:
    return "INT4";
  case 23:
    return "FLOAT4E2M1";
  default:
    return std::nullopt;
  }
}

std::string typeName(int t) {
  auto narrow = float8OrInt4Name(t);
  return narrow ? *narrow : onnxTypeName(t);
}

/// Input i's element type as a message names it: its ONNX type where known, else its IR dtype.
std::string inputTypeName(const NodeContext& c, size_t i) {
  return c.onnxType(i) != 0 ? typeName(c.onnxType(i)) : std::string(ir::dtypeName(c.type(i).dtype));
}

/// An integer type values are quantized to, with its range.
struct QuantizedType {
  int onnx = TensorProto::UINT8;
  double lo = 0, hi = 255;
  DType held() const { return *irDTypeOf(onnx); }
};

/// The range of the ONNX integer type `t` (int8, uint8, int16, uint16); nullopt for others.
std::optional<QuantizedType> quantizedType(int t) {
  switch (t) {
  case TensorProto::UINT8:
    return QuantizedType{t, 0, 255};
  case TensorProto::INT8:
    return QuantizedType{t, -128, 127};
  case TensorProto::UINT16:
    return QuantizedType{t, 0, 65535};
  case TensorProto::INT16:
    return QuantizedType{t, -32768, 32767};
  default:
    return std::nullopt;
  }
}

/// Fails unless `t` is a quantized integer type of the node's opset (int8 and uint8; int16 and
/// uint16 from opset 21); refuses the float8 and 4-bit types. `what` names where it came from.
QuantizedType requireQuantizedType(const NodeContext& c, int t, const std::string& what) {
  if (auto name = float8OrInt4Name(t))
    c.unsupported(fmt::format("{} is {}: weft has no float8 or 4-bit types", what, *name));
  std::optional<QuantizedType> q = quantizedType(t);
  if (!q)
    c.fail(fmt::format("{} is {}; {} quantizes to int8, uint8, int16 or uint16", what, typeName(t),
                       c.node.op_type()));
  if ((t == TensorProto::INT16 || t == TensorProto::UINT16) && c.opset < 21)
    c.fail(fmt::format("{} is {}; {} quantizes to 16-bit integers from opset 21", what, typeName(t),
                       c.node.op_type()));
  return *q;
}

/// The ONNX type of the 8-bit integer operand i (MatMulInteger and QLinearMatMul take int8 or
/// uint8): INT8 is held in i8, UINT8 in i32; an i32 whose ONNX type is not known here can only
/// be UINT8.
int eightBitType(const NodeContext& c, size_t i, const std::string& what) {
  DType t = c.type(i).dtype;
  int onnx = c.onnxType(i);
  if (auto name = float8OrInt4Name(onnx))
    c.unsupported(fmt::format("{} is {}: weft has no float8 types", what, *name));
  if (t == DType::i8 && (onnx == 0 || onnx == TensorProto::INT8)) return TensorProto::INT8;
  if (t == DType::i32 && (onnx == 0 || onnx == TensorProto::UINT8)) return TensorProto::UINT8;
  c.fail(
      fmt::format("{} is {}; {} takes int8 or uint8", what, inputTypeName(c, i), c.node.op_type()));
}

/// Fails unless zero point `zp` (input i) has the element type of the operand it belongs to
/// (input `of`, of ONNX type `ofType` where known).
void requireSameQuantizedType(const NodeContext& c, size_t zp, size_t of, int ofType,
                              const std::string& zpName, const std::string& ofName) {
  int zt = c.onnxType(zp);
  bool differs = c.type(zp).dtype != c.type(of).dtype || (zt != 0 && ofType != 0 && zt != ofType);
  if (differs)
    c.fail(fmt::format("{} is {} but {} is {}; they must have one type", zpName,
                       inputTypeName(c, zp), ofName,
                       ofType != 0 ? typeName(ofType) : inputTypeName(c, of)));
}

// --- rounding and saturation -------------------------------------------------------------------

/// saturate(round(q) + zp) as type `t`: q a float (the quotient x / scale), zp an integer of
/// q's shape (absent: 0). The rounded value is widened to f32 (f16 holds no 65535 + zp) and the
/// zero point added there, exactly where the sum is in range (|round(q)| < 2^24), and past it
/// the sum is clamped all the same; NaN becomes 0 first, so that it gives the zero point.
NodeId saturateRounded(NodeContext& c, NodeId q, std::optional<NodeId> zp, QuantizedType t,
                       const std::string& name) {
  NodeId r = c.convertTo(roundHalfToEven(c, q), computeDType(c.typeOf(q).dtype));
  NodeId isNaN = c.g.compare(CompareDir::NE, r, r);
  r = c.g.select(isNaN, c.splatLike(r, 0.0), r);
  if (zp) r = c.g.binary(OpKind::Add, r, c.convertTo(*zp, c.typeOf(r).dtype));
  NodeId clamped = c.g.clamp(c.splatLike(r, t.lo), r, c.splatLike(r, t.hi));
  return c.g.convert(clamped, t.held(), name);
}

// --- granularity: how a scale and its zero point apply to x ------------------------------------

/// One value for all of x (per-tensor), one per index of `axis` (per-axis: a 1-D parameter,
/// opset 13 on), or one per `block` consecutive indices of `axis` (blocked: a parameter of x's
/// rank, opset 21).
struct Granularity {
  enum Kind { Tensor, Axis, Blocked } kind = Tensor;
  int64_t axis = 0;
  int64_t block = 0;
};

bool oneValue(const Shape& s) {
  return s.size() == 0 || (s.size() == 1 && s[0] == Dim(1));
}

/// The granularity of the scale (input 1, named `scaleName`) of a QuantizeLinear or
/// DequantizeLinear whose quantized or float operand has shape `x`, with the node's `axis` and
/// `block_size`. A one-element scale is per-tensor whatever the axis (ONNX's reference reads it
/// so); the axis is checked only where it is used.
Granularity granularityOf(NodeContext& c, const Shape& x, const std::string& scaleName) {
  const Shape s = c.type(1).shape;
  int64_t block = c.opset >= 21 ? c.attrInt("block_size", 0) : 0;
  if (block < 0) c.fail(fmt::format("block_size is {}; it must be 0 or positive", block));
  if (oneValue(s)) return {};
  if (c.opset < 13)
    c.fail(fmt::format("{} has shape {}; before opset 13 it must be a scalar (per-axis scales "
                       "are from opset 13)",
                       scaleName, ir::shapeStr(s)));
  Granularity g;
  g.axis = c.axis(c.attrInt("axis", 1), x.size(), "axis");
  const Dim& along = x[static_cast<size_t>(g.axis)];
  if (block == 0) {
    if (s.size() != 1)
      c.fail(fmt::format("{} has shape {}; it must be a scalar or 1-D (per-axis){}", scaleName,
                         ir::shapeStr(s), c.opset >= 21 ? " unless block_size is given" : ""));
    if (s[0].isStatic() && along.isStatic() && s[0] != along)
      c.fail(fmt::format("{} has {} values but axis {} of the input {} has {}", scaleName,
                         s[0].str(), g.axis, ir::shapeStr(x), along.str()));
    g.kind = Granularity::Axis;
    return g;
  }
  g.kind = Granularity::Blocked;
  g.block = block;
  if (s.size() != x.size())
    c.fail(fmt::format("{} has shape {}; blocked quantization needs the input's rank {}", scaleName,
                       ir::shapeStr(s), x.size()));
  for (size_t i = 0; i < s.size(); ++i)
    if (static_cast<int64_t>(i) != g.axis && s[i].isStatic() && x[i].isStatic() && s[i] != x[i])
      c.fail(fmt::format("{} has shape {}; for blocked quantization along axis {} it must equal "
                         "the input's {} but on that axis",
                         scaleName, ir::shapeStr(s), g.axis, ir::shapeStr(x)));
  const Dim& blocks = s[static_cast<size_t>(g.axis)];
  if (!along.isStatic() || !blocks.isStatic())
    c.unsupported(fmt::format("blocked quantization along axis {} of symbolic size (input {}, "
                              "{} {}) is not supported",
                              g.axis, ir::shapeStr(x), scaleName, ir::shapeStr(s)));
  int64_t want = (along.size() + block - 1) / block;
  if (blocks.size() != want)
    c.fail(fmt::format("{} has {} blocks along axis {}, but the input's {} values in blocks of "
                       "{} make {}",
                       scaleName, blocks.size(), g.axis, along.size(), block, want));
  return g;
}

/// Parameter p (a scale or zero point of granularity `g`) broadcast to shape x: block b's value
/// repeated over its indices, the last block cut at the end of the axis.
NodeId expandParameter(NodeContext& c, NodeId p, const Granularity& g, const Shape& x) {
  switch (g.kind) {
  case Granularity::Tensor:
    return c.broadcastTo(c.reshapeTo(p, {}), x);
  case Granularity::Axis:
    return c.g.broadcastInDim(p, x, {g.axis});
  case Granularity::Blocked:
    break;
  }
  // p [..., S, ...] broadcast to [..., S, block, ...] (x's dims off the axis, which the
  // broadcast unifies where a symbol meets a size), made [..., S * block, ...], cut to x's.
  const auto a = static_cast<size_t>(g.axis);
  Shape flat = x;
  flat[a] = Dim(c.typeOf(p).shape[a].size() * g.block);
  Shape repeated = x;
  repeated[a] = c.typeOf(p).shape[a];
  repeated.insert(repeated.begin() + static_cast<std::ptrdiff_t>(a) + 1, Dim(g.block));
  std::vector<int64_t> dims;
  for (size_t i = 0; i <= x.size(); ++i)
    if (i != a + 1) dims.push_back(static_cast<int64_t>(i));
  NodeId r = c.g.reshape(c.g.broadcastInDim(p, repeated, dims), flat);
  if (flat[a] == x[a]) return r;
  std::vector<int64_t> starts(x.size(), 0), limits(x.size(), -1), strides(x.size(), 1);
  limits[a] = x[a].size();
  return c.g.slice(r, starts, limits, strides);
}

/// The zero point (input 2) broadcast to x as the scale is, or nullopt when absent. Its shape
/// must be the scale's (one element in either rank counts as the same).
std::optional<NodeId> zeroPointFor(NodeContext& c, const Granularity& g, const Shape& x,
                                   const std::string& zpName, const std::string& scaleName) {
  if (!c.has(2)) return std::nullopt;
  const Shape zs = c.type(2).shape, ss = c.type(1).shape;
  if (zs != ss && !(oneValue(zs) && oneValue(ss)))
    c.fail(fmt::format("{} has shape {} but {} has {}; they must have one shape", zpName,
                       ir::shapeStr(zs), scaleName, ir::shapeStr(ss)));
  return expandParameter(c, c.in(2), g, x);
}

// --- QuantizeLinear and DequantizeLinear -------------------------------------------------------

/// QuantizeLinear's output type: the zero point's (an i32 whose ONNX type is not known here is
/// UINT8 before opset 21, where UINT8 is the only type weft holds in i32), else output_dtype
/// (opset 21), else UINT8. Both given: they must agree.
QuantizedType quantizeOutputType(NodeContext& c) {
  int64_t attr = c.opset >= 21 ? c.attrInt("output_dtype", 0) : 0;
  if (attr < 0 || attr > std::numeric_limits<int>::max())
    c.fail(fmt::format("output_dtype {} is no ONNX data type", attr));
  const int given = static_cast<int>(attr);
  if (!c.has(2))
    return requireQuantizedType(c, given != 0 ? given : TensorProto::UINT8,
                                given != 0 ? "output_dtype" : "the default output");
  int zp = c.onnxType(2);
  DType held = c.type(2).dtype;
  if (zp == 0 && held == DType::i8) zp = TensorProto::INT8;
  if (zp == 0 && held == DType::i32) {
    if (given != 0 && irDTypeOf(given) == DType::i32)
      zp = given;
    else if (c.opset < 21)
      zp = TensorProto::UINT8;
    else
      c.unsupported("the element type of y_zero_point is not known here (weft holds UINT8, "
                    "UINT16 and INT16 alike in int32); give output_dtype");
  }
  if (zp == 0)
    c.fail(fmt::format("y_zero_point is {}; QuantizeLinear quantizes to int8, uint8, int16 or "
                       "uint16",
                       ir::dtypeName(held)));
  if (given != 0 && given != zp)
    c.fail(fmt::format("output_dtype is {} but y_zero_point is {}; they must agree",
                       typeName(given), typeName(zp)));
  return requireQuantizedType(c, zp, "y_zero_point");
}

/// The dtype QuantizeLinear divides in: x's own for floats, f64 for int32 (numpy's promotion of
/// int32 by float32, the reference's). Fails unless x is float or int32 (float16 and bfloat16
/// from opset 19) and y_scale is float32 or, from opset 19, x's type.
DType quantizeDivisionDType(NodeContext& c) {
  DType x = c.type(0).dtype, s = c.type(1).dtype;
  bool int32 = x == DType::i32 && (c.onnxType(0) == 0 || c.onnxType(0) == TensorProto::INT32);
  bool half = x == DType::f16 || x == DType::bf16;
  if (!(x == DType::f32 || int32 || (half && c.opset >= 19)))
    c.fail(fmt::format("x is {}; QuantizeLinear takes float32 or int32 (float16 and bfloat16 "
                       "from opset 19)",
                       inputTypeName(c, 0)));
  bool int32Scale = c.onnxType(1) == 0 || c.onnxType(1) == TensorProto::INT32;
  bool scaleOk =
      s == x ? x != DType::i32 || (c.opset >= 19 && int32Scale) : int32 && s == DType::f32;
  if (!scaleOk)
    c.fail(fmt::format("y_scale is {} but x is {}; y_scale must be {}", inputTypeName(c, 1),
                       inputTypeName(c, 0),
                       c.opset >= 19 ? "of x's type (or float32 for an int32 x)" : "float32"));
  return int32 ? DType::f64 : x;
}

/// QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), per tensor, per axis or
/// per block (granularityOf). saturate (opset 19) concerns the float8 types only.
void lowerQuantizeLinear(NodeContext& c) {
  const Shape x = c.type(0).shape;
  DType division = quantizeDivisionDType(c);
  QuantizedType out = quantizeOutputType(c);
  Granularity g = granularityOf(c, x, "y_scale");
  NodeId scale = c.convertTo(expandParameter(c, c.in(1), g, x), division);
  std::optional<NodeId> zp = zeroPointFor(c, g, x, "y_zero_point", "y_scale");
  NodeId q = c.g.binary(OpKind::Div, c.convertTo(c.in(0), division), scale);
  c.setOutput(0, saturateRounded(c, q, zp, out, c.name()));
  c.setOutputOnnxType(0, out.onnx);
}

/// DequantizeLinear's input type: INT8 (held in i8), or UINT8, INT16, UINT16 or INT32 (held in
/// i32; 0 where the ONNX type is not known here: its held value is exact either way).
int dequantizeInputType(NodeContext& c) {
  DType held = c.type(0).dtype;
  int t = c.onnxType(0);
  if (auto name = float8OrInt4Name(t))
    c.unsupported(fmt::format("x is {}: weft has no float8 or 4-bit types", *name));
  bool ok = held == DType::i8 ||
            (held == DType::i32 && (t == 0 || t == TensorProto::INT32 ||
                                    (heldNarrowBits(t) != 0 && irDTypeOf(t) == DType::i32)));
  if (!ok)
    c.fail(fmt::format("x is {}; DequantizeLinear takes int8, uint8, int16, uint16 or int32",
                       inputTypeName(c, 0)));
  if (held == DType::i8) return TensorProto::INT8;
  if ((t == TensorProto::INT16 || t == TensorProto::UINT16) && c.opset < 21)
    c.fail(
        fmt::format("x is {}; DequantizeLinear takes 16-bit integers from opset 21", typeName(t)));
  return t;
}

/// DequantizeLinear: y = (x - x_zero_point) * x_scale, per tensor, per axis or per block, in
/// the scale's dtype (float32 before opset 19). The difference is exact (in i64 for int32, whose
/// zero point ONNX requires to be 0) and converted to f32 once, the product rounded once (f16
/// and bf16 scales multiply in f32 and round to their dtype, as ONNX's reference does).
void lowerDequantizeLinear(NodeContext& c) {
  const Shape x = c.type(0).shape;
  int xType = dequantizeInputType(c);
  DType scaleType = c.type(1).dtype;
  bool scaleOk = scaleType == DType::f32 ||
                 (c.opset >= 19 && (scaleType == DType::f16 || scaleType == DType::bf16));
  if (!scaleOk)
    c.fail(fmt::format("x_scale is {}; DequantizeLinear takes a float32 scale (float16 and "
                       "bfloat16 from opset 19)",
                       inputTypeName(c, 1)));
  if (c.has(2)) requireSameQuantizedType(c, 2, 0, xType, "x_zero_point", "x");
  bool wide = xType == TensorProto::INT32 || xType == 0; // an int32 minus a zero point: i64
  if (xType == TensorProto::INT32 && c.has(2))
    if (const Literal* zp = c.literal(2))
      for (size_t i = 0; i < zp->size(); ++i)
        if (zp->value(i) != 0)
          c.fail("x is INT32, whose x_zero_point must be 0 (ONNX: int32 has no zero point)");
  Granularity g = granularityOf(c, x, "x_scale");
  NodeId v = c.in(0);
  if (std::optional<NodeId> zp = zeroPointFor(c, g, x, "x_zero_point", "x_scale")) {
    DType diff = wide ? DType::i64 : DType::i32;
    v = c.g.binary(OpKind::Sub, c.convertTo(v, diff), c.convertTo(*zp, diff));
  }
  DType compute = computeDType(scaleType);
  NodeId scale = c.convertTo(expandParameter(c, c.in(1), g, x), compute);
  bool narrow = compute != scaleType;
  NodeId y = c.g.binary(OpKind::Mul, c.convertTo(v, compute), scale, narrow ? "" : c.name());
  c.setOutput(0, narrow ? c.g.convert(y, scaleType, c.name()) : y);
}

/// DynamicQuantizeLinear (float32 to uint8), as its ONNX function computes it:
///   y_scale = (max(0, max(x)) - min(0, min(x))) / 255
///   y_zero_point = round(clamp(0 - min(0, min(x)) / y_scale, 0, 255))
///   y = saturate(round(x / y_scale) + y_zero_point)
/// An all-zero (or empty) x has a range of 0: the scale is 0, as the formula gives, and the
/// zero point and y are 0 (where the formula divides 0 by 0).
void lowerDynamicQuantizeLinear(NodeContext& c) {
  NodeId x = c.in(0);
  if (c.typeOf(x).dtype != DType::f32)
    c.fail(fmt::format("x is {}; DynamicQuantizeLinear takes float32", inputTypeName(c, 0)));
  const Shape shape = c.typeOf(x).shape;
  std::vector<int64_t> all;
  for (size_t a = 0; a < shape.size(); ++a)
    all.push_back(static_cast<int64_t>(a));
  NodeId lo = all.empty() ? x : c.g.reduce(ir::ReduceKind::Min, x, all);
  NodeId hi = all.empty() ? x : c.g.reduce(ir::ReduceKind::Max, x, all);
  NodeId zero = c.g.scalar(DType::f32, 0.0);
  lo = c.g.binary(OpKind::Min, lo, zero);
  hi = c.g.binary(OpKind::Max, hi, zero);
  NodeId range = c.g.binary(OpKind::Sub, hi, lo);
  NodeId scale = c.g.binary(OpKind::Div, range, c.g.scalar(DType::f32, 255.0), c.name(1));
  NodeId initial = c.g.binary(OpKind::Sub, zero, c.g.binary(OpKind::Div, lo, scale));
  NodeId clipped = c.g.clamp(zero, initial, c.g.scalar(DType::f32, 255.0));
  NodeId empty = c.g.compare(CompareDir::EQ, scale, zero);
  NodeId zpValue = c.g.select(empty, zero, roundHalfToEven(c, clipped));
  const QuantizedType u8 = *quantizedType(TensorProto::UINT8);
  NodeId zp = c.g.convert(zpValue, u8.held(), c.name(2));
  NodeId q = c.g.binary(OpKind::Div, x, c.broadcastTo(scale, shape));
  c.setOutput(0, saturateRounded(c, q, c.broadcastTo(zp, shape), u8, c.name(0)));
  c.setOutputOnnxType(0, TensorProto::UINT8);
  c.setOutput(1, scale);
  c.setOutput(2, zp);
  c.setOutputOnnxType(2, TensorProto::UINT8);
}

// --- MatMulInteger and QLinearMatMul ---------------------------------------------------------

/// A per-row (`rows`: of matrix A [..., M, K]) or per-column (of B [..., K, N]) parameter,
/// input i: one value; an M- (N-) element vector, made [M, 1] ([N]); or an N-D tensor whose last
/// (second to last) dim is 1. The result broadcasts (numpy rules) against the matrix and the
/// product [..., M, N] alike.
NodeId perRowOrColumn(NodeContext& c, size_t i, const std::string& what, const Shape& matrix,
                      bool rows) {
  NodeId p = c.in(i);
  const Shape s = c.typeOf(p).shape;
  if (oneValue(s)) return c.reshapeTo(p, {});
  const char* along = rows ? "row" : "column";
  if (matrix.size() < 2)
    c.fail(fmt::format("{} has shape {}; a 1-D matrix {} takes one value", what, ir::shapeStr(s),
                       ir::shapeStr(matrix)));
  const Dim& count = matrix[matrix.size() - (rows ? 2 : 1)];
  if (s.size() == 1) {
    if (s[0].isStatic() && count.isStatic() && s[0] != count)
      c.fail(fmt::format("{} has {} values but the matrix {} has {} {}s", what, s[0].str(),
                         ir::shapeStr(matrix), count.str(), along));
    return rows ? c.g.reshape(p, {s[0], Dim(1)}) : p;
  }
  const Dim& unit = s[s.size() - (rows ? 1 : 2)];
  if (!unit.isOne() || !frontend::broadcastShape({s, matrix}))
    c.fail(fmt::format("{} has shape {}; per-{} values for the matrix {} have shape [..., {}]",
                       what, ir::shapeStr(s), along, ir::shapeStr(matrix), rows ? "M, 1" : "1, N"));
  return p;
}

/// Operand i (int8 or uint8) minus its zero point (input zp, when given) in i32, exact.
NodeId centered(NodeContext& c, size_t i, size_t zp, const std::string& what,
                const std::string& zpWhat, bool rows) {
  int type = eightBitType(c, i, what);
  NodeId v = c.convertTo(c.in(i), DType::i32);
  if (!c.has(zp)) return v;
  requireSameQuantizedType(c, zp, i, type, zpWhat, what);
  NodeId z = c.convertTo(perRowOrColumn(c, zp, zpWhat, c.type(i).shape, rows), DType::i32);
  auto [vb, zb] = c.broadcastPair(v, z);
  if (c.typeOf(vb).shape != c.typeOf(v).shape)
    c.fail(fmt::format("{} has shape {}, which does not broadcast to {} {}", zpWhat,
                       ir::shapeStr(c.type(zp).shape), what, ir::shapeStr(c.type(i).shape)));
  return c.g.binary(OpKind::Sub, vb, zb);
}

/// MatMulInteger: (A - a_zero_point) x (B - b_zero_point), accumulated in int32 (wrapping, as
/// ONNX allows). a_zero_point is per tensor or per row of A, b_zero_point per tensor or per
/// column of B.
void lowerMatMulInteger(NodeContext& c) {
  NodeId a = centered(c, 0, 2, "A", "a_zero_point", /*rows=*/true);
  NodeId b = centered(c, 1, 3, "B", "b_zero_point", /*rows=*/false);
  c.setOutput(0, numpyMatmul(c, a, b, c.name()));
  c.setOutputOnnxType(0, TensorProto::INT32);
}

/// QLinearMatMul: y = saturate(round(C * (a_scale * b_scale / y_scale)) + y_zero_point), C the
/// int32 product (a - a_zero_point) x (b - b_zero_point). As ONNX's reference computes it, the
/// multiplier is formed in the scales' dtype and C times it in f64 (exact for C; one rounding).
/// a's scale and zero point are per tensor or per row, b's per tensor or per column, y's per
/// tensor.
void lowerQLinearMatMul(NodeContext& c) {
  static const char* names[] = {"a",       "a_scale",      "a_zero_point", "b",
                                "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};
  for (size_t i = 0; i < 8; ++i)
    if (!c.has(i)) c.fail(fmt::format("needs input {} ({}); QLinearMatMul takes 8", i, names[i]));
  DType scaleType = c.type(1).dtype;
  for (size_t i : std::vector<size_t>{1, 4, 6}) {
    DType t = c.type(i).dtype;
    bool ok = t == DType::f32 || (c.opset >= 21 && (t == DType::f16 || t == DType::bf16));
    if (!ok || t != scaleType)
      c.fail(fmt::format("{} is {}; the scales must be float32 (float16 or bfloat16 from opset "
                         "21), all of one type",
                         names[i], inputTypeName(c, i)));
  }
  for (size_t i : std::vector<size_t>{6, 7})
    if (!oneValue(c.type(i).shape))
      c.fail(fmt::format("{} has shape {}; it must be a scalar (per tensor)", names[i],
                         ir::shapeStr(c.type(i).shape)));
  int yType = eightBitType(c, 7, "y_zero_point");
  const Shape sa = c.type(0).shape, sb = c.type(3).shape;
  NodeId a = centered(c, 0, 2, "a", "a_zero_point", /*rows=*/true);
  NodeId b = centered(c, 3, 5, "b", "b_zero_point", /*rows=*/false);
  NodeId product = numpyMatmul(c, a, b, "");
  const Shape out = c.typeOf(product).shape;
  auto [as, bs] = c.broadcastPair(perRowOrColumn(c, 1, "a_scale", sa, true),
                                  perRowOrColumn(c, 4, "b_scale", sb, false));
  NodeId ys = c.reshapeTo(c.in(6), {});
  NodeId multiplier = c.g.binary(OpKind::Div, c.g.binary(OpKind::Mul, as, bs),
                                 c.broadcastTo(ys, c.typeOf(as).shape));
  multiplier = c.broadcastTo(c.convertTo(multiplier, DType::f64), out);
  NodeId d = c.g.binary(OpKind::Mul, c.convertTo(product, DType::f64), multiplier);
  NodeId yzp = c.broadcastTo(c.reshapeTo(c.in(7), {}), out);
  c.setOutput(0, saturateRounded(c, d, yzp, *quantizedType(yType), c.name()));
  c.setOutputOnnxType(0, yType);
}

// --- ConvInteger and QLinearConv -------------------------------------------------------------

/// The convolution's input x (input i, int8 or uint8) less its zero point (input zp, when
/// given: one value, of x's type) in i32.
NodeId centeredInput(NodeContext& c, size_t i, size_t zp, const std::string& what,
                     const std::string& zpWhat) {
  int type = eightBitType(c, i, what);
  NodeId v = c.convertTo(c.in(i), DType::i32);
  if (!c.has(zp)) return v;
  requireSameQuantizedType(c, zp, i, type, zpWhat, what);
  if (!oneValue(c.type(zp).shape))
    c.fail(fmt::format("{} has shape {}; it must be a scalar (per tensor)", zpWhat,
                       ir::shapeStr(c.type(zp).shape)));
  NodeId z = c.convertTo(c.reshapeTo(c.in(zp), {}), DType::i32);
  return c.g.binary(OpKind::Sub, v, c.broadcastTo(z, c.typeOf(v).shape));
}

/// A per-tensor or per-output-channel parameter (input i) of the weights w [M, C/group, k...]:
/// one value, made a scalar, or an M-element vector.
NodeId perOutputChannel(NodeContext& c, size_t i, const std::string& what, const Shape& w) {
  NodeId p = c.in(i);
  const Shape s = c.typeOf(p).shape;
  if (oneValue(s)) return c.reshapeTo(p, {});
  if (s.size() != 1 || w.empty() || !(s[0] == w[0]))
    c.fail(fmt::format("{} has shape {}; it must be a scalar or hold one value per output "
                       "channel ([{}], dim 0 of w {})",
                       what, ir::shapeStr(s), w.empty() ? "M" : w[0].str(), ir::shapeStr(w)));
  return p;
}

/// The weights w (input i, int8 or uint8) less their zero point (input zp, when given: one
/// value or one per output channel, of w's type) in i32.
NodeId centeredWeights(NodeContext& c, size_t i, size_t zp, const std::string& what,
                       const std::string& zpWhat) {
  int type = eightBitType(c, i, what);
  NodeId v = c.convertTo(c.in(i), DType::i32);
  if (!c.has(zp)) return v;
  requireSameQuantizedType(c, zp, i, type, zpWhat, what);
  const Shape ws = c.typeOf(v).shape;
  NodeId z = c.convertTo(perOutputChannel(c, zp, zpWhat, ws), DType::i32);
  z = c.typeOf(z).shape.empty() ? c.broadcastTo(z, ws) : c.g.broadcastInDim(z, ws, {0});
  return c.g.binary(OpKind::Sub, v, z);
}

/// ConvInteger: Conv (every attribute of Conv's) of (x - x_zero_point) by (w - w_zero_point),
/// summed in int32 (wrapping, as ONNX allows). x_zero_point is per tensor, w_zero_point per
/// tensor or per output channel.
void lowerConvInteger(NodeContext& c) {
  NodeId x = centeredInput(c, 0, 2, "x", "x_zero_point");
  NodeId w = centeredWeights(c, 1, 3, "w", "w_zero_point");
  c.setOutput(0, convolution(c, x, w, DType::i32, std::nullopt, c.name()));
  c.setOutputOnnxType(0, TensorProto::INT32);
}

/// QLinearConv: y = saturate(round(C * (x_scale * w_scale / y_scale)) + y_zero_point), C the
/// int32 convolution of (x - x_zero_point) by (w - w_zero_point) plus the int32 bias B (per
/// output channel) when given. As for QLinearMatMul (and ONNX's reference), the multiplier is
/// formed in float32 and C times it in f64. w_scale and w_zero_point are per tensor or per
/// output channel; the others are per tensor.
void lowerQLinearConv(NodeContext& c) {
  static const char* names[] = {"x",       "x_scale",      "x_zero_point", "w",
                                "w_scale", "w_zero_point", "y_scale",      "y_zero_point"};
  for (size_t i = 0; i < 8; ++i)
    if (!c.has(i))
      c.fail(fmt::format("needs input {} ({}); QLinearConv takes 8 or 9", i, names[i]));
  for (size_t i : std::vector<size_t>{1, 4, 6})
    if (c.type(i).dtype != DType::f32)
      c.fail(
          fmt::format("{} is {}; QLinearConv's scales are float32", names[i], inputTypeName(c, i)));
  for (size_t i : std::vector<size_t>{1, 6, 7})
    if (!oneValue(c.type(i).shape))
      c.fail(fmt::format("{} has shape {}; it must be a scalar (per tensor)", names[i],
                         ir::shapeStr(c.type(i).shape)));
  int yType = eightBitType(c, 7, "y_zero_point");
  NodeId x = centeredInput(c, 0, 2, "x", "x_zero_point");
  NodeId w = centeredWeights(c, 3, 5, "w", "w_zero_point");
  std::optional<NodeId> bias;
  if (c.has(8)) {
    int bt = c.onnxType(8);
    if (c.type(8).dtype != DType::i32 || (bt != 0 && bt != TensorProto::INT32))
      c.fail(fmt::format("B is {}; QLinearConv's bias is int32", inputTypeName(c, 8)));
    bias = c.in(8);
  }
  NodeId sum = convolution(c, x, w, DType::i32, bias, "");
  const Shape out = c.typeOf(sum).shape;
  NodeId ws = perOutputChannel(c, 4, "w_scale", c.type(3).shape);
  NodeId xs = c.broadcastTo(c.reshapeTo(c.in(1), {}), c.typeOf(ws).shape);
  NodeId ys = c.broadcastTo(c.reshapeTo(c.in(6), {}), c.typeOf(ws).shape);
  NodeId multiplier = c.g.binary(OpKind::Div, c.g.binary(OpKind::Mul, xs, ws), ys);
  multiplier = c.convertTo(multiplier, DType::f64);
  multiplier = c.typeOf(multiplier).shape.empty() ? c.broadcastTo(multiplier, out)
                                                  : c.g.broadcastInDim(multiplier, out, {1});
  NodeId d = c.g.binary(OpKind::Mul, c.convertTo(sum, DType::f64), multiplier);
  NodeId yzp = c.broadcastTo(c.reshapeTo(c.in(7), {}), out);
  c.setOutput(0, saturateRounded(c, d, yzp, *quantizedType(yType), c.name()));
  c.setOutputOnnxType(0, yType);
}

} // namespace

void addQuantizeOps(OperatorTable& t) {
  t["QuantizeLinear"] = since(10, lowerQuantizeLinear);
  t["DequantizeLinear"] = since(10, lowerDequantizeLinear);
  t["DynamicQuantizeLinear"] = since(11, lowerDynamicQuantizeLinear);
  t["MatMulInteger"] = since(10, lowerMatMulInteger);
  t["QLinearMatMul"] = since(10, lowerQLinearMatMul);
  t["ConvInteger"] = since(10, lowerConvInteger);
  t["QLinearConv"] = since(10, lowerQLinearConv);
}

} // namespace weft::onnx
