// The index and position operators of ops_index.cc (ArgMax, ArgMin, Hardmax, CumSum,
// GatherElements, OneHot, Trilu, EyeLike, Range, Size, Tile, DepthToSpace, SpaceToDepth):
// each model is imported, run on the reference interpreter and compared with values worked
// out by hand; bad attributes and operands must give a clear error.
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

/// Imports the model and runs it on the reference interpreter.
HostTensor runModel(ModelBuilder& m, const std::vector<HostTensor>& inputs,
                    const ir::Binding& binding = {}) {
  ir::Graph g = importOnnxBytes(m.bytes());
  std::vector<HostTensor> out = ir::interpret(g, inputs, binding);
  REQUIRE(out.size() == 1);
  return out[0];
}

/// A one-node model: input x of `dims` and `elemType`, more initializers added by the caller.
ModelBuilder unary(int opset, const std::string& op, int elemType,
                   const std::vector<std::string>& dims, const std::vector<Attr>& attrs = {}) {
  ModelBuilder m(opset);
  m.input("x", elemType, dims).node(op, {"x"}, {"y"}, attrs).output("y");
  return m;
}

} // namespace

// ---------------------------------------------------------------- ArgMax, ArgMin, Hardmax

TEST_CASE("ArgMax and ArgMin give the first extreme's position as int64", "[onnx][index]") {
  // rows: [3, 1, 3] (tie at 0 and 2), [-1, -5, 7]
  HostTensor x = tensor({2, 3}, {3, 1, 3, -1, -5, 7});
  SECTION("ArgMax along axis 1, keepdims") {
    auto m = unary(13, "ArgMax", kFloat, {"2", "3"}, {Attr::integer("axis", 1)});
    HostTensor y = runModel(m, {x});
    CHECK(y.dtype == DType::i64);
    CHECK(y.shape == std::vector<int64_t>{2, 1});
    CHECK(valuesOf(y) == std::vector<double>{0, 2});
  }
  SECTION("ArgMax with select_last_index takes the last of a tie") {
    auto m = unary(13, "ArgMax", kFloat, {"2", "3"},
                   {Attr::integer("axis", -1), Attr::integer("select_last_index", 1)});
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>{2, 2});
  }
  SECTION("ArgMin along axis 0 (the default) without keepdims") {
    auto m = unary(11, "ArgMin", kFloat, {"2", "3"}, {Attr::integer("keepdims", 0)});
    HostTensor y = runModel(m, {x});
    CHECK(y.shape == std::vector<int64_t>{3});
    CHECK(valuesOf(y) == std::vector<double>{1, 1, 0});
  }
  SECTION("integer input, opset 1") {
    auto m = unary(1, "ArgMin", kInt32, {"2", "3"}, {Attr::integer("axis", 1)});
    CHECK(valuesOf(runModel(m, {tensor({2, 3}, {3, 1, 1, -1, -5, 7}, DType::i32)})) ==
          std::vector<double>{1, 1});
  }
}

TEST_CASE("ArgMax and ArgMin pick the first NaN, as numpy does", "[onnx][index]") {
  // rows: [1, NaN, 9, NaN] and [2, 8, 0, 5] (no NaN)
  HostTensor x = tensor({2, 4}, {1, kNaN, 9, kNaN, 2, 8, 0, 5});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    INFO(op);
    bool isMax = std::string(op) == "ArgMax";
    auto first = unary(13, op, kFloat, {"2", "4"}, {Attr::integer("axis", 1)});
    CHECK(valuesOf(runModel(first, {x})) == std::vector<double>{1, isMax ? 1.0 : 2.0});
    auto last = unary(13, op, kFloat, {"2", "4"},
                      {Attr::integer("axis", 1), Attr::integer("select_last_index", 1)});
    CHECK(valuesOf(runModel(last, {x})) == std::vector<double>{3, isMax ? 1.0 : 2.0});
  }
}

