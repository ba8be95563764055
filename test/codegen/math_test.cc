// weft's own math (math_algorithms.h) evaluated on the host with the same operation sequence
// the IR emitter uses, against libm in double: the bounds the header states.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "codegen/math_algorithms.h"

using namespace weft::codegen;

namespace {

double ulpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want)) return double(got) == want ? 0 : 1e30;
  float w = static_cast<float>(want);
  double ulp = std::fabs(double(std::nextafter(w, INFINITY)) - double(w));
  if (ulp == 0 || std::isinf(ulp)) ulp = std::ldexp(1.0, -149);
  return std::fabs(double(got) - want) / ulp;
}

template <class F, class R> double worstUlp(F f, R ref, double lo, double hi, int n = 200000) {
  math::HostF32Ops b;
  double worst = 0;
  for (int i = 0; i <= n; ++i) {
    float x = static_cast<float>(lo + (hi - lo) * i / n);
    worst = std::max(worst, ulpError(f(b, x), ref(double(x))));
  }
  return worst;
}

template <class F, class R> double worstAbs(F f, R ref, double lo, double hi, int n = 200000) {
  math::HostF32Ops b;
  double worst = 0;
  for (int i = 0; i <= n; ++i) {
    float x = static_cast<float>(lo + (hi - lo) * i / n);
    worst = std::max(worst, std::fabs(double(f(b, x)) - ref(double(x))));
  }
  return worst;
}

} // namespace

TEST_CASE("exp: <= 2 ulp for normal results, inf and 0 beyond the range", "[math]") {
  auto f = [](math::HostF32Ops& b, float x) { return math::exp(b, x); };
  auto r = [](double x) { return std::exp(x); };
  CHECK(worstUlp(f, r, -87.0, 88.7) <= 2);
  CHECK(worstAbs(f, r, -104.0, -87.0) <= std::ldexp(1.0, -149));
  math::HostF32Ops b;
  CHECK(std::isinf(math::exp(b, 89.0f)));
  CHECK(math::exp(b, -200.0f) == 0.0f);
  CHECK(std::isnan(math::exp(b, NAN)));
}

TEST_CASE("log: <= 2 ulp including subnormals, special values", "[math]") {
  auto f = [](math::HostF32Ops& b, float x) { return math::log(b, x); };
  auto r = [](double x) { return std::log(x); };
  CHECK(worstUlp(f, r, 1e-6, 100.0) <= 2);
  CHECK(worstUlp(f, r, 0.5, 2.0) <= 2);
  CHECK(worstUlp(f, r, 1e-45, 1e-37) <= 2);
  CHECK(worstUlp(f, r, 1e30, 3e38) <= 2);
  math::HostF32Ops b;
  CHECK(math::log(b, 0.0f) == -INFINITY);
  CHECK(std::isnan(math::log(b, -1.0f)));
  CHECK(math::log(b, INFINITY) == INFINITY);
}

TEST_CASE("tanh: <= 4 ulp", "[math]") {
  auto f = [](math::HostF32Ops& b, float x) { return math::tanh(b, x); };
  auto r = [](double x) { return std::tanh(x); };
  CHECK(worstUlp(f, r, -12.0, 12.0) <= 4);
  CHECK(worstUlp(f, r, -0.01, 0.01) <= 4);
}

TEST_CASE("erf: absolute error <= 4e-7, <= 4 ulp below 1", "[math]") {
  auto f = [](math::HostF32Ops& b, float x) { return math::erf(b, x); };
  auto r = [](double x) { return std::erf(x); };
  CHECK(worstAbs(f, r, -6.0, 6.0) <= 4e-7);
  CHECK(worstUlp(f, r, -0.999, 0.999) <= 4);
}

