// The ONNX importer: lowering per operator and opset, checked against the reference
// interpreter, and the errors a bad model gives.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <tuple>

#include "frontend/onnx/load_graph.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

std::vector<HostTensor> run(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                            const ir::Binding& b = {}) {
  return ir::interpret(g, inputs, b);
}

int countKind(const ir::Graph& g, ir::OpKind k) {
  int n = 0;
  for (const auto& node : g.nodes())
    n += node.kind == k;
  return n;
}

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("weft_onnx_test_" + name)).string();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

} // namespace

TEST_CASE("Add broadcasts numpy-style through an explicit broadcast_in_dim", "[onnx]") {
  ModelBuilder m;
  m.input("a", kFloat, {"2", "3"})
      .input("b", kFloat, {"3"})
      .node("Add", {"a", "b"}, {"y"})
      .output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(countKind(g, ir::OpKind::BroadcastInDim) == 1);
  auto out = run(g, {tensor({2, 3}, {1, 2, 3, 4, 5, 6}), tensor({3}, {10, 20, 30})});
  CHECK(valuesOf(out[0]) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(g.node(g.outputs()[0]).name == "y");
}

TEST_CASE("dim_param becomes a symbolic dim and dim_value a static one", "[onnx]") {
  ModelBuilder m;
  m.input("x", kFloat, {"batch", "4"}).node("Relu", {"x"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  const auto& x = g.node(g.inputs()[0]);
  REQUIRE(x.type.shape.size() == 2);
  CHECK_FALSE(x.type.shape[0].isStatic());
  CHECK(x.type.shape[0] == ir::Dim::symbol("batch"));
  CHECK(x.type.shape[1] == ir::Dim(4));
  auto out = run(g, {tensor({1, 4}, {-1, 2, -3, 4})}, {{"batch", 1}});
  CHECK(valuesOf(out[0]) == std::vector<double>{0, 2, 0, 4});
}

TEST_CASE("distinct dim_params stay distinct symbols when made identifiers", "[onnx][symbols]") {
  // "seq-len" reads seq_len as an identifier, which another input names; an unnamed dim of x
  // reads x_1, which a dim_param names. Each keeps a symbol of its own, so sizes that differ
  // bind (one symbol would have made them one size).
  ModelBuilder m;
  m.input("x", kFloat, {"seq-len", ""}).input("y", kFloat, {"seq_len"}).input("z", kFloat, {"x_1"});
  m.node("ReduceSum", {"x"}, {"sx"}, {Attr::integer("keepdims", 0)}).output("sx");
  m.node("Relu", {"y"}, {"ry"}).output("ry").node("Relu", {"z"}, {"rz"}).output("rz");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(g.node(g.inputs()[0]).type.shape ==
        ir::Shape{ir::Dim::symbol("seq_len_2"), ir::Dim::symbol("x_1_2")});
  CHECK(g.node(g.inputs()[1]).type.shape == ir::Shape{ir::Dim::symbol("seq_len")});
  CHECK(g.node(g.inputs()[2]).type.shape == ir::Shape{ir::Dim::symbol("x_1")});
  auto out = run(g, {tensor({1, 2}, {1, 2}), tensor({3}, {-1, 0, 1}), tensor({4}, {1, 1, 1, 1})},
                 {{"seq_len_2", 1}, {"x_1_2", 2}, {"seq_len", 3}, {"x_1", 4}});
  CHECK(valuesOf(out[0]) == std::vector<double>{3});
}

TEST_CASE("inputs whose dims were exported under different names are unified where they meet",
          "[onnx][symbols]") {
  // torch.onnx.export names each input's dynamic axes on its own: "batch" and "batch_size",
  // or no name at all (a_0, b_0). An op that needs them equal unifies them: one symbol.
  for (bool named : {true, false}) {
    ModelBuilder m;
    m.input("a", kFloat, {named ? "batch" : "", "3"})
        .input("b", kFloat, {named ? "batch_size" : "", "3"})
        .input("c", kFloat, {named ? "width" : "3"})
        .node("Add", {"a", "b"}, {"s"})
        .node("Mul", {"s", "c"}, {"y"})
        .output("y");
    ir::Graph g = importOnnxBytes(m.bytes());
    INFO((named ? "named" : "unnamed"));
    REQUIRE(g.symbols().size() == 1);
    const std::string b = g.symbols()[0];
    CHECK(g.node(g.inputs()[1]).type.shape == ir::Shape{ir::Dim::symbol(b), 3});
    CHECK(g.node(g.inputs()[2]).type.shape == ir::Shape{3});
    CHECK(g.symbolEqualities().size() == (named ? 2u : 1u)); // width := 3 too
    auto out = run(g,
                   {tensor({2, 3}, {1, 2, 3, 4, 5, 6}), tensor({2, 3}, {1, 1, 1, 2, 2, 2}),
                    tensor({3}, {1, 10, 100})},
                   {{b, 2}});
    CHECK(valuesOf(out[0]) == std::vector<double>{2, 30, 400, 6, 70, 800});
  }
}

TEST_CASE("initializers are constants, also when listed as graph inputs", "[onnx]") {
  ModelBuilder m;
  m.input("x", kFloat, {"2"}).input("w", kFloat, {"2"}).initializer("w", {2}, {3, 4});
  m.node("Mul", {"x", "w"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  REQUIRE(g.inputs().size() == 1);
  CHECK(g.node(g.inputs()[0]).name == "x");
  CHECK(valuesOf(run(g, {tensor({2}, {1, 2})})[0]) == std::vector<double>{3, 8});
}

TEST_CASE("initializer data past its type's range, or unlike the input it shadows, is refused",
          "[onnx]") {
  // An initializer "c" of `type` holding `values` in the field ONNX keeps that type in.
  auto model = [](int type, std::vector<int64_t> values) {
    ModelBuilder m(13);
    auto* t = m.proto().mutable_graph()->add_initializer();
    t->set_name("c");
    t->set_data_type(type);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
      type == ::onnx::TensorProto::UINT32 ? t->add_uint64_data(static_cast<uint64_t>(v))
                                          : t->add_int32_data(static_cast<int32_t>(v));
    m.node("Identity", {"c"}, {"y"}).output("y");
    return m.bytes();
  };
  constexpr int kUint16 = ::onnx::TensorProto::UINT16, kInt16 = ::onnx::TensorProto::INT16,
                kUint32 = ::onnx::TensorProto::UINT32;
  CHECK_THAT(errorOf(model(kUint8, {1, -5})),
             Contains("m.onnx: initializer \"c\": tensor \"c\" of type UINT8 holds the value -5, "
                      "outside [0, 255]"));
  CHECK_THAT(errorOf(model(kUint8, {256})), Contains("holds the value 256, outside [0, 255]"));
  CHECK_THAT(errorOf(model(kInt8, {-129})), Contains("outside [-128, 127]"));
  CHECK_THAT(errorOf(model(kUint16, {65536})), Contains("outside [0, 65535]"));
  CHECK_THAT(errorOf(model(kInt16, {32768})), Contains("outside [-32768, 32767]"));
  CHECK_THAT(errorOf(model(kUint32, {int64_t(1) << 32})),
             Contains("type UINT32 holds the value 4294967296, outside [0, 4294967295]"));
  CHECK_THAT(errorOf(model(kHalf, {1000000})),
             Contains("type FLOAT16 holds the 16-bit pattern 1000000, outside [0, 65535]"));
  CHECK_THAT(errorOf(model(kBfloat16, {-1})), Contains("16-bit pattern -1"));
  // the extremes of each range import
  for (auto [type, lo, hi] : {std::tuple{kUint8, 0, 255},
                              {kInt8, -128, 127},
                              {kUint16, 0, 65535},
                              {kInt16, -32768, 32767}}) {
    auto out = run(importOnnxBytes(model(type, {lo, hi})), {})[0];
    CHECK(out.getInt(0) == lo);
    CHECK(out.getInt(1) == hi);
  }
  CHECK(run(importOnnxBytes(model(kUint32, {4294967295})), {})[0].getInt(0) == 4294967295);
  CHECK(valuesOf(run(importOnnxBytes(model(kHalf, {0x3c00})), {})[0]) == std::vector<double>{1});

  // an initializer shadowing a graph input must have the input's type and shape
  auto shadow = [](int inputType, std::vector<std::string> dims) {
    ModelBuilder m(13);
    m.input("w", inputType, dims).initializer("w", {2}, {3, 4});
    m.node("Relu", {"w"}, {"y"}).output("y");
    return m.bytes();
  };
  CHECK_THAT(errorOf(shadow(kInt64, {"2"})),
             Contains("initializer \"w\": has type FLOAT but the graph input it provides the "
                      "default of is INT64"));
  CHECK_THAT(errorOf(shadow(kFloat, {"3"})),
             Contains("initializer \"w\": has shape [2] but the graph input it provides the "
                      "default of has shape [3]"));
  CHECK_THAT(errorOf(shadow(kFloat, {"2", "1"})), Contains("has shape [2] but"));
  CHECK(valuesOf(run(importOnnxBytes(shadow(kFloat, {"N"})), {})[0]) == std::vector<double>{3, 4});
}

TEST_CASE("ReduceSum takes axes as an attribute before opset 13 and as an input from 13",
          "[onnx]") {
  auto x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  ModelBuilder old(11);
  old.input("x", kFloat, {"2", "3"})
      .node("ReduceSum", {"x"}, {"y"}, {Attr::list("axes", {1}), Attr::integer("keepdims", 0)});
  old.output("y");
  ModelBuilder now(13);
  now.input("x", kFloat, {"2", "3"}).initializerInts("axes", {1}, {1});
  now.node("ReduceSum", {"x", "axes"}, {"y"}, {Attr::integer("keepdims", 0)}).output("y");
  CHECK(valuesOf(run(importOnnxBytes(old.bytes()), {x})[0]) == std::vector<double>{6, 15});
  CHECK(valuesOf(run(importOnnxBytes(now.bytes()), {x})[0]) == std::vector<double>{6, 15});

  SECTION("no axes reduces everything unless noop_with_empty_axes") {
    ModelBuilder all(13), noop(13);
    all.input("x", kFloat, {"2", "3"}).node("ReduceSum", {"x"}, {"y"}).output("y");
    noop.input("x", kFloat, {"2", "3"})
        .node("ReduceSum", {"x"}, {"y"}, {Attr::integer("noop_with_empty_axes", 1)});
    noop.output("y");
    auto a = run(importOnnxBytes(all.bytes()), {x})[0];
    CHECK(a.shape == std::vector<int64_t>{1, 1});
    CHECK(valuesOf(a) == std::vector<double>{21});
    CHECK(valuesOf(run(importOnnxBytes(noop.bytes()), {x})[0]) == valuesOf(x));
  }
}

TEST_CASE("Softmax before opset 13 normalizes over every axis from `axis` on", "[onnx]") {
  auto x = tensor({1, 2, 2}, {0, 0, 0, 0});
  for (int opset : {11, 13}) {
    ModelBuilder m(opset);
    m.input("x", kFloat, {"1", "2", "2"})
        .node("Softmax", {"x"}, {"y"}, {Attr::integer("axis", 1)})
        .output("y");
    auto y = valuesOf(run(importOnnxBytes(m.bytes()), {x})[0]);
    double want = opset == 11 ? 0.25 : 0.5; // coerced to [1, 4] vs per axis 1 of size 2
    for (double v : y)
      CHECK(v == Approx(want));
  }
}

TEST_CASE("Squeeze and Unsqueeze take axes from an input from opset 13", "[onnx]") {
  ModelBuilder old(11), now(13);
  old.input("x", kFloat, {"3"})
      .node("Unsqueeze", {"x"}, {"y"}, {Attr::list("axes", {0, 2})})
      .output("y");
  now.input("x", kFloat, {"3"})
      .initializerInts("axes", {2}, {0, -1})
      .node("Unsqueeze", {"x", "axes"}, {"y"})
      .output("y");
  for (auto* m : {&old, &now}) {
    ir::Graph g = importOnnxBytes(m->bytes());
    CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{1, 3, 1});
  }
}

TEST_CASE("Clip bounds are attributes before opset 11 and optional inputs from 11", "[onnx]") {
  auto x = tensor({4}, {-5, -1, 1, 5});
  ModelBuilder old(6);
  old.input("x", kFloat, {"4"})
      .node("Clip", {"x"}, {"y"}, {Attr::real("min", -2), Attr::real("max", 2)})
      .output("y");
  CHECK(valuesOf(run(importOnnxBytes(old.bytes()), {x})[0]) == std::vector<double>{-2, -1, 1, 2});
  ModelBuilder maxOnly(13);
  maxOnly.input("x", kFloat, {"4"})
      .initializer("hi", {}, {2})
      .node("Clip", {"x", "", "hi"}, {"y"})
      .output("y");
  CHECK(valuesOf(run(importOnnxBytes(maxOnly.bytes()), {x})[0]) ==
        std::vector<double>{-5, -1, 1, 2});
}

TEST_CASE("Clip-6 bounds default to the lowest and highest float32 ONNX states", "[onnx]") {
  double inf = std::numeric_limits<double>::infinity();
  auto x = tensor({3}, {-inf, 1, inf});
  ModelBuilder maxOnly(6), none(6), v1(1);
  maxOnly.input("x", kFloat, {"3"}).node("Clip", {"x"}, {"y"}, {Attr::real("max", 2)}).output("y");
  CHECK(valuesOf(run(importOnnxBytes(maxOnly.bytes()), {x})[0]) ==
        std::vector<double>{-3.402823e+38f, 1, 2});
  none.input("x", kFloat, {"3"}).node("Clip", {"x"}, {"y"}).output("y");
  CHECK(valuesOf(run(importOnnxBytes(none.bytes()), {x})[0]) ==
        std::vector<double>{-3.402823e+38f, 1, 3.402823e+38f});
  // Clip-1 states no defaults: an absent bound is none
  v1.input("x", kFloat, {"3"}).node("Clip", {"x"}, {"y"}, {Attr::real("max", 2)}).output("y");
  CHECK(valuesOf(run(importOnnxBytes(v1.bytes()), {x})[0]) == std::vector<double>{-inf, 1, 2});
}

TEST_CASE("arithmetic on the integer types weft holds widened wraps at their width",
          "[onnx][cast]") {
  // uint8: 200 + 100 = 44, 3 - 5 = 254, 20 * 20 = 144, through a Reshape (the type passes on);
  // int16: 30000 + 30000 = -5536; uint32: 0 - 1 = 4294967295. In-range results are unchanged.
  constexpr int kInt16 = ::onnx::TensorProto::INT16, kUint32 = ::onnx::TensorProto::UINT32;
  auto binary = [](int type, const std::string& op, const std::vector<int64_t>& a,
                   const std::vector<int64_t>& b) {
    ModelBuilder m(14);
    auto n = static_cast<int64_t>(a.size());
    m.input("a", type, {std::to_string(n)}).input("b", type, {std::to_string(n)});
    m.initializerInts("shape", {1}, {n});
    m.node("Reshape", {"a", "shape"}, {"r"}).node(op, {"r", "b"}, {"y"}).output("y");
    ir::DType held = type == kUint32 ? DType::i64 : DType::i32;
    HostTensor ha(held, {n}), hb(held, {n});
    for (int64_t i = 0; i < n; ++i) {
      ha.setInt(i, a[size_t(i)]);
      hb.setInt(i, b[size_t(i)]);
    }
    HostTensor y = run(importOnnxBytes(m.bytes()), {ha, hb})[0];
    std::vector<int64_t> got;
    for (int64_t i = 0; i < y.numElements(); ++i)
      got.push_back(y.getInt(i));
    return got;
  };
  CHECK(binary(kUint8, "Add", {200, 1}, {100, 2}) == std::vector<int64_t>{44, 3});
  CHECK(binary(kUint8, "Sub", {3, 9}, {5, 2}) == std::vector<int64_t>{254, 7});
  CHECK(binary(kUint8, "Mul", {20, 3}, {20, 4}) == std::vector<int64_t>{144, 12});
  CHECK(binary(kInt16, "Add", {30000, -2}, {30000, 1}) == std::vector<int64_t>{-5536, -1});
  CHECK(binary(kUint32, "Sub", {0, 7}, {1, 2}) == std::vector<int64_t>{4294967295, 5});
  CHECK(binary(kUint8, "Max", {200, 1}, {100, 2}) == std::vector<int64_t>{200, 2});
}

TEST_CASE("Cast to the integer types weft holds widened keeps the low bits", "[onnx][cast]") {
  // UINT8, UINT16, INT16 are held in i32 and UINT32 in i64 (irDTypeOf); ONNX Cast between
  // fixed-point types keeps the low bits, and truncates a float first.
  auto castOf = [](int from, int to, std::vector<double> values, bool folded) {
    ModelBuilder m(13);
    auto n = static_cast<int64_t>(values.size());
    if (folded) {
      auto* t = m.proto().mutable_graph()->add_initializer();
      t->set_name("x");
      t->set_data_type(from);
      t->add_dims(n);
      for (double v : values)
        from == kFloat ? t->add_float_data(static_cast<float>(v))
                       : t->add_int64_data(static_cast<int64_t>(v));
    } else {
      m.input("x", from, {std::to_string(n)});
    }
    m.node("Cast", {"x"}, {"y"}, {Attr::integer("to", to)}).output("y");
    ir::Graph g = importOnnxBytes(m.bytes());
    std::vector<HostTensor> in;
    if (!folded) {
      HostTensor h(from == kFloat ? DType::f32 : DType::i64, {n});
      for (int64_t i = 0; i < n; ++i)
        from == kFloat ? h.set(i, values[static_cast<size_t>(i)])
                       : h.setInt(i, static_cast<int64_t>(values[static_cast<size_t>(i)]));
      in.push_back(h);
    }
    HostTensor y = run(g, in)[0];
    std::vector<int64_t> got;
    for (int64_t i = 0; i < y.numElements(); ++i)
      got.push_back(y.getInt(i));
    return got;
  };
  constexpr int kUint16 = ::onnx::TensorProto::UINT16, kInt16 = ::onnx::TensorProto::INT16,
                kUint32 = ::onnx::TensorProto::UINT32;
  for (bool folded : {false, true}) {
    INFO("folded " << folded);
    std::vector<double> x = {300, -1, 65543, 40000, -4294967297.0};
    CHECK(castOf(kInt64, kUint8, x, folded) == std::vector<int64_t>{44, 255, 7, 64, 255});
    CHECK(castOf(kInt64, kUint16, x, folded) == std::vector<int64_t>{300, 65535, 7, 40000, 65535});
    CHECK(castOf(kInt64, kInt16, x, folded) == std::vector<int64_t>{300, -1, 7, -25536, -1});
    CHECK(castOf(kInt64, kUint32, x, folded) ==
          std::vector<int64_t>{300, 4294967295, 65543, 40000, 4294967295});
    CHECK(castOf(kFloat, kUint8, {300.7, -1.5, 255.9}, folded) ==
          std::vector<int64_t>{44, 255, 255});
    CHECK(castOf(kFloat, kInt16, {40000.5, -32769}, folded) == std::vector<int64_t>{-25536, 32767});
  }
  // CastLike to a UINT8 initializer's type wraps too
  ModelBuilder m(15);
  m.input("x", kInt64, {"2"}).node("CastLike", {"x", "like"}, {"y"}).output("y");
  auto* like = m.proto().mutable_graph()->add_initializer();
  like->set_name("like");
  like->set_data_type(kUint8);
  like->add_dims(1);
  like->add_int32_data(0);
  HostTensor h(DType::i64, {2});
  h.setInt(0, 256 + 3);
  h.setInt(1, -2);
  HostTensor y = run(importOnnxBytes(m.bytes()), {h})[0];
  CHECK(y.getInt(0) == 3);
  CHECK(y.getInt(1) == 254);
}

TEST_CASE("Pad takes pads as an attribute before opset 11 and as an input from 11", "[onnx]") {
  auto x = tensor({2}, {1, 2});
  ModelBuilder old(2), now(13);
  old.input("x", kFloat, {"2"})
      .node("Pad", {"x"}, {"y"}, {Attr::list("pads", {1, 2}), Attr::real("value", 7)});
  old.output("y");
  now.input("x", kFloat, {"2"}).initializerInts("pads", {2}, {1, 2}).initializer("v", {}, {7});
  now.node("Pad", {"x", "pads", "v"}, {"y"}).output("y");
  for (auto* m : {&old, &now})
    CHECK(valuesOf(run(importOnnxBytes(m->bytes()), {x})[0]) == std::vector<double>{7, 1, 2, 7, 7});
  ModelBuilder reflect(13);
  reflect.input("x", kFloat, {"3"}).initializerInts("pads", {2}, {2, 1});
  reflect.node("Pad", {"x", "pads"}, {"y"}, {Attr::text("mode", "reflect")}).output("y");
  CHECK(valuesOf(run(importOnnxBytes(reflect.bytes()), {tensor({3}, {1, 2, 3})})[0]) ==
        std::vector<double>{3, 2, 1, 2, 3, 2});
}

TEST_CASE("Slice takes attributes before opset 10 and inputs (with negative steps) from 10",
          "[onnx]") {
  auto x = tensor({5}, {0, 1, 2, 3, 4});
  ModelBuilder old(9);
  old.input("x", kFloat, {"5"})
      .node("Slice", {"x"}, {"y"}, {Attr::list("starts", {1}), Attr::list("ends", {-1})});
  old.output("y");
  CHECK(valuesOf(run(importOnnxBytes(old.bytes()), {x})[0]) == std::vector<double>{1, 2, 3});
  ModelBuilder now(13);
  now.input("x", kFloat, {"5"}).initializerInts("s", {1}, {-1}).initializerInts("e", {1}, {-100});
  now.initializerInts("a", {1}, {0}).initializerInts("st", {1}, {-2});
  now.node("Slice", {"x", "s", "e", "a", "st"}, {"y"}).output("y");
  CHECK(valuesOf(run(importOnnxBytes(now.bytes()), {x})[0]) == std::vector<double>{4, 2, 0});
}

TEST_CASE("Split takes sizes as an attribute before opset 13 and as an input from 13", "[onnx]") {
  auto x = tensor({5}, {0, 1, 2, 3, 4});
  ModelBuilder old(11), now(13), equal(13);
  old.input("x", kFloat, {"5"}).node("Split", {"x"}, {"a", "b"}, {Attr::list("split", {2, 3})});
  old.output("a").output("b");
  now.input("x", kFloat, {"5"})
      .initializerInts("split", {2}, {2, 3})
      .node("Split", {"x", "split"}, {"a", "b"});
  now.output("a").output("b");
  for (auto* m : {&old, &now}) {
    auto out = run(importOnnxBytes(m->bytes()), {x});
    CHECK(valuesOf(out[0]) == std::vector<double>{0, 1});
    CHECK(valuesOf(out[1]) == std::vector<double>{2, 3, 4});
  }
  equal.input("x", kFloat, {"4"}).node("Split", {"x"}, {"a", "b"}).output("a").output("b");
  auto out = run(importOnnxBytes(equal.bytes()), {tensor({4}, {0, 1, 2, 3})});
  CHECK(valuesOf(out[1]) == std::vector<double>{2, 3});
}

TEST_CASE("Reshape with 0 and -1 keeps symbolic dims exact", "[onnx]") {
  ModelBuilder m(14);
  m.input("x", kFloat, {"N", "2", "3"}).initializerInts("shape", {2}, {0, -1});
  m.node("Reshape", {"x", "shape"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{ir::Dim::symbol("N"), 6});
}

TEST_CASE("shape computations on static shapes fold at import time", "[onnx]") {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the usual flatten-but-batch idiom
  ModelBuilder m(13);
  m.input("x", kFloat, {"2", "3", "4"})
      .initializerInts("zero", {}, {0})
      .initializerInts("minus1", {1}, {-1});
  m.node("Shape", {"x"}, {"s"}).node("Gather", {"s", "zero"}, {"b"});
  m.initializerInts("ax", {1}, {0}).node("Unsqueeze", {"b", "ax"}, {"b1"});
  m.node("Concat", {"b1", "minus1"}, {"target"}, {Attr::integer("axis", 0)});
  m.node("Reshape", {"x", "target"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{2, 12});
  CHECK(g.size() == 2); // the parameter and the reshape: everything else folded away
}

TEST_CASE("Gather with run-time indices selects through a one-hot sum", "[onnx]") {
  ModelBuilder m(13);
  m.input("data", kFloat, {"3", "2"}).input("idx", kInt64, {"2"});
  m.node("Gather", {"data", "idx"}, {"y"}, {Attr::integer("axis", 0)}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  auto out = run(g, {tensor({3, 2}, {1, 2, 3, 4, 5, 6}), tensor({2}, {2, -3}, DType::i64)});
  CHECK(out[0].shape == std::vector<int64_t>{2, 2});
  CHECK(valuesOf(out[0]) == std::vector<double>{5, 6, 1, 2});
}

TEST_CASE("Gemm expands transA, transB, alpha, beta and a broadcast C", "[onnx]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {"2", "1"}).input("b", kFloat, {"2", "2"}).input("c", kFloat, {"2"});
  m.node("Gemm", {"a", "b", "c"}, {"y"},
         {Attr::integer("transA", 1), Attr::integer("transB", 1), Attr::real("alpha", 2),
          Attr::real("beta", 3)});
  m.output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(countKind(g, ir::OpKind::Dot) == 1);
  // A' = [[1, 2]] (1x2), B' = [[1, 3], [2, 4]]: A'B' = [[5, 11]]; 2 * that + 3 * [1, 1]
  auto out = run(g, {tensor({2, 1}, {1, 2}), tensor({2, 2}, {1, 2, 3, 4}), tensor({2}, {1, 1})});
  CHECK(valuesOf(out[0]) == std::vector<double>{13, 25});
}

TEST_CASE("MatMul broadcasts batch dims and handles 1-D operands", "[onnx]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {"2", "1", "3", "4"})
      .input("b", kFloat, {"5", "4", "2"})
      .node("MatMul", {"a", "b"}, {"y"});
  m.output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{2, 5, 3, 2});
  ModelBuilder v(13);
  v.input("a", kFloat, {"3"})
      .input("b", kFloat, {"3", "2"})
      .node("MatMul", {"a", "b"}, {"y"})
      .output("y");
  ir::Graph gv = importOnnxBytes(v.bytes());
  auto out = run(gv, {tensor({3}, {1, 2, 3}), tensor({3, 2}, {1, 0, 0, 1, 1, 1})});
  CHECK(out[0].shape == std::vector<int64_t>{2});
  CHECK(valuesOf(out[0]) == std::vector<double>{4, 5});
}

TEST_CASE("LayerNormalization and BatchNormalization lower to primitives", "[onnx]") {
  ModelBuilder ln(17);
  ln.input("x", kFloat, {"1", "4"})
      .initializer("s", {4}, {1, 1, 1, 1})
      .initializer("b", {4}, {0, 0, 0, 1});
  ln.node("LayerNormalization", {"x", "s", "b"}, {"y"}).output("y");
  auto y = valuesOf(run(importOnnxBytes(ln.bytes()), {tensor({1, 4}, {1, 2, 3, 4})})[0]);
  double sd = std::sqrt(1.25 + 1e-5);
  CHECK(y[0] == Approx(-1.5 / sd));
  CHECK(y[3] == Approx(1.5 / sd + 1));

  ModelBuilder bn(15);
  bn.input("x", kFloat, {"1", "2", "1"})
      .initializer("s", {2}, {2, 1})
      .initializer("b", {2}, {0, 1});
  bn.initializer("m", {2}, {1, 0}).initializer("v", {2}, {4, 1});
  bn.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {Attr::real("epsilon", 0)})
      .output("y");
  CHECK(valuesOf(run(importOnnxBytes(bn.bytes()), {tensor({1, 2, 1}, {5, 3})})[0]) ==
        std::vector<double>{4, 4});
}

TEST_CASE("element types the IR lacks are widened", "[onnx]") {
  ModelBuilder m(14);
  m.input("a", kUint8, {"2"}).input("b", kUint8, {"2"}).node("Add", {"a", "b"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(g.node(g.inputs()[0]).type.dtype == DType::i32);
}

TEST_CASE("an unsupported operator is reported once per type with node name and opset", "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {"2"})
      .node("Foo", {"x"}, {"a"}, {}, "first_foo")
      .node("Foo", {"a"}, {"b"}, {}, "second_foo");
  m.node("Bar", {"b"}, {"y"}, {}, "the_bar").output("y");
  try {
    importOnnxBytes(m.bytes(), "m.onnx");
    FAIL("expected UnsupportedError");
  } catch (const UnsupportedError& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Contains("m.onnx: unsupported operator Foo (node \"first_foo\", opset 13)"));
    CHECK_THAT(msg, Contains("unsupported operator Bar (node \"the_bar\", opset 13)"));
    CHECK(msg.find("second_foo") == std::string::npos);
    CHECK(e.opType() == "Foo");
  }
  ModelBuilder other(13);
  other.input("x", kFloat, {"2"}).node("Custom", {"x"}, {"y"}, {}, "c", "com.example").output("y");
  CHECK_THAT(errorOf(other.bytes()), Contains("com.example.Custom"));
}

TEST_CASE("bad ONNX files give InputErrors that say what is wrong", "[onnx]") {
  ModelBuilder good(13);
  good.input("x", kFloat, {"2", "3"}).initializer("w", {3}, {1, 2, 3});
  good.node("Mul", {"x", "w"}, {"t"}).node("Relu", {"t"}, {"y"}).output("y");
  std::string bytes = good.bytes();
  REQUIRE_NOTHROW(importOnnxBytes(bytes));

  SECTION("truncated protobuf") {
    CHECK_THAT(errorOf(bytes.substr(0, bytes.size() / 2)), Contains("cannot be parsed"));
  }
  SECTION("every truncation is rejected cleanly") {
    for (size_t n = 0; n < bytes.size(); n += 3)
      CHECK_THROWS_AS(importOnnxBytes(bytes.substr(0, n), "m.onnx"), InputError);
  }
  SECTION("not an ONNX file") {
    CHECK_THAT(errorOf("{\"name\": \"a weft JSON graph\"}"), Contains("not a valid ONNX model"));
    CHECK_THAT(errorOf("hello, world\n"), Contains("m.onnx: not"));
    CHECK_THAT(errorOf(""), Contains("empty"));
  }
  SECTION("unsupported opset") {
    ModelBuilder m(99);
    m.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("opset 99") && Contains("supports opsets 1 to"));
    ModelBuilder none(13);
    none.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("y");
    none.proto().mutable_opset_import(0)->set_domain("ai.onnx.ml");
    CHECK_THAT(errorOf(none.bytes()), Contains("no opset of the default ONNX domain"));
  }
  SECTION("missing initializer / undefined input") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"}).node("Mul", {"x", "w"}, {"y"}, {}, "scale").output("y");
    CHECK_THAT(errorOf(m.bytes()),
               Contains("node \"scale\" (Mul): input 1 \"w\" is not an initializer"));
  }
  SECTION("undefined graph output") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("z");
    CHECK_THAT(errorOf(m.bytes()), Contains("graph output \"z\" is not produced"));
  }
  SECTION("a shape operand only known at run time") {
    ModelBuilder m(14);
    m.input("x", kFloat, {"2", "3"})
        .input("shape", kInt64, {"1"})
        .node("Reshape", {"x", "shape"}, {"y"})
        .output("y");
    try {
      importOnnxBytes(m.bytes(), "m.onnx");
      FAIL("expected ImportTimeValueError");
    } catch (const ImportTimeValueError& e) {
      CHECK(e.input() == "shape");
      CHECK_THAT(std::string(e.what()), Contains("graph input \"shape\""));
    }
    ImportOptions frozen;
    frozen.frozenInputs["shape"] = tensor({1}, {6}, DType::i64);
    ir::Graph g = importOnnxBytes(m.bytes(), "m.onnx", frozen);
    CHECK(g.inputs().size() == 1);
    CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{6});
  }
  SECTION("files") {
    CHECK_THAT(std::string([] {
                 try {
                   importOnnx(tempPath("does_not_exist.onnx"));
                 } catch (const InputError& e) {
                   return std::string(e.what());
                 }
                 return std::string();
               }()),
               Contains("cannot open"));
  }
}

TEST_CASE("loadGraphAnyFormat reads ONNX models by extension", "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {"2"}).node("Neg", {"x"}, {"y"}).output("y");
  std::string path = tempPath("neg.onnx");
  writeFile(path, m.bytes());
  frontend::ParsedGraph g = frontend::loadGraphAnyFormat(path);
  CHECK(g.name == "weft_onnx_test_neg");
  CHECK(g.graph.outputs().size() == 1);
  CHECK(looksLikeOnnx(path));
  std::filesystem::remove(path);
}

TEST_CASE("TensorProto files read into HostTensors", "[onnx]") {
  ::onnx::TensorProto t;
  t.set_data_type(::onnx::TensorProto::INT32);
  t.add_dims(3);
  int32_t raw[3] = {1, -2, 3};
  t.set_raw_data(std::string(reinterpret_cast<const char*>(raw), sizeof(raw)));
  HostTensor h = parseTensorProto(t.SerializeAsString(), "t.pb");
  CHECK(h.dtype == DType::i32);
  CHECK(valuesOf(h) == std::vector<double>{1, -2, 3});
  t.set_raw_data("abc");
  CHECK_THROWS_WITH(parseTensorProto(t.SerializeAsString(), "t.pb"),
                    Contains("3 bytes of raw data"));
}

TEST_CASE("inputs fuzzing found once import or give an InputError naming the file", "[onnx]") {
  // Each file of test/frontend/fuzz_regressions/onnx/ once crashed the importer or the
  // TensorProto reader (tools/fuzz/onnx_importer_fuzzer.cc feeds the same bytes to both). Now
  // each gives a verified graph or tensor, or one clear InputError.
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           WEFT_SOURCE_DIR "/test/frontend/fuzz_regressions/onnx")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(entry.path().filename().string());
    try {
      ir::verify(importOnnxBytes(bytes, "m.onnx"));
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind("m.onnx: ", 0) == 0);
    }
    try {
      HostTensor t = parseTensorProto(bytes, "t.pb");
      CHECK(t.byteSize() == static_cast<size_t>(t.numElements()) * ir::dtypeBytes(t.dtype));
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind("t.pb: ", 0) == 0);
    }
    ++n;
  }
  CHECK(n >= 1);
}