TEST_CASE("ArgMax refuses an empty axis and bool input", "[onnx][index]") {
  auto empty = unary(13, "ArgMax", kFloat, {"2", "0"}, {Attr::integer("axis", 1)});
  CHECK_THAT(errorOf(empty.bytes()), Contains("ArgMax") && Contains("axis 1 of input [2, 0] is empty"));
  auto boolean = unary(13, "ArgMin", kBool, {"3"});
  CHECK_THAT(errorOf(boolean.bytes()), Contains("takes numbers, not bool"));
  auto badAxis = unary(13, "ArgMax", kFloat, {"2", "3"}, {Attr::integer("axis", 2)});
  CHECK_THAT(errorOf(badAxis.bytes()), Contains("axis 2 is out of range for rank 2"));
}

TEST_CASE("ArgMax and ArgMin over a symbolic axis give the position, and -1 when it is bound to 0",
          "[onnx][index]") {
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int last : {0, 1}) {
      INFO(op << " select_last_index " << last);
      auto m = unary(13, op, kFloat, {"2", "N"},
                     {Attr::integer("axis", 1), Attr::integer("select_last_index", last)});
      HostTensor y = runModel(m, {tensor({2, 3}, {3, 1, 3, -1, -5, -5})}, {{"N", 3}});
      bool isMax = std::string(op) == "ArgMax";
      CHECK(valuesOf(y) == (isMax ? std::vector<double>{last ? 2.0 : 0.0, 0}
                                  : std::vector<double>{1, last ? 2.0 : 1.0}));
      HostTensor none = runModel(m, {tensor({2, 0}, {})}, {{"N", 0}});
      CHECK(none.shape == std::vector<int64_t>{2, 1});
      CHECK(valuesOf(none) == std::vector<double>{-1, -1});
    }
}

TEST_CASE("Hardmax marks the first maximum over one axis (13) or the coerced rows (< 13)",
          "[onnx][index]") {
  // x[2, 2, 2]: [[[1, 4], [4, 2]], [[0, 0], [5, -1]]]
  HostTensor x = tensor({2, 2, 2}, {1, 4, 4, 2, 0, 0, 5, -1});
  SECTION("opset 13, axis 1") {
    auto m = unary(13, "Hardmax", kFloat, {"2", "2", "2"}, {Attr::integer("axis", 1)});
    HostTensor y = runModel(m, {x});
    CHECK(y.dtype == DType::f32);
    CHECK(valuesOf(y) == std::vector<double>{0, 1, 1, 0, 0, 1, 1, 0});
  }
  SECTION("opset 13, the default last axis") {
    auto m = unary(13, "Hardmax", kFloat, {"2", "2", "2"});
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>{0, 1, 1, 0, 1, 0, 1, 0});
  }
  SECTION("opset 11, axis 1: rows of 4, the first 4 in row 0 wins") {
    auto m = unary(11, "Hardmax", kFloat, {"2", "2", "2"}, {Attr::integer("axis", 1)});
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>{0, 1, 0, 0, 0, 0, 1, 0});
  }
  SECTION("opset 1, axis 0: one row of 8") {
    auto m = unary(1, "Hardmax", kFloat, {"2", "2", "2"}, {Attr::integer("axis", 0)});
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>{0, 0, 0, 0, 0, 0, 1, 0});
  }
  SECTION("an empty input is its own result") {
    auto m = unary(13, "Hardmax", kFloat, {"N", "0"});
    CHECK(runModel(m, {tensor({2, 0}, {})}, {{"N", 2}}).shape == std::vector<int64_t>{2, 0});
  }
  SECTION("a symbolic leading dim") {
    auto m = unary(11, "Hardmax", kFloat, {"N", "2", "2"});
    CHECK(valuesOf(runModel(m, {x}, {{"N", 2}})) == std::vector<double>{0, 1, 0, 0, 0, 0, 1, 0});
  }
}

// ---------------------------------------------------------------- CumSum

namespace {

ModelBuilder cumsum(const std::vector<std::string>& dims, int64_t axis, int64_t exclusive,
                    int64_t reverse, int elemType = kFloat) {
  ModelBuilder m(14);
  m.input("x", elemType, dims)
      .initializerInts("axis", {}, {axis})
      .node("CumSum", {"x", "axis"}, {"y"},
            {Attr::integer("exclusive", exclusive), Attr::integer("reverse", reverse)})
      .output("y");
  return m;
}

} // namespace

