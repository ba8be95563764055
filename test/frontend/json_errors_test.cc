// One test per class of bad input: each gives one InputError naming the file, the op and the
// field, with what is allowed instead.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "frontend/json_reader.h"
#include "weft/error.h"

using weft::InputError;
using weft::frontend::readGraphJson;

namespace {

std::string errorOf(const std::string& text) {
  try {
    readGraphJson(text, "g.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A one-input graph {x: f32[shape]} with the given ops and outputs.
std::string graph(const std::string& ops, const std::string& outputs = R"(["y"])",
                  const std::string& shape = "[2, 3]") {
  return R"({"inputs": [{"name": "x", "dtype": "f32", "shape": )" + shape + R"(}], "ops": [)" +
         ops + R"(], "outputs": )" + outputs + "}";
}

} // namespace

TEST_CASE("invalid JSON reports the line and column") {
  CHECK(errorOf("{\"inputs\": [\n  {\"name\": \"x\"},\n  ]}") ==
        "g.json:3:3: invalid JSON: syntax error while parsing value - unexpected ']'; expected "
        "'[', '{', or a "
        "literal");
  CHECK(errorOf("") ==
        "g.json:1:1: invalid JSON: syntax error while parsing value - unexpected end of input; "
        "expected '[', '{', or a literal");
  CHECK(errorOf("[1, 2]") == "g.json: the graph must be a JSON object with \"inputs\", \"ops\" and "
                             "\"outputs\", got an array");
}

TEST_CASE("an unknown op suggests close names and where the ops are listed") {
  CHECK(errorOf(graph(R"({"name": "y", "op": "softmx", "inputs": ["x"]})")) ==
        "g.json: op \"y\" (softmx): field \"op\": unknown op \"softmx\" (did you mean "
        "\"softmax\"?); the ops are "
        "listed in docs/graph-format.md");
  CHECK(errorOf(graph(R"({"name": "y", "op": "frobnicate", "inputs": ["x"]})")) ==
        "g.json: op \"y\" (frobnicate): field \"op\": unknown op \"frobnicate\"; the ops are "
        "listed in "
        "docs/graph-format.md");
  CHECK(errorOf(graph(R"({"name": "y", "op": "parameter"})")) ==
        "g.json: op \"y\" (parameter): field \"op\": graph inputs are declared in \"inputs\", not "
        "as ops");
}

TEST_CASE("missing fields") {
  CHECK(errorOf(graph(R"({"name": "y", "op": "reduce", "inputs": ["x"], "kind": "sum"})")) ==
        "g.json: op \"y\" (reduce): field \"axes\" is missing; it must be an array of integers");
  CHECK(errorOf(graph(R"({"op": "exp", "inputs": ["x"]})")) ==
        "g.json: ops[0]: field \"name\" is missing; it must be a string");
  CHECK(
      errorOf(
          R"({"inputs": [], "ops": [{"name": "y", "op": "iota", "dtype": "i32", "shape": [3], "axis": 0}]})") ==
      "g.json: graph: field \"outputs\" is missing; it must be an array of value names");
  CHECK(errorOf(graph(R"({"name": "y", "op": "constant", "dtype": "f32", "shape": [2]})")) ==
        "g.json: op \"y\" (constant): a constant needs exactly one of \"value\" (one number, splat "
        "over the "
        "shape) and \"values\" (all elements, row-major)");
}

TEST_CASE("an empty name is refused for inputs and weights as for ops") {
  // The builder would give an unnamed value a fresh name (parameter.1), which --inputs would
  // then look for as parameter.1.npy.
  CHECK(errorOf(R"({"inputs": [{"name": "", "dtype": "f32", "shape": [2]}], "ops": [],
    "outputs": [""]})") == "g.json: inputs[0]: field \"name\" is empty; give the input a name");
  CHECK(errorOf(graph(R"({"name": "", "op": "exp", "inputs": ["x"]})")) ==
        "g.json: ops[0]: field \"name\" is empty; give the op a name");
}

TEST_CASE("mistyped fields and attributes") {
  CHECK(errorOf(graph(
            R"({"name": "y", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": "1"})")) ==
        "g.json: op \"y\" (reduce): field \"axes\": expected an array of integers, got the string "
        "\"1\"");
  CHECK(errorOf(graph(
            R"({"name": "y", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [1.5]})")) ==
        "g.json: op \"y\" (reduce): field \"axes\": element 0 is 1.5; expected an integer");
  CHECK(errorOf(graph(
            R"({"name": "y", "op": "reduce", "inputs": ["x"], "kind": "avg", "axes": [1]})")) ==
        "g.json: op \"y\" (reduce): field \"kind\": unknown reduction \"avg\"; use one of sum, "
        "max, min, prod, "
        "any, all, logsumexp");
  CHECK(
      errorOf(graph(R"({"name": "y", "op": "layer_norm", "inputs": ["x"], "epsilon": "small"})")) ==
      "g.json: op \"y\" (layer_norm): field \"epsilon\": expected a number (or \"inf\", \"-inf\", "
      "\"nan\"), got "
      "the string \"small\"");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": "x"})")) ==
        "g.json: op \"y\" (exp): field \"inputs\": expected an array of value names, got the "
        "string \"x\"");
  CHECK(errorOf(graph(R"({"name": "y", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [1],
                          "keepdims": true})")) ==
        "g.json: op \"y\" (reduce): unknown field \"keepdims\"; the fields allowed here are "
        "\"axes\", \"doc\", "
        "\"inputs\", \"kind\", \"name\", \"op\"");
  CHECK(
      errorOf(
          R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}], "ops": [], "outputs": []})") ==
      "g.json: input \"x\": field \"dtype\": unknown dtype \"float32\"; use one of f32, f16, bf16, "
      "f64, i8, "
      "i32, i64, bool");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})", R"(["y"])", "[-2]")) ==
        "g.json: input \"x\": field \"shape\": dim 0 is -2; a dim is a non-negative integer or a "
        "symbol product "
        "such as \"B\", \"B*S\" or \"2*B\"");
  CHECK(errorOf(graph(R"({"name": "y", "op": "softmax", "inputs": ["x"], "axis": 2})")) ==
        "g.json: op \"y\" (softmax): field \"axis\": axis 2 is out of range for rank 2 (allowed: "
        "-2..1)");
}

