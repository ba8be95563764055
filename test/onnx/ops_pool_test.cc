// MaxPool (with Indices), AveragePool and LpPool: padding, ceil_mode's last window, auto_pad,
// dilations, count_include_pad, storage_order, p, the dtypes, symbolic batch and channel dims
// and the errors a bad node gives, checked on the reference interpreter against values worked
// out by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

/// `op` on x of shape `dims` (ONNX element type `elem`) with `attrs`; outputs y (and i when
/// `indices`).
ir::Graph pool1(const std::string& op, const std::vector<std::string>& dims,
                const std::vector<Attr>& attrs, int opset, int elem = kFloat,
                bool indices = false) {
  ModelBuilder m(opset);
  m.input("x", elem, dims)
      .node(op, {"x"}, indices ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"},
            attrs, "pool");
  m.output("y");
  if (indices) m.output("i");
  return importOnnxBytes(m.bytes());
}

std::string typeOf(const ir::Graph& g, size_t output = 0) {
  return g.node(g.outputs()[output]).type.str();
}

Attr kernel(std::vector<int64_t> k) {
  return Attr::list("kernel_shape", std::move(k));
}
Attr strides(std::vector<int64_t> s) {
  return Attr::list("strides", std::move(s));
}
Attr pads(std::vector<int64_t> p) {
  return Attr::list("pads", std::move(p));
}

} // namespace

TEST_CASE("MaxPool's Indices: the first maximum in row-major order, flat in NCHW, either "
          "storage_order",
          "[onnx][pool]") {
  // channel 0 (ties: 5 at (0,1) and (1,0), 7 at (1,2) and (1,3)), channel 1 its negation;
  // kernel 2x2, strides [1, 2] on [1, 2, 3, 4]: out [2, 2]
  std::vector<double> ch0 = {1, 5, 2, 5, 5, 0, 7, 7, 3, 3, 3, 3}, xs = ch0;
  for (double v : ch0)
    xs.push_back(-v);
  HostTensor x = tensor({1, 2, 3, 4}, xs);
  for (int order : {0, 1}) {
    INFO("storage_order " << order);
    ir::Graph g = pool1("MaxPool", {"1", "2", "3", "4"},
                        {kernel({2, 2}), strides({1, 2}), Attr::integer("storage_order", order)},
                        12, kFloat, /*indices=*/true);
    CHECK(typeOf(g, 0) == "f32[1, 2, 2, 2]");
    CHECK(typeOf(g, 1) == "i64[1, 2, 2, 2]");
    auto out = ir::interpret(g, {x});
    checkClose(out[0], {5, 7, 5, 7, 0, -2, 0, -3});
    // (h, w) of each maximum: ch0 (0,1) (1,2) (1,0) (1,2); ch1 (1,1) (0,2) (1,1) (2,2);
    // row major h * 4 + w, column major h + w * 3, channel 1 offset by 12
    std::vector<double> want = order == 0 ? std::vector<double>{1, 6, 4, 6, 17, 14, 17, 22}
                                          : std::vector<double>{3, 7, 1, 7, 16, 18, 16, 20};
    CHECK(valuesOf(out[1]) == want);
  }
}

TEST_CASE("Pooling with ceil_mode: the last window runs past the end, or is dropped when it "
          "would start in the end padding",
          "[onnx][pool]") {
  // x = [1, 2, 3, 4, 5], kernel 3, stride 2, pads [1, 0], ceil_mode: out 3 (floor would be 2),
  // windows [pad 1 2] [2 3 4] [4 5 past-the-end]
  std::vector<Attr> attrs = {kernel({3}), strides({2}), pads({1, 0}),
                             Attr::integer("ceil_mode", 1)};
  HostTensor x = tensor({1, 1, 5}, {1, 2, 3, 4, 5});
  SECTION("AveragePool counts the input elements, or with count_include_pad the padding too, "
          "never what is past the end") {
    ir::Graph g = pool1("AveragePool", {"1", "1", "5"}, attrs, 19);
    CHECK(typeOf(g) == "f32[1, 1, 3]");
    checkClose(ir::interpret(g, {x})[0], {1.5, 3, 4.5});
    attrs.push_back(Attr::integer("count_include_pad", 1));
    checkClose(ir::interpret(pool1("AveragePool", {"1", "1", "5"}, attrs, 10), {x})[0],
               {1, 3, 4.5});
  }
  SECTION("MaxPool pads with -inf: a negative input beside the padding wins") {
    ir::Graph g = pool1("MaxPool", {"1", "1", "5"}, attrs, 10, kFloat, /*indices=*/true);
    auto out = ir::interpret(g, {tensor({1, 1, 5}, {-1, -2, -3, -4, -5})});
    checkClose(out[0], {-1, -2, -4});
    CHECK(valuesOf(out[1]) == std::vector<double>{0, 1, 3});
  }
  SECTION("a last window that would start in the end padding is dropped") {
    // x = [1, 2, 3, 4], kernel 3, stride 2, pads [0, 2]: ceil gives 3 windows, the third
    // starting at 4, in the padding: out 2, windows [1 2 3] [3 4 pad]
    std::vector<Attr> dropped = {kernel({3}), strides({2}), pads({0, 2}),
                                 Attr::integer("ceil_mode", 1)};
    HostTensor x4 = tensor({1, 1, 4}, {1, 2, 3, 4});
    ir::Graph g = pool1("AveragePool", {"1", "1", "4"}, dropped, 11);
    CHECK(typeOf(g) == "f32[1, 1, 2]");
    checkClose(ir::interpret(g, {x4})[0], {2, 3.5});
    dropped.push_back(Attr::integer("count_include_pad", 1));
    checkClose(ir::interpret(pool1("AveragePool", {"1", "1", "4"}, dropped, 11), {x4})[0],
               {2, 7.0 / 3});
  }
}