TEST_CASE("sin and cos: <= 2 ulp + 2e-7 absolute, dense over |x| <= 1e5", "[math]") {
  for (bool cosine : {false, true}) {
    auto f = [cosine](math::HostF32Ops& b, float x) { return math::sincos(b, x, cosine); };
    auto r = [cosine](double x) { return cosine ? std::cos(x) : std::sin(x); };
    math::HostF32Ops b;
    double worst = 0;
    for (int i = 0; i <= 400000; ++i) {
      float x = static_cast<float>(-1e5 + 2e5 * i / 400000.0);
      double want = r(double(x));
      double err = std::fabs(double(f(b, x)) - want);
      double ulp = std::fabs(double(std::nextafter(float(want), INFINITY)) - double(float(want)));
      worst = std::max(worst, err - 2e-7 - 2 * ulp);
    }
    CHECK(worst <= 0);
    CHECK(std::isnan(math::sincos(b, INFINITY, cosine)));
  }
}

TEST_CASE("pow: relative error <= (2 + |y log2 x|) * 2^-22, IEEE special cases", "[math]") {
  math::HostF32Ops b;
  double worst = 0;
  for (float y : {-3.0f, -0.5f, 0.5f, 2.5f, 3.0f, 7.25f}) {
    for (int i = 1; i <= 20000; ++i) {
      float x = static_cast<float>(100.0 * i / 20000);
      double want = std::pow(double(x), double(y));
      double rel = std::fabs(double(math::pow(b, x, y)) - want) / std::fabs(want);
      double bound = (2 + std::fabs(double(y) * std::log2(double(x)))) * std::ldexp(1.0, -22);
      worst = std::max(worst, rel / bound);
    }
  }
  CHECK(worst <= 1);
  CHECK(math::pow(b, -2.0f, 3.0f) == Approx(-8.0f));
  CHECK(std::isnan(math::pow(b, -2.0f, 0.5f)));
  CHECK(math::pow(b, 0.0f, 2.0f) == 0.0f);
  CHECK(math::pow(b, 0.0f, -1.0f) == INFINITY);
  CHECK(math::pow(b, NAN, 0.0f) == 1.0f);
  CHECK(math::pow(b, 1.0f, NAN) == 1.0f);
}

namespace {

/// |got - want| in ulps of the double nearest want (subnormal ulps below DBL_MIN).
double ulpError64(double got, long double want) {
  if (std::isnan(double(want))) return std::isnan(got) ? 0 : 1e30;
  double w = double(want);
  if (std::isinf(w)) return got == w ? 0 : 1e30;
  int e = w == 0 ? -1022 : std::max(std::ilogb(w), -1022);
  return double(std::fabs((long double)got - want) / std::ldexp(1.0L, e - 52));
}

/// Every 4093rd positive float bit pattern (and its negation), finite ones only.
template <class Fn> double worstOverFloats(Fn err) {
  double worst = 0;
  for (uint64_t i = 0; i < 0x7f800000u; i += 4093) {
    uint32_t u = uint32_t(i);
    float x;
    std::memcpy(&x, &u, 4);
    worst = std::max({worst, err(x), err(-x)});
  }
  return worst;
}

} // namespace

TEST_CASE("sin and cos f32: <= 2 ulp over the whole float range", "[math]") {
  math::HostF32Ops b;
  for (bool cosine : {false, true}) {
    auto err = [&](float x) {
      return ulpError(math::sincos(b, x, cosine), cosine ? std::cos(double(x)) : std::sin(double(x)));
    };
    CHECK(worstOverFloats(err) <= 2);
    // Large arguments the Cody-Waite reduction alone got wrong (sin(3e9) was -2e17).
    for (float x : {3e9f, 1e20f, 1e30f, FLT_MAX, -FLT_MAX, 131072.0f, 131073.0f, 1.5e38f})
      CHECK(err(x) <= 2);
    // Floats nearest to multiples of pi/2, where the reduced argument is tiny.
    for (double k : {1.0, 2.0, 1e4, 1e5, 1e7, 1e12, 1e20, 1e30, 1e37})
      for (float x : {float(k * M_PI_2), std::nextafter(float(k * M_PI_2), INFINITY)})
        CHECK(err(x) <= 2);
    CHECK(std::isnan(math::sincos(b, INFINITY, cosine)));
    CHECK(std::isnan(math::sincos(b, -INFINITY, cosine)));
    CHECK(std::isnan(math::sincos(b, NAN, cosine)));
  }
  CHECK(math::sincos(b, 3e9f, false) == float(std::sin(3e9)));
  CHECK(std::signbit(math::sincos(b, -0.0f, false)));
  CHECK(math::sincos(b, -0.0f, true) == 1.0f);
  CHECK(math::sincos(b, 0x1p-149f, false) == 0x1p-149f);
}

