// GridSample (16, 20), AffineGrid (20) and RoiAlign (10, 16): interpolation modes, padding
// modes, align_corners, N-D grids, adaptive sampling, symbolic batch dims and the errors a bad
// node gives, checked on the reference interpreter against values worked out by hand.
#include <catch2/catch.hpp>

#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

/// GridSample of x (`elem`, dims `xd`) at grid (float, dims `gd`).
std::string gridSampleModel(int opset, const std::vector<std::string>& xd,
                            const std::vector<std::string>& gd, const std::vector<Attr>& attrs,
                            int elem = kFloat) {
  ModelBuilder m(opset);
  m.input("x", elem, xd)
      .input("grid", kFloat, gd)
      .node("GridSample", {"x", "grid"}, {"y"}, attrs, "gs");
  m.output("y");
  return m.bytes();
}

std::string typeOf(const ir::Graph& g) {
  return g.node(g.outputs()[0]).type.str();
}

/// RoiAlign on x [2, 1, 4, 4] with rois (an initializer when `rois` is given, else an input)
/// and batch indices as inputs.
std::string roiAlignModel(int opset, const std::vector<Attr>& attrs,
                          const std::vector<float>& rois = {}) {
  ModelBuilder m(opset);
  m.input("x", kFloat, {"2", "1", "4", "4"});
  if (rois.empty())
    m.input("rois", kFloat, {"R", "4"});
  else
    m.initializer("rois", {static_cast<int64_t>(rois.size() / 4), 4}, rois);
  std::string count = rois.empty() ? "R" : std::to_string(rois.size() / 4);
  m.input("b", kInt64, {count}).node("RoiAlign", {"x", "rois", "b"}, {"y"}, attrs, "roi");
  m.output("y");
  return m.bytes();
}

/// Image 0 holds -(4h + w), image 1 100 + 4h + w: bilinear samples of a linear function are
/// exact, so an average of symmetric samples is the function at their center.
HostTensor rampImages() {
  std::vector<double> v;
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 16; ++i)
      v.push_back(n == 0 ? -i : 100 + i);
  return tensor({2, 1, 4, 4}, v);
}

} // namespace