TEST_CASE("a tensor whose dims overflow int64 is an InputError before any allocation", "[onnx]") {
  ::onnx::TensorProto t;
  t.set_name("big");
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i)
    t.add_dims(int64_t(1) << 20);
  t.add_float_data(1);
  CHECK_THROWS_WITH(parseTensorProto(t.SerializeAsString(), "t.pb"),
                    Contains("t.pb: tensor \"big\" of shape [1048576, 1048576, 1048576, "
                             "1048576]: size overflow"));
  t.clear_dims(); // fits in int64, but holds 1 value where 2^40 are needed
  t.add_dims(int64_t(1) << 20);
  t.add_dims(int64_t(1) << 20);
  CHECK_THROWS_WITH(
      parseTensorProto(t.SerializeAsString(), "t.pb"),
      Contains("holds 1 values but its shape [1048576, 1048576] needs 1099511627776"));
}

TEST_CASE("a large ConstantOfShape is a splat constant, not a literal on the host", "[onnx]") {
  ModelBuilder m(13);
  m.initializerInts("shape", {2}, {100000, 100000});
  m.node("ConstantOfShape", {"shape"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(m.bytes(), "m.onnx");
  CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{100000, 100000});
}

TEST_CASE("an integer operand past int64 is an InputError, not an undefined conversion", "[onnx]") {
  // int64 literals are exact: INT64_MAX stays INT64_MAX (it once became 2^63 as a double).
  // Reshape to it is an ordinary error naming the node.
  ModelBuilder m(14);
  m.input("x", kFloat, {"2"}).initializerInts("shape", {1}, {INT64_MAX});
  m.node("Reshape", {"x", "shape"}, {"y"}, {}, "r").output("y");
  CHECK_THROWS_WITH(importOnnxBytes(m.bytes(), "m.onnx"),
                    Contains("m.onnx: node \"r\" (Reshape, opset 14): cannot reshape [2] into "
                             "[9223372036854775807]"));
  // A UINT64 value past INT64_MAX has no i64 to go to.
  ModelBuilder u(13);
  u.input("x", kFloat, {"2"}).output("x");
  auto* t = u.proto().mutable_graph()->add_initializer();
  t->set_name("big");
  t->set_data_type(::onnx::TensorProto::UINT64);
  t->add_dims(1);
  t->add_uint64_data(UINT64_MAX);
  CHECK_THAT(errorOf(u.bytes()), Contains("m.onnx: initializer \"big\": tensor \"big\" holds the "
                                          "UINT64 value 18446744073709551615, which is past"));
}

// ---------------------------------------------------------------- inputs read as given

TEST_CASE("an opset version past 32 bits is not truncated", "[onnx]") {
  for (int64_t version : {(int64_t(1) << 32) + 13, int64_t(1) << 40, int64_t(-1)}) {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("y");
    m.proto().mutable_opset_import(0)->set_version(version);
    INFO(version);
    CHECK_THAT(errorOf(m.bytes()),
               Contains(fmt::format("m.onnx: the model imports opset {} of the default domain; "
                                    "weft supports opsets 1 to",
                                    version)));
  }
}

TEST_CASE("an attribute of the wrong type is an error naming node, attribute and both types",
          "[onnx]") {
  SECTION("Softmax axis given as FLOAT 1.5") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "4"})
        .node("Softmax", {"x"}, {"y"}, {Attr::real("axis", 1.5f)}, "sm")
        .output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("m.onnx: node \"sm\" (Softmax, opset 13): attribute "
                                            "\"axis\" must be INT, but it is FLOAT"));
  }
  SECTION("every reader checks: INTS, FLOAT, STRING, TENSOR") {
    ModelBuilder perm(13), alpha(13), mode(13), value(13);
    perm.input("x", kFloat, {"2", "4"})
        .node("Transpose", {"x"}, {"y"}, {Attr::integer("perm", 1)})
        .output("y");
    CHECK_THAT(errorOf(perm.bytes()), Contains("attribute \"perm\" must be INTS, but it is INT"));
    alpha.input("x", kFloat, {"2"})
        .node("LeakyRelu", {"x"}, {"y"}, {Attr::integer("alpha", 1)})
        .output("y");
    CHECK_THAT(errorOf(alpha.bytes()),
               Contains("attribute \"alpha\" must be FLOAT, but it is INT"));
    mode.input("x", kFloat, {"2"}).initializerInts("p", {2}, {1, 1});
    mode.node("Pad", {"x", "p"}, {"y"}, {Attr::integer("mode", 0)}).output("y");
    CHECK_THAT(errorOf(mode.bytes()), Contains("attribute \"mode\" must be STRING, but it is INT"));
    value.node("Constant", {}, {"y"}, {Attr::list("value", {1})}).output("y");
    CHECK_THAT(errorOf(value.bytes()),
               Contains("attribute \"value\" must be TENSOR, but it is INTS"));
  }
  SECTION("an attribute given twice") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "4"})
        .node("Softmax", {"x"}, {"y"}, {Attr::integer("axis", 0), Attr::integer("axis", 1)})
        .output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("attribute \"axis\" is given twice"));
  }
  SECTION("an attribute without a type (IR version 1) is read by its field") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "4"})
        .node("Softmax", {"x"}, {"y"}, {Attr::integer("axis", 0)})
        .output("y");
    m.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0)->clear_type();
    ir::Graph g = importOnnxBytes(m.bytes(), "m.onnx");
    auto out = run(g, {tensor({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0})});
    CHECK(valuesOf(out[0]) == std::vector<double>(8, 0.5)); // over axis 0 of size 2
    m.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0)->clear_i();
    CHECK_THAT(errorOf(m.bytes()),
               Contains("m.onnx: node \"y\" (Softmax, opset 13): attribute \"axis\" declares "
                        "no type and holds no value"));
  }
  SECTION("an attribute whose declared type has no value, or another value beside it") {
    auto softmax = [](auto edit) {
      ModelBuilder m(13);
      m.input("x", kFloat, {"2", "4"})
          .node("Softmax", {"x"}, {"y"}, {Attr::integer("axis", 0)}, "sm")
          .output("y");
      edit(*m.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0));
      return errorOf(m.bytes());
    };
    CHECK_THAT(softmax([](auto& a) { a.clear_i(); }),
               Contains("node \"sm\" (Softmax, opset 13): attribute \"axis\" is declared INT but "
                        "holds no INT value"));
    CHECK_THAT(softmax([](auto& a) {
                 a.clear_i();
                 a.set_f(1);
               }),
               Contains("attribute \"axis\" is declared INT but holds no INT value (it holds "
                        "FLOAT)"));
    CHECK_THAT(softmax([](auto& a) { a.set_f(1); }),
               Contains("attribute \"axis\" is declared INT but also holds FLOAT"));
    // also an attribute the lowering never reads (LeakyRelu's alpha left at its default)
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"}).node("LeakyRelu", {"x"}, {"y"}, {Attr::real("alpha", 1)});
    m.output("y");
    m.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0)->clear_f();
    CHECK_THAT(errorOf(m.bytes()),
               Contains("attribute \"alpha\" is declared FLOAT but holds no FLOAT value"));
    // an empty list is a value
    ModelBuilder t(13);
    t.input("x", kFloat, {"2", "3"}).node("Transpose", {"x"}, {"y"}, {Attr::list("perm", {})});
    t.output("y");
    CHECK_THAT(errorOf(t.bytes()), !Contains("holds no"));
  }
}

