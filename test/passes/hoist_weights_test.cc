// passes::hoistWeights: constants over ir::kMaxEmbeddedConstantBytes with more than one value
// become inputs after the graph's own, their values beside the graph; splats, small tables and
// outputs stay constants; nothing else changes.
#include <catch2/catch.hpp>

#include "ir/interpreter.h"
#include "ir/printer.h"
#include "passes/hoist_weights.h"

using namespace weft;
using ir::OpKind;

namespace {
std::vector<double> ramp(size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = double(i) * 0.25 - 3;
  return v;
}
} // namespace

TEST_CASE("hoistWeights makes large constants inputs and keeps the rest", "[passes][weights]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {4, 64}});
  auto big = g.constant(DType::f32, {64, 8}, ramp(512), "w");       // 2048 bytes: a weight
  auto small = g.constant(DType::f32, {8}, ramp(8), "b");           // 32 bytes: stays
  auto splat = g.constant(DType::f32, {4, 8}, {2.0}, "two");        // one value: stays
  std::vector<double> bytes(256);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = double(i % 200) - 100;
  auto exact = g.constant(DType::i8, {256}, bytes, "edge");          // 256 bytes: stays
  auto out = g.constant(DType::f32, {100}, ramp(100), "constant_out"); // an output: stays
  auto y = g.binary(OpKind::Add, g.dot(x, big), g.broadcastInDim(small, {4, 8}, {1}), "y");
  g.addOutput(g.binary(OpKind::Mul, y, splat, "z"));
  g.addOutput(out);
  g.addOutput(g.reduce(ir::ReduceKind::Sum, g.convert(exact, DType::i32), {0}, "s"));
  passes::HoistedWeights h = passes::hoistWeights(g);
  REQUIRE(h.values.size() == 1);
  CHECK(h.values.at("w").typeStr() == "f32[64, 8]");
  REQUIRE(h.graph.inputs().size() == 2);
  CHECK(h.graph.node(h.graph.inputs()[1]).name == "w");
  for (const char* name : {"b", "two", "edge", "constant_out"})
    CHECK(h.graph.node(*h.graph.find(name)).kind == OpKind::Constant);
  // The hoisted graph on the hoisted values computes what the original does.
  HostTensor xv(DType::f32, {4, 64});
  for (int64_t i = 0; i < xv.numElements(); ++i)
    xv.set(i, double(i % 7) - 3);
  std::vector<HostTensor> want = ir::interpret(g, {xv});
  std::vector<HostTensor> got = ir::interpret(h.graph, {xv, h.values.at("w")});
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i].bytes == want[i].bytes);
  // A graph without large constants comes back as it was.
  ir::Graph plain;
  plain.addOutput(plain.unary(OpKind::Exp, plain.parameter("p", {DType::f32, {3}}), "e"));
  CHECK(ir::printGraph(passes::hoistWeights(plain).graph) == ir::printGraph(plain));
  // A lower limit hoists the small table too.
  CHECK(passes::hoistWeights(g, 16).values.size() == 3); // w, b, edge
}

TEST_CASE("hoistWeights computes ops over weights once, unless they expand", "[passes][weights]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {2, 64}});
  auto w = g.constant(DType::f32, {8, 64}, ramp(512), "w");
  auto wt = g.transpose(w, {1, 0}, "w.t");                      // [64, 8]: folded, a weight
  auto y = g.dot(x, wt, "y");
  auto bias = g.constant(DType::f32, {64}, ramp(64), "bias");   // 256 bytes: stays a constant
  auto big = g.constant(DType::f32, {2, 100}, ramp(200), "big");
  auto wide = g.broadcastInDim(big, {3, 2, 100}, {1, 2}, "wide"); // expands: stays an op
  g.addOutput(y);
  g.addOutput(g.binary(OpKind::Add, x, g.broadcastInDim(bias, {2, 64}, {1}), "xb"));
  g.addOutput(g.reduce(ir::ReduceKind::Sum, wide, {0}, "s"));
  g.addOutput(g.dot(g.transpose(big, {1, 0}, "big.t"), big, "gram")); // an output: stays an op
  passes::HoistedWeights h = passes::hoistWeights(g);
  CHECK(h.values.count("w.t"));
  CHECK_FALSE(h.values.count("w")); // folded away: nothing reads it any more
  CHECK_FALSE(h.graph.find("w"));
  CHECK(h.values.count("big"));
  CHECK(h.values.count("big.t"));
  CHECK(h.graph.node(*h.graph.find("wide")).kind == OpKind::BroadcastInDim);
  CHECK(h.graph.node(*h.graph.find("gram")).kind == OpKind::Dot);
  HostTensor xv(DType::f32, {2, 64});
  for (int64_t i = 0; i < xv.numElements(); ++i)
    xv.set(i, double(i % 5) - 2);
  std::vector<HostTensor> inputs = {xv};
  for (size_t i = 1; i < h.graph.inputs().size(); ++i)
    inputs.push_back(h.values.at(h.graph.node(h.graph.inputs()[i]).name));
  std::vector<HostTensor> want = ir::interpret(g, {xv}), got = ir::interpret(h.graph, inputs);
  for (size_t i = 0; i < want.size(); ++i)
    CHECK(got[i].bytes == want[i].bytes);
}
