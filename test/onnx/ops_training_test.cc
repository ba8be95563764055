// The opset-18+ operators the ONNX 1.12 test data lacks (GroupNormalization 18 and 21, Mish,
// the bitwise operators, CenterCropPad, Col2Im) and the optimizers of the
// ai.onnx.preview.training domain (Momentum, Adam, Adagrad): each is run on the reference
// interpreter and compared with the operator's spec computed by a direct loop here; bad
// attributes and operands give a clear error.
#include <catch2/catch.hpp>

#include <cmath>
#include <fmt/format.h>
#include <functional>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

std::vector<HostTensor> runModel(ModelBuilder& m, const std::vector<HostTensor>& inputs) {
  return ir::interpret(importOnnxBytes(m.bytes()), inputs);
}

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

/// Calls f with every multi-index of `shape`, row-major.
void forEachIndex(const std::vector<int64_t>& shape,
                  const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < total; ++e) {
    f(idx);
    for (size_t i = shape.size(); i-- > 0;) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
}

std::vector<double> ramp(int64_t n, double scale = 1.0, double offset = 0.0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(std::sin(static_cast<double>(i) * 1.7 + 0.3) * scale + offset);
  return v;
}

/// GroupNormalization by the spec: x [N, C, D] normalized over each group's C / G channels
/// and D; scale and bias per group (perChannel false) or per channel.
std::vector<double> groupNormRef(const std::vector<double>& x, int64_t n, int64_t c, int64_t d,
                                 int64_t groups, double eps, const std::vector<double>& scale,
                                 const std::vector<double>& bias, bool perChannel) {
  std::vector<double> y(x.size());
  int64_t per = c / groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      double sum = 0, sq = 0;
      int64_t first = (b * c + g * per) * d, count = per * d;
      for (int64_t i = 0; i < count; ++i)
        sum += x[static_cast<size_t>(first + i)];
      double mean = sum / static_cast<double>(count);
      for (int64_t i = 0; i < count; ++i)
        sq += std::pow(x[static_cast<size_t>(first + i)] - mean, 2);
      double stddev = std::sqrt(sq / static_cast<double>(count) + eps);
      for (int64_t i = 0; i < count; ++i) {
        size_t at = static_cast<size_t>(first + i);
        size_t k = static_cast<size_t>(perChannel ? g * per + i / d : g);
        y[at] = scale[k] * (x[at] - mean) / stddev + bias[k];
      }
    }
  return y;
}

ModelBuilder groupNorm(int opset, int64_t groups, int64_t params, std::vector<Attr> attrs = {}) {
  ModelBuilder m(opset);
  attrs.push_back(Attr::integer("num_groups", groups));
  std::vector<float> scale, bias;
  for (int64_t i = 0; i < params; ++i) {
    scale.push_back(0.5f + 0.25f * static_cast<float>(i));
    bias.push_back(static_cast<float>(i) - 1.0f);
  }
  m.input("x", kFloat, {"2", "4", "3"})
      .initializer("scale", {params}, scale)
      .initializer("bias", {params}, bias)
      .node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, attrs, "gn")
      .output("y");
  return m;
}

/// Col2Im by the spec: input [N, C * prod(block), L]; block element k of block l lands on
/// l_i * stride_i - pad_begin_i + k_i * dilation_i, and what lands on one pixel adds up.
std::vector<double> col2imRef(const std::vector<double>& in, int64_t n, int64_t c,
                              const std::vector<int64_t>& image, const std::vector<int64_t>& block,
                              const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& dilations,
                              const std::vector<int64_t>& pads) {
  size_t r = image.size();
  std::vector<int64_t> blocks;
  int64_t blockElements = 1, blockCount = 1, pixels = 1;
  for (size_t i = 0; i < r; ++i) {
    int64_t padded = image[i] + pads[i] + pads[i + r];
    blocks.push_back((padded - dilations[i] * (block[i] - 1) - 1) / strides[i] + 1);
    blockElements *= block[i];
    blockCount *= blocks.back();
    pixels *= image[i];
  }
  std::vector<double> out(static_cast<size_t>(n * c * pixels), 0.0);
  std::vector<int64_t> imageStrides = stridesOf(image);
  int64_t kFlat = 0;
  forEachIndex(block, [&](const std::vector<int64_t>& k) {
    int64_t lFlat = 0;
    forEachIndex(blocks, [&](const std::vector<int64_t>& l) {
      int64_t pixel = 0;
      bool inside = true;
      for (size_t i = 0; i < r; ++i) {
        int64_t p = l[i] * strides[i] - pads[i] + k[i] * dilations[i];
        inside = inside && p >= 0 && p < image[i];
        pixel += p * imageStrides[i];
      }
      if (inside)
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < c; ++ch)
            out[static_cast<size_t>((b * c + ch) * pixels + pixel)] += in[static_cast<size_t>(
                ((b * c + ch) * blockElements + kFlat) * blockCount + lFlat)];
      ++lFlat;
    });
    ++kFlat;
  });
  return out;
}