TEST_CASE("GridSample-16 bilinear interpolates, and padding_mode treats positions outside",
          "[onnx][sample]") {
  // x = [[1, 2, 3], [4, 5, 6]]; with align_corners the grid (gx, gy) is the position
  // (gx + 1, (gy + 1) / 2): (1, 0.5), (0.5, 0), (2.5, 1), (-1, 0.5), (-2.5, 0.5)
  HostTensor x = tensor({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor grid = tensor({1, 1, 5, 2}, {0, 0, -0.5, -1, 1.5, 1, -2, 0, -3.5, 0});
  auto sample = [&](const std::string& padding) {
    ir::Graph g = importOnnxBytes(
        gridSampleModel(16, {"1", "1", "2", "3"}, {"1", "1", "5", "2"},
                        {Attr::integer("align_corners", 1), Attr::text("padding_mode", padding)}));
    CHECK(typeOf(g) == "f32[1, 1, 1, 5]");
    return ir::interpret(g, {x, grid})[0];
  };
  // 2.5 reads half of 6 and half of the zero past it; -1 reads the zero before the first
  // element (weight 1) and it (weight 0)
  checkClose(sample("zeros"), {3.5, 1.5, 3, 0, 0});
  // clamped to 2, 0 and 0
  checkClose(sample("border"), {3.5, 1.5, 6, 2.5, 2.5});
  // reflected to 1.5, 1 and, folding twice (at 0, then at 2), 1.5
  checkClose(sample("reflection"), {3.5, 1.5, 5.5, 3.5, 4});
  // without align_corners -1 is the outer edge: (-1, -1) is (-0.5, -0.5), a quarter of x[0, 0]
  ir::Graph g =
      importOnnxBytes(gridSampleModel(16, {"1", "1", "2", "3"}, {"1", "1", "2", "2"}, {}));
  checkClose(ir::interpret(g, {x, tensor({1, 1, 2, 2}, {0, 0, -1, -1})})[0], {3.5, 0.25});
}

TEST_CASE("GridSample nearest rounds halves to even, copies integers exactly and takes symbolic "
          "N and C",
          "[onnx][sample]") {
  ir::Graph g = importOnnxBytes(
      gridSampleModel(16, {"N", "C", "1", "5"}, {"N", "1", "6", "2"},
                      {Attr::text("mode", "nearest"), Attr::integer("align_corners", 1)}, kInt32));
  CHECK(typeOf(g) == "i32[N, C, 1, 6]");
  // x positions 2 (gx + 1): 0.5, 1.5, 2.5, 3.5, 0, 2.2 -> 0, 2, 2, 4, 0, 2
  HostTensor grid = tensor({1, 1, 6, 2}, {-0.75, 0, -0.25, 0, 0.25, 0, 0.75, 0, -1, 0, 0.1, 0});
  HostTensor x = tensor({1, 2, 1, 5}, {10, 20, 30, 40, 50, -1, -2, -3, -4, -5}, DType::i32);
  auto out = ir::interpret(g, {x, grid}, {{"N", 1}, {"C", 2}});
  CHECK(valuesOf(out[0]) == std::vector<double>{10, 30, 30, 50, 10, 30, -1, -3, -3, -5, -1, -3});
}

TEST_CASE("GridSample-20 samples N-D inputs: 1-D cubic and 3-D trilinear", "[onnx][sample]") {
  SECTION("cubic at 1.5 weighs the four elements around it by Keys' kernel (a = -0.75)") {
    ir::Graph g = importOnnxBytes(
        gridSampleModel(20, {"1", "1", "4"}, {"1", "2", "1"},
                        {Attr::text("mode", "cubic"), Attr::text("padding_mode", "border"),
                         Attr::integer("align_corners", 1)}));
    CHECK(typeOf(g) == "f32[1, 1, 2]");
    // at 1.5: -0.09375, 0.59375, 0.59375, -0.09375 on [0, 1, 8, 27]; at 3 (the last element,
    // the taps past it clamped with weight 0) the element itself
    checkClose(ir::interpret(g, {tensor({1, 1, 4}, {0, 1, 8, 27}), tensor({1, 2, 1}, {0, 1})})[0],
               {2.8125, 27}, 1e-5);
  }
  SECTION("linear (the default) over three axes, the grid listing x (the last axis) first") {
    ir::Graph g =
        importOnnxBytes(gridSampleModel(20, {"1", "1", "2", "2", "2"}, {"1", "1", "1", "2", "3"},
                                        {Attr::integer("align_corners", 1)}));
    CHECK(typeOf(g) == "f32[1, 1, 1, 1, 2]");
    // x[d, h, w] = 4d + 2h + w is linear: (x, y, z) = (0.5, 0.75, 0.25) and (1, 0, 1)
    HostTensor x = tensor({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
    HostTensor grid = tensor({1, 1, 1, 2, 3}, {0, 0.5, -0.5, 1, -1, 1});
    checkClose(ir::interpret(g, {x, grid})[0], {3, 5}, 1e-6);
  }
}

TEST_CASE("AffineGrid: theta times each output position's normalized coordinates",
          "[onnx][sample]") {
  SECTION("2-D without align_corners: element centers of the [-1, 1] span") {
    ModelBuilder m(20);
    m.input("theta", kFloat, {"N", "2", "3"})
        .initializerInts("size", {4}, {1, 1, 2, 3})
        .node("AffineGrid", {"theta", "size"}, {"grid"}, {}, "ag");
    m.output("grid");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(typeOf(g) == "f32[N, 2, 3, 2]");
    // x in {-2/3, 0, 2/3}, y in {-0.5, 0.5}; theta maps them to (x + 0.5, 2y)
    auto out = ir::interpret(g, {tensor({1, 2, 3}, {1, 0, 0.5, 0, 2, 0})}, {{"N", 1}});
    checkClose(out[0], {-1.0 / 6, -1, 0.5, -1, 7.0 / 6, -1, -1.0 / 6, 1, 0.5, 1, 7.0 / 6, 1}, 1e-6);
  }
  SECTION("3-D with align_corners: the end elements' centers, a single element at -1") {
    ModelBuilder m(20);
    m.input("theta", kFloat, {"2", "3", "4"})
        .initializerInts("size", {5}, {2, 1, 2, 1, 2})
        .node("AffineGrid", {"theta", "size"}, {"grid"}, {Attr::integer("align_corners", 1)}, "ag");
    m.output("grid");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(typeOf(g) == "f32[2, 2, 1, 2, 3]");
    // batch 0 the identity: (x, y, z); batch 1 (z + 0.5, 0, x)
    HostTensor theta = tensor({2, 3, 4}, {1, 0, 0, 0,   0, 1, 0, 0, 0, 0, 1, 0, //
                                          0, 0, 1, 0.5, 0, 0, 0, 0, 1, 0, 0, 0});
    checkClose(ir::interpret(g, {theta})[0],
               {-1,   -1, -1, 1,    -1, -1, -1,  -1, 1,  1,   -1, 1, //
                -0.5, 0,  -1, -0.5, 0,  1,  1.5, 0,  -1, 1.5, 0,  1});
  }
}

TEST_CASE("RoiAlign averages bilinear samples of each roi's image, or takes the largest "
          "weighted corner",
          "[onnx][sample]") {
  HostTensor x = rampImages();
  SECTION("output_half_pixel (RoiAlign-10): samples 0.75 and 2.25 of [0, 3]; a roi outside "
          "the image is 0") {
    ir::Graph g = importOnnxBytes(roiAlignModel(10, {Attr::integer("sampling_ratio", 2)}));
    CHECK(typeOf(g) == "f32[R, 1, 1, 1]");
    HostTensor rois = tensor({2, 4}, {0, 0, 3, 3, 10, 10, 12, 12});
    auto out = ir::interpret(g, {x, rois, tensor({2}, {1, 0}, DType::i64)}, {{"R", 2}});
    checkClose(out[0], {107.5, 0}, 1e-4); // image 1 at (1.5, 1.5)
  }
  SECTION("half_pixel (RoiAlign-16's default) shifts the roi by half a pixel, scaled first") {
    ir::Graph g = importOnnxBytes(
        roiAlignModel(16, {Attr::integer("sampling_ratio", 2), Attr::real("spatial_scale", 0.5f)}));
    HostTensor rois = tensor({1, 4}, {0, 0, 6, 6}); // [-0.5, 2.5]: samples 0.25 and 1.75
    checkClose(ir::interpret(g, {x, rois, tensor({1}, {1}, DType::i64)}, {{"R", 1}})[0], {105},
               1e-4);
  }
  SECTION("max: a sample on an element is that element times 1, its other corners 0 times "
          "theirs, so a negative image gives 0 (ONNX's reference and ONNX Runtime)") {
    ir::Graph g = importOnnxBytes(
        roiAlignModel(16, {Attr::text("mode", "max"), Attr::integer("sampling_ratio", 1),
                           Attr::text("coordinate_transformation_mode", "output_half_pixel")}));
    HostTensor rois = tensor({2, 4}, {0, 0, 2, 2, 0, 0, 2, 2}); // one sample, at (1, 1)
    auto out = ir::interpret(g, {x, rois, tensor({2}, {1, 0}, DType::i64)}, {{"R", 2}});
    checkClose(out[0], {105, 0});
  }
  SECTION("sampling_ratio 0 with rois known at import time: ceil(roi size / bins) per roi") {
    ir::Graph g = importOnnxBytes(roiAlignModel(10, {}, {0, 0, 3, 3, 0, 0, 1, 1}));
    CHECK(typeOf(g) == "f32[2, 1, 1, 1]");
    // 3 samples (0.5, 1.5, 2.5) for the first roi, 1 (0.5) for the second
    auto out = ir::interpret(g, {x, tensor({2}, {1, 1}, DType::i64)});
    checkClose(out[0], {107.5, 102.5}, 1e-4);
  }
}

TEST_CASE("GridSample, AffineGrid and RoiAlign reject malformed nodes and what weft cannot "
          "lower, naming why",
          "[onnx][sample]") {
  const std::vector<std::string> x4 = {"1", "1", "2", "3"}, g4 = {"1", "2", "2", "2"};
  CHECK_THAT(errorOf(gridSampleModel(16, x4, g4, {Attr::text("padding_mode", "mirror")})),
             Contains("padding_mode \"mirror\" is not zeros, border or reflection"));
  CHECK_THAT(errorOf(gridSampleModel(16, x4, g4, {Attr::text("mode", "linear")})),
             Contains("mode \"linear\" is not bilinear, nearest or bicubic (linear and cubic "
                      "are GridSample-20's names)"));
  CHECK_THAT(errorOf(gridSampleModel(20, x4, g4, {Attr::integer("align_corners", 2)})),
             Contains("align_corners 2 is not 0 or 1"));
  CHECK_THAT(errorOf(gridSampleModel(16, {"1", "1", "2", "2", "2"}, {"1", "2", "2", "2", "3"}, {})),
             Contains("must be 4-D (N, C, H, W) in GridSample-16"));
  CHECK_THAT(errorOf(gridSampleModel(20, x4, {"1", "2", "2", "3"}, {})),
             Contains("grid [1, 2, 2, 3] must be (N, D1_out, .., Dr_out, r) with r = 2"));
  CHECK_THAT(errorOf(gridSampleModel(20, {"1", "1", "2", "W"}, g4, {})),
             Contains("spatial axis 3 of X has symbolic size W"));
  CHECK_THAT(errorOf(roiAlignModel(16, {Attr::integer("sampling_ratio", 1500),
                                        Attr::integer("output_height", 2),
                                        Attr::integer("output_width", 2)})),
             Contains("RoiAlign gathers 36000000 corners (bins x samples x 4) per roi and "
                      "channel, past weft's limit of 2^24"));
  CHECK_THAT(errorOf(roiAlignModel(16, {})),
             Contains("sampling_ratio 0 (adaptive: ceil(roi size / output size) samples per "
                      "bin) needs rois known at import time"));
  CHECK_THAT(
      errorOf(roiAlignModel(10, {Attr::integer("sampling_ratio", 2),
                                 Attr::text("coordinate_transformation_mode", "half_pixel")})),
      Contains("RoiAlign-10 has no attribute \"coordinate_transformation_mode\""));
  CHECK_THAT(
      errorOf(roiAlignModel(16, {Attr::integer("sampling_ratio", 2), Attr::text("mode", "sum")})),
      Contains("mode \"sum\" is not avg or max"));
  ModelBuilder m(20);
  m.input("theta", kFloat, {"1", "2", "3"})
      .initializerInts("size", {5}, {1, 1, 2, 2, 2})
      .node("AffineGrid", {"theta", "size"}, {"grid"}, {}, "ag");
  m.output("grid");
  CHECK_THAT(errorOf(m.bytes()),
             Contains("theta [1, 2, 3] must be (N, 3, 4) for size [1, 1, 2, 2, 2]"));
}
