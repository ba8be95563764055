// Resize and Upsample: nearest, linear and cubic along one or more axes, the coordinate modes,
// inf and NaN kept exact by both lowerings (phases and gather), antialias, axes,
// keep_aspect_ratio_policy, the legacy rules of Upsample and Resize-10, element types, symbolic
// batch dims and the errors a bad node gives, checked on the reference interpreter against
// values worked out by hand.
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

/// A Resize (or Upsample) node on x of shape `dims`; scales, sizes and roi become initializers
/// (omitted when empty), wired as the node's opset takes them.
struct ResizeModel {
  explicit ResizeModel(std::vector<std::string> d, std::vector<Attr> a = {},
                       std::vector<float> s = {}, int e = kFloat)
      : dims(std::move(d)), attrs(std::move(a)), scales(std::move(s)), elem(e) {}

  std::vector<std::string> dims;
  std::vector<Attr> attrs;
  std::vector<float> scales, roi;
  std::vector<int64_t> sizes;
  int elem = kFloat;
  int opset = 19;
  std::string op = "Resize";

  std::string bytes() const {
    ModelBuilder m(opset);
    m.input("x", elem, dims);
    std::vector<std::string> inputs = {"x"};
    if (op == "Upsample" || opset < 11) {
      if (!scales.empty()) inputs.push_back("scales");
    } else {
      inputs.push_back(roi.empty() ? "" : "roi");
      inputs.push_back(scales.empty() ? "" : "scales");
      if (!sizes.empty()) inputs.push_back("sizes");
    }
    auto n = [](const auto& v) { return std::vector<int64_t>{static_cast<int64_t>(v.size())}; };
    if (!scales.empty()) m.initializer("scales", n(scales), scales);
    if (!roi.empty()) m.initializer("roi", n(roi), roi);
    if (!sizes.empty()) m.initializerInts("sizes", n(sizes), sizes);
    m.node(op, inputs, {"y"}, attrs, "r");
    m.output("y");
    return m.bytes();
  }
  ir::Graph graph() const { return importOnnxBytes(bytes()); }
  std::vector<double> run(const HostTensor& x, const ir::Binding& b = {}) const {
    return valuesOf(ir::interpret(graph(), {x}, b)[0]);
  }
};

std::string typeOf(const ir::Graph& g) {
  return g.node(g.outputs()[0]).type.str();
}

/// How many nodes of the graph are of `kind`.
size_t count(const ir::Graph& g, ir::OpKind kind) {
  size_t n = 0;
  for (const auto& node : g.nodes())
    n += node.kind == kind;
  return n;
}

Attr text(const std::string& name, const std::string& v) {
  return Attr::text(name, v);
}

} // namespace

TEST_CASE("Resize by 2: nearest is a broadcast and reshape, linear reads neighbours, over "
          "symbolic batch and channel dims",
          "[onnx][resize]") {
  ResizeModel nearest{{"N", "C", "2", "2"}, {}, {1, 1, 2, 2}};
  nearest.opset = 13;
  ir::Graph g = nearest.graph();
  CHECK(typeOf(g) == "f32[N, C, 4, 4]");
  CHECK(count(g, ir::OpKind::Select) + count(g, ir::OpKind::Reduce) + count(g, ir::OpKind::Slice) ==
        0);
  std::vector<double> y =
      nearest.run(tensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), {{"N", 1}, {"C", 2}});
  CHECK(y == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4,
                                 5, 5, 6, 6, 5, 5, 6, 6, 7, 7, 8, 8, 7, 7, 8, 8});
  // half_pixel: output o reads x = (o + 0.5) / 2 - 0.5, the ends clamped
  ResizeModel linear{{"3"}, {text("mode", "linear")}, {2}};
  checkClose(tensor({6}, linear.run(tensor({3}, {1, 2, 4}))), {1, 1.25, 1.75, 2.5, 3.5, 4});
  // align_corners, 3 -> 5: x = o / 2; outputs at whole x weigh their neighbours 0, so an inf
  // or NaN beside them does not leak
  ResizeModel corners{
      {"3"}, {text("mode", "linear"), text("coordinate_transformation_mode", "align_corners")}};
  corners.sizes = {5};
  for (double bad : {kInf, std::nan("")}) {
    std::vector<double> v = corners.run(tensor({3}, {bad, 1, 2}));
    bool same = std::isinf(bad) ? std::isinf(v[0]) && std::isinf(v[1])
                                : std::isnan(v[0]) && std::isnan(v[1]);
    CHECK(same);
    CHECK(std::vector<double>(v.begin() + 2, v.end()) == std::vector<double>{1, 1.5, 2});
  }
}

