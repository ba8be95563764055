// The ONNX operators that read elements at run-time positions (Gather, GatherElements, GatherND,
// ReverseSequence, TopK by rounds) lowered to the IR's gather: each model is imported, run on
// the reference interpreter and compared with values worked out by hand, and the imported
// graph is checked to hold a gather and no reduce, so that a lowering back to a one-hot sum
// over the whole axis (which reads every element for every result) fails here.
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

/// How many of g's ops are of `kind`.
size_t countOps(const ir::Graph& g, ir::OpKind kind) {
  size_t n = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.node(static_cast<ir::NodeId>(i)).kind == kind) ++n;
  return n;
}

/// Imports the model, checks that it reads through gathers (at least `gathers` of them) and
/// reduces nothing, and runs it on the reference interpreter.
std::vector<HostTensor> runGathering(ModelBuilder& m, const std::vector<HostTensor>& inputs,
                                     size_t gathers = 1, const ir::Binding& binding = {}) {
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(countOps(g, ir::OpKind::Gather) >= gathers);
  CHECK(countOps(g, ir::OpKind::Reduce) == 0);
  return ir::interpret(g, inputs, binding);
}

} // namespace

// ---------------------------------------------------------------- Gather

TEST_CASE("Gather by run-time indices is a gather: negative ones count from the end once, "
          "ones out of range give 0",
          "[onnx][gather]") {
  // data [3, 2] = [[1, 2], [3, 4], [5, 6]]
  HostTensor data = tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  SECTION("axis 0") {
    ModelBuilder m(13);
    m.input("data", kFloat, {"3", "2"})
        .input("i", kInt64, {"5"})
        .node("Gather", {"data", "i"}, {"y"})
        .output("y");
    // 2 and -1 name row 2; -3 row 0. 3 and -4 are out of range: ONNX calls such an index an
    // error, which data cannot be checked for at import; weft reads 0 for it.
    HostTensor i = tensor({5}, {2, -1, 3, -4, -3}, DType::i64);
    std::vector<HostTensor> y = runGathering(m, {data, i});
    REQUIRE(y.size() == 1);
    CHECK(y[0].shape == std::vector<int64_t>{5, 2});
    CHECK(valuesOf(y[0]) == std::vector<double>{5, 6, 5, 6, 0, 0, 0, 0, 1, 2});
  }
  SECTION("axis 1, 2-D int32 indices: the indices' shape replaces the axis") {
    ModelBuilder m(13);
    m.input("data", kFloat, {"3", "2"})
        .input("i", kInt32, {"2", "2"})
        .node("Gather", {"data", "i"}, {"y"}, {Attr::integer("axis", 1)})
        .output("y");
    HostTensor i = tensor({2, 2}, {1, -2, 2, -1}, DType::i32); // 2 is out of range: 0
    std::vector<HostTensor> y = runGathering(m, {data, i});
    CHECK(y[0].shape == std::vector<int64_t>{3, 2, 2});
    CHECK(valuesOf(y[0]) == std::vector<double>{2, 1, 0, 2, 4, 3, 0, 4, 6, 5, 0, 6});
  }
  SECTION("scalar index, int64 data (an embedding row)") {
    ModelBuilder m(13);
    m.input("data", kInt64, {"3", "2"})
        .input("i", kInt64, {})
        .node("Gather", {"data", "i"}, {"y"})
        .output("y");
    HostTensor d = tensor({3, 2}, {10, -20, 30, -40, 50, -60}, DType::i64);
    std::vector<HostTensor> y = runGathering(m, {d, tensor({}, {-2}, DType::i64)});
    CHECK(y[0].shape == std::vector<int64_t>{2});
    CHECK(valuesOf(y[0]) == std::vector<double>{30, -40});
  }
}

TEST_CASE("Gather refuses float indices and a symbolic axis", "[onnx][gather]") {
  ModelBuilder floats(13);
  floats.input("data", kFloat, {"3", "2"})
      .input("i", kFloat, {"2"})
      .node("Gather", {"data", "i"}, {"y"})
      .output("y");
  CHECK_THAT(errorOf(floats.bytes()), Contains("indices must be integers"));
  ModelBuilder symbolic(13);
  symbolic.input("data", kFloat, {"N", "2"})
      .input("i", kInt64, {"2"})
      .node("Gather", {"data", "i"}, {"y"})
      .output("y");
  CHECK_THROWS_WITH(importOnnxBytes(symbolic.bytes()), Contains("symbolic size N"));
}

