// Elementwise ONNX operators the IR has no op for, composed from its primitives: Mod, Xor,
// IsInf, IsNaN, Round, the activations Celu, HardSwish, Softsign, Shrink, PRelu and
// ThresholdedRelu, CastLike, the trigonometric and hyperbolic functions Tan, Asin, Acos,
// Atan, Sinh, Cosh, Asinh, Acosh and Atanh, and the determinant Det.
//
// The functions are computed in the input's dtype for f32 and f64, and in f32 for f16 and bf16
// (rounded to the dtype once, at the end). Each is built for accuracy over its whole domain,
// not only at typical inputs: no cancellation near the zeros, no overflow of an intermediate
// where the result is finite, and the IEEE special values exact (+-0 with its sign, +-inf, NaN,
// NaN outside the domain). Worst errors in ulps of the exact result (0.5 = correctly rounded),
// measured against the C library's long double functions over random bit patterns (every
// binade, subnormals included), uniform samples of [-5, 5] and dense neighbourhoods of +-1, of
// every point where a lowering switches formulas, of the overflow thresholds and of tan's poles
// (~45,000 points per dtype): on the reference interpreter (test/onnx/ops_math_test.cc, which
// keeps these as bounds; its exp, log, sin and cos are correctly rounded), and on the
// simulator (`weft run`, the worse of libdevice and weft's own math, math_algorithms.h, whose
// exp, log, sin and cos add up to 2 ulp each):
//
//             f32 interpreter  f32 simulator  f64 interpreter  f64 simulator
//   Tan            1.8             2.5             1.8             2.9
//   Asin           2.2             2.1             2.7             1.8
//   Acos           1.8             1.9             2.0             2.0
//   Atan           1.4             1.4             1.2             1.2
//   Sinh           1.5             1.6             1.5             1.4
//   Cosh           1.0             1.4             1.1             1.2
//   Asinh          2.2             3.1             2.1             2.8
//   Acosh          2.7             2.3             2.3             3.3
//   Atanh          2.5             2.5             2.3             3.3
// f16 and bf16 results are the f32 ones rounded once: correctly rounded but for rare double
// roundings.
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/onnx/importer.h"

namespace weft::onnx {

namespace {

using ir::CompareDir;
using ir::DType;
using ir::NodeId;
using ir::OpKind;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A real number as the unevaluated sum hi + lo of two doubles (|lo| <= ulp(hi) / 2): enough
/// for an f64 result to lose nothing to the rounding of a constant it adds.
struct DoubleDouble {
  double hi, lo;
};
constexpr DoubleDouble kAtanHalf = {0.4636476090008061, 2.2698777452961687e-17}; // atan(1/2)
constexpr DoubleDouble kPiOver4 = {0.7853981633974483, 3.061616997868383e-17};
constexpr DoubleDouble kAtanTwo = {1.1071487177940904, 9.40447137356638e-17}; // atan(2)
constexpr DoubleDouble kPiOver2 = {1.5707963267948966, 6.123233995736766e-17};
constexpr double kLn2 = 0.6931471805599453;
constexpr double kHalfExp8 = 1490.4789935208642; // e^8 / 2

/// Builds a formula over values of one shape and float dtype, each constant a splat of that
/// shape and dtype, so the functions below read like the formulas they compute. `name` names
/// an op that gives a node its ONNX output (the last op of a lowering).
class Formula {
public:
  Formula(NodeContext& c, NodeId like) : c_(c), like_(like), dtype_(c.typeOf(like).dtype) {}

  /// f64: the constants and polynomials of double precision; otherwise f32's.
  bool wide() const { return dtype_ == DType::f64; }
  /// `v` as a constant (rounded to the dtype), made once per formula.
  NodeId k(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    auto [it, fresh] = constants_.try_emplace(bits, -1);
    if (fresh) it->second = c_.splatLike(like_, v);
    return it->second;
  }
  /// `v` split for the dtype: hi is v rounded to it, lo the rest (rounded when used).
  DoubleDouble split(DoubleDouble v) const {
    if (wide()) return v;
    auto hi = static_cast<double>(static_cast<float>(v.hi));
    return {hi, (v.hi - hi) + v.lo}; // v.hi - hi is exact
  }