TEST_CASE("sin and cos f64: <= 2 ulp, large arguments and near multiples of pi/2", "[math]") {
  math::HostF64Ops d;
  for (bool cosine : {false, true}) {
    auto err = [&](double x) {
      long double want = cosine ? cosl((long double)x) : sinl((long double)x);
      return ulpError64(math::sincos(d, x, cosine), want);
    };
    double worst = 0;
    // Dense over [-8, 8] (Cody-Waite), then a few significands of every binade.
    for (int i = -100000; i <= 100000; ++i)
      worst = std::max(worst, err(8.0 * i / 100000));
    for (int e = -1074; e <= 1023; ++e)
      for (double m : {1.0, 1.1, 1.2345678901234567, 1.5, 1.75, 1.9999999999999998})
        worst = std::max({worst, err(std::ldexp(m, e)), err(-std::ldexp(m, e))});
    CHECK(worst <= 2);
    for (double x : {3e9, 1e20, 1e30, double(FLT_MAX), 1e300, DBL_MAX, -DBL_MAX, 0x1p27,
                     0x1p27 + 2, 6381956970095103.0 * 0x1p797}) // the last: closest to k pi/2
      CHECK(err(x) <= 2);
    for (double k : {1.0, 3.0, 1e6, 1e8, 1e15, 1e100, 1e300})
      for (double x : {k * M_PI_2, std::nextafter(k * M_PI_2, INFINITY)})
        CHECK(err(x) <= 2);
    CHECK(std::isnan(math::sincos(d, INFINITY, cosine)));
    CHECK(std::isnan(math::sincos(d, NAN, cosine)));
  }
  CHECK(std::signbit(math::sincos(d, -0.0, false)));
  CHECK(math::sincos(d, 0x1p-1074, false) == 0x1p-1074);
  CHECK(math::sincos(d, -0.0, true) == 1.0);
}

