// Float arithmetic: lane semantics (lane_semantics.h) of add, sub, mul, fma, div, min/max,
// abs/neg, the .approx family (rcp, sqrt, rsqrt, ex2, lg2, sin, cos, tanh: correctly rounded
// host results), copysign and testp. f32 and f64 are computed on the host under the
// instruction's rounding mode (this file is compiled with -frounding-math); f16 and bf16, and
// each half of their x2 pairs, in double, rounded once to the narrow type.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/lane_semantics.h"
#include "sim/lane_values.h"

namespace weft::sim {

namespace {

/// a * b + c for half-precision operands, rounded to odd at double precision: the product is
/// exact in double, and rounding the sum to odd first makes the later rounding to f16/bf16
/// correct under every rounding mode (rounding to nearest twice could land on a false tie, or
/// onto a representable value that .rz/.rm/.rp must not reach). add and sub go through it
/// too: bf16 operands far apart do not sum exactly in double.
inline double fmaRoundToOdd(double a, double b, double c) {
  const double p = a * b, s = p + c;
  if (!std::isfinite(s)) return s;
  const double bb = s - p, err = (p - (s - bb)) + (c - bb); // s + err == p + c exactly
  if (err != 0 && (bitsOf(s) & 1) == 0)
    return std::nextafter(s, err > 0 ? HUGE_VAL : -HUGE_VAL);
  return s;
}

template <class F>
inline void floatUnaryOrBinary(const Instr& I, uint32_t m, uint64_t* d, Src a, Src b, Src c,
                               F&& f) {
  const bool ftz = I.flags & kFtz, sat = I.flags & kSat, relu = I.flags & kRelu;
  switch (I.ty) {
  case Ty::F32: {
    RoundingScope rs(I.round);
    forLanes(m, [&](int l) {
      float x = f32(a[l]), y = f32(b[l]), z = f32(c[l]);
      if (ftz) x = ftz32(x), y = ftz32(y), z = ftz32(z);
      float r = f(x, y, z);
      if (sat) r = r != r ? 0.0f : std::clamp(r, 0.0f, 1.0f);
      if (ftz) r = ftz32(r);
      d[l] = canon32(r);
    });
    return;
  }
  case Ty::F64: {
    RoundingScope rs(I.round);
    forLanes(m, [&](int l) {
      double r = f(f64(a[l]), f64(b[l]), f64(c[l]));
      if (sat) r = r != r ? 0.0 : std::clamp(r, 0.0, 1.0);
      d[l] = bitsOf(r);
    });
    return;
  }
  case Ty::F16:
  case Ty::BF16:
  case Ty::F16x2:
  case Ty::BF16x2: {
    const bool bf = I.ty == Ty::BF16 || I.ty == Ty::BF16x2;
    const int halves = (I.ty == Ty::F16x2 || I.ty == Ty::BF16x2) ? 2 : 1;
    auto dec = [&](uint64_t v) { return bf ? fromBF16(uint16_t(v)) : fromHalf(uint16_t(v)); };
    forLanes(m, [&](int l) {
      uint64_t out = 0;
      for (int h = 0; h < halves; ++h) {
        int sh = 16 * h;
        const double x = dec(a[l] >> sh), y = dec(b[l] >> sh), z = dec(c[l] >> sh);
        double r = I.op == Op::Fma   ? fmaRoundToOdd(x, y, z)
                   : I.op == Op::Add ? fmaRoundToOdd(x, 1.0, y)
                   : I.op == Op::Sub ? fmaRoundToOdd(x, 1.0, -y)
                                     : f(x, y, z);
        if (sat) r = r != r ? 0.0 : std::clamp(r, 0.0, 1.0);
        if (relu && r < 0.0) r = 0.0; // fma .relu (parser: half types only)
        Round rm = I.round == Round::None ? Round::Rn : I.round;
        uint64_t bits = bf ? toBF16(r, rm) : toHalf(r, rm);
        out |= bits << sh;
      }
      d[l] = out;
    });
    return;
  }
  default:
    return;
  }
}

template <class T> inline T pmin(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}
template <class T> inline T pmax(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

} // namespace

void execFloat(const Instr& I, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  Src a = src(I.s[0], R);
  Src b = I.ns > 1 ? src(I.s[1], R) : Src{nullptr, 0};
  Src c = I.ns > 2 ? src(I.s[2], R) : Src{nullptr, 0};
  auto run = [&](auto f) { floatUnaryOrBinary(I, m, d, a, b, c, f); };
  switch (I.op) {
  case Op::Add:
    run([](auto x, auto y, auto) { return x + y; });
    return;
  case Op::Sub:
    run([](auto x, auto y, auto) { return x - y; });
    return;
  case Op::Mul:
    run([](auto x, auto y, auto) { return x * y; });
    return;
  case Op::Fma:
    run([](auto x, auto y, auto z) { return std::fma(x, y, z); });
    return;
  case Op::Div:
    run([](auto x, auto y, auto) { return x / y; });
    return;
  case Op::Min:
    if (I.flags & kNaN)
      run([](auto x, auto y, auto) { return x != x ? x : y != y ? y : pmin(x, y); });
    else
      run([](auto x, auto y, auto) { return pmin(x, y); });
    return;
  case Op::Max:
    if (I.flags & kNaN)
      run([](auto x, auto y, auto) { return x != x ? x : y != y ? y : pmax(x, y); });
    else
      run([](auto x, auto y, auto) { return pmax(x, y); });
    return;
  case Op::Abs:
    if (I.ty == Ty::F32 || I.ty == Ty::F64) {
      // sign-bit operations, NaN payloads preserved
      const uint64_t sign = I.ty == Ty::F32 ? 0x80000000ull : 0x8000000000000000ull;
      const bool ftz = I.flags & kFtz;
      forLanes(m, [&](int l) {
        uint64_t v = a[l] & ~sign;
        if (ftz && I.ty == Ty::F32) v = bitsOf(ftz32(f32(v)));
        d[l] = v;
      });
      return;
    }
    if (I.ty == Ty::F16x2 || I.ty == Ty::BF16x2)
      forLanes(m, [&](int l) { d[l] = a[l] & 0x7fff7fffu; });
    else
      forLanes(m, [&](int l) { d[l] = a[l] & 0x7fffu; });
    return;
  case Op::Neg:
    if (I.ty == Ty::F32 || I.ty == Ty::F64) {
      const uint64_t sign = I.ty == Ty::F32 ? 0x80000000ull : 0x8000000000000000ull;
      const bool ftz = I.flags & kFtz;
      forLanes(m, [&](int l) {
        uint64_t v = a[l] ^ sign;
        if (ftz && I.ty == Ty::F32) v = bitsOf(ftz32(f32(v)));
        d[l] = v;
      });
      return;
    }
    if (I.ty == Ty::F16x2 || I.ty == Ty::BF16x2)
      forLanes(m, [&](int l) { d[l] = a[l] ^ 0x80008000u; });
    else
      forLanes(m, [&](int l) { d[l] = a[l] ^ 0x8000u; });
    return;
  case Op::Rcp:
    run([](auto x, auto, auto) { return decltype(x)(1) / x; });
    return;
  case Op::Sqrt:
    run([](auto x, auto, auto) { return std::sqrt(x); });
    return;
  case Op::Rsqrt:
    run([](auto x, auto, auto) { return decltype(x)(1) / std::sqrt(x); });
    return;
  case Op::Ex2:
    run([](auto x, auto, auto) { return std::exp2(x); });
    return;
  case Op::Lg2:
    run([](auto x, auto, auto) { return std::log2(x); });
    return;
  case Op::Sin:
    run([](auto x, auto, auto) { return std::sin(x); });
    return;
  case Op::Cos:
    run([](auto x, auto, auto) { return std::cos(x); });
    return;
  case Op::Tanh:
    run([](auto x, auto, auto) { return std::tanh(x); });
    return;
  case Op::Copysign:
    // copysign d, a, b: the value of b with the sign of a
    if (I.ty == Ty::F32)
      forLanes(m, [&](int l) { d[l] = (b[l] & 0x7fffffffu) | (a[l] & 0x80000000u); });
    else
      forLanes(m, [&](int l) { d[l] = (b[l] & ~(1ull << 63)) | (a[l] & (1ull << 63)); });
    return;
  case Op::Testp:
    forLanes(m, [&](int l) {
      double x = I.ty == Ty::F32 ? double(f32(a[l])) : f64(a[l]);
      int cls = I.ty == Ty::F32 ? std::fpclassify(f32(a[l])) : std::fpclassify(x);
      bool r = false;
      switch (I.mode) {
      case 0:
        r = std::isfinite(x);
        break;
      case 1:
        r = std::isinf(x);
        break;
      case 2:
        r = !std::isnan(x);
        break;
      case 3:
        r = std::isnan(x);
        break;
      case 4:
        r = cls == FP_NORMAL;
        break;
      case 5:
        r = cls == FP_SUBNORMAL;
        break;
      }
      d[l] = r;
    });
    return;
  default:
    return;
  }
}

} // namespace weft::sim