TEST_CASE("invalid models that were accepted are errors naming the node", "[onnx]") {
  SECTION("Concat without its required axis") {
    ModelBuilder m(13);
    m.input("a", kFloat, {"2", "2"}).input("b", kFloat, {"2", "2"});
    m.node("Concat", {"a", "b"}, {"y"}).output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("m.onnx: node \"y\" (Concat, opset 13): the required "
                                            "attribute \"axis\" (INT) is missing"));
  }
  SECTION("Cast without its required to, or a `to` past 32 bits") {
    ModelBuilder m(13), wide(13);
    m.input("x", kFloat, {"2"}).node("Cast", {"x"}, {"y"}).output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("the required attribute \"to\" (INT) is missing"));
    wide.input("x", kFloat, {"2"})
        .node("Cast", {"x"}, {"y"}, {Attr::integer("to", (int64_t(1) << 32) + 1)})
        .output("y");
    CHECK_THAT(errorOf(wide.bytes()), Contains("attribute \"to\" is 4294967297, which is no ONNX"));
  }
  SECTION("every Reduce* with a repeated axis") {
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                           "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                           "ReduceLogSumExp"}) {
      ModelBuilder attr(11), input(18);
      attr.input("x", kFloat, {"2", "3"})
          .node(op, {"x"}, {"y"}, {Attr::list("axes", {1, 1})})
          .output("y");
      input.input("x", kFloat, {"2", "3"}).initializerInts("axes", {2}, {-1, 1});
      input.node(op, {"x", "axes"}, {"y"}).output("y");
      INFO(op);
      CHECK_THAT(
          errorOf(attr.bytes()),
          Contains(fmt::format("node \"y\" ({}, opset 11): axes [1, 1] repeat an axis", op)));
      CHECK_THAT(
          errorOf(input.bytes()),
          Contains(fmt::format("node \"y\" ({}, opset 18): axes [-1, 1] repeat an axis", op)));
    }
  }
  SECTION("Constant with two value attributes") {
    ModelBuilder m(13);
    m.node("Constant", {}, {"y"}, {Attr::real("value_float", 1), Attr::integer("value_int", 2)})
        .output("y");
    CHECK_THAT(errorOf(m.bytes()),
               Contains("node \"y\" (Constant, opset 13): has 2 value attributes (value_float, "
                        "value_int); a Constant takes exactly one"));
  }
  SECTION("Reshape with a float shape tensor") {
    ModelBuilder m(14);
    m.input("x", kFloat, {"2", "3"}).initializer("shape", {1}, {6});
    m.node("Reshape", {"x", "shape"}, {"y"}).output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("node \"y\" (Reshape, opset 14): input 1 (shape): it "
                                            "holds f32 values, not integers"));
  }
  SECTION("two nodes with the same output name") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"});
    m.node("Relu", {"x"}, {"y"}, {}, "first").node("Neg", {"x"}, {"y"}, {}, "second").output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("m.onnx: node \"second\" (Neg): output 0 \"y\" is "
                                            "already defined"));
    ModelBuilder shadow(13); // a node output named like a graph input
    shadow.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"x"}).output("x");
    CHECK_THAT(errorOf(shadow.bytes()), Contains("output 0 \"x\" is already defined"));
  }
}

