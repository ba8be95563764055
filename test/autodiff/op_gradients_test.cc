// Every differentiable op's adjoint against central finite differences in f64 through the
// reference interpreter: each op on random shapes (odd sizes, size 1) and on a symbolic leading
// dim bound to several sizes, with its gradient computed in f64 and in f32. The loss is
// sum(op(...) * w) with a random weight input w, so that every element of the result matters
// differently.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>

#include "autodiff/grad.h"
#include "grad_check.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "random_graph.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::ir;
using weft::testing::Range;

namespace {

/// One op under test: its inputs' shapes for a leading dim b and a static size n, their value
/// ranges, and the graph body. `symbolic` false: the op needs static sizes on the axes b sits on.
struct OpCase {
  std::string name;
  std::function<std::vector<Shape>(const Dim& b, int64_t n)> shapes;
  std::vector<Range> ranges;
  std::function<NodeId(Graph&, const std::vector<NodeId>&)> body;
  bool symbolic = true;
};

auto same(int count) {
  return [count](const Dim& b, int64_t n) { return std::vector<Shape>(static_cast<size_t>(count), Shape{b, n}); };
}
OpCase unary(OpKind k, Range r) {
  return {std::string(opName(k)), same(1), {r},
          [k](Graph& g, const std::vector<NodeId>& x) { return g.unary(k, x[0]); }};
}
OpCase binary(OpKind k, Range a, Range b) {
  return {std::string(opName(k)), same(2), {a, b},
          [k](Graph& g, const std::vector<NodeId>& x) { return g.binary(k, x[0], x[1]); }};
}

std::vector<OpCase> cases() {
  Range any{-2, 2}, positive{0.3, 2.5};
  std::vector<OpCase> c;
  for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Exp, OpKind::Tanh, OpKind::Erf,
                   OpKind::Sigmoid, OpKind::Sin, OpKind::Cos, OpKind::Floor, OpKind::Ceil,
                   OpKind::Sign})
    c.push_back(unary(k, any));
  for (OpKind k : {OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Reciprocal})
    c.push_back(unary(k, positive));
  c.push_back({"convert", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.convert(x[0], DType::f64); // f32 -> f64 -> (gradient) f32
               }});
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max, OpKind::Min})
    c.push_back(binary(k, any, any));
  c.push_back(binary(OpKind::Div, any, positive));
  c.push_back(binary(OpKind::Pow, positive, Range{-1.5, 1.5}));
  c.push_back(binary(OpKind::Rem, Range{2.2, 2.8}, Range{1.0, 1.05})); // a / b in (2, 3)
  c.push_back({"mul_self", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.binary(OpKind::Mul, x[0], x[0]); // two uses, one sum
               }});
  c.push_back({"select", same(3), {any, any, any}, [](Graph& g, const std::vector<NodeId>& x) {
                 NodeId zero = g.constant(DType::f32, g.node(x[0]).type.shape, {0.0});
                 return g.select(g.compare(CompareDir::GT, x[0], zero), x[1], x[2]);
               }});
  c.push_back({"clamp", same(3), {Range{-1, -0.5}, any, Range{0.5, 1}},
               [](Graph& g, const std::vector<NodeId>& x) { return g.clamp(x[0], x[1], x[2]); }});
  c.push_back({"broadcast_new_axis", [](const Dim&, int64_t n) { return std::vector<Shape>{{n}}; },
               {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.broadcastInDim(x[0], {Dim::symbol("B"), g.node(x[0]).type.shape[0]}, {1});
               }});
  c.push_back({"broadcast_rows", [](const Dim& b, int64_t) { return std::vector<Shape>{{b}}; },
               {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.broadcastInDim(x[0], {g.node(x[0]).type.shape[0], 5}, {0});
               }});
  c.push_back({"broadcast_stretch", [](const Dim&, int64_t n) { return std::vector<Shape>{{1, n}}; },
               {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 Dim n = g.node(x[0]).type.shape[1];
                 return g.broadcastInDim(x[0], {3, 4, n}, {1, 2});
               }});
  c.push_back({"reshape", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 const Shape& s = g.node(x[0]).type.shape;
                 return g.reshape(x[0], {s[0] * s[1]});
               }});
  c.push_back({"transpose", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n, 3}}; },
               {any}, [](Graph& g, const std::vector<NodeId>& x) { return g.transpose(x[0], {2, 0, 1}); }});
  c.push_back({"slice_strided", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n + 7}}; },
               {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 int64_t m = g.node(x[0]).type.shape[1].size();
                 return g.slice(x[0], {0, 1}, {-1, m - 1}, {1, 2});
               }});
  c.push_back({"slice_stride3_rows", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n + 4}}; },
               {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 const Shape& s = g.node(x[0]).type.shape;
                 return g.slice(x[0], {1, 0}, {s[0].size(), s[1].size()}, {2, 3});
               }, false});
  c.push_back({"pad", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.pad(x[0], {0, 2}, {0, 1}, 0.5);
               }});
  c.push_back({"pad_rows", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.pad(x[0], {1, 0}, {2, 3}, -1.0);
               }, false});
  c.push_back({"concatenate_columns", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n}, {b, 3}}; },
               {any, any}, [](Graph& g, const std::vector<NodeId>& x) { return g.concatenate(x, 1); }});
  c.push_back({"concatenate_rows", same(3), {any, any, any},
               [](Graph& g, const std::vector<NodeId>& x) { return g.concatenate(x, 0); }});
  c.push_back({"reduce_sum_rows", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::Sum, x[0], {1});
               }});
  c.push_back({"reduce_sum_all", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::Sum, x[0], {0, 1});
               }});
  c.push_back({"reduce_max_rows", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::Max, x[0], {1});
               }});
  c.push_back({"reduce_min_columns", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::Min, x[0], {0});
               }});
  c.push_back({"reduce_logsumexp_rows", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::LogSumExp, x[0], {1});
               }});
  c.push_back({"reduce_logsumexp_all", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::LogSumExp, x[0], {0, 1});
               }});
  c.push_back({"reduce_prod_middle", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n, 2}}; },
               {Range{0.5, 1.5}}, [](Graph& g, const std::vector<NodeId>& x) {
                 return g.reduce(ReduceKind::Prod, x[0], {1});
               }});
  c.push_back({"dot", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n}, {n, 4}}; },
               {any, any}, [](Graph& g, const std::vector<NodeId>& x) { return g.dot(x[0], x[1]); }});
  c.push_back({"dot_batched", [](const Dim& b, int64_t n) { return std::vector<Shape>{{2, b, n}, {2, n, 3}}; },
               {any, any}, [](Graph& g, const std::vector<NodeId>& x) { return g.dot(x[0], x[1]); }});
  // The adjoint's other forms (adjoints.cc, dotAdjoint): a narrow result gives dB = (dC^T A)^T,
  // a wide weight gives dA = (B dC^T)^T.
  c.push_back({"dot_narrow_result", [](const Dim& b, int64_t n) { return std::vector<Shape>{{b, n}, {n, 1}}; },
               {any, any}, [](Graph& g, const std::vector<NodeId>& x) { return g.dot(x[0], x[1]); }});
  c.push_back({"dot_wide_weight", [](const Dim&, int64_t n) { return std::vector<Shape>{{2, n}, {n, 12}}; },
               {any, any}, [](Graph& g, const std::vector<NodeId>& x) { return g.dot(x[0], x[1]); }});
  // gather: indices built in the graph (the inputs are floats), -1 .. n: out of range at both
  // ends (no gradient there) and repeated (gradients summed).
  c.push_back({"gather_columns", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 const Shape s = g.node(x[0]).type.shape; // a copy: g grows below
                 Shape out = {s[0], 4};
                 NodeId r = g.iota(DType::i32, out, 0), k = g.iota(DType::i32, out, 1);
                 auto splat = [&](double v) { return g.constant(DType::i32, out, {v}); };
                 NodeId mixed = g.binary(OpKind::Add, g.binary(OpKind::Mul, r, splat(3)),
                                         g.binary(OpKind::Mul, k, splat(5)));
                 NodeId wrapped = g.binary(OpKind::Rem, mixed, splat(double(s[1].size() + 2)));
                 NodeId idx = g.binary(OpKind::Sub, wrapped, splat(1));
                 return g.gather(x[0], {idx}, {1}, {0});
               }});
  c.push_back({"gather_rows", same(1), {any}, [](Graph& g, const std::vector<NodeId>& x) {
                 const Shape s = g.node(x[0]).type.shape;
                 NodeId ids = g.constant(DType::i64, {5}, {0, 1, 0, 0, -1});
                 NodeId idx = g.broadcastInDim(ids, {5, s[1]}, {0});
                 return g.gather(x[0], {idx}, {0}, {1});
               }});
  return c;
}

