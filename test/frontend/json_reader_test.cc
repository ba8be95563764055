// The JSON graph reader and writer: expansions, implicit broadcasting, op order, round trips.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "frontend/json_reader.h"
#include "frontend/json_writer.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "weft/error.h"

using namespace weft;
using weft::frontend::readGraphJson;
using weft::frontend::writeGraphJson;

namespace {

std::string printed(const std::string& text) {
  auto g = readGraphJson(text, "t.json");
  return ir::printGraph(g.graph, g.name);
}

/// read(write(g)) prints exactly as g.
void checkRoundTrip(const std::string& text) {
  auto g = readGraphJson(text, "t.json");
  std::string written = writeGraphJson(g.graph, g.name);
  auto back = readGraphJson(written, "written.json");
  CHECK(ir::printGraph(back.graph, back.name) == ir::printGraph(g.graph, g.name));
  CHECK(writeGraphJson(back.graph, back.name) == written);
}

} // namespace

TEST_CASE("softmax expands into max, sub, exp, sum and div") {
  std::string text =
      R"({"name": "sm", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 128]}],
    "ops": [{"name": "y", "op": "softmax", "inputs": ["x"]}], "outputs": ["y"]})";
  CHECK(printed(text) == R"(graph sm(%x: f32[B, 128]) {
  %y.max = reduce[max, axes=[1]](%x) : f32[B]
  %y.max_broadcast = broadcast_in_dim[dims=[0]](%y.max) : f32[B, 128]
  %y.shifted = sub(%x, %y.max_broadcast) : f32[B, 128]
  %y.exp = exp(%y.shifted) : f32[B, 128]
  %y.sum = reduce[sum, axes=[1]](%y.exp) : f32[B]
  %y.sum_broadcast = broadcast_in_dim[dims=[0]](%y.sum) : f32[B, 128]
  %y = div(%y.exp, %y.sum_broadcast) : f32[B, 128]
  return %y
}
)");
}

TEST_CASE("implicit numpy broadcasting becomes broadcast_in_dim") {
  std::string text =
      R"({"name": "b", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 1, 4]},
    {"name": "v", "dtype": "f32", "shape": [3, 1]}],
    "ops": [{"name": "s", "op": "constant", "dtype": "f32", "shape": [], "value": 2},
            {"name": "y", "op": "add", "inputs": ["x", "v"]},
            {"name": "z", "op": "mul", "inputs": ["y", "s"]}], "outputs": ["z"]})";
  CHECK(printed(text) == R"(graph b(%x: f32[B, 1, 4], %v: f32[3, 1]) {
  %s = constant[2]() : f32[]
  %y.broadcast0 = broadcast_in_dim[dims=[0, 1, 2]](%x) : f32[B, 3, 4]
  %y.broadcast1 = broadcast_in_dim[dims=[1, 2]](%v) : f32[B, 3, 4]
  %y = add(%y.broadcast0, %y.broadcast1) : f32[B, 3, 4]
  %z.broadcast1 = broadcast_in_dim[dims=[]](%s) : f32[B, 3, 4]
  %z = mul(%y, %z.broadcast1) : f32[B, 3, 4]
  return %z
}
)");
}

TEST_CASE("ops in any order are sorted by their inputs, keeping file order among ready ops") {
  std::string text = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "ops": [{"name": "c", "op": "neg", "inputs": ["b"]},
            {"name": "b", "op": "exp", "inputs": ["a"]},
            {"name": "d", "op": "abs", "inputs": ["x"]},
            {"name": "a", "op": "tanh", "inputs": ["x"]}], "outputs": ["c", "d"]})";
  CHECK(printed(text) == R"(graph t(%x: f32[4]) {
  %d = abs(%x) : f32[4]
  %a = tanh(%x) : f32[4]
  %b = exp(%a) : f32[4]
  %c = neg(%b) : f32[4]
  return %c, %d
}
)");
}

