// The public API as an embedder sees it: this file is compiled with include/ alone on its
// include path (CMakeLists.txt), so it can use nothing but <weft/...>. The builder's reading
// side and its errors, compiling and running on the simulator against host arithmetic, one
// program per binding, what a Program tells (plan text, PTX, timings), JSON graphs, and
// binding from input shapes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include <weft/weft.h>

using namespace weft;

namespace {

/// Specialised programs (one per binding), what these tests are about; the default is
/// generic (checked below, and tested in test/runtime/shape_sweep_test.cc).
CompileOptions simOptions(Policy policy = Policy::AStitch) {
  CompileOptions o;
  o.policy = policy;
  o.cacheDir = "off";
  o.shapes = ShapeMode::Specialized;
  return o;
}

/// y = exp(x - max(x)) / sum(...) over the rows of x [B, 16].
Graph softmax() {
  Graph g("softmax");
  Shape rows = {"B"}, full = {"B", 16};
  Value x = g.parameter("x", DType::f32, full);
  Value shifted = g.sub(x, g.broadcastInDim(g.reduceMax(x, {1}), full, {0}), "shifted");
  Value e = g.exp(shifted);
  g.addOutput(g.div(e, g.broadcastInDim(g.reduceSum(e, {1}, "sum"), full, {0}), "y"));
  return g;
}

HostTensor rows(int64_t b) {
  HostTensor t(DType::f32, {b, 16});
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, std::sin(0.3 * double(i)) * 3.0);
  return t;
}

double worstSoftmaxError(const HostTensor& x, const HostTensor& y) {
  double worst = 0;
  for (int64_t r = 0; r < x.shape[0]; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < 16; ++c)
      m = std::max(m, x.get(r * 16 + c));
    for (int64_t c = 0; c < 16; ++c)
      sum += std::exp(x.get(r * 16 + c) - m);
    for (int64_t c = 0; c < 16; ++c)
      worst = std::max(worst, std::abs(y.get(r * 16 + c) - std::exp(x.get(r * 16 + c) - m) / sum));
  }
  return worst;
}

} // namespace

TEST_CASE("the graph builder reads back what was built", "[public]") {
  Graph g = softmax();
  CHECK(g.name() == "softmax");
  REQUIRE(g.inputs().size() == 1);
  REQUIRE(g.outputs().size() == 1);
  Value x = g.inputs()[0], y = g.outputs()[0];
  CHECK(g.valueName(x) == "x");
  CHECK(g.valueName(y) == "y");
  CHECK(g.dtype(y) == DType::f32);
  CHECK(g.shape(y) == Shape{"B", 16});
  CHECK(g.shape(*g.find("sum")) == Shape{"B"});
  CHECK_FALSE(g.find("nothing"));
  CHECK(g.symbols() == std::vector<std::string>{"B"});
  CHECK(g.str().find("%y") != std::string::npos);
  CHECK(g.str().find("f32[B, 16]") != std::string::npos);

  Dim d("2*S*B");
  CHECK(d.factor() == 2);
  CHECK(d.symbols() == std::vector<std::string>{"B", "S"});
  CHECK(d.str() == "2*B*S");
  CHECK(Dim(768).isStatic());
  CHECK(Dim(768).str() == "768");

  Graph copy = g; // a copy is a graph of its own
  copy.addOutput(copy.neg(copy.inputs()[0], "minus_x"));
  CHECK(copy.outputs().size() == 2);
  CHECK(g.outputs().size() == 1);
  CHECK_FALSE(g.find("minus_x"));
}

TEST_CASE("a dim evaluates under a binding, and says what is wrong with one", "[public]") {
  CHECK(Dim("2*B*S").evaluate({{"B", 3}, {"S", 5}}) == 30);
  CHECK(Dim(7).evaluate({}) == 7);
  CHECK_THROWS_WITH(Dim("B*S").evaluate({{"B", 3}}), Catch::Contains("symbol \"S\" is not bound"));
  CHECK_THROWS_WITH(Dim("B").evaluate({{"B", -1}}), Catch::Contains("sizes are 0 or more"));
  CHECK_THROWS_WITH(Dim("B*S").evaluate({{"B", int64_t(1) << 40}, {"S", int64_t(1) << 40}}),
                    Catch::Contains("size overflow"));
}