// ---------------------------------------------------------------- int64 values stay exact

TEST_CASE("Slice with ends = INT64_MAX (PyTorch's x[:, 1:]) imports", "[onnx]") {
  auto x = tensor({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  ModelBuilder m(13);
  m.input("x", kFloat, {"2", "4"})
      .initializerInts("st", {1}, {1})
      .initializerInts("en", {1}, {INT64_MAX})
      .initializerInts("ax", {1}, {1});
  m.node("Slice", {"x", "st", "en", "ax"}, {"y"}).output("y");
  auto out = run(importOnnxBytes(m.bytes(), "m.onnx"), {x});
  CHECK(out[0].shape == std::vector<int64_t>{2, 3});
  CHECK(valuesOf(out[0]) == std::vector<double>{1, 2, 3, 5, 6, 7});

  SECTION("the bounds computed at import time (Constant, Concat) stay exact") {
    ModelBuilder f(13);
    f.input("x", kFloat, {"2", "4"}).initializerInts("e0", {1}, {INT64_MAX});
    f.node("Constant", {}, {"e1"}, {Attr::list("value_ints", {INT64_MAX})});
    f.node("Concat", {"e0", "e1"}, {"en"}, {Attr::integer("axis", 0)});
    f.initializerInts("st", {2}, {1, 2}).initializerInts("ax", {2}, {0, 1});
    f.node("Slice", {"x", "st", "en", "ax"}, {"y"}).output("y");
    CHECK(valuesOf(run(importOnnxBytes(f.bytes(), "m.onnx"), {x})[0]) == std::vector<double>{6, 7});
  }
  SECTION("negative steps from INT64_MAX to INT64_MIN reverse the whole axis (ONNX clamping)") {
    ModelBuilder r(13);
    r.input("x", kFloat, {"2", "4"})
        .initializerInts("st", {1}, {INT64_MAX})
        .initializerInts("en", {1}, {INT64_MIN})
        .initializerInts("ax", {1}, {1})
        .initializerInts("sp", {1}, {-1});
    r.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}).output("y");
    CHECK(valuesOf(run(importOnnxBytes(r.bytes(), "m.onnx"), {x})[0]) ==
          std::vector<double>{3, 2, 1, 0, 7, 6, 5, 4});
    // step INT64_MIN takes the start only; starts INT64_MIN with step 1 begin at 0
    ModelBuilder s(13);
    s.input("x", kFloat, {"2", "4"})
        .initializerInts("st", {2}, {INT64_MIN, -1})
        .initializerInts("en", {2}, {INT64_MAX, INT64_MIN})
        .initializerInts("ax", {2}, {0, 1})
        .initializerInts("sp", {2}, {1, INT64_MIN});
    s.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}).output("y");
    CHECK(valuesOf(run(importOnnxBytes(s.bytes(), "m.onnx"), {x})[0]) == std::vector<double>{3, 7});
    ModelBuilder empty(13); // an axis of size 0 reversed: nothing to take
    empty.input("x", kFloat, {"0"})
        .initializerInts("st", {1}, {INT64_MAX})
        .initializerInts("en", {1}, {INT64_MIN})
        .initializerInts("sp", {1}, {-1})
        .initializerInts("ax", {1}, {0});
    empty.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}).output("y");
    ir::Graph g = importOnnxBytes(empty.bytes(), "m.onnx");
    CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{0});
  }
  SECTION("a negative step over a large axis is refused before building its indices") {
    ModelBuilder big(13);
    big.input("x", kFloat, {"100000000"})
        .initializerInts("st", {1}, {-1})
        .initializerInts("en", {1}, {INT64_MIN})
        .initializerInts("ax", {1}, {0})
        .initializerInts("sp", {1}, {-1});
    big.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}).output("y");
    CHECK_THROWS_AS(importOnnxBytes(big.bytes(), "m.onnx"), UnsupportedError);
  }
}

