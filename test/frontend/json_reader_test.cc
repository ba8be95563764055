// The JSON graph reader and writer: expansions, implicit broadcasting, op order, round trips.
#include <catch2/catch.hpp>

#include "frontend/json_reader.h"
#include "frontend/json_writer.h"
#include "ir/interpreter.h"
#include "ir/printer.h"

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
      {"name": "e", "op": "exp", "inputs": ["h"]}],
    "outputs": ["c", "ninf", "cv", "cl", "r", "bc", "e"]})");
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
