// Conv and ConvTranspose: small cases worked out by hand, then every attribute (groups,
// strides, dilations, explicit and auto pads, output_padding, output_shape, bias) over 1-D to
// 3-D against a direct loop over the ONNX definition, the float dtypes, a symbolic batch dim,
// and the errors a bad node gives, on the reference interpreter.
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

std::vector<std::string> dimsOf(const std::vector<int64_t>& shape) {
  std::vector<std::string> d;
  for (int64_t s : shape)
    d.push_back(std::to_string(s));
  return d;
}

/// A Conv or ConvTranspose case: X, W (and B [M] when `bias`) are graph inputs.
struct ConvCase {
  std::string op;
  std::vector<int64_t> x, w;
  std::vector<Attr> attrs = {};
  bool bias = false;
  // What the reference loop needs, worked out by hand from the attributes:
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {},
                       padLow = {}; // per spatial axis (padLow < 0 too)
  std::vector<int64_t> out = {};    // the output's spatial sizes
};

int64_t count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Row-major multi-index of flat index i in shape s.
std::vector<int64_t> unflatten(int64_t i, const std::vector<int64_t>& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t a = s.size(); a-- > 0;) {
    idx[a] = i % s[a];
    i /= s[a];
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& s) {
  int64_t f = 0;
  for (size_t a = 0; a < s.size(); ++a)
    f = f * s[a] + idx[a];
  return f;
}

/// The ONNX definitions as loops. Conv gathers: y[n, m, o] = B[m] + sum over the group's input
/// channels c and taps k of x[n, c, o*stride + k*dilation - pad] * W[m, c, k]. ConvTranspose
/// scatters: x[n, c, i] * W[c, m, k] adds to y[n, m, i*stride + k*dilation - pad].
std::vector<double> reference(const ConvCase& t, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>& b) {
  bool transposed = t.op == "ConvTranspose";
  size_t n = t.x.size() - 2;
  int64_t batch = t.x[0], channels = t.x[1];
  int64_t outChannels = transposed ? t.w[1] * t.group : t.w[0];
  int64_t inPerGroup = channels / t.group, outPerGroup = outChannels / t.group;
  std::vector<int64_t> yShape{batch, outChannels}, kernel(t.w.begin() + 2, t.w.end()),
      spatial(t.x.begin() + 2, t.x.end());
  yShape.insert(yShape.end(), t.out.begin(), t.out.end());
  std::vector<double> y(static_cast<size_t>(count(yShape)), 0.0);
  for (int64_t i = 0; i < count(yShape); ++i)
    y[static_cast<size_t>(i)] = b.empty() ? 0.0 : b[static_cast<size_t>(unflatten(i, yShape)[1])];
  // Every (batch, group, in channel, out channel, input position, tap) pairing once.
  for (int64_t nn = 0; nn < batch; ++nn)
    for (int64_t g = 0; g < t.group; ++g)
      for (int64_t ci = 0; ci < inPerGroup; ++ci)
        for (int64_t mi = 0; mi < outPerGroup; ++mi)
          for (int64_t k = 0; k < count(kernel); ++k) {
            std::vector<int64_t> kk = unflatten(k, kernel);
            int64_t c = g * inPerGroup + ci, m = g * outPerGroup + mi;
            std::vector<int64_t> wIdx{transposed ? c : m, transposed ? mi : ci};
            wIdx.insert(wIdx.end(), kk.begin(), kk.end());
            double wv = w[static_cast<size_t>(flatten(wIdx, t.w))];
            const std::vector<int64_t>& walk = transposed ? spatial : t.out;
            for (int64_t p = 0; p < count(walk); ++p) {
              std::vector<int64_t> pos = unflatten(p, walk), other(n);
              bool inside = true;
              for (size_t a = 0; a < n; ++a) {
                // Conv: pos is the output, other the input; ConvTranspose the other way.
                other[a] = pos[a] * t.strides[a] + kk[a] * t.dilations[a] - t.padLow[a];
                inside &= other[a] >= 0 && other[a] < (transposed ? t.out[a] : spatial[a]);
              }
              if (!inside) continue;
              const std::vector<int64_t>& xPos = transposed ? pos : other;
              const std::vector<int64_t>& yPos = transposed ? other : pos;
              std::vector<int64_t> xIdx{nn, c}, yIdx{nn, m};
              xIdx.insert(xIdx.end(), xPos.begin(), xPos.end());
              yIdx.insert(yIdx.end(), yPos.begin(), yPos.end());
              y[static_cast<size_t>(flatten(yIdx, yShape))] +=
                  x[static_cast<size_t>(flatten(xIdx, t.x))] * wv;
            }
          }
  return y;
}

