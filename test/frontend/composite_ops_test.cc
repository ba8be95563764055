// The composite ops both frontends expand (frontend/composite_ops.h): the graphs they build,
// named as the JSON reader names them, and their values on the reference interpreter.
#include <catch2/catch.hpp>

#include <cmath>
#include <fmt/format.h>

#include "frontend/composite_ops.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::frontend;
using Catch::Matchers::Contains;
using ir::NodeId;

namespace {

/// A site naming intermediates "<op>.<suffix>" (as the JSON reader does) and failing with
/// "at <op>: ...".
Site jsonLikeSite(ir::Graph& g, const std::string& op = "y") {
  return Site{g, [op](const std::string& suffix) { return op + "." + suffix; },
              [op](const std::string& what) { throw InputError("at " + op + ": " + what); }};
}

/// The site an ONNX node gives: fresh names, keepdims reshapes looked through.
Site onnxLikeSite(ir::Graph& g) {
  return Site{g, nullptr, [](const std::string& what) { throw InputError(what); }, true};
}

std::string printed(ir::Graph& g, NodeId out) {
  g.addOutput(out);
  return ir::printGraph(g, "t");
}

/// The graph without its names: each node as kind, attributes, operand positions and type.
std::string structure(const ir::Graph& g) {
  std::string out;
  for (const auto& n : g.nodes()) {
    out += fmt::format("{}{}(", ir::opName(n.kind), ir::printAttrs(n));
    for (size_t i = 0; i < n.operands.size(); ++i)
      out += fmt::format("{}%{}", i ? ", " : "", n.operands[i]);
    out += ") : " + n.type.str() + "\n";
  }
  return out;
}

HostTensor tensor(std::vector<int64_t> shape, const std::vector<double>& values,
                  DType t = DType::f32) {
  HostTensor h(t, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == h.numElements());
  for (size_t i = 0; i < values.size(); ++i)
    h.set(static_cast<int64_t>(i), values[i]);
  return h;
}

std::vector<double> run(ir::Graph& g, NodeId out, const std::vector<HostTensor>& inputs,
                        const ir::Binding& binding = {}) {
  g.setOutputs({out});
  HostTensor r = ir::interpret(g, inputs, binding)[0];
  std::vector<double> v;
  for (int64_t i = 0; i < r.numElements(); ++i)
    v.push_back(r.get(i));
  return v;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

} // namespace

TEST_CASE("axes: negative axes count from the end, out of range is nullopt", "[composite]") {
  CHECK(normalizeAxis(-1, 3) == 2);
  CHECK(normalizeAxis(0, 3) == 0);
  CHECK(normalizeAxis(-3, 3) == 0);
  CHECK_FALSE(normalizeAxis(3, 3));
  CHECK_FALSE(normalizeAxis(-4, 3));
  CHECK_FALSE(normalizeAxis(0, 0));

  ir::Shape s{ir::Dim::symbol("B"), ir::Dim(3), ir::Dim(4)};
  CHECK(reducedCount(s, {1, 2}).count == 12);
  CHECK_FALSE(reducedCount(s, {1, 2}).symbolicAxis);
  CHECK(reducedCount(s, {0, 2}).symbolicAxis == 0);
  CHECK(reducedShape(s, {1}, false) == ir::Shape{ir::Dim::symbol("B"), ir::Dim(4)});
  CHECK(reducedShape(s, {1, 2}, true) == ir::Shape{ir::Dim::symbol("B"), ir::Dim(1), ir::Dim(1)});
}

TEST_CASE("numpy broadcasting: right-aligned, sizes match or are 1", "[composite]") {
  ir::Dim B = ir::Dim::symbol("B");
  CHECK(broadcastShape({{B, 1, 4}, {3, 1}}) == ir::Shape{B, 3, 4});
  CHECK(broadcastShape({{4}, {}, {2, 1}}) == ir::Shape{2, 4});
  CHECK(broadcastShape({{1}, {B}}) == ir::Shape{B});
  size_t bad = 99;
  CHECK_FALSE(broadcastShape({{2, 3}, {3}, {4}}, &bad));
  CHECK(bad == 2);
  // Unequal symbols, or a symbol and a size, are taken to be equal (the graph unifies them
  // where they meet); the result does not depend on the order...
  ir::Dim S = ir::Dim::symbol("S");
  CHECK(broadcastShape({{B}, {S}}) == ir::Shape{B});
  CHECK(broadcastShape({{S}, {B}}) == ir::Shape{B});
  CHECK(broadcastShape({{B, 4}, {ir::Dim::symbol("N")}}) == ir::Shape{B, 4});
  // ...unless the symbol sizes another dim too: [B, 768] / [B] misses a unit dim.
  CHECK_FALSE(broadcastShape({{B, 768}, {B}}, &bad));
  CHECK(bad == 1);
  CHECK_FALSE(broadcastShape({{ir::Dim(2) * B}, {ir::Dim(3) * S}}, &bad)); // no lone symbol to replace
  CHECK(bad == 1);

  ir::Graph g;
  Site s = jsonLikeSite(g);
  NodeId x = g.parameter("x", {DType::f32, {3, 1}});
  CHECK(broadcastTo(s, x, {3, 1}, "same") == x); // nothing to do: no node
  NodeId b = broadcastTo(s, x, {2, 3, 4}, "b");
  CHECK(g.node(b).attr<ir::BroadcastAttrs>().dims == std::vector<int64_t>{1, 2});
  CHECK_THAT(errorOf([&] { broadcastTo(s, x, {3}, "r"); }),
             Contains("at y: cannot broadcast [3, 1] to the lower-rank shape [3]"));
  CHECK_THAT(errorOf([&] { broadcastTo(s, x, {2, 4}, "r"); }),
             Contains("at y: cannot broadcast [3, 1] to [2, 4]"));
}

TEST_CASE("a keepdims reshape is broadcast from its operand only where the site asks",
          "[composite]") {
  for (bool lookThrough : {false, true}) {
    ir::Graph g;
    Site s = lookThrough ? onnxLikeSite(g) : jsonLikeSite(g);
    NodeId x = g.parameter("x", {DType::f32, {2, 3}});
    NodeId r = g.reduce(ir::ReduceKind::Sum, x, {1});
    NodeId kept = g.reshape(r, {2, 1});
    NodeId b = broadcastTo(s, kept, {2, 3}, "b");
    CHECK(g.node(b).operands[0] == (lookThrough ? r : kept));
    CHECK(g.node(b).attr<ir::BroadcastAttrs>().dims ==
          (lookThrough ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 1}));
  }
}