ModelBuilder col2im(const std::vector<std::string>& dims, const std::vector<int64_t>& image,
                    const std::vector<int64_t>& block, const std::vector<Attr>& attrs,
                    int elem = kFloat) {
  ModelBuilder m(18);
  int64_t r = static_cast<int64_t>(image.size());
  m.input("x", elem, dims)
      .initializerInts("image", {r}, image)
      .initializerInts("block", {r}, block)
      .node("Col2Im", {"x", "image", "block"}, {"y"}, attrs, "c2i")
      .output("y");
  return m;
}

/// CenterCropPad by the spec on a 2-D x: sizes[k] for axes[k]; a crop starts at
/// floor((n - size) / 2), a pad puts floor((size - n) / 2) zeros before.
std::vector<double> centerCropPadRef(const std::vector<double>& x, std::vector<int64_t> shape,
                                     const std::vector<int64_t>& axes,
                                     const std::vector<int64_t>& sizes,
                                     std::vector<int64_t>* outShape) {
  std::vector<int64_t> out = shape, offset(shape.size(), 0); // out[i] = x[i + offset]
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t a = static_cast<size_t>(axes[k]);
    out[a] = sizes[k];
    offset[a] = sizes[k] < shape[a] ? (shape[a] - sizes[k]) / 2 : -((sizes[k] - shape[a]) / 2);
  }
  std::vector<double> y;
  std::vector<int64_t> xs = stridesOf(shape);
  forEachIndex(out, [&](const std::vector<int64_t>& i) {
    int64_t at = 0;
    bool inside = true;
    for (size_t a = 0; a < i.size(); ++a) {
      int64_t j = i[a] + offset[a];
      inside = inside && j >= 0 && j < shape[a];
      at += j * xs[a];
    }
    y.push_back(inside ? x[static_cast<size_t>(at)] : 0.0);
  });
  *outShape = out;
  return y;
}

constexpr const char* kTraining = "ai.onnx.preview.training";

/// Lowers one node of the ai.onnx.preview.training domain through its entry in the operator
/// table, the NodeContext the importer would give it (at that domain's opset 1), its inputs
/// parameters of the given tensors' types, and runs it on the reference interpreter.
/// (importer.cc's checkOperators admits only the default domain's nodes into a model.)
std::vector<HostTensor> runOptimizer(const std::string& op, const std::vector<Attr>& attrs,
                                     const std::vector<HostTensor>& inputs, size_t outputs) {
  std::vector<std::string> inNames, outNames;
  for (size_t i = 0; i < inputs.size(); ++i)
    inNames.push_back(fmt::format("in{}", i));
  for (size_t i = 0; i < outputs; ++i)
    outNames.push_back(fmt::format("out{}", i));
  ModelBuilder m(13);
  m.node(op, inNames, outNames, attrs, "opt", kTraining);
  const ::onnx::NodeProto& node = m.proto().graph().node(0);
  ir::Graph g;
  std::vector<Value> values(inputs.size());
  std::vector<Value*> pointers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType t = inputs[i].dtype;
    values[i].name = inNames[i];
    values[i].node =
        g.parameter(inNames[i], {t, ir::Shape(inputs[i].shape.begin(), inputs[i].shape.end())});
    values[i].graphInput = true;
    values[i].onnxType = t == DType::i64   ? kInt64
                         : t == DType::f64 ? kDouble
                         : t == DType::i32 ? kInt32
                                           : kFloat;
    pointers.push_back(&values[i]);
  }
  NodeContext ctx(g, node, 1, "m.onnx", pointers);
  ctx.checkSignature();
  operatorTable().at(fmt::format("{}.{}", kTraining, op))(ctx);
  std::vector<ir::NodeId> outs;
  for (const Value& v : ctx.outputs())
    outs.push_back(v.node);
  g.setOutputs(outs);
  return ir::interpret(g, inputs);
}

