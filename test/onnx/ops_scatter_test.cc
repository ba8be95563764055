// The selection and scatter operators of ops_scatter.cc (TopK, GatherND, ScatterElements,
// Scatter, ScatterND, MaxUnpool): each model is imported, run on the reference interpreter and
// compared with values worked out by hand; bad attributes and operands must give a clear error.
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

const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Imports the model and runs it on the reference interpreter: every output.
std::vector<HostTensor> runAll(ModelBuilder& m, const std::vector<HostTensor>& inputs,
                               const ir::Binding& binding = {}) {
  return ir::interpret(importOnnxBytes(m.bytes()), inputs, binding);
}

HostTensor runOne(ModelBuilder& m, const std::vector<HostTensor>& inputs,
                  const ir::Binding& binding = {}) {
  std::vector<HostTensor> out = runAll(m, inputs, binding);
  REQUIRE(out.size() == 1);
  return out[0];
}

/// A TopK model over x [2, 4] (f32) with k as the opset wants it: attribute (1) or
/// initializer K (10 on).
ModelBuilder topK(int opset, int64_t k, std::vector<Attr> attrs,
                  const std::vector<std::string>& dims = {"2", "4"}) {
  ModelBuilder m(opset);
  m.input("x", kFloat, dims);
  if (opset < 10) {
    attrs.push_back(Attr::integer("k", k));
    m.node("TopK", {"x"}, {"v", "i"}, attrs);
  } else {
    m.initializerInts("K", {1}, {k}).node("TopK", {"x", "K"}, {"v", "i"}, attrs);
  }
  m.output("v").output("i");
  return m;
}

/// A three-input scatter model: data (f32) and updates (f32) inputs, indices an initializer.
ModelBuilder scatter(int opset, const std::string& op, const std::vector<std::string>& dataDims,
                     const std::vector<int64_t>& indexDims, const std::vector<int64_t>& indices,
                     const std::vector<std::string>& updateDims,
                     const std::vector<Attr>& attrs = {}, int elemType = kFloat) {
  ModelBuilder m(opset);
  m.input("data", elemType, dataDims)
      .input("updates", elemType, updateDims)
      .initializerInts("indices", indexDims, indices)
      .node(op, {"data", "indices", "updates"}, {"y"}, attrs)
      .output("y");
  return m;
}

} // namespace

// ---------------------------------------------------------------- TopK

TEST_CASE("TopK gives the k extremes in order, ties and NaN as numpy sorts them",
          "[onnx][scatter]") {
  // rows: [3, 1, 3, 2] (a tie at 0 and 2), [NaN, -1, 5, NaN] (NaN sorts above every number)
  HostTensor x = tensor({2, 4}, {3, 1, 3, 2, kNaN, -1, 5, kNaN});
  SECTION("largest along the last axis (the default), k as input K") {
    auto m = topK(11, 3, {});
    std::vector<HostTensor> out = runAll(m, {x});
    REQUIRE(out.size() == 2);
    CHECK(out[0].shape == std::vector<int64_t>{2, 3});
    CHECK(out[1].dtype == DType::i64);
    CHECK(valuesOf(out[1]) == std::vector<double>{0, 2, 3, 0, 3, 2});
    std::vector<double> v = valuesOf(out[0]);
    CHECK(std::vector<double>(v.begin(), v.begin() + 3) == std::vector<double>{3, 3, 2});
    CHECK(std::isnan(v[3]));
    CHECK(std::isnan(v[4]));
    CHECK(v[5] == 5);
  }
  SECTION("smallest, unsorted allowed (the sorted order is given)") {
    auto m = topK(11, 2, {Attr::integer("largest", 0), Attr::integer("sorted", 0)});
    std::vector<HostTensor> out = runAll(m, {x});
    CHECK(valuesOf(out[0]) == std::vector<double>{1, 2, -1, 5});
    CHECK(valuesOf(out[1]) == std::vector<double>{1, 3, 1, 2});
  }
  SECTION("opset 1 takes k as an attribute; axis 0, negative") {
    auto m = topK(1, 1, {Attr::integer("axis", -2)});
    std::vector<HostTensor> out = runAll(m, {tensor({2, 4}, {3, 1, 3, 2, 0, 4, 3, 7})});
    CHECK(out[0].shape == std::vector<int64_t>{1, 4});
    CHECK(valuesOf(out[0]) == std::vector<double>{3, 4, 3, 7});
    CHECK(valuesOf(out[1]) == std::vector<double>{0, 1, 0, 1});
  }
  SECTION("a symbolic batch axis, and k = 0") {
    auto m = topK(10, 2, {}, {"N", "4"});
    CHECK(valuesOf(runAll(m, {x}, {{"N", 2}})[1]) == std::vector<double>{0, 2, 0, 3});
    auto none = topK(10, 0, {}, {"N", "4"});
    CHECK(runAll(none, {x}, {{"N", 2}})[0].shape == std::vector<int64_t>{2, 0});
  }
}