TEST_CASE("shape and dtype mismatches name the op and the operands") {
  CHECK(errorOf(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 768]},
                               {"name": "m", "dtype": "f32", "shape": ["B"]}],
                    "ops": [{"name": "y", "op": "div", "inputs": ["x", "m"]}], "outputs": ["y"]})") ==
        "g.json: op \"y\" (div): inputs[1] \"m\" has shape [B] which does not broadcast with the "
        "other inputs "
        "([B, 768], [B]); sizes must match or be 1 (numpy rules), right-aligned");
  CHECK(
      errorOf(
          R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}, {"name": "i", "dtype": "i32", "shape": [4]}],
                    "ops": [{"name": "y", "op": "add", "inputs": ["x", "i"]}], "outputs": ["y"]})") ==
      "g.json: op \"y\" (add): operand 1 has dtype i32 but operand 0 has dtype f32; convert one "
      "explicitly");
  CHECK(errorOf(graph(R"({"name": "y", "op": "reshape", "inputs": ["x"], "shape": [4]})")) ==
        "g.json: op \"y\" (reshape): cannot reshape [2, 3] (6 elements) into [4] (4 elements)");
  CHECK(
      errorOf(
          R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4, 8]}, {"name": "g", "dtype": "f32", "shape": [4]}],
                    "ops": [{"name": "y", "op": "layer_norm", "inputs": ["x", "g"]}], "outputs": ["y"]})") ==
      "g.json: op \"y\" (layer_norm): inputs[1] \"g\" (gamma) has shape [4] but layer_norm needs "
      "[8] (the last "
      "axis of inputs[0], [4, 8])");
  CHECK(errorOf(graph(R"({"name": "y", "op": "layer_norm", "inputs": ["x"]})", R"(["y"])",
                      R"([2, "H"])")) == "g.json: op \"y\" (layer_norm): axis 1 of inputs[0] has "
                                         "symbolic size H; layer_norm divides by the axis "
                                         "size, which must be static");
  // A composite checks its input's dtype before expanding: the error names the file's op, not
  // a node of its expansion (it was op "y.exp" (exp)).
  CHECK(errorOf(R"({"inputs": [{"name": "x", "dtype": "i32", "shape": [4]}],
                    "ops": [{"name": "y", "op": "softmax", "inputs": ["x"]}], "outputs": ["y"]})") ==
        "g.json: op \"y\" (softmax): input 0 has dtype i32 but softmax takes floating-point "
        "values; convert it first");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x", "x"]})")) ==
        "g.json: op \"y\" (exp): field \"inputs\": exp takes one input, got 2");
}