std::vector<double> wave(int64_t n, double phase) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(std::sin(static_cast<double>(i) * 0.77 + phase));
  return v;
}

/// The case's model with element type `elem`; X's batch dim named `batch` when not empty.
std::string model(const ConvCase& t, int elem = kFloat, const std::string& batch = "",
                  int opset = 11) {
  ModelBuilder m(opset);
  std::vector<std::string> xDims = dimsOf(t.x);
  if (!batch.empty()) xDims[0] = batch;
  int64_t outChannels = t.op == "ConvTranspose" ? t.w[1] * t.group : t.w[0];
  m.input("x", elem, xDims).input("w", elem, dimsOf(t.w));
  if (t.bias) m.input("b", elem, {std::to_string(outChannels)});
  m.node(t.op,
         t.bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"},
         {"y"}, t.attrs, "conv")
      .output("y");
  return m.bytes();
}

/// Runs the case on the interpreter in dtype `dt` and checks it against the reference loop
/// over the same (rounded) inputs.
void checkCase(const ConvCase& t, DType dt = DType::f32, int elem = kFloat, double tol = 1e-5,
               const std::string& batch = "") {
  int64_t outChannels = t.op == "ConvTranspose" ? t.w[1] * t.group : t.w[0];
  std::vector<HostTensor> in{tensor(t.x, wave(count(t.x), 0.3), dt),
                             tensor(t.w, wave(count(t.w), 1.1), dt)};
  if (t.bias) in.push_back(tensor({outChannels}, wave(outChannels, 2.0), dt));
  ir::Graph g = importOnnxBytes(model(t, elem, batch));
  ir::Binding binding;
  if (!batch.empty()) binding[batch] = t.x[0];
  std::vector<HostTensor> y = ir::interpret(g, in, binding);
  REQUIRE(y.size() == 1);
  std::vector<int64_t> yShape{t.x[0], outChannels};
  yShape.insert(yShape.end(), t.out.begin(), t.out.end());
  CHECK(y[0].dtype == dt);
  CHECK(y[0].shape == yShape);
  std::vector<double> want = reference(t, valuesOf(in[0]), valuesOf(in[1]),
                                       t.bias ? valuesOf(in[2]) : std::vector<double>{});
  checkClose(y[0], want, tol);
}

Attr ints(const std::string& name, std::vector<int64_t> v) {
  return Attr::list(name, std::move(v));
}

// 1-D: groups, stride, dilation, asymmetric pads, bias: padded 7 + 2 + 1 = 10, extent 5,
// out (10 - 5) / 2 + 1 = 3.
const ConvCase kConv1d{
    "Conv",
    {2, 4, 7},
    {6, 2, 3},
    {ints("strides", {2}), ints("dilations", {2}), ints("pads", {2, 1}), Attr::integer("group", 2)},
    true,
    2,
    {2},
    {2},
    {2},
    {3}};

} // namespace

