// ReduceL1, ReduceSumSquare and ReduceLogSum (axes as attribute and input, keepdims, noop,
// integers, empty reductions), InstanceNormalization, MeanVarianceNormalization,
// GlobalAveragePool and GlobalMaxPool: checked on the reference interpreter against values
// worked out from each operator's definition, with the errors a bad node gives.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

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

/// Imports `m` and runs it on the interpreter.
HostTensor run1(const ModelBuilder& m, const std::vector<HostTensor>& inputs,
                const ir::Binding& b = {}) {
  return ir::interpret(importOnnxBytes(m.bytes()), inputs, b).at(0);
}

/// One node `op` on x (elemType, dims) with `attrs`; its output is y.
ModelBuilder oneNode(int opset, const std::string& op, const std::vector<std::string>& dims,
                     const std::vector<Attr>& attrs = {}, int elemType = kFloat) {
  ModelBuilder m(opset);
  m.input("x", elemType, dims).node(op, {"x"}, {"y"}, attrs, "n").output("y");
  return m;
}

/// A reduction over `axes` with `attrs`, the axes an attribute (opset 13) or an input (18).
ModelBuilder reduceModel(int opset, const std::string& op, const std::vector<std::string>& dims,
                         const std::vector<int64_t>& axes, std::vector<Attr> attrs = {},
                         int elemType = kFloat) {
  ModelBuilder m(opset);
  m.input("x", elemType, dims);
  if (opset >= 18) {
    m.initializerInts("axes", {static_cast<int64_t>(axes.size())}, axes);
    m.node(op, {"x", "axes"}, {"y"}, attrs, "n");
  } else {
    attrs.push_back(Attr::list("axes", axes));
    m.node(op, {"x"}, {"y"}, attrs, "n");
  }
  m.output("y");
  return m;
}

// x [2, 3] = [[1, -2, 3], [-4, 5, -6]]
const std::vector<double> kX23{1, -2, 3, -4, 5, -6};

} // namespace

TEST_CASE("ReduceL1, ReduceSumSquare and ReduceLogSum reduce over axes given either way",
          "[onnx][reduce]") {
  auto x = tensor({2, 3}, kX23);
  auto ax = tensor({2, 3}, {1, 2, 3, 4, 5, 6}); // positive, for the logarithm
  for (int opset : {11, 13, 18}) {
    INFO("opset " << opset);
    auto l1 = run1(reduceModel(opset, "ReduceL1", {"2", "3"}, {1}), {x});
    CHECK(l1.shape == std::vector<int64_t>{2, 1}); // keepdims defaults to 1
    CHECK(valuesOf(l1) == std::vector<double>{6, 15});
    auto ss =
        run1(reduceModel(opset, "ReduceSumSquare", {"2", "3"}, {0}, {Attr::integer("keepdims", 0)}),
             {x});
    CHECK(ss.shape == std::vector<int64_t>{3});
    CHECK(valuesOf(ss) == std::vector<double>{17, 29, 45});
    auto ls = run1(reduceModel(opset, "ReduceLogSum", {"2", "3"}, {-1}), {ax});
    CHECK(ls.shape == std::vector<int64_t>{2, 1});
    checkClose(ls, {std::log(6.0), std::log(15.0)});
  }
  SECTION("no axes reduces every axis; with noop_with_empty_axes each element alone") {
    for (int opset : {13, 18}) {
      INFO("opset " << opset);
      auto all = run1(oneNode(opset, "ReduceL1", {"2", "3"}), {x});
      CHECK(all.shape == std::vector<int64_t>{1, 1});
      CHECK(valuesOf(all) == std::vector<double>{21});
      auto flat =
          run1(oneNode(opset, "ReduceSumSquare", {"2", "3"}, {Attr::integer("keepdims", 0)}), {x});
      CHECK(flat.shape.empty());
      CHECK(valuesOf(flat) == std::vector<double>{91});
    }
    // From 18 an absent (or empty) axes input with noop_with_empty_axes reduces nothing; the
    // elementwise parts still apply: |x|, x^2, log x.
    std::vector<Attr> noop{Attr::integer("noop_with_empty_axes", 1)};
    CHECK(valuesOf(run1(oneNode(18, "ReduceL1", {"2", "3"}, noop), {x})) ==
          std::vector<double>{1, 2, 3, 4, 5, 6});
    CHECK(valuesOf(run1(oneNode(18, "ReduceSumSquare", {"2", "3"}, noop), {x})) ==
          std::vector<double>{1, 4, 9, 16, 25, 36});
    checkClose(run1(reduceModel(18, "ReduceLogSum", {"2", "3"}, {}, noop), {ax}),
               {0, std::log(2.0), std::log(3.0), std::log(4.0), std::log(5.0), std::log(6.0)});
    // Before 18 there is no noop: an empty axes attribute is every axis, and
    // noop_with_empty_axes is no attribute of the operator.
    auto before = run1(reduceModel(13, "ReduceL1", {"2", "3"}, {}), {x});
    CHECK(valuesOf(before) == std::vector<double>{21});
    CHECK_THAT(errorOf(reduceModel(13, "ReduceL1", {"2", "3"}, {}, noop).bytes()),
               Contains("ReduceL1-13 has no attribute \"noop_with_empty_axes\" (its attributes: "
                        "axes, keepdims; ReduceL1-18 has it)"));
  }
}