TEST_CASE("CumSum in its four modes along either axis", "[onnx][index]") {
  HostTensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto sum = [&](int64_t axis, int64_t exclusive, int64_t reverse) {
    auto m = cumsum({"2", "3"}, axis, exclusive, reverse);
    return valuesOf(runModel(m, {x}));
  };
  CHECK(sum(1, 0, 0) == std::vector<double>{1, 3, 6, 4, 9, 15});
  CHECK(sum(1, 1, 0) == std::vector<double>{0, 1, 3, 0, 4, 9});
  CHECK(sum(1, 0, 1) == std::vector<double>{6, 5, 3, 15, 11, 6});
  CHECK(sum(-1, 1, 1) == std::vector<double>{5, 3, 0, 11, 6, 0});
  CHECK(sum(0, 0, 0) == std::vector<double>{1, 2, 3, 5, 7, 9});
  CHECK(sum(0, 1, 1) == std::vector<double>{4, 5, 6, 0, 0, 0});
}

TEST_CASE("CumSum of integers, of one element and of none", "[onnx][index]") {
  auto ints = cumsum({"4"}, 0, 0, 0, kInt64);
  HostTensor y = runModel(ints, {tensor({4}, {5, -2, 7, 1}, DType::i64)});
  CHECK(y.dtype == DType::i64);
  CHECK(valuesOf(y) == std::vector<double>{5, 3, 10, 11});
  auto one = cumsum({"3", "1"}, 1, 1, 0);
  CHECK(valuesOf(runModel(one, {tensor({3, 1}, {7, 8, 9})})) == std::vector<double>{0, 0, 0});
  auto oneInclusive = cumsum({"3", "1"}, 1, 0, 1);
  CHECK(valuesOf(runModel(oneInclusive, {tensor({3, 1}, {7, 8, 9})})) ==
        std::vector<double>{7, 8, 9});
  auto none = cumsum({"2", "0"}, 1, 0, 0);
  HostTensor empty = runModel(none, {tensor({2, 0}, {})});
  CHECK(empty.shape == std::vector<int64_t>{2, 0});
}

TEST_CASE("CumSum along a symbolic axis and with an int32 axis operand", "[onnx][index]") {
  ModelBuilder m(11);
  m.input("x", kDouble, {"N"}).node("CumSum", {"x", "axis"}, {"y"}).output("y");
  auto* axis = m.proto().mutable_graph()->add_initializer();
  axis->set_name("axis");
  axis->set_data_type(kInt32);
  axis->add_int32_data(0);
  HostTensor y = runModel(m, {tensor({3}, {0.5, 0.25, 2}, DType::f64)}, {{"N", 3}});
  CHECK(valuesOf(y) == std::vector<double>{0.5, 0.75, 2.75});
}

TEST_CASE("CumSum needs its axis at import time, in range", "[onnx][index]") {
  ModelBuilder runtime(14);
  runtime.input("x", kFloat, {"3"})
      .input("axis", kInt64, {})
      .node("CumSum", {"x", "axis"}, {"y"})
      .output("y");
  CHECK_THAT(errorOf(runtime.bytes()), Contains("input 1 (axis) must be known when the model is imported"));
  auto outOfRange = cumsum({"2", "3"}, 2, 0, 0);
  CHECK_THAT(errorOf(outOfRange.bytes()), Contains("CumSum") && Contains("axis 2 is out of range"));
  ModelBuilder twoAxes(14);
  twoAxes.input("x", kFloat, {"3"})
      .initializerInts("axis", {2}, {0, 0})
      .node("CumSum", {"x", "axis"}, {"y"})
      .output("y");
  CHECK_THAT(errorOf(twoAxes.bytes()), Contains("input 1 (axis) must hold one value, it holds 2"));
}

// ---------------------------------------------------------------- GatherElements