TEST_CASE("layer norm: centered by the mean, times rsqrt(var + eps), scaled and shifted",
          "[composite]") {
  ir::Graph g;
  Site s = jsonLikeSite(g);
  NodeId x = g.parameter("x", {DType::f32, {ir::Dim::symbol("B"), 4}});
  NodeId gamma = g.parameter("gamma", {DType::f32, {4}});
  NodeId beta = g.parameter("beta", {DType::f32, {4}});
  NormOptions o;
  o.axes = {1};
  o.epsilon = 0.5;
  o.gamma = gamma;
  o.beta = beta;
  LayerNorm ln = layerNorm(s, x, o, "y");
  CHECK(g.node(ln.mean).name == "y.mean");
  CHECK(g.node(ln.rstd).name == "y.rstd");
  CHECK(printed(g, ln.y) == R"(graph t(%x: f32[B, 4], %gamma: f32[4], %beta: f32[4]) {
  %y.mean_sum = reduce[sum, axes=[1]](%x) : f32[B]
  %y.mean_count = constant[4]() : f32[B]
  %y.mean = div(%y.mean_sum, %y.mean_count) : f32[B]
  %y.mean_broadcast = broadcast_in_dim[dims=[0]](%y.mean) : f32[B, 4]
  %y.centered = sub(%x, %y.mean_broadcast) : f32[B, 4]
  %y.squared = mul(%y.centered, %y.centered) : f32[B, 4]
  %y.var_sum = reduce[sum, axes=[1]](%y.squared) : f32[B]
  %y.var_count = constant[4]() : f32[B]
  %y.var = div(%y.var_sum, %y.var_count) : f32[B]
  %y.epsilon = constant[0.5]() : f32[B]
  %y.var_eps = add(%y.var, %y.epsilon) : f32[B]
  %y.rstd = rsqrt(%y.var_eps) : f32[B]
  %y.rstd_broadcast = broadcast_in_dim[dims=[0]](%y.rstd) : f32[B, 4]
  %y.normalized = mul(%y.centered, %y.rstd_broadcast) : f32[B, 4]
  %y.gamma_broadcast = broadcast_in_dim[dims=[1]](%gamma) : f32[B, 4]
  %y.scaled = mul(%y.normalized, %y.gamma_broadcast) : f32[B, 4]
  %y.beta_broadcast = broadcast_in_dim[dims=[1]](%beta) : f32[B, 4]
  %y = add(%y.scaled, %y.beta_broadcast) : f32[B, 4]
  return %y
}
)");
  // x = [1, 2, 3, 4]: mean 2.5, variance 1.25
  std::vector<double> y = run(g, ln.y,
                              {tensor({1, 4}, {1, 2, 3, 4}), tensor({4}, {1, 2, 1, 1}),
                               tensor({4}, {0, 0, 0, 10})},
                              {{"B", 1}});
  float rstd = 1.0f / std::sqrt(1.75f);
  CHECK(y[0] == Approx(-1.5 * rstd));
  CHECK(y[1] == Approx(-0.5 * rstd * 2));
  CHECK(y[3] == Approx(1.5 * rstd + 10));
}

