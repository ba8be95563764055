// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
// ConvInteger and QLinearConv:
// rounding half to even, saturation, per-tensor, per-axis and blocked parameters, the input
// and output types of each opset, symbolic dims and the errors a bad node gives, checked on the
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

constexpr int kInt16 = ::onnx::TensorProto::INT16;
constexpr int kUint16 = ::onnx::TensorProto::UINT16;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// An initializer of an ONNX integer type stored in int32_data (INT8, UINT8, INT16, UINT16,
/// INT32).
void intInitializer(ModelBuilder& m, const std::string& name, int type,
                    const std::vector<int64_t>& dims, const std::vector<int32_t>& values) {
  auto* t = m.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims)
    t->add_dims(d);
  for (int32_t v : values)
    t->add_int32_data(v);
}

std::vector<HostTensor> run(const ModelBuilder& m, const std::vector<HostTensor>& inputs,
                            const ir::Binding& binding = {}) {
  return ir::interpret(importOnnxBytes(m.bytes()), inputs, binding);
}

/// QuantizeLinear of x [N] (f32) by the scalar y_scale 2, with a zero point of `zpType` valued
/// `zp` (zpType 0: none).
ModelBuilder quantizeByTwo(int zpType, int32_t zp) {
  ModelBuilder m(13);
  m.input("x", kFloat, {"N"}).initializer("s", {}, {2.0f});
  std::vector<std::string> inputs = {"x", "s"};
  if (zpType != 0) {
    intInitializer(m, "zp", zpType, {}, {zp});
    inputs.push_back("zp");
  }
  m.node("QuantizeLinear", inputs, {"y"}).output("y");
  return m;
}

} // namespace

TEST_CASE("QuantizeLinear rounds x / y_scale half to even, adds the zero point and saturates",
          "[onnx][quantize]") {
  // x / 2 = [-0.5, 0.5, 1.5, 2.5, 0.45, -150, 150, NaN, inf, -inf], rounded
  // [-0, 0, 2, 2, 0, -150, 150, (NaN: as 0), inf, -inf]; N is symbolic
  HostTensor x = tensor({10}, {-1, 1, 3, 5, 0.9, -300, 300, kNaN, kInf, -kInf});
  ir::Binding n = {{"N", 10}};
  SECTION("uint8 zero point 128") {
    HostTensor y = run(quantizeByTwo(kUint8, 128), {x}, n)[0];
    CHECK(y.dtype == DType::i32);
    CHECK(valuesOf(y) == std::vector<double>{128, 128, 130, 130, 128, 0, 255, 128, 255, 0});
  }
  SECTION("int8 zero point -1") {
    HostTensor y = run(quantizeByTwo(kInt8, -1), {x}, n)[0];
    CHECK(y.dtype == DType::i8);
    CHECK(valuesOf(y) == std::vector<double>{-1, -1, 1, 1, -1, -128, 127, -1, 127, -128});
  }
  SECTION("no zero point: uint8, 0") {
    CHECK(valuesOf(run(quantizeByTwo(0, 0), {x}, n)[0]) ==
          std::vector<double>{0, 0, 2, 2, 0, 0, 150, 0, 255, 0});
  }
  SECTION("x / y_scale is a division, not a product with 1 / y_scale") {
    // f32: 1.55 / 0.1 = 15.499999 (1.55 * (1 / 0.1) = 15.5 would round to 16), and
    // next(3.25) / 0.1 = 32.5 exactly, a tie to 32 (the product gives 32.500004)
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"})
        .initializer("s", {}, {0.1f})
        .node("QuantizeLinear", {"x", "s"}, {"y"})
        .output("y");
    HostTensor y = run(m, {tensor({2}, {1.55, std::nextafter(3.25f, 4.0f)})})[0];
    CHECK(valuesOf(y) == std::vector<double>{15, 32});
  }
}