namespace {

ModelBuilder gatherElements(const std::vector<std::string>& dataDims,
                            const std::vector<std::string>& indexDims, int64_t axis,
                            int dataType = kFloat) {
  ModelBuilder m(13);
  m.input("data", dataType, dataDims)
      .input("indices", kInt64, indexDims)
      .node("GatherElements", {"data", "indices"}, {"y"}, {Attr::integer("axis", axis)})
      .output("y");
  return m;
}

} // namespace

TEST_CASE("GatherElements picks one element per index along the axis", "[onnx][index]") {
  HostTensor data = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  SECTION("axis 1 with negative indices") {
    auto m = gatherElements({"2", "3"}, {"2", "2"}, 1);
    HostTensor y = runModel(m, {data, tensor({2, 2}, {2, -3, -1, 1}, DType::i64)});
    CHECK(y.shape == std::vector<int64_t>{2, 2});
    CHECK(valuesOf(y) == std::vector<double>{3, 1, 6, 5});
  }
  SECTION("axis 0, more indices than data rows") {
    auto m = gatherElements({"2", "3"}, {"3", "3"}, 0);
    HostTensor y = runModel(m, {data, tensor({3, 3}, {1, 0, 1, 0, 0, 0, 1, 1, -2}, DType::i64)});
    CHECK(valuesOf(y) == std::vector<double>{4, 2, 6, 1, 2, 3, 4, 5, 3});
  }
  SECTION("bool data") {
    auto m = gatherElements({"1", "3"}, {"1", "2"}, 1, kBool);
    HostTensor y = runModel(
        m, {tensor({1, 3}, {1, 0, 1}, DType::boolean), tensor({1, 2}, {1, 2}, DType::i64)});
    CHECK(y.dtype == DType::boolean);
    CHECK(valuesOf(y) == std::vector<double>{0, 1});
  }
  SECTION("symbolic batch dim") {
    auto m = gatherElements({"B", "3"}, {"B", "1"}, 1);
    HostTensor y = runModel(m, {data, tensor({2, 1}, {2, 0}, DType::i64)}, {{"B", 2}});
    CHECK(valuesOf(y) == std::vector<double>{3, 4});
  }
}

TEST_CASE("GatherElements refuses mismatched ranks and indices wider than data", "[onnx][index]") {
  auto rank = gatherElements({"2", "3"}, {"2"}, 0);
  CHECK_THAT(errorOf(rank.bytes()), Contains("indices [2] must have the rank of data [2, 3]"));
  auto wider = gatherElements({"2", "3"}, {"2", "4"}, 0);
  CHECK_THAT(errorOf(wider.bytes()), Contains("indices [2, 4] exceed data [2, 3] on axis 1"));
  auto symbolic = gatherElements({"2", "N"}, {"2", "2"}, 1);
  CHECK_THAT(errorOf(symbolic.bytes()), Contains("GatherElements along axis 1 of symbolic size N"));
}

// ---------------------------------------------------------------- OneHot

namespace {

ModelBuilder oneHot(int opset, const std::vector<std::string>& dims, float depth,
                    std::vector<float> values, std::vector<Attr> attrs = {}) {
  ModelBuilder m(opset);
  m.input("indices", kInt64, dims)
      .initializer("depth", {}, {depth})
      .initializer("values", {static_cast<int64_t>(values.size())}, values)
      .node("OneHot", {"indices", "depth", "values"}, {"y"}, attrs)
      .output("y");
  return m;
}

} // namespace