/// The forward graph of a case: inputs x0.. (f32), y = body, w (y's type), loss = sum(y * w).
Graph forwardOf(const OpCase& c, const Dim& b, int64_t n) {
  Graph g;
  std::vector<NodeId> xs;
  std::vector<Shape> shapes = c.shapes(b, n);
  for (size_t i = 0; i < shapes.size(); ++i)
    xs.push_back(g.parameter("x" + std::to_string(i), {DType::f32, shapes[i]}));
  NodeId y = c.body(g, xs);
  NodeId w = g.parameter("w", g.node(y).type);
  NodeId yw = g.binary(OpKind::Mul, y, w);
  std::vector<int64_t> all(g.node(y).type.shape.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  NodeId loss = all.empty() ? g.reshape(yw, {}, "loss") : g.reduce(ReduceKind::Sum, yw, all, "loss");
  g.setOutputs({loss, y});
  return g;
}

void checkCase(const OpCase& c, const Dim& b, int64_t n, const Binding& binding, uint64_t seed) {
  Graph f32 = forwardOf(c, b, n);
  Graph f64 = testing::retypeFloats(f32, DType::f64);
  std::vector<std::string> wrt;
  for (NodeId x : f32.inputs())
    if (f32.node(x).name != "w") wrt.push_back(f32.node(x).name);
  std::vector<Range> ranges = c.ranges;
  ranges.push_back(Range{-1, 1}); // w
  for (const Graph* g : {&f64, &f32}) {
    bool wide = g == &f64;
    std::vector<HostTensor> inputs = testing::drawInputs(*g, binding, ranges, seed);
    testing::GradCheck r =
        testing::checkGradients(*g, f64, "loss", wrt, inputs, binding, wide ? 1e-6 : 2e-3);
    INFO(c.name << " in " << (wide ? "f64" : "f32") << " at " << shapeStr(f32.node(f32.inputs()[0]).type.shape)
                << " B=" << (binding.count("B") ? binding.at("B") : -1) << ": " << r.worst);
    CHECK(r.failed == 0);
    CHECK(r.skipped * 10 <= r.compared + r.skipped); // kinks are rare on random inputs
  }
}

} // namespace