TEST_CASE("auto_pad SAME_UPPER, SAME_LOWER and VALID, with dilations", "[onnx][pool]") {
  HostTensor x = tensor({1, 1, 4}, {1, 2, 3, 4});
  auto average = [&](const std::string& mode, std::vector<Attr> attrs) {
    attrs.push_back(Attr::text("auto_pad", mode));
    return ir::interpret(pool1("AveragePool", {"1", "1", "4"}, attrs, 19), {x})[0];
  };
  // kernel 3, stride 2: out ceil(4 / 2) = 2, one element of padding: at the end (UPPER),
  // windows [1 2 3] [3 4 pad]; at the beginning (LOWER), [pad 1 2] [2 3 4]
  checkClose(average("SAME_UPPER", {kernel({3}), strides({2})}), {2, 3.5});
  checkClose(average("SAME_LOWER", {kernel({3}), strides({2})}), {1.5, 3});
  checkClose(average("VALID", {kernel({3}), strides({2})}), {2});
  // kernel 3 dilated by 2 spans 5: stride 1 pads 2 on each side; window o reads positions
  // o - 2, o, o + 2
  checkClose(average("SAME_UPPER", {kernel({3}), Attr::list("dilations", {2})}), {2, 3, 2, 3});
}

TEST_CASE("LpPool: the p-norm of each window, p an integer from opset 2 and a float in opset 1",
          "[onnx][pool]") {
  // x = [1, -2, 3, -4], kernel 2, pads [1, 0]: windows [pad 1] [1 -2] [-2 3] [3 -4]
  HostTensor x = tensor({1, 1, 4}, {1, -2, 3, -4});
  std::vector<Attr> attrs = {kernel({2}), pads({1, 0})};
  auto lp = [&](std::vector<Attr> a, int opset) {
    return ir::interpret(pool1("LpPool", {"1", "1", "4"}, a, opset), {x})[0];
  };
  checkClose(lp(attrs, 11), {1, std::sqrt(5.0), std::sqrt(13.0), 5}, 1e-5); // p = 2
  checkClose(lp({kernel({2}), pads({1, 0}), Attr::real("p", 2.0f)}, 1),
             {1, std::sqrt(5.0), std::sqrt(13.0), 5}, 1e-5);
  checkClose(lp({kernel({2}), pads({1, 0}), Attr::integer("p", 1)}, 2), {1, 3, 5, 7});
  // opset 18: p = 3 over taps 0 and 2 (dilation 2): [1 3] and [-2 -4]
  checkClose(lp({kernel({2}), Attr::list("dilations", {2}), Attr::integer("p", 3)}, 18),
             {std::cbrt(28.0), std::cbrt(72.0)}, 1e-5);
}