TEST_CASE("ReduceL1, ReduceSumSquare and ReduceLogSum of integers stay integers",
          "[onnx][reduce]") {
  for (auto [elem, dtype] : {std::pair{kInt32, DType::i32}, std::pair{kInt64, DType::i64}}) {
    INFO(dtypeName(dtype));
    auto x = tensor({2, 3}, kX23, dtype);
    auto l1 = run1(reduceModel(13, "ReduceL1", {"2", "3"}, {1}, {}, elem), {x});
    CHECK(l1.dtype == dtype);
    CHECK(valuesOf(l1) == std::vector<double>{6, 15});
    auto ss = run1(reduceModel(13, "ReduceSumSquare", {"2", "3"}, {1}, {}, elem), {x});
    CHECK(valuesOf(ss) == std::vector<double>{14, 77});
    // log of the integer sum, truncated: log(2) = 0.69, log(21) = 3.04.
    auto xs = tensor({2, 3}, {1, 0, 1, 6, 7, 8}, dtype);
    auto ls = run1(reduceModel(13, "ReduceLogSum", {"2", "3"}, {1}, {}, elem), {xs});
    CHECK(ls.dtype == dtype);
    CHECK(valuesOf(ls) == std::vector<double>{0, 3});
  }
}

TEST_CASE("reductions over a size-0 axis give the empty sum's value", "[onnx][reduce]") {
  // numpy and ONNX: the sum of no values is 0, so L1 and SumSquare are 0 and LogSum is -inf.
  HostTensor x(DType::f32, {2, 0});
  auto l1 = run1(reduceModel(18, "ReduceL1", {"2", "0"}, {1}, {Attr::integer("keepdims", 0)}), {x});
  CHECK(l1.shape == std::vector<int64_t>{2});
  CHECK(valuesOf(l1) == std::vector<double>{0, 0});
  CHECK(valuesOf(run1(reduceModel(18, "ReduceSumSquare", {"2", "0"}, {1}), {x})) ==
        std::vector<double>{0, 0});
  auto ls = run1(reduceModel(18, "ReduceLogSum", {"2", "0"}, {1}), {x});
  CHECK(ls.shape == std::vector<int64_t>{2, 1});
  CHECK(valuesOf(ls) == std::vector<double>{-kInf, -kInf});
  SECTION("a size-0 axis that is kept gives an empty result") {
    HostTensor e(DType::f32, {0, 3});
    auto r = run1(reduceModel(13, "ReduceL1", {"0", "3"}, {1}), {e});
    CHECK(r.shape == std::vector<int64_t>{0, 1});
    CHECK(r.numElements() == 0);
  }
}

TEST_CASE("ReduceL1, ReduceSumSquare and ReduceLogSum refuse bad axes", "[onnx][reduce]") {
  for (const char* op : {"ReduceL1", "ReduceSumSquare", "ReduceLogSum"}) {
    INFO(op);
    CHECK_THAT(
        errorOf(reduceModel(13, op, {"2", "3"}, {1, -1}).bytes()),
        Contains(std::string("node \"n\" (") + op + ", opset 13): axes [1, -1] repeat an axis"));
    CHECK_THAT(errorOf(reduceModel(18, op, {"2", "3"}, {2}).bytes()),
               Contains(std::string("node \"n\" (") + op +
                        ", opset 18): axis 2 is out of range for rank 2"));
  }
}