TEST_CASE("every differentiable op's gradient matches finite differences on static shapes",
          "[autodiff][gradcheck]") {
  std::mt19937_64 rng(18);
  std::vector<int64_t> sizes = {1, 2, 3, 5, 7};
  for (const OpCase& c : cases()) {
    for (int round = 0; round < 2; ++round) {
      int64_t b = sizes[rng() % sizes.size()], n = sizes[rng() % sizes.size()];
      // broadcast_new_axis names the symbol B in its result: bind it like any other.
      checkCase(c, Dim(b), n, {{"B", 3}}, rng());
    }
  }
}

TEST_CASE("every differentiable op's gradient matches finite differences on a symbolic dim",
          "[autodiff][gradcheck][symbolic]") {
  std::mt19937_64 rng(1818);
  for (const OpCase& c : cases()) {
    if (!c.symbolic) continue;
    for (int64_t b : {1, 3, 6}) checkCase(c, Dim::symbol("B"), 3, {{"B", b}}, rng());
  }
}

TEST_CASE("the gradient of a value used twice is summed once, into one add") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim::symbol("B"), 4}});
  NodeId a = g.unary(OpKind::Exp, x), c = g.unary(OpKind::Sin, x), d = g.unary(OpKind::Tanh, x);
  NodeId s = g.binary(OpKind::Add, g.binary(OpKind::Add, a, c), d);
  g.setOutputs({g.reduce(ReduceKind::Sum, s, {0, 1}, "loss")});
  Graph t = autodiff::grad(g, "loss", {"x"});
  const Node& out = t.node(t.outputs()[1]);
  CHECK(out.name == "grad_x");
  CHECK(out.kind == OpKind::Add); // the add tree's root is the gradient itself
  int backwardAdds = 0;
  for (const Node& n : t.nodes())
    if (n.kind == OpKind::Add && static_cast<size_t>(n.id) >= g.size()) ++backwardAdds;
  CHECK(backwardAdds == 2); // three contributions to x, two adds; add's own adjoint adds nothing
}