/// The InputError message of runOptimizer.
std::string optimizerError(const std::string& op, const std::vector<Attr>& attrs,
                           const std::vector<HostTensor>& inputs, size_t outputs) {
  try {
    runOptimizer(op, attrs, inputs, outputs);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

HostTensor scalar(double v, DType t = DType::f32) {
  return tensor({}, {v}, t);
}

} // namespace

TEST_CASE("GroupNormalization normalizes groups of channels, scale and bias per group in "
          "opset 18 and per channel from 21",
          "[onnx][opset18]") {
  std::vector<double> x = ramp(24, 3.0, 0.5);
  HostTensor in = tensor({2, 4, 3}, x);
  {
    ModelBuilder m = groupNorm(18, 2, 2, {Attr::real("epsilon", 0.01f)});
    checkClose(runModel(m, {in})[0],
               groupNormRef(x, 2, 4, 3, 2, 0.01f, {0.5, 0.75}, {-1, 0}, false), 1e-5);
  }
  {
    ModelBuilder m = groupNorm(21, 2, 4);
    checkClose(runModel(m, {in})[0],
               groupNormRef(x, 2, 4, 3, 2, 1e-5f, {0.5, 0.75, 1, 1.25}, {-1, 0, 1, 2}, true), 1e-5);
  }
  {
    // stash_type DOUBLE: the statistics in f64, the result back in f32; one group per channel
    ModelBuilder m = groupNorm(21, 4, 4, {Attr::integer("stash_type", 11)});
    ir::Graph g = importOnnxBytes(m.bytes());
    bool f64 = false;
    for (const auto& node : g.nodes())
      f64 = f64 || node.type.dtype == DType::f64;
    CHECK(f64);
    checkClose(ir::interpret(g, {in})[0],
               groupNormRef(x, 2, 4, 3, 4, 1e-5f, {0.5, 0.75, 1, 1.25}, {-1, 0, 1, 2}, true), 1e-5);
  }
  CHECK_THAT(errorOf(groupNorm(21, 3, 4).bytes()),
             Contains("num_groups 3 does not divide the 4 channels of X [2, 4, 3]"));
  CHECK_THAT(errorOf(groupNorm(18, 2, 4).bytes()),
             Contains("scale has shape [4] but needs [2] (one value per group in "
                      "GroupNormalization-18)"));
  CHECK_THAT(errorOf(groupNorm(21, 2, 4, {Attr::integer("stash_type", 7)}).bytes()),
             Contains("stash_type 7 is not a floating-point type"));
  CHECK_THAT(errorOf(groupNorm(17, 2, 2).bytes()),
             Contains("GroupNormalization is defined from opset 18"));
}

TEST_CASE("Mish is x * tanh(softplus(x)) without overflow or cancellation", "[onnx][opset18]") {
  std::vector<double> x = {-100, -30, -5, -1, -0.1, 0, 0.5, 3, 19, 25, 100};
  for (int elem : {kFloat, kDouble}) {
    ModelBuilder m(18);
    m.input("x", elem, {"11"}).node("Mish", {"x"}, {"y"}).output("y");
    DType t = elem == kFloat ? DType::f32 : DType::f64;
    std::vector<double> got = valuesOf(runModel(m, {tensor({11}, x, t)})[0]);
    for (size_t i = 0; i < x.size(); ++i) {
      double want = x[i] * std::tanh(std::log1p(std::exp(x[i])));
      INFO("x = " << x[i]);
      CHECK(got[i] == Approx(want)
                          .epsilon(elem == kFloat ? 1e-6 : 1e-14)
                          .margin(elem == kFloat ? 1e-30 : 1e-300));
    }
  }
  ModelBuilder old(17);
  old.input("x", kFloat, {"2"}).node("Mish", {"x"}, {"y"}).output("y");
  CHECK_THAT(errorOf(old.bytes()), Contains("Mish is defined from opset 18"));
}

TEST_CASE("BitwiseAnd, Or, Xor and Not on signed and widened unsigned integers",
          "[onnx][opset18]") {
  auto model = [](int elem, const std::vector<std::string>& bDims = {"4"}) {
    ModelBuilder m(18);
    m.input("a", elem, {"4"}).input("b", elem, bDims);
    m.node("BitwiseAnd", {"a", "b"}, {"and"})
        .node("BitwiseOr", {"a", "b"}, {"or"})
        .node("BitwiseXor", {"a", "b"}, {"xor"})
        .node("BitwiseNot", {"a"}, {"not"});
    m.output("and").output("or").output("xor").output("not");
    if (elem != kInt64) // wraps as the narrow type's only if `not` keeps that type
      m.node("Add", {"not", "not"}, {"twice"}).output("twice");
    return m;
  };
  auto ints = [](DType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
    HostTensor h(t, std::move(shape));
    for (size_t i = 0; i < v.size(); ++i)
      h.setInt(static_cast<int64_t>(i), v[i]);
    return h;
  };
  auto intsOf = [](const HostTensor& h) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < h.numElements(); ++i)
      v.push_back(h.getInt(i));
    return v;
  };
  SECTION("int64, b broadcast") {
    const int64_t b = INT64_MIN + 5;
    std::vector<int64_t> a = {-1, 12, INT64_MAX, INT64_MIN};
    ModelBuilder m = model(kInt64, {"1"});
    auto out = runModel(m, {ints(DType::i64, {4}, a), ints(DType::i64, {1}, {b})});
    std::vector<int64_t> wantAnd, wantOr, wantXor, wantNot;
    for (int64_t v : a) {
      wantAnd.push_back(v & b);
      wantOr.push_back(v | b);
      wantXor.push_back(v ^ b);
      wantNot.push_back(~v);
    }
    CHECK(intsOf(out[0]) == wantAnd);
    CHECK(intsOf(out[1]) == wantOr);
    CHECK(intsOf(out[2]) == wantXor);
    CHECK(intsOf(out[3]) == wantNot);
  }
  SECTION("uint8 held in i32 stays in 0..255") {
    ModelBuilder m = model(kUint8);
    auto out = runModel(
        m, {ints(DType::i32, {4}, {0, 200, 255, 15}), ints(DType::i32, {4}, {255, 100, 1, 240})});
    CHECK(intsOf(out[0]) == std::vector<int64_t>{0, 64, 1, 0});
    CHECK(intsOf(out[1]) == std::vector<int64_t>{255, 236, 255, 255});
    CHECK(intsOf(out[2]) == std::vector<int64_t>{255, 172, 254, 255});
    CHECK(intsOf(out[3]) == std::vector<int64_t>{255, 55, 0, 240});
    CHECK(intsOf(out[4]) == std::vector<int64_t>{254, 110, 0, 224}); // 2 * not, mod 256
  }
  SECTION("int8 and int16") {
    ModelBuilder m8 = model(kInt8);
    auto out = runModel(
        m8, {ints(DType::i8, {4}, {-128, 127, -1, 5}), ints(DType::i8, {4}, {127, -128, 3, -6})});
    CHECK(intsOf(out[2]) == std::vector<int64_t>{-1, -1, -4, -1});
    CHECK(intsOf(out[3]) == std::vector<int64_t>{127, -128, 0, -6});
    ModelBuilder m16 = model(::onnx::TensorProto::INT16);
    out = runModel(m16, {ints(DType::i32, {4}, {-32768, 32767, -1, 300}),
                         ints(DType::i32, {4}, {1, -2, 3, -300})});
    CHECK(intsOf(out[2]) == std::vector<int64_t>{-32767, -32767, -4, -8});
    CHECK(intsOf(out[3]) == std::vector<int64_t>{32767, -32768, 0, -301});
    CHECK(intsOf(out[4]) == std::vector<int64_t>{-2, 0, 0, -602}); // wraps at 16 bits
  }
  SECTION("errors") {
    ModelBuilder f(18);
    f.input("a", kFloat, {"2"}).node("BitwiseNot", {"a"}, {"y"}).output("y");
    CHECK_THAT(errorOf(f.bytes()), Contains("input 0 has dtype f32; BitwiseNot takes integer"));
    ModelBuilder mixed(18);
    mixed.input("a", kUint8, {"2"}).input("b", kInt32, {"2"});
    mixed.node("BitwiseAnd", {"a", "b"}, {"y"}).output("y");
    CHECK_THAT(errorOf(mixed.bytes()), Contains("A is UINT8 but B is INT32"));
    ModelBuilder old(17);
    old.input("a", kInt32, {"2"}).node("BitwiseNot", {"a"}, {"y"}).output("y");
    CHECK_THAT(errorOf(old.bytes()), Contains("BitwiseNot is defined from opset 18"));
  }
}