namespace {

/// InstanceNormalization's definition on an (N, C, S) tensor, S the spatial elements.
std::vector<double> instanceNormRef(const std::vector<double>& x, int n, int c, int s,
                                    const std::vector<double>& scale,
                                    const std::vector<double>& bias, double eps) {
  std::vector<double> y(x.size());
  for (int i = 0; i < n * c; ++i) {
    double mean = 0, var = 0;
    for (int k = 0; k < s; ++k)
      mean += x[i * s + k] / s;
    for (int k = 0; k < s; ++k)
      var += (x[i * s + k] - mean) * (x[i * s + k] - mean) / s;
    for (int k = 0; k < s; ++k)
      y[i * s + k] = scale[i % c] * (x[i * s + k] - mean) / std::sqrt(var + eps) + bias[i % c];
  }
  return y;
}

ModelBuilder instanceNorm(int opset, const std::vector<std::string>& dims,
                          const std::vector<Attr>& attrs = {}, int elemType = kFloat) {
  ModelBuilder m(opset);
  m.input("x", elemType, dims)
      .input("scale", elemType, {dims.size() > 1 ? dims[1] : "1"})
      .input("B", elemType, {dims.size() > 1 ? dims[1] : "1"})
      .node("InstanceNormalization", {"x", "scale", "B"}, {"y"}, attrs, "n")
      .output("y");
  return m;
}

// x [2, 2, 2, 2]: per (n, c) four spatial values; (1, 1) is constant (variance 0).
const std::vector<double> kX2222{1,   2,   3, 4, -1, 0, 2, 7, //
                                 0.5, 0.5, 1, 3, 5,  5, 5, 5};

} // namespace

TEST_CASE("InstanceNormalization normalizes each instance and channel over the spatial axes",
          "[onnx][norm]") {
  std::vector<double> scale{2, -0.5}, bias{0.25, 1};
  auto x = tensor({2, 2, 2, 2}, kX2222);
  for (int opset : {1, 6}) {
    INFO("opset " << opset);
    auto y =
        run1(instanceNorm(opset, {"2", "2", "2", "2"}), {x, tensor({2}, scale), tensor({2}, bias)});
    CHECK(y.shape == std::vector<int64_t>{2, 2, 2, 2});
    checkClose(y, instanceNormRef(kX2222, 2, 2, 4, scale, bias, 1e-5));
  }
  SECTION("epsilon, and a rank-3 input with a symbolic batch") {
    std::vector<double> x3{1, 2, 3, 4, 5, 9};
    auto y = run1(instanceNorm(6, {"N", "2", "3"}, {Attr::real("epsilon", 0.5f)}),
                  {tensor({1, 2, 3}, x3), tensor({2}, scale), tensor({2}, bias)}, {{"N", 1}});
    checkClose(y, instanceNormRef(x3, 1, 2, 3, scale, bias, 0.5));
  }
  SECTION("f64 is computed in f64") {
    auto y = run1(instanceNorm(6, {"2", "2", "2", "2"}, {}, kDouble),
                  {tensor({2, 2, 2, 2}, kX2222, DType::f64), tensor({2}, scale, DType::f64),
                   tensor({2}, bias, DType::f64)});
    CHECK(y.dtype == DType::f64);
    checkClose(y, instanceNormRef(kX2222, 2, 2, 4, scale, bias, 1e-5), 1e-12);
  }
  SECTION("f16 statistics are computed in f32") {
    ModelBuilder m = instanceNorm(6, {"1", "1", "4"}, {}, kHalf);
    ir::Graph g = importOnnxBytes(m.bytes());
    bool toF32 = false;
    for (const auto& node : g.nodes())
      toF32 |= node.kind == ir::OpKind::Convert && node.type.dtype == DType::f32;
    CHECK(toF32);
    // Values near the f16 maximum: their squares are far past it.
    std::vector<double> big{60000, 61024, 62048, 63008}; // exact in f16
    auto y = ir::interpret(g, {tensor({1, 1, 4}, big, DType::f16), tensor({1}, {1}, DType::f16),
                               tensor({1}, {0}, DType::f16)})
                 .at(0);
    CHECK(y.dtype == DType::f16);
    checkClose(y, instanceNormRef(big, 1, 1, 4, {1}, {0}, 1e-5), 2e-3);
  }
}

