#pragma once
// weft's own math, used when no libdevice is available (or CodegenOptions::useLibdevice is
// false). Each algorithm is written once, as a template over an arithmetic backend B, so the very
// same sequence of operations is emitted as LLVM IR (math_emitter.cc, B = IR values) and
// evaluated on the host in the tests (B = HostF32Ops / HostF64Ops below), where it is compared
// with the C library. f16 and bf16 compute through f32 and round once at the end.
//
// Accuracy (ulp = unit in the last place of the correctly rounded result; measured by
// test/codegen/math_test.cc on the host and test/codegen/math_sim_test.cc on the simulator):
//   sin/cos  f32: <= 2 ulp, f64: <= 2 ulp, for EVERY finite input (subnormals, FLT_MAX, DBL_MAX,
//            near multiples of pi/2 included); sin(-0) = -0; NaN for +-inf and NaN. |x| up to
//            2^17 (f32) / 2^27 (f64) is reduced by Cody-Waite in double-F precision; larger |x|
//            by an exact Payne-Hanek reduction (x times 256 bits of 2/pi in 64-bit integers, in
//            f64 also for f32 inputs) on a branch only the lanes that need it take.
//   exp      f32: <= 2 ulp for results >= 2^-126 (abs error <= 2^-149 below), f64: <= 2 ulp
//            for normal results; inf above ln(MAX), 0 below ln(2^-150) / ln(2^-1075)
//   log      f32 and f64: <= 2 ulp for x > 0 (subnormals included); -inf at +-0, NaN below 0,
//            inf at inf
//   tanh     f32 and f64: <= 4 ulp; tanh(-0) = -0
//   erf      f32: absolute error <= 4e-7 (relative <= 4 ulp for |x| < 1); f64: <= 2 ulp.
//            erf(-0) = -0.
//   pow      f32: <= 2 ulp; f64: <= 1 + |y ln x| / 32 ulp (so <= 25 ulp for finite results;
//            y ln|x| is formed in double-F, log as hi + lo); the C library's special cases of
//            x = +-0, +-1, +-inf, x < 0 with integral y, y = +-0 and y = +-inf
//   sqrt     correctly rounded (sqrt.rn); rsqrt = 1 / sqrt, <= 1 ulp
//   sigmoid  1 / (1 + exp(-x)), emitted by elemental_emitter.cc (with libdevice's exp too):
//            <= 3 ulp, but f32 gives 0 instead of a subnormal for x in (-103.97, -88.72),
//            where exp(-x) overflows
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace weft::codegen::math {

/// Bits of 2/pi after the binary point, 64 to a word, behind one zero word (so a window may
/// start up to 64 bits before the binary point). Enough for every finite double.
inline constexpr int kTwoOverPiWords = 23;
inline constexpr uint64_t kTwoOverPi[kTwoOverPiWords] = {
    0, 0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
    0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull,
    0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull, 0x3991d639835339f4ull, 0x9c845f8bbdf9283bull,
    0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
    0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull,
    0xf0cfbc209af4361dull, 0xa9e391615ee61b08ull, 0x6599855f14a06840ull};

// A backend B provides: types F (f32 or f64 value), I (i32 or i64), Bool; kDouble; constants
// c(double), ci(int64); float arithmetic (add sub mul div fma neg abs rint floor min max),
// comparisons, selects, bit casts and integer ops on I; wide(): the f64 backend (itself for
// f64), ext / narrow between F and the wide F, narrowQuadrant (wide U -> I); branch(cond, slow,
// fast): slow() when cond (the IR backend emits it in a block of its own), else fast. The f64
// backend also has 64-bit unsigned ops on U (uc, uadd, usub, umul, umulhi, ushl, ushr, uand, uor,
// unot, ult, usel, umin, ucarry, uclz, u2f, fbits, ffrombits) and table(i) = kTwoOverPi[i].

// ---- exp ----
/// exp(x + lo) for |lo| <= ulp(x) (lo = nullptr: exp(x)); inf above ln(MAX), 0 below
/// ln(min subnormal / 2), x itself for NaN.
template <class B>
typename B::F expImpl(B& b, typename B::F x, const typename B::F* lo) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  constexpr int kMant = D ? 52 : 23, kBias = D ? 1023 : 127;
  F xc = b.min(b.max(x, b.c(D ? -746.0 : -104.0)), b.c(D ? 710.0 : 89.0));
  F n = b.rint(b.mul(xc, b.c(1.44269504088896341)));
  F r, p;
  if constexpr (D) {
    // x - n*ln2 with ln2 = hi + lo: n*hi's subtraction is exact (fma, |result| < 1).
    r = b.fma(n, b.c(-0.6931471805599453), xc);
    r = b.fma(n, b.c(-2.3190468138462996e-17), r);
  } else {
    r = b.fma(n, b.c(-0.693145751953125), xc);       // ln2 high part (exact in f32 times small n)
    r = b.fma(n, b.c(-1.42860682030941723212e-06), r); // ln2 low part
  }
  if (lo) r = b.add(r, *lo);
  if constexpr (D) {
    double fact = 1;
    for (int k = 2; k <= 13; ++k)
      fact *= k;
    p = b.c(1.0 / fact); // 1/13!
    for (int k = 12; k >= 0; --k) {
      fact /= (k + 1);
      p = b.fma(p, r, b.c(1.0 / fact));
    }
  } else {
    p = b.c(1.0 / 5040.0);
    p = b.fma(p, r, b.c(1.0 / 720.0));
    p = b.fma(p, r, b.c(1.0 / 120.0));
    p = b.fma(p, r, b.c(1.0 / 24.0));
    p = b.fma(p, r, b.c(1.0 / 6.0));
    p = b.fma(p, r, b.c(0.5));
    p = b.fma(p, r, b.c(1.0));
    p = b.fma(p, r, b.c(1.0));
  }
  // 2^n as two factors so each stays a normal number: n in [-1077, 1025] (f64), [-150, 129].
  auto ni = b.f2i(n);
  auto n1 = b.ashr(ni, 1);
  auto n2 = b.isub(ni, n1);
  F s1 = b.fromBits(b.shl(b.iadd(n1, b.ci(kBias)), kMant));
  F s2 = b.fromBits(b.shl(b.iadd(n2, b.ci(kBias)), kMant));
  F res = b.mul(b.mul(p, s1), s2); // overflows to inf, underflows to 0 by itself
  if (!lo) {
    res = b.sel(b.gt(x, b.c(D ? 709.782712893384 : 88.72283935546875)), b.c(INFINITY), res);
    res = b.sel(b.lt(x, b.c(D ? -745.1332191019412 : -103.972084045410)), b.c(0.0), res);
  }
  return b.sel(b.isnan(x), x, res);
}
template <class B> typename B::F exp(B& b, typename B::F x) {
  return expImpl<B>(b, x, nullptr);
}