TEST_CASE("Conv and ConvTranspose of a small 1-D input, worked out by hand", "[onnx][conv]") {
  HostTensor x = tensor({1, 1, 3}, {1, 2, 3});
  HostTensor w = tensor({1, 1, 2}, {1, 10});
  HostTensor b = tensor({1}, {0.5});
  SECTION("Conv, pads [1, 0]: [0 1 2 3] under the kernel [1 10], plus 0.5") {
    ConvCase t{"Conv", {1, 1, 3}, {1, 1, 2}, {ints("pads", {1, 0})}, true};
    checkClose(ir::interpret(importOnnxBytes(model(t)), {x, w, b})[0], {10.5, 21.5, 32.5});
  }
  SECTION("ConvTranspose, stride 2: each input element spreads the kernel over its 2 outputs") {
    ConvCase t{"ConvTranspose", {1, 1, 3}, {1, 1, 2}, {ints("strides", {2})}};
    checkClose(ir::interpret(importOnnxBytes(model(t)), {x, w})[0], {1, 10, 2, 20, 3, 30});
  }
  SECTION("ConvTranspose, dilation 2 and stride 1: overlapping taps add up") {
    // y[i + 2k] += x[i] w[k]: y = [1, 2, 3 + 10, 20, 30]
    ConvCase t{"ConvTranspose", {1, 1, 3}, {1, 1, 2}, {ints("dilations", {2})}};
    checkClose(ir::interpret(importOnnxBytes(model(t)), {x, w})[0], {1, 2, 13, 20, 30});
  }
}

TEST_CASE("Conv: groups, strides, dilations, pads and auto_pad over 1-D to 3-D", "[onnx][conv]") {
  checkCase(kConv1d);
  // auto_pad SAME_*: out = ceil(5 / 2) = 3 and ceil(4 / 1) = 4; padding 2*2 + 2 - 5 = 1 and
  // 3 + 3 - 4 = 2; the odd one at the start for SAME_LOWER, at the end for SAME_UPPER.
  checkCase({"Conv",
             {1, 2, 5, 4},
             {3, 2, 2, 3},
             {Attr::text("auto_pad", "SAME_LOWER"), ints("strides", {2, 1})},
             true,
             1,
             {2, 1},
             {1, 1},
             {1, 1},
             {3, 4}});
  checkCase({"Conv",
             {1, 2, 5, 4},
             {3, 2, 2, 3},
             {Attr::text("auto_pad", "SAME_UPPER"), ints("strides", {2, 1}),
              ints("kernel_shape", {2, 3})},
             false,
             1,
             {2, 1},
             {1, 1},
             {0, 1},
             {3, 4}});
  // depthwise (group = C), VALID with a dilation: out 6 - 3 + 1 = 4 and 6 - 2 + 1 = 5
  checkCase(
      {"Conv",
       {1, 3, 6, 6},
       {3, 1, 2, 2},
       {Attr::text("auto_pad", "VALID"), ints("dilations", {2, 1}), Attr::integer("group", 3)},
       false,
       3,
       {1, 1},
       {2, 1},
       {0, 0},
       {4, 5}});
  // 3-D, pads [1, 0, 1 | 0, 1, 0], strides [1, 2, 1]: out 3, (4 + 1 - 2) / 2 + 1 = 2, 3
  checkCase({"Conv",
             {1, 2, 3, 4, 3},
             {2, 2, 2, 2, 2},
             {ints("pads", {1, 0, 1, 0, 1, 0}), ints("strides", {1, 2, 1})},
             true,
             1,
             {1, 2, 1},
             {1, 1, 1},
             {1, 0, 1},
             {3, 2, 3}});
  // opset 1 reads the same attributes
  ConvCase v1 = kConv1d;
  HostTensor x = tensor(v1.x, wave(count(v1.x), 0.3)), w = tensor(v1.w, wave(count(v1.w), 1.1)),
             b = tensor({6}, wave(6, 2.0));
  checkClose(ir::interpret(importOnnxBytes(model(v1, kFloat, "", 1)), {x, w, b})[0],
             reference(v1, valuesOf(x), valuesOf(w), valuesOf(b)), 1e-5);
}