TEST_CASE("HLO spellings of primitives are accepted and written back as IR names") {
  std::string text = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "ops": [{"name": "y", "op": "divide", "inputs": ["x", "x"]},
            {"name": "z", "op": "power", "inputs": ["y", "x"]}], "outputs": ["z"]})";
  auto g = readGraphJson(text, "t.json");
  CHECK(g.graph.node(*g.graph.find("y")).kind == ir::OpKind::Div);
  CHECK(g.graph.node(*g.graph.find("z")).kind == ir::OpKind::Pow);
  CHECK(writeGraphJson(g.graph, "t").find("\"op\": \"pow\"") != std::string::npos);
}

TEST_CASE("every IR primitive round-trips through the writer") {
  checkRoundTrip(R"({"name": "all", "inputs": [
      {"name": "x", "dtype": "f32", "shape": ["B", 4]}, {"name": "w", "dtype": "f32", "shape": [4, 3]},
      {"name": "i", "dtype": "i32", "shape": [2, 3]}, {"name": "h", "dtype": "bf16", "shape": ["B*S"]}],
    "ops": [
      {"name": "c", "op": "constant", "dtype": "f32", "shape": [2, 2], "values": [0.1, -2.5e-8, "inf", "nan"]},
      {"name": "ninf", "op": "constant", "dtype": "f64", "shape": [], "value": "-inf"},
      {"name": "io", "op": "iota", "dtype": "i32", "shape": [2, 3], "axis": 1},
      {"name": "cv", "op": "convert", "inputs": ["io"], "dtype": "f32"},
      {"name": "cmp", "op": "compare", "inputs": ["io", "i"], "direction": "LT"},
      {"name": "sel", "op": "select", "inputs": ["cmp", "io", "i"]},
      {"name": "cl", "op": "clamp", "inputs": ["io", "sel", "i"]},
      {"name": "d", "op": "dot", "inputs": ["x", "w"]},
      {"name": "t", "op": "transpose", "inputs": ["d"], "perm": [1, 0]},
      {"name": "r", "op": "reshape", "inputs": ["t"], "shape": ["3*B"]},
      {"name": "sl", "op": "slice", "inputs": ["w"], "starts": [1, 0], "limits": [-1, 3], "strides": [2, 1]},
      {"name": "cat", "op": "concatenate", "inputs": ["sl", "w"], "axis": 0},
      {"name": "p", "op": "pad", "inputs": ["cat"], "low": [1, 0], "high": [0, 2], "value": -1.5},
      {"name": "red", "op": "reduce", "inputs": ["p"], "kind": "max", "axes": [-1, 0]},
      {"name": "bc", "op": "broadcast_in_dim", "inputs": ["red"], "shape": [5], "dims": []},
      {"name": "ga", "op": "gather", "inputs": ["w", "i"], "axes": [-2], "dims": [1]},
      {"name": "e", "op": "exp", "inputs": ["h"]}],
    "outputs": ["c", "ninf", "cv", "cl", "r", "bc", "ga", "e"]})");
}

TEST_CASE("the writer emits one op per line with the attributes the reader takes") {
  std::string text = R"({"name": "w", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 8]}],
    "ops": [{"name": "m", "op": "mean", "inputs": ["x"], "axes": [1]}], "outputs": ["m"]})";
  auto g = readGraphJson(text, "t.json");
  CHECK(writeGraphJson(g.graph, g.name) == R"({
  "name": "w",
  "inputs": [
    {"name": "x", "dtype": "f32", "shape": ["B", 8]}
  ],
  "ops": [
    {"name": "m.mean_sum", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [1]},
    {"name": "m.mean_count", "op": "constant", "dtype": "f32", "shape": ["B"], "value": 8},
    {"name": "m", "op": "div", "inputs": ["m.mean_sum", "m.mean_count"]}
  ],
  "outputs": ["m"]
}
)");
}