// ---------------------------------------------------------------- GatherElements

TEST_CASE("GatherElements is a gather along its axis, and indices may be shorter elsewhere",
          "[onnx][gather]") {
  // data [3, 3] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
  HostTensor data = tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  SECTION("axis 0, indices [2, 3]: y[i][j] = data[idx[i][j]][j]") {
    ModelBuilder m(13);
    m.input("data", kFloat, {"3", "3"})
        .input("i", kInt64, {"2", "3"})
        .node("GatherElements", {"data", "i"}, {"y"})
        .output("y");
    // -1 is row 2; 3 is out of range (ONNX: an error; weft: 0)
    HostTensor i = tensor({2, 3}, {1, 0, -1, 2, 3, 0}, DType::i64);
    std::vector<HostTensor> y = runGathering(m, {data, i});
    CHECK(y[0].shape == std::vector<int64_t>{2, 3});
    CHECK(valuesOf(y[0]) == std::vector<double>{4, 2, 9, 7, 0, 3});
  }
  SECTION("axis 1, indices [3, 1] and longer along the axis: [2, 4]") {
    ModelBuilder m(11);
    m.input("data", kFloat, {"3", "3"})
        .input("i", kInt32, {"2", "4"})
        .node("GatherElements", {"data", "i"}, {"y"}, {Attr::integer("axis", 1)})
        .output("y");
    HostTensor i = tensor({2, 4}, {2, 2, -3, 1, 0, -1, 1, -4}, DType::i32);
    std::vector<HostTensor> y = runGathering(m, {data, i});
    CHECK(y[0].shape == std::vector<int64_t>{2, 4});
    CHECK(valuesOf(y[0]) == std::vector<double>{3, 3, 1, 2, 4, 6, 5, 0});
  }
  SECTION("a symbolic dim of the indices unifies with data's") {
    ModelBuilder m(13);
    m.input("data", kFloat, {"N", "3"})
        .input("i", kInt64, {"M", "1"})
        .node("GatherElements", {"data", "i"}, {"y"}, {Attr::integer("axis", 1)})
        .output("y");
    ir::Graph g = importOnnxBytes(m.bytes());
    CHECK(countOps(g, ir::OpKind::Gather) == 1);
    CHECK(countOps(g, ir::OpKind::Reduce) == 0);
    // One symbol is left for both dims: a binding gives it (named either way) once.
    std::vector<HostTensor> y =
        ir::interpret(g, {data, tensor({3, 1}, {2, 0, -2}, DType::i64)}, {{"N", 3}, {"M", 3}});
    CHECK(valuesOf(y[0]) == std::vector<double>{3, 4, 8});
  }
}

TEST_CASE("GatherElements refuses indices longer than data off the axis", "[onnx][gather]") {
  ModelBuilder m(13);
  m.input("data", kFloat, {"2", "3"})
      .input("i", kInt64, {"3", "3"})
      .node("GatherElements", {"data", "i"}, {"y"}, {Attr::integer("axis", 1)})
      .output("y");
  CHECK_THAT(errorOf(m.bytes()), Contains("exceed data"));
}

// ---------------------------------------------------------------- GatherND