TEST_CASE("f64 exp, log, tanh and erf: native double accuracy over the whole double range", "[math]") {
  math::HostF64Ops d;
  double wExp = 0, wLog = 0, wTanh = 0;
  for (int i = -200000; i <= 200000; ++i) {
    double x = 745.0 * i / 200000; // results from subnormal to near DBL_MAX
    wExp = std::max(wExp, ulpError64(math::exp(d, x), expl((long double)x)));
    double t = 20.0 * i / 200000;
    wTanh = std::max(wTanh, ulpError64(math::tanh(d, t), tanhl((long double)t)));
  }
  for (int e = -1074; e <= 1023; ++e)
    for (double m : {1.0, 1.1, 1.41, 1.42, 1.75, 1.9999999999999998}) {
      double x = std::ldexp(m, e);
      wLog = std::max(wLog, ulpError64(math::log(d, x), logl((long double)x)));
      if (e < 3) wTanh = std::max(wTanh, ulpError64(math::tanh(d, x), tanhl((long double)x)));
    }
  CHECK(wExp <= 2);
  CHECK(wLog <= 2);
  CHECK(wTanh <= 4);
  // Through f32 these were inf, -inf, 0 and 0.
  CHECK(math::exp(d, 100.0) == Approx(2.6881171418161356e43));
  CHECK(math::log(d, 1e300) == Approx(690.7755278982137));
  CHECK(math::log(d, 0x1p-1074) == Approx(-744.4400719213812));
  CHECK(math::tanh(d, 1e-300) == 1e-300);
  CHECK(math::exp(d, 710.0) == INFINITY);
  CHECK(math::exp(d, -746.0) == 0.0);
  CHECK(math::log(d, -0.0) == -INFINITY);
  CHECK(std::signbit(math::tanh(d, -0.0)));
  math::HostF32Ops b;
  CHECK(std::signbit(math::tanh(b, -0.0f)));
  CHECK(std::signbit(math::erf(b, -0.0f)));
  CHECK(math::erf(d, 1e-300) == Approx(1.1283791670955126e-300)); // was 0 through f32
  CHECK(std::signbit(math::erf(d, -0.0)));
  CHECK(math::erf(d, INFINITY) == 1.0);
  CHECK(math::erf(d, -INFINITY) == -1.0);
  CHECK(std::isnan(math::erf(d, NAN)));
  double wErf = 0;
  for (int i = -300000; i <= 300000; ++i) {
    double x = 7.0 * i / 300000;
    wErf = std::max(wErf, ulpError64(math::erf(d, x), erfl((long double)x)));
  }
  for (int e = -1074; e <= 0; ++e)
    wErf = std::max(wErf, ulpError64(math::erf(d, std::ldexp(1.3, e)), erfl(std::ldexp(1.3L, e))));
  CHECK(wErf <= 2);
}

TEST_CASE("pow: f32 <= 2 ulp and f64 <= 1 + |y ln x| / 32 ulp, and the C library's special cases",
          "[math]") {
  math::HostF32Ops b;
  math::HostF64Ops d;
  double w32 = 0, w64 = 0;
  for (double y : {-1000.0, -93.5, -3.0, -2.5, -1.0, -0.5, 0.1, 0.5, 1.0, 2.0, 3.0, 7.25, 1000.0})
    for (int e = -1074; e <= 1023; ++e)
      for (double m : {1.0, 1.3, 1.45, 1.7}) {
        double x = std::ldexp(m, e);
        long double want = powl((long double)x, (long double)y);
        if (std::isfinite(double(want)) && want != 0) {
          double bound = 1 + std::fabs(y * std::log(x)) / 32;
          w64 = std::max(w64, ulpError64(math::pow(d, x, y), want) / bound);
        }
        float xf = float(x), yf = float(y);
        double want32 = double(powl((long double)xf, (long double)yf));
        if (xf != 0 && std::isfinite(xf)) w32 = std::max(w32, ulpError(math::pow(b, xf, yf), want32));
      }
  CHECK(w32 <= 2);
  CHECK(w64 <= 1);
  // Special cases, in f32 and f64, against the C library.
  const double inf = INFINITY;
  for (double x : {-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, inf, double(NAN)})
    for (double y : {-inf, -3.0, -2.0, -0.5, -0.0, 0.0, 0.5, 2.0, 3.0, 1e10, inf, double(NAN)}) {
      INFO("pow(" << x << ", " << y << ")");
      double want = std::pow(x, y);
      double got = math::pow(d, x, y);
      float got32 = math::pow(b, float(x), float(y));
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
        CHECK(std::isnan(got32));
      } else {
        CHECK(got == Approx(want));
        CHECK(std::signbit(got) == std::signbit(want));
        CHECK(got32 == Approx(float(want)));
        CHECK(std::signbit(got32) == std::signbit(want));
      }
    }
  CHECK(math::pow(b, 3e9f, 1e10f) == INFINITY); // was -inf
  CHECK(math::pow(d, 0x1p-1074, 1e300) == 0.0); // was -inf
  CHECK(math::pow(b, FLT_MAX, 1.0f) == FLT_MAX); // was inf
  CHECK(math::pow(d, 10.0, 308.0) == Approx(1e308));
}