TEST_CASE("convenience ops compute what their formulas say") {
  auto run = [](const std::string& op, const std::string& attrs, std::vector<double> x,
                std::vector<double> extra = {}) {
    std::string text =
        R"({"inputs": [{"name": "x", "dtype": "f64", "shape": [1, 4]})" +
        std::string(extra.empty() ? "" : R"(, {"name": "g", "dtype": "f64", "shape": [4]})") +
        R"(], "ops": [{"name": "y", "op": ")" + op + R"(", "inputs": ["x")" +
        (extra.empty() ? "" : R"(, "g")") + "]" + attrs + R"(}], "outputs": ["y"]})";
    auto g = readGraphJson(text, "t.json");
    HostTensor in(ir::DType::f64, {1, 4});
    for (int i = 0; i < 4; ++i)
      in.set(i, x[i]);
    std::vector<HostTensor> ins{in};
    if (!extra.empty()) {
      HostTensor e(ir::DType::f64, {4});
      for (int i = 0; i < 4; ++i)
        e.set(i, extra[i]);
      ins.push_back(e);
    }
    auto out = ir::interpret(g.graph, ins);
    std::vector<double> v;
    for (int64_t i = 0; i < out[0].numElements(); ++i)
      v.push_back(out[0].get(i));
    return v;
  };
  using Catch::Matchers::Approx;
  // layer norm of [1, 2, 3, 4]: mean 2.5, variance 1.25.
  double r = 1 / std::sqrt(1.25 + 1e-5);
  CHECK_THAT(run("layer_norm", "", {1, 2, 3, 4}),
             Approx(std::vector<double>{-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}));
  CHECK_THAT(run("layer_norm", R"(, "epsilon": 0)", {1, 2, 3, 4}, {1, 2, 1, 2}),
             Approx(std::vector<double>{-1.5 * r, -1.0 * r, 0.5 * r, 3.0 * r}).epsilon(1e-5));
  double q = 1 / std::sqrt(7.5 + 1e-6); // mean square of [1, 2, 3, 4] is 7.5
  CHECK_THAT(run("rms_norm", "", {1, 2, 3, 4}),
             Approx(std::vector<double>{q, 2 * q, 3 * q, 4 * q}));
  CHECK_THAT(
      run("gelu", "", {-1, 0, 1, 2}),
      Approx(std::vector<double>{-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416}));
  CHECK_THAT(
      run("gelu_tanh", "", {-1, 0, 1, 2}),
      Approx(std::vector<double>{-0.15880800939172324, 0, 0.8411919906082768, 1.9545976940871754}));
  CHECK_THAT(
      run("silu", "", {-1, 0, 1, 2}),
      Approx(std::vector<double>{-0.2689414213699951, 0, 0.7310585786300049, 1.7615941559557649}));
  CHECK_THAT(run("log_softmax", "", {0, 0, 0, 0}), Approx(std::vector<double>(4, -std::log(4.0))));
  CHECK_THAT(run("mean", R"(, "axes": [1])", {1, 2, 3, 6}), Approx(std::vector<double>{3}));
  CHECK_THAT(run("variance", R"(, "axes": [-1])", {1, 2, 3, 6}), Approx(std::vector<double>{3.5}));
  CHECK_THAT(run("bias_add", "", {1, 2, 3, 4}, {10, 20, 30, 40}),
             Approx(std::vector<double>{11, 22, 33, 44}));
}