TEST_CASE("InstanceNormalization refuses what it cannot normalize", "[onnx][norm]") {
  CHECK_THAT(errorOf(instanceNorm(6, {"2", "3"}).bytes()),
             Contains("node \"n\" (InstanceNormalization, opset 6): input [2, 3] needs rank 3 or "
                      "more (N, C, D1, ...)"));
  CHECK_THAT(errorOf(instanceNorm(6, {"1", "2", "3"}, {}, kInt32).bytes()),
             Contains("input has dtype i32; InstanceNormalization takes floating-point tensors"));
  CHECK_THAT(errorOf(instanceNorm(6, {"1", "2", "S"}).bytes()),
             Contains("normalizing over axis 2 of symbolic size S"));
  ModelBuilder wrongScale(6);
  wrongScale.input("x", kFloat, {"1", "2", "3"})
      .input("scale", kFloat, {"3"})
      .input("B", kFloat, {"2"})
      .node("InstanceNormalization", {"x", "scale", "B"}, {"y"}, {}, "n")
      .output("y");
  CHECK_THAT(errorOf(wrongScale.bytes()),
             Contains("scale has shape [3] but needs [2] (the channels, dim 1 of the input "
                      "[1, 2, 3])"));
  ModelBuilder noBias(6);
  noBias.input("x", kFloat, {"1", "2", "3"})
      .input("scale", kFloat, {"2"})
      .node("InstanceNormalization", {"x", "scale"}, {"y"}, {}, "n")
      .output("y");
  CHECK_THAT(errorOf(noBias.bytes()), Contains("needs input 2 (B, one value per channel)"));
}

namespace {

/// MeanVarianceNormalization's ONNX function: (x - mean) / (sqrt(var) + 1e-9), the statistics
/// over the elements of x that share `key(i)`.
template <class Key>
std::vector<double> mvnRef(const std::vector<double>& x, size_t groups, Key key) {
  std::vector<double> sum(groups), sq(groups), count(groups), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    sum[key(i)] += x[i];
    count[key(i)] += 1;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    double d = x[i] - sum[key(i)] / count[key(i)];
    sq[key(i)] += d * d;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    size_t k = key(i);
    y[i] = (x[i] - sum[k] / count[k]) / (std::sqrt(sq[k] / count[k]) + 1e-9);
  }
  return y;
}

} // namespace

TEST_CASE("MeanVarianceNormalization normalizes over its axes", "[onnx][norm]") {
  auto x = tensor({2, 2, 2, 2}, kX2222);
  // Element i of [2, 2, 2, 2] has n = i / 8, c = i / 4 % 2.
  for (int opset : {9, 13}) {
    INFO("opset " << opset);
    auto y = run1(oneNode(opset, "MeanVarianceNormalization", {"2", "2", "2", "2"}), {x});
    checkClose(y, mvnRef(kX2222, 2, [](size_t i) { return i / 4 % 2; }));
  }
  SECTION("given axes, negative ones too") {
    auto y = run1(oneNode(13, "MeanVarianceNormalization", {"2", "2", "2", "2"},
                          {Attr::list("axes", {-1, 2})}),
                  {x});
    // (n, c) = (1, 1) is constant: 0 / (0 + 1e-9) = 0, not NaN.
    checkClose(y, mvnRef(kX2222, 4, [](size_t i) { return i / 4; }));
    CHECK(y.get(12) == 0);
  }
  SECTION("an empty axes list is every axis, as ReduceMean reads it") {
    auto y = run1(
        oneNode(13, "MeanVarianceNormalization", {"2", "2", "2", "2"}, {Attr::list("axes", {})}),
        {x});
    checkClose(y, mvnRef(kX2222, 1, [](size_t) { return 0; }));
  }
  SECTION("f16 is computed in f32 (1e-9 is 0 in f16)") {
    std::vector<double> v{1, 1, 1, 1, 2, 4, 6, 8};
    auto y =
        run1(oneNode(13, "MeanVarianceNormalization", {"2", "4"}, {Attr::list("axes", {1})}, kHalf),
             {tensor({2, 4}, v, DType::f16)});
    CHECK(y.dtype == DType::f16);
    checkClose(y, mvnRef(v, 2, [](size_t i) { return i / 4; }), 2e-3);
    CHECK(y.get(0) == 0); // a constant row: 0, where f16 arithmetic would give 0 / 0
  }
}

TEST_CASE("MeanVarianceNormalization refuses axes it cannot use", "[onnx][norm]") {
  CHECK_THAT(errorOf(oneNode(13, "MeanVarianceNormalization", {"2", "3", "4"}).bytes()),
             Contains("node \"n\" (MeanVarianceNormalization, opset 13): the default axes "
                      "[0, 2, 3] need an input of rank 4 or more, not 3; give axes"));
  CHECK_THAT(
      errorOf(oneNode(13, "MeanVarianceNormalization", {"2", "3"}, {Attr::list("axes", {1, -1})})
                  .bytes()),
      Contains("axes [1, -1] repeat an axis"));
  CHECK_THAT(
      errorOf(
          oneNode(13, "MeanVarianceNormalization", {"2", "3"}, {Attr::list("axes", {2})}).bytes()),
      Contains("axis 2 is out of range for rank 2"));
  CHECK_THAT(errorOf(oneNode(13, "MeanVarianceNormalization", {"N", "3", "2", "2"}).bytes()),
             Contains("normalizing over axis 0 of symbolic size N"));
  CHECK_THAT(
      errorOf(oneNode(13, "MeanVarianceNormalization", {}, {Attr::list("axes", {})}).bytes()),
      Contains("input is a scalar; there is no axis to normalize over"));
  CHECK_THAT(errorOf(oneNode(13, "MeanVarianceNormalization", {"2", "3"}, {Attr::list("axes", {1})},
                             kInt64)
                         .bytes()),
             Contains("X has dtype i64; MeanVarianceNormalization takes floating-point tensors"));
}