TEST_CASE("pow's gradient is 0 where its formulas meet 0 times infinity, as PyTorch's") {
  // a^0 = 1 for every a: d/da = 0 (not 0 * 0^-1 = NaN at a = 0); 0^b = 0 for b > 0: d/db = 0
  // (not 0 * ln 0 = NaN); a = 1.5, b = 2 and a = 1.5, b = 0 as the formulas give.
  Graph g;
  NodeId a = g.parameter("a", {DType::f64, {4}});
  NodeId b = g.parameter("b", {DType::f64, {4}});
  g.setOutputs({g.reduce(ReduceKind::Sum, g.binary(OpKind::Pow, a, b), {0}, "loss")});
  Graph t = autodiff::grad(g, "loss", {"a", "b"});
  HostTensor av(DType::f64, {4}), bv(DType::f64, {4});
  const double as[] = {0, 0, 1.5, 1.5}, bs[] = {0, 2, 0, 2};
  for (int64_t i = 0; i < 4; ++i) {
    av.set(i, as[i]);
    bv.set(i, bs[i]);
  }
  std::vector<HostTensor> out = interpret(t, {av, bv});
  REQUIRE(out.size() == 3);
  const std::vector<double> da = {0, 0, 0, 3}, db = {0, 0, std::log(1.5), 2.25 * std::log(1.5)};
  for (int64_t i = 0; i < 4; ++i) {
    INFO(as[i] << " ^ " << bs[i]);
    CHECK(out[1].get(i) == Approx(da[size_t(i)]));
    CHECK(out[2].get(i) == Approx(db[size_t(i)]));
  }
}

TEST_CASE("an input the loss does not depend on gets zeros, and graph outputs come first") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {3}});
  NodeId u = g.parameter("unused", {DType::f32, {2, Dim::symbol("S")}});
  NodeId y = g.unary(OpKind::Exp, x, "y");
  g.setOutputs({y, g.reduce(ReduceKind::Sum, y, {0}, "loss")});
  Graph t = autodiff::grad(g, "loss", {"unused", "x"});
  REQUIRE(t.outputs().size() == 4);
  CHECK(t.node(t.outputs()[0]).name == "y");
  CHECK(t.node(t.outputs()[1]).name == "loss");
  CHECK(t.node(t.outputs()[2]).name == "grad_unused");
  CHECK(t.node(t.outputs()[2]).type == t.node(u).type);
  CHECK(t.node(t.outputs()[3]).name == "grad_x");
  CHECK(t.inputs().size() == 2);
}