  NodeId add(NodeId a, NodeId b, const std::string& n = "") { return bin(OpKind::Add, a, b, n); }
  NodeId sub(NodeId a, NodeId b, const std::string& n = "") { return bin(OpKind::Sub, a, b, n); }
  NodeId mul(NodeId a, NodeId b, const std::string& n = "") { return bin(OpKind::Mul, a, b, n); }
  NodeId div(NodeId a, NodeId b, const std::string& n = "") { return bin(OpKind::Div, a, b, n); }
  NodeId rem(NodeId a, NodeId b) { return bin(OpKind::Rem, a, b, ""); }
  NodeId max(NodeId a, NodeId b) { return bin(OpKind::Max, a, b, ""); }
  NodeId min(NodeId a, NodeId b) { return bin(OpKind::Min, a, b, ""); }
  NodeId neg(NodeId a) { return un(OpKind::Neg, a); }
  NodeId abs(NodeId a) { return un(OpKind::Abs, a); }
  NodeId sqrt(NodeId a) { return un(OpKind::Sqrt, a); }
  NodeId exp(NodeId a) { return un(OpKind::Exp, a); }
  NodeId log(NodeId a) { return un(OpKind::Log, a); }
  NodeId floor(NodeId a) { return un(OpKind::Floor, a); }
  NodeId reciprocal(NodeId a) { return un(OpKind::Reciprocal, a); }
  NodeId un(OpKind kind, NodeId a, const std::string& n = "") { return c_.g.unary(kind, a, n); }
  NodeId bin(OpKind kind, NodeId a, NodeId b, const std::string& n) {
    return c_.g.binary(kind, a, b, n);
  }
  NodeId cmp(CompareDir d, NodeId a, NodeId b) { return c_.g.compare(d, a, b); }
  NodeId lt(NodeId a, double b) { return cmp(CompareDir::LT, a, k(b)); }
  NodeId le(NodeId a, double b) { return cmp(CompareDir::LE, a, k(b)); }
  NodeId gt(NodeId a, double b) { return cmp(CompareDir::GT, a, k(b)); }
  NodeId eq(NodeId a, double b) { return cmp(CompareDir::EQ, a, k(b)); }
  NodeId sel(NodeId p, NodeId a, NodeId b, const std::string& n = "") {
    return c_.g.select(p, a, b, n);
  }
  /// c[0] + c[1] z + c[2] z^2 + ..., by Horner's rule.
  NodeId poly(NodeId z, const std::vector<double>& c) {
    NodeId p = k(c.back());
    for (size_t i = c.size() - 1; i-- > 0;)
      p = add(mul(p, z), k(c[i]));
    return p;
  }

private:
  NodeContext& c_;
  NodeId like_;
  DType dtype_;
  std::map<uint64_t, NodeId> constants_; // by the bits of the double
};

// --- checks ------------------------------------------------------------------------------

/// Fails unless the model's opset has the operator.
Lowering since(int opset, Lowering lower) {
  return [opset, lower](NodeContext& c) {
    if (c.opset < opset)
      c.fail(fmt::format("{} is defined from opset {}", c.node.op_type(), opset));
    lower(c);
  };
}

NodeId floatInput(NodeContext& c, size_t i) {
  NodeId x = c.in(i);
  if (!ir::isFloat(c.typeOf(x).dtype))
    c.fail(fmt::format("input {} is {}; {} takes a float tensor", i,
                       ir::dtypeName(c.typeOf(x).dtype), c.node.op_type()));
  return x;
}

// --- functions of one float ---------------------------------------------------------------

/// A function of one float value built in f32 or f64: its last op is named `name`.
using FloatFunction = NodeId (*)(Formula& f, NodeId x, const std::string& name);

/// Lowers a float function: f32 and f64 in their own dtype, f16 and bf16 in f32 (converted
/// back at the end).
Lowering floatFunction(FloatFunction fn) {
  return [fn](NodeContext& c) {
    NodeId x = floatInput(c, 0);
    DType t = c.typeOf(x).dtype;
    DType compute = computeDType(t);
    if (compute == t) {
      Formula f(c, x);
      c.setOutput(0, fn(f, x, c.name()));
      return;
    }
    NodeId wide = c.g.convert(x, compute);
    Formula f(c, wide);
    c.setOutput(0, c.g.convert(fn(f, wide, ""), t, c.name()));
  };
}

/// log(1 + y) without the cancellation of forming 1 + y: u = fl(1 + y), and
/// log1p(y) = log(u) * y / (u - 1), which corrects log(u) for the rounding
/// of 1 + y to within an ulp or two (Goldberg, "What every computer scientist should know
/// about floating-point arithmetic", theorem 4). Where u rounds to 1, y itself; u = inf, inf.
NodeId log1p(Formula& f, NodeId y) {
  NodeId u = f.add(f.k(1.0), y);
  NodeId corrected = f.mul(f.log(u), f.div(y, f.sub(u, f.k(1.0))));
  return f.sel(f.eq(u, kInf), u, f.sel(f.eq(u, 1.0), y, corrected));
}

/// Below this |x|, atan(x), asinh(x) and atanh(x) round to x itself (x^2 / 3 < half an ulp):
/// returning x keeps -0 and the subnormals exact.
double identityBelow(const Formula& f) {
  return f.wide() ? 0x1p-27 : 0x1p-12;
}

/// atan(x). Range reduction by the addition formula atan(a) = atan(c) + atan((a - c) / (1 + ca))
/// for a = |x| about c in {0, 1/2, 1, 2} and atan(a) = pi/2 + atan(-1/a) above 4, which leaves
/// |r| <= 1/4; then atan(r) = r + r z P(z), z = r^2, with P the minimax polynomial for the
/// relative error of atan on |r| <= 1/4 (Remez exchange in 60-digit arithmetic: degree 3 for
/// f32, relative error 2^-32.5; degree 7 for f64, 2^-57.5). atan(c) is added as hi + lo. The
/// reduced argument has at most two roundings (a - c is exact by Sterbenz's lemma in each
/// interval), and the sum never cancels more than a bit. Below 1/4, r is x itself.
NodeId atanOf(Formula& f, NodeId x, const std::string& name) {
  static const std::vector<double> p32 = {-0.3333332488078157, 0.19998674051658276,
                                          -0.14220703413149659, 0.09837149884478062};
  static const std::vector<double> p64 = {
      -0.3333333333333254,  0.1999999999958636,  -0.14285714211974712, 0.11111104743161494,
      -0.09090604024800732, 0.07683749495689923, -0.06526016855523092, 0.046086905738694686};
  NodeId a = f.abs(x);
  NodeId nearZero = f.lt(a, 0.25), nearHalf = f.lt(a, 0.75), nearOne = f.lt(a, 1.375);
  NodeId large = f.gt(a, 4.0); // false for NaN, which goes through the c = 2 branch
  NodeId c =
      f.sel(nearZero, f.k(0.0), f.sel(nearHalf, f.k(0.5), f.sel(nearOne, f.k(1.0), f.k(2.0))));
  NodeId num = f.sel(large, f.k(-1.0), f.sub(f.sel(nearZero, x, a), c));
  NodeId den = f.sel(large, a, f.add(f.k(1.0), f.mul(c, a)));
  NodeId r = f.div(num, den);
  NodeId z = f.mul(r, r);
  NodeId p = f.add(r, f.mul(r, f.mul(z, f.poly(z, f.wide() ? p64 : p32))));
  auto pick = [&](double DoubleDouble::*part) {
    auto theta = [&](DoubleDouble v) { return f.k(f.split(v).*part); };
    return f.sel(nearHalf, theta(kAtanHalf),
                 f.sel(nearOne, theta(kPiOver4), f.sel(large, theta(kPiOver2), theta(kAtanTwo))));
  };
  NodeId thetaHi = pick(&DoubleDouble::hi);
  NodeId thetaLo = pick(&DoubleDouble::lo);
  NodeId reduced = f.add(thetaHi, f.add(thetaLo, p));
  NodeId signedValue = f.sel(f.lt(x, 0.0), f.neg(reduced), reduced);
  // r + r z P(z) turns r = -0 into +0 (P(0) < 0): tiny x, whose atan rounds to x, are x.
  NodeId small = f.sel(f.lt(a, identityBelow(f)), x, p);
  return f.sel(nearZero, small, signedValue, name);
}

/// tan(x) = sin(x) / cos(x): the IR's sin and cos reduce every finite x exactly and keep their
/// relative accuracy at their zeros, so the quotient does at tan's zeros and poles too.
NodeId tanOf(Formula& f, NodeId x, const std::string& name) {
  return f.div(f.un(OpKind::Sin, x), f.un(OpKind::Cos, x), name);
}

/// asin(x) = atan(x / sqrt((1 - x)(1 + x))): no cancellation (1 - x and 1 + x are exact where
/// they are small), +-1 gives atan(+-inf) = +-pi/2, and |x| > 1 a negative square root, NaN.
NodeId asinOf(Formula& f, NodeId x, const std::string& name) {
  NodeId one = f.k(1.0);
  NodeId s = f.sqrt(f.mul(f.sub(one, x), f.add(one, x)));
  return atanOf(f, f.div(x, s), name);
}

/// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): exact where acos is small (1 - x is exact near
/// 1) and near pi (1 + x is exact near -1; -1 gives 2 atan(inf) = pi); NaN for |x| > 1.
NodeId acosOf(Formula& f, NodeId x, const std::string& name) {
  NodeId one = f.k(1.0);
  NodeId t = f.sqrt(f.div(f.sub(one, x), f.add(one, x)));
  return f.mul(f.k(2.0), atanOf(f, t, ""), name);
}

/// Above this |x|, exp(|x|) overflows while sinh and cosh may not: they are computed as
/// exp(|x| - 8) * (e^8 / 2) there (|x| - 8 is exact near the threshold).
double expOverflowGuard(const Formula& f) {
  return f.wide() ? 709.0 : 88.0;
}

/// sinh(x): below |x| = 1 its Taylor series x + x^3/3! + ... (to x^11 in f32, x^19 in f64:
/// truncation error below 2^-32 resp. 2^-65 relative), which keeps the relative precision that
/// (e^x - e^-x) / 2 loses to cancellation near 0; above, (e - 1/e) / 2 with e = exp(|x|)
/// (at most a 1.3x amplification of exp's error), signed.
NodeId sinhOf(Formula& f, NodeId x, const std::string& name) {
  std::vector<double> taylor; // 1/3!, 1/5!, ...
  double fact = 6;
  for (int n = 3; n <= (f.wide() ? 19 : 11); n += 2, fact *= n * (n - 1))
    taylor.push_back(1.0 / fact);
  NodeId a = f.abs(x);
  NodeId z = f.mul(x, x);
  NodeId small = f.add(x, f.mul(x, f.mul(z, f.poly(z, taylor))));
  NodeId e = f.exp(a);
  NodeId mid = f.mul(f.sub(e, f.reciprocal(e)), f.k(0.5));
  NodeId big = f.mul(f.exp(f.sub(a, f.k(8.0))), f.k(kHalfExp8));
  NodeId magnitude = f.sel(f.le(a, expOverflowGuard(f)), mid, big);
  NodeId signedValue = f.sel(f.lt(x, 0.0), f.neg(magnitude), magnitude);
  return f.sel(f.lt(a, 1.0), small, signedValue, name);
}

/// cosh(x) = (e + 1/e) / 2 with e = exp(|x|): no cancellation anywhere.
NodeId coshOf(Formula& f, NodeId x, const std::string& name) {
  NodeId a = f.abs(x);
  NodeId e = f.exp(a);
  NodeId mid = f.mul(f.add(e, f.reciprocal(e)), f.k(0.5));
  NodeId big = f.mul(f.exp(f.sub(a, f.k(8.0))), f.k(kHalfExp8));
  return f.sel(f.le(a, expOverflowGuard(f)), mid, big, name);
}

/// Above this x, sqrt(x^2 +- 1) is x to within rounding: asinh and acosh are log(x) + ln 2,
/// and x^2 (which overflows further up) is not formed.
double squareDropsOneAbove(const Formula& f) {
  return f.wide() ? 0x1p28 : 0x1p12;
}

/// asinh(x) = sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = |x| (log(a + sqrt(a^2 + 1))
/// with the 1 taken out exactly, so small x keep their relative precision); log(a) + ln 2
/// for large a.
NodeId asinhOf(Formula& f, NodeId x, const std::string& name) {
  NodeId a = f.abs(x);
  NodeId one = f.k(1.0);
  NodeId a2 = f.mul(a, a);
  NodeId mid = log1p(f, f.add(a, f.div(a2, f.add(one, f.sqrt(f.add(one, a2))))));
  NodeId big = f.add(f.log(a), f.k(kLn2));
  NodeId magnitude = f.sel(f.lt(a, squareDropsOneAbove(f)), mid, big);
  NodeId signedValue = f.sel(f.lt(x, 0.0), f.neg(magnitude), magnitude);
  return f.sel(f.lt(a, identityBelow(f)), x, signedValue, name);
}

/// acosh(x) = log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1, where acosh(1 + t) ~
/// sqrt(2t)); log(x) + ln 2 for large x; NaN below 1.
NodeId acoshOf(Formula& f, NodeId x, const std::string& name) {
  NodeId t = f.sub(x, f.k(1.0));
  NodeId mid = log1p(f, f.add(t, f.sqrt(f.mul(t, f.add(t, f.k(2.0))))));
  NodeId big = f.add(f.log(x), f.k(kLn2));
  NodeId value = f.sel(f.lt(x, squareDropsOneAbove(f)), mid, big);
  return f.sel(f.lt(x, 1.0), f.k(kNaN), value, name);
}

/// atanh(x) = sign(x) log1p(2a / (1 - a)) / 2 with a = |x| (1 - a is exact near 1); +-inf at
/// +-1 and NaN beyond (a log of a negative number).
NodeId atanhOf(Formula& f, NodeId x, const std::string& name) {
  NodeId a = f.abs(x);
  NodeId y = f.div(f.add(a, a), f.sub(f.k(1.0), a));
  NodeId magnitude = f.mul(log1p(f, y), f.k(0.5));
  NodeId signedValue = f.sel(f.lt(x, 0.0), f.neg(magnitude), magnitude);
  return f.sel(f.lt(a, identityBelow(f)), x, signedValue, name);
}

// --- rounding, tests, Mod and Xor -------------------------------------------------------------

/// Round: roundHalfToEven, and a zero result takes x's sign (numpy: round(-0.4) = -0).
void lowerRound(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  Formula f(c, x);
  NodeId rounded = roundHalfToEven(c, x);
  c.setOutput(0, f.sel(f.eq(rounded, 0.0), f.mul(x, f.k(0.0)), rounded, c.name()));
}

void lowerIsNaN(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  c.setOutput(0, c.g.compare(CompareDir::NE, x, x, c.name()));
}

/// IsInf: x == +inf where detect_positive, x == -inf where detect_negative.
void lowerIsInf(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  bool positive = c.attrInt("detect_positive", 1) != 0;
  bool negative = c.attrInt("detect_negative", 1) != 0;
  if (!positive && !negative) {
    c.setOutput(0, c.g.constant(DType::boolean, c.typeOf(x).shape, {0.0}, c.name()));
    return;
  }
  Formula f(c, x);
  NodeId target = positive && negative ? f.abs(x) : x;
  c.setOutput(
      0, c.g.compare(CompareDir::EQ, target, f.k(negative && !positive ? -kInf : kInf), c.name()));
}

/// Mod. fmod=1: C's fmod, the IR's rem (truncated: the result has the dividend's sign), for
/// integers and floats. fmod=0 (integers only, as ONNX requires): Python's %, the result has
/// the divisor's sign: rem, plus the divisor where the two signs differ (no overflow: |rem| <
/// |divisor|). An integer divisor of 0 is the IR's rem's: the reference interpreter refuses
/// it, weft's kernels give the dividend. For UINT64 both are a - (a / b) b, unsigned.
void lowerMod(NodeContext& c) {
  int64_t fmod = c.attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) c.fail(fmt::format("attribute fmod is {}; it must be 0 or 1", fmod));
  auto [a, b] = c.broadcastPair(c.in(0), c.in(1));
  requireSameDType(c, a, b);
  DType t = c.typeOf(a).dtype;
  if (ir::isBool(t)) c.fail("operands are bool; Mod takes numbers");
  if (isUnsigned64(c.onnxType(0)) || isUnsigned64(c.onnxType(1))) {
    NodeId product = c.g.binary(OpKind::Mul, unsignedDivide(c, a, b, ""), b);
    c.setOutput(0, c.g.binary(OpKind::Sub, a, product, c.name()));
    return;
  }
  if (fmod == 1) {
    c.setOutput(0, c.g.binary(OpKind::Rem, a, b, c.name()));
    return;
  }
  if (ir::isFloat(t))
    c.fail(fmt::format("operands are {}; for floats ONNX requires fmod=1", ir::dtypeName(t)));
  NodeId r = c.g.binary(OpKind::Rem, a, b);
  NodeId zero = c.splatLike(r, 0.0);
  NodeId signsDiffer = c.g.compare(CompareDir::NE, c.g.compare(CompareDir::LT, r, zero),
                                   c.g.compare(CompareDir::LT, b, zero));
  NodeId adjust = c.g.binary(OpKind::And, c.g.compare(CompareDir::NE, r, zero), signsDiffer);
  c.setOutput(0, c.g.select(adjust, c.g.binary(OpKind::Add, r, b), r, c.name()));
}

/// Xor of two bools: a != b (broadcast as the other logical ops, legacy attributes before 7).
void lowerXor(NodeContext& c) {
  auto [a, b] = binaryOperands(c);
  if (!ir::isBool(c.typeOf(a).dtype) || !ir::isBool(c.typeOf(b).dtype))
    c.fail(fmt::format("operands are {} and {}; Xor takes bool tensors",
                       ir::dtypeName(c.typeOf(a).dtype), ir::dtypeName(c.typeOf(b).dtype)));
  c.setOutput(0, c.g.compare(CompareDir::NE, a, b, c.name()));
}

/// BitShift (unsigned integers): x * 2^s to the LEFT (wrapped to the type's width by
/// keepNarrowTypes), x / 2^s to the RIGHT (as unsigned). ONNX leaves a shift by the width or
/// more undefined (C's is, numpy gives 0 on some machines and x on others); weft gives 0.
/// 2^s is built from s's bits (exact, where pow's rounding need not be).
void lowerBitShift(NodeContext& c) {
  std::string direction = c.attrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    c.fail(fmt::format("attribute direction is \"{}\"; it must be \"LEFT\" or \"RIGHT\"",
                       direction));
  auto [x, s] = c.broadcastPair(c.in(0), c.in(1));
  requireSameDType(c, x, s);
  int type = c.onnxType(0) != 0 ? c.onnxType(0) : c.onnxType(1);
  const bool u64 = isUnsigned64(type);
  const int width = u64 ? 64 : heldNarrowBits(type);
  if (type == 0)
    c.unsupported("the ONNX element type of its inputs is not known here (BitShift takes uint8 "
                  "to uint64; weft holds them in wider integers)");
  if (width == 0 || type == ::onnx::TensorProto::INT16)
    c.fail(fmt::format("inputs are {}; BitShift takes uint8 to uint64", onnxTypeName(type)));
  NodeId zero = c.splatLike(s, 0), one = c.splatLike(s, 1);
  NodeId tooFar = c.g.compare(CompareDir::GE, s, c.splatLike(s, width));
  if (u64) // a shift past 2^63 reads negative
    tooFar = c.g.binary(OpKind::Or, tooFar, c.g.compare(CompareDir::LT, s, zero));
  NodeId power = one;
  for (int k = 0; (1 << k) < width; ++k) {
    NodeId bit = c.g.binary(OpKind::And, s, c.splatLike(s, 1 << k));
    NodeId factor = c.splatLike(s, std::ldexp(1.0, 1 << k));
    NodeId chosen = c.g.select(c.g.compare(CompareDir::NE, bit, zero), factor, one);
    power = c.g.binary(OpKind::Mul, power, chosen);
  }
  power = c.g.select(tooFar, one, power); // never 0: the division below stays defined
  NodeId shifted = direction == "LEFT" ? c.g.binary(OpKind::Mul, x, power)
                   : u64              ? unsignedDivide(c, x, power, "")
                                      : c.g.binary(OpKind::Div, x, power);
  c.setOutput(0, c.g.select(tooFar, c.splatLike(x, 0), shifted, c.name()));
}

// --- activations -----------------------------------------------------------------------------

/// max(0, x) + min(0, alpha (exp(x / alpha) - 1)), as ONNX writes it (exp - 1 like Elu).
void lowerCelu(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  double alpha = c.attrFloat("alpha", 1.0f);
  if (alpha == 0.0) c.fail("attribute alpha is 0; Celu divides by it");
  Formula f(c, x);
  NodeId em1 = f.sub(f.exp(f.div(x, f.k(alpha))), f.k(1.0));
  NodeId negPart = f.min(f.k(0.0), f.mul(f.k(alpha), em1));
  c.setOutput(0, f.add(f.max(f.k(0.0), x), negPart, c.name()));
}

/// x * max(0, min(1, x / 6 + 1/2))
void lowerHardSwish(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  Formula f(c, x);
  NodeId lin = f.add(f.mul(x, f.k(1.0 / 6.0)), f.k(0.5));
  NodeId gate = c.g.clamp(f.k(0.0), lin, f.k(1.0));
  c.setOutput(0, f.mul(x, gate, c.name()));
}

/// x / (1 + |x|)
void lowerSoftsign(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  Formula f(c, x);
  c.setOutput(0, f.div(x, f.add(f.k(1.0), f.abs(x)), c.name()));
}

/// x > alpha ? x : 0
void lowerThresholdedRelu(NodeContext& c) {
  NodeId x = floatInput(c, 0);
  double alpha = c.attrFloat("alpha", 1.0f);
  Formula f(c, x);
  c.setOutput(0, f.sel(f.gt(x, alpha), x, f.k(0.0), c.name()));
}

/// Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0). Floats directly. Integers
/// compare exactly against the integer bounds ceil(-lambd) and floor(lambd) (x < t exactly
/// when x < ceil(t)); an integral bias is added as an integer, a fractional one in f64 and the
/// sum truncated back, as numpy's astype does.
void lowerShrink(NodeContext& c) {
  NodeId x = c.in(0);
  DType t = c.typeOf(x).dtype;
  if (ir::isBool(t)) c.fail("input 0 is bool; Shrink takes numbers");
  double bias = c.attrFloat("bias", 0.0f), lambd = c.attrFloat("lambd", 0.5f);
  if (ir::isFloat(t)) {
    Formula f(c, x);
    NodeId inner = f.sel(f.gt(x, lambd), f.sub(x, f.k(bias)), f.k(0.0));
    c.setOutput(0, f.sel(f.lt(x, -lambd), f.add(x, f.k(bias)), inner, c.name()));
    return;
  }
  if (!std::isfinite(bias) || !std::isfinite(lambd))
    c.fail(fmt::format("bias {} and lambd {} must be finite for an integer input", bias, lambd));
  // The comparisons on integers; a bound at or past the end of the dtype's range never holds.
  double minV = t == DType::i8 ? -0x1p7 : t == DType::i32 ? -0x1p31 : -0x1p63;
  double maxV = t == DType::i8 ? 0x1p7 - 1 : t == DType::i32 ? 0x1p31 - 1 : 0x1p63;
  auto never = [&]() { return c.splat(DType::boolean, c.typeOf(x).shape, 0.0); };
  double lo = std::ceil(-lambd), hi = std::floor(lambd);
  NodeId below = lo <= minV ? never() : c.g.compare(CompareDir::LT, x, c.splatLike(x, lo));
  NodeId above = hi >= maxV ? never() : c.g.compare(CompareDir::GT, x, c.splatLike(x, hi));
  NodeId v = x;
  if (bias != std::floor(bias) || bias <= minV || bias >= maxV) v = c.g.convert(x, DType::f64);
  NodeId b = c.splatLike(v, bias);
  NodeId plus = c.convertTo(c.g.binary(OpKind::Add, v, b), t);
  NodeId minus = c.convertTo(c.g.binary(OpKind::Sub, v, b), t);
  NodeId inner = c.g.select(above, minus, c.splatLike(x, 0.0));
  c.setOutput(0, c.g.select(below, plus, inner, c.name()));
}

/// PRelu: x < 0 ? slope * x : x, slope broadcast to x's shape (unidirectional from opset 7).
/// Before opset 7 PRelu is Caffe2's: a one-element slope is shared across x, and a 1-D slope
/// of x's channel count (dim 1) is per channel, as PyTorch exported its [C] slopes (the
/// pytorch-converted PReLU cases); a slope of x's own shape is taken as is.
void lowerPRelu(NodeContext& c) {
  NodeId x = c.in(0), slope = c.in(1);
  requireSameDType(c, x, slope);
  if (ir::isBool(c.typeOf(x).dtype)) c.fail("input 0 is bool; PRelu takes numbers");
  ir::Shape shape = c.typeOf(x).shape;
  const ir::Shape s = c.typeOf(slope).shape;
  if (c.opset < 7 && shape.size() >= 2 && s.size() == 1 && s[0] == shape[1] &&
      !(s[0] == ir::Dim(1))) {
    slope = c.g.broadcastInDim(slope, shape, {1});
  } else {
    if (c.broadcastShape(shape, s) != shape)
      c.fail(fmt::format("slope {} does not broadcast to X {} (unidirectional broadcasting)",
                         ir::shapeStr(s), ir::shapeStr(shape)));
    slope = c.broadcastTo(slope, shape);
  }
  NodeId negative = c.g.compare(CompareDir::LT, x, c.splatLike(x, 0.0));
  c.setOutput(0, c.g.select(negative, c.g.binary(OpKind::Mul, slope, x), x, c.name()));
}

/// CastLike: Cast to the element type of input 1 (which weft widens as for Cast): with
/// Cast's values where its ONNX type is known (a graph input, an initializer or a Cast's
/// output: UINT8 keeps the low 8 bits), else to its IR dtype. saturate (opset 19) applies to
/// float8 types only, which weft does not have.
void lowerCastLike(NodeContext& c) {
  NodeId x = c.in(0);
  if (int like = c.onnxType(1); like != 0 && irDTypeOf(like) == c.type(1).dtype) {
    c.setOutput(0, castTo(c, x, like, c.name(), c.onnxType(0)));
    c.setOutputOnnxType(0, like);
    return;
  }
  DType to = c.type(1).dtype;
  if (isUnsigned64(c.onnxType(0)) && ir::isFloat(to)) {
    c.setOutput(0, unsignedToFloat(c, x, to, c.name()));
    return;
  }
  c.setOutput(0, c.typeOf(x).dtype == to ? x : c.g.convert(x, to, c.name()));
}

// --- Det --------------------------------------------------------------------------------------

/// Matrices up to this size take the cofactor expansion; larger ones an LU factorization.
constexpr int64_t kMaxCofactorSize = 4;
/// Matrices up to this size are factorized (one unrolled elimination step each).
constexpr int64_t kMaxDetSize = 64;

/// The batch of matrices x [..., n, n] and what Det's steps build over it.
class Matrices {
public:
  Matrices(NodeContext& c, const ir::Shape& batch) : c_(c), batch_(batch) {}