TEST_CASE("QuantizeLinear per axis, per block, to 16-bit types and from f16 and int32",
          "[onnx][quantize]") {
  HostTensor x = tensor({2, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14});
  SECTION("per axis 1 (the default), uint8 zero points") {
    // scale [1, 2, 4, 0.5, 1], zero points [0, 1, 2, 3, 4]
    ModelBuilder m(13);
    m.input("x", kFloat, {"B", "5"}).initializer("s", {5}, {1, 2, 4, 0.5, 1});
    intInitializer(m, "zp", kUint8, {5}, {0, 1, 2, 3, 4});
    m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"}).output("y");
    CHECK(valuesOf(run(m, {x}, {{"B", 2}})[0]) ==
          std::vector<double>{0, 1, 2, 9, 8, 10, 7, 5, 29, 18});
  }
  SECTION("per axis -2, no zero point") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "5"})
        .initializer("s", {2}, {1, 10})
        .node("QuantizeLinear", {"x", "s"}, {"y"}, {Attr::integer("axis", -2)})
        .output("y");
    CHECK(valuesOf(run(m, {x})[0]) == std::vector<double>{0, 1, 2, 3, 4, 1, 1, 1, 1, 1});
  }
  SECTION("blocks of 2 along axis 1 (opset 21), the last block cut short") {
    // row 0: scales [1, 2, 4], zero points [0, -1, 1]; row 1: [0.5, 1, 10], [2, 0, -3]
    // (x's symbolic R is the scale's 2)
    ModelBuilder m(21);
    m.input("x", kFloat, {"R", "5"}).initializer("s", {2, 3}, {1, 2, 4, 0.5, 1, 10});
    intInitializer(m, "zp", kInt8, {2, 3}, {0, -1, 1, 2, 0, -3});
    m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"}, {Attr::integer("block_size", 2)}).output("y");
    HostTensor y = run(m, {x}, {{"R", 2}})[0];
    CHECK(y.dtype == DType::i8);
    CHECK(valuesOf(y) == std::vector<double>{0, 1, 0, 1, 2, 22, 24, 12, 13, -2});
  }
  SECTION("output_dtype int16 and uint16 (opset 21); the result keeps its type") {
    // x / 0.5 = [40000, -40000, 2.5, 1.5]; y + y wraps as uint16: 80000 - 65536 = 14464
    HostTensor v = tensor({4}, {20000, -20000, 1.25, 0.75});
    auto model = [](int type) {
      ModelBuilder m(21);
      m.input("x", kFloat, {"4"})
          .initializer("s", {}, {0.5f})
          .node("QuantizeLinear", {"x", "s"}, {"y"}, {Attr::integer("output_dtype", type)})
          .node("Add", {"y", "y"}, {"z"})
          .output("y")
          .output("z");
      return m;
    };
    std::vector<HostTensor> i16 = run(model(kInt16), {v});
    CHECK(valuesOf(i16[0]) == std::vector<double>{32767, -32768, 2, 2});
    std::vector<HostTensor> u16 = run(model(kUint16), {v});
    CHECK(valuesOf(u16[0]) == std::vector<double>{40000, 0, 2, 2});
    CHECK(valuesOf(u16[1]) == std::vector<double>{14464, 0, 4, 4});
  }
  SECTION("f16 x and y_scale (opset 19)") {
    ModelBuilder m(19);
    m.input("x", kHalf, {"3"})
        .input("s", kHalf, {})
        .node("QuantizeLinear", {"x", "s"}, {"y"})
        .output("y");
    HostTensor y =
        run(m, {tensor({3}, {1.5, 2.5, 300}, DType::f16), tensor({}, {1}, DType::f16)})[0];
    CHECK(valuesOf(y) == std::vector<double>{2, 2, 255});
  }
  SECTION("int32 x divides in f64, as numpy promotes it") {
    // (2^24 + 1) / 2^25 = 0.50000003 rounds to 1 (in f32, x would be 2^24 and the tie give 0)
    ModelBuilder m(13);
    m.input("x", kInt32, {"3"}).initializer("s", {}, {33554432.0f});
    intInitializer(m, "zp", kUint8, {}, {100});
    m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"}).output("y");
    HostTensor y = run(m, {tensor({3}, {16777217, -16777217, 5}, DType::i32)})[0];
    CHECK(valuesOf(y) == std::vector<double>{101, 99, 100});
  }
}