// ---- log ----
template <class B> typename B::F log(B& b, typename B::F x) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  constexpr int kMant = D ? 52 : 23, kBias = D ? 1023 : 127;
  constexpr int64_t kMantMask = (int64_t(1) << kMant) - 1;
  auto tiny = b.lt(x, b.c(D ? 2.2250738585072014e-308 : 1.17549435082228751e-38));
  F xs = b.sel(tiny, b.mul(x, b.c(D ? 4503599627370496.0 : 8388608.0)), x); // subnormals * 2^mant
  auto bits = b.bits(xs);
  auto e = b.isub(b.iand(b.ashr(bits, kMant), b.ci(D ? 0x7ff : 0xff)), b.ci(kBias));
  e = b.sel_i(tiny, b.isub(e, b.ci(kMant)), e);
  F m = b.fromBits(b.ior(b.iand(bits, b.ci(kMantMask)), b.ci(int64_t(kBias) << kMant))); // [1,2)
  auto big = b.gt(m, b.c(1.41421356237309505));
  m = b.sel(big, b.mul(m, b.c(0.5)), m);
  e = b.sel_i(big, b.iadd(e, b.ci(1)), e);
  F f = b.sub(m, b.c(1.0));
  F s = b.div(f, b.add(f, b.c(2.0)));
  F z = b.mul(s, s);
  // log(m) = 2s (1 + z/3 + z^2/5 + ...), |s| <= 0.172.
  int last = D ? 11 : 5;
  F p = b.c(1.0 / (2 * last + 1));
  for (int k = last - 1; k >= 1; --k)
    p = b.fma(p, z, b.c(1.0 / (2 * k + 1)));
  F twoS = b.add(s, s);
  F logm = b.fma(b.mul(twoS, z), p, twoS);
  F ef = b.i2f(e);
  // ln2 = hi + lo with e*hi exact (hi has few significant bits).
  F hi = b.c(D ? 0.6931471805598903 : 0.693145751953125);
  F lo = b.c(D ? 5.497923018708371e-14 : 1.42860682030941723212e-06);
  F res = b.fma(ef, hi, b.fma(ef, lo, logm));
  res = b.sel(b.eq(x, b.c(INFINITY)), x, res);
  res = b.sel(b.eq(x, b.c(0.0)), b.c(-INFINITY), res);
  return b.sel(b.bor(b.lt(x, b.c(0.0)), b.isnan(x)), b.c(NAN), res);
}

