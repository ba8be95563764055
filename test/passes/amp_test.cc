// Automatic mixed precision (passes/amp.h): where it keeps f32, where it lowers, that the
// interface is unchanged, that every cast has one consumer and never becomes a kernel of its
// own under astitch or xla, and that the results stay within the low precision's tolerance.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "autodiff/grad.h"
#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "fusion/plan.h"
#include "ir/interpreter.h"
#include "passes/amp.h"
#include "passes/pipeline.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::ir;

namespace {

Graph example(const std::string& name) {
  return frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" + name + ".json").graph;
}

DType dtypeOf(const Graph& g, const std::string& name) {
  return g.node(*g.find(name)).type.dtype;
}

/// The examples and a training graph, each with a binding to run it at.
std::vector<std::pair<std::string, Graph>> graphs() {
  std::vector<std::pair<std::string, Graph>> gs;
  for (const char* name : {"layer_norm", "softmax", "gelu_bias", "rms_norm", "residual_add_layer_norm",
                           "layer_norm_backward", "column_reduce_bias_grad", "astitch_fig7"})
    gs.emplace_back(name, example(name));
  gs.emplace_back("layer_norm_loss training",
                  autodiff::grad(example("layer_norm_loss"), "loss", {"x", "gamma", "beta"}));
  return gs;
}

} // namespace

TEST_CASE("amp keeps reductions, exp/log and statistics in f32 and lowers the rest") {
  Graph ln = passes::autoMixedPrecision(example("layer_norm"), DType::f16);
  for (const char* kept : {"y.mean_sum", "y.mean", "y.var_sum", "y.var", "y.rstd"})
    CHECK(dtypeOf(ln, kept) == DType::f32);
  for (const char* low : {"y.centered", "y.squared", "y.normalized", "y.scaled", "y.rstd_broadcast"})
    CHECK(dtypeOf(ln, low) == DType::f16);
  // The reduce reads its low-precision operand through a cast up, and accumulates in f32.
  const Node& varSum = ln.node(*ln.find("y.var_sum"));
  CHECK(ln.node(varSum.operands[0]).kind == OpKind::Convert);
  CHECK(ln.node(varSum.operands[0]).type.dtype == DType::f32);

  Graph sm = passes::autoMixedPrecision(example("softmax"), DType::bf16);
  CHECK(dtypeOf(sm, "probs.exp") == DType::f32);
  CHECK(dtypeOf(sm, "probs.sum") == DType::f32);
  CHECK(dtypeOf(sm, "probs.max") == DType::f32);
}

TEST_CASE("amp keeps the interface and gives every cast one consumer") {
  for (auto& [name, g] : graphs()) {
    INFO(name);
    Graph a = passes::autoMixedPrecision(g, DType::f16);
    REQUIRE(a.inputs().size() == g.inputs().size());
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      CHECK(a.node(a.inputs()[i]).name == g.node(g.inputs()[i]).name);
      CHECK(a.node(a.inputs()[i]).type == g.node(g.inputs()[i]).type);
    }
    REQUIRE(a.outputs().size() == g.outputs().size());
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      CHECK(a.node(a.outputs()[i]).name == g.node(g.outputs()[i]).name);
      CHECK(a.node(a.outputs()[i]).type == g.node(g.outputs()[i]).type);
    }
    auto users = a.users();
    int lowered = 0;
    for (const Node& n : a.nodes()) {
      if (n.type.dtype == DType::f16) ++lowered;
      if (n.kind == OpKind::Convert && !a.isOutput(n.id) && g.find(n.name) == std::nullopt)
        CHECK(users[static_cast<size_t>(n.id)].size() == 1); // a cast per consumer
    }
    if (name != "column_reduce_bias_grad") CHECK(lowered > 0); // that one is a lone reduce
  }
}

TEST_CASE("amp results stay within the low precision's tolerance of f32") {
  for (DType low : {DType::f16, DType::bf16}) {
    for (auto& [name, g] : graphs()) {
      INFO(name << " in " << dtypeName(low));
      Graph a = passes::autoMixedPrecision(g, low);
      Binding b;
      for (const std::string& s : g.symbols()) b[s] = 3;
      std::vector<HostTensor> in = frontend::randomInputs(g, b, 18);
      auto want = interpret(g, in, b), got = interpret(a, in, b);
      // f16 keeps 11 significant bits, bf16 8; a few roundings per value, relative to the
      // output's scale (cancellation in x - mean makes single elements worse).
      double tol = low == DType::f16 ? 2e-2 : 1e-1;
      for (size_t k = 0; k < want.size(); ++k) {
        double worst = 0, scale = 0;
        for (int64_t i = 0; i < want[k].numElements(); ++i) {
          worst = std::max(worst, std::abs(got[k].get(i) - want[k].get(i)));
          scale = std::max(scale, std::abs(want[k].get(i)));
        }
        INFO("output " << k << ": worst " << worst << " of scale " << scale);
        CHECK(worst <= tol * std::max(1.0, scale));
      }
    }
  }
}