TEST_CASE("DequantizeLinear subtracts the zero point and multiplies by the scale",
          "[onnx][quantize]") {
  SECTION("uint8 per axis 0") {
    ModelBuilder m(13);
    m.input("x", kUint8, {"2", "3"}).initializer("s", {2}, {0.5f, 2.0f});
    intInitializer(m, "zp", kUint8, {2}, {128, 10});
    m.node("DequantizeLinear", {"x", "s", "zp"}, {"y"}, {Attr::integer("axis", 0)}).output("y");
    HostTensor y = run(m, {tensor({2, 3}, {0, 128, 255, 10, 20, 30}, DType::i32)})[0];
    CHECK(y.dtype == DType::f32);
    CHECK(valuesOf(y) == std::vector<double>{-64, 0, 63.5, 0, 20, 40});
  }
  SECTION("int8 with a scalar zero point (opset 10)") {
    ModelBuilder m(10);
    m.input("x", kInt8, {"3"}).initializer("s", {}, {0.25f});
    intInitializer(m, "zp", kInt8, {}, {-1});
    m.node("DequantizeLinear", {"x", "s", "zp"}, {"y"}).output("y");
    HostTensor y = run(m, {tensor({3}, {-128, 0, 127}, DType::i8)})[0];
    CHECK(valuesOf(y) == std::vector<double>{-31.75, 0.25, 32});
  }
  SECTION("int32 without a zero point, rounded to f32 once") {
    ModelBuilder m(13);
    m.input("x", kInt32, {"2"})
        .initializer("s", {}, {1.0f})
        .node("DequantizeLinear", {"x", "s"}, {"y"})
        .output("y");
    HostTensor y = run(m, {tensor({2}, {16777217, -3}, DType::i32)})[0];
    CHECK(valuesOf(y) == std::vector<double>{16777216, -3});
  }
  SECTION("an f16 scale gives f16 (opset 19)") {
    ModelBuilder m(19);
    m.input("x", kUint8, {"2"}).input("s", kHalf, {});
    intInitializer(m, "zp", kUint8, {}, {100});
    m.node("DequantizeLinear", {"x", "s", "zp"}, {"y"}).output("y");
    HostTensor y = run(m, {tensor({2}, {200, 0}, DType::i32), tensor({}, {0.5}, DType::f16)})[0];
    CHECK(y.dtype == DType::f16);
    CHECK(valuesOf(y) == std::vector<double>{50, -50});
  }
  SECTION("blocks of 2 along axis 1 (opset 21)") {
    ModelBuilder m(21);
    m.input("x", kInt8, {"1", "5"}).initializer("s", {1, 3}, {1, 10, 100});
    intInitializer(m, "zp", kInt8, {1, 3}, {0, 1, 5});
    m.node("DequantizeLinear", {"x", "s", "zp"}, {"y"}, {Attr::integer("block_size", 2)})
        .output("y");
    HostTensor y = run(m, {tensor({1, 5}, {1, 2, 3, 4, 5}, DType::i8)})[0];
    CHECK(valuesOf(y) == std::vector<double>{1, 2, 20, 30, 0});
  }
}