/// log(x) = hi + lo to about twice F's precision, for x > 0 (subnormals included); hi = log(x)'s
/// special values (lo = 0) at 0, inf, NaN and x < 0. pow's logarithm.
template <class B>
void logDD(B& b, typename B::F x, typename B::F& hi, typename B::F& lo) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  constexpr int kMant = D ? 52 : 23, kBias = D ? 1023 : 127;
  constexpr int64_t kMantMask = (int64_t(1) << kMant) - 1;
  auto tiny = b.lt(x, b.c(D ? 2.2250738585072014e-308 : 1.17549435082228751e-38));
  F xs = b.sel(tiny, b.mul(x, b.c(D ? 4503599627370496.0 : 8388608.0)), x);
  auto bits = b.bits(xs);
  auto e = b.isub(b.iand(b.ashr(bits, kMant), b.ci(D ? 0x7ff : 0xff)), b.ci(kBias));
  e = b.sel_i(tiny, b.isub(e, b.ci(kMant)), e);
  F m = b.fromBits(b.ior(b.iand(bits, b.ci(kMantMask)), b.ci(int64_t(kBias) << kMant)));
  auto big = b.gt(m, b.c(1.41421356237309505));
  m = b.sel(big, b.mul(m, b.c(0.5)), m);
  e = b.sel_i(big, b.iadd(e, b.ci(1)), e);
  F f = b.sub(m, b.c(1.0)); // exact
  // s = f / (2 + f) as sh + sl, with 2 + f = dh + dl exactly.
  F dh = b.add(f, b.c(2.0));
  F dl = b.sub(f, b.sub(dh, b.c(2.0)));
  F sh = b.div(f, dh);
  F res = b.fma(b.neg(sh), dh, f);
  res = b.fma(b.neg(sh), dl, res);
  F sl = b.div(res, dh);
  F z = b.mul(sh, sh);
  int last = D ? 11 : 6;
  F p = b.c(1.0 / (2 * last + 1));
  for (int k = last - 1; k >= 1; --k)
    p = b.fma(p, z, b.c(1.0 / (2 * k + 1)));
  // log(x) = e ln2 + 2s + 2s z p; e*LN2HI is exact and added to 2sh exactly (TwoSum).
  F twoS = b.add(sh, sh);
  F tail = b.fma(b.mul(twoS, z), p, b.add(sl, sl));
  F ef = b.i2f(e);
  F eh = b.mul(ef, b.c(D ? 0.6931471805598903 : 0.693145751953125));
  F a = b.add(eh, twoS);
  F bv = b.sub(a, eh);
  F aErr = b.add(b.sub(eh, b.sub(a, bv)), b.sub(twoS, bv));
  F rest = b.add(b.fma(ef, b.c(D ? 5.497923018708371e-14 : 1.42860682030941723212e-06), tail), aErr);
  hi = b.add(a, rest);
  lo = b.sub(rest, b.sub(hi, a));
  auto special = b.bnot(b.band(b.gt(x, b.c(0.0)), b.lt(x, b.c(INFINITY))));
  hi = b.sel(special, log(b, x), hi);
  lo = b.sel(special, b.c(0.0), lo);
}

