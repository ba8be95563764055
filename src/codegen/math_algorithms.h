#pragma once
// weft's own single-precision math, used when no libdevice is available (or
// CodegenOptions::useLibdevice is false). Each algorithm is written once, as a template over an
// arithmetic backend B, so the very same sequence of operations is emitted as LLVM IR
// (math_emitter.cc, B = IR values) and evaluated on the host in the tests (B = HostF32Ops
// below), where it is compared with libm.
//
// Error bounds for f32 (ulp = unit in the last place of the correctly rounded result; checked by
// test/codegen/math_test.cc on dense samples of the stated ranges):
//   exp    <= 2 ulp for results >= 2^-126 (abs error <= 2^-149 below); inf above 88.72, 0 below
//   -103.97 log    <= 2 ulp for x > 0 (subnormals included); -inf at 0, NaN below 0 tanh   <= 4 ulp
//   erf    absolute error <= 4e-7 (relative <= 4 ulp for |x| < 1)
//   sin/cos <= 2 ulp plus absolute 2e-7 for |x| <= 1e5 (Cody-Waite reduction; larger |x| lose
//           accuracy gradually); NaN for inf and NaN
//   pow    relative error <= (2 + |y * log2(x)|) * 2^-22, IEEE special cases of x = 0, x < 0
//          with integral y, y = 0 and x = 1
//   sqrt   correctly rounded (sqrt.rn); rsqrt = 1 / sqrt, <= 1 ulp
// f64 math without libdevice is computed through these f32 algorithms (f32 accuracy).
#include <cmath>
#include <cstdint>
#include <cstring>