TEST_CASE("the graph builder rejects what the IR would", "[public]") {
  Graph g;
  Value x = g.parameter("x", DType::f32, {4, 8});
  Value v = g.parameter("v", DType::f32, {8});
  CHECK_THROWS_AS(Dim("B+1"), InputError);
  CHECK_THROWS_WITH(g.add(x, v), Catch::Contains("add"));   // shapes differ: broadcast first
  CHECK_THROWS_AS(g.add(x, v), InputError);
  CHECK_THROWS_AS(g.exp(Value()), InputError);              // a Value no op made
  Graph other;
  Value foreign = other.parameter("a", DType::f32, {1});
  CHECK_THROWS_AS(g.neg(g.exp(x), "x"), InputError);        // a name already used
  Graph small;
  CHECK_THROWS_AS(small.neg(foreign), InputError);          // not a value of this graph
  // ...even where its id names a value here: it would silently be another value.
  Value y = small.parameter("y", DType::f32, {1});
  CHECK(y.id() == foreign.id());
  CHECK(y != foreign);
  CHECK_THROWS_WITH(small.neg(foreign), Catch::Contains("made by another graph"));
  // A copy takes the values its source had made, not those either makes afterwards.
  Graph copy = small;
  Value z = copy.neg(y);
  Value w = small.exp(y);
  CHECK(z.id() == w.id());
  CHECK_THROWS_AS(copy.neg(w), InputError);
  CHECK_THROWS_AS(small.neg(z), InputError);
  CHECK_NOTHROW(copy.exp(z));
  Graph moved = std::move(copy); // the same graph: its values stay its own
  CHECK_NOTHROW(moved.exp(z));
  CHECK_THROWS_AS(g.reduceSum(x, {2}), InputError);         // no axis 2
}

TEST_CASE("a compiled graph runs on the simulator, one program per binding", "[public]") {
  Graph g = softmax();
  for (Policy policy : {Policy::None, Policy::Xla, Policy::AStitch}) {
    INFO("policy " << policyName(policy));
    auto compiled = compile(g, simOptions(policy));
    auto device = makeDevice("sim", compiled->options().device);
    Executable exe(compiled, *device);
    for (int64_t b : {3, 37}) {
      HostTensor x = rows(b);
      std::vector<HostTensor> y = exe.run({x});
      REQUIRE(y.size() == 1);
      CHECK(y[0].shape == std::vector<int64_t>{b, 16});
      CHECK(worstSoftmaxError(x, y[0]) < 1e-5);
    }
    CHECK(compiled->programCount() == 2);
    exe.run({rows(3)});
    CHECK(compiled->programCount() == 2); // B = 3 again: the program is reused
  }
  // The default: one generic program for every binding.
  CompileOptions o;
  CHECK(o.shapes == ShapeMode::Generic);
  o.cacheDir = "off";
  auto generic = compile(g, o);
  auto device = makeDevice("sim", generic->options().device);
  Executable exe(generic, *device);
  for (int64_t b : {3, 37, 100})
    CHECK(worstSoftmaxError(rows(b), exe.run({rows(b)})[0]) < 1e-5);
  CHECK(generic->programCount() == 1);
}

TEST_CASE("a program tells its plan, PTX and compile times", "[public]") {
  auto compiled = compile(softmax(), simOptions(Policy::None));
  Program p = compiled->program({{"B", 5}, {"unused", 1}});
  CHECK(p.binding() == Binding{{"B", 5}});
  Plan plan = p.plan();
  CHECK(plan.kernelCount() >= 2); // none: one kernel per memory-intensive op
  CHECK(plan.str().find("policy none") != std::string::npos);
  CHECK(plan.dot().find("digraph") != std::string::npos);
  CHECK(p.kernelNames().size() == size_t(plan.kernelCount()));
  for (const std::string& name : p.kernelNames())
    CHECK(p.ptx().find(".entry " + name) != std::string::npos);
  CHECK(p.llvmIr().empty()); // kept only when asked for
  CHECK_FALSE(p.fromDiskCache());
  Program::Timings t = p.timings();
  CHECK(t.planMs > 0);
  CHECK(t.ptxMs > 0);
  CHECK(t.totalMs >= t.planMs);
  CHECK_THROWS_AS(compiled->program({}), InputError); // B unbound

  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  Executable::Timing timing = exe.time({rows(5)}, 2);
  CHECK(timing.kernels.size() == size_t(plan.kernelCount()));
  CHECK(exe.programFor({{"B", 5}}).ptx() == p.ptx());
}

