// The math functions end to end on the simulator, with and without libdevice, over special and
// large arguments (+-0, subnormals, FLT_MAX, DBL_MAX, +-inf, NaN, near multiples of pi/2),
// compared in ulps with the reference interpreter (the C library in double, rounded to the
// dtype): the accuracy math_algorithms.h states.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "fusion/policy_none.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "sim_runner.h"
#include "device_profiles.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::h100;

/// Significand bits and smallest normal exponent of a float dtype.
void format(DType t, int& mant, int& minExp) {
  switch (t) {
  case DType::f16:
    mant = 10, minExp = -14;
    return;
  case DType::bf16:
    mant = 7, minExp = -126;
    return;
  case DType::f64:
    mant = 52, minExp = -1022;
    return;
  default:
    mant = 23, minExp = -126;
  }
}

/// |got - want| in ulps of want (subnormal ulps below the normal range); 0 when both are the
/// same NaN / infinity / signed zero class, 1e30 when only one is NaN or infinite.
double ulpError(DType t, double got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : 1e30;
  int mant, minExp;
  format(t, mant, minExp);
  int e = want == 0 ? minExp : std::max(std::ilogb(want), minExp);
  return std::fabs(got - want) / std::ldexp(1.0, e - mant);
}

/// The sweep: special values, powers of two with several significands over the whole double
/// range, large arguments, and the floats/doubles nearest to multiples of pi/2 there; each
/// with both signs.
std::vector<double> sweep() {
  std::vector<double> v = {0.0,
                           0x1p-1074,
                           0x1p-1050,
                           DBL_MIN,
                           0x1p-149,
                           0x1p-140,
                           FLT_MIN,
                           1e-30,
                           1e-8,
                           0.5,
                           1.0,
                           3e9,
                           1e20,
                           1e22,
                           1e30,
                           double(FLT_MAX),
                           1e300,
                           DBL_MAX,
                           6381956970095103.0 * 0x1p797, // the double closest to a multiple of pi/2
                           16367173.0 * 0x1p72,
                           INFINITY,
                           NAN};
  for (int e = -1074; e <= 1023; e += 5)
    for (double m : {1.0, 1.3, 1.7})
      v.push_back(std::ldexp(m, e));
  for (double k : {1.0, 2.0, 3.0, 1e3, 1e6, 1e9, 1e15, 1e20, 1e30, 3e38, 1e100, 1e200, 1e307})
    for (int d = -1; d <= 1; ++d) {
      double x = std::nearbyint(k) * M_PI_2;
      v.push_back(x);
      v.push_back(double(float(x)));
      v.push_back(std::nextafter(x, d * INFINITY));
    }
  size_t n = v.size();
  for (size_t i = 0; i < n; ++i)
    v.push_back(-v[i]);
  return v;
}

struct Worst {
  double ulps = 0;
  double x = 0, got = 0, want = 0, y = 0;
};

/// Runs op(x) for each dtype in `types` on the simulator, x = every sweep value (rounded to the
/// dtype, y = `y` for pow), and returns per dtype the largest ulp error against ir::interpret
/// over the values x for which `use(x)` holds.
/// f64 sin and cos are compared with sinl / cosl: the double C library's cos is 8 ulp off at the
/// double nearest a multiple of pi/2.
/// For pow, x runs over the sweep once for each y in `ys`.
std::vector<Worst> measure(OpKind op, const std::vector<DType>& types, bool libdevice,
                           const std::vector<double>& ys = {}) {
  std::vector<double> xs, yv;
  for (double y : op == OpKind::Pow ? ys : std::vector<double>{0.0})
    for (double x : sweep()) {
      xs.push_back(x);
      yv.push_back(y);
    }
  int64_t n = int64_t(xs.size());
  ir::Graph g;
  std::vector<ir::NodeId> outs;
  for (DType t : types) {
    auto x = g.parameter("x" + std::to_string(outs.size()), {t, {n}});
    if (op == OpKind::Pow)
      outs.push_back(g.binary(OpKind::Pow, x, g.parameter("y" + std::to_string(outs.size()), {t, {n}})));
    else
      outs.push_back(g.unary(op, x));
  }
  g.setOutputs(outs);
  std::vector<HostTensor> inputs;
  for (DType t : types) {
    HostTensor x(t, {n});
    for (int64_t i = 0; i < n; ++i)
      x.set(i, xs[size_t(i)]);
    inputs.push_back(std::move(x));
    if (op == OpKind::Pow) {
      HostTensor yt(t, {n});
      for (int64_t i = 0; i < n; ++i)
        yt.set(i, yv[size_t(i)]);
      inputs.push_back(std::move(yt));
    }
  }
  auto plan = fusion::planNone(g, h100());
  codegen::CodegenOptions o;
  o.useLibdevice = libdevice;
  auto module = codegen::compileToPtx(plan, o);
  auto want = ir::interpret(plan.graph, inputs);
  auto got = test::runOnSim(plan, module, inputs);
  std::vector<Worst> worst(types.size());
  std::vector<double> yAt(types.size());
  for (size_t k = 0; k < types.size(); ++k) {
    const HostTensor& in = inputs[op == OpKind::Pow ? 2 * k : k];
    for (int64_t i = 0; i < n; ++i) {
      double x = in.get(i);
      double w = want[k].get(i);
      if (types[k] == DType::f64 && (op == OpKind::Sin || op == OpKind::Cos))
        w = double(op == OpKind::Sin ? sinl((long double)x) : cosl((long double)x));
      double err = ulpError(types[k], got[k].get(i), w);
      // Signed zeros must match too.
      if (got[k].get(i) == 0 && w == 0 && std::signbit(got[k].get(i)) != std::signbit(w))
        err = 1e30;
      if (err > worst[k].ulps) worst[k] = {err, x, got[k].get(i), w, yv[size_t(i)]};
    }
  }
  return worst;
}