TEST_CASE("TopK over a long row picks k rounds, in numpy's order", "[onnx][scatter]") {
  // 40 elements, k = 3: the rounds path (topKByRounds). Ties, NaNs, -0 and 0, infinities; the
  // reference is a stable sort with NaN largest, as numpy's.
  const int64_t n = 40;
  std::vector<double> row;
  for (int64_t i = 0; i < n; ++i)
    row.push_back(double((i * 7) % 11) - 5);
  row[3] = kNaN, row[17] = kNaN, row[5] = -0.0, row[6] = 0.0, row[9] = -INFINITY, row[30] = 5;
  auto order = [&](bool largest) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
    auto key = [&](int64_t i) { return std::isnan(row[size_t(i)]) ? INFINITY : row[size_t(i)]; };
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      bool nanA = std::isnan(row[size_t(a)]), nanB = std::isnan(row[size_t(b)]);
      if (nanA != nanB) return largest ? nanA : nanB; // NaN counts as the largest
      return largest ? key(a) > key(b) : key(a) < key(b);
    });
    return idx;
  };
  for (bool largest : {true, false})
    for (int64_t k : {1, 3}) {
      INFO("largest " << largest << ", k " << k);
      ModelBuilder m = topK(11, k, {Attr::integer("largest", largest)}, {"1", std::to_string(n)});
      auto out = runAll(m, {tensor({1, n}, row)});
      std::vector<int64_t> want = order(largest);
      for (int64_t r = 0; r < k; ++r) {
        INFO("round " << r);
        CHECK(out[1].getInt(r) == want[size_t(r)]);
        double v = out[0].get(r), w = row[size_t(want[size_t(r)])];
        CHECK((std::isnan(w) ? std::isnan(v) : (v == w && std::signbit(v) == std::signbit(w))));
      }
    }
  // Integers, smallest: the key -1 - x reverses their order exactly, the lowest included.
  ModelBuilder ints(11);
  ints.input("x", kInt32, {"1", "16"});
  ints.initializerInts("K", {1}, {2}).node("TopK", {"x", "K"}, {"v", "i"},
                                           {Attr::integer("largest", 0)});
  ints.output("v").output("i");
  std::vector<double> xs(16, 7.0);
  xs[4] = -2147483648.0, xs[9] = -2147483648.0;
  auto out = runAll(ints, {tensor({1, 16}, xs, DType::i32)});
  CHECK(out[0].getInt(0) == -2147483648LL);
  CHECK(out[0].getInt(1) == -2147483648LL);
  CHECK(out[1].getInt(0) == 4);
  CHECK(out[1].getInt(1) == 9);
}

TEST_CASE("TopK refuses a k it cannot know or that is out of range", "[onnx][scatter]") {
  CHECK_THAT(errorOf(topK(11, 5, {}).bytes()),
             Contains("k 5 is more than the 4 elements of axis 1 of input [2, 4]"));
  CHECK_THAT(errorOf(topK(11, -1, {}).bytes()), Contains("k -1 must not be negative"));
  ModelBuilder runTime(11);
  runTime.input("x", kFloat, {"2", "4"})
      .input("K", kInt64, {"1"})
      .node("TopK", {"x", "K"}, {"v", "i"})
      .output("v");
  CHECK_THAT(errorOf(runTime.bytes()),
             Contains("input 1 (K) must be known when the model is imported"));
  CHECK_THROWS_AS(importOnnxBytes(runTime.bytes()), UnsupportedError);
}