// ---- tanh ----
template <class B> typename B::F tanh(B& b, typename B::F x) {
  using F = typename B::F;
  F a = b.abs(x);
  // Small |x|: odd Taylor series (converges fast for |x| < 0.55).
  F z = b.mul(a, a);
  F p;
  if constexpr (B::kDouble) {
    // The coefficients of x^3 ... x^41: 2^2n (2^2n - 1) B_2n / (2n)!.
    static constexpr double kCoef[] = {
        -0.3333333333333333,    0.13333333333333333,     -0.05396825396825397,
        0.021869488536155203,   -0.008863235529902197,   0.003592128036572481,
        -0.0014558343870513183, 0.000590027440945586,    -0.00023912911424355248,
        9.691537956929451e-05,  -3.927832388331683e-05,  1.5918905069328964e-05,
        -6.451689215655431e-06, 2.6147711512907546e-06,  -1.0597268320104654e-06,
        4.294911078273806e-07,  -1.7406618963571648e-07, 7.054636946400968e-08,
        -2.859136662305254e-08, 1.1587644432798853e-08};
    constexpr int n = int(sizeof(kCoef) / sizeof(kCoef[0]));
    p = b.c(kCoef[n - 1]);
    for (int k = n - 2; k >= 0; --k)
      p = b.fma(p, z, b.c(kCoef[k]));
  } else {
    p = b.c(-443861162.0 / 1856156927625.0);
    p = b.fma(p, z, b.c(6404582.0 / 10854718875.0));
    p = b.fma(p, z, b.c(-929569.0 / 638512875.0));
    p = b.fma(p, z, b.c(21844.0 / 6081075.0));
    p = b.fma(p, z, b.c(-1382.0 / 155925.0));
    p = b.fma(p, z, b.c(62.0 / 2835.0));
    p = b.fma(p, z, b.c(-17.0 / 315.0));
    p = b.fma(p, z, b.c(2.0 / 15.0));
    p = b.fma(p, z, b.c(-1.0 / 3.0));
  }
  F small = b.fma(b.mul(a, z), p, a);
  // Larger |x|: 1 - 2 / (exp(2|x|) + 1); no cancellation since the result is >= 0.5.
  F e2 = exp(b, b.add(a, a));
  F large = b.sub(b.c(1.0), b.div(b.c(2.0), b.add(e2, b.c(1.0))));
  F t = b.sel(b.lt(a, b.c(0.55)), small, large);
  t = b.sel(b.signbit(x), b.neg(t), t); // tanh(-0) = -0
  return b.sel(b.isnan(x), x, t);
}

// ---- erf ----
/// f64 erf: the Taylor series below 1; 1 - exp(-x^2) g(x) from 1 to 6, g = erfc(x) exp(x^2) as
/// a degree-29 polynomial in (x - 3.5) / 2.5 (a Chebyshev fit, error 2e-18); 1 above 6.
template <class B> typename B::F erf64(B& b, typename B::F x) {
  using F = typename B::F;
  F a = b.abs(x);
  F z = b.mul(a, a);
  double coef[21];
  double fact = 1.0;
  for (int n = 0; n < 21; ++n) {
    if (n > 0) fact *= n;
    coef[n] = ((n % 2) ? -1.0 : 1.0) / (fact * (2 * n + 1)) * 1.1283791670955126;
  }
  F p = b.c(coef[20]);
  for (int n = 19; n >= 0; --n)
    p = b.fma(p, z, b.c(coef[n]));
  F small = b.mul(a, p);
  static constexpr double kG[] = {
        -1.4479464300262855e-09, 3.555964753024834e-09, 2.203648393927714e-09,
        -5.788800082379115e-09, -2.1641342219954443e-08, 5.158307441554354e-08,
        -4.841629944913183e-08, 1.0532664214626851e-07, -3.227264363656852e-07,
        7.117053416590745e-07, -1.4615385561115369e-06, 3.1225510221476298e-06,
        -6.6422186210437495e-06, 1.3832421918659423e-05, -2.8376281485934893e-05,
        5.741680994974455e-05, -0.00011444247762230747, 0.00022453088978866036,
        -0.00043336170490803185, 0.0008222550987233205, -0.001532515711226679,
        0.0028033262034199737, -0.005028067968654204, 0.00883342391529903, -0.015182511545620832,
        0.025495559643743348, -0.04176678811943188, 0.0666320824531906, -0.10330894458313124,
        0.1552936556088943,
  };
  F u = b.mul(b.sub(a, b.c(3.5)), b.c(0.4));
  F g = b.c(kG[0]);
  for (size_t k = 1; k < sizeof(kG) / sizeof(kG[0]); ++k)
    g = b.fma(g, u, b.c(kG[k]));
  F zl = b.neg(b.fma(a, a, b.neg(z))); // -(a^2 - z): exp(-a^2) = exp(-z + zl)
  F e = expImpl(b, b.neg(z), &zl);
  F large = b.sub(b.c(1.0), b.mul(e, g));
  F r = b.sel(b.lt(a, b.c(1.0)), small, large);
  r = b.sel(b.gt(a, b.c(6.0)), b.c(1.0), r);
  r = b.sel(b.signbit(x), b.neg(r), r); // erf(-0) = -0
  return b.sel(b.isnan(x), x, r);
}