TEST_CASE("a number too large for a double is invalid JSON, with its position") {
  CHECK(errorOf("{\"inputs\": [],\n \"x\": 1e999}") ==
        "g.json:2:7: invalid JSON: the number 1e999 does not fit in a double");
}

TEST_CASE("inputs fuzzing found once stay InputErrors") {
  // Each file of fuzz_regressions/json/ once crashed the reader; now each is one clear error.
  // (npy/ is read back by npy_test.cc, onnx/ by test/onnx/importer_test.cc.)
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           WEFT_SOURCE_DIR "/test/frontend/fuzz_regressions/json")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(entry.path().filename().string());
    CHECK(errorOf(text).rfind("g.json", 0) == 0);
    ++n;
  }
  CHECK(n >= 1);
}

TEST_CASE("undefined input names and outputs") {
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["xx"]})")) ==
        "g.json: op \"y\" (exp): field \"inputs\": inputs[0] \"xx\" is not defined (did you mean "
        "\"x\"?); "
        "it must name a graph input or an op");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})", R"(["z"])")) ==
        "g.json: graph: field \"outputs\": outputs[0] \"z\" is not defined; it must name a graph "
        "input or an op");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})", R"(["y", "y"])")) ==
        "g.json: graph: field \"outputs\": \"y\" is listed twice; list each output once");
}

TEST_CASE("duplicate names") {
  CHECK(errorOf(graph(R"({"name": "x", "op": "exp", "inputs": ["x"]})", R"(["x"])")) ==
        "g.json: op \"x\" (exp): the name \"x\" is already used by input \"x\"; every input and op "
        "needs its own "
        "name");
  CHECK(
      errorOf(graph(
          R"({"name": "y", "op": "exp", "inputs": ["x"]}, {"name": "y", "op": "neg", "inputs": ["x"]})")) ==
      "g.json: op \"y\" (neg): the name \"y\" is already used by op \"y\" (exp); every input and "
      "op needs its "
      "own name");
  // A user name that collides with a name the expansion of another op generates.
  CHECK(
      errorOf(graph(
          R"({"name": "s.max", "op": "exp", "inputs": ["x"]}, {"name": "s", "op": "softmax", "inputs": ["x"]})",
          R"(["s"])")) == "g.json: op \"s\" (softmax): op \"s.max\" (reduce): the name \"s.max\" "
                          "is already used by another value");
}

TEST_CASE("a cycle names the ops on it") {
  CHECK(errorOf(graph(R"({"name": "a", "op": "add", "inputs": ["x", "c"]},
                         {"name": "b", "op": "exp", "inputs": ["a"]},
                         {"name": "c", "op": "neg", "inputs": ["b"]},
                         {"name": "y", "op": "neg", "inputs": ["c"]})")) ==
        "g.json: op \"b\" (exp): the ops form a cycle: \"b\" -> \"c\" -> \"a\" -> \"b\" (each "
        "feeds the next); an "
        "op cannot use its own result");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["y"]})")) ==
        "g.json: op \"y\" (exp): the ops form a cycle: \"y\" -> \"y\" (each feeds the next); an op "
        "cannot use its "
        "own result");
}