TEST_CASE("Pad with pads of INT64_MIN is an error at the Pad node, not at an internal op",
          "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {"3"}).initializerInts("p", {2}, {INT64_MIN, 0});
  m.node("Pad", {"x", "p"}, {"y"}).output("y");
  std::string e = errorOf(m.bytes());
  CHECK_THAT(e, Contains("m.onnx: node \"y\" (Pad, opset 13): pads [-9223372036854775808, 0] crop "
                         "axis 0 of size 3 below zero elements"));
  CHECK_THAT(e, !Contains("slice.1"));
}

// ---------------------------------------------------------------- names

TEST_CASE("ONNX names like the IR's fresh names import as given", "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {"2", "4"}).node("Relu", {"x"}, {"constant.1"}, {}, "constant.1");
  m.node("Softmax", {"constant.1"}, {"reduce.2"}).output("reduce.2").output("constant.1");
  ir::Graph g = importOnnxBytes(m.bytes(), "m.onnx");
  CHECK(g.node(g.outputs()[0]).name == "reduce.2");
  CHECK(g.node(g.outputs()[1]).name == "constant.1");
  auto out = run(g, {tensor({2, 4}, {-1, 1, -1, 1, 0, 0, 0, 0})});
  CHECK(valuesOf(out[1]) == std::vector<double>{0, 1, 0, 1, 0, 0, 0, 0});
  // folded on the host too: Relu of an initializer named like a fresh constant
  ModelBuilder f(13);
  f.initializer("c", {2}, {-1, 2}).node("Relu", {"c"}, {"constant.1"}).output("constant.1");
  CHECK(valuesOf(run(importOnnxBytes(f.bytes(), "m.onnx"), {})[0]) == std::vector<double>{0, 2});
}

