// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: each reduction, weights, ignore_index
// (negative too), the dtypes, symbolic dims and the errors a bad node gives, checked on the
// reference interpreter against values worked out by hand.
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

HostTensor indices(std::vector<int64_t> shape, const std::vector<double>& values,
                   DType t = DType::i64) {
  return tensor(std::move(shape), values, t);
}

Attr reduction(const std::string& r) {
  return Attr::text("reduction", r);
}

/// NegativeLogLikelihoodLoss on x [2, 3] and t [2] with the given attributes.
ModelBuilder nll2d(const std::vector<Attr>& attrs, int opset = 13) {
  ModelBuilder m(opset);
  m.input("x", kFloat, {"2", "3"})
      .input("t", kInt64, {"2"})
      .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, attrs, "nll")
      .output("loss");
  return m;
}

} // namespace

TEST_CASE("NegativeLogLikelihoodLoss on [N, C] picks -x[n, t[n]] and reduces it", "[onnx][loss]") {
  // loss = [-x[0][2], -x[1][0]] = [3, 0.5]
  HostTensor x = tensor({2, 3}, {-1, -2, -3, -0.5, -1.5, -2.5});
  HostTensor t = indices({2}, {2, 0});
  SECTION("mean is the default") {
    ir::Graph g = importOnnxBytes(nll2d({}).bytes());
    CHECK(g.node(g.outputs()[0]).type.shape.empty());
    checkClose(ir::interpret(g, {x, t})[0], {1.75});
  }
  SECTION("sum") {
    checkClose(ir::interpret(importOnnxBytes(nll2d({reduction("sum")}).bytes()), {x, t})[0], {3.5});
  }
  SECTION("none keeps [N]") {
    ir::Graph g = importOnnxBytes(nll2d({reduction("none")}).bytes());
    CHECK(g.node(g.outputs()[0]).type.str() == "f32[2]");
    checkClose(ir::interpret(g, {x, t})[0], {3, 0.5});
  }
}

TEST_CASE("NegativeLogLikelihoodLoss weights each target and ignores ignore_index",
          "[onnx][loss]") {
  // x[n][c][d] = -(6n + 2c + d + 1) / 10, weight [0.5, 1, 2], ignore_index 2:
  //   loss[0][0] = 0.1 * w[0] = 0.05; loss[0][1]: target 2, ignored = 0;
  //   loss[1][0] = -x[1][1][0] * w[1] = 0.9; loss[1][1] = -x[1][1][1] * w[1] = 1.0
  // mean: 1.95 / (w[0] + w[1] + w[1]) = 1.95 / 2.5 (the ignored target's w[2] is not counted)
  std::vector<double> xs;
  for (int i = 0; i < 12; ++i)
    xs.push_back(-(i + 1) / 10.0);
  HostTensor x = tensor({2, 3, 2}, xs);
  HostTensor t = indices({2, 2}, {0, 2, 1, 1});
  auto model = [](const std::string& r) {
    ModelBuilder m(12);
    m.input("x", kFloat, {"2", "3", "2"})
        .input("t", kInt64, {"2", "2"})
        .initializer("w", {3}, {0.5f, 1.0f, 2.0f})
        .node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"loss"},
              {reduction(r), Attr::integer("ignore_index", 2)})
        .output("loss");
    return importOnnxBytes(m.bytes());
  };
  checkClose(ir::interpret(model("none"), {x, t})[0], {0.05, 0, 0.9, 1.0});
  checkClose(ir::interpret(model("sum"), {x, t})[0], {1.95});
  checkClose(ir::interpret(model("mean"), {x, t})[0], {1.95 / 2.5});
}

TEST_CASE("NegativeLogLikelihoodLoss: a negative ignore_index, and the unweighted mean counts "
          "only the kept targets",
          "[onnx][loss]") {
  // targets [1, -1, 0] with ignore_index -1: loss [2, 0, 5], mean 7 / 2 (two targets count)
  ModelBuilder m;
  m.input("x", kFloat, {"3", "2"})
      .input("t", kInt64, {"3"})
      .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, {Attr::integer("ignore_index", -1)})
      .output("loss");
  ir::Graph g = importOnnxBytes(m.bytes());
  checkClose(
      ir::interpret(g, {tensor({3, 2}, {-1, -2, -3, -4, -5, -6}), indices({3}, {1, -1, 0})})[0],
      {3.5});
}

TEST_CASE("NegativeLogLikelihoodLoss: an infinite log-probability of another class stays out",
          "[onnx][loss]") {
  double inf = std::numeric_limits<double>::infinity();
  ir::Graph g = importOnnxBytes(nll2d({reduction("none")}).bytes());
  checkClose(
      ir::interpret(g, {tensor({2, 3}, {-inf, -1, -inf, -2, -inf, -inf}), indices({2}, {1, 0})})[0],
      {1, 2});
}

