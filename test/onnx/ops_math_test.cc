// The elementwise operators of ops_math.cc: values against hand-computed ones, the special
// values, the attributes and their errors, and the accuracy of the composed trigonometric and
// hyperbolic functions, measured in ulps against the C library (long double) on the reference
// interpreter over their whole domain.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <random>

#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

int onnxType(DType t) {
  switch (t) {
  case DType::f64:
    return kDouble;
  case DType::f16:
    return kHalf;
  case DType::i8:
    return kInt8;
  case DType::i32:
    return kInt32;
  case DType::i64:
    return kInt64;
  case DType::boolean:
    return kBool;
  default:
    return kFloat;
  }
}

HostTensor tensor(DType t, const std::vector<double>& values) {
  HostTensor h(t, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    h.set(static_cast<int64_t>(i), values[i]);
  return h;
}

HostTensor intTensor(DType t, const std::vector<int64_t>& values) {
  HostTensor h(t, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    h.setInt(static_cast<int64_t>(i), values[i]);
  return h;
}

std::vector<int64_t> intsOf(const HostTensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(t.getInt(i));
  return v;
}

/// A model of one node `op` whose inputs are the graph inputs "a", "b", ... of the given ONNX
/// element types and 1-D sizes, and whose output is "y".
std::string oneNode(const std::string& op, const std::vector<std::pair<int, int64_t>>& inputs,
                    const std::vector<Attr>& attrs = {}, int opset = 18) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(std::string(1, static_cast<char>('a' + i)));
    m.input(names.back(), inputs[i].first, {std::to_string(inputs[i].second)});
  }
  m.node(op, names, {"y"}, attrs).output("y");
  return m.bytes();
}

/// op applied to `inputs` (each a 1-D tensor) on the reference interpreter.
HostTensor run(const std::string& op, const std::vector<HostTensor>& inputs,
               const std::vector<Attr>& attrs = {}, int opset = 18) {
  std::vector<std::pair<int, int64_t>> types;
  for (const HostTensor& h : inputs)
    types.push_back({onnxType(h.dtype), h.shape.at(0)});
  ir::Graph g = importOnnxBytes(oneNode(op, types, attrs, opset));
  return ir::interpret(g, inputs).at(0);
}

bool sameBits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

// --- accuracy -------------------------------------------------------------------------------

using Reference = long double (*)(long double);

/// Where a function's worst error over a set of points is, in ulps of the exact result in
/// the dtype (0.5 is correctly rounded), and the special values it got wrong.
struct Accuracy {
  double ulps = 0;
  double worstAt = 0;
  std::vector<std::string> wrong; // NaN, infinities and zeros (with their sign) must be exact
};