TEST_CASE("GlobalAveragePool and GlobalMaxPool pool every axis after the first two",
          "[onnx][pool]") {
  auto x = tensor({2, 2, 2, 2}, kX2222);
  auto avg = run1(oneNode(1, "GlobalAveragePool", {"2", "2", "2", "2"}), {x});
  CHECK(avg.shape == std::vector<int64_t>{2, 2, 1, 1});
  checkClose(avg, {2.5, 2, 1.25, 5});
  auto max = run1(oneNode(1, "GlobalMaxPool", {"2", "2", "2", "2"}), {x});
  CHECK(max.shape == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(valuesOf(max) == std::vector<double>{4, 7, 3, 5});
  SECTION("rank 3 and rank 5, with a symbolic batch") {
    auto x3 = tensor({1, 2, 3}, {1, 5, 3, -1, -2, -6});
    auto a3 = run1(oneNode(1, "GlobalAveragePool", {"N", "2", "3"}), {x3}, {{"N", 1}});
    CHECK(a3.shape == std::vector<int64_t>{1, 2, 1});
    checkClose(a3, {3, -3});
    auto x5 = tensor({1, 1, 2, 1, 2}, {1, 5, 3, -1});
    auto m5 = run1(oneNode(1, "GlobalMaxPool", {"1", "1", "2", "1", "2"}), {x5});
    CHECK(m5.shape == std::vector<int64_t>{1, 1, 1, 1, 1});
    CHECK(valuesOf(m5) == std::vector<double>{5});
  }
  SECTION("an (N, C) input has nothing to pool: it is its own result") {
    auto x2 = tensor({2, 3}, kX23);
    CHECK(valuesOf(run1(oneNode(1, "GlobalAveragePool", {"2", "3"}), {x2})) == kX23);
    CHECK(valuesOf(run1(oneNode(1, "GlobalMaxPool", {"2", "3"}), {x2})) == kX23);
  }
  SECTION("a symbolic spatial size: the max pools it, the average cannot divide by it") {
    auto xs = tensor({1, 1, 3}, {2, 9, 4});
    CHECK(valuesOf(run1(oneNode(1, "GlobalMaxPool", {"1", "1", "W"}), {xs}, {{"W", 3}})) ==
          std::vector<double>{9});
    CHECK_THAT(errorOf(oneNode(1, "GlobalAveragePool", {"1", "1", "W"}).bytes()),
               Contains("averaging over axis 2 of symbolic size W"));
  }
  SECTION("an f16 average is summed in f32: the sum would overflow f16") {
    auto h = tensor({1, 1, 4, 4}, std::vector<double>(16, 40000), DType::f16);
    auto a = run1(oneNode(1, "GlobalAveragePool", {"1", "1", "4", "4"}, {}, kHalf), {h});
    CHECK(a.dtype == DType::f16);
    CHECK(valuesOf(a) == std::vector<double>{40000});
  }
  SECTION("empty spatial axes: the mean of nothing is NaN, the max -inf") {
    HostTensor e(DType::f32, {1, 2, 0});
    auto a = run1(oneNode(1, "GlobalAveragePool", {"1", "2", "0"}), {e});
    CHECK(a.shape == std::vector<int64_t>{1, 2, 1});
    CHECK(std::isnan(a.get(0)));
    auto m = run1(oneNode(1, "GlobalMaxPool", {"1", "2", "0"}), {e});
    CHECK(valuesOf(m) == std::vector<double>{-kInf, -kInf});
  }
  SECTION("errors") {
    CHECK_THAT(errorOf(oneNode(1, "GlobalMaxPool", {"4"}).bytes()),
               Contains("node \"n\" (GlobalMaxPool, opset 1): input [4] needs rank 2 or more "
                        "(N, C, D1, ...)"));
    CHECK_THAT(errorOf(oneNode(1, "GlobalAveragePool", {"1", "2", "3"}, {}, kInt32).bytes()),
               Contains("X has dtype i32; GlobalAveragePool takes floating-point tensors"));
  }
}