TEST_CASE("ConvTranspose: groups, strides, dilations, pads, output_padding, output_shape and "
          "auto_pad",
          "[onnx][conv]") {
  // 1-D, group 2 (W [4, 3, 3]: M = 6), extent 5: full 2*2 + 1 + 5 = 10, out 10 - 1 - 2 = 7
  checkCase({"ConvTranspose",
             {1, 4, 3},
             {4, 3, 3},
             {ints("strides", {2}), ints("dilations", {2}), ints("pads", {1, 2}),
              ints("output_padding", {1}), Attr::integer("group", 2)},
             true,
             2,
             {2},
             {2},
             {1},
             {7}});
  // output_shape past the full output (4 x 4): total padding -2 and -1, split with floor
  // division as the spec's formulas (begin = total - total // 2): pads begin -1 and 0, end -1
  // and -1 (negative pads add zeros around the full output)
  checkCase({"ConvTranspose",
             {1, 1, 2, 2},
             {1, 2, 2, 2},
             {ints("strides", {2, 2}), ints("output_shape", {6, 5})},
             false,
             1,
             {2, 2},
             {1, 1},
             {-1, 0},
             {6, 5}});
  // output_shape below the full output 7 x 6 crops it; given pads are ignored
  checkCase({"ConvTranspose",
             {1, 2, 3, 2},
             {2, 1, 3, 3},
             {ints("strides", {2, 3}), ints("output_shape", {5, 6}), ints("pads", {9, 9, 9, 9})},
             false,
             1,
             {2, 3},
             {1, 1},
             {1, 0},
             {5, 6}});
  // output_shape may also be the whole shape [N, M, D...]
  checkCase({"ConvTranspose",
             {1, 2, 3, 2},
             {2, 1, 3, 3},
             {ints("strides", {2, 3}), ints("output_shape", {1, 1, 5, 6})},
             false,
             1,
             {2, 3},
             {1, 1},
             {1, 0},
             {5, 6}});
  // SAME_LOWER and SAME_UPPER: out = D * stride (6 and 6) from full 7 and 6
  checkCase({"ConvTranspose",
             {1, 2, 3, 2},
             {2, 1, 3, 3},
             {Attr::text("auto_pad", "SAME_LOWER"), ints("strides", {2, 3})},
             true,
             1,
             {2, 3},
             {1, 1},
             {1, 0},
             {6, 6}});
  checkCase({"ConvTranspose",
             {1, 2, 3, 2},
             {2, 1, 3, 3},
             {Attr::text("auto_pad", "SAME_UPPER"), ints("strides", {2, 3})},
             false,
             1,
             {2, 3},
             {1, 1},
             {0, 0},
             {6, 6}});
  // 3-D, pads [0, 1, 0 | 1, 0, 0], dilations [1, 2, 1], strides [1, 1, 2], group 2:
  // extents 2, 3, 2; full 3, 4, 4; out 2, 3, 4
  checkCase({"ConvTranspose",
             {1, 2, 2, 2, 2},
             {2, 1, 2, 2, 2},
             {ints("pads", {0, 1, 0, 1, 0, 0}), ints("dilations", {1, 2, 1}),
              ints("strides", {1, 1, 2}), Attr::integer("group", 2)},
             true,
             2,
             {1, 1, 2},
             {1, 2, 1},
             {0, 1, 0},
             {2, 3, 4}});
}

TEST_CASE("Conv keeps f64, f16 and bf16, and the batch dim may be symbolic", "[onnx][conv]") {
  checkCase(kConv1d, DType::f64, kDouble, 1e-12);
  checkCase(kConv1d, DType::f16, kHalf, 2e-2);
  checkCase(kConv1d, DType::bf16, kBfloat16, 1e-1);
  ir::Graph g = importOnnxBytes(model(kConv1d, kFloat, "N"));
  CHECK(g.node(g.outputs()[0]).type.str() == "f32[N, 6, 3]");
  checkCase(kConv1d, DType::f32, kFloat, 1e-5, "N");
  ConvCase t{
      "ConvTranspose", {2, 1, 3}, {1, 1, 2}, {ints("strides", {2})}, false, 1, {2}, {1}, {0}, {6}};
  checkCase(t, DType::f32, kFloat, 1e-5, "N");
}

TEST_CASE("Conv and ConvTranspose of size-0 batches and channels", "[onnx][conv]") {
  checkCase(
      {"Conv", {0, 4, 7}, {6, 2, 3}, {Attr::integer("group", 2)}, true, 2, {1}, {1}, {0}, {5}});
  checkCase({"Conv", {2, 0, 7}, {6, 0, 3}, {}, true, 1, {1}, {1}, {0}, {5}});
  checkCase({"ConvTranspose", {2, 3, 2}, {3, 0, 3}, {}, false, 1, {1}, {1}, {0}, {4}});
}