TEST_CASE("Pooling keeps f16 and int8, and takes symbolic batch and channel dims", "[onnx][pool]") {
  SECTION("MaxPool and its Indices over symbolic N and C") {
    ir::Graph g = pool1("MaxPool", {"N", "C", "4"}, {kernel({2}), strides({2})}, 12, kHalf,
                        /*indices=*/true);
    CHECK(typeOf(g, 0) == "f16[N, C, 2]");
    auto out = ir::interpret(g, {tensor({2, 1, 4}, {1, 3, 2, 0, 5, 4, 6, 7}, DType::f16)},
                             {{"N", 2}, {"C", 1}});
    checkClose(out[0], {3, 2, 5, 7});
    CHECK(valuesOf(out[1]) == std::vector<double>{1, 2, 4, 7});
  }
  SECTION("AveragePool of f16 sums in f32: a window past 65504 averages to a finite value") {
    ir::Graph g = pool1("AveragePool", {"1", "1", "3"}, {kernel({3})}, 11, kHalf);
    CHECK(typeOf(g) == "f16[1, 1, 1]");
    checkClose(ir::interpret(g, {tensor({1, 1, 3}, {30000, 30000, 30000}, DType::f16)})[0],
               {30000});
  }
  SECTION("MaxPool-12 on int8 pads with -128") {
    ir::Graph g = pool1("MaxPool", {"1", "1", "3"}, {kernel({2}), pads({1, 1})}, 12, kInt8);
    CHECK(typeOf(g) == "i8[1, 1, 4]");
    checkClose(ir::interpret(g, {tensor({1, 1, 3}, {-128, -5, 7}, DType::i8)})[0],
               {-128, -5, 7, 7});
  }
}

TEST_CASE("Pooling rejects malformed nodes, naming what is wrong", "[onnx][pool]") {
  auto error = [](const std::string& op, std::vector<Attr> attrs, int opset = 12,
                  std::vector<std::string> dims = {"1", "1", "4"}, int elem = kFloat,
                  bool indices = false) {
    ModelBuilder m(opset);
    m.input("x", elem, dims)
        .node(op, {"x"},
              indices ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"}, attrs,
              "p");
    m.output("y");
    return errorOf(m.bytes());
  };
  CHECK_THAT(error("MaxPool", {}), Contains("kernel_shape"));
  CHECK_THAT(error("MaxPool", {kernel({2, 2})}),
             Contains("kernel_shape [2, 2] has 2 values but the input [1, 1, 4] has 1 spatial"));
  CHECK_THAT(error("MaxPool", {kernel({0})}), Contains("kernel_shape [0] has 0"));
  CHECK_THAT(error("MaxPool", {kernel({2}), strides({0})}), Contains("strides [0] has 0"));
  CHECK_THAT(error("MaxPool", {kernel({2}), pads({1})}),
             Contains("pads [1] has 1 values; the input has 1 spatial axes, so it needs 2"));
  CHECK_THAT(error("AveragePool", {kernel({2}), pads({-1, 0})}), Contains("pads [-1, 0] has -1"));
  CHECK_THAT(
      error("AveragePool", {kernel({2}), pads({1, 1}), Attr::text("auto_pad", "SAME_UPPER")}),
      Contains("pads [1, 1] cannot be given with auto_pad SAME_UPPER"));
  CHECK_THAT(error("AveragePool", {kernel({2}), Attr::text("auto_pad", "SAME")}),
             Contains("auto_pad \"SAME\" is not"));
  CHECK_THAT(error("MaxPool", {kernel({5})}),
             Contains("axis 2 has size 4 (padded 4), smaller than the kernel's extent 5"));
  CHECK_THAT(error("MaxPool", {kernel({2})}, 12, {"1", "4"}),
             Contains("input [1, 4] needs rank 3 or more"));
  CHECK_THAT(error("MaxPool", {kernel({2})}, 12, {"1", "1", "W"}),
             Contains("spatial axis 2 of input [1, 1, W] has symbolic size W"));
  CHECK_THAT(error("MaxPool", {kernel({2})}, 11, {"1", "1", "4"}, kInt8),
             Contains("X has element type INT8; MaxPool takes float, double and float16 "
                      "tensors (int8 and uint8 from opset 12)"));
  CHECK_THAT(error("AveragePool", {kernel({2})}, 12, {"1", "1", "4"}, kInt64),
             Contains("AveragePool takes float, double and float16 tensors"));
  CHECK_THAT(error("MaxPool", {kernel({2}), Attr::integer("storage_order", 2)}, 12, {"1", "1", "4"},
                   kFloat, /*indices=*/true),
             Contains("storage_order 2 is not 0 (row major) or 1 (column major)"));
  CHECK_THAT(error("MaxPool", {kernel({2})}, 7, {"1", "1", "4"}, kFloat, /*indices=*/true),
             Contains("MaxPool-1 has one output (Y)"));
  CHECK_THAT(error("LpPool", {kernel({2}), Attr::integer("p", 0)}),
             Contains("p 0 must be positive"));
  CHECK_THAT(error("LpPool", {kernel({2}), Attr::integer("p", 2)}, 1), Contains("\"p\""));
}