TEST_CASE("the graph does not depend on how the site names values", "[composite]") {
  std::string shapes[2];
  for (int onnxLike : {0, 1}) {
    ir::Graph g;
    Site s = onnxLike ? onnxLikeSite(g) : jsonLikeSite(g);
    NodeId x = g.parameter("x", {DType::f32, {2, 8}});
    NodeId gamma = g.parameter("gamma", {DType::f32, {8}});
    NormOptions o;
    o.axes = {1};
    o.epsilon = 1e-5;
    o.gamma = gamma;
    NodeId y = layerNorm(s, x, o, "y").y;
    y = softmax(s, y, {1}, true, "z");
    y = gelu(s, broadcastTo(s, y, {3, 2, 8}, "b"), "w");
    g.addOutput(y);
    shapes[onnxLike] = structure(g);
  }
  CHECK(shapes[0] == shapes[1]);
}

TEST_CASE("layer norm in a compute dtype converts in and back before gamma", "[composite]") {
  ir::Graph g;
  Site s = onnxLikeSite(g);
  NodeId x = g.parameter("x", {DType::f16, {2, 3, 4}});
  NodeId gamma = g.parameter("gamma", {DType::f16, {3, 4}});
  NormOptions o;
  o.axes = {1, 2};
  o.epsilon = 0;
  o.gamma = gamma;
  o.compute = DType::f32;
  LayerNorm ln = layerNorm(s, x, o, "y");
  CHECK(g.node(ln.mean).type.str() == "f32[2]");
  CHECK(g.node(ln.rstd).type.str() == "f32[2]");
  CHECK(g.node(ln.y).type.str() == "f16[2, 3, 4]");
  CHECK(g.node(ln.y).name == "y");
  const ir::Node& scaledIn = g.node(g.node(ln.y).operands[0]);
  CHECK(scaledIn.kind == ir::OpKind::Convert); // back to f16, then times gamma in f16
  CHECK(g.node(g.node(ln.y).operands[1]).attr<ir::BroadcastAttrs>().dims ==
        std::vector<int64_t>{1, 2});
  CHECK(g.node(2).kind == ir::OpKind::Convert); // x to f32 first
}

TEST_CASE("layer norm without gamma names its normalized value as the result", "[composite]") {
  ir::Graph g;
  Site s = jsonLikeSite(g);
  NodeId x = g.parameter("x", {DType::f32, {4}});
  NormOptions o;
  o.axes = {0};
  o.epsilon = 0;
  LayerNorm ln = layerNorm(s, x, o, "y");
  CHECK(g.node(ln.y).name == "y");
  CHECK(g.node(ln.y).kind == ir::OpKind::Mul);
  std::vector<double> y = run(g, ln.y, {tensor({4}, {1, 2, 3, 4})});
  CHECK(y[0] == Approx(-1.5 / std::sqrt(1.25)));
}