template <class B> typename B::F erf(B& b, typename B::F x) {
  using F = typename B::F;
  if constexpr (B::kDouble) return erf64(b, x);
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
  r = b.sel(b.signbit(x), b.neg(r), r); // erf(-0) = -0
  return b.sel(b.isnan(x), x, r);
}

// ---- sin / cos ----
// Both reductions return x = q*pi/2 + (rh + rl) with |rh| <= ~pi/4 and |rl| <= ulp(rh): the
// reduced argument to about twice F's precision, so that it keeps its relative accuracy when x
// lies close to a multiple of pi/2 (for doubles as close as 2^-61, for floats 2^-29).

/// Cody-Waite: k = rint(x 2/pi); x - k*P1 is exact (fma, P1 = pi/2 rounded to F), the rest of
/// k*pi/2 is subtracted in double-F arithmetic. Accurate for |x| <= 2^17 (f32) / 2^27 (f64).
template <class B>
void reduceSmall(B& b, typename B::F x, typename B::F& rh, typename B::F& rl, typename B::I& q) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  F k = b.rint(b.mul(x, b.c(0.6366197723675814)));
  F nk = b.neg(k);
  F r1 = b.fma(nk, b.c(D ? 1.5707963267948966 : 1.5707963705062866), x);
  F t1 = b.c(D ? 6.123233995736766e-17 : -4.371138828673793e-08);
  F th = b.mul(k, t1);
  F tl = b.fma(k, t1, b.neg(th)); // k*t1 = th + tl exactly
  // (s, e) = r1 - th exactly (TwoSum)
  F s = b.sub(r1, th);
  F bv = b.sub(s, r1);
  F e = b.sub(b.sub(r1, b.sub(s, bv)), b.add(th, bv));
  F lo = b.sub(e, tl);
  lo = b.fma(nk, b.c(D ? -1.4973849048591698e-33 : -1.7151245100058819e-15), lo);
  if constexpr (!D) lo = b.fma(nk, b.c(1.056299898220315e-23), lo);
  rh = b.add(s, lo);
  rl = b.sub(lo, b.sub(rh, s));
  q = b.iand(b.f2i(k), b.ci(3));
}