/// |got - want| in units in the last place of `want` in `t` (f32 or f64), subnormals included.
double ulpError(double got, long double want, DType t) {
  int mant = t == DType::f64 ? 52 : 23, minExp = t == DType::f64 ? -1022 : -126;
  int e = 0;
  std::frexp(static_cast<double>(want), &e); // want = m 2^e, m in [0.5, 1)
  long double ulp = std::ldexp(1.0L, std::max(e - 1, minExp) - mant);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

Accuracy measure(const std::string& op, DType t, const std::vector<double>& xs, Reference ref) {
  HostTensor y = run(op, {tensor(t, xs)});
  Accuracy acc;
  for (size_t i = 0; i < xs.size(); ++i) {
    double x = xs[i], got = y.get(static_cast<int64_t>(i));
    long double want = ref(static_cast<long double>(x));
    double rounded = roundToDType(static_cast<double>(want), t);
    bool special = std::isnan(rounded) || std::isinf(rounded) || rounded == 0;
    if (special) {
      if (!sameBits(got, rounded) && !(rounded == 0 && want != 0 && std::fabs(got) <= DBL_MIN))
        acc.wrong.push_back(fmt::format("{}({}) = {}, want {}", op, x, got, rounded));
      continue;
    }
    double err = std::isfinite(got) ? ulpError(got, want, t) : kInf;
    if (err > acc.ulps) {
      acc.ulps = err;
      acc.worstAt = x;
    }
  }
  return acc;
}

/// Points over the whole real line for dtype t: the special values, random bit patterns
/// (every binade, subnormals included, about equally often), uniform samples of [-5, 5], and
/// dense neighbourhoods of the points where the lowerings switch formulas or functions have
/// their critical points (+-1, the reduction boundaries of atan, the overflow thresholds of
/// sinh and cosh, the poles of tan).
std::vector<double> domainPoints(DType t) {
  bool f64 = t == DType::f64;
  std::vector<double> xs = {0.0, -0.0, kInf, -kInf, kNaN, 1, -1, 0.5, -0.5, 2, -2};
  double maxV = f64 ? DBL_MAX : FLT_MAX, minSub = f64 ? 4.9406564584124654e-324 : 1.4e-45;
  for (double v : {maxV, minSub, f64 ? DBL_MIN : FLT_MIN}) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double v;
    if (f64) {
      std::memcpy(&v, &bits, sizeof v);
    } else {
      auto b32 = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b32, sizeof f);
      v = f;
    }
    if (std::isfinite(v)) xs.push_back(v);
  }
  std::uniform_real_distribution<double> uniform(-5, 5);
  for (int i = 0; i < 20000; ++i)
    xs.push_back(roundToDType(uniform(rng), t));
  // Nearby representable values of `v`: v itself and its neighbours up to 8 steps away.
  auto around = [&](double v) {
    for (double s : {1.0, -1.0}) {
      double w = roundToDType(s * v, t);
      for (int k = 0; k < 8; ++k) {
        xs.push_back(w);
        xs.push_back(-w);
        w = f64 ? std::nextafter(w, kInf) : std::nextafter(static_cast<float>(w), INFINITY);
      }
    }
  };
  int bits = f64 ? 53 : 24;
  for (int k = 1; k <= bits; ++k) { // 1 - 2^-k, 1 + 2^-k: near +-1
    around(1 - std::ldexp(1.0, -k));
    around(1 + std::ldexp(1.0, -k));
  }
  for (double v :
       {0.25, 0.75, 1.375, 4.0, 0x1p-12, 0x1p-27, 0x1p12, 0x1p28, 88.0, 89.41, 709.0, 710.47})
    around(v);
  for (int k = 1; k <= 64; ++k) // tan's poles and zeros
    around(k * M_PI / 2);
  return xs;
}

struct MathCase {
  const char* op;
  Reference ref;
  double f32Ulps, f64Ulps; // the bound each must stay within (measured, rounded up)
};

long double refTan(long double x) {
  return std::tan(x);
}
long double refAsin(long double x) {
  return std::asin(x);
}
long double refAcos(long double x) {
  return std::acos(x);
}
long double refAtan(long double x) {
  return std::atan(x);
}
long double refSinh(long double x) {
  return std::sinh(x);
}
long double refCosh(long double x) {
  return std::cosh(x);
}
long double refAsinh(long double x) {
  return std::asinh(x);
}
long double refAcosh(long double x) {
  return std::acosh(x);
}
long double refAtanh(long double x) {
  return std::atanh(x);
}

} // namespace

TEST_CASE("trigonometric and hyperbolic functions are accurate over their whole domain",
          "[onnx][math]") {
  // Bounds: the worst error measured over domainPoints (see ops_math.cc for the table with the
  // simulator's), rounded up a little.
  const MathCase cases[] = {
      {"Tan", refTan, 2.0, 2.0},     {"Asin", refAsin, 2.5, 3.0},   {"Acos", refAcos, 2.0, 2.25},
      {"Atan", refAtan, 1.75, 1.5},  {"Sinh", refSinh, 1.75, 1.75}, {"Cosh", refCosh, 1.25, 1.25},
      {"Asinh", refAsinh, 2.5, 2.5}, {"Acosh", refAcosh, 3.0, 2.5}, {"Atanh", refAtanh, 2.75, 2.5},
  };
  for (DType t : {DType::f32, DType::f64}) {
    std::vector<double> xs = domainPoints(t);
    for (const MathCase& mc : cases) {
      Accuracy acc = measure(mc.op, t, xs, mc.ref);
      INFO(fmt::format("{} {}: worst {:.3f} ulp at {:.17g}", mc.op, ir::dtypeName(t), acc.ulps,
                       acc.worstAt));
      CHECK(acc.ulps <= (t == DType::f64 ? mc.f64Ulps : mc.f32Ulps));
      CHECK(acc.wrong.empty());
      for (size_t i = 0; i < acc.wrong.size() && i < 5; ++i)
        UNSCOPED_INFO(acc.wrong[i]);
    }
  }
}