TEST_CASE("graph outputs are the model's outputs in order, each a distinct value with its name",
          "[onnx][outputs]") {
  // The names of the graph's outputs, and a check that no two are one value.
  auto outputNames = [](const ir::Graph& g) {
    std::vector<std::string> names;
    for (ir::NodeId id : g.outputs())
      names.push_back(g.node(id).name);
    return names;
  };
  auto x = tensor({2}, {-1, 2});
  SECTION("two outputs passing one input through") {
    ModelBuilder m;
    m.input("x", kFloat, {"2"}).node("Identity", {"x"}, {"y"}).node("Identity", {"x"}, {"z"});
    m.output("y").output("z");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(outputNames(g) == std::vector<std::string>{"y", "z"});
    auto out = run(g, {x});
    REQUIRE(out.size() == 2);
    CHECK(valuesOf(out[1]) == std::vector<double>{-1, 2});
  }
  SECTION("an output that copies another output, next to it") {
    ModelBuilder m;
    m.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).node("Identity", {"y"}, {"z"});
    m.output("z").output("y");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(outputNames(g) == std::vector<std::string>{"z", "y"});
    auto out = run(g, {x});
    REQUIRE(out.size() == 2);
    CHECK(valuesOf(out[0]) == std::vector<double>{0, 2});
    CHECK(valuesOf(out[1]) == std::vector<double>{0, 2});
  }
  SECTION("a graph input, an initializer and pass-through ops as outputs") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2"}).initializer("c", {2}, {5, 6}).initializerInts("none", {0}, {});
    m.node("Dropout", {"x"}, {"d"}).node("Sum", {"x"}, {"s"}).node("Squeeze", {"x"}, {"q"});
    m.node("ReduceSum", {"x", "none"}, {"r"}, {Attr::integer("noop_with_empty_axes", 1)});
    m.node("Identity", {"c"}, {"k"});
    for (const char* o : {"d", "x", "s", "q", "r", "c", "k"})
      m.output(o);
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(outputNames(g) == std::vector<std::string>{"d", "x", "s", "q", "r", "c", "k"});
    auto out = run(g, {x});
    REQUIRE(out.size() == 7);
    CHECK(valuesOf(out[4]) == std::vector<double>{-1, 2});
    CHECK(valuesOf(out[6]) == std::vector<double>{5, 6});
  }
  SECTION("lowerings that end in an internal op") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"3"}).initializerInts("pads", {2}, {2, 1});
    m.initializerInts("s", {1}, {1}).initializerInts("e", {1}, {0}).initializerInts("a", {1}, {0});
    m.initializerInts("st", {1}, {-1}).initializerInts("i", {1}, {2});
    m.node("Pad", {"x", "pads"}, {"p"}, {Attr::text("mode", "reflect")});
    m.node("Slice", {"x", "s", "e", "a", "st"}, {"sl"}).node("Gather", {"x", "i"}, {"ga"});
    m.output("p").output("sl").output("ga");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(outputNames(g) == std::vector<std::string>{"p", "sl", "ga"});
    auto out = run(g, {tensor({3}, {1, 2, 3})});
    CHECK(valuesOf(out[0]) == std::vector<double>{3, 2, 1, 2, 3, 2});
    CHECK(valuesOf(out[1]) == std::vector<double>{2});
    CHECK(valuesOf(out[2]) == std::vector<double>{3});
  }
  SECTION("an output listed twice is an error") {
    ModelBuilder m;
    m.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("y").output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("graph output \"y\" is listed twice"));
  }
}

TEST_CASE("Squeeze without axes refuses an input with a symbolic dim", "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {"N", "1", "3"}).node("Squeeze", {"x"}, {"y"}, {}, "sq").output("y");
  std::string e = errorOf(m.bytes());
  CHECK_THAT(e, Contains("node \"sq\" (Squeeze, opset 13): Squeeze without axes of an input with "
                         "the symbolic dim N ([N, 1, 3]) is not supported"));
  // with axes, or with static dims, it imports
  ModelBuilder axes(13);
  axes.input("x", kFloat, {"N", "1", "3"}).initializerInts("a", {1}, {1});
  axes.node("Squeeze", {"x", "a"}, {"y"}).output("y");
  ir::Graph g = importOnnxBytes(axes.bytes());
  CHECK(g.node(g.outputs()[0]).type.shape == ir::Shape{ir::Dim::symbol("N"), ir::Dim(3)});
  ModelBuilder fixed(11);
  fixed.input("x", kFloat, {"1", "3", "1"}).node("Squeeze", {"x"}, {"y"}).output("y");
  ir::Graph f = importOnnxBytes(fixed.bytes());
  CHECK(f.node(f.outputs()[0]).type.shape == ir::Shape{ir::Dim(3)});
}