/// Payne-Hanek, in f64 and 64-bit integers (W = the f64 backend), for finite |x| >= 2^-10:
/// |x| 2/pi mod 4 = 4 frac(m W), where |x| = m 2^e (m the 53-bit significand) and W the bits of
/// 2/pi from the one of weight 2^(1-e) on (the bits before it contribute multiples of 4); 256
/// bits of W give frac(m W) to 2^-190, far below the smallest 4 frac(...) of any double
/// (2^-62). Returns the quadrant q (0..3, for |x|) and r = rh + rl (for |x|).
template <class W>
void reduceLarge(W& w, typename W::F x, typename W::F& rh, typename W::F& rl,
                 typename W::U& q) {
  using U = typename W::U;
  using F = typename W::F;
  U bits = w.fbits(w.abs(x));
  U m = w.uor(w.uand(bits, w.uc((uint64_t(1) << 52) - 1)), w.uc(uint64_t(1) << 52));
  // Table bit offset of 2/pi's bit of weight 2^(1-e): e = E - 1075, one zero word in front.
  U off = w.usub(w.ushr(bits, w.uc(52)), w.uc(1013));
  U j = w.umin(w.ushr(off, w.uc(6)), w.uc(kTwoOverPiWords - 5));
  U sh = w.uand(off, w.uc(63));
  U t[5], win[4];
  for (int k = 0; k < 5; ++k)
    t[k] = w.table(w.uadd(j, w.uc(uint64_t(k))));
  for (int k = 0; k < 4; ++k) // (t[k]:t[k+1]) << sh, also for sh = 0
    win[k] = w.uor(w.ushl(t[k], sh), w.ushr(w.ushr(t[k + 1], w.uc(1)), w.usub(w.uc(63), sh)));
  // frac(m W) as a 192-bit fraction f1:f2:f3 (the integer part and below 2^-192 dropped).
  U l0 = w.umul(m, win[0]);
  U l1 = w.umul(m, win[1]), h1 = w.umulhi(m, win[1]);
  U l2 = w.umul(m, win[2]), h2 = w.umulhi(m, win[2]);
  U h3 = w.umulhi(m, win[3]);
  U f3 = w.uadd(l2, h3);
  U c3 = w.ucarry(f3, l2);
  U f2a = w.uadd(l1, h2);
  U c2a = w.ucarry(f2a, l1);
  U f2 = w.uadd(f2a, c3);
  U c2b = w.ucarry(f2, f2a);
  U f1 = w.uadd(w.uadd(l0, h1), w.uadd(c2a, c2b));
  // 4 frac = q + g: q the top two bits, g the rest; g >= 1/2 rounds q up, g becomes g - 1.
  U qq = w.ushr(f1, w.uc(62));
  U g1 = w.uor(w.ushl(f1, w.uc(2)), w.ushr(f2, w.uc(62)));
  U g2 = w.uor(w.ushl(f2, w.uc(2)), w.ushr(f3, w.uc(62)));
  U g3 = w.ushl(f3, w.uc(2));
  auto upper = w.ult(w.uc(0x7fffffffffffffffull), g1);
  qq = w.usel(upper, w.uadd(qq, w.uc(1)), qq);
  g1 = w.usel(upper, w.unot(g1), g1); // 1 - g, to 2^-192
  g2 = w.usel(upper, w.unot(g2), g2);
  g3 = w.usel(upper, w.unot(g3), g3);
  // Normalise (g < 2^-64 cannot happen) and convert the top 117 bits to a double-double.
  U lz = w.umin(w.uclz(g1), w.uc(63));
  U n1 = w.uor(w.ushl(g1, lz), w.ushr(w.ushr(g2, w.uc(1)), w.usub(w.uc(63), lz)));
  U n2 = w.uor(w.ushl(g2, lz), w.ushr(w.ushr(g3, w.uc(1)), w.usub(w.uc(63), lz)));
  F hi = w.u2f(w.uand(n1, w.uc(~uint64_t(0x7ff))));
  F lo = w.u2f(w.uor(w.ushl(w.uand(n1, w.uc(0x7ff)), w.uc(53)), w.ushr(n2, w.uc(11))));
  F scale = w.ffrombits(w.ushl(w.usub(w.uc(1023 - 64), lz), w.uc(52))); // 2^(-64-lz)
  F gh = w.mul(hi, scale);
  F gl = w.mul(w.mul(lo, scale), w.c(0x1p-53));
  // r = (gh + gl) * pi/2, pi/2 = P1 + P2.
  F ph = w.mul(gh, w.c(1.5707963267948966));
  F pl = w.fma(gh, w.c(1.5707963267948966), w.neg(ph));
  pl = w.fma(gh, w.c(6.123233995736766e-17), w.fma(gl, w.c(1.5707963267948966), pl));
  F sh2 = w.add(ph, pl);
  F sl = w.sub(pl, w.sub(sh2, ph));
  rh = w.sel(upper, w.neg(sh2), sh2);
  rl = w.sel(upper, w.neg(sl), sl);
  q = w.uand(qq, w.uc(3));
}