TEST_CASE("a mean over a symbolic axis fails through the site", "[composite]") {
  ir::Graph g;
  Site s = jsonLikeSite(g);
  NodeId x = g.parameter("x", {DType::f32, {ir::Dim::symbol("B"), 4}});
  CHECK_THAT(errorOf([&] { mean(s, x, {0}, "mean", "y"); }),
             Contains("at y: the mean over axis 0 of symbolic size B"));
  NodeId bad = g.parameter("g", {DType::f32, {3}});
  NormOptions o;
  o.axes = {1};
  o.gamma = bad;
  CHECK_THAT(errorOf([&] { layerNorm(s, x, o, "y"); }),
             Contains("at y: gamma has shape [3], which does not broadcast"));
}

TEST_CASE("mean and variance drop the reduced axes", "[composite]") {
  ir::Graph g;
  Site s = jsonLikeSite(g);
  NodeId x = g.parameter("x", {DType::f64, {2, 3}});
  Variance v = variance(s, x, {1}, "y");
  CHECK(g.node(v.variance).name == "y");
  CHECK(g.node(v.mean).name == "y.mean");
  CHECK(g.node(v.centered).type.str() == "f64[2, 3]");
  auto x23 = tensor({2, 3}, {1, 2, 3, 10, 10, 40}, DType::f64);
  CHECK(run(g, v.variance, {x23}) == std::vector<double>{2.0 / 3, 200});
  CHECK(run(g, v.mean, {x23}) == std::vector<double>{2, 20});
}

TEST_CASE("softmax and log-softmax over several axes", "[composite]") {
  for (bool logarithm : {false, true}) {
    ir::Graph g;
    Site s = onnxLikeSite(g);
    NodeId x = g.parameter("x", {DType::f64, {2, 2, 2}});
    NodeId y = softmax(s, x, {1, 2}, logarithm, "y");
    std::vector<double> v =
        run(g, y, {tensor({2, 2, 2}, {0, 0, 0, 0, 1, 2, 3, 1000}, DType::f64)});
    CHECK(v[0] == Approx(logarithm ? std::log(0.25) : 0.25));
    CHECK(v[7] == Approx(logarithm ? 0.0 : 1.0)); // shifted by the max: no overflow
    // log-softmax: no elementwise log or exp, one logsumexp per row beside the max (sibling
    // reduces of x, one pass); softmax: the exponentials and their sum
    int logs = 0, lse = 0;
    for (const auto& n : g.nodes()) {
      logs += n.kind == ir::OpKind::Log;
      lse += n.kind == ir::OpKind::Reduce &&
             n.attr<ir::ReduceAttrs>().kind == ir::ReduceKind::LogSumExp;
    }
    CHECK(logs == 0);
    CHECK(lse == (logarithm ? 1 : 0));
    CHECK(g.node(g.node(y).operands[1]).kind == ir::OpKind::BroadcastInDim);
  }
}

TEST_CASE("RMS norm, GELU and SiLU compute their formulas", "[composite]") {
  ir::Graph g;
  Site s = jsonLikeSite(g, "rms");
  NodeId x = g.parameter("x", {DType::f64, {4}});
  NormOptions o;
  o.axes = {0};
  o.epsilon = 1;
  NodeId rms = rmsNorm(s, x, o, "rms");
  NodeId ge = gelu(jsonLikeSite(g, "gelu"), x, "gelu");
  NodeId gt = geluTanh(jsonLikeSite(g, "gelu_tanh"), x, "gelu_tanh");
  NodeId si = silu(jsonLikeSite(g, "silu"), x, "silu");
  auto in = tensor({4}, {-2, -0.5, 1, 3}, DType::f64);
  std::vector<double> r = run(g, rms, {in});
  double scale = 1 / std::sqrt((4 + 0.25 + 1 + 9) / 4.0 + 1);
  CHECK(r[3] == Approx(3 * scale));
  std::vector<double> e = run(g, ge, {in});
  CHECK(e[0] == Approx(0.5 * -2 * (1 + std::erf(-2 / std::sqrt(2.0)))));
  std::vector<double> t = run(g, gt, {in});
  CHECK(t[2] == Approx(0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1 + 0.044715)))));
  std::vector<double> v = run(g, si, {in});
  CHECK(v[3] == Approx(3 / (1 + std::exp(-3.0))));
  NormOptions withBeta = o;
  withBeta.beta = x;
  CHECK_THAT(errorOf([&] { rmsNorm(s, x, withBeta, "r"); }), Contains("no shift"));
}
