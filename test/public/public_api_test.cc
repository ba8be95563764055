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