TEST_CASE("OneHot places on_value at each index along the new axis", "[onnx][index]") {
  HostTensor idx = tensor({3}, {0, 2, -1}, DType::i64);
  SECTION("the default last axis; a negative index counts from the end (opset 11)") {
    auto m = oneHot(11, {"3"}, 3, {-1, 5});
    HostTensor y = runModel(m, {idx});
    CHECK(y.shape == std::vector<int64_t>{3, 3});
    CHECK(valuesOf(y) == std::vector<double>{5, -1, -1, -1, -1, 5, -1, -1, 5});
  }
  SECTION("axis 0") {
    auto m = oneHot(11, {"3"}, 3, {0, 1}, {Attr::integer("axis", 0)});
    CHECK(valuesOf(runModel(m, {idx})) == std::vector<double>{1, 0, 0, 0, 0, 0, 0, 1, 1});
  }
  SECTION("opset 9: a negative index is out of range (all off)") {
    auto m = oneHot(9, {"3"}, 3, {0, 1});
    CHECK(valuesOf(runModel(m, {idx})) == std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0});
  }
  SECTION("indices outside [-depth, depth) are all off; a float depth is truncated") {
    auto m = oneHot(11, {"2", "2"}, 2.5f, {0, 1}, {Attr::integer("axis", -2)});
    HostTensor y = runModel(m, {tensor({2, 2}, {2, -3, 1, -2}, DType::i64)});
    CHECK(y.shape == std::vector<int64_t>{2, 2, 2});
    // y[i, d, j] = (idx[i, j] == d)
    CHECK(valuesOf(y) == std::vector<double>{0, 0, 0, 0, 0, 1, 1, 0});
  }
}

TEST_CASE("OneHot takes values computed at run time", "[onnx][index]") {
  ModelBuilder m(11);
  m.input("indices", kInt32, {"2"})
      .input("values", kInt64, {"2"})
      .initializerInts("depth", {1}, {3})
      .node("OneHot", {"indices", "depth", "values"}, {"y"})
      .output("y");
  HostTensor y = runModel(m, {tensor({2}, {1, 0}, DType::i32), tensor({2}, {7, 9}, DType::i64)});
  CHECK(y.dtype == DType::i64);
  CHECK(valuesOf(y) == std::vector<double>{7, 9, 7, 9, 7, 7});
}

TEST_CASE("OneHot refuses a bad depth, values or axis", "[onnx][index]") {
  auto zero = oneHot(11, {"3"}, 0, {0, 1});
  CHECK_THAT(errorOf(zero.bytes()), Contains("depth 0 must be a positive integer"));
  auto three = oneHot(11, {"3"}, 4, {0, 1, 2});
  CHECK_THAT(errorOf(three.bytes()), Contains("values must be [off_value, on_value] (shape [2]), not [3]"));
  auto axis = oneHot(11, {"3"}, 4, {0, 1}, {Attr::integer("axis", 2)});
  CHECK_THAT(errorOf(axis.bytes()), Contains("axis 2 is out of range for rank 2"));
}

// ---------------------------------------------------------------- Trilu, EyeLike

TEST_CASE("Trilu keeps the upper or lower triangle from diagonal k", "[onnx][index]") {
  // x[3, 3] = 1..9
  HostTensor x = tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  SECTION("upper (the default), k absent") {
    auto m = unary(14, "Trilu", kFloat, {"3", "3"});
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  }
  SECTION("lower, k = -1") {
    ModelBuilder m(14);
    m.input("x", kFloat, {"3", "3"})
        .initializerInts("k", {}, {-1})
        .node("Trilu", {"x", "k"}, {"y"}, {Attr::integer("upper", 0)})
        .output("y");
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  }
  SECTION("upper with k computed at run time, over a batch") {
    ModelBuilder m(14);
    m.input("x", kInt64, {"2", "2", "3"})
        .input("k", kInt64, {})
        .node("Trilu", {"x", "k"}, {"y"})
        .output("y");
    HostTensor xs = tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, DType::i64);
    HostTensor y = runModel(m, {xs, tensor({}, {1}, DType::i64)});
    CHECK(valuesOf(y) == std::vector<double>{0, 2, 3, 0, 0, 6, 0, 2, 3, 0, 0, 6});
  }
  SECTION("a k past every diagonal") {
    ModelBuilder m(14);
    m.input("x", kFloat, {"3", "3"})
        .initializerInts("k", {}, {std::numeric_limits<int64_t>::min()})
        .node("Trilu", {"x", "k"}, {"y"}, {Attr::integer("upper", 0)})
        .output("y");
    CHECK(valuesOf(runModel(m, {x})) == std::vector<double>(9, 0));
  }
  auto vector = unary(14, "Trilu", kFloat, {"3"});
  CHECK_THAT(errorOf(vector.bytes()), Contains("input [3] needs rank 2 or more"));
}