TEST_CASE("GatherND is one gather, an index operand per indexed axis", "[onnx][gather]") {
  SECTION("batch_dims 0, whole tuples: [2, 2] -> elements") {
    ModelBuilder m(12);
    m.input("data", kFloat, {"2", "2"})
        .input("i", kInt64, {"3", "2"})
        .node("GatherND", {"data", "i"}, {"y"})
        .output("y");
    // data [[1, 2], [3, 4]]; tuples (0, 0), (-1, 1) = (1, 1), (2, 0) out of range: 0
    std::vector<HostTensor> y = runGathering(
        m, {tensor({2, 2}, {1, 2, 3, 4}), tensor({3, 2}, {0, 0, -1, 1, 2, 0}, DType::i64)});
    CHECK(y[0].shape == std::vector<int64_t>{3});
    CHECK(valuesOf(y[0]) == std::vector<double>{1, 4, 0});
  }
  SECTION("batch_dims 1, one index per tuple: slices of each batch entry's own data") {
    ModelBuilder m(12);
    m.input("data", kInt32, {"2", "3", "2"})
        .input("i", kInt64, {"2", "2", "1"})
        .node("GatherND", {"data", "i"}, {"y"}, {Attr::integer("batch_dims", 1)})
        .output("y");
    // data[0] = [[0, 1], [2, 3], [4, 5]], data[1] = [[6, 7], [8, 9], [10, 11]]
    HostTensor d = tensor({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, DType::i32);
    // batch 0 takes rows 2 and -3 (= 0); batch 1 rows 1 and 3 (out of range: a slice of 0)
    HostTensor i = tensor({2, 2, 1}, {2, -3, 1, 3}, DType::i64);
    std::vector<HostTensor> y = runGathering(m, {d, i});
    CHECK(y[0].shape == std::vector<int64_t>{2, 2, 2});
    CHECK(valuesOf(y[0]) == std::vector<double>{4, 5, 0, 1, 8, 9, 0, 0});
  }
  SECTION("batch_dims 1, whole tuples, a symbolic batch") {
    ModelBuilder m(13);
    m.input("data", kFloat, {"B", "2", "2"})
        .input("i", kInt64, {"B", "2"})
        .node("GatherND", {"data", "i"}, {"y"}, {Attr::integer("batch_dims", 1)})
        .output("y");
    // data[0] = [[1, 2], [3, 4]], data[1] = [[5, 6], [7, 8]]; tuples (1, 0) and (-1, -1)
    std::vector<HostTensor> y =
        runGathering(m, {tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                         tensor({2, 2}, {1, 0, -1, -1}, DType::i64)},
                     1, {{"B", 2}});
    CHECK(y[0].shape == std::vector<int64_t>{2});
    CHECK(valuesOf(y[0]) == std::vector<double>{3, 8});
  }
}

// ---------------------------------------------------------------- ReverseSequence, TopK

TEST_CASE("ReverseSequence gathers along the time axis", "[onnx][gather]") {
  ModelBuilder m(10);
  m.input("x", kFloat, {"4", "2"})
      .input("lens", kInt64, {"2"})
      .node("ReverseSequence", {"x", "lens"}, {"y"},
            {Attr::integer("batch_axis", 1), Attr::integer("time_axis", 0)})
      .output("y");
  // batch 0 = [0, 1, 2, 3] reversed over its first 3; batch 1 = [10, 11, 12, 13] over all 4
  HostTensor x = tensor({4, 2}, {0, 10, 1, 11, 2, 12, 3, 13});
  std::vector<HostTensor> y = runGathering(m, {x, tensor({2}, {3, 4}, DType::i64)});
  CHECK(valuesOf(y[0]) == std::vector<double>{2, 13, 1, 12, 0, 11, 3, 10});
}

TEST_CASE("TopK by rounds gathers its values at the picked positions", "[onnx][gather]") {
  // A row of 17 and k = 2 (2 * 8 < 17): picked in rounds, each a reduce; the values a gather.
  ModelBuilder m(11);
  m.input("x", kFloat, {"1", "17"})
      .initializerInts("k", {1}, {2})
      .node("TopK", {"x", "k"}, {"v", "i"})
      .output("v")
      .output("i");
  std::vector<double> row(17, 0);
  row[5] = 7, row[11] = 9, row[16] = 7; // 9 first, then the first 7
  ir::Graph g = importOnnxBytes(m.bytes());
  CHECK(countOps(g, ir::OpKind::Gather) == 1);
  std::vector<HostTensor> y = ir::interpret(g, {tensor({1, 17}, row)});
  CHECK(valuesOf(y[0]) == std::vector<double>{9, 7});
  CHECK(valuesOf(y[1]) == std::vector<double>{11, 5});
}