TEST_CASE("JSON graphs load through the public API", "[public]") {
  const std::string json = R"({"name": "scaled", "inputs": [
      {"name": "x", "dtype": "f32", "shape": ["N"]}],
    "ops": [{"name": "two", "op": "constant", "dtype": "f32", "shape": [], "value": 2},
            {"name": "y", "op": "mul", "inputs": ["x", "two"]}],
    "outputs": ["y"]})";
  Graph g = parseGraphJson(json, "scaled.json");
  CHECK(g.name() == "scaled");
  CHECK(g.symbols() == std::vector<std::string>{"N"});
  auto compiled = compile(g, simOptions());
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  HostTensor x(DType::f32, {5});
  for (int64_t i = 0; i < 5; ++i)
    x.set(i, double(i) - 2);
  HostTensor y = exe.run({x})[0];
  for (int64_t i = 0; i < 5; ++i)
    CHECK(y.get(i) == 2 * (double(i) - 2));

  CHECK_THROWS_WITH(parseGraphJson(R"({"inputs": []})", "bad.json"),
                    Catch::StartsWith("bad.json"));
  CHECK_THROWS_AS(loadGraphJson("/nonexistent/graph.json"), InputError);
}

TEST_CASE("symbols are bound from the inputs' shapes", "[public]") {
  Graph g = softmax();
  CHECK(inferBinding(g, {rows(9)}) == Binding{{"B", 9}});
  CHECK_THROWS_AS(inferBinding(g, {HostTensor(DType::f32, {9, 15})}), InputError);
  CHECK_THROWS_AS(inferBinding(g, {HostTensor(DType::f64, {9, 16})}), InputError);
  CHECK_THROWS_AS(inferBinding(g, {}), InputError);
}