TEST_CASE("EyeLike puts ones on diagonal k in the asked dtype", "[onnx][index]") {
  auto m = unary(9, "EyeLike", kFloat, {"2", "4"},
                 {Attr::integer("k", 1), Attr::integer("dtype", kInt64)});
  HostTensor y = runModel(m, {tensor({2, 4}, {9, 9, 9, 9, 9, 9, 9, 9})});
  CHECK(y.dtype == DType::i64);
  CHECK(valuesOf(y) == std::vector<double>{0, 1, 0, 0, 0, 0, 1, 0});
  auto same = unary(9, "EyeLike", kFloat, {"3", "2"}, {Attr::integer("k", -1)});
  HostTensor z = runModel(same, {tensor({3, 2}, {5, 5, 5, 5, 5, 5})});
  CHECK(z.dtype == DType::f32);
  CHECK(valuesOf(z) == std::vector<double>{0, 0, 1, 0, 0, 1});
  auto cube = unary(9, "EyeLike", kFloat, {"2", "2", "2"});
  CHECK_THAT(errorOf(cube.bytes()), Contains("input [2, 2, 2] must be 2-D"));
}

// ---------------------------------------------------------------- Range, Size

namespace {

ModelBuilder range(std::vector<int64_t> bounds) {
  ModelBuilder m(11);
  m.initializerInts("start", {}, {bounds[0]})
      .initializerInts("limit", {}, {bounds[1]})
      .initializerInts("delta", {}, {bounds[2]})
      .node("Range", {"start", "limit", "delta"}, {"y"})
      .output("y");
  return m;
}

} // namespace

TEST_CASE("Range folds to a literal when its bounds are known", "[onnx][index]") {
  auto down = range({10, 3, -3});
  ir::Graph g = importOnnxBytes(down.bytes());
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.node(g.outputs()[0]).kind == ir::OpKind::Constant);
  HostTensor y = ir::interpret(g, {})[0];
  CHECK(y.dtype == DType::i64);
  CHECK(valuesOf(y) == std::vector<double>{10, 7, 4});
  auto none = range({3, 10, -1});
  CHECK(ir::interpret(importOnnxBytes(none.bytes()), {})[0].shape == std::vector<int64_t>{0});
  ModelBuilder real(11);
  real.initializer("start", {}, {1})
      .initializer("limit", {}, {2})
      .initializer("delta", {}, {0.25})
      .node("Range", {"start", "limit", "delta"}, {"y"})
      .output("y");
  CHECK(valuesOf(ir::interpret(importOnnxBytes(real.bytes()), {})[0]) ==
        std::vector<double>{1, 1.25, 1.5, 1.75});
}

TEST_CASE("Range refuses a zero delta and bounds computed at run time", "[onnx][index]") {
  auto zero = range({0, 5, 0});
  CHECK_THAT(errorOf(zero.bytes()), Contains("delta must not be 0"));
  ModelBuilder runtime(11);
  runtime.input("start", kInt64, {})
      .initializerInts("limit", {}, {5})
      .initializerInts("delta", {}, {1})
      .node("Range", {"start", "limit", "delta"}, {"y"})
      .output("y");
  CHECK_THAT(errorOf(runtime.bytes()), Contains("input 0 (start) must be known when the model is "
                                        "imported, but it is the graph input \"start\""));
}