TEST_CASE("sizes whose element count overflows int64") {
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})", R"(["y"])",
                      "[4294967296, 4294967296]")) ==
        "g.json: input \"x\": field \"shape\": [4294967296, 4294967296]: size overflow: 4294967296 "
        "* 4294967296 "
        "does not fit in int64");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})", R"(["y"])",
                      "[9223372036854775808]")) ==
        "g.json: input \"x\": field \"shape\": dim 0 is 9223372036854775808; a dim is a "
        "non-negative integer or a "
        "symbol product such as \"B\", \"B*S\" or \"2*B\"");
}

TEST_CASE("empty graphs") {
  CHECK(errorOf(graph("", R"(["x"])")) == "g.json: graph: field \"ops\" is empty; a graph needs at "
                                          "least one op to compute its outputs");
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})", "[]")) ==
        "g.json: graph: field \"outputs\" is empty; name at least one input or op whose value the "
        "graph returns");
  CHECK(errorOf("{}") ==
        "g.json: graph: field \"inputs\" is missing; it must be an array of {\"name\", \"dtype\", "
        "\"shape\"} objects");
}

TEST_CASE("integer constants must fit their dtype exactly: one error naming the op and field") {
  auto constant = [](const std::string& dtype, const std::string& value) {
    return graph(R"({"name": "c", "op": "constant", "dtype": ")" + dtype +
                     R"(", "shape": [2, 3], "value": )" + value + "}",
                 R"(["c"])");
  };
  CHECK_THAT(errorOf(constant("i8", "300")),
             Catch::Contains("op \"c\" (constant)") &&
                 Catch::Contains("field \"value\": 300 does not fit i8 (-128 to 127)"));
  CHECK_THAT(errorOf(constant("i32", "1e20")), Catch::Contains("does not fit i32"));
  CHECK_THAT(errorOf(constant("i64", "9223372036854775807")),
             Catch::Contains("field \"value\": 9223372036854775807 cannot be held exactly"));
  CHECK_THAT(errorOf(constant("i64", "9007199254740993")), Catch::Contains("cannot be held exactly"));
  CHECK_THAT(errorOf(constant("i32", "2.5")), Catch::Contains("2.5 is not a i32 value"));
  CHECK_THAT(errorOf(constant("i32", "\"nan\"")), Catch::Contains("is not a i32 value"));
  CHECK_THAT(errorOf(constant("bool", "2")), Catch::Contains("does not fit bool"));
  CHECK(errorOf(constant("i64", "9007199254740992")) == "(no error)"); // 2^53 is exact
  CHECK(errorOf(constant("i8", "-128")) == "(no error)");
  CHECK(errorOf(constant("f32", "1e20")) == "(no error)");
  // A table names the element.
  std::string table = graph(
      R"({"name": "c", "op": "constant", "dtype": "i8", "shape": [3], "values": [1, 2, 128]})",
      R"(["c"])");
  CHECK_THAT(errorOf(table), Catch::Contains("field \"values\": element 2 (128) does not fit i8"));
}

TEST_CASE("a key given twice in one object is an error naming the key, the line and column") {
  // nlohmann keeps the last one: "shape": [4], "shape": [5] read as f32[5].
  CHECK(errorOf("{\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\",\n  \"shape\": [4], \"shape\": "
                "[5]}],\n \"ops\": [{\"name\": \"y\", \"op\": \"exp\", \"inputs\": [\"x\"]}], "
                "\"outputs\": [\"y\"]}") ==
        "g.json:2:17: invalid JSON: key \"shape\" appears twice in one object; give each field "
        "once");
  CHECK(errorOf(R"({"inputs": [], "ops": [], "inputs": []})") ==
        "g.json:1:27: invalid JSON: key \"inputs\" appears twice in one object; give each field "
        "once");
  // The same key in different objects, and a string value that looks like a key, are fine.
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["x"]})")) == "(no error)");
  CHECK(errorOf(graph(R"({"name": "name", "op": "exp", "inputs": ["x"]})", R"(["name"])")) ==
        "(no error)");
}