  /// The batch shape with `tail` appended.
  ir::Shape shape(std::vector<int64_t> tail) const {
    ir::Shape s = batch_;
    for (int64_t d : tail)
      s.push_back(ir::Dim(d));
    return s;
  }
  /// x [..., rows, cols] sliced to rows [r0, r1) and columns [c0, c1) (the batch whole).
  NodeId block(NodeId x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    size_t r = batch_.size() + 2;
    std::vector<int64_t> starts(r, 0), limits(r, -1), strides(r, 1);
    starts[r - 2] = r0;
    limits[r - 2] = r1;
    starts[r - 1] = c0;
    limits[r - 1] = c1;
    return c_.g.slice(x, starts, limits, strides);
  }
  /// Element (i, j) of each matrix: [...].
  NodeId element(NodeId x, int64_t i, int64_t j) {
    return c_.reshapeTo(block(x, i, i + 1, j, j + 1), batch_);
  }
  /// Row i of each matrix x [..., n, n]: [..., n].
  NodeId row(NodeId x, int64_t i, int64_t n) {
    return c_.reshapeTo(block(x, i, i + 1, 0, n), shape({n}));
  }
  /// Entries [from, to) of each vector v [..., n]: [..., to - from], or [...] for one entry
  /// when `drop`.
  NodeId entries(NodeId v, int64_t from, int64_t to, bool drop = false) {
    size_t r = batch_.size() + 1;
    std::vector<int64_t> starts(r, 0), limits(r, -1), strides(r, 1);
    starts[r - 1] = from;
    limits[r - 1] = to;
    NodeId part = c_.g.slice(v, starts, limits, strides);
    return drop ? c_.reshapeTo(part, batch_) : part;
  }
  /// v [..., tail of `to` at `axes`] broadcast to `to`, the batch axes leading.
  NodeId spread(NodeId v, const ir::Shape& to, const std::vector<int64_t>& axes) {
    std::vector<int64_t> dims;
    for (size_t i = 0; i < batch_.size(); ++i)
      dims.push_back(static_cast<int64_t>(i));
    for (int64_t a : axes)
      dims.push_back(static_cast<int64_t>(batch_.size()) + a);
    return c_.g.broadcastInDim(v, to, dims);
  }
  int64_t last() const { return static_cast<int64_t>(batch_.size()); } // the first tail axis

private:
  NodeContext& c_;
  ir::Shape batch_;
};

/// The determinant of the n x n matrices x by cofactor expansion along the first row, each
/// minor (the last k rows, a set of k columns) built once: for n <= 4 this is at most 28
/// products, and exact but for the rounding of each.
NodeId cofactorDet(NodeContext& c, Matrices& m, NodeId x, int64_t n, const std::string& name) {
  const uint32_t all = (1u << n) - 1;
  std::map<uint32_t, NodeId> minors; // by the bit set of the minor's columns
  std::function<NodeId(uint32_t)> det = [&](uint32_t cols) -> NodeId {
    if (auto it = minors.find(cols); it != minors.end()) return it->second;
    int64_t k = __builtin_popcount(cols), row = n - k;
    if (k == 1) return minors[cols] = m.element(x, row, __builtin_ctz(cols));
    std::optional<NodeId> sum;
    int position = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (!(cols & (1u << j))) continue;
      NodeId a = m.element(x, row, j);
      bool last = cols == all && position == k - 1;
      NodeId term = c.g.binary(OpKind::Mul, a, det(cols & ~(1u << j)), !sum && last ? name : "");
      if (sum)
        term =
            c.g.binary(position % 2 == 0 ? OpKind::Add : OpKind::Sub, *sum, term, last ? name : "");
      sum = term;
      ++position;
    }
    return minors[cols] = *sum;
  };
  return det(all);
}