TEST_CASE("CenterCropPad crops and zero-pads each given axis around its centre",
          "[onnx][opset18]") {
  std::vector<double> x = ramp(15);
  auto model = [](const std::vector<int64_t>& sizes, std::vector<Attr> attrs = {}) {
    ModelBuilder m(18);
    m.input("x", kFloat, {"3", "5"})
        .initializerInts("shape", {static_cast<int64_t>(sizes.size())}, sizes)
        .node("CenterCropPad", {"x", "shape"}, {"y"}, attrs, "ccp")
        .output("y");
    return m;
  };
  struct Case {
    std::vector<int64_t> sizes, axes;
    bool attr;
  };
  for (const Case& k : {Case{{4, 2}, {0, 1}, false}, Case{{6, 2}, {-1, 0}, true},
                        Case{{1, 8}, {0, 1}, false}, Case{{3}, {1}, true}}) {
    std::vector<int64_t> axes;
    for (int64_t a : k.axes)
      axes.push_back(a < 0 ? a + 2 : a);
    std::vector<int64_t> shape;
    std::vector<double> want = centerCropPadRef(x, {3, 5}, axes, k.sizes, &shape);
    ModelBuilder m = k.attr ? model(k.sizes, {Attr::list("axes", k.axes)}) : model(k.sizes);
    HostTensor y = runModel(m, {tensor({3, 5}, x)})[0];
    CHECK(y.shape == shape);
    checkClose(y, want);
  }
  CHECK_THAT(errorOf(model({2}).bytes()), Contains("shape [2] has 1 sizes but there are 2 axes"));
  CHECK_THAT(errorOf(model({2, -1}).bytes()), Contains("shape [2, -1] has a negative size"));
  CHECK_THAT(errorOf(model({2, 2}, {Attr::list("axes", {1, -1})}).bytes()),
             Contains("axes [1, -1] repeat an axis"));
}