TEST_CASE("an undefined 100,000-character name is reported at once, without suggestions") {
  // "did you mean" compared it with every declared name by a quadratic edit distance: 38 s.
  std::string name(100000, 'z');
  auto start = std::chrono::steady_clock::now();
  std::string e = errorOf(graph(R"({"name": "y", "op": "exp", "inputs": [")" + name + R"("]})"));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(e.rfind("g.json: op \"y\" (exp): field \"inputs\": inputs[0] \"zzzz", 0) == 0);
  CHECK(e.find("did you mean") == std::string::npos);
  CHECK(seconds < 5);
  // Short names still get their suggestion.
  CHECK(errorOf(graph(R"({"name": "y", "op": "exp", "inputs": ["xx"]})"))
            .find("(did you mean \"x\"?)") != std::string::npos);
}

TEST_CASE("composite ops check their input's dtype first and name the op the user wrote") {
  // gelu on i8 was reported at its internal constant "y.rsqrt2".
  auto onI8 = [](const std::string& op) {
    return errorOf(R"({"inputs": [{"name": "x", "dtype": "i8", "shape": [2, 3]}], "ops": [
      {"name": "y", "op": ")" +
                   op + R"(", "inputs": ["x"]}], "outputs": ["y"]})");
  };
  for (const char* op :
       {"gelu", "gelu_tanh", "silu", "softmax", "log_softmax", "layer_norm", "rms_norm"}) {
    INFO(op);
    CHECK(onI8(op) == fmt::format("g.json: op \"y\" ({}): input 0 has dtype i8 but {} takes "
                                  "floating-point values; convert it first",
                                  op, op));
  }
  std::string mean =
      errorOf(R"({"inputs": [{"name": "x", "dtype": "bool", "shape": [2, 3]}], "ops": [
      {"name": "y", "op": "mean", "inputs": ["x"], "axes": [1]}], "outputs": ["y"]})");
  CHECK(mean == "g.json: op \"y\" (mean): input 0 has dtype bool but mean takes numbers; convert "
                "it first");
  std::string gamma = errorOf(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]},
      {"name": "g", "dtype": "f16", "shape": [3]}], "ops": [
      {"name": "y", "op": "layer_norm", "inputs": ["x", "g"]}], "outputs": ["y"]})");
  CHECK(gamma == "g.json: op \"y\" (layer_norm): gamma has dtype f16 but the normalized input has "
                 "dtype f32; convert one of them");
  std::string bias = errorOf(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]},
      {"name": "b", "dtype": "i32", "shape": [3]}], "ops": [
      {"name": "y", "op": "bias_add", "inputs": ["x", "b"]}], "outputs": ["y"]})");
  CHECK(bias == "g.json: op \"y\" (bias_add): inputs[1] \"b\" (bias) has dtype i32 but inputs[0] "
                "has dtype f32; convert one of them");
}

TEST_CASE("a device or FIFO is refused as a graph or weights file, never read without end") {
  using weft::frontend::readGraphFile;
  CHECK_THROWS_WITH(readGraphFile("/dev/zero"),
                    "/dev/zero: cannot open the graph file: it is not a regular file (a device, "
                    "FIFO or socket); give a file");
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "weft_json_errors_dev";
  std::filesystem::create_directories(dir);
  std::filesystem::path g = dir / "w.json";
  std::ofstream(g) << R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "weights": [{"name": "w", "dtype": "f32", "shape": [4]}], "weights_file": "/dev/zero",
    "ops": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y"]})";
  CHECK_THROWS_WITH(readGraphFile(g.string()),
                    Catch::Contains("/dev/zero: cannot open the weights file: it is not a regular "
                                    "file"));
}