TEST_CASE("tf_crop_and_resize: extrapolation_value outside the input, and a reversed roi too "
          "irregular for phases is gathered exactly",
          "[onnx][resize]") {
  // roi [-0.5, 1.5] of 3 elements to 5: x = -1 + o; -1 and 3 are outside
  ResizeModel crop{{"3"},
                   {text("mode", "linear"),
                    text("coordinate_transformation_mode", "tf_crop_and_resize"),
                    Attr::real("extrapolation_value", 7)}};
  crop.roi = {-0.5f, 1.5f};
  crop.sizes = {5};
  CHECK(crop.run(tensor({3}, {1, 2, 3})) == std::vector<double>{7, 1, 2, 3, 7});
  // roi [1, 0] of 100 elements to 150: x = 99 (1 - o / 149) runs backwards through every
  // position, too irregular for slices: gathered, a gather per tap. x[i] = 10 i but x[50] =
  // inf, which only the outputs whose window holds it (x in (49, 51): o = 73 to 75) may see;
  // a one-hot dot would spread 0 * inf = NaN over every output
  crop.dims = {"100"};
  crop.roi = {1, 0};
  crop.sizes = {150};
  ir::Graph g = crop.graph();
  CHECK(count(g, ir::OpKind::Gather) > 0);
  std::vector<double> xs;
  for (int i = 0; i < 100; ++i)
    xs.push_back(i == 50 ? kInf : 10.0 * i);
  std::vector<double> v = valuesOf(ir::interpret(g, {tensor({100}, xs)})[0]);
  REQUIRE(v.size() == 150);
  for (size_t o = 0; o < 150; ++o) {
    INFO("output " << o);
    if (o >= 73 && o <= 75)
      CHECK(std::isinf(v[o]));
    else
      CHECK(v[o] == Approx(990 * (1 - static_cast<double>(o) / 149)).margin(1e-3));
  }
}

TEST_CASE("Resize-18 and -19: antialias, axes, keep_aspect_ratio_policy, half_pixel_symmetric",
          "[onnx][resize]") {
  SECTION("antialias stretches the linear kernel by 1 / scale when shrinking") {
    // 8 -> 4 (scale 0.5): x = 2 o + 0.5; taps 2o-1 .. 2o+2 weigh 1 - |d| / 2 for their
    // distances d (1.5, 0.5, 0.5, 1.5), normalized: 1/8, 3/8, 3/8, 1/8
    ResizeModel aa{{"8"}, {text("mode", "linear"), Attr::integer("antialias", 1)}};
    aa.sizes = {4};
    HostTensor x = tensor({8}, {0, 8, 16, 24, 32, 40, 48, 56});
    checkClose(tensor({4}, aa.run(x)), {5, 20, 36, 51});
    aa.attrs.pop_back();
    checkClose(tensor({4}, aa.run(x)), {4, 20, 36, 52});
  }
  SECTION("axes name what sizes refer to; not_larger and not_smaller keep the aspect ratio") {
    // sizes [4, 4] for axes 2 and 1 of [1, 2, 3]: scales 4/3 and 2; not_larger takes 4/3:
    // axis 1 gets round(2 * 4/3) = 3, axis 2 gets 4. Nearest, asymmetric: x = 0.75 o
    ResizeModel keep{{"1", "2", "3"},
                     {Attr::list("axes", {-1, 1}), text("keep_aspect_ratio_policy", "not_larger"),
                      text("coordinate_transformation_mode", "asymmetric")}};
    keep.sizes = {4, 4};
    ir::Graph g = keep.graph();
    CHECK(typeOf(g) == "f32[1, 3, 4]");
    CHECK(valuesOf(ir::interpret(g, {tensor({1, 2, 3}, {1, 2, 3, 4, 5, 6})})[0]) ==
          std::vector<double>{1, 2, 2, 3, 4, 5, 5, 6, 4, 5, 5, 6});
    keep.attrs[1] = text("keep_aspect_ratio_policy", "not_smaller");
    CHECK(typeOf(keep.graph()) == "f32[1, 4, 6]");
  }
  SECTION("half_pixel_symmetric centers the fractional output (opset 19)") {
    // 4 -> floor(4 * 1.3) = 5; x = 2 (1 - 5 / 5.2) + (o + 0.5) / 1.3 - 0.5; linear on 10 * i
    ResizeModel sym{
        {"4"},
        {text("mode", "linear"), text("coordinate_transformation_mode", "half_pixel_symmetric")},
        {1.3f}};
    double scale = 1.3f, offset = 2 * (1 - 5 / (4 * scale));
    std::vector<double> want;
    for (int o = 0; o < 5; ++o)
      want.push_back(10 * std::clamp(offset + (o + 0.5) / scale - 0.5, 0.0, 3.0));
    checkClose(tensor({5}, sym.run(tensor({4}, {0, 10, 20, 30}))), want, 1e-5);
  }
}