namespace {

/// A tensor of `t` holding `values`, row-major.
HostTensor tensorOf(DType t, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostTensor out(t, std::move(shape));
  REQUIRE(out.numElements() == int64_t(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    out.set(int64_t(i), values[i]);
  return out;
}

std::vector<double> elements(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.push_back(t.get(i));
  return out;
}

} // namespace

TEST_CASE("gather, take and takeAlongAxis read what their indices name, 0 out of range",
          "[public]") {
  // x[r][c] = 1 + 10r + c over [3, 4]: every element differs from 0, the out-of-range value.
  Graph g("indexing");
  Value x = g.parameter("x", DType::f32, {3, 4});
  Value rows = g.parameter("rows", DType::i32, {4});
  Value cols = g.parameter("cols", DType::i32, {4});
  Value k = g.parameter("k", DType::i64, {4, 2});
  Value t = g.parameter("t", DType::i32, {2, 2});
  Value c = g.parameter("c", DType::i8, {3});
  Value a = g.parameter("a", DType::i32, {3, 2});
  // Both axes from index values (axis -1 is 1); a raw gather does not wrap -1: it is out.
  Value both = g.gather(x, {rows, cols}, {0, -1}, {}, "both");
  // Axis 0 from k, operand axis 1 at result dim 0: result[c][j] = x[k[c][j]][c].
  Value across = g.gather(x, {k}, {0}, {0}, "across");
  Value takeRows = g.take(x, t, 0, "take_rows");    // [2, 2, 4]
  Value takeCols = g.take(x, c, -1, "take_cols");   // [3, 3], i8 indices
  Value along = g.takeAlongAxis(g.neg(x, "minus_x"), a, 1, "along"); // from a computed value
  CHECK(g.shape(both) == Shape{4});
  CHECK(g.shape(across) == Shape{4, 2});
  CHECK(g.shape(takeRows) == Shape{2, 2, 4});
  CHECK(g.shape(takeCols) == Shape{3, 3});
  CHECK(g.shape(along) == Shape{3, 2});
  CHECK(g.dtype(takeCols) == DType::f32);
  CHECK(g.find("take_rows.wrapped")); // the composite's intermediates take the op's name
  g.setOutputs({both, across, takeRows, takeCols, along});

  std::vector<double> xs;
  for (int r = 0; r < 3; ++r)
    for (int col = 0; col < 4; ++col)
      xs.push_back(1 + 10 * r + col);
  std::vector<HostTensor> in = {
      tensorOf(DType::f32, {3, 4}, xs),
      tensorOf(DType::i32, {4}, {2, 0, 3, 1}),
      tensorOf(DType::i32, {4}, {3, 1, 0, -1}),
      tensorOf(DType::i64, {4, 2}, {0, 2, 1, 1, 2, -1, 3, 0}),
      tensorOf(DType::i32, {2, 2}, {2, -3, -4, 0}),
      tensorOf(DType::i8, {3}, {3, -1, 4}),
      tensorOf(DType::i32, {3, 2}, {3, -1, 0, -5, 4, 1}),
  };
  const std::vector<std::vector<double>> want = {
      {24, 2, 0, 0},                         // x[2][3], x[0][1], row 3 out, column -1 out
      {1, 21, 12, 12, 23, 0, 0, 4},          // k = 3 and -1 are out of range
      {21, 22, 23, 24, 1, 2, 3, 4,           // rows 2 and -3 (= 0)
       0, 0, 0, 0, 1, 2, 3, 4},              // -4 is below -3: out; row 0
      {4, 4, 0, 14, 14, 0, 24, 24, 0},       // columns 3, -1 (= 3), 4 (out)
      {-4, -4, -11, 0, 0, -22},              // 3, -1; 0, -5 (out); 4 (out), 1
  };
  for (Policy policy : {Policy::None, Policy::Xla, Policy::AStitch}) {
    INFO("policy " << policyName(policy));
    auto compiled = compile(g, simOptions(policy));
    auto device = makeDevice("sim", compiled->options().device);
    Executable exe(compiled, *device);
    std::vector<HostTensor> out = exe.run(in);
    REQUIRE(out.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("output " << g.valueName(g.outputs()[i]));
      CHECK(elements(out[i]) == want[i]);
    }
  }
}

TEST_CASE("gather, take and takeAlongAxis say what is wrong, naming the op", "[public]") {
  Graph g;
  Value x = g.parameter("x", DType::f32, {3, 4});
  Value i = g.parameter("i", DType::i32, {2});
  Value f = g.parameter("f", DType::f32, {2});
  Value s = g.parameter("s", DType::f32, {});
  Value n = g.parameter("n", DType::f32, {"N", 4});
  size_t before = g.size();
  auto message = [](auto build) {
    try {
      build();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([&] { g.take(x, i, 2, "y"); }) ==
        "op \"y\" (take): axis 2 is out of range for rank 2 (allowed: -2..1)");
  CHECK(message([&] { g.takeAlongAxis(x, i, -3, "y"); }) ==
        "op \"y\" (take_along_axis): axis -3 is out of range for rank 2 (allowed: -2..1)");
  CHECK(message([&] { g.take(s, i, 0, "y"); }) ==
        "op \"y\" (take): x is a scalar; there is no axis to take along");
  CHECK(message([&] { g.take(x, f, 0, "y"); }) ==
        "op \"y\" (take): take indices must be integers, got f32");
  CHECK(message([&] { g.take(n, i, 0, "y"); }) ==
        "op \"y\" (take): take along an axis of symbolic size N: a negative index needs its size");
  CHECK(message([&] { g.takeAlongAxis(x, i, 1, "y"); }) ==
        "op \"y\" (take_along_axis): indices have rank 1 but the data has rank 2");
  CHECK(message([&] { g.take(x, i, 0, "x"); }) ==
        "op \"x\" (take): the name \"x\" is already used by another value");
  CHECK(message([&] { g.take(x, i, 2); }) ==
        "take: axis 2 is out of range for rank 2 (allowed: -2..1)");
  CHECK(g.size() == before); // nothing was added by a call that failed
  // The gather op's own rules, as ir::Graph words them.
  CHECK_THROWS_WITH(g.gather(x, {i}, {2}, {0}, "y"),
                    Catch::StartsWith("op \"y\" (gather): gather axis 2 is out of range"));
  CHECK_THROWS_WITH(g.gather(x, {f}, {0}, {0}, "y"),
                    Catch::Contains("index operand 1 has dtype f32; indices are integers"));
  CHECK_THROWS_WITH(g.gather(x, {i}, {0}, {}, "y"),
                    Catch::Contains("dims [] has 0 entries"));
  CHECK_THROWS_WITH(g.gather(x, {i}, {0}, {0}, "y"),
                    Catch::Contains("maps operand axis 1 (size 4) to result dimension 0, of size 2"));
  CHECK_THROWS_WITH(g.gather(x, {i, i}, {0}, {}, "y"),
                    Catch::Contains("axes [0] names 1 axis(es) but the gather has 2 index"));
  CHECK_THROWS_WITH(g.gather(x, {}, {}, {0, 1}, "y"),
                    Catch::Contains("at least one index operand"));
  Graph other;
  Value foreign = other.parameter("j", DType::i32, {2});
  CHECK_THROWS_WITH(g.take(x, foreign), Catch::Contains("made by another graph"));
  CHECK_THROWS_WITH(g.gather(x, {foreign}, {0}, {}), Catch::Contains("made by another graph"));
  CHECK(g.size() == before);
  // Indices longer than x along another axis (checked once the negative ones are wrapped).
  Value wide = g.parameter("wide", DType::i32, {4, 2});
  CHECK(message([&] { g.takeAlongAxis(x, wide, 1, "y"); }) ==
        "op \"y\" (take_along_axis): indices have size 4 along axis 0 where the data has 3");
}