/// The determinant of the n x n matrices x by Gaussian elimination with partial pivoting,
/// unrolled: each step takes the first row whose leading element has the largest magnitude as
/// the pivot row (an iota, a compare and a min reduce), swaps it with the first (a one-hot
/// select and sum, which is exact), multiplies the determinant by the pivot (negated when the
/// rows swapped) and eliminates the leading column from the other rows, which leaves the
/// (n-1) x (n-1) matrices of the next step. A zero pivot (a singular matrix) eliminates
/// nothing and leaves the determinant 0, as numpy's (LAPACK's) factorization does.
NodeId eliminationDet(NodeContext& c, Matrices& m, NodeId x, int64_t size,
                      const std::string& name) {
  NodeId det = c.splat(c.typeOf(x).dtype, m.shape({}), 1.0);
  for (int64_t n = size; n > 1; --n) {
    const ir::Shape square = m.shape({n, n}), column = m.shape({n});
    const int64_t rows = m.last();
    // the pivot row p: the first of the largest |x[i, 0]|; 0 when none is (NaN)
    NodeId lead = c.g.unary(OpKind::Abs, c.reshapeTo(m.block(x, 0, n, 0, 1), column));
    NodeId largest = c.g.reduce(ir::ReduceKind::Max, lead, {m.last()});
    NodeId at = c.g.iota(DType::i64, column, m.last());
    NodeId isLargest = c.g.compare(CompareDir::EQ, lead, m.spread(largest, column, {}));
    NodeId p =
        c.g.reduce(ir::ReduceKind::Min,
                   c.g.select(isLargest, at, c.splatLike(at, static_cast<double>(n))), {m.last()});
    p = c.g.select(c.g.compare(CompareDir::EQ, p, c.splatLike(p, static_cast<double>(n))),
                   c.splatLike(p, 0.0), p);
    // the pivot row and the other rows, the first taking row p's place
    NodeId isPivotRow =
        c.g.compare(CompareDir::EQ, c.g.iota(DType::i64, square, rows), m.spread(p, square, {}));
    NodeId pivotRow =
        c.g.reduce(ir::ReduceKind::Sum, c.g.select(isPivotRow, x, c.splatLike(x, 0.0)), {rows});
    NodeId first = m.row(x, 0, n);
    const ir::Shape others = m.shape({n - 1, n});
    NodeId below = m.block(x, 1, n, 0, n);
    NodeId wasP = c.g.compare(CompareDir::EQ,
                              c.g.binary(OpKind::Add, c.g.iota(DType::i64, others, rows),
                                         c.splat(DType::i64, others, 1.0)),
                              m.spread(p, others, {}));
    NodeId rest = c.g.select(wasP, m.spread(first, others, {1}), below);
    // the determinant takes the pivot, negated when row p is not the first
    NodeId pivot = m.entries(pivotRow, 0, 1, /*drop=*/true);
    NodeId swapped = c.g.compare(CompareDir::NE, p, c.splatLike(p, 0.0));
    det = c.g.binary(OpKind::Mul, det, c.g.select(swapped, c.g.unary(OpKind::Neg, pivot), pivot));
    // eliminate: rest[i, 1:] - rest[i, 0] / pivot * pivotRow[1:]
    const ir::Shape next = m.shape({n - 1, n - 1}), factors = m.shape({n - 1});
    NodeId ratio = c.g.binary(OpKind::Div, c.reshapeTo(m.block(rest, 0, n - 1, 0, 1), factors),
                              m.spread(pivot, factors, {}));
    NodeId zeroPivot = c.g.compare(CompareDir::EQ, pivot, c.splatLike(pivot, 0.0));
    ratio = c.g.select(m.spread(zeroPivot, factors, {}), c.splatLike(ratio, 0.0), ratio);
    NodeId tail = m.entries(pivotRow, 1, n);
    NodeId update = c.g.binary(OpKind::Mul, m.spread(ratio, next, {0}), m.spread(tail, next, {1}));
    x = c.g.binary(OpKind::Sub, m.block(rest, 0, n - 1, 1, n), update);
  }
  return c.g.binary(OpKind::Mul, det, m.element(x, 0, 0), name);
}