// ---------------------------------------------------------------- GatherND

TEST_CASE("GatherND gathers slices by index tuples, with batch_dims", "[onnx][scatter]") {
  // data [2, 2, 2] = 0..7
  HostTensor data = tensor({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto model = [](int opset, const std::vector<int64_t>& idxDims, const std::vector<int64_t>& idx,
                  std::vector<Attr> attrs = {}, const std::string& batch = "2") {
    ModelBuilder m(opset);
    m.input("data", kFloat, {batch, "2", "2"})
        .initializerInts("indices", idxDims, idx)
        .node("GatherND", {"data", "indices"}, {"y"}, attrs)
        .output("y");
    return m;
  };
  SECTION("tuples of 2 give rows; negative counts from the end; out of range gives 0") {
    auto m = model(11, {3, 2}, {1, 0, -1, -2, 2, 0});
    HostTensor y = runOne(m, {data});
    CHECK(y.shape == std::vector<int64_t>{3, 2});
    CHECK(valuesOf(y) == std::vector<double>{4, 5, 4, 5, 0, 0});
  }
  SECTION("batch_dims 1 over a symbolic batch: one tuple per batch row") {
    auto m = model(12, {2, 1, 2}, {0, 1, 1, 0}, {Attr::integer("batch_dims", 1)}, "N");
    HostTensor y = runOne(m, {data}, {{"N", 2}});
    CHECK(y.shape == std::vector<int64_t>{2, 1});
    CHECK(valuesOf(y) == std::vector<double>{1, 6});
  }
  SECTION("bad batch_dims and tuple lengths") {
    CHECK_THAT(errorOf(model(12, {2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}).bytes()),
               Contains("the last axis of indices [2, 4] (4) must be from 1 to 3"));
    CHECK_THAT(errorOf(model(12, {2}, {0, 0}, {Attr::integer("batch_dims", 1)}).bytes()),
               Contains("batch_dims 1 must be at least 0 and less than the ranks"));
    CHECK_THAT(errorOf(model(10, {1}, {0}).bytes()), Contains("GatherND is defined from opset 11"));
  }
}

// ---------------------------------------------------------------- ScatterElements, Scatter

TEST_CASE("ScatterElements writes updates along an axis, the last duplicate wins",
          "[onnx][scatter]") {
  HostTensor data = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  SECTION("axis 1; indices shorter on axis 0; a duplicate, a negative, an out-of-range one") {
    // row 0: positions 2, 2 (the second wins) and -3 (= 0); 7 is out of range: dropped
    auto m = scatter(13, "ScatterElements", {"2", "3"}, {1, 4}, {2, 2, -3, 7}, {"1", "4"},
                     {Attr::integer("axis", 1)});
    HostTensor y = runOne(m, {data, tensor({1, 4}, {10, 20, 30, 40})});
    CHECK(valuesOf(y) == std::vector<double>{30, 2, 20, 4, 5, 6});
  }
  SECTION("Scatter (opset 9) is the same along axis 0, the default") {
    auto m = scatter(9, "Scatter", {"2", "3"}, {1, 3}, {1, 0, 1}, {"1", "3"});
    HostTensor y = runOne(m, {data, tensor({1, 3}, {10, 20, 30})});
    CHECK(valuesOf(y) == std::vector<double>{1, 20, 3, 10, 5, 30});
  }
  SECTION("reductions combine every landing update with data") {
    // updates 10, 20 both land on data[0][0] = 1, -30 on data[1][0] = 4
    auto run = [&](int opset, const char* reduction) {
      auto m = scatter(opset, "ScatterElements", {"2", "3"}, {3, 1}, {0, 0, 1}, {"3", "1"},
                       {Attr::integer("axis", 0), Attr::text("reduction", reduction)});
      return valuesOf(runOne(m, {data, tensor({3, 1}, {10, 20, -30})}));
    };
    // only column 0 is scattered into (indices have one column)
    CHECK(run(16, "add") == std::vector<double>{31, 2, 3, -26, 5, 6});
    CHECK(run(16, "mul") == std::vector<double>{200, 2, 3, -120, 5, 6});
    CHECK(run(18, "max") == std::vector<double>{20, 2, 3, 4, 5, 6});
    CHECK(run(18, "min") == std::vector<double>{1, 2, 3, -30, 5, 6});
    CHECK(run(16, "none") == std::vector<double>{20, 2, 3, -30, 5, 6});
  }
  SECTION("UINT8 sums wrap as the narrow type does") {
    auto m = scatter(16, "ScatterElements", {"2"}, {2}, {1, 1}, {"2"},
                     {Attr::text("reduction", "add")}, kUint8);
    HostTensor y = runOne(m, {tensor({2}, {7, 250}, DType::i32), tensor({2}, {3, 4}, DType::i32)});
    CHECK(valuesOf(y) == std::vector<double>{7, 1});
  }
}

TEST_CASE("ScatterElements and Scatter refuse what their opset does not define",
          "[onnx][scatter]") {
  auto with = [](int opset, const std::string& op, std::vector<Attr> attrs) {
    return scatter(opset, op, {"2"}, {1}, {0}, {"1"}, attrs).bytes();
  };
  CHECK_THAT(errorOf(with(16, "ScatterElements", {Attr::text("reduction", "max")})),
             Contains("reduction \"max\" is defined from opset 18"));
  CHECK_THAT(errorOf(with(18, "ScatterElements", {Attr::text("reduction", "sum")})),
             Contains("reduction \"sum\" must be none, add, mul, max or min"));
  CHECK_THAT(errorOf(with(13, "ScatterElements", {Attr::text("reduction", "add")})),
             Contains("has no attribute \"reduction\""));
  CHECK_THAT(errorOf(with(8, "Scatter", {})), Contains("Scatter is defined from opset 9"));
  CHECK_THAT(errorOf(scatter(13, "ScatterElements", {"2", "2"}, {3, 1}, {0, 0, 0}, {"3", "1"},
                             {Attr::integer("axis", 1)})
                         .bytes()),
             Contains("indices [3, 1] exceed data [2, 2] on axis 0"));
  CHECK_THAT(errorOf(scatter(13, "ScatterElements", {"2"}, {2}, {0, 0}, {"3"}).bytes()),
             Contains("updates [3] must have the shape [2]"));
}

// ---------------------------------------------------------------- ScatterND

TEST_CASE("ScatterND writes slices at index tuples", "[onnx][scatter]") {
  HostTensor data = tensor({2, 2}, {1, 2, 3, 4});
  SECTION("rows by 1-tuples, over a symbolic row length; the last duplicate wins") {
    auto m = scatter(11, "ScatterND", {"2", "N"}, {3, 1}, {1, -1, 5}, {"3", "N"});
    HostTensor y = runOne(m, {data, tensor({3, 2}, {10, 20, 30, 40, 50, 60})}, {{"N", 2}});
    CHECK(valuesOf(y) == std::vector<double>{1, 2, 30, 40});
  }
  SECTION("elements by 2-tuples, multiplied (opset 16); an out-of-range tuple is dropped") {
    auto m = scatter(16, "ScatterND", {"2", "2"}, {3, 2}, {0, 1, 0, 1, 2, 0}, {"3"},
                     {Attr::text("reduction", "mul")});
    HostTensor y = runOne(m, {data, tensor({3}, {3, 5, 7})});
    CHECK(valuesOf(y) == std::vector<double>{1, 30, 3, 4});
  }
  SECTION("an empty tuple replaces the whole tensor; max keeps the larger") {
    auto m =
        scatter(18, "ScatterND", {"2", "2"}, {0}, {}, {"2", "2"}, {Attr::text("reduction", "max")});
    HostTensor y = runOne(m, {data, tensor({2, 2}, {0, 9, 0, 9})});
    CHECK(valuesOf(y) == std::vector<double>{1, 9, 3, 9});
  }
  SECTION("bad shapes") {
    CHECK_THAT(errorOf(scatter(11, "ScatterND", {"2", "2"}, {1, 3}, {0, 0, 0}, {"1"}).bytes()),
               Contains("the last axis of indices [1, 3] (3) exceeds the rank of data [2, 2]"));
    CHECK_THAT(errorOf(scatter(11, "ScatterND", {"2", "2"}, {1, 1}, {0}, {"1", "3"}).bytes()),
               Contains("updates [1, 3] must have the shape [1, 2]"));
  }
}

// ---------------------------------------------------------------- MaxUnpool

namespace {

/// MaxUnpool of X [n, 2, 2] (f32) by the int64 indices I (an initializer when `indices` are
/// given, else an input of X's shape) with a 1-D kernel of 2 and stride 2: the unpooled shape
/// is [n, 2, 4]. `outputShape` (when not empty) is input 2.
ModelBuilder unpool(const std::string& n, const std::vector<int64_t>& indices,
                    const std::vector<int64_t>& outputShape, std::vector<Attr> attrs = {}) {
  ModelBuilder m(11);
  m.input("x", kFloat, {n, "2", "2"});
  if (indices.empty())
    m.input("i", kInt64, {n, "2", "2"});
  else
    m.initializerInts("i", {1, 2, 2}, indices);
  std::vector<std::string> inputs = {"x", "i"};
  if (!outputShape.empty()) {
    m.initializerInts("shape", {static_cast<int64_t>(outputShape.size())}, outputShape);
    inputs.push_back("shape");
  }
  if (attrs.empty()) attrs = {Attr::list("kernel_shape", {2}), Attr::list("strides", {2})};
  m.node("MaxUnpool", inputs, {"y"}, attrs, "u").output("y");
  return m;
}

} // namespace

TEST_CASE("MaxUnpool scatters X to flat indices of the unpooled shape", "[onnx][scatter]") {
  HostTensor x = tensor({1, 2, 2}, {1, 2, 3, 4});
  // index 1 twice (the last wins), 6 (in channel 1), 9 past the 8 elements (dropped)
  std::vector<int64_t> indices = {1, 1, 6, 9};
  SECTION("the unpooled shape [N, 2, 4], N symbolic and I read at run time") {
    // N = 2: the flat indices span both items ([0, 16)); -1 and 16 are out of range
    ModelBuilder m = unpool("N", {}, {});
    HostTensor y = runOne(m,
                          {tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                           tensor({2, 2, 2}, {1, 1, 6, 9, 8, 15, -1, 16}, DType::i64)},
                          {{"N", 2}});
    CHECK(y.shape == std::vector<int64_t>{2, 2, 4});
    CHECK(valuesOf(y) == std::vector<double>{0, 2, 0, 0, 0, 0, 3, 0, 5, 4, 0, 0, 0, 0, 0, 6});
  }
  SECTION("the unpooled shape [1, 2, 4]; I known at import time") {
    ModelBuilder m = unpool("1", indices, {});
    CHECK(valuesOf(runOne(m, {x})) == std::vector<double>{0, 2, 0, 0, 0, 0, 3, 0});
  }
  SECTION("output_shape [1, 2, 5]: the unpooled values at the start, zeros after") {
    ModelBuilder m = unpool("1", indices, {1, 2, 5});
    HostTensor y = runOne(m, {x});
    CHECK(valuesOf(y) == std::vector<double>{0, 2, 0, 0, 0, 0, 0, 3, 0, 0});
  }
  SECTION("pads shrink the unpooled shape: (2 - 1) * 2 - (1 + 0) + 2 = 3") {
    ModelBuilder m = unpool(
        "1", {0, 2, 3, 5}, {},
        {Attr::list("kernel_shape", {2}), Attr::list("strides", {2}), Attr::list("pads", {1, 0})});
    HostTensor y = runOne(m, {x});
    CHECK(valuesOf(y) == std::vector<double>{1, 0, 2, 3, 0, 4});
  }
  SECTION("bad nodes") {
    CHECK_THAT(errorOf(unpool("1", indices, {1, 2, 3}).bytes()),
               Contains("output_shape [1, 2, 3] is smaller than the unpooled shape [1, 2, 4] on "
                        "axis 2"));
    CHECK_THAT(errorOf(unpool("1", indices, {}, {Attr::list("strides", {2})}).bytes()),
               Contains("kernel_shape"));
    CHECK_THAT(
        errorOf(unpool("1", indices, {}, {Attr::list("kernel_shape", {2}), Attr::list("pads", {1})})
                    .bytes()),
        Contains("pads [1] has 1 values, not 2 (X has 1 spatial axes)"));
  }
}