TEST_CASE("Size folds a static shape and computes a symbolic one", "[onnx][index]") {
  auto fixed = unary(13, "Size", kFloat, {"3", "4"});
  ir::Graph g = importOnnxBytes(fixed.bytes());
  CHECK(g.node(g.outputs()[0]).kind == ir::OpKind::Constant);
  HostTensor y = ir::interpret(g, {tensor({3, 4}, std::vector<double>(12, 0))})[0];
  CHECK(y.dtype == DType::i64);
  CHECK(y.shape.empty());
  CHECK(valuesOf(y) == std::vector<double>{12});
  auto symbolic = unary(1, "Size", kFloat, {"B", "3", "S"});
  HostTensor z =
      runModel(symbolic, {tensor({2, 3, 5}, std::vector<double>(30, 1))}, {{"B", 2}, {"S", 5}});
  CHECK(z.shape.empty());
  CHECK(valuesOf(z) == std::vector<double>{30});
  auto empty = unary(13, "Size", kFloat, {"N", "0"});
  ir::Graph e = importOnnxBytes(empty.bytes());
  CHECK(e.node(e.outputs()[0]).kind == ir::OpKind::Constant);
  CHECK(valuesOf(ir::interpret(e, {tensor({4, 0}, {})}, {{"N", 4}})[0]) == std::vector<double>{0});
}

// ---------------------------------------------------------------- Tile, DepthToSpace, SpaceToDepth

TEST_CASE("Tile repeats each axis its count of times", "[onnx][index]") {
  HostTensor x = tensor({2, 2}, {1, 2, 3, 4});
  auto tile = [&](std::vector<int64_t> repeats) {
    ModelBuilder m(13);
    m.input("x", kFloat, {"2", "2"})
        .initializerInts("repeats", {static_cast<int64_t>(repeats.size())}, repeats)
        .node("Tile", {"x", "repeats"}, {"y"})
        .output("y");
    return runModel(m, {x});
  };
  HostTensor y = tile({2, 3});
  CHECK(y.shape == std::vector<int64_t>{4, 6});
  CHECK(valuesOf(y) == std::vector<double>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                                           1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  CHECK(valuesOf(tile({1, 1})) == std::vector<double>{1, 2, 3, 4});
  CHECK(tile({0, 2}).shape == std::vector<int64_t>{0, 4});

  ModelBuilder scalar(13);
  scalar.input("x", kFloat, {})
      .initializerInts("repeats", {0}, {})
      .node("Tile", {"x", "repeats"}, {"y"})
      .output("y");
  CHECK(valuesOf(runModel(scalar, {tensor({}, {4})})) == std::vector<double>{4});

  ModelBuilder opset1(1);
  opset1.input("x", kFloat, {"2", "2"})
      .initializerInts("tiles", {}, {2})
      .initializerInts("axis", {}, {0})
      .node("Tile", {"x", "tiles", "axis"}, {"y"})
      .output("y");
  CHECK(valuesOf(runModel(opset1, {x})) == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4});
}

TEST_CASE("Tile over a symbolic dim and its errors", "[onnx][index]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {"B", "1"})
      .initializerInts("repeats", {2}, {2, 3})
      .node("Tile", {"x", "repeats"}, {"y"})
      .output("y");
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(ir::shapeStr(g.node(g.outputs()[0]).type.shape) == "[2*B, 3]");
  HostTensor y = ir::interpret(g, {tensor({2, 1}, {1, 2})}, {{"B", 2}})[0];
  CHECK(valuesOf(y) == std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});

  ModelBuilder shortRepeats(13);
  shortRepeats.input("x", kFloat, {"2", "2"})
      .initializerInts("repeats", {1}, {2})
      .node("Tile", {"x", "repeats"}, {"y"})
      .output("y");
  CHECK_THAT(errorOf(shortRepeats.bytes()), Contains("repeats [2] needs one entry per axis of the input"));
  ModelBuilder negative(13);
  negative.input("x", kFloat, {"2"})
      .initializerInts("repeats", {1}, {-1})
      .node("Tile", {"x", "repeats"}, {"y"})
      .output("y");
  CHECK_THAT(errorOf(negative.bytes()), Contains("repeats [-1] has a negative count"));
}