namespace weft::codegen::math {

// ---- exp ----
template <class B> typename B::F exp(B& b, typename B::F x) {
  using F = typename B::F;
  F xc = b.min(b.max(x, b.c(-104.0)), b.c(89.0));
  F n = b.rint(b.mul(xc, b.c(1.44269504088896341)));
  F r = b.fma(n, b.c(-0.693145751953125), xc);       // ln2 high part (exact in f32 times small n)
  r = b.fma(n, b.c(-1.42860682030941723212e-06), r); // ln2 low part
  F p = b.c(1.0 / 5040.0);
  p = b.fma(p, r, b.c(1.0 / 720.0));
  p = b.fma(p, r, b.c(1.0 / 120.0));
  p = b.fma(p, r, b.c(1.0 / 24.0));
  p = b.fma(p, r, b.c(1.0 / 6.0));
  p = b.fma(p, r, b.c(0.5));
  p = b.fma(p, r, b.c(1.0));
  p = b.fma(p, r, b.c(1.0));
  // 2^n as two factors so each stays a normal float: n in [-150, 129].
  auto ni = b.f2i(n);
  auto n1 = b.ashr(ni, 1);
  auto n2 = b.isub(ni, n1);
  F s1 = b.fromBits(b.shl(b.iadd(n1, b.ci(127)), 23));
  F s2 = b.fromBits(b.shl(b.iadd(n2, b.ci(127)), 23));
  F res = b.mul(b.mul(p, s1), s2);
  res = b.sel(b.gt(x, b.c(88.72283935546875)), b.c(INFINITY), res);
  res = b.sel(b.lt(x, b.c(-103.972084045410)), b.c(0.0), res);
  return b.sel(b.isnan(x), x, res);
}

// ---- log ----
template <class B> typename B::F log(B& b, typename B::F x) {
  using F = typename B::F;
  auto tiny = b.lt(x, b.c(1.17549435082228751e-38));
  F xs = b.sel(tiny, b.mul(x, b.c(8388608.0)), x); // scale subnormals by 2^23
  auto bits = b.bits(xs);
  auto e = b.isub(b.iand(b.ashr(bits, 23), b.ci(0xff)), b.ci(127));
  e = b.sel_i(tiny, b.isub(e, b.ci(23)), e);
  F m = b.fromBits(b.ior(b.iand(bits, b.ci(0x7fffff)), b.ci(0x3f800000))); // [1, 2)
  auto big = b.gt(m, b.c(1.41421356237309505));
  m = b.sel(big, b.mul(m, b.c(0.5)), m);
  e = b.sel_i(big, b.iadd(e, b.ci(1)), e);
  F f = b.sub(m, b.c(1.0));
  F s = b.div(f, b.add(f, b.c(2.0)));
  F z = b.mul(s, s);
  F p = b.c(1.0 / 11.0);
  p = b.fma(p, z, b.c(1.0 / 9.0));
  p = b.fma(p, z, b.c(1.0 / 7.0));
  p = b.fma(p, z, b.c(1.0 / 5.0));
  p = b.fma(p, z, b.c(1.0 / 3.0));
  F twoS = b.add(s, s);
  // log(m) = 2s + 2s z p, written f - s*(f - 2s z p)... kept simple: 2s + 2s*z*p.
  F logm = b.fma(b.mul(twoS, z), p, twoS);
  F ef = b.i2f(e);
  F res = b.fma(ef, b.c(0.693145751953125), b.fma(ef, b.c(1.42860682030941723212e-06), logm));
  res = b.sel(b.eq(x, b.c(INFINITY)), x, res);
  res = b.sel(b.eq(x, b.c(0.0)), b.c(-INFINITY), res);
  return b.sel(b.bor(b.lt(x, b.c(0.0)), b.isnan(x)), b.c(NAN), res);
}

// ---- tanh ----
template <class B> typename B::F tanh(B& b, typename B::F x) {
  using F = typename B::F;
  F a = b.abs(x);
  // Small |x|: odd Taylor series (converges fast for |x| < 0.55).
  F z = b.mul(a, a);
  F p = b.c(-443861162.0 / 1856156927625.0);
  p = b.fma(p, z, b.c(6404582.0 / 10854718875.0));
  p = b.fma(p, z, b.c(-929569.0 / 638512875.0));
  p = b.fma(p, z, b.c(21844.0 / 6081075.0));
  p = b.fma(p, z, b.c(-1382.0 / 155925.0));
  p = b.fma(p, z, b.c(62.0 / 2835.0));
  p = b.fma(p, z, b.c(-17.0 / 315.0));
  p = b.fma(p, z, b.c(2.0 / 15.0));
  p = b.fma(p, z, b.c(-1.0 / 3.0));
  F small = b.fma(b.mul(a, z), p, a);
  // Larger |x|: 1 - 2 / (exp(2|x|) + 1); no cancellation since the result is >= 0.5.
  F e2 = exp(b, b.add(a, a));
  F large = b.sub(b.c(1.0), b.div(b.c(2.0), b.add(e2, b.c(1.0))));
  F t = b.sel(b.lt(a, b.c(0.55)), small, large);
  t = b.sel(b.lt(x, b.c(0.0)), b.neg(t), t);
  return b.sel(b.isnan(x), x, t);
}

// ---- erf ----
template <class B> typename B::F erf(B& b, typename B::F x) {
  using F = typename B::F;
  F a = b.abs(x);
  // |x| < 1: 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)).
  F z = b.mul(a, a);
  double coef[12];
  double fact = 1.0;
  for (int n = 0; n < 12; ++n) {
    if (n > 0) fact *= n;
    coef[n] = ((n % 2) ? -1.0 : 1.0) / (fact * (2 * n + 1)) * 1.12837916709551257;
  }
  F p = b.c(coef[11]);
  for (int n = 10; n >= 0; --n)
    p = b.fma(p, z, b.c(coef[n]));
  F small = b.mul(a, p);
  // |x| >= 1: Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7).
  F t = b.div(b.c(1.0), b.fma(b.c(0.3275911), a, b.c(1.0)));
  F q = b.c(1.061405429);
  q = b.fma(q, t, b.c(-1.453152027));
  q = b.fma(q, t, b.c(1.421413741));
  q = b.fma(q, t, b.c(-0.284496736));
  q = b.fma(q, t, b.c(0.254829592));
  q = b.mul(q, t);
  F large = b.sub(b.c(1.0), b.mul(q, exp(b, b.neg(z))));
  F r = b.sel(b.lt(a, b.c(1.0)), small, large);
  r = b.sel(b.gt(a, b.c(4.0)), b.c(1.0), r);
  r = b.sel(b.lt(x, b.c(0.0)), b.neg(r), r);
  return b.sel(b.isnan(x), x, r);
}

// ---- sin / cos ----
/// Cody-Waite reduction: x = k*pi/2 + r, |r| <= pi/4; returns r and the quadrant k mod 4.
template <class B> void reduceQuadrant(B& b, typename B::F x, typename B::F& r, typename B::I& q) {
  using F = typename B::F;
  F k = b.rint(b.mul(x, b.c(0.636619772367581343)));
  r = b.fma(k, b.c(-1.5703125), x);
  r = b.fma(k, b.c(-4.837512969970703125e-4), r);
  r = b.fma(k, b.c(-7.549789954891882e-8), r);
  F kq = b.sub(k, b.mul(b.c(4.0), b.floor(b.mul(k, b.c(0.25))))); // k mod 4 in [0, 4)
  q = b.f2i(kq);
}
template <class B> typename B::F sinPoly(B& b, typename B::F r) {
  using F = typename B::F;
  F z = b.mul(r, r);
  F p = b.c(-1.0 / 39916800.0);
  p = b.fma(p, z, b.c(1.0 / 362880.0));
  p = b.fma(p, z, b.c(-1.0 / 5040.0));
  p = b.fma(p, z, b.c(1.0 / 120.0));
  p = b.fma(p, z, b.c(-1.0 / 6.0));
  return b.fma(b.mul(r, z), p, r);
}
template <class B> typename B::F cosPoly(B& b, typename B::F r) {
  using F = typename B::F;
  F z = b.mul(r, r);
  F p = b.c(-1.0 / 3628800.0);
  p = b.fma(p, z, b.c(1.0 / 40320.0));
  p = b.fma(p, z, b.c(-1.0 / 720.0));
  p = b.fma(p, z, b.c(1.0 / 24.0));
  p = b.fma(p, z, b.c(-0.5));
  return b.fma(z, p, b.c(1.0));
}
/// sin (cosine = false) or cos (cosine = true): the quadrant picks the polynomial and sign.
template <class B> typename B::F sincos(B& b, typename B::F x, bool cosine) {
  using F = typename B::F;
  F r;
  typename B::I q;
  reduceQuadrant(b, x, r, q);
  if (cosine) q = b.iadd(q, b.ci(1));
  F s = sinPoly(b, r), c = cosPoly(b, r);
  auto odd = b.ieq(b.iand(q, b.ci(1)), b.ci(1));
  auto negative = b.ieq(b.iand(q, b.ci(2)), b.ci(2));
  F v = b.sel(odd, c, s);
  v = b.sel(negative, b.neg(v), v);
  auto bad = b.bor(b.isnan(x), b.eq(b.abs(x), b.c(INFINITY)));
  return b.sel(bad, b.c(NAN), v);
}

// ---- pow ----
template <class B> typename B::F pow(B& b, typename B::F x, typename B::F y) {
  using F = typename B::F;
  F ax = b.abs(x);
  F mag = exp(b, b.mul(y, log(b, ax)));
  auto yInt = b.eq(b.rint(y), y);
  F half = b.mul(y, b.c(0.5));
  auto yOdd =
      b.band(yInt, b.band(b.lt(b.abs(y), b.c(16777216.0)), b.bnot(b.eq(b.rint(half), half))));
  auto xNeg = b.lt(x, b.c(0.0));
  F res = b.sel(b.band(xNeg, yOdd), b.neg(mag), mag);
  res = b.sel(b.band(xNeg, b.bnot(yInt)), b.c(NAN), res);
  // x == 0: +0 (or -0 for odd y and x = -0) when y > 0, inf when y < 0.
  auto xZero = b.eq(x, b.c(0.0));
  F zeroRes = b.sel(b.gt(y, b.c(0.0)), b.c(0.0), b.c(INFINITY));
  zeroRes = b.sel(yOdd, b.mul(zeroRes, b.sel(b.signbit(x), b.c(-1.0), b.c(1.0))), zeroRes);
  res = b.sel(xZero, zeroRes, res);
  res = b.sel(b.bor(b.isnan(x), b.isnan(y)), b.c(NAN), res);
  return b.sel(b.bor(b.eq(y, b.c(0.0)), b.eq(x, b.c(1.0))), b.c(1.0), res);
}

/// The host backend: plain float arithmetic with fused multiply-add, as the GPU does.
struct HostF32Ops {
  using F = float;
  using I = int32_t;
  using Bool = bool;
  F c(double v) { return static_cast<float>(v); }
  I ci(int32_t v) { return v; }
  F add(F a, F b) { return a + b; }
  F sub(F a, F b) { return a - b; }
  F mul(F a, F b) { return a * b; }
  F div(F a, F b) { return a / b; }
  F fma(F a, F b, F c) { return std::fma(a, b, c); }
  F neg(F a) { return -a; }
  F abs(F a) { return std::fabs(a); }
  F rint(F a) { return std::nearbyint(a); }
  F floor(F a) { return std::floor(a); }
  F min(F a, F b) { return std::fmin(a, b); }
  F max(F a, F b) { return std::fmax(a, b); }
  I f2i(F a) { return static_cast<I>(a); }
  F i2f(I a) { return static_cast<F>(a); }
  I bits(F a) {
    I i;
    std::memcpy(&i, &a, 4);
    return i;
  }
  F fromBits(I i) {
    F a;
    std::memcpy(&a, &i, 4);
    return a;
  }
  I shl(I a, int s) { return static_cast<I>(static_cast<uint32_t>(a) << s); }
  I ashr(I a, int s) { return a >> s; }
  I iadd(I a, I b) { return a + b; }
  I isub(I a, I b) { return a - b; }
  I iand(I a, I b) { return a & b; }
  I ior(I a, I b) { return a | b; }
  Bool ieq(I a, I b) { return a == b; }
  Bool lt(F a, F b) { return a < b; }
  Bool gt(F a, F b) { return a > b; }
  Bool eq(F a, F b) { return a == b; }
  Bool isnan(F a) { return std::isnan(a); }
  Bool signbit(F a) { return std::signbit(a); }
  Bool bor(Bool a, Bool b) { return a || b; }
  Bool band(Bool a, Bool b) { return a && b; }
  Bool bnot(Bool a) { return !a; }
  F sel(Bool c, F a, F b) { return c ? a : b; }
  I sel_i(Bool c, I a, I b) { return c ? a : b; }
};

} // namespace weft::codegen::math