TEST_CASE("Col2Im adds each block's elements into place, with strides, dilations and pads",
          "[onnx][opset18]") {
  {
    // 2-D: image 5 x 4, blocks 2 x 2, strides [2, 1], dilations [1, 2], pads top 1 and right 1:
    // 3 x 3 blocks, overlapping along the width
    std::vector<int64_t> image = {5, 4}, block = {2, 2}, strides = {2, 1}, dilations = {1, 2},
                         pads = {1, 0, 0, 1};
    std::vector<double> x = ramp(2 * 2 * 4 * 9);
    ModelBuilder m = col2im({"2", "8", "9"}, image, block,
                            {Attr::list("strides", strides), Attr::list("dilations", dilations),
                             Attr::list("pads", pads)});
    HostTensor y = runModel(m, {tensor({2, 8, 9}, x)})[0];
    CHECK(y.shape == std::vector<int64_t>{2, 2, 5, 4});
    checkClose(y, col2imRef(x, 2, 2, image, block, strides, dilations, pads), 1e-6);
  }
  {
    // 1-D, defaults: image 7, block 3, stride 1: 5 blocks
    std::vector<double> x = ramp(15);
    ModelBuilder m = col2im({"1", "3", "5"}, {7}, {3}, {});
    checkClose(runModel(m, {tensor({1, 3, 5}, x)})[0],
               col2imRef(x, 1, 1, {7}, {3}, {1}, {1}, {0, 0}), 1e-6);
  }
  {
    // UINT8 held in i32: sums wrap at 8 bits (200 + 100 is 44)
    ModelBuilder m = col2im({"1", "2", "2"}, {3}, {2}, {}, kUint8);
    HostTensor y = runModel(m, {tensor({1, 2, 2}, {7, 100, 200, 9}, DType::i32)})[0];
    CHECK(valuesOf(y) == std::vector<double>{7, 44, 9});
  }
  CHECK_THAT(errorOf(col2im({"1", "4", "5"}, {5, 4}, {2, 2}, {}).bytes()),
             Contains("dim 2 of input [1, 4, 5] must be the block count 12 ([4, 3] blocks per "
                      "spatial axis)"));
  CHECK_THAT(errorOf(col2im({"1", "6", "12"}, {5, 4}, {2, 2}, {}).bytes()),
             Contains("dim 1 of input [1, 6, 12] is not a multiple of prod(block_shape [2, 2]) "
                      "= 4"));
  CHECK_THAT(
      errorOf(col2im({"1", "4", "12"}, {5, 4}, {2, 2}, {Attr::list("strides", {1})}).bytes()),
      Contains("strides [1] needs 2 entries for 2 spatial axes"));
  CHECK_THAT(errorOf(col2im({"1", "4", "1"}, {1, 1}, {2, 2}, {}).bytes()),
             Contains("a block of 2 (dilation 1) spans 2 elements, more than the 1 of spatial "
                      "axis 0 padded"));
}