TEST_CASE("Concat that would make a symbolic size grow is not supported, said at import",
          "[onnx]") {
  ModelBuilder m(13);
  m.input("past", kFloat, {"1", "P", "2"}).input("new", kFloat, {"1", "1", "2"});
  m.node("Concat", {"past", "new"}, {"y"}, {Attr::integer("axis", 1)}, "kv").output("y");
  std::string e;
  try {
    importOnnxBytes(m.bytes(), "m.onnx");
  } catch (const UnsupportedError& u) {
    e = u.what();
  }
  CHECK_THAT(e, Contains("node \"kv\" (Concat, opset 13): Concat along axis 1 of sizes P and 1 is "
                         "not supported: weft's dims cannot express P + 1"));
  // the same symbol twice is 2*P, which a dim expresses
  ModelBuilder twice(13);
  twice.input("a", kFloat, {"1", "P", "2"}).input("b", kFloat, {"1", "P", "2"});
  twice.node("Concat", {"a", "b"}, {"y"}, {Attr::integer("axis", 1)}).output("y");
  ir::Graph g = importOnnxBytes(twice.bytes());
  CHECK(g.node(g.outputs()[0]).type.shape[1] == ir::Dim::symbol("P") * ir::Dim(2));
}

TEST_CASE("layout errors say what is wrong or what is not supported", "[onnx]") {
  auto pad = [](const std::string& mode, std::vector<std::string> dims, int opset = 11) {
    ModelBuilder m(opset);
    m.input("x", kFloat, dims).initializerInts("p", {4}, {1, 0, 1, 0});
    m.node("Pad", {"x", "p"}, {"y"}, {Attr::text("mode", mode)}).output("y");
    return errorOf(m.bytes());
  };
  CHECK_THAT(pad("edge", {"0", "3"}), Contains("edge padding 1 on axis 0 needs more than 0"));
  CHECK_THAT(pad("reflect", {"1", "3"}), Contains("reflect padding 1 on axis 0 needs more than 1"));
  CHECK_THAT(pad("foo", {"2", "3"}),
             Contains("mode \"foo\" is not one of constant, reflect, edge"));
  CHECK_THAT(pad("wrap", {"2", "3"}), Contains("mode \"wrap\" is not one of"));
  CHECK_THAT(pad("wrap", {"2", "3"}, 19), Contains("Pad mode \"wrap\" is not supported"));
  CHECK_THAT(pad("edge", {"N", "3"}), Contains("edge padding of axis 0 of symbolic size N is not "
                                               "supported"));
  ModelBuilder twice(13);
  twice.input("x", kFloat, {"2"}).initializerInts("a", {2}, {0, 0});
  twice.node("Unsqueeze", {"x", "a"}, {"y"}).output("y");
  CHECK_THAT(errorOf(twice.bytes()), Contains("Unsqueeze, opset 13): axes [0, 0] repeat an axis"));
  ModelBuilder negative(13);
  negative.input("x", kFloat, {"2"}).initializerInts("a", {2}, {-1, 2});
  negative.node("Unsqueeze", {"x", "a"}, {"y"}).output("y");
  CHECK_THAT(errorOf(negative.bytes()), Contains("axes [-1, 2] repeat an axis"));
  ModelBuilder none(13), noneAttr(11);
  none.input("x", kFloat, {"2"}).node("Unsqueeze", {"x"}, {"y"}).output("y");
  CHECK_THAT(errorOf(none.bytes()), Contains("input 1 (axes) is required but missing"));
  noneAttr.input("x", kFloat, {"2"}).node("Unsqueeze", {"x"}, {"y"}).output("y");
  CHECK_THAT(errorOf(noneAttr.bytes()),
             Contains("the required attribute \"axes\" (INTS) is missing"));
  ModelBuilder slice(13), mean(13), shape(13);
  slice.input("x", kFloat, {"N"}).initializerInts("s", {1}, {1}).initializerInts("e", {1}, {2});
  slice.node("Slice", {"x", "s", "e"}, {"y"}).output("y");
  CHECK_THAT(errorOf(slice.bytes()),
             Contains("slicing axis 0 of symbolic size N other than whole is not supported"));
  mean.input("x", kFloat, {"2", "N"}).node("ReduceMean", {"x"}, {"y"}, {Attr::list("axes", {1})});
  mean.output("y");
  CHECK_THAT(errorOf(mean.bytes()),
             Contains("ReduceMean over axis 1 of symbolic size N is not supported"));
  shape.input("x", kFloat, {"N"}).node("Shape", {"x"}, {"s"}).node("Reshape", {"x", "s"}, {"y"});
  shape.output("y");
  CHECK_THAT(errorOf(shape.bytes()), Contains("Shape of [N] is not supported"));
}

TEST_CASE("an attribute or input the operator's opset does not define is an error", "[onnx]") {
  // A node of `op` at `opset` on x [2, 3], with extra inputs (initializers) and attributes.
  auto node = [](int opset, const std::string& op, std::vector<std::string> inputs,
                 std::vector<Attr> attrs, int outputs = 1) {
    ModelBuilder m(opset);
    m.input("x", kFloat, {"2", "3"}).initializerInts("axes", {1}, {1});
    m.initializerInts("split", {2}, {1, 2}).initializerInts("pads", {4}, {0, 0, 0, 0});
    m.initializer("lo", {}, {0}).initializer("hi", {}, {1});
    inputs.insert(inputs.begin(), "x");
    std::vector<std::string> outs;
    for (int i = 0; i < outputs; ++i)
      outs.push_back("y" + std::to_string(i));
    m.node(op, inputs, outs, attrs, "n");
    for (const auto& o : outs)
      m.output(o);
    return m.bytes();
  };
  auto axesAttr = Attr::list("axes", {1});
  CHECK_THAT(errorOf(node(13, "ReduceSum", {}, {axesAttr})),
             Contains("node \"n\" (ReduceSum, opset 13): ReduceSum-13 takes axes as input 1, not "
                      "as an attribute"));
  CHECK_THAT(errorOf(node(15, "ReduceSum", {}, {axesAttr})),
             Contains("(ReduceSum, opset 15): ReduceSum-13 takes axes as input 1"));
  CHECK_THAT(errorOf(node(18, "ReduceMean", {}, {axesAttr})),
             Contains("ReduceMean-18 takes axes as input 1, not as an attribute"));
  CHECK_THAT(errorOf(node(13, "Squeeze", {}, {axesAttr})),
             Contains("Squeeze-13 takes axes as input 1, not as an attribute"));
  CHECK_THAT(
      errorOf(node(11, "ReduceSum", {"axes"}, {})),
      Contains("ReduceSum-11 takes axes as an attribute, not as input 1 (it takes 1 input)"));
  CHECK_THAT(errorOf(node(11, "Squeeze", {"axes"}, {})),
             Contains("Squeeze-11 takes axes as an attribute, not as input 1"));
  CHECK_THAT(errorOf(node(6, "Clip", {"lo", "hi"}, {})),
             Contains("Clip-6 takes min as an attribute, not as input 1"));
  CHECK_THAT(errorOf(node(2, "Pad", {"pads"}, {})),
             Contains("Pad-2 takes pads as an attribute, not as input 1"));
  CHECK_THAT(errorOf(node(14, "Relu", {"lo", "hi"}, {})),
             Contains("Relu-14 takes at most 1 input (X), but the node has 3"));
  CHECK_THAT(errorOf(node(14, "Relu", {}, {Attr::integer("foo", 1)})),
             Contains("Relu-14 has no attribute \"foo\" (it has none)"));
  CHECK_THAT(errorOf(node(13, "Softmax", {}, {Attr::integer("foo", 1)})),
             Contains("Softmax-13 has no attribute \"foo\" (its attributes: axis)"));
  CHECK_THAT(errorOf(node(13, "Split", {}, {Attr::integer("num_outputs", 2)}, 2)),
             Contains("Split-13 has no attribute \"num_outputs\" (its attributes: axis; Split-18 "
                      "has it)"));
  CHECK_THAT(errorOf(node(18, "Split", {"split"},
                          {Attr::integer("axis", 1), Attr::integer("num_outputs", 2)}, 2)),
             Contains("takes either input 1 (split) or the attribute num_outputs, not both"));
  // what each version defines imports: omitted optional inputs, variadic inputs, Clip-6's
  // attributes, ReduceSum-11's axes attribute, and Split-18's num_outputs
  ModelBuilder ok(13);
  ok.input("x", kFloat, {"2"})
      .node("Clip", {"x", "", ""}, {"c"})
      .node("Sum", {"x", "x", "x"}, {"s"});
  ok.output("c").output("s");
  CHECK(valuesOf(run(importOnnxBytes(ok.bytes()), {tensor({2}, {1, 2})})[1]) ==
        std::vector<double>{3, 6});
  CHECK_NOTHROW(importOnnxBytes(node(6, "Clip", {}, {Attr::real("min", 0)})));
  CHECK_NOTHROW(importOnnxBytes(node(11, "ReduceSum", {}, {axesAttr})));
  CHECK_NOTHROW(importOnnxBytes(
      node(18, "Split", {}, {Attr::integer("axis", 1), Attr::integer("num_outputs", 3)}, 3)));
}