TEST_CASE("integer ops and compares pass no gradient, and an integer wrt is an error") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {4}});
  NodeId i = g.parameter("i", {DType::i32, {4}});
  NodeId xi = g.convert(x, DType::i32);
  NodeId back = g.convert(g.binary(OpKind::Add, xi, i), DType::f32);
  NodeId y = g.binary(OpKind::Add, back, g.unary(OpKind::Exp, x));
  g.setOutputs({g.reduce(ReduceKind::Sum, y, {0}, "loss")});
  Graph t = autodiff::grad(g, "loss", {"x"});
  std::vector<HostTensor> in = testing::drawInputs(g, {}, {}, 7);
  auto out = interpret(t, in);
  for (int64_t k = 0; k < 4; ++k) CHECK(out[1].get(k) == Approx(std::exp(in[0].get(k))));
  CHECK_THROWS_WITH(autodiff::grad(g, "loss", {"i"}),
                    "wrt \"i\": cannot differentiate with respect to an integer input (i32[4]); "
                    "only floating-point inputs have gradients");
  CHECK_THROWS_AS(autodiff::grad(g, "loss", {"i"}), InputError);
  CHECK_THROWS_WITH(autodiff::grad(g, "nope", {"x"}), Catch::Contains("loss \"nope\": not an output"));
  CHECK_THROWS_WITH(autodiff::grad(g, "loss", {"q"}), Catch::Contains("wrt \"q\": not an input"));
  CHECK_THROWS_WITH(autodiff::grad(g, "loss", {"x", "x"}), Catch::Contains("named twice"));
}

TEST_CASE("the loss must be a scalar floating-point output") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {Dim::symbol("B"), 3}});
  NodeId y = g.unary(OpKind::Exp, x, "y");
  NodeId n = g.reduce(ReduceKind::Sum, g.convert(y, DType::i32), {0, 1}, "count");
  g.setOutputs({y, n});
  CHECK_THROWS_WITH(autodiff::grad(g, "y", {"x"}),
                    "loss \"y\": the loss must be a scalar floating-point output, but \"y\" is f32[B, 3]");
  CHECK_THROWS_WITH(autodiff::grad(g, "count", {"x"}), Catch::Contains("but \"count\" is i32[]"));
}

TEST_CASE("random graphs of the differential harness get gradient checks", "[autodiff][gradcheck][random]") {
  // Each random graph (test/support/random_graph.h) in f64, its float outputs weighted by
  // random inputs and summed into one loss, differentiated with respect to every float input.
  int checked = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    testing::RandomGraphOptions o;
    o.maxElements = 256; // finite differences run the graph twice per input element
    o.allowGather = seed >= 30; // half of them with gathers by integer inputs
    Graph g = testing::retypeFloats(testing::randomGraph(seed, o), DType::f64);
    std::vector<NodeId> terms;
    for (size_t k = 0; k < g.outputs().size(); ++k) {
      NodeId out = g.outputs()[k];
      if (!isFloat(g.node(out).type.dtype)) continue;
      NodeId w = g.parameter("w" + std::to_string(k), g.node(out).type);
      std::vector<int64_t> all(g.node(out).type.shape.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
      NodeId yw = g.binary(OpKind::Mul, out, w);
      terms.push_back(all.empty() ? yw : g.reduce(ReduceKind::Sum, yw, all));
    }
    if (terms.empty()) continue;
    NodeId loss = terms[0];
    for (size_t k = 1; k < terms.size(); ++k) loss = g.binary(OpKind::Add, loss, terms[k]);
    loss = g.reshape(loss, {}, "loss");
    std::vector<NodeId> outs = g.outputs();
    outs.push_back(loss);
    g.setOutputs(outs);
    std::vector<std::string> wrt;
    for (NodeId x : g.inputs())
      if (isFloat(g.node(x).type.dtype) && g.node(x).name[0] != 'w') wrt.push_back(g.node(x).name);
    std::vector<Range> ranges(g.inputs().size(), Range{-1, 1});
    std::vector<HostTensor> inputs = testing::drawInputs(g, {}, ranges, seed);
    testing::GradCheck r = testing::checkGradients(g, g, "loss", wrt, inputs, {}, 1e-5);
    INFO("seed " << seed << ": " << r.worst << "\n" << printGraph(g));
    CHECK(r.failed == 0);
    ++checked;
  }
  CHECK(checked >= 40);
}