TEST_CASE("NegativeLogLikelihoodLoss: a target outside 0..C-1 that is not ignored picks no "
          "class",
          "[onnx][loss]") {
  // undefined in ONNX; weft's one-hot selection gives 0 for it
  ir::Graph g = importOnnxBytes(nll2d({reduction("none")}).bytes());
  checkClose(ir::interpret(g, {tensor({2, 3}, {-1, -2, -3, -4, -5, -6}), indices({2}, {3, 1})})[0],
             {0, 5});
}

TEST_CASE("SoftmaxCrossEntropyLoss is the NLL of the log-softmax over axis 1, with log_prob",
          "[onnx][loss]") {
  // row 0: scores [1, 2, 3], label 2: log_prob = s - (3 + log(1 + e^-1 + e^-2))
  // row 1: scores [0, 0, 0], label 1: log_prob = -log 3
  double lse0 = 3 + std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  ModelBuilder m;
  m.input("s", kFloat, {"2", "3"})
      .input("l", kInt64, {"2"})
      .node("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss", "log_prob"}, {reduction("none")})
      .output("loss")
      .output("log_prob");
  ir::Graph g = importOnnxBytes(m.bytes());
  // the shared log-softmax composite, which reduces with logsumexp
  int logSumExp = 0;
  for (const auto& n : g.nodes())
    logSumExp +=
        n.kind == ir::OpKind::Reduce && n.attr<ir::ReduceAttrs>().kind == ir::ReduceKind::LogSumExp;
  CHECK(logSumExp == 1);
  auto out = ir::interpret(g, {tensor({2, 3}, {1, 2, 3, 0, 0, 0}), indices({2}, {2, 1})});
  REQUIRE(out.size() == 2);
  checkClose(out[0], {lse0 - 3, std::log(3.0)});
  checkClose(out[1],
             {1 - lse0, 2 - lse0, 3 - lse0, -std::log(3.0), -std::log(3.0), -std::log(3.0)});
}

TEST_CASE("SoftmaxCrossEntropyLoss: weights, ignore_index and the weighted mean over [N, C, d]",
          "[onnx][loss]") {
  // scores all 0 over C = 2: log_prob = -log 2 everywhere; labels [[0, 1, 1]], weights
  // [1, 3], ignore_index 0: loss [0, 3 log 2, 3 log 2], mean 6 log 2 / (3 + 3) = log 2
  ModelBuilder m;
  m.input("s", kFloat, {"1", "2", "3"})
      .input("l", kInt64, {"1", "3"})
      .initializer("w", {2}, {1.0f, 3.0f})
      .node("SoftmaxCrossEntropyLoss", {"s", "l", "w"}, {"loss"},
            {Attr::integer("ignore_index", 0)})
      .output("loss");
  ir::Graph g = importOnnxBytes(m.bytes());
  checkClose(
      ir::interpret(g, {tensor({1, 2, 3}, {0, 0, 0, 0, 0, 0}), indices({1, 3}, {0, 1, 1})})[0],
      {std::log(2.0)});
}

TEST_CASE("The losses keep f64, f16 and bf16 and take int32 targets", "[onnx][loss]") {
  // -x at the targets: [0.5, 2] (values exact in every float dtype); sum 2.5
  struct Case {
    int onnx;
    DType dtype;
  };
  for (Case k :
       {Case{kDouble, DType::f64}, Case{kHalf, DType::f16}, Case{kBfloat16, DType::bf16}}) {
    INFO(dtypeName(k.dtype));
    ModelBuilder m;
    m.input("x", k.onnx, {"2", "2"})
        .input("t", kInt32, {"2"})
        .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, {reduction("sum")})
        .output("loss");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(g.node(g.outputs()[0]).type.dtype == k.dtype);
    HostTensor loss = ir::interpret(
        g, {tensor({2, 2}, {-0.5, -1, -4, -2}, k.dtype), indices({2}, {0, 1}, DType::i32)})[0];
    checkClose(loss, {2.5});
  }
  SECTION("SoftmaxCrossEntropyLoss in f64") {
    ModelBuilder m;
    m.input("s", kDouble, {"1", "2"})
        .input("l", kInt64, {"1"})
        .node("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss"})
        .output("loss");
    ir::Graph g = importOnnxBytes(m.bytes());
    // -log_softmax([0, 1])[0] = log(1 + e)
    checkClose(ir::interpret(g, {tensor({1, 2}, {0, 1}, DType::f64), indices({1}, {0})})[0],
               {std::log(1 + std::exp(1.0))}, 1e-12);
  }
}