TEST_CASE("Upsample and Resize-10 map o to o / scale and round down when enlarging, up when "
          "shrinking",
          "[onnx][resize]") {
  HostTensor x24 = tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  ResizeModel r10{{"1", "1", "2", "4"}, {}, {1, 1, 0.6f, 0.6f}};
  r10.opset = 10;
  CHECK(r10.run(x24) == std::vector<double>{1, 3}); // x = 0, 1/0.6 rounded up
  r10.attrs = {text("mode", "linear")};
  checkClose(tensor({2}, r10.run(x24)), {1, 1 + 1 / 0.6f});
  ResizeModel up9{{"1", "1", "2", "2"}, {}, {1, 1, 2, 3}};
  up9.op = "Upsample";
  up9.opset = 9;
  CHECK(up9.run(tensor({1, 1, 2, 2}, {1, 2, 3, 4})) == std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1,
                                                                           1, 2, 2, 2, 3, 3, 3, 4,
                                                                           4, 4, 3, 3, 3, 4, 4, 4});
  // Upsample-7 takes scales as an attribute; linear, asymmetric: x = o / 2, the end clamped
  ResizeModel up7{{"1", "2"}, {text("mode", "linear")}};
  up7.op = "Upsample";
  up7.opset = 7;
  std::string bytes = up7.bytes();
  ::onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(bytes));
  auto* scales = proto.mutable_graph()->mutable_node(0)->add_attribute();
  scales->set_name("scales");
  scales->set_type(::onnx::AttributeProto::FLOATS);
  scales->add_floats(1);
  scales->add_floats(2);
  ir::Graph g = importOnnxBytes(proto.SerializeAsString());
  CHECK(valuesOf(ir::interpret(g, {tensor({1, 2}, {1, 3})})[0]) == std::vector<double>{1, 2, 3, 3});
}

TEST_CASE("Resize keeps the element type: integers interpolate in f64 and truncate, selections "
          "copy any type",
          "[onnx][resize]") {
  ResizeModel linear{{"2"}, {text("mode", "linear")}, {2}, kUint8};
  ir::Graph g = linear.graph();
  CHECK(typeOf(g) == "i32[4]"); // UINT8, held in i32
  CHECK(valuesOf(ir::interpret(g, {tensor({2}, {10, 20}, DType::i32)})[0]) ==
        std::vector<double>{10, 12, 17, 20});
  ResizeModel ints{{"2"}, {}, {2}, kInt32};
  CHECK(ints.run(tensor({2}, {7, -3}, DType::i32)) == std::vector<double>{7, 7, -3, -3});
  ResizeModel flags{{"2"}, {}, {2}, kBool};
  CHECK(typeOf(flags.graph()) == "bool[4]");
  CHECK(flags.run(tensor({2}, {1, 0}, DType::boolean)) == std::vector<double>{1, 1, 0, 0});
  ResizeModel half{{"2"}, {text("mode", "cubic")}, {2}, kHalf};
  CHECK(typeOf(half.graph()) == "f16[4]");
}