// ---------------------------------------------------------------- error locations

TEST_CASE("errors the IR raises while lowering a node name the file and the node", "[onnx]") {
  auto located = [](const std::string& e, const std::string& prefix) {
    INFO(e);
    CHECK(e.rfind(prefix, 0) == 0);
    CHECK_THAT(e, !Contains("op \"") && !Contains("\n")); // one line, no internal op name
  };
  SECTION("Transpose perm [0, 0]") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "2"}).node("Transpose", {"x"}, {"y"}, {Attr::list("perm", {0, 0})});
    m.output("y");
    std::string e = errorOf(m.bytes());
    located(e, "m.onnx: node \"y\" (Transpose, opset 13): ");
    CHECK_THAT(e, Contains("perm [0, 0] is not a permutation of 0..1"));
  }
  SECTION("Concat rank mismatch") {
    ModelBuilder m(13);
    m.input("a", kFloat, {"2", "2"}).input("b", kFloat, {"2"});
    m.node("Concat", {"a", "b"}, {"y"}, {Attr::integer("axis", 0)}).output("y");
    located(errorOf(m.bytes()), "m.onnx: node \"y\" (Concat, opset 13): concatenate: ");
  }
  SECTION("MatMul and Gemm with mismatched K") {
    ModelBuilder mm(13), gemm(13);
    mm.input("a", kFloat, {"2", "3"}).input("b", kFloat, {"4", "2"});
    mm.node("MatMul", {"a", "b"}, {"y"}, {}, "mm").output("y");
    located(errorOf(mm.bytes()), "m.onnx: node \"mm\" (MatMul, opset 13): dot: ");
    gemm.input("a", kFloat, {"2", "3"}).input("b", kFloat, {"4", "2"});
    gemm.node("Gemm", {"a", "b"}, {"y"}).output("y");
    located(errorOf(gemm.bytes()), "m.onnx: node \"y\" (Gemm, opset 13): dot: ");
  }
  SECTION("BatchNormalization with statistics of the wrong size") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "3", "4"});
    m.initializer("s", {2}, {1, 1}).initializer("b", {2}, {0, 0});
    m.initializer("mean", {2}, {0, 0}).initializer("var", {2}, {1, 1});
    m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}).output("y");
    located(errorOf(m.bytes()), "m.onnx: node \"y\" (BatchNormalization, opset 13): ");
  }
  SECTION("a Reshape whose shape overflows int64") {
    ModelBuilder m(14);
    m.input("x", kFloat, {"2"}).initializerInts("s", {3}, {int64_t(1) << 32, int64_t(1) << 32, 2});
    m.node("Reshape", {"x", "s"}, {"y"}).output("y");
    located(errorOf(m.bytes()), "m.onnx: node \"y\" (Reshape, opset 14): ");
  }
  SECTION("a Pad whose result size overflows int64") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"3000"}).initializerInts("p", {2}, {INT64_MAX - 1023, INT64_MAX - 1023});
    m.node("Pad", {"x", "p"}, {"y"}).output("y");
    located(errorOf(m.bytes()), "m.onnx: node \"y\" (Pad, opset 13): pad: ");
  }
  SECTION("an input whose dims overflow int64") {
    ModelBuilder m(13);
    m.input("x", kFloat, {"4294967296", "4294967296"}).node("Relu", {"x"}, {"y"}).output("y");
    located(errorOf(m.bytes()), "m.onnx: graph input \"x\": ");
  }
}

// ---------------------------------------------------------------- opsets 19 to 21

TEST_CASE("opsets 19 to 21 import, and Gelu (20) lowers to the JSON gelu's graph", "[onnx]") {
  auto gelu = [](int opset, const std::string& approximate) {
    ModelBuilder m(opset);
    std::vector<Attr> attrs;
    if (!approximate.empty()) attrs.push_back(Attr::text("approximate", approximate));
    m.input("x", kFloat, {"4"}).node("Gelu", {"x"}, {"y"}, attrs).output("y");
    return m;
  };
  HostTensor x = tensor({4}, {-2, -0.5, 0, 1.5});
  // 0.5 x (1 + erf(x / sqrt 2)), and the tanh approximation, worked out in double
  std::vector<double> exact, tanhForm;
  for (double v : valuesOf(x)) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    tanhForm.push_back(0.5 * v *
                       (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  for (int opset : {20, 21}) {
    INFO("opset " << opset);
    checkClose(run(importOnnxBytes(gelu(opset, "").bytes()), {x})[0], exact, 1e-6);
    checkClose(run(importOnnxBytes(gelu(opset, "tanh").bytes()), {x})[0], tanhForm, 1e-6);
  }
  // Relu at 19 and 21: nothing of what weft lowers changed there.
  for (int opset : {19, 21}) {
    ModelBuilder m(opset);
    m.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("y");
    CHECK(valuesOf(run(importOnnxBytes(m.bytes()), {tensor({2}, {-1, 2})})[0]) ==
          std::vector<double>{0, 2});
  }
  CHECK_THAT(errorOf(gelu(18, "").bytes()), Contains("(Gelu, opset 18): Gelu is defined from opset 20"));
  CHECK_THAT(errorOf(gelu(20, "fast").bytes()),
             Contains("approximate \"fast\" is not one of none, tanh"));
  ModelBuilder past(22);
  past.input("x", kFloat, {"2"}).node("Relu", {"x"}, {"y"}).output("y");
  CHECK_THAT(errorOf(past.bytes()), Contains("imports opset 22 of the default domain; weft "
                                             "supports opsets 1 to 21"));
}

TEST_CASE("ReduceMax and ReduceMin of bools (opset 20) are any and all", "[onnx]") {
  auto reduce = [](int opset, const std::string& op) {
    ModelBuilder m(opset);
    m.input("x", kBool, {"2", "3"}).initializerInts("axes", {1}, {1});
    m.node(op, {"x", "axes"}, {"y"}, {Attr::integer("keepdims", 0)}).output("y");
    return m;
  };
  HostTensor x = tensor({2, 3}, {0, 1, 0, 1, 1, 1}, DType::boolean);
  CHECK(valuesOf(run(importOnnxBytes(reduce(20, "ReduceMax").bytes()), {x})[0]) ==
        std::vector<double>{1, 1});
  CHECK(valuesOf(run(importOnnxBytes(reduce(20, "ReduceMin").bytes()), {x})[0]) ==
        std::vector<double>{0, 1});
  CHECK_THAT(errorOf(reduce(18, "ReduceMax").bytes()),
             Contains("input is bool; ReduceMax takes numbers (bools from opset 20)"));
  CHECK_THAT(errorOf(reduce(20, "ReduceSum").bytes()), Contains("input is bool; ReduceSum takes numbers"));
}

TEST_CASE("an int64 constant past 2^53 used at run time is not supported, said at import",
          "[onnx]") {
  // Constants hold doubles: 2^53 + 1 would silently become 2^53. Values used at import time
  // (Slice's INT64_MAX ends, shapes) are exact and fine.
  const int64_t big = (int64_t(1) << 53) + 1;
  ModelBuilder add(13);
  add.input("x", kInt64, {"2"}).initializerInts("c", {2}, {big, 3});
  add.node("Add", {"x", "c"}, {"y"}).output("y");
  CHECK_THAT(errorOf(add.bytes()), Contains("element 0 (9007199254740993) of an i64 constant "
                                            "used at run time is not supported"));
  ModelBuilder out(13);
  out.input("x", kFloat, {"2"}).initializerInts("c", {1}, {-big});
  out.node("Relu", {"x"}, {"y"}).output("y").output("c");
  CHECK_THAT(errorOf(out.bytes()), Contains("graph output \"c\": element 0 (-9007199254740993)"));
  ModelBuilder exact(13);
  exact.input("x", kInt64, {"2"}).initializerInts("c", {2}, {int64_t(1) << 53, -3});
  exact.node("Add", {"x", "c"}, {"y"}).output("y");
  HostTensor x(DType::i64, {2});
  std::vector<HostTensor> y = run(importOnnxBytes(exact.bytes()), {x});
  CHECK(y[0].getInt(0) == int64_t(1) << 53);
  CHECK(y[0].getInt(1) == -3);
}

TEST_CASE("a tensor file with no element type is malformed, not unsupported", "[onnx]") {
  // An empty file parses as a TensorProto whose data_type is UNDEFINED: a broken test data set
  // or weights file, which the conformance runner must count as failed.
  try {
    parseTensorProto("", "input_0.pb");
    FAIL("expected an InputError");
  } catch (const UnsupportedError&) {
    FAIL("reported as unsupported");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains("input_0.pb") && Contains("has no element type"));
  }
}