TEST_CASE("a 2x3 softmax has the hand-computed values") {
  std::string text = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}],
    "ops": [{"name": "y", "op": "softmax", "inputs": ["x"]}], "outputs": ["y"]})";
  auto g = readGraphJson(text, "t.json");
  HostTensor x(ir::DType::f32, {2, 3});
  std::vector<double> in{1, 2, 3, 0, 0, 0};
  for (int i = 0; i < 6; ++i)
    x.set(i, in[i]);
  auto y = ir::interpret(g.graph, {x})[0];
  // softmax([1, 2, 3]) = [e^-2, e^-1, 1] / (e^-2 + e^-1 + 1)
  std::vector<double> want{0.09003057317, 0.24472847105, 0.66524095577, 1 / 3.0, 1 / 3.0, 1 / 3.0};
  for (int i = 0; i < 6; ++i)
    CHECK(y.get(i) == Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("the graph name defaults to the file's stem") {
  auto g = readGraphJson(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "ops": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y"]})",
                         "dir/my_graph.json");
  CHECK(g.name == "my_graph");
}

namespace {

/// The one output of a graph of x: f64[3, 4], x[r][c] = 1 + 10r + c (no element is 0, the value
/// an index out of range gives), and integer index inputs i0, i1, ... (dtype, shape, values),
/// computing `op` (a JSON op object named "y"), run on the interpreter.
struct IndexInput {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
};
HostTensor runIndexing(const std::string& op, const std::vector<IndexInput>& indices) {
  std::string inputs = R"({"name": "x", "dtype": "f64", "shape": [3, 4]})";
  HostTensor x(ir::DType::f64, {3, 4});
  for (int64_t e = 0; e < 12; ++e)
    x.set(e, 1 + 10 * (e / 4) + e % 4);
  std::vector<HostTensor> in{x};
  for (size_t j = 0; j < indices.size(); ++j) {
    const IndexInput& idx = indices[j];
    inputs += fmt::format(R"(, {{"name": "i{}", "dtype": "{}", "shape": [{}]}})", j, idx.dtype,
                          fmt::join(idx.shape, ", "));
    HostTensor t(*ir::parseDType(idx.dtype), idx.shape);
    REQUIRE(t.numElements() == int64_t(idx.values.size()));
    for (size_t e = 0; e < idx.values.size(); ++e)
      t.setInt(int64_t(e), idx.values[e]);
    in.push_back(t);
  }
  auto g = readGraphJson(R"({"inputs": [)" + inputs + R"(], "ops": [)" + op +
                             R"(], "outputs": ["y"]})",
                         "t.json");
  return ir::interpret(g.graph, in)[0];
}

std::vector<double> valuesOf(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t e = 0; e < t.numElements(); ++e)
    out.push_back(t.get(e));
  return out;
}

} // namespace

TEST_CASE("gather reads the operand where its index operands say, 0 out of range") {
  // One index operand along axis -1 (= 1), operand axis 0 at result dim 0: y[r][k] = x[r][i0[r][k]].
  // A raw gather does not wrap: -1 is out of range.
  HostTensor y = runIndexing(
      R"({"name": "y", "op": "gather", "inputs": ["x", "i0"], "axes": [-1], "dims": [0]})",
      {{"i32", {3, 2}, {0, 3, -1, 2, 4, 1}}});
  CHECK(y.shape == std::vector<int64_t>{3, 2});
  CHECK(valuesOf(y) == std::vector<double>{1, 4, 0, 13, 0, 22});
  // Operand axis 1 at result dim 0 (a transposed read): y[c][k] = x[i0[c][k]][c].
  y = runIndexing(
      R"({"name": "y", "op": "gather", "inputs": ["x", "i0"], "axes": [0], "dims": [0]})",
      {{"i64", {4, 2}, {0, 2, 1, 1, 2, -1, 3, 0}}});
  CHECK(valuesOf(y) == std::vector<double>{1, 21, 12, 12, 23, 0, 0, 4});
  // Both axes from index operands, in the order given (axes [1, 0]: i0 picks the column).
  y = runIndexing(
      R"({"name": "y", "op": "gather", "inputs": ["x", "i0", "i1"], "axes": [1, 0], "dims": []})",
      {{"i32", {4}, {3, 1, 0, 4}}, {"i8", {4}, {2, 0, 3, 1}}});
  CHECK(valuesOf(y) == std::vector<double>{24, 2, 0, 0}); // row 3 and column 4 are out
}