/// sin (cosine = false) or cos of q*pi/2 + rh + rl.
template <class B>
typename B::F sincosKernel(B& b, typename B::F rh, typename B::F rl, typename B::I q,
                           bool cosine) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  F z = b.mul(rh, rh);
  // Taylor series: sin to r^11 (f32) / r^19 (f64), cos to r^10 / r^20; |r| <= pi/4.
  int sinLast = D ? 19 : 11, cosLast = D ? 20 : 10;
  auto invFact = [](int n) {
    double f = 1;
    for (int i = 2; i <= n; ++i)
      f *= i;
    return 1.0 / f;
  };
  F ps = b.c(((sinLast / 2) % 2 ? -1 : 1) * invFact(sinLast));
  for (int n = sinLast - 2; n >= 3; n -= 2)
    ps = b.fma(ps, z, b.c(((n / 2) % 2 ? -1 : 1) * invFact(n)));
  F pc = b.c(((cosLast / 2) % 2 ? -1 : 1) * invFact(cosLast));
  for (int n = cosLast - 2; n >= 2; n -= 2)
    pc = b.fma(pc, z, b.c(((n / 2) % 2 ? -1 : 1) * invFact(n)));
  // sin(rh + rl) = rh + rh^3 ps + rl (1 - rh^2/2); cos(rh + rl) = 1 + rh^2 pc - rl rh.
  F sv = b.add(rh, b.fma(b.mul(rh, z), ps, b.mul(rl, b.fma(z, b.c(-0.5), b.c(1.0)))));
  F cv = b.add(b.c(1.0), b.fma(z, pc, b.neg(b.mul(rl, rh))));
  if (cosine) q = b.iadd(q, b.ci(1));
  auto odd = b.ieq(b.iand(q, b.ci(1)), b.ci(1));
  auto negative = b.ieq(b.iand(q, b.ci(2)), b.ci(2));
  F v = b.sel(odd, cv, sv);
  return b.sel(negative, b.neg(v), v);
}

/// sin (cosine = false) or cos (cosine = true).
template <class B> typename B::F sincos(B& b, typename B::F x, bool cosine) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  F rh, rl;
  typename B::I q;
  reduceSmall(b, x, rh, rl, q);
  F fast = sincosKernel(b, rh, rl, q, cosine);
  F ax = b.abs(x);
  auto large = b.band(b.gt(ax, b.c(D ? 0x1p27 : 0x1p17)), b.lt(ax, b.c(INFINITY)));
  F v = b.branch(
      large,
      [&] {
        using W = typename B::Wide;
        W& w = b.wide();
        typename W::F xd = b.ext(x), wh, wl;
        typename W::U wq;
        reduceLarge(w, xd, wh, wl, wq);
        auto negx = w.lt(xd, w.c(0.0)); // x = -(q pi/2 + r)
        wh = w.sel(negx, w.neg(wh), wh);
        wl = w.sel(negx, w.neg(wl), wl);
        wq = w.usel(negx, w.usub(w.uc(0), wq), wq);
        F h = b.narrow(wh), l;
        if constexpr (D)
          l = wl;
        else
          l = b.narrow(w.add(w.sub(wh, b.ext(h)), wl));
        return sincosKernel(b, h, l, b.iand(b.narrowQuadrant(wq), b.ci(3)), cosine);
      },
      fast);
  if (!cosine) v = b.sel(b.eq(x, b.c(0.0)), x, v); // sin(-0) = -0
  return b.sel(b.bor(b.isnan(x), b.eq(ax, b.c(INFINITY))), b.c(NAN), v);
}

// ---- pow ----
template <class B> typename B::F pow(B& b, typename B::F x, typename B::F y) {
  using F = typename B::F;
  constexpr bool D = B::kDouble;
  F ax = b.abs(x);
  // |x|^y = exp(y log|x|), y log|x| to about twice F's precision (its absolute error becomes
  // the result's relative error).
  F lh, ll;
  logDD(b, ax, lh, ll);
  F ph = b.mul(y, lh);
  F pl = b.fma(y, ll, b.fma(y, lh, b.neg(ph)));
  // Beyond exp's clamp (and for inf/NaN) pl is meaningless, and could be large.
  pl = b.sel(b.lt(b.abs(ph), b.c(D ? 1000.0 : 200.0)), pl, b.c(0.0));
  F mag = expImpl(b, ph, &pl);
  auto yInt = b.eq(b.rint(y), y); // true for +-inf too
  F half = b.mul(y, b.c(0.5));
  auto yOdd = b.band(yInt, b.band(b.lt(b.abs(y), b.c(D ? 0x1p53 : 0x1p24)),
                                  b.bnot(b.eq(b.rint(half), half))));
  auto xNeg = b.lt(x, b.c(0.0));
  auto xInf = b.eq(ax, b.c(INFINITY));
  F res = b.sel(b.band(xNeg, yOdd), b.neg(mag), mag);
  // x < 0 with a non-integral y: NaN, except pow(-inf, y) = pow(inf, y).
  res = b.sel(b.band(b.band(xNeg, b.bnot(yInt)), b.bnot(xInf)), b.c(NAN), res);
  // x == 0: +0 (or -0 for odd y and x = -0) when y > 0, inf when y < 0.
  auto xZero = b.eq(x, b.c(0.0));
  F zeroRes = b.sel(b.gt(y, b.c(0.0)), b.c(0.0), b.c(INFINITY));
  zeroRes = b.sel(yOdd, b.mul(zeroRes, b.sel(b.signbit(x), b.c(-1.0), b.c(1.0))), zeroRes);
  res = b.sel(xZero, zeroRes, res);
  res = b.sel(b.bor(b.isnan(x), b.isnan(y)), b.c(NAN), res);
  // pow(-1, +-inf) = 1 (|x| = 1 and y = inf would be exp(NaN) above).
  auto one = b.bor(b.eq(x, b.c(1.0)), b.band(b.eq(x, b.c(-1.0)), b.eq(b.abs(y), b.c(INFINITY))));
  return b.sel(b.bor(b.eq(y, b.c(0.0)), one), b.c(1.0), res);
}

