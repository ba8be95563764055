// ONNX's UINT64, held in an i64 with the same bits, keeps its unsigned meaning past 2^63:
// order, division, remainder, shifts, Abs, Sign and conversions to and from floats, checked
// against C++'s uint64_t on the reference interpreter and on the sim device under astitch.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "compile.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

constexpr int kUint64 = ::onnx::TensorProto::UINT64;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kTop = uint64_t(1) << 63;

/// Values on both sides of 2^63 and at the ends; every pair of them is a case.
const std::vector<uint64_t> kValues = {0, 1, 2, 3, 7, 1ull << 32, (1ull << 62) + 5, kTop - 1,
                                       kTop, kTop + 1, kTop + 12345, kMax - 1, kMax};

HostTensor u64Tensor(const std::vector<uint64_t>& v) {
  HostTensor t(DType::i64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.setInt(static_cast<int64_t>(i), std::bit_cast<int64_t>(v[i]));
  return t;
}

HostTensor u64Scalar(uint64_t v) {
  HostTensor t(DType::i64, {});
  t.setInt(0, std::bit_cast<int64_t>(v));
  return t;
}

std::vector<uint64_t> u64Values(const HostTensor& t) {
  std::vector<uint64_t> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(std::bit_cast<uint64_t>(t.getInt(i)));
  return v;
}

/// a and b: every pair of kValues, as two vectors.
std::pair<std::vector<uint64_t>, std::vector<uint64_t>> allPairs(bool nonzeroB) {
  std::vector<uint64_t> a, b;
  for (uint64_t x : kValues)
    for (uint64_t y : kValues) {
      if (nonzeroB && y == 0) continue; // the interpreter refuses a zero divisor
      a.push_back(x);
      b.push_back(y);
    }
  return {a, b};
}

/// The outputs of `model` on `inputs` (its symbol "n" bound to input 0's length), from the
/// interpreter and from the sim device; the two must agree bit for bit (CHECKed), the
/// interpreter's are returned.
std::vector<HostTensor> runBoth(ModelBuilder& model, const std::vector<HostTensor>& inputs) {
  ir::Graph g = weft::onnx::importOnnxBytes(model.bytes());
  ir::Binding binding = {{"n", inputs.at(0).numElements()}};
  std::vector<HostTensor> want = ir::interpret(g, inputs, binding);
  CompileOptions o;
  o.policy = Policy::AStitch;
  o.cacheDir = "off";
  auto compiled = compile(g, o);
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  std::vector<HostTensor> got = exe.run(inputs, binding);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    CHECK(got[i].bytes == want[i].bytes);
  }
  return want;
}

} // namespace

TEST_CASE("UINT64 compares, Max and Min order values past 2^63 as unsigned", "[onnx][uint64]") {
  auto [a, b] = allPairs(false);
  ModelBuilder m(13);
  m.input("a", kUint64, {"n"}).input("b", kUint64, {"n"});
  m.node("Less", {"a", "b"}, {"lt"}).node("GreaterOrEqual", {"a", "b"}, {"ge"});
  m.node("Max", {"a", "b"}, {"max"}).node("Min", {"a", "b"}, {"min"});
  m.output("lt").output("ge").output("max").output("min");
  auto out = runBoth(m, {u64Tensor(a), u64Tensor(b)});
  std::vector<uint64_t> max = u64Values(out[2]), min = u64Values(out[3]);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i] << " vs " << b[i]);
    CHECK(out[0].get(static_cast<int64_t>(i)) == (a[i] < b[i]));
    CHECK(out[1].get(static_cast<int64_t>(i)) == (a[i] >= b[i]));
    CHECK(max[i] == std::max(a[i], b[i]));
    CHECK(min[i] == std::min(a[i], b[i]));
  }
}

TEST_CASE("UINT64 Div, Mod and BitShift RIGHT divide as unsigned", "[onnx][uint64]") {
  auto [a, b] = allPairs(/*nonzeroB=*/true);
  ModelBuilder m(13);
  m.input("a", kUint64, {"n"}).input("b", kUint64, {"n"});
  m.node("Div", {"a", "b"}, {"q"}).node("Mod", {"a", "b"}, {"r"});
  m.output("q").output("r");
  auto out = runBoth(m, {u64Tensor(a), u64Tensor(b)});
  std::vector<uint64_t> q = u64Values(out[0]), r = u64Values(out[1]);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i] << " / " << b[i]);
    CHECK(q[i] == a[i] / b[i]);
    CHECK(r[i] == a[i] % b[i]);
  }
  std::vector<uint64_t> x, s;
  for (uint64_t v : kValues)
    for (uint64_t shift : std::vector<uint64_t>{0, 1, 5, 62, 63, 64, 100, kMax}) {
      x.push_back(v);
      s.push_back(shift);
    }
  ModelBuilder shifts(13);
  shifts.input("x", kUint64, {"n"}).input("s", kUint64, {"n"});
  shifts.node("BitShift", {"x", "s"}, {"r"}, {Attr::text("direction", "RIGHT")});
  shifts.node("BitShift", {"x", "s"}, {"l"}, {Attr::text("direction", "LEFT")});
  shifts.output("r").output("l");
  auto sh = runBoth(shifts, {u64Tensor(x), u64Tensor(s)});
  std::vector<uint64_t> right = u64Values(sh[0]), left = u64Values(sh[1]);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO(x[i] << " shifted by " << s[i]);
    CHECK(right[i] == (s[i] >= 64 ? 0 : x[i] >> s[i]));
    CHECK(left[i] == (s[i] >= 64 ? 0 : x[i] << s[i]));
  }
}