TEST_CASE("the functions' special values follow IEEE and numpy", "[onnx][math]") {
  auto eval = [](const std::string& op, std::vector<double> xs) {
    return valuesOf(run(op, {tensor(DType::f32, xs)}));
  };
  auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(fmt::format("element {}: got {}, want {}", i, got[i], want[i]));
      CHECK(sameBits(got[i], want[i]));
    }
  };
  double pi = static_cast<float>(M_PI), halfPi = static_cast<float>(M_PI / 2);
  same(eval("Atan", {kInf, -kInf, -0.0, kNaN}), {halfPi, -halfPi, -0.0, kNaN});
  same(eval("Asin", {1, -1, -0.0, 1.0000001, -2, kInf}), {halfPi, -halfPi, -0.0, kNaN, kNaN, kNaN});
  same(eval("Acos", {1, -1, 0, 1.0000001, -2}), {0.0, pi, halfPi, kNaN, kNaN});
  same(eval("Atanh", {1, -1, -0.0, 1.0000001, -kInf}), {kInf, -kInf, -0.0, kNaN, kNaN});
  same(eval("Acosh", {1, kInf, 0.99999994, -1, -kInf}), {0.0, kInf, kNaN, kNaN, kNaN});
  same(eval("Asinh", {kInf, -kInf, -0.0, FLT_MAX}),
       {kInf, -kInf, -0.0, static_cast<float>(std::asinh(static_cast<double>(FLT_MAX)))});
  same(eval("Sinh", {-0.0, 90, -kInf, kNaN}), {-0.0, kInf, -kInf, kNaN});
  same(eval("Cosh", {-0.0, 90, -kInf, kNaN}), {1.0, kInf, kInf, kNaN});
  // sinh and cosh of 89 are finite although exp(89) is not
  double sinh89 = std::sinh(89.0);
  std::vector<double> big = eval("Sinh", {89, -89});
  CHECK(big[0] == Approx(sinh89).epsilon(2e-7));
  CHECK(big[1] == Approx(-sinh89).epsilon(2e-7));
  CHECK(eval("Cosh", {-89})[0] == Approx(sinh89).epsilon(2e-7));
  same(eval("Tan", {-0.0, kInf, kNaN}), {-0.0, kNaN, kNaN});
}

TEST_CASE("the functions compute f16 and bf16 in f32, and take symbolic shapes", "[onnx][math]") {
  std::vector<double> xs = {-3, -0.75, -0.1, 0.3, 0.9, 2.5, 40};
  for (DType t : {DType::f16, DType::bf16}) {
    HostTensor x = tensor(t, xs);
    ModelBuilder m(18);
    m.input("x", t == DType::f16 ? kHalf : ::onnx::TensorProto::BFLOAT16, {"N"});
    m.node("Atan", {"x"}, {"y"}).output("y");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(g.node(g.outputs()[0]).type.dtype == t);
    HostTensor y = ir::interpret(g, {x}, {{"N", 7}}).at(0);
    for (int64_t i = 0; i < x.numElements(); ++i) // within the final rounding to t
      CHECK(y.get(i) == roundToDType(std::atan(x.get(i)), t));
  }
}