TEST_CASE("DynamicQuantizeLinear computes the scale and zero point from x's range",
          "[onnx][quantize]") {
  ModelBuilder m(11);
  m.input("x", kFloat, {"N", "3"})
      .node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"})
      .output("y")
      .output("scale")
      .output("zp");
  SECTION("range [-1, 3]") {
    // scale = 4 / 255 (f32 0.015686275); zero point round(63.749996) = 64; x / scale =
    // [-63.749996, 0, 127.49999, 191.24998, -31.874998, 63.749996]
    std::vector<HostTensor> out = run(m, {tensor({2, 3}, {-1, 0, 2, 3, -0.5, 1})}, {{"N", 2}});
    REQUIRE(out.size() == 3);
    CHECK(valuesOf(out[0]) == std::vector<double>{0, 64, 191, 255, 32, 128});
    CHECK(out[1].shape.empty());
    CHECK(valuesOf(out[1])[0] == static_cast<double>(4.0f / 255.0f));
    CHECK(valuesOf(out[2]) == std::vector<double>{64});
  }
  SECTION("all zeros: scale 0, zero point 0") {
    std::vector<HostTensor> out = run(m, {tensor({1, 3}, {0, 0, 0})}, {{"N", 1}});
    CHECK(valuesOf(out[0]) == std::vector<double>{0, 0, 0});
    CHECK(valuesOf(out[1]) == std::vector<double>{0});
    CHECK(valuesOf(out[2]) == std::vector<double>{0});
  }
}

TEST_CASE("MatMulInteger and QLinearMatMul take per-row and per-column parameters",
          "[onnx][quantize]") {
  SECTION("MatMulInteger: uint8 A with per-row, int8 B with per-column zero points") {
    // A - [1, 4] per row = [[0, 1, 2], [0, 2, 5]]; B - [1, -1] per column =
    // [[0, 0], [1, -1], [2, -2]]
    ModelBuilder m(10);
    m.input("A", kUint8, {"2", "3"}).input("B", kInt8, {"3", "2"});
    intInitializer(m, "azp", kUint8, {2}, {1, 4});
    intInitializer(m, "bzp", kInt8, {2}, {1, -1});
    m.node("MatMulInteger", {"A", "B", "azp", "bzp"}, {"Y"}).output("Y");
    HostTensor y = run(m, {tensor({2, 3}, {1, 2, 3, 4, 6, 9}, DType::i32),
                           tensor({3, 2}, {1, -1, 2, -2, 3, -3}, DType::i8)})[0];
    CHECK(y.dtype == DType::i32);
    CHECK(valuesOf(y) == std::vector<double>{5, -5, 12, -12});
  }
  // a - 10 = [[0, 10], [20, 30]], b = [[1, 2], [3, 4]]: C = [[30, 40], [110, 160]]
  HostTensor a = tensor({2, 2}, {10, 20, 30, 40}, DType::i32);
  HostTensor b = tensor({2, 2}, {1, 2, 3, 4}, DType::i8);
  auto model = [](std::vector<int64_t> aScaleDims, std::vector<float> aScale,
                  std::vector<int64_t> bScaleDims, std::vector<float> bScale, float yScale) {
    ModelBuilder m(10);
    m.input("a", kUint8, {"2", "2"})
        .input("b", kInt8, {"2", "2"})
        .initializer("as", aScaleDims, aScale)
        .initializer("bs", bScaleDims, bScale)
        .initializer("ys", {}, {yScale});
    intInitializer(m, "azp", kUint8, {}, {10});
    intInitializer(m, "bzp", kInt8, {}, {0});
    intInitializer(m, "yzp", kUint8, {}, {100});
    m.node("QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"}, {"y"}).output("y");
    return m;
  };
  SECTION("QLinearMatMul: per-column b_scale") {
    // multipliers 0.5 * [1, 0.25] / 2 = [0.25, 0.0625]: C x = [[7.5, 2.5], [27.5, 10]]
    HostTensor y = run(model({}, {0.5f}, {2}, {1.0f, 0.25f}, 2.0f), {a, b})[0];
    CHECK(valuesOf(y) == std::vector<double>{108, 102, 128, 110});
  }
  SECTION("QLinearMatMul: per-row a_scale, saturated") {
    // multipliers [0.5, 1] per row: [[15, 20], [110, 160]] + 100
    HostTensor y = run(model({2}, {0.5f, 1.0f}, {}, {1.0f}, 1.0f), {a, b})[0];
    CHECK(valuesOf(y) == std::vector<double>{115, 120, 210, 255});
  }
}