TEST_CASE("UINT64 reductions, Clip, Abs, Sign and casts keep the unsigned value",
          "[onnx][uint64]") {
  ModelBuilder m(13);
  m.input("x", kUint64, {"n"}).input("lo", kUint64, {}).input("hi", kUint64, {});
  m.node("ArgMax", {"x"}, {"argmax"}, {Attr::integer("keepdims", 0)});
  m.node("ReduceMin", {"x"}, {"rmin"}, {Attr::integer("keepdims", 0)});
  m.node("Clip", {"x", "lo", "hi"}, {"clip"});
  m.node("Abs", {"x"}, {"abs"}).node("Sign", {"x"}, {"sign"});
  m.node("Cast", {"x"}, {"f64"}, {Attr::integer("to", kDouble)});
  m.node("Cast", {"x"}, {"f32"}, {Attr::integer("to", kFloat)});
  m.node("Cast", {"f64"}, {"back"}, {Attr::integer("to", kUint64)});
  m.initializerInts("k", {1}, {2}).node("TopK", {"x", "k"}, {"top", "at"});
  for (const char* o : {"argmax", "rmin", "clip", "abs", "sign", "f64", "f32", "back", "top", "at"})
    m.output(o);
  std::vector<uint64_t> x = {5, kTop + 1, kMax - 1, 3, kTop - 1, 1ull << 40};
  uint64_t lo = 4, hi = kTop;
  auto out = runBoth(m, {u64Tensor(x), u64Scalar(lo), u64Scalar(hi)});
  CHECK(out[0].getInt(0) == 2);
  CHECK(u64Values(out[1]) == std::vector<uint64_t>{3});
  std::vector<uint64_t> clip = u64Values(out[2]);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO(x[i]);
    CHECK(clip[i] == std::min(std::max(x[i], lo), hi));
    CHECK(u64Values(out[3])[i] == x[i]);
    CHECK(out[4].getInt(static_cast<int64_t>(i)) == 1);
    CHECK(out[5].get(static_cast<int64_t>(i)) == static_cast<double>(x[i]));
    CHECK(static_cast<float>(out[6].get(static_cast<int64_t>(i))) == static_cast<float>(x[i]));
    // back from the double: the double's value, truncated (2^64 - 2 rounds to 2^64, which is
    // past UINT64: not compared)
    double d = static_cast<double>(x[i]);
    if (d < 18446744073709551616.0) CHECK(u64Values(out[7])[i] == static_cast<uint64_t>(d));
  }
  CHECK(u64Values(out[8]) == std::vector<uint64_t>{kMax - 1, kTop + 1});
  CHECK(out[9].getInt(0) == 2);
  CHECK(out[9].getInt(1) == 1);
}

TEST_CASE("UINT64 scatter with reduction max keeps the unsigned maximum", "[onnx][uint64]") {
  ModelBuilder m(18);
  m.input("data", kUint64, {"3"}).input("updates", kUint64, {"3"});
  m.initializerInts("at", {3}, {0, 1, 1});
  m.node("ScatterElements", {"data", "at", "updates"}, {"y"}, {Attr::text("reduction", "max")});
  m.output("y");
  auto out = runBoth(m, {u64Tensor({5, kTop + 1, 7}), u64Tensor({kTop, 9, kMax})});
  CHECK(u64Values(out[0]) == std::vector<uint64_t>{kTop, kMax, 7});
}

TEST_CASE("UINT64 operators whose int64 result differs are refused, not run", "[onnx][uint64]") {
  ModelBuilder m(13);
  m.input("x", kUint64, {"4"});
  m.node("ReduceMean", {"x"}, {"y"}).output("y");
  try {
    weft::onnx::importOnnxBytes(m.bytes());
    FAIL("expected an UnsupportedError");
  } catch (const weft::onnx::UnsupportedError& e) {
    CHECK_THAT(std::string(e.what()), Contains("ReduceMean on UINT64 values is not supported"));
  }
}

TEST_CASE("UINT64 TopK over a long row (k rounds) picks the unsigned largest", "[onnx][uint64]") {
  std::vector<uint64_t> x(40);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i * 1000;
  x[7] = kMax, x[21] = kTop, x[33] = kTop; // a tie: the lower position first
  ModelBuilder m(13);
  m.input("x", kUint64, {"40"}).initializerInts("k", {1}, {3}); // static: the rounds path
  m.node("TopK", {"x", "k"}, {"top", "at"}).output("top").output("at");
  auto out = runBoth(m, {u64Tensor(x)});
  CHECK(u64Values(out[0]) == std::vector<uint64_t>{kMax, kTop, kTop});
  CHECK(out[1].getInt(0) == 7);
  CHECK(out[1].getInt(1) == 21);
  CHECK(out[1].getInt(2) == 33);
}