/// Det (opset 11): the determinant of each M x M matrix of X [..., M, M], in f32 for f16 and
/// bf16. M must be static: up to 4 by cofactor expansion, up to 64 by Gaussian elimination
/// with partial pivoting (eliminationDet). The empty matrix (M = 0) has determinant 1.
void lowerDet(NodeContext& c) {
  NodeId x0 = floatInput(c, 0);
  const ir::TensorType t = c.typeOf(x0);
  const ir::Shape& s = t.shape;
  if (s.size() < 2) c.fail(fmt::format("X {} needs rank 2 or more ([..., M, M])", ir::shapeStr(s)));
  const ir::Dim rows = s[s.size() - 2], cols = s[s.size() - 1];
  if (!rows.isStatic() || !cols.isStatic())
    c.unsupported(fmt::format("X {} has a symbolic matrix size; Det needs a static M (the "
                              "determinant's formula is built for it)",
                              ir::shapeStr(s)));
  if (rows != cols)
    c.fail(fmt::format("X {} holds {} x {} matrices; Det takes square ones", ir::shapeStr(s),
                       rows.size(), cols.size()));
  const int64_t n = rows.size();
  if (n > kMaxDetSize)
    c.unsupported(fmt::format("the determinant of {} x {} matrices is not supported (at most "
                              "{} x {}: each elimination step is unrolled)",
                              n, n, kMaxDetSize, kMaxDetSize));
  const ir::Shape batch(s.begin(), s.end() - 2);
  const DType compute = computeDType(t.dtype);
  Matrices m(c, batch);
  const bool converted = compute != t.dtype;
  const std::string name = converted ? "" : c.name();
  NodeId det = n == 0                  ? c.splat(compute, batch, 1.0)
               : n <= kMaxCofactorSize ? cofactorDet(c, m, c.convertTo(x0, compute), n, name)
                                       : eliminationDet(c, m, c.convertTo(x0, compute), n, name);
  c.setOutput(0, converted ? c.g.convert(det, t.dtype, c.name()) : det);
}

} // namespace