TEST_CASE("Conv and ConvTranspose refuse bad nodes with one clear line", "[onnx][conv]") {
  auto conv = [](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<Attr> attrs,
                 const std::string& op = "Conv") {
    return errorOf(model({op, std::move(x), std::move(w), std::move(attrs)}));
  };
  CHECK_THAT(conv({1, 4, 5}, {6, 2, 3}, {Attr::integer("group", 3)}),
             Contains("X's 4 channels do not divide into group 3"));
  CHECK_THAT(conv({1, 4, 5}, {6, 3, 3}, {}),
             Contains("W [6, 3, 3] has 3 input channels per group"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3}, {ints("kernel_shape", {2})}),
             Contains("kernel_shape [2] differs from W's kernel [3]"));
  CHECK_THAT(
      conv({1, 4, 5}, {6, 4, 3}, {Attr::text("auto_pad", "SAME_UPPER"), ints("pads", {1, 1})}),
      Contains("pads [1, 1] cannot be used with auto_pad SAME_UPPER"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3}, {Attr::text("auto_pad", "SAME")}),
             Contains("auto_pad \"SAME\" is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3}, {ints("strides", {0})}),
             Contains("strides [0] has a value below 1"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3}, {ints("pads", {1, -1})}),
             Contains("pads [1, -1] has a value below 0"));
  CHECK_THAT(conv({1, 4, 2}, {6, 4, 3}, {}),
             Contains("on spatial axis 0 the kernel spans 3 elements (kernel 3, dilation 1) but "
                      "the padded input has 2"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3, 3}, {}), Contains("W [6, 4, 3, 3] must have X's rank 3"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 0}, {}), Contains("W [6, 4, 0] has an empty kernel"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3}, {ints("dilations", {int64_t(1) << 62})}),
             Contains("the sizes on spatial axis 0 overflow int64"));
  CHECK_THAT(conv({1, 4, 5}, {4, 2, 3}, {ints("strides", {2}), ints("output_padding", {2})},
                  "ConvTranspose"),
             Contains("output_padding 2 must be less than the stride 2 or the dilation 1"));
  CHECK_THAT(conv({1, 4, 5}, {4, 2, 3}, {ints("output_shape", {1, 4, 9})}, "ConvTranspose"),
             Contains("output_shape [1, 4, 9] gives a whole shape, but it does not start with "
                      "the output's N 1 and M 2"));
  CHECK_THAT(conv({1, 4, 5}, {4, 2, 3}, {ints("output_shape", {7, 7})}, "ConvTranspose"),
             Contains("output_shape [7, 7] has 2 values, not 1 (the input has 1 spatial axes)"));
  CHECK_THAT(conv({1, 4, 5}, {6, 4, 3}, {ints("pads", {1, 1, 1})}),
             Contains("pads [1, 1, 1] has 3 values, not 2 (the input has 1 spatial axes)"));
  CHECK_THAT(conv({1, 4, 5}, {3, 2, 3}, {}, "ConvTranspose"),
             Contains("W [3, 2, 3] must have X's 4 channels as dim 0"));
  {
    ModelBuilder m(11);
    m.input("x", kInt64, {"1", "1", "3"})
        .input("w", kInt64, {"1", "1", "1"})
        .node("Conv", {"x", "w"}, {"y"})
        .output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("X has dtype i64; Conv takes floating-point tensors"));
  }
  {
    ModelBuilder m(11);
    m.input("x", kFloat, {"1", "C", "3"})
        .input("w", kFloat, {"1", "1", "1"})
        .node("Conv", {"x", "w"}, {"y"})
        .output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("X [1, C, 3] has the symbolic dim C (axis 1)"));
  }
  {
    ModelBuilder m(11);
    m.input("x", kFloat, {"1", "1", "3"})
        .initializer("w", {1, 1, 1}, {1})
        .initializer("b", {2}, {1, 2})
        .node("Conv", {"x", "w", "b"}, {"y"})
        .output("y");
    CHECK_THAT(errorOf(m.bytes()), Contains("B [2] must be [1], one value per output channel"));
  }
}