TEST_CASE("the operators take rank 0, size 0 and symbolic shapes", "[onnx][math]") {
  for (const char* op : {"Round", "Atan", "Acosh", "IsNaN", "Softsign"}) {
    INFO(op);
    ModelBuilder scalar(18);
    scalar.input("x", kFloat, {}).node(op, {"x"}, {"y"}).output("y");
    HostTensor x(DType::f32, {});
    x.set(0, 2.5);
    HostTensor y = ir::interpret(importOnnxBytes(scalar.bytes()), {x}).at(0);
    CHECK(y.shape.empty());
    CHECK(y.numElements() == 1);
    ModelBuilder empty(18);
    empty.input("x", kFloat, {"0", "3"}).node(op, {"x"}, {"y"}).output("y");
    y = ir::interpret(importOnnxBytes(empty.bytes()), {HostTensor(DType::f32, {0, 3})}).at(0);
    CHECK(y.shape == std::vector<int64_t>{0, 3});
  }
  ModelBuilder m(18);
  m.input("x", kFloat, {"N"})
      .node("IsInf", {"x"}, {"y"},
            {Attr::integer("detect_positive", 0), Attr::integer("detect_negative", 0)});
  m.output("y");
  HostTensor y =
      ir::interpret(importOnnxBytes(m.bytes()), {tensor(DType::f32, {kInf, -kInf})}, {{"N", 2}})
          .at(0);
  CHECK(valuesOf(y) == std::vector<double>{0, 0});
  ModelBuilder ints(18);
  ints.input("x", kInt64, {"N"}).node("Shrink", {"x"}, {"y"}, {Attr::real("lambd", 1e30f)});
  ints.output("y");
  y = ir::interpret(importOnnxBytes(ints.bytes()), {intTensor(DType::i64, {-5, 5, 0})}, {{"N", 3}})
          .at(0);
  CHECK(intsOf(y) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("the functions take floats only and exist from their opset", "[onnx][math]") {
  CHECK_THAT(errorOf(oneNode("Atan", {{kInt32, 3}})),
             Contains("input 0 is i32; Atan takes a float tensor"));
  CHECK_THAT(errorOf(oneNode("Sinh", {{kFloat, 3}}, {}, 8)),
             Contains("Sinh is defined from opset 9"));
  CHECK_THAT(errorOf(oneNode("Round", {{kInt64, 3}})), Contains("Round takes a float tensor"));
}

TEST_CASE("Round rounds halves to even, near 2^23 and 2^52 too", "[onnx][math]") {
  std::vector<double> xs = {0.5,       1.5,       2.5,        -0.5,      -1.5,    -2.5, 0.49999997,
                            2.4999998, 8388607.5, -8388607.5, 8388606.5, 8388609, 1e30, -0.4,
                            0.4,       -0.0,      kInf,       -kInf,     kNaN,    -3.5, 5.5000005};
  std::vector<double> want = {0, 2,       2,        -0.0,    -2,      -2,   0,
                              2, 8388608, -8388608, 8388606, 8388609, 1e30, -0.0,
                              0, -0.0,    kInf,     -kInf,   kNaN,    -4,   6};
  std::vector<double> got = valuesOf(run("Round", {tensor(DType::f32, xs)}));
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO(fmt::format("Round({}) = {}, want {}", xs[i], got[i], want[i]));
    CHECK(sameBits(got[i], static_cast<float>(want[i])));
  }
  // Against the C library's round-half-even (the default rounding mode) on every binade.
  for (DType t : {DType::f32, DType::f64, DType::f16}) {
    std::vector<double> many;
    std::mt19937_64 rng(3);
    for (int i = 0; i < 4000; ++i) {
      double v =
          std::ldexp(static_cast<double>(rng() % 4096) / 4 - 512, static_cast<int>(rng() % 60) - 8);
      many.push_back(roundToDType(v, t));
    }
    many.push_back(roundToDType(4503599627370494.5, t)); // 2^52 - 1.5 -> ...494 in f64
    many.push_back(roundToDType(4503599627370495.5, t)); // 2^52 - 0.5 -> 2^52
    many.push_back(roundToDType(1022.5, t));             // exact in f16
    many.push_back(roundToDType(1023.5, t));
    HostTensor y = run("Round", {tensor(t, many)});
    for (size_t i = 0; i < many.size(); ++i) {
      INFO(fmt::format("{} Round({})", ir::dtypeName(t), many[i]));
      CHECK(sameBits(y.get(static_cast<int64_t>(i)), std::nearbyint(many[i])));
    }
  }
}

TEST_CASE("Mod: fmod=0 takes the divisor's sign (Python), fmod=1 the dividend's (C)",
          "[onnx][math]") {
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> a = {-7, 7, -7, 7, 0, 6, -6, kMin, kMin, kMax, -1};
  std::vector<int64_t> b = {3, -3, -3, 3, 5, 3, 3, -1, 3, -2, kMin};
  // Python's a % b
  std::vector<int64_t> python = {2, -2, -1, 1, 0, 0, 0, 0, 1, -1, -1};
  CHECK(intsOf(run("Mod", {intTensor(DType::i64, a), intTensor(DType::i64, b)})) == python);
  std::vector<int64_t> c = {-1, 1, -1, 1, 0, 0, 0, 0, -2, 1, -1};
  CHECK(intsOf(run("Mod", {intTensor(DType::i64, a), intTensor(DType::i64, b)},
                   {Attr::integer("fmod", 1)})) == c);
  for (DType t : {DType::i8, DType::i32}) {
    std::vector<int64_t> small = {-7, 7, -7, 7, -128 + (t == DType::i32), 127};
    std::vector<int64_t> by = {3, -3, -3, 3, 3, -4};
    auto got = intsOf(run("Mod", {intTensor(t, small), intTensor(t, by)}));
    CHECK(got == std::vector<int64_t>{2, -2, -1, 1, t == DType::i8 ? 1 : 2, -1});
  }
  // floats: C's fmod, exactly, with its special values
  std::vector<double> x = {-7.5, 7.5, kInf, 1, -0.0, 5, 1e30};
  std::vector<double> y = {2, -2, 2, 0, 3, kInf, 3};
  std::vector<double> got = valuesOf(
      run("Mod", {tensor(DType::f32, x), tensor(DType::f32, y)}, {Attr::integer("fmod", 1)}));
  for (size_t i = 0; i < x.size(); ++i) {
    float want = std::fmod(static_cast<float>(x[i]), static_cast<float>(y[i]));
    INFO(fmt::format("fmod({}, {}) = {}, want {}", x[i], y[i], got[i], want));
    CHECK(sameBits(got[i], want));
  }
}

TEST_CASE("Mod broadcasts, and refuses what ONNX does not define", "[onnx][math]") {
  ModelBuilder m(13);
  m.input("a", kInt64, {"2", "3"}).input("b", kInt64, {"3"});
  m.node("Mod", {"a", "b"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  HostTensor a(DType::i64, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    a.setInt(i, i - 3); // -3 .. 2
  auto out = ir::interpret(g, {a, intTensor(DType::i64, {2, -2, 4})}).at(0);
  CHECK(intsOf(out) == std::vector<int64_t>{1, 0, 3, 0, -1, 2});

  CHECK_THAT(errorOf(oneNode("Mod", {{kFloat, 2}, {kFloat, 2}})),
             Contains("operands are f32; for floats ONNX requires fmod=1"));
  CHECK_THAT(errorOf(oneNode("Mod", {{kInt64, 2}, {kInt64, 2}}, {Attr::integer("fmod", 2)})),
             Contains("attribute fmod is 2; it must be 0 or 1"));
  CHECK_THAT(errorOf(oneNode("Mod", {{kInt64, 2}, {kInt32, 2}})), Contains("operands have dtypes"));
  CHECK_THAT(errorOf(oneNode("Mod", {{kInt64, 2}, {kInt64, 2}}, {}, 9)),
             Contains("Mod is defined from opset 10"));
  // An integer divisor of 0 imports; the interpreter refuses it as it does the IR's rem.
  try {
    run("Mod", {intTensor(DType::i32, {5, 6}), intTensor(DType::i32, {2, 0})});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains("division by zero"));
  }
}

TEST_CASE("Xor is a != b on bools, broadcast as the other logical ops", "[onnx][math]") {
  auto bools = [](std::vector<double> v) { return tensor(DType::boolean, v); };
  CHECK(valuesOf(run("Xor", {bools({1, 1, 0, 0}), bools({1, 0, 1, 0})})) ==
        std::vector<double>{0, 1, 1, 0});
  ModelBuilder legacy(6); // opset 1..6: broadcast=1 aligns B at axis
  legacy.input("a", kBool, {"2", "3"}).input("b", kBool, {"2"});
  legacy.node("Xor", {"a", "b"}, {"y"}, {Attr::integer("broadcast", 1), Attr::integer("axis", 0)});
  legacy.output("y");
  ir::Graph g = importOnnxBytes(legacy.bytes());
  HostTensor a(DType::boolean, {2, 3});
  a.set(0, 1);
  a.set(4, 1);
  auto out = ir::interpret(g, {a, bools({0, 1})}).at(0);
  CHECK(valuesOf(out) == std::vector<double>{1, 0, 0, 1, 0, 1});
  CHECK_THAT(errorOf(oneNode("Xor", {{kInt64, 2}, {kInt64, 2}})),
             Contains("operands are i64 and i64; Xor takes bool tensors"));
}

TEST_CASE("IsInf detects the infinities its attributes ask for, IsNaN the NaNs", "[onnx][math]") {
  std::vector<double> xs = {-kInf, -1, 0, kInf, kNaN, FLT_MAX};
  for (DType t : {DType::f32, DType::f64, DType::f16}) {
    HostTensor x = tensor(t, xs);
    double big = t == DType::f16 ? 1 : 0; // FLT_MAX rounds to inf in f16
    CHECK(valuesOf(run("IsInf", {x})) == std::vector<double>{1, 0, 0, 1, 0, big});
    CHECK(valuesOf(run("IsInf", {x}, {Attr::integer("detect_negative", 0)})) ==
          std::vector<double>{0, 0, 0, 1, 0, big});
    CHECK(valuesOf(run("IsInf", {x}, {Attr::integer("detect_positive", 0)})) ==
          std::vector<double>{1, 0, 0, 0, 0, 0});
    CHECK(
        valuesOf(run("IsInf", {x},
                     {Attr::integer("detect_positive", 0), Attr::integer("detect_negative", 0)})) ==
        std::vector<double>{0, 0, 0, 0, 0, 0});
    CHECK(valuesOf(run("IsNaN", {x})) == std::vector<double>{0, 0, 0, 0, 1, 0});
  }
  CHECK_THAT(errorOf(oneNode("IsNaN", {{kInt32, 2}})), Contains("IsNaN takes a float tensor"));
}

TEST_CASE("Celu, HardSwish, Softsign and ThresholdedRelu follow their formulas", "[onnx][math]") {
  auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
  };
  HostTensor x = tensor(DType::f32, {-3, -1, 0, 1, 3, 4});
  near(valuesOf(run("Celu", {x}, {Attr::real("alpha", 2)})),
       {2 * std::expm1(-1.5), 2 * std::expm1(-0.5), 0, 1, 3, 4});
  near(valuesOf(run("Celu", {x})), {std::expm1(-3), std::expm1(-1), 0, 1, 3, 4});
  CHECK_THAT(errorOf(oneNode("Celu", {{kFloat, 2}}, {Attr::real("alpha", 0)})),
             Contains("attribute alpha is 0"));
  near(valuesOf(run("HardSwish", {x})), {0, -1.0 / 3, 0, 2.0 / 3, 3, 4});
  near(valuesOf(run("Softsign", {tensor(DType::f32, {-3, 0, 1, 1e30})})), {-0.75, 0, 0.5, 1});
  near(valuesOf(run("ThresholdedRelu", {tensor(DType::f32, {0.5, 1, 1.5, -2})})), {0, 0, 1.5, 0});
  near(
      valuesOf(run("ThresholdedRelu", {tensor(DType::f32, {-2, -0.5})}, {Attr::real("alpha", -1)})),
      {0, -0.5});
}

TEST_CASE("Shrink: floats directly, integers with exact bounds", "[onnx][math]") {
  CHECK(valuesOf(run("Shrink", {tensor(DType::f32, {-1, -0.5, 0, 0.5, 1})})) ==
        std::vector<double>{-1, 0, 0, 0, 1});
  CHECK(valuesOf(run("Shrink", {tensor(DType::f32, {-2, -1, 0, 1, 2})},
                     {Attr::real("bias", 1.5), Attr::real("lambd", 1.5)})) ==
        std::vector<double>{-0.5, 0, 0, 0, 0.5});
  HostTensor ints = intTensor(DType::i64, {-3, -2, -1, 0, 1, 2, 3});
  CHECK(intsOf(run("Shrink", {ints}, {Attr::real("bias", 1), Attr::real("lambd", 1.5)})) ==
        std::vector<int64_t>{-2, -1, 0, 0, 0, 1, 2});
  // a fractional bias: (x + bias) truncated toward zero, as numpy's astype
  CHECK(intsOf(run("Shrink", {ints}, {Attr::real("bias", 0.5), Attr::real("lambd", 2)})) ==
        std::vector<int64_t>{-2, 0, 0, 0, 0, 0, 2});
  // bounds past the dtype's range never hold
  CHECK(intsOf(run("Shrink", {intTensor(DType::i8, {-128, 0, 127})}, {Attr::real("lambd", 300)})) ==
        std::vector<int64_t>{0, 0, 0});
  CHECK(intsOf(run("Shrink", {intTensor(DType::i8, {-128, 0, 127})},
                   {Attr::real("lambd", -0.5)})) == std::vector<int64_t>{-128, 0, 127});
}

TEST_CASE("PRelu broadcasts the slope to X, one way only", "[onnx][math]") {
  ModelBuilder m(16);
  m.input("x", kFloat, {"2", "3"}).initializer("slope", {2, 1}, {0.5, 2});
  m.node("PRelu", {"x", "slope"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  HostTensor x(DType::f32, {2, 3});
  std::vector<double> xv = {-2, 0, 3, -1, 4, -0.5};
  for (int64_t i = 0; i < 6; ++i)
    x.set(i, xv[static_cast<size_t>(i)]);
  CHECK(valuesOf(ir::interpret(g, {x}).at(0)) == std::vector<double>{-1, 0, 3, -2, 4, -1});

  CHECK(intsOf(run("PRelu", {intTensor(DType::i32, {-3, 4}), intTensor(DType::i32, {2, 2})})) ==
        std::vector<int64_t>{-6, 4});
  CHECK(valuesOf(run("PRelu", {tensor(DType::f32, {-3, 4}), tensor(DType::f32, {0.25})}, {}, 6)) ==
        std::vector<double>{-0.75, 4});
  ModelBuilder bad(16);
  bad.input("x", kFloat, {"3"}).input("slope", kFloat, {"2", "3"});
  bad.node("PRelu", {"x", "slope"}, {"y"}).output("y");
  CHECK_THAT(errorOf(bad.bytes()), Contains("slope [2, 3] does not broadcast to X [3]"));
}

TEST_CASE("PRelu before opset 7 takes a [C] slope per channel, as PyTorch exported it",
          "[onnx][math]") {
  // X [2, 2, 3], slope [2]: numpy would align the slope with the last axis (and refuse it);
  // Caffe2's PRelu (opsets 1 and 6) applies slope[c] to channel c (the pytorch-converted
  // test_PReLU_*_multiparam cases). From opset 7 the same model is an error.
  auto model = [](int opset) {
    ModelBuilder m(opset);
    m.input("x", kFloat, {"2", "2", "3"}).initializer("slope", {2}, {0.5, 2});
    m.node("PRelu", {"x", "slope"}, {"y"}).output("y");
    return m;
  };
  HostTensor x = tensor({2, 2, 3}, {-2, 1, -4, -2, 1, -4, -1, 0, 3, -1, 0, 3});
  CHECK(valuesOf(ir::interpret(importOnnxBytes(model(6).bytes()), {x}).at(0)) ==
        std::vector<double>{-1, 1, -2, -4, 1, -8, -0.5, 0, 3, -2, 0, 3});
  CHECK_THAT(errorOf(model(7).bytes()), Contains("shapes [2, 2, 3] and [2] cannot be broadcast"));
}

TEST_CASE("CastLike casts to the dtype of its second input", "[onnx][math]") {
  HostTensor x = tensor(DType::f32, {1.7, -1.7, 2.5});
  HostTensor toInt = run("CastLike", {x, intTensor(DType::i64, {0})});
  CHECK(toInt.dtype == DType::i64);
  CHECK(intsOf(toInt) == std::vector<int64_t>{1, -1, 2});
  HostTensor toHalf = run("CastLike", {x, tensor(DType::f16, {0})});
  CHECK(toHalf.dtype == DType::f16);
  CHECK(valuesOf(toHalf) ==
        std::vector<double>{roundToDType(1.7f, DType::f16), roundToDType(-1.7f, DType::f16), 2.5});
  CHECK(valuesOf(run("CastLike", {x, tensor(DType::f32, {0})})) == valuesOf(x));
  CHECK_THAT(errorOf(oneNode("CastLike", {{kFloat, 2}, {kInt64, 1}}, {}, 14)),
             Contains("CastLike is defined from opset 15"));
}

// --- Det ----------------------------------------------------------------------------------------

namespace {

/// Det of X (f64 unless `elem` says otherwise) of the given dims.
std::string det(const std::vector<std::string>& dims, int elem = kDouble) {
  ModelBuilder m(11);
  m.input("x", elem, dims).node("Det", {"x"}, {"y"}, {}, "d").output("y");
  return m.bytes();
}

/// The determinant of the n x n matrix a (row-major) by its definition, a sum over the
/// permutations, in long double.
double leibniz(const std::vector<double>& a, int n) {
  std::vector<int> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    p[static_cast<size_t>(i)] = i;
  long double sum = 0;
  do {
    int inversions = 0;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        inversions += p[static_cast<size_t>(i)] > p[static_cast<size_t>(j)];
    long double term = inversions % 2 ? -1 : 1;
    for (int i = 0; i < n; ++i)
      term *= a[static_cast<size_t>(i * n + p[static_cast<size_t>(i)])];
    sum += term;
  } while (std::next_permutation(p.begin(), p.end()));
  return static_cast<double>(sum);
}

} // namespace

TEST_CASE("Det: cofactors up to 4 x 4, pivoted elimination beyond", "[onnx][math]") {
  auto run = [](const std::string& bytes, const HostTensor& x, const ir::Binding& b = {}) {
    return ir::interpret(importOnnxBytes(bytes), {x}, b).at(0);
  };
  SECTION("2 x 2 and a symbolic batch of 3 x 3") {
    CHECK(valuesOf(run(det({"2", "2"}), test::tensor({2, 2}, {1, 2, 3, 4}, DType::f64))) ==
          std::vector<double>{-2});
    HostTensor x = test::tensor({2, 3, 3}, {2, -1, 0, 1, 3, 2, 0, 1, 4, 0, 1, 0, 1, 0, 0, 0, 0, 5},
                                DType::f64);
    CHECK(valuesOf(run(det({"B", "3", "3"}), x, {{"B", 2}})) == std::vector<double>{24, -5});
  }
  SECTION("1 x 1 is the element, 0 x 0 is 1, f16 stays f16") {
    CHECK(valuesOf(run(det({"2", "1", "1"}), test::tensor({2, 1, 1}, {7, -3}, DType::f64))) ==
          std::vector<double>{7, -3});
    CHECK(valuesOf(run(det({"2", "0", "0"}), test::tensor({2, 0, 0}, {}, DType::f64))) ==
          std::vector<double>{1, 1});
    HostTensor y = run(det({"2", "2"}, kHalf), test::tensor({2, 2}, {1, 2, 3, 4}, DType::f16));
    CHECK(y.dtype == DType::f16);
    CHECK(valuesOf(y) == std::vector<double>{-2});
  }
  SECTION("6 x 6 and 5 x 5 need row swaps; a singular matrix gives 0") {
    // a zero leading element and small pivots, which elimination without swaps would divide by
    std::vector<double> a = {0, 2,  1, -3, 4, 1, 1e-3, 5, -2, 1,  0, 3, 4, 1,  0, 2, -1, 1,
                             2, -3, 1, 1,  1, 0, 7,    1, 3,  -4, 2, 2, 1, -1, 6, 0, 2,  -5};
    HostTensor y = run(det({"6", "6"}), test::tensor({6, 6}, a, DType::f64));
    CHECK(valuesOf(y).at(0) == Approx(leibniz(a, 6)).epsilon(1e-12));
    // 5 x 5 rows: r0, r1, r0 + r1 (singular), r3, r4
    std::vector<double> b = {0, 3, 1, 2, -1, 4, 0, 2, 1, 1, 4, 3, 3,
                             3, 0, 1, 1, 0,  5, 2, 2, 2, 1, 0, 1};
    CHECK(valuesOf(run(det({"5", "5"}), test::tensor({5, 5}, b, DType::f64))).at(0) ==
          Approx(0).margin(1e-12));
  }
  SECTION("bad inputs") {
    CHECK_THAT(errorOf(det({"2", "3"})), Contains("X [2, 3] holds 2 x 3 matrices; Det takes "
                                                  "square ones"));
    CHECK_THAT(errorOf(det({"3"})), Contains("X [3] needs rank 2 or more"));
    CHECK_THAT(errorOf(det({"M", "M"})), Contains("X [M, M] has a symbolic matrix size"));
    CHECK_THAT(errorOf(det({"65", "65"})),
               Contains("the determinant of 65 x 65 matrices is not supported"));
    CHECK_THAT(errorOf(det({"2", "2"}, kInt32)), Contains("Det takes a float tensor"));
  }
}