/// r = floor(x) and d = x - r decide: up when d > 1/2, or d = 1/2 and r is odd. d is exact but
/// for x in (-1/2, 0), where d = 1 + x in (1/2, 1) may round, to 1/2 or 1 at worst, and still
/// rounds up (r = -1 is odd), as the exact d does. Integral x (every |x| >= 2^23 in f32) have
/// d = 0; inf and NaN give d = NaN and stay as they are.
NodeId roundHalfToEven(NodeContext& c, NodeId x) {
  NodeId r = c.g.unary(OpKind::Floor, x);
  NodeId d = c.g.binary(OpKind::Sub, x, r);
  NodeId half = c.splatLike(x, 0.5);
  NodeId odd = c.g.compare(CompareDir::NE, c.g.binary(OpKind::Rem, r, c.splatLike(x, 2.0)),
                           c.splatLike(x, 0.0));
  NodeId tie = c.g.binary(OpKind::And, c.g.compare(CompareDir::EQ, d, half), odd);
  NodeId up = c.g.binary(OpKind::Or, c.g.compare(CompareDir::GT, d, half), tie);
  return c.g.select(up, c.g.binary(OpKind::Add, r, c.splatLike(x, 1.0)), r);
}

void addMathOps(OperatorTable& t) {
  t["Tan"] = since(7, floatFunction(tanOf));
  t["Asin"] = since(7, floatFunction(asinOf));
  t["Acos"] = since(7, floatFunction(acosOf));
  t["Atan"] = since(7, floatFunction(atanOf));
  t["Sinh"] = since(9, floatFunction(sinhOf));
  t["Cosh"] = since(9, floatFunction(coshOf));
  t["Asinh"] = since(9, floatFunction(asinhOf));
  t["Acosh"] = since(9, floatFunction(acoshOf));
  t["Atanh"] = since(9, floatFunction(atanhOf));
  t["Round"] = since(11, lowerRound);
  t["IsNaN"] = since(9, lowerIsNaN);
  t["IsInf"] = since(10, lowerIsInf);
  t["Mod"] = since(10, lowerMod);
  t["BitShift"] = since(11, lowerBitShift);
  t["Xor"] = lowerXor;
  t["Celu"] = since(12, lowerCelu);
  t["HardSwish"] = since(14, lowerHardSwish);
  t["Softsign"] = lowerSoftsign;
  t["ThresholdedRelu"] = lowerThresholdedRelu; // experimental before opset 10, same semantics
  t["Shrink"] = since(9, lowerShrink);
  t["PRelu"] = lowerPRelu;
  t["CastLike"] = since(15, lowerCastLike);
  t["Det"] = since(11, lowerDet);
}

} // namespace weft::onnx
