// The same model read as a JSON file and imported from ONNX reaches the planner as the same
// graph, up to names: both frontends expand softmax, layer norm and mean through the one
// library of composite ops (frontend/composite_ops.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <fmt/format.h>

#include "../onnx/model_builder.h"
#include "frontend/json_reader.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "ir/printer.h"

using namespace weft;
using namespace weft::onnx::test;

namespace {

using ir::NodeId;

/// The graph without its names: each node as kind, attributes, operand ids and type, then
/// the outputs.
std::string structure(const ir::Graph& g) {
  std::string out;
  for (const auto& n : g.nodes()) {
    out += fmt::format("%{} = {}", n.id, ir::opName(n.kind));
    if (n.kind != ir::OpKind::Parameter) out += ir::printAttrs(n);
    out += "(";
    for (size_t i = 0; i < n.operands.size(); ++i)
      out += fmt::format("{}%{}", i ? ", " : "", n.operands[i]);
    out += ") : " + n.type.str() + "\n";
  }
  for (NodeId id : g.outputs())
    out += fmt::format("return %{}\n", id);
  return out;
}

ir::Graph fromJson(const std::string& op, const std::string& attrs, int params = 1) {
  std::string inputs = R"({"name": "x", "dtype": "f32", "shape": [4, 8]})";
  std::string names = R"("x")";
  if (params >= 2) {
    inputs += R"(, {"name": "gamma", "dtype": "f32", "shape": [8]})";
    names += R"(, "gamma")";
  }
  if (params >= 3) {
    inputs += R"(, {"name": "beta", "dtype": "f32", "shape": [8]})";
    names += R"(, "beta")";
  }
  std::string text = fmt::format(
      R"({{"inputs": [{}], "ops": [{{"name": "y", "op": "{}", "inputs": [{}]{}}}],
          "outputs": ["y"]}})",
      inputs, op, names, attrs);
  return frontend::readGraphJson(text, "t.json").graph;
}

ir::Graph fromOnnx(ModelBuilder& m) {
  return weft::onnx::importOnnxBytes(m.bytes());
}

} // namespace

TEST_CASE("layer norm from JSON and from ONNX is one graph", "[composite][onnx]") {
  ir::Graph json = fromJson("layer_norm", R"(, "epsilon": 0.5)", 3);
  ModelBuilder m(17);
  m.input("x", kFloat, {"4", "8"}).input("gamma", kFloat, {"8"}).input("beta", kFloat, {"8"});
  m.node("LayerNormalization", {"x", "gamma", "beta"}, {"y"},
         {Attr::integer("axis", -1), Attr::real("epsilon", 0.5f)});
  m.output("y");
  ir::Graph onnx = fromOnnx(m);
  CHECK(structure(onnx) == structure(json));
  // the statistics are rsqrt and a multiply, not a divide by a square root
  bool rsqrt = false;
  for (const auto& n : onnx.nodes()) {
    CHECK(n.kind != ir::OpKind::Sqrt);
    CHECK(n.kind != ir::OpKind::Reciprocal);
    rsqrt |= n.kind == ir::OpKind::Rsqrt;
  }
  CHECK(rsqrt);
}

TEST_CASE("ONNX layer norm keeps its semantics: axes from `axis` on, stash type, Mean and "
          "InvStdDev",
          "[composite][onnx]") {
  ModelBuilder m(17);
  m.input("x", ::onnx::TensorProto::FLOAT16, {"2", "2", "2"});
  m.input("s", ::onnx::TensorProto::FLOAT16, {"2", "2"});
  m.node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv"},
         {Attr::integer("axis", 1), Attr::real("epsilon", 0.25f)});
  m.output("y").output("mean").output("inv");
  ir::Graph g = fromOnnx(m);
  REQUIRE(g.outputs().size() == 3);
  CHECK(g.node(g.outputs()[0]).type.str() == "f16[2, 2, 2]");
  CHECK(g.node(g.outputs()[1]).type.str() == "f32[2, 1, 1]"); // stash_type 1: f32
  CHECK(g.node(g.outputs()[2]).type.str() == "f32[2, 1, 1]");
  HostTensor x(DType::f16, {2, 2, 2}), s(DType::f16, {2, 2});
  std::vector<double> xs{1, 2, 3, 4, 0, 0, 0, 8};
  for (int64_t i = 0; i < 8; ++i)
    x.set(i, xs[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < 4; ++i)
    s.set(i, 2);
  auto out = ir::interpret(g, {x, s});
  // row 0: mean 2.5, variance 1.25; row 1: mean 2, variance 12
  CHECK(out[1].get(0) == Approx(2.5));
  CHECK(out[1].get(1) == Approx(2));
  CHECK(out[2].get(0) == Approx(1 / std::sqrt(1.25 + 0.25)));
  CHECK(out[2].get(1) == Approx(1 / std::sqrt(12 + 0.25)));
  CHECK(out[0].get(0) == Approx(2 * -1.5 / std::sqrt(1.5)).epsilon(1e-3));
  CHECK(out[0].get(7) == Approx(2 * 6 / std::sqrt(12.25)).epsilon(1e-3));
}

TEST_CASE("softmax and log-softmax from JSON and from ONNX are one graph", "[composite][onnx]") {
  for (std::string op : {"Softmax", "LogSoftmax"}) {
    ir::Graph json = fromJson(op == "Softmax" ? "softmax" : "log_softmax", "");
    ModelBuilder m(13);
    m.input("x", kFloat, {"4", "8"}).node(op, {"x"}, {"y"}).output("y");
    CHECK(structure(fromOnnx(m)) == structure(json));
  }
}

TEST_CASE("a mean from JSON and ReduceMean without keepdims are one graph", "[composite][onnx]") {
  ir::Graph json = fromJson("mean", R"(, "axes": [-1])");
  ModelBuilder m(13);
  m.input("x", kFloat, {"4", "8"});
  m.node("ReduceMean", {"x"}, {"y"}, {Attr::list("axes", {-1}), Attr::integer("keepdims", 0)});
  m.output("y");
  CHECK(structure(fromOnnx(m)) == structure(json));
}