TEST_CASE("take and take_along_axis are numpy's, negative indices wrapping once") {
  // take along axis 0 (the default): y[a][b][c] = x[i0[a][b]][c]; -3 is row 0, -4 is out.
  HostTensor y = runIndexing(R"({"name": "y", "op": "take", "inputs": ["x", "i0"]})",
                             {{"i32", {2, 2}, {2, -3, -4, 0}}});
  CHECK(y.shape == std::vector<int64_t>{2, 2, 4});
  CHECK(valuesOf(y) ==
        std::vector<double>{21, 22, 23, 24, 1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4});
  // Along the last axis with i8 indices (widened before the wrap): 3, -1 = 3, 4 is out.
  y = runIndexing(R"({"name": "y", "op": "take", "inputs": ["x", "i0"], "axis": -1})",
                  {{"i8", {3}, {3, -1, 4}}});
  CHECK(y.shape == std::vector<int64_t>{3, 3});
  CHECK(valuesOf(y) == std::vector<double>{4, 4, 0, 14, 14, 0, 24, 24, 0});
  // A scalar index drops the axis: x[-1] is row 2.
  y = runIndexing(R"({"name": "y", "op": "take", "inputs": ["x", "i0"], "axis": 0})",
                  {{"i64", {}, {-1}}});
  CHECK(y.shape == std::vector<int64_t>{4});
  CHECK(valuesOf(y) == std::vector<double>{21, 22, 23, 24});

  // take_along_axis: y[r][k] = x[r][i0[r][k]].
  y = runIndexing(
      R"({"name": "y", "op": "take_along_axis", "inputs": ["x", "i0"], "axis": 1})",
      {{"i32", {3, 2}, {3, -1, 0, -5, 4, 1}}});
  CHECK(y.shape == std::vector<int64_t>{3, 2});
  CHECK(valuesOf(y) == std::vector<double>{4, 4, 11, 0, 0, 22});
  // Fewer rows than x: the leading rows are read (ONNX GatherElements).
  y = runIndexing(
      R"({"name": "y", "op": "take_along_axis", "inputs": ["x", "i0"], "axis": -1})",
      {{"i64", {2, 1}, {2, -4}}});
  CHECK(y.shape == std::vector<int64_t>{2, 1});
  CHECK(valuesOf(y) == std::vector<double>{3, 11});
}