TEST_CASE("Momentum, Adam and Adagrad of ai.onnx.preview.training update every tensor as the "
          "spec's pseudo code",
          "[onnx][training]") {
  // Two tensors: X1 [2] with a gradient broadcast from [1], X2 [2, 2].
  const double r = 0.1, alpha = 0.9, beta = 0.3, norm = 0.02;
  std::vector<double> x1 = {1.5, -2}, x2 = {0.5, 1, -1, 3}, g1 = {-0.25}, g2 = {1, -2, 0.5, 4};
  std::vector<double> s1 = {0.5, 0.25}, s2 = {2, 0, 1, 3};  // momentum / accumulated gradient
  std::vector<double> h1 = {0.1, 2}, h2 = {0.3, 0.2, 4, 1}; // accumulated squared gradient
  auto grad = [&](size_t t, size_t i) { return t == 0 ? g1[0] : g2[i]; };
  auto xs = [&](size_t t) { return t == 0 ? x1 : x2; };
  auto vs = [&](size_t t) { return t == 0 ? s1 : s2; };
  auto hs = [&](size_t t) { return t == 0 ? h1 : h2; };
  std::vector<HostTensor> common = {tensor({2}, x1),    tensor({2, 2}, x2), tensor({1}, g1),
                                    tensor({2, 2}, g2), tensor({2}, s1),    tensor({2, 2}, s2)};
  auto withScalars = [&](int64_t t, std::vector<HostTensor> rest) {
    std::vector<HostTensor> in = {scalar(r), tensor({}, {static_cast<double>(t)}, DType::i64)};
    in.insert(in.end(), rest.begin(), rest.end());
    return in;
  };
  for (std::string mode : {"standard", "nesterov"})
    for (int64_t t : {0, 3}) {
      INFO(mode << ", T = " << t);
      std::vector<Attr> attrs = {Attr::real("alpha", alpha), Attr::real("beta", beta),
                                 Attr::real("norm_coefficient", norm), Attr::text("mode", mode)};
      auto out = runOptimizer("Momentum", attrs, withScalars(t, common), 4);
      double b = t > 0 ? double(float(beta)) : 1.0;
      for (size_t k = 0; k < 2; ++k) {
        std::vector<double> xNew, vNew;
        for (size_t i = 0; i < xs(k).size(); ++i) {
          double g = double(float(norm)) * xs(k)[i] + grad(k, i);
          double v = double(float(alpha)) * vs(k)[i] + b * g;
          double step = mode == "standard" ? v : g + double(float(alpha)) * v;
          xNew.push_back(xs(k)[i] - r * step);
          vNew.push_back(v);
        }
        checkClose(out[k], xNew, 1e-6);
        checkClose(out[2 + k], vNew, 1e-6);
      }
    }
  for (int64_t t : {0, 2}) {
    INFO("Adam, T = " << t);
    const double post = 0.25, eps = 0.125;
    std::vector<Attr> attrs = {
        Attr::real("alpha", alpha), Attr::real("beta", beta), Attr::real("norm_coefficient", norm),
        Attr::real("norm_coefficient_post", post), Attr::real("epsilon", eps)};
    std::vector<HostTensor> in = common;
    in.push_back(tensor({2}, h1));
    in.push_back(tensor({2, 2}, h2));
    auto out = runOptimizer("Adam", attrs, withScalars(t, in), 6);
    double a = double(float(alpha)), bt = double(float(beta)), n = double(float(norm));
    double rate = t > 0 ? r * std::sqrt(1 - std::pow(bt, t)) / (1 - std::pow(a, t)) : r;
    for (size_t k = 0; k < 2; ++k) {
      std::vector<double> xNew, vNew, hNew;
      for (size_t i = 0; i < xs(k).size(); ++i) {
        double g = n * xs(k)[i] + grad(k, i);
        double v = a * vs(k)[i] + (1 - a) * g;
        double h = bt * hs(k)[i] + (1 - bt) * g * g;
        xNew.push_back((1 - post) * (xs(k)[i] - rate * v / (std::sqrt(h) + eps)));
        vNew.push_back(v);
        hNew.push_back(h);
      }
      checkClose(out[k], xNew, 1e-6);
      checkClose(out[2 + k], vNew, 1e-6);
      checkClose(out[4 + k], hNew, 1e-6);
    }
  }
  {
    // Adagrad: the accumulated squared gradients are inputs 6 and 7 here
    const double decay = 0.5, eps = 0.0625;
    std::vector<Attr> attrs = {Attr::real("decay_factor", decay), Attr::real("epsilon", eps),
                               Attr::real("norm_coefficient", norm)};
    std::vector<HostTensor> in(common.begin(), common.begin() + 4);
    in.push_back(tensor({2}, h1));
    in.push_back(tensor({2, 2}, h2));
    auto out = runOptimizer("Adagrad", attrs, withScalars(3, in), 4);
    double rate = r / (1 + 3 * decay);
    for (size_t k = 0; k < 2; ++k) {
      std::vector<double> xNew, hNew;
      for (size_t i = 0; i < xs(k).size(); ++i) {
        double g = double(float(norm)) * xs(k)[i] + grad(k, i);
        double h = hs(k)[i] + g * g;
        xNew.push_back(xs(k)[i] - rate * g / (std::sqrt(h) + eps));
        hNew.push_back(h);
      }
      checkClose(out[k], xNew, 1e-6);
      checkClose(out[2 + k], hNew, 1e-6);
    }
  }
  std::vector<HostTensor> one = {scalar(r), tensor({}, {0}, DType::i64), tensor({2}, x1),
                                 tensor({2}, {1, 2}), tensor({2}, s1)};
  std::vector<Attr> momentum = {Attr::real("alpha", alpha), Attr::real("beta", beta),
                                Attr::real("norm_coefficient", norm)};
  CHECK_THAT(optimizerError("Momentum", momentum, one, 2),
             Contains("the required attribute \"mode\" (STRING) is missing"));
  momentum.push_back(Attr::text("mode", "heavy"));
  CHECK_THAT(optimizerError("Momentum", momentum, one, 2),
             Contains("mode \"heavy\" is not one of standard, nesterov"));
  std::vector<HostTensor> four = one;
  four.push_back(tensor({2}, h1));
  CHECK_THAT(optimizerError("Adagrad", {}, four, 2),
             Contains("has 6 inputs; Adagrad takes R, T and then, for each optimized tensor, "
                      "its value, gradient, accumulated squared gradient"));
  std::vector<HostTensor> badT = one;
  badT[1] = tensor({}, {0}, DType::i32);
  CHECK_THAT(optimizerError("Adagrad", {}, badT, 2), Contains("T is INT32; it must be an int64"));
  std::vector<HostTensor> badV = one;
  badV[4] = tensor({1}, {0.5});
  CHECK_THAT(optimizerError("Adagrad", {}, badV, 2),
             Contains("the accumulated squared gradient of X_1 has shape [1], which is not "
                      "X_1's [2]"));
  std::vector<HostTensor> badR = one;
  badR[0] = tensor({2}, {0.1, 0.2});
  CHECK_THAT(optimizerError("Adagrad", {}, badR, 2), Contains("R has shape [2]; it must be a "
                                                              "scalar"));
}
