// weft's own math (math_algorithms.h) evaluated on the host with the same operation sequence
// the IR emitter uses, against libm in double: the bounds the header states.
#include <catch2/catch.hpp>

#include <cmath>

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

TEST_CASE("sin and cos: <= 2 ulp + 2e-7 absolute for |x| <= 1e5", "[math]") {
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