const std::vector<DType> kAllFloats = {DType::f32, DType::f64, DType::f16, DType::bf16};

void report(const char* what, bool libdevice, const std::vector<DType>& types,
            const std::vector<Worst>& w) {
  for (size_t k = 0; k < w.size(); ++k) {
    if (std::getenv("WEFT_MATH_REPORT")) // print the measurements
      std::printf("%s %s %s: %g ulp at x = %.17g, y = %g (got %.17g, want %.17g)\n", what,
                  libdevice ? "libdevice" : "own", std::string(ir::dtypeName(types[k])).c_str(),
                  w[k].ulps, w[k].x, w[k].y, w[k].got, w[k].want);
    UNSCOPED_INFO(what << (libdevice ? " libdevice " : " own ") << ir::dtypeName(types[k])
                       << ": " << w[k].ulps << " ulp at x = " << w[k].x << ", y = " << w[k].y << " (got " << w[k].got
                       << ", want " << w[k].want << ")");
  }
}

} // namespace

TEST_CASE("sin and cos are within 2 ulp for every kind of argument, with and without libdevice",
          "[math][sim]") {
  for (bool libdevice : {false, true})
    for (OpKind op : {OpKind::Sin, OpKind::Cos}) {
      auto w = measure(op, kAllFloats, libdevice);
      report(op == OpKind::Sin ? "sin" : "cos", libdevice, kAllFloats, w);
      CHECK(w[0].ulps <= 2); // f32 (the interpreter's result is rounded: +0.5)
      CHECK(w[1].ulps <= 2); // f64
      CHECK(w[2].ulps <= 1); // f16 computes through f32 and rounds once
      CHECK(w[3].ulps <= 1); // bf16
    }
}

TEST_CASE("exp, log, tanh, erf, sigmoid, sqrt, rsqrt and pow over special and large arguments",
          "[math][sim]") {
  struct Bound {
    OpKind op;
    double f32, f64; // ulps (f16 and bf16: 1)
  };
  for (Bound bound : {Bound{OpKind::Exp, 2, 2}, Bound{OpKind::Log, 2, 2}, Bound{OpKind::Tanh, 4, 4},
                      Bound{OpKind::Erf, 4, 2}, Bound{OpKind::Sigmoid, 3, 3},
                      Bound{OpKind::Sqrt, 0, 0}, Bound{OpKind::Rsqrt, 2, 2}})
    for (bool libdevice : {false, true}) {
      auto w = measure(bound.op, kAllFloats, libdevice);
      report(std::string(ir::opName(bound.op)).c_str(), libdevice, kAllFloats, w);
      CHECK(w[0].ulps <= bound.f32);
      CHECK(w[1].ulps <= (libdevice ? 2 : bound.f64));
      CHECK(w[2].ulps <= 1);
      CHECK(w[3].ulps <= 1);
    }
  std::vector<double> ys = {-3,  -2.5, -1,   -0.5,     0,         -0.0,     0.5, 1,
                            2,   3,    0.1,  1e10,     -1e10,     INFINITY, -INFINITY, NAN,
                            1e300, 123.456, -1074};
  for (bool libdevice : {false, true}) {
    auto w = measure(OpKind::Pow, kAllFloats, libdevice, ys);
    report("pow", libdevice, kAllFloats, w);
    CHECK(w[0].ulps <= 2);
    CHECK(w[1].ulps <= (libdevice ? 2 : 25));
    CHECK(w[2].ulps <= 1);
    CHECK(w[3].ulps <= 1);
  }
}