TEST_CASE("The losses of f16 inputs are summed in f32: the mean of a sum past 65504 is finite",
          "[onnx][loss]") {
  // three losses of 30000: their sum, 90000, is past f16's largest finite value; the mean is not
  ModelBuilder m;
  m.input("x", kHalf, {"3", "1"})
      .input("t", kInt64, {"3"})
      .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"})
      .output("loss");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(g.node(g.outputs()[0]).type.dtype == DType::f16);
  checkClose(ir::interpret(g, {tensor({3, 1}, {-30000, -30000, -30000}, DType::f16),
                               indices({3}, {0, 0, 0})})[0],
             {30000});
}

TEST_CASE("The losses take symbolic N and C, the mean counting at run time", "[onnx][loss]") {
  ModelBuilder m;
  m.input("x", kFloat, {"N", "C"})
      .input("t", kInt64, {"N"})
      .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"})
      .output("loss");
  ir::Graph g = importOnnxBytes(m.bytes());
  // N = 2, C = 2: targets [1, 0] pick [2, 3], mean 2.5; N = 3, C = 1: [1, 2, 3], mean 2
  checkClose(ir::interpret(g, {tensor({2, 2}, {-1, -2, -3, -4}), indices({2}, {1, 0})},
                           {{"N", 2}, {"C", 2}})[0],
             {2.5});
  checkClose(ir::interpret(g, {tensor({3, 1}, {-1, -2, -3}), indices({3}, {0, 0, 0})},
                           {{"N", 3}, {"C", 1}})[0],
             {2});
}

TEST_CASE("The losses over an empty batch: sum 0, mean NaN (0 / 0)", "[onnx][loss]") {
  auto model = [](const std::string& r) {
    ModelBuilder m;
    m.input("x", kFloat, {"0", "3"})
        .input("t", kInt64, {"0"})
        .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, {reduction(r)})
        .output("loss");
    return importOnnxBytes(m.bytes());
  };
  HostTensor x(DType::f32, {0, 3}), t(DType::i64, {0});
  CHECK(valuesOf(ir::interpret(model("sum"), {x, t})[0]) == std::vector<double>{0});
  CHECK(std::isnan(ir::interpret(model("mean"), {x, t})[0].get(0)));
}

TEST_CASE("The losses reject malformed nodes, naming what is wrong", "[onnx][loss]") {
  SECTION("a float target") {
    ModelBuilder m;
    m.input("x", kFloat, {"2", "3"})
        .input("t", kFloat, {"2"})
        .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, {}, "nll")
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()),
               Contains("node \"nll\" (NegativeLogLikelihoodLoss, opset 13)") &&
                   Contains("target must hold integer class indices (int32 or int64), not f32"));
  }
  SECTION("a target of the wrong shape") {
    ModelBuilder m;
    m.input("x", kFloat, {"2", "3", "4"})
        .input("t", kInt64, {"2", "3"})
        .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("target [2, 3] does not match input [2, 3, 4]"));
  }
  SECTION("a target of the wrong rank") {
    ModelBuilder m;
    m.input("s", kFloat, {"2", "3"})
        .input("l", kInt64, {"2", "1"})
        .node("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("labels [2, 1] does not match scores [2, 3]"));
  }
  SECTION("an unknown reduction") {
    CHECK_THAT(errorOf(nll2d({reduction("avg")}).bytes()),
               Contains("reduction \"avg\" is not one of none, sum, mean"));
  }
  SECTION("a weight that is not [C]") {
    ModelBuilder m;
    m.input("x", kFloat, {"2", "3"})
        .input("t", kInt64, {"2"})
        .initializer("w", {2}, {1.0f, 2.0f})
        .node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("weight [2] must be [C] = [3]"));
  }
  SECTION("a weight of another dtype") {
    ModelBuilder m;
    m.input("x", kFloat, {"2", "3"})
        .input("t", kInt64, {"2"})
        .input("w", kDouble, {"3"})
        .node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("weights has dtype f64, scores has f32"));
  }
  SECTION("an input of rank 1") {
    ModelBuilder m;
    m.input("x", kFloat, {"3"})
        .input("t", kInt64, {"1"})
        .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("input [3] needs rank 2 or more"));
  }
  SECTION("an integer input") {
    ModelBuilder m;
    m.input("x", kInt64, {"2", "3"})
        .input("t", kInt64, {"2"})
        .node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("input must be a float tensor, not i64"));
  }
  SECTION("before opset 12, and bf16 before opset 13") {
    CHECK_THAT(errorOf(nll2d({}, 11).bytes()),
               Contains("NegativeLogLikelihoodLoss is defined from opset 12"));
    ModelBuilder m(12);
    m.input("s", kBfloat16, {"2", "3"})
        .input("l", kInt64, {"2"})
        .node("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss"})
        .output("loss");
    CHECK_THAT(errorOf(m.bytes()), Contains("scores of dtype bf16 needs opset 13"));
  }
}