TEST_CASE("bad gather, take and take_along_axis fields are one-line errors naming op and field") {
  // Inputs x: f32[3, 4], i: <indexDtype>[3, 2], n: f32[N, 4], k: i32[4, 2], v: i32[3]; `op` is
  // the op "y".
  auto error = [](const std::string& op, const std::string& indexDtype = "i32") {
    std::string text = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [3, 4]},
        {"name": "i", "dtype": ")" + indexDtype + R"(", "shape": [3, 2]},
        {"name": "n", "dtype": "f32", "shape": ["N", 4]},
        {"name": "k", "dtype": "i32", "shape": [4, 2]},
        {"name": "v", "dtype": "i32", "shape": [3]}],
      "ops": [)" + op + R"(], "outputs": ["y"]})";
    try {
      readGraphJson(text, "t.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  struct Case {
    std::string op, indexDtype, start, says;
  };
  const std::string gather = R"({"name": "y", "op": "gather", "inputs": ["x", "i"], )";
  const std::string take = R"({"name": "y", "op": "take", "inputs": )";
  const std::string along = R"({"name": "y", "op": "take_along_axis", "inputs": )";
  const std::vector<Case> cases = {
      {gather + R"("axes": [2], "dims": [0]})", "i32", "t.json: op \"y\" (gather): ",
       "field \"axes\": axis 2 is out of range for rank 2 (allowed: -2..1)"},
      {gather + R"("axes": [0, 1], "dims": []})", "i32", "t.json: op \"y\" (gather): ",
       "axes [0, 1] names 2 axis(es) but the gather has 1 index operand(s)"},
      {gather + R"("axes": "a", "dims": [0]})", "i32", "t.json: op \"y\" (gather): ",
       "field \"axes\": expected an array of integers, got the string \"a\""},
      {R"({"name": "y", "op": "gather", "inputs": ["x", "i", "i"], "axes": [1, -1], "dims": []})",
       "i32", "t.json: op \"y\" (gather): ", "axes [1, 1] names axis 1 twice"},
      {gather + R"("axes": [0]})", "i32", "t.json: op \"y\" (gather): ",
       "field \"dims\" is missing; it must be an array of integers"},
      {gather + R"("axes": [0], "dims": []})", "i32", "t.json: op \"y\" (gather): ",
       "dims [] has 0 entries; the operand's 1 axis(es) not in axes need one each"},
      {gather + R"("axes": [0], "dims": [3]})", "i32", "t.json: op \"y\" (gather): ",
       "gather dims entry 3 is out of range for rank 2"},
      {gather + R"("axes": [0], "dims": [0]})", "i32", "t.json: op \"y\" (gather): ",
       "dims [0] maps operand axis 1 (size 4) to result dimension 0, of size 3"},
      {gather + R"("axes": [0], "dims": [1]})", "f32", "t.json: op \"y\" (gather): ",
       "field \"inputs\": inputs[1] \"i\" is f32[3, 2]; indices are integers"},
      {R"({"name": "y", "op": "gather", "inputs": ["x"], "axes": [0], "dims": [0]})", "i32",
       "t.json: op \"y\" (gather): ",
       "field \"inputs\": gather takes an operand and at least one index operand, got 1"},
      {take + R"(["x", "i"], "axis": 2})", "i32", "t.json: op \"y\" (take): ",
       "field \"axis\": axis 2 is out of range for rank 2 (allowed: -2..1)"},
      {take + R"(["x", "i"], "axes": [0]})", "i32", "t.json: op \"y\" (take): ",
       "unknown field \"axes\""},
      {take + R"(["x", "i"]})", "f32", "t.json: op \"y\" (take): ",
       "field \"inputs\": inputs[1] \"i\" is f32[3, 2]; indices are integers"},
      {take + R"(["x", "i"]})", "bool", "t.json: op \"y\" (take): ",
       "field \"inputs\": inputs[1] \"i\" is bool[3, 2]; indices are integers"},
      {take + R"(["n", "i"]})", "i32", "t.json: op \"y\" (take): ",
       "along an axis of symbolic size N: a negative index needs its size"},
      {take + R"(["x"]})", "i32", "t.json: op \"y\" (take): ",
       "field \"inputs\": take takes two inputs (x, indices), got 1"},
      {along + R"(["x", "i"], "axis": -3})", "i32", "t.json: op \"y\" (take_along_axis): ",
       "field \"axis\": axis -3 is out of range for rank 2 (allowed: -2..1)"},
      {along + R"(["x", "i"], "axis": 1})", "f16", "t.json: op \"y\" (take_along_axis): ",
       "field \"inputs\": inputs[1] \"i\" is f16[3, 2]; indices are integers"},
      {along + R"(["x", "x"], "axis": 0})", "i32", "t.json: op \"y\" (take_along_axis): ",
       "field \"inputs\": inputs[1] \"x\" is f32[3, 4]; indices are integers"},
      {along + R"(["x", "k"], "axis": 1})", "i32", "t.json: op \"y\" (take_along_axis): ",
       "indices have size 4 along axis 0 where the data has 3"},
      {along + R"(["x", "v"], "axis": 1})", "i32", "t.json: op \"y\" (take_along_axis): ",
       "indices have rank 1 but the data has rank 2"},
  };
  for (const Case& c : cases) {
    INFO(c.op);
    std::string e = error(c.op, c.indexDtype);
    CHECK(e.find('\n') == std::string::npos);
    CHECK(e.rfind(c.start, 0) == 0);
    CHECK_THAT(e, Catch::Contains(c.says));
  }
}