TEST_CASE("Resize and Upsample reject malformed nodes and refuse what weft cannot lower, naming "
          "what is wrong",
          "[onnx][resize]") {
  auto error = [](ResizeModel m) { return errorOf(m.bytes()); };
  ResizeModel base{{"1", "2"}, {}, {1, 2}};
  auto with = [&](std::vector<Attr> attrs) {
    ResizeModel m = base;
    m.attrs = std::move(attrs);
    return m;
  };
  CHECK_THAT(error(with({text("mode", "area")})),
             Contains("mode \"area\" is not nearest, linear or cubic"));
  CHECK_THAT(error(with({text("coordinate_transformation_mode", "center")})),
             Contains("coordinate_transformation_mode \"center\" is not half_pixel"));
  CHECK_THAT(error(with({text("nearest_mode", "round")})),
             Contains("nearest_mode \"round\" is not round_prefer_floor"));
  CHECK_THAT(error(with({Attr::integer("exclude_outside", 2)})),
             Contains("exclude_outside 2 is not 0 or 1"));
  CHECK_THAT(error(with({text("keep_aspect_ratio_policy", "fit")})),
             Contains("keep_aspect_ratio_policy \"fit\" is not stretch"));
  ResizeModel m = with({text("coordinate_transformation_mode", "tf_half_pixel_for_nn")});
  m.opset = 13;
  CHECK_THAT(error(m), Contains("\"tf_half_pixel_for_nn\" is a mode of Resize-11 only"));
  m = with({text("coordinate_transformation_mode", "half_pixel_symmetric")});
  m.opset = 18;
  CHECK_THAT(error(m), Contains("\"half_pixel_symmetric\" is a mode from opset 19"));
  m = with({text("coordinate_transformation_mode", "tf_crop_and_resize")});
  CHECK_THAT(error(m), Contains("tf_crop_and_resize needs roi (input 1)"));
  m = base;
  m.sizes = {1, 4};
  CHECK_THAT(error(m), Contains("takes scales (input 2) or sizes (input 3), not both"));
  m.scales = {};
  m.sizes = {};
  CHECK_THAT(error(m), Contains("needs scales (input 2) or sizes (input 3)"));
  m.scales = {2};
  CHECK_THAT(error(m), Contains("scales [2] has 1 values; it needs one per resized axis (2)"));
  m.scales = {1, -2};
  CHECK_THAT(error(m), Contains("scales [1, -2] has -2; each must be positive"));
  m = with({Attr::list("axes", {1, -1})});
  m.scales = {2, 2};
  CHECK_THAT(error(m), Contains("axes [1, -1] names axis 1 twice"));
  m = base;
  m.dims = {"N", "2"};
  m.scales = {2, 2};
  CHECK_THAT(error(m), Contains("axis 0 has symbolic size N and scale 2: only static axes can be "
                                "resized"));
  m = base;
  m.elem = kBool;
  m.attrs = {text("mode", "linear")};
  CHECK_THAT(error(m), Contains("interpolating bool elements is not supported"));
  m = base;
  m.op = "Upsample";
  m.opset = 9;
  m.scales = {1, 0.5f};
  CHECK_THAT(error(m), Contains("each must be 1 or more (Upsample only enlarges)"));
  m.opset = 10;
  CHECK_THAT(error(m), Contains("Upsample is deprecated from opset 10 (use Resize)"));
  m = base;
  m.opset = 10;
  m.attrs = {text("mode", "cubic")};
  CHECK_THAT(error(m), Contains("cubic is a mode from Resize-11"));
  // scales computed at run time
  ModelBuilder rt(13);
  rt.input("x", kFloat, {"1", "2"}).input("s", kFloat, {"2"});
  rt.node("Resize", {"x", "", "s"}, {"y"}, {}, "r").output("y");
  CHECK_THAT(errorOf(rt.bytes()), Contains("input 2 (scales) must be known when the model is "
                                           "imported"));
}