TEST_CASE("amp's casts never become kernels of their own under astitch or xla") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  for (auto& [name, g] : graphs()) {
    Binding b;
    for (const std::string& s : g.symbols()) b[s] = 256;
    Graph canonical = passes::canonicalize(passes::autoMixedPrecision(bindSymbols(g, b), DType::f16));
    Graph reference = passes::canonicalize(bindSymbols(g, b));
    for (fusion::Policy policy : {fusion::Policy::AStitch, fusion::Policy::Xla}) {
      INFO(name << " under " << fusion::policyName(policy));
      fusion::FusionPlan p = fusion::plan(canonical, h100, policy);
      int castKernels = 0;
      for (const fusion::Step& s : p.steps) {
        const auto* k = std::get_if<fusion::KernelPlan>(&s);
        if (!k) continue;
        bool onlyCasts = true;
        for (NodeId op : k->ops) onlyCasts = onlyCasts && p.graph.node(op).kind == OpKind::Convert;
        castKernels += onlyCasts;
      }
      CHECK(castKernels == 0);
      // and no more kernels than the f32 graph gets
      CHECK(p.kernelCount() <= fusion::plan(reference, h100, policy).kernelCount());
    }
  }
}

TEST_CASE("amp takes f16 or bf16 only, and leaves other dtypes alone") {
  CHECK_THROWS_AS(passes::autoMixedPrecision(example("layer_norm"), DType::f64), InputError);
  Graph g;
  NodeId x = g.parameter("x", {DType::f64, {4}});
  NodeId i = g.parameter("i", {DType::i32, {4}});
  g.setOutputs({g.unary(OpKind::Exp, x, "e"), g.binary(OpKind::Add, i, i, "s")});
  Graph a = passes::autoMixedPrecision(g, DType::f16);
  CHECK(dtypeOf(a, "e") == DType::f64);
  CHECK(dtypeOf(a, "s") == DType::i32);
  CHECK(a.size() == g.size());
}

TEST_CASE("amp puts no cast in front of a dot") {
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {128, 768}});
  NodeId w = g.parameter("w", {DType::f32, {768, 64}});
  NodeId h = g.dot(x, w, "h");
  NodeId bias = g.parameter("bias", {DType::f32, {64}});
  NodeId y = g.binary(OpKind::Add, h, g.broadcastInDim(bias, {128, 64}, {1}), "y");
  NodeId v = g.parameter("v", {DType::f32, {64, 8}});
  NodeId t = g.unary(OpKind::Tanh, y, "t");
  g.setOutputs({y, g.dot(t, v, "z"), g.dot(t, g.transpose(g.unary(OpKind::Sin, t), {1, 0}), "zz")});
  Graph a = passes::autoMixedPrecision(g, DType::f16);
  const Node& ha = a.node(*a.find("h"));
  CHECK(ha.type.dtype == DType::f32);
  for (NodeId o : ha.operands) CHECK(a.node(o).kind == OpKind::Parameter); // read as they are
  CHECK(dtypeOf(a, "y.amp") == DType::f16); // the epilogue runs low, the output is cast back
  // A dot's operands are made in f32 where they are computed (tanh here), so that no cast
  // stands alone in front of the library kernel.
  CHECK(dtypeOf(a, "z") == DType::f32);
  CHECK(dtypeOf(a, "t") == DType::f32);
  CHECK(a.node(a.node(*a.find("z")).operands[1]).kind == OpKind::Parameter);
  for (const char* dot : {"z", "zz"})
    for (NodeId o : a.node(*a.find(dot)).operands) CHECK(a.node(o).kind != OpKind::Convert);
  CHECK(dtypeOf(a, "y") == DType::f32);
}

TEST_CASE("amp compares values that exist in f32 in f32: the adjoints of max pick one element") {
  // 1.0 and 1.0003 are one value in bf16 and f16: compared there, reduce max's adjoint split
  // its gradient between them and binary max's gave it to the wrong operand.
  Graph g;
  NodeId x = g.parameter("x", {DType::f32, {1, 3}});
  NodeId a = g.parameter("a", {DType::f32, {2}});
  NodeId b = g.parameter("b", {DType::f32, {2}});
  NodeId lm = g.reduce(ReduceKind::Sum, g.reduce(ReduceKind::Max, x, {1}), {0});
  NodeId lmx = g.reduce(ReduceKind::Sum, g.binary(OpKind::Max, a, b), {0});
  g.setOutputs({g.binary(OpKind::Add, lm, lmx, "loss")});
  Graph t = autodiff::grad(g, "loss", {"x", "a", "b"});
  HostTensor xv(DType::f32, {1, 3}), av(DType::f32, {2}), bv(DType::f32, {2});
  const double xs[] = {1.0, 1.0003, 0.5}, as[] = {1.0, -3}, bs[] = {1.0003, -2};
  for (int64_t i = 0; i < 3; ++i)
    xv.set(i, xs[i]);
  for (int64_t i = 0; i < 2; ++i) {
    av.set(i, as[i]);
    bv.set(i, bs[i]);
  }
  for (DType low : {DType::f16, DType::bf16}) {
    INFO(dtypeName(low));
    std::vector<HostTensor> out = interpret(passes::autoMixedPrecision(t, low), {xv, av, bv});
    REQUIRE(out.size() == 4);
    CHECK(out[1].get(0) == 0);
    CHECK(out[1].get(1) == 1);
    CHECK(out[1].get(2) == 0);
    CHECK(out[2].get(0) == 0);
    CHECK(out[2].get(1) == 0);
    CHECK(out[3].get(0) == 1);
    CHECK(out[3].get(1) == 1);
  }
}