TEST_CASE("DepthToSpace in DCR and CRD order, SpaceToDepth its inverse", "[onnx][index]") {
  // x[1, 8, 1, 1]: channel c holds c
  HostTensor x = tensor({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto d2s = [&](int opset, std::vector<Attr> attrs) {
    attrs.push_back(Attr::integer("blocksize", 2));
    auto m = unary(opset, "DepthToSpace", kFloat, {"1", "8", "1", "1"}, attrs);
    return runModel(m, {x});
  };
  // DCR: channel = (b1 * 2 + b2) * 2 + c'; CRD: channel = c' * 4 + b1 * 2 + b2
  HostTensor dcr = d2s(11, {});
  CHECK(dcr.shape == std::vector<int64_t>{1, 2, 2, 2});
  CHECK(valuesOf(dcr) == std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(valuesOf(d2s(1, {})) == std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(valuesOf(d2s(13, {Attr::text("mode", "CRD")})) ==
        std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});

  // x[1, 1, 2, 4] = 0..7 row-major; block (b1, b2) goes to channel b1 * 2 + b2
  auto s2d =
      unary(13, "SpaceToDepth", kFloat, {"1", "1", "2", "4"}, {Attr::integer("blocksize", 2)});
  HostTensor space = tensor({1, 1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  HostTensor depth = runModel(s2d, {space});
  CHECK(depth.shape == std::vector<int64_t>{1, 4, 1, 2});
  CHECK(valuesOf(depth) == std::vector<double>{0, 2, 1, 3, 4, 6, 5, 7});

  ModelBuilder roundTrip(13);
  roundTrip.input("x", kFloat, {"N", "1", "2", "4"})
      .node("SpaceToDepth", {"x"}, {"d"}, {Attr::integer("blocksize", 2)})
      .node("DepthToSpace", {"d"}, {"y"}, {Attr::integer("blocksize", 2)})
      .output("y");
  CHECK(valuesOf(runModel(roundTrip, {space}, {{"N", 1}})) == valuesOf(space));
}

TEST_CASE("DepthToSpace and SpaceToDepth refuse bad blocks, modes and ranks", "[onnx][index]") {
  auto uneven =
      unary(13, "DepthToSpace", kFloat, {"1", "6", "1", "1"}, {Attr::integer("blocksize", 2)});
  CHECK_THAT(errorOf(uneven.bytes()), Contains("channels C (6) does not divide by 4"));
  auto mode = unary(13, "DepthToSpace", kFloat, {"1", "4", "1", "1"},
                    {Attr::integer("blocksize", 2), Attr::text("mode", "RCD")});
  CHECK_THAT(errorOf(mode.bytes()), Contains("mode \"RCD\" must be \"DCR\" or \"CRD\""));
  auto missing = unary(13, "SpaceToDepth", kFloat, {"1", "1", "2", "2"});
  CHECK_THAT(errorOf(missing.bytes()), Contains("the required attribute \"blocksize\" (INT) is missing"));
  auto zero =
      unary(13, "SpaceToDepth", kFloat, {"1", "1", "2", "2"}, {Attr::integer("blocksize", 0)});
  CHECK_THAT(errorOf(zero.bytes()), Contains("blocksize 0 must be positive"));
  auto odd =
      unary(13, "SpaceToDepth", kFloat, {"1", "1", "3", "2"}, {Attr::integer("blocksize", 2)});
  CHECK_THAT(errorOf(odd.bytes()), Contains("height H (3) does not divide by 2"));
  auto symbolic =
      unary(13, "SpaceToDepth", kFloat, {"1", "1", "H", "2"}, {Attr::integer("blocksize", 2)});
  CHECK_THAT(errorOf(symbolic.bytes()),
             Contains("height H of symbolic size H is not supported: it must divide by 2"));
  // a blocksize whose square is past int64 is refused before any b * b
  for (const char* op : {"DepthToSpace", "SpaceToDepth"}) {
    auto huge =
        unary(13, op, kFloat, {"1", "4", "2", "2"}, {Attr::integer("blocksize", int64_t(1) << 32)});
    CHECK_THAT(errorOf(huge.bytes()), Contains("blocksize 4294967296 is too large"));
  }
  auto flat = unary(13, "DepthToSpace", kFloat, {"4", "4"}, {Attr::integer("blocksize", 2)});
  CHECK_THAT(errorOf(flat.bytes()), Contains("input [4, 4] must be 4-D [N, C, H, W]"));
}