TEST_CASE("ConvInteger and QLinearConv subtract the zero points before padding and requantize "
          "per output channel",
          "[onnx][quantize]") {
  SECTION("ConvInteger: a uint8 x, int8 w with per-channel zero points, pads 1") {
    // x - 3 = [0, 1, 2, 3] padded with zeros (not with -3): [0, 0, 1, 2, 3, 0];
    // w - [1, -1] = [[0, 1], [0, 2]]
    ModelBuilder m(10);
    m.input("x", kUint8, {"1", "1", "4"}).input("w", kInt8, {"2", "1", "2"});
    intInitializer(m, "xzp", kUint8, {}, {3});
    intInitializer(m, "wzp", kInt8, {2}, {1, -1});
    m.node("ConvInteger", {"x", "w", "xzp", "wzp"}, {"y"}, {Attr::list("pads", {1, 1})})
        .output("y");
    HostTensor y = run(m, {tensor({1, 1, 4}, {3, 4, 5, 6}, DType::i32),
                           tensor({2, 1, 2}, {1, 2, -1, 1}, DType::i8)})[0];
    CHECK(y.dtype == DType::i32);
    CHECK(y.shape == std::vector<int64_t>{1, 2, 5});
    CHECK(valuesOf(y) == std::vector<double>{0, 1, 2, 3, 0, 0, 2, 4, 6, 0});
  }
  SECTION("QLinearConv: per-channel w_scale, an int32 bias, half to even, saturated") {
    // x - 10 = [0, 2, 10]; w = [1, 3] (1x1 kernels); C + B = [[1, 3, 11], [-1, 5, 29]];
    // multipliers 0.5 * [1, 0.25] / 1 = [0.5, 0.125]: [[0.5, 1.5, 5.5], [-0.125, 0.625,
    // 3.625]], rounded [[0, 2, 6], [0, 1, 4]], plus 252, saturated at 255
    ModelBuilder m(10);
    m.input("x", kUint8, {"1", "1", "3"})
        .input("w", kInt8, {"2", "1", "1"})
        .initializer("xs", {}, {0.5f})
        .initializer("ws", {2}, {1.0f, 0.25f})
        .initializer("ys", {}, {1.0f});
    intInitializer(m, "xzp", kUint8, {}, {10});
    intInitializer(m, "wzp", kInt8, {}, {0});
    intInitializer(m, "yzp", kUint8, {}, {252});
    intInitializer(m, "B", kInt32, {2}, {1, -1});
    m.node("QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "B"}, {"y"})
        .output("y");
    HostTensor y = run(
        m, {tensor({1, 1, 3}, {10, 12, 20}, DType::i32), tensor({2, 1, 1}, {1, 3}, DType::i8)})[0];
    CHECK(y.dtype == DType::i32);
    CHECK(valuesOf(y) == std::vector<double>{252, 254, 255, 252, 253, 255});
  }
  SECTION("bad nodes") {
    auto convInteger = [](int xType, std::vector<int64_t> wzpDims, std::vector<int32_t> wzp) {
      ModelBuilder m(10);
      m.input("x", xType, {"1", "1", "4"}).input("w", kUint8, {"2", "1", "2"});
      intInitializer(m, "wzp", kUint8, wzpDims, wzp);
      m.node("ConvInteger", {"x", "w", "", "wzp"}, {"y"}, {}, "c").output("y");
      return m.bytes();
    };
    CHECK_THAT(errorOf(convInteger(kFloat, {}, {0})),
               Contains("x is FLOAT; ConvInteger takes int8 or uint8"));
    CHECK_THAT(errorOf(convInteger(kUint8, {3}, {0, 0, 0})),
               Contains("w_zero_point has shape [3]; it must be a scalar or hold one value per "
                        "output channel ([2], dim 0 of w [2, 1, 2])"));
    ModelBuilder q(10);
    q.input("x", kUint8, {"1", "1", "4"})
        .input("w", kUint8, {"1", "1", "2"})
        .initializer("s", {}, {1.0f})
        .initializer("B", {1}, {1.0f});
    intInitializer(q, "zp", kUint8, {}, {0});
    q.node("QLinearConv", {"x", "s", "zp", "w", "s", "zp", "s", "zp", "B"}, {"y"}, {}, "q")
        .output("y");
    CHECK_THAT(errorOf(q.bytes()), Contains("B is FLOAT; QLinearConv's bias is int32"));
    ModelBuilder missing(10);
    missing.input("x", kUint8, {"1", "1", "4"}).input("w", kUint8, {"1", "1", "2"});
    missing.node("QLinearConv", {"x", "", "", "w"}, {"y"}, {}, "q").output("y");
    CHECK_THAT(errorOf(missing.bytes()), Contains("needs input 1 (x_scale)"));
  }
}

TEST_CASE("The quantization operators refuse bad nodes and the float8 types clearly",
          "[onnx][quantize]") {
  auto quantize = [](int opset, std::vector<int64_t> scaleDims, std::vector<float> scale,
                     int zpType, std::vector<int64_t> zpDims, std::vector<int32_t> zp,
                     std::vector<Attr> attrs) {
    ModelBuilder m(opset);
    m.input("x", kFloat, {"2", "5"}).initializer("s", scaleDims, scale);
    std::vector<std::string> inputs = {"x", "s"};
    if (zpType != 0) {
      intInitializer(m, "zp", zpType, zpDims, zp);
      inputs.push_back("zp");
    }
    m.node("QuantizeLinear", inputs, {"y"}, attrs, "q").output("y");
    return m.bytes();
  };
  CHECK_THROWS_AS(
      importOnnxBytes(quantize(21, {}, {1}, 0, {}, {}, {Attr::integer("output_dtype", 17)})),
      UnsupportedError);
  CHECK_THAT(errorOf(quantize(21, {}, {1}, 0, {}, {}, {Attr::integer("output_dtype", 17)})),
             Contains("output_dtype is FLOAT8E4M3FN: weft has no float8"));
  CHECK_THAT(errorOf(quantize(9, {}, {1}, 0, {}, {}, {})),
             Contains("QuantizeLinear is defined from opset 10"));
  CHECK_THAT(errorOf(quantize(19, {}, {1}, kInt16, {}, {0}, {})),
             Contains("y_zero_point is INT16; QuantizeLinear quantizes to 16-bit integers from "
                      "opset 21"));
  CHECK_THAT(errorOf(quantize(10, {2}, {1, 2}, 0, {}, {}, {})),
             Contains("y_scale has shape [2]; before opset 13 it must be a scalar"));
  CHECK_THAT(errorOf(quantize(13, {5}, {1, 1, 1, 1, 1}, kUint8, {2}, {0, 0}, {})),
             Contains("y_zero_point has shape [2] but y_scale has [5]"));
  CHECK_THAT(errorOf(quantize(13, {4}, {1, 1, 1, 1}, 0, {}, {}, {})),
             Contains("y_scale has 4 values but axis 1 of the input [2, 5] has 5"));
  CHECK_THAT(
      errorOf(quantize(21, {2, 2}, {1, 1, 1, 1}, 0, {}, {}, {Attr::integer("block_size", 2)})),
      Contains("y_scale has 2 blocks along axis 1, but the input's 5 values in blocks of "
               "2 make 3"));
  CHECK_THAT(errorOf(quantize(21, {}, {1}, kUint8, {}, {0}, {Attr::integer("output_dtype", 3)})),
             Contains("output_dtype is INT8 but y_zero_point is UINT8; they must agree"));
  ModelBuilder d(13);
  d.input("x", kInt32, {"2"}).initializer("s", {}, {1.0f});
  intInitializer(d, "zp", kInt32, {}, {3});
  d.node("DequantizeLinear", {"x", "s", "zp"}, {"y"}).output("y");
  CHECK_THAT(errorOf(d.bytes()), Contains("x_zero_point must be 0"));
}