/// The host backends: plain float / double arithmetic with fused multiply-add, as the GPU does.
/// HostScalarOps<F, I> holds what both widths share; F's bits are an I of the same size.
template <class FT, class IT> struct HostScalarOps {
  using F = FT;
  using I = IT;
  using Bool = bool;
  static_assert(sizeof(F) == sizeof(I), "a float's bits are an integer of its size");
  F c(double v) { return static_cast<F>(v); }
  I ci(int64_t v) { return static_cast<I>(v); }
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
  I f2i(F a) { // saturating, as llvm.fptosi.sat
    if (std::isnan(a)) return 0;
    if (a >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    if (a <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    return static_cast<I>(a);
  }
  F i2f(I a) { return static_cast<F>(a); }
  I bits(F a) {
    I i;
    std::memcpy(&i, &a, sizeof i);
    return i;
  }
  F fromBits(I i) {
    F a;
    std::memcpy(&a, &i, sizeof a);
    return a;
  }
  I shl(I a, int s) { return static_cast<I>(static_cast<std::make_unsigned_t<I>>(a) << s); }
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
  template <class Fn> F branch(Bool c, Fn slow, F fast) { return c ? slow() : fast; }
};

struct HostF64Ops : HostScalarOps<double, int64_t> {
  using U = uint64_t;
  using Wide = HostF64Ops;
  static constexpr bool kDouble = true;
  HostF64Ops& wide() { return *this; }
  F ext(F a) { return a; }
  F narrow(F a) { return a; }
  I narrowQuadrant(U q) { return static_cast<I>(q); }
  // 64-bit unsigned integers
  U uc(uint64_t v) { return v; }
  U uadd(U a, U b) { return a + b; }
  U usub(U a, U b) { return a - b; }
  U umul(U a, U b) { return a * b; }
  U umulhi(U a, U b) { return static_cast<U>((static_cast<unsigned __int128>(a) * b) >> 64); }
  U ushl(U a, U s) { return a << s; }
  U ushr(U a, U s) { return a >> s; }
  U uand(U a, U b) { return a & b; }
  U uor(U a, U b) { return a | b; }
  U unot(U a) { return ~a; }
  Bool ult(U a, U b) { return a < b; }
  U usel(Bool c, U a, U b) { return c ? a : b; }
  U umin(U a, U b) { return a < b ? a : b; }
  U ucarry(U sum, U addend) { return sum < addend ? 1 : 0; }
  U uclz(U a) { return a ? U(__builtin_clzll(a)) : 64; }
  F u2f(U a) { return static_cast<F>(a); }
  U fbits(F a) { return static_cast<U>(bits(a)); }
  F ffrombits(U u) { return fromBits(static_cast<I>(u)); }
  U table(U i) { return kTwoOverPi[i]; }
};

struct HostF32Ops : HostScalarOps<float, int32_t> {
  using Wide = HostF64Ops;
  static constexpr bool kDouble = false;
  HostF64Ops w;
  HostF64Ops& wide() { return w; }
  double ext(F a) { return a; }
  F narrow(double a) { return static_cast<F>(a); }
  I narrowQuadrant(uint64_t q) { return static_cast<I>(q & 3); }
};

} // namespace weft::codegen::math
