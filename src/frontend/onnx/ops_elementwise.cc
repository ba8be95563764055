// Elementwise ONNX operators: arithmetic, math functions, activations, comparisons, logic,
// the bitwise operators, Cast, Clip, Where, the variadic Max/Min/Sum/Mean, Identity and
// (inference) Dropout. Implicit broadcasting becomes broadcast_in_dim; activations become a few
// IR primitives.
#include <fmt/format.h>
#include <limits>

#include "frontend/onnx/importer.h"

namespace weft::onnx {

/// Before opset 7, ONNX broadcast only with broadcast=1, aligning B at `axis` (default:
/// trailing), never A.
std::pair<ir::NodeId, ir::NodeId> binaryOperands(NodeContext& c) {
  ir::NodeId a = c.in(0), b = c.in(1);
  if (c.opset >= 7) return c.broadcastPair(a, b);
  ir::Shape sa = c.typeOf(a).shape;
  ir::Shape sb = c.typeOf(b).shape;
  if (!c.attrInt("broadcast", 0)) {
    if (sa != sb)
      c.fail(fmt::format(
          "operands have shapes {} and {}; before opset 7 they must match unless broadcast=1",
          ir::shapeStr(sa), ir::shapeStr(sb)));
    return {a, b};
  }
  if (!c.hasAttr("axis")) return {a, c.broadcastTo(b, sa)};
  int64_t axis = c.axis(c.attrInt("axis", 0), sa.size(), "axis");
  if (axis + static_cast<int64_t>(sb.size()) > static_cast<int64_t>(sa.size()))
    c.fail(fmt::format("operand B {} does not fit into A {} at axis {}", ir::shapeStr(sb),
                       ir::shapeStr(sa), axis));
  std::vector<int64_t> dims;
  for (size_t i = 0; i < sb.size(); ++i)
    dims.push_back(axis + static_cast<int64_t>(i));
  return {a, c.g.broadcastInDim(b, sa, dims)};
}

void requireSameDType(NodeContext& c, ir::NodeId a, ir::NodeId b) {
  if (c.typeOf(a).dtype != c.typeOf(b).dtype)
    c.fail(fmt::format("operands have dtypes {} and {}; ONNX requires one type (insert a Cast)",
                       ir::dtypeName(c.typeOf(a).dtype), ir::dtypeName(c.typeOf(b).dtype)));
}

namespace {

using ir::NodeId;
using ir::OpKind;

Lowering binary(OpKind kind) {
  return [kind](NodeContext& c) {
    auto [a, b] = binaryOperands(c);
    requireSameDType(c, a, b);
    c.setOutput(0, c.g.binary(kind, a, b, c.name()));
  };
}

Lowering compare(ir::CompareDir dir) {
  return [dir](NodeContext& c) {
    auto [a, b] = binaryOperands(c);
    requireSameDType(c, a, b);
    c.setOutput(0, c.g.compare(dir, a, b, c.name()));
  };
}

Lowering unary(OpKind kind) {
  return [kind](NodeContext& c) { c.setOutput(0, c.g.unary(kind, c.in(0), c.name())); };
}

/// Div; UINT64 operands divide as unsigned.
void lowerDiv(NodeContext& c) {
  auto [a, b] = binaryOperands(c);
  requireSameDType(c, a, b);
  if (isUnsigned64(c.onnxType(0)) || isUnsigned64(c.onnxType(1)))
    c.setOutput(0, unsignedDivide(c, a, b, c.name()));
  else
    c.setOutput(0, c.g.binary(OpKind::Div, a, b, c.name()));
}

/// Abs and Sign: a UINT64 is its own absolute value, and its sign is 0 or 1.
void lowerAbs(NodeContext& c) {
  NodeId x = c.in(0);
  c.setOutput(0, isUnsigned64(c.onnxType(0)) ? x : c.g.unary(OpKind::Abs, x, c.name()));
}

void lowerSign(NodeContext& c) {
  NodeId x = c.in(0);
  if (!isUnsigned64(c.onnxType(0))) {
    c.setOutput(0, c.g.unary(OpKind::Sign, x, c.name()));
    return;
  }
  NodeId nonzero = c.g.compare(ir::CompareDir::NE, x, c.splatLike(x, 0));
  c.setOutput(0, c.g.convert(nonzero, ir::DType::i64, c.name()));
}

/// An operand of Pow as a float of dtype t (a UINT64 as unsigned).
NodeId powOperand(NodeContext& c, NodeId v, size_t i, ir::DType t) {
  return isUnsigned64(c.onnxType(i)) ? unsignedToFloat(c, v, t) : c.convertTo(v, t);
}

/// Pow: the exponent takes the base's dtype; integer bases are computed in f64 (exact for the
/// results an integer holds) and converted back, since the IR's pow takes floats.
void lowerPow(NodeContext& c) {
  auto [x, y] = binaryOperands(c);
  ir::DType t = c.typeOf(x).dtype;
  if (ir::isFloat(t)) {
    c.setOutput(0, c.g.binary(OpKind::Pow, x, powOperand(c, y, 1, t), c.name()));
    return;
  }
  NodeId p = c.g.binary(OpKind::Pow, powOperand(c, x, 0, ir::DType::f64),
                        powOperand(c, y, 1, ir::DType::f64));
  c.setOutput(0, isUnsigned64(c.onnxType(0)) ? floatToUnsigned64(c, p, c.name())
                                             : c.g.convert(p, t, c.name()));
}

void lowerRelu(NodeContext& c) {
  NodeId x = c.in(0);
  c.setOutput(0, c.g.binary(OpKind::Max, x, c.splatLike(x, 0.0), c.name()));
}

// x < 0 ? alpha * x : x
void lowerLeakyRelu(NodeContext& c) {
  NodeId x = c.in(0);
  double alpha = c.attrFloat("alpha", 0.01f);
  NodeId neg = c.g.compare(ir::CompareDir::LT, x, c.splatLike(x, 0.0));
  NodeId scaled = c.g.binary(OpKind::Mul, x, c.splatLike(x, alpha));
  c.setOutput(0, c.g.select(neg, scaled, x, c.name()));
}

// x < 0 ? alpha * (exp(x) - 1) : x
void lowerElu(NodeContext& c) {
  NodeId x = c.in(0);
  double alpha = c.attrFloat("alpha", 1.0f);
  NodeId neg = c.g.compare(ir::CompareDir::LT, x, c.splatLike(x, 0.0));
  NodeId em1 = c.g.binary(OpKind::Sub, c.g.unary(OpKind::Exp, x), c.splatLike(x, 1.0));
  NodeId scaled = c.g.binary(OpKind::Mul, em1, c.splatLike(x, alpha));
  c.setOutput(0, c.g.select(neg, scaled, x, c.name()));
}

// gamma * (x > 0 ? x : alpha * exp(x) - alpha)
void lowerSelu(NodeContext& c) {
  NodeId x = c.in(0);
  double alpha = c.attrFloat("alpha", 1.67326319217681884765625f);
  double gamma = c.attrFloat("gamma", 1.05070102214813232421875f);
  NodeId pos = c.g.compare(ir::CompareDir::GT, x, c.splatLike(x, 0.0));
  NodeId ae = c.g.binary(OpKind::Mul, c.g.unary(OpKind::Exp, x), c.splatLike(x, alpha));
  NodeId negPart = c.g.binary(OpKind::Sub, ae, c.splatLike(x, alpha));
  NodeId y = c.g.select(pos, x, negPart);
  c.setOutput(0, c.g.binary(OpKind::Mul, y, c.splatLike(x, gamma), c.name()));
}

// clamp(alpha * x + beta, 0, 1)
void lowerHardSigmoid(NodeContext& c) {
  NodeId x = c.in(0);
  double alpha = c.attrFloat("alpha", 0.2f), beta = c.attrFloat("beta", 0.5f);
  NodeId lin = c.g.binary(OpKind::Add, c.g.binary(OpKind::Mul, x, c.splatLike(x, alpha)),
                          c.splatLike(x, beta));
  c.setOutput(0, c.g.clamp(c.splatLike(x, 0.0), lin, c.splatLike(x, 1.0), c.name()));
}

// log(exp(x) + 1), as ONNX defines it
void lowerSoftplus(NodeContext& c) {
  NodeId x = c.in(0);
  NodeId e1 = c.g.binary(OpKind::Add, c.g.unary(OpKind::Exp, x), c.splatLike(x, 1.0));
  c.setOutput(0, c.g.unary(OpKind::Log, e1, c.name()));
}

/// Gelu (opset 20): x * Φ(x) with the exact erf form (approximate = "none") or the tanh
/// approximation ("tanh"), the same graphs the JSON gelu and gelu_tanh build.
void lowerGelu(NodeContext& c) {
  if (c.opset < 20) c.fail("Gelu is defined from opset 20");
  NodeId x = c.in(0);
  if (!ir::isFloat(c.typeOf(x).dtype))
    c.fail(fmt::format("input is {}; Gelu takes floats", ir::dtypeName(c.typeOf(x).dtype)));
  std::string approximate = c.attrString("approximate", "none");
  if (approximate == "none")
    c.setOutput(0, frontend::gelu(c.site(), x, c.name()));
  else if (approximate == "tanh")
    c.setOutput(0, frontend::geluTanh(c.site(), x, c.name()));
  else
    c.fail(fmt::format("approximate \"{}\" is not one of none, tanh", approximate));
}

/// Max, Min, Sum (and Mean): a left fold over any number of inputs, all broadcast together.
Lowering variadic(OpKind kind, bool mean = false) {
  return [kind, mean](NodeContext& c) {
    if (c.numInputs() == 0) c.fail("needs at least one input");
    ir::Shape shape = c.type(0).shape;
    for (size_t i = 1; i < c.numInputs(); ++i)
      shape = c.broadcastShape(shape, c.type(i).shape);
    NodeId acc = c.broadcastTo(c.in(0), shape);
    for (size_t i = 1; i < c.numInputs(); ++i) {
      NodeId x = c.broadcastTo(c.in(i), shape);
      requireSameDType(c, acc, x);
      bool last = i + 1 == c.numInputs() && !mean;
      acc = c.g.binary(kind, acc, x, last ? c.name() : "");
    }
    if (mean)
      acc = c.g.binary(OpKind::Div, acc, c.splatLike(acc, static_cast<double>(c.numInputs())),
                       c.name());
    c.setOutput(0, acc); // with one input (and not Mean), the input itself
  };
}

void lowerWhere(NodeContext& c) {
  NodeId cond = c.in(0), x = c.in(1), y = c.in(2);
  if (c.typeOf(cond).dtype != ir::DType::boolean) c.fail("input 0 (condition) must be bool");
  ir::Shape shape = c.broadcastShape(c.broadcastShape(c.typeOf(cond).shape, c.typeOf(x).shape),
                                     c.typeOf(y).shape);
  requireSameDType(c, x, y);
  c.setOutput(0, c.g.select(c.broadcastTo(cond, shape), c.broadcastTo(x, shape),
                            c.broadcastTo(y, shape), c.name()));
}

} // namespace

int heldNarrowBits(int onnxType) {
  switch (onnxType) {
  case ::onnx::TensorProto::UINT8:
    return 8;
  case ::onnx::TensorProto::UINT16:
  case ::onnx::TensorProto::INT16:
    return 16;
  case ::onnx::TensorProto::UINT32:
    return 32;
  default:
    return 0;
  }
}

/// ONNX Cast to a fixed-point type keeps the low bits of an integer, and truncates a float
/// first. The types weft holds in a wider integer (UINT8, UINT16, INT16 in i32, UINT32 in i64)
/// get those bits as the narrow type reads them: 300 → UINT8 44, -1 → 255, 65543 → 7; for
/// INT16, ((x + 2^15) & 0xFFFF) - 2^15 sign-extends the low 16 bits. UINT64 is i64 with the
/// same bits (2^64 - 1 reads -1), converted to and from floats as unsigned (unsigned64.cc).
NodeId castTo(NodeContext& c, NodeId x, int to, const std::string& name, int from) {
  ir::DType t = *irDTypeOf(to);
  ir::DType held = c.typeOf(x).dtype;
  if (isUnsigned64(from) && ir::isFloat(t)) return unsignedToFloat(c, x, t, name);
  if (isUnsigned64(to) && ir::isFloat(held)) return floatToUnsigned64(c, x, name);
  int bits = heldNarrowBits(to);
  if (bits == 0 || held == ir::DType::boolean) // 0 and 1 are in every range
    return held == t ? x : c.g.convert(x, t, name);
  if (ir::isFloat(held)) x = c.g.convert(x, ir::DType::i64); // truncates toward zero
  x = c.convertTo(x, t); // an i64 into i32 keeps its low 32 bits
  double mask = static_cast<double>((uint64_t(1) << bits) - 1);
  if (to != ::onnx::TensorProto::INT16)
    return c.g.binary(OpKind::And, x, c.splatLike(x, mask), name);
  NodeId shifted = c.g.binary(OpKind::Add, x, c.splatLike(x, 32768));
  NodeId low = c.g.binary(OpKind::And, shifted, c.splatLike(x, mask));
  return c.g.binary(OpKind::Sub, low, c.splatLike(x, 32768), name);
}

namespace {

void lowerCast(NodeContext& c) {
  int64_t to = c.requireAttrInt("to");
  // Checked before narrowing to TensorProto's int enum (2^32 + 1 is not FLOAT).
  if (to < 0 || to > std::numeric_limits<int>::max() ||
      !::onnx::TensorProto::DataType_IsValid(static_cast<int>(to)))
    c.fail(fmt::format("attribute \"to\" is {}, which is no ONNX data type", to));
  auto t = irDTypeOf(static_cast<int>(to));
  if (!t)
    c.unsupported(fmt::format("Cast to {} is not supported (weft has no such dtype)",
                              onnxTypeName(static_cast<int>(to))));
  c.setOutput(0, castTo(c, c.in(0), static_cast<int>(to), c.name(), c.onnxType(0)));
  c.setOutputOnnxType(0, static_cast<int>(to));
}

/// Clip: min/max are attributes before opset 11 and optional inputs from 11 on. Clip-6 to -10
/// default them to the lowest and highest float32 ONNX states (-3.402823e+38, 3.402823e+38:
/// -inf becomes -3.402823e+38); in Clip-1 and from opset 11 an absent bound is no bound at all.
/// The result is max(x, min) then min(.., max) as given.
void lowerClip(NodeContext& c) {
  NodeId x = c.in(0);
  std::optional<NodeId> lo, hi;
  if (c.opset < 6) {
    if (c.hasAttr("min")) lo = c.splatLike(x, c.attrFloat("min", 0));
    if (c.hasAttr("max")) hi = c.splatLike(x, c.attrFloat("max", 0));
  } else if (c.opset < 11) {
    constexpr float kDefaultBound = 3.402823e+38f;
    lo = c.splatLike(x, c.attrFloat("min", -kDefaultBound));
    hi = c.splatLike(x, c.attrFloat("max", kDefaultBound));
  } else {
    auto bound = [&](size_t i) -> std::optional<NodeId> {
      if (!c.has(i)) return std::nullopt;
      if (c.type(i).shape.size() != 0) c.fail(fmt::format("input {} must be a scalar", i));
      NodeId b = c.in(i);
      if (c.typeOf(b).dtype != c.typeOf(x).dtype)
        c.fail(fmt::format("input {} must have the dtype of input 0", i));
      return c.broadcastTo(b, c.typeOf(x).shape);
    };
    lo = bound(1);
    hi = bound(2);
  }
  if (lo && hi) {
    c.setOutput(0, c.g.clamp(*lo, x, *hi, c.name()));
    return;
  }
  NodeId y = x;
  if (lo) y = c.g.binary(OpKind::Max, y, *lo, c.name());
  if (hi) y = c.g.binary(OpKind::Min, y, *hi, c.name());
  c.setOutput(0, y);
}

/// The ONNX integer type of a bitwise operator's input i: the recorded one, else the one the
/// IR dtype holds by itself. Fails for floats and bools, which the operators do not take.
int bitwiseType(NodeContext& c, size_t i) {
  ir::DType t = c.type(i).dtype;
  if (!ir::isInteger(t))
    c.fail(fmt::format("input {} has dtype {}; {} takes integer tensors", i, ir::dtypeName(t),
                       c.node.op_type()));
  if (int known = c.onnxType(i)) return known;
  switch (t) {
  case ir::DType::i8:
    return ::onnx::TensorProto::INT8;
  case ir::DType::i32:
    return ::onnx::TensorProto::INT32;
  default:
    return ::onnx::TensorProto::INT64;
  }
}

/// A binary bitwise operator's operands, numpy-broadcast, and their one ONNX type.
struct BitwiseOperands {
  NodeId a = -1, b = -1;
  int type = 0;
};

BitwiseOperands bitwiseOperands(NodeContext& c) {
  if (c.opset < 18) c.fail(fmt::format("{} is defined from opset 18", c.node.op_type()));
  int ta = bitwiseType(c, 0), tb = bitwiseType(c, 1);
  if (ta != tb)
    c.fail(fmt::format("A is {} but B is {}; {} takes one integer type", onnxTypeName(ta),
                       onnxTypeName(tb), c.node.op_type()));
  auto [a, b] = binaryOperands(c);
  requireSameDType(c, a, b);
  return {a, b, ta};
}

/// BitwiseAnd and BitwiseOr (opset 18): the IR's and/or, bitwise on integers. On the values
/// weft holds widened (UINT8 in i32 as 0..255, INT16 sign-extended) they stay in the narrow
/// type's range, and UINT64's bits are its own; the result records the inputs' ONNX type.
Lowering bitwise(OpKind kind) {
  return [kind](NodeContext& c) {
    BitwiseOperands o = bitwiseOperands(c);
    c.setOutput(0, c.g.binary(kind, o.a, o.b, c.name()));
    c.setOutputOnnxType(0, o.type);
  };
}

/// BitwiseXor (opset 18): the IR has no xor; a xor b is (a or b) - (a and b): the bits of
/// a and b are a subset of those of a or b, so the subtraction borrows nothing and is exact,
/// and stays in a widened narrow type's range as and/or do.
void lowerBitwiseXor(NodeContext& c) {
  BitwiseOperands o = bitwiseOperands(c);
  NodeId any = c.g.binary(OpKind::Or, o.a, o.b), both = c.g.binary(OpKind::And, o.a, o.b);
  c.setOutput(0, c.g.binary(OpKind::Sub, any, both, c.name()));
  c.setOutputOnnxType(0, o.type);
}

/// BitwiseNot (opset 18): the IR has no bitwise not; ~x is -1 - x in two's complement, exact
/// (it never overflows), and UINT64's bits are its own. For the types weft holds widened the
/// low bits are taken as the narrow type reads them (castTo): UINT8's ~x is 255 - x, INT16's
/// stays sign-extended.
void lowerBitwiseNot(NodeContext& c) {
  if (c.opset < 18) c.fail("BitwiseNot is defined from opset 18");
  int type = bitwiseType(c, 0);
  NodeId x = c.in(0);
  bool held = heldNarrowBits(type) != 0;
  NodeId y = c.g.binary(OpKind::Sub, c.splatLike(x, -1.0), x, held ? "" : c.name());
  c.setOutput(0, held ? castTo(c, y, type, c.name()) : y);
  c.setOutputOnnxType(0, type);
}

void lowerIdentity(NodeContext& c) {
  c.setOutput(0, c.in(0));
}

/// Dropout in inference: the identity, with an all-true mask. Training mode is random and
/// is rejected unless the ratio is a known 0.
void lowerDropout(NodeContext& c) {
  if (c.opset >= 12 && c.has(2)) {
    if (c.constScalar(2, "training_mode") != 0.0) {
      bool zeroRatio = c.has(1) && c.constScalar(1, "ratio") == 0.0;
      if (!zeroRatio) c.unsupported("Dropout in training mode is random and not supported");
    }
  }
  if (c.opset < 7 && c.attrInt("is_test", 0) == 0)
    c.unsupported("Dropout with is_test=0 (training mode) is random and not supported");
  NodeId x = c.in(0);
  c.setOutput(0, x);
  if (c.wantsOutput(1)) {
    ir::DType maskType = c.opset >= 10 ? ir::DType::boolean : c.typeOf(x).dtype;
    c.setOutput(1, c.splat(maskType, c.typeOf(x).shape, 1.0));
  }
}

} // namespace

void addElementwiseOps(OperatorTable& t) {
  t["Add"] = binary(OpKind::Add);
  t["Sub"] = binary(OpKind::Sub);
  t["Mul"] = binary(OpKind::Mul);
  t["Div"] = lowerDiv;
  t["Pow"] = lowerPow;
  t["And"] = binary(OpKind::And);
  t["Or"] = binary(OpKind::Or);
  t["BitwiseAnd"] = bitwise(OpKind::And);
  t["BitwiseOr"] = bitwise(OpKind::Or);
  t["BitwiseXor"] = lowerBitwiseXor;
  t["BitwiseNot"] = lowerBitwiseNot;
  t["Equal"] = compare(ir::CompareDir::EQ);
  t["Less"] = compare(ir::CompareDir::LT);
  t["Greater"] = compare(ir::CompareDir::GT);
  t["LessOrEqual"] = compare(ir::CompareDir::LE);
  t["GreaterOrEqual"] = compare(ir::CompareDir::GE);
  t["Neg"] = unary(OpKind::Neg);
  t["Abs"] = lowerAbs;
  t["Exp"] = unary(OpKind::Exp);
  t["Log"] = unary(OpKind::Log);
  t["Sqrt"] = unary(OpKind::Sqrt);
  t["Reciprocal"] = unary(OpKind::Reciprocal);
  t["Tanh"] = unary(OpKind::Tanh);
  t["Sigmoid"] = unary(OpKind::Sigmoid);
  t["Erf"] = unary(OpKind::Erf);
  t["Sin"] = unary(OpKind::Sin);
  t["Cos"] = unary(OpKind::Cos);
  t["Floor"] = unary(OpKind::Floor);
  t["Ceil"] = unary(OpKind::Ceil);
  t["Sign"] = lowerSign;
  t["Not"] = unary(OpKind::Not);
  t["Relu"] = lowerRelu;
  t["LeakyRelu"] = lowerLeakyRelu;
  t["Elu"] = lowerElu;
  t["Selu"] = lowerSelu;
  t["HardSigmoid"] = lowerHardSigmoid;
  t["Softplus"] = lowerSoftplus;
  t["Gelu"] = lowerGelu;
  t["Max"] = variadic(OpKind::Max);
  t["Min"] = variadic(OpKind::Min);
  t["Sum"] = variadic(OpKind::Add);
  t["Mean"] = variadic(OpKind::Add, /*mean=*/true);
  t["Where"] = lowerWhere;
  t["Cast"] = lowerCast;
  t["Clip"] = lowerClip;
  t["Identity"] = lowerIdentity;
  t["Dropout"] = lowerDropout;
}

} // namespace weft::onnx
