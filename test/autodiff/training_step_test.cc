// Optimizer steps (autodiff/optimizer.h): SGD and Adam against their formulas on the
// gradients grad() computes, Adam's bias correction across steps, the step's naming and its
// errors; then the MLP example trained for 50 SGD steps on the simulator (its updated
// parameters fed back as inputs) on a fixed synthetic task, and its mixed-precision step
// against f32 with no cast-only kernel under astitch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <fmt/format.h>

#include "autodiff/grad.h"
#include "autodiff/optimizer.h"
#include "compile.h"
#include "grad_check.h"
#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "fusion/plan.h"
#include "ir/interpreter.h"
#include "passes/amp.h"
#include "passes/pipeline.h"
#include "weft/error.h"

using namespace weft;
using weft::ir::interpret;
using weft::ir::NodeId;

namespace {

ir::Graph example(const std::string& name) {
  return frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" + name + ".json")
      .graph;
}

std::vector<std::string> names(const ir::Graph& g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId id : ids) out.push_back(g.node(id).name + ": " + g.node(id).type.str());
  return out;
}

const std::vector<std::string> kLayerNormParams = {"x", "gamma", "beta"};
const std::vector<std::string> kMlpParams = {"w1", "b1", "gamma", "beta", "w2", "b2"};

/// Deterministic numbers in [-1, 1), the same on every platform (frontend::SplitMix64).
struct Numbers {
  frontend::SplitMix64 rng;
  double next() { return rng.unit() * 2.0 - 1.0; }
};

HostTensor filled(std::vector<int64_t> shape, double scale, Numbers& r) {
  HostTensor t(DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i) t.set(i, scale * r.next());
  return t;
}

HostTensor constant(std::vector<int64_t> shape, double v) {
  HostTensor t(DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i) t.set(i, v);
  return t;
}

/// The fixed synthetic task for mlp_train: x uniform with unit variance, each row's label the
/// argmax of a fixed random linear teacher x T (learnable, not memorised noise), and the
/// parameters' usual initialisation (uniform with 1/fan_in variance, gamma 1, beta and the
/// biases 0). Inputs in the example's order: x, targets, w1, b1, gamma, beta, w2, b2.
std::vector<HostTensor> mlpTask(int64_t rows) {
  Numbers r{2026};
  const double unit = std::sqrt(3.0);
  HostTensor x = filled({rows, 32}, unit, r);
  HostTensor teacher = filled({32, 10}, 1.0, r);
  HostTensor targets(DType::f32, {rows, 10});
  for (int64_t i = 0; i < rows; ++i) {
    int best = 0;
    double bestScore = -1e300;
    for (int c = 0; c < 10; ++c) {
      double s = 0;
      for (int k = 0; k < 32; ++k) s += x.get(i * 32 + k) * teacher.get(k * 10 + c);
      if (s > bestScore) bestScore = s, best = c;
    }
    targets.set(i * 10 + best, 1.0);
  }
  return {x,
          targets,
          filled({32, 64}, unit / std::sqrt(32.0), r),
          constant({64}, 0.0),
          constant({64}, 1.0),
          constant({64}, 0.0),
          filled({64, 10}, unit / std::sqrt(64.0), r),
          constant({10}, 0.0)};
}

HostTensor retyped(const HostTensor& t, DType to) {
  HostTensor r(to, t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i) r.set(i, t.get(i));
  return r;
}

/// mlp_train's SGD step as `weft grad --sgd LR [--amp low]` writes it: the gradient, AMP on
/// the forward and backward, then the update on the f32 parameters.
ir::Graph mlpStep(double lr, std::optional<DType> low = std::nullopt) {
  ir::Graph training = autodiff::grad(example("mlp_train"), "loss", kMlpParams);
  if (low) training = passes::autoMixedPrecision(training, *low);
  return autodiff::sgdStep(training, kMlpParams, {lr});
}

double maxAbs(const HostTensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numElements(); ++i) m = std::max(m, std::abs(t.get(i)));
  return m;
}

} // namespace

TEST_CASE("an SGD step outputs the forward's outputs and p - lr * grad, named new_<p>",
          "[autodiff][optimizer]") {
  ir::Graph forward = example("layer_norm_loss");
  ir::Graph training = autodiff::grad(forward, "loss", kLayerNormParams);
  ir::Graph step = autodiff::sgdStep(training, kLayerNormParams, {0.25});
  CHECK(names(step, step.inputs()) == names(forward, forward.inputs()));
  CHECK(names(step, step.outputs()) == std::vector<std::string>{"loss: f32[]", "new_x: f32[B, 768]",
                                                                 "new_gamma: f32[768]",
                                                                 "new_beta: f32[768]"});
  ir::Binding b{{"B", 5}};
  std::vector<HostTensor> in = frontend::randomInputs(forward, b, 3);
  std::vector<HostTensor> grads = interpret(training, in, b); // loss, grad_x, grad_gamma, grad_beta
  std::vector<HostTensor> got = interpret(step, in, b);
  CHECK(got[0].get(0) == grads[0].get(0));
  for (size_t k = 0; k < 3; ++k) {
    INFO(kLayerNormParams[k]);
    REQUIRE(got[1 + k].numElements() == in[k].numElements());
    double worst = 0;
    for (int64_t i = 0; i < in[k].numElements(); ++i) {
      float want = static_cast<float>(in[k].get(i)) - 0.25f * static_cast<float>(grads[1 + k].get(i));
      worst = std::max(worst, std::abs(got[1 + k].get(i) - want));
    }
    CHECK(worst <= 1e-6 * (1 + maxAbs(in[k])));
  }
}

TEST_CASE("an Adam step updates parameters and moments, with the bias correction of its step",
          "[autodiff][optimizer]") {
  ir::Graph forward = example("layer_norm_loss");
  ir::Graph training = autodiff::grad(forward, "loss", kLayerNormParams);
  autodiff::AdamOptions o;
  o.lr = 0.01;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  o.eps = 1e-6;
  ir::Graph step = autodiff::adamStep(training, kLayerNormParams, o);
  CHECK(names(step, step.inputs()) ==
        std::vector<std::string>{"x: f32[B, 768]", "gamma: f32[768]", "beta: f32[768]", "dy: f32[B, 768]",
                                 "m_x: f32[B, 768]", "m_gamma: f32[768]", "m_beta: f32[768]",
                                 "v_x: f32[B, 768]", "v_gamma: f32[768]", "v_beta: f32[768]",
                                 "adam_step: i32[]"});
  CHECK(names(step, step.outputs()) ==
        std::vector<std::string>{"loss: f32[]", "new_x: f32[B, 768]", "new_gamma: f32[768]",
                                 "new_beta: f32[768]", "new_m_x: f32[B, 768]", "new_m_gamma: f32[768]",
                                 "new_m_beta: f32[768]", "new_v_x: f32[B, 768]", "new_v_gamma: f32[768]",
                                 "new_v_beta: f32[768]", "new_adam_step: i32[]"});
  ir::Binding b{{"B", 3}};
  std::vector<HostTensor> in = frontend::randomInputs(step, b, 11);
  for (size_t k = 7; k < 10; ++k) // second moments are never negative
    for (int64_t i = 0; i < in[k].numElements(); ++i) in[k].set(i, std::abs(in[k].get(i)));
  std::vector<HostTensor> grads = interpret(training, {in.begin(), in.begin() + 4}, b);
  for (int t : {1, 3, 40}) {
    in[10].setInt(0, t);
    std::vector<HostTensor> got = interpret(step, in, b);
    CHECK(got[10].getInt(0) == t + 1);
    for (size_t k = 0; k < 3; ++k) {
      INFO(kLayerNormParams[k] << " at step " << t);
      double worstP = 0, worstM = 0, worstV = 0;
      for (int64_t i = 0; i < in[k].numElements(); ++i) {
        double g = grads[1 + k].get(i), m = in[4 + k].get(i), v = in[7 + k].get(i);
        double m1 = o.beta1 * m + (1 - o.beta1) * g, v1 = o.beta2 * v + (1 - o.beta2) * g * g;
        double mHat = m1 / (1 - std::pow(o.beta1, t)), vHat = v1 / (1 - std::pow(o.beta2, t));
        double p1 = in[k].get(i) - o.lr * mHat / (std::sqrt(vHat) + o.eps);
        worstM = std::max(worstM, std::abs(got[4 + k].get(i) - m1) / (1 + std::abs(m1)));
        worstV = std::max(worstV, std::abs(got[7 + k].get(i) - v1) / (1 + std::abs(v1)));
        worstP = std::max(worstP, std::abs(got[1 + k].get(i) - p1) / (1 + std::abs(p1)));
      }
      CHECK(worstM <= 1e-6);
      CHECK(worstV <= 1e-6);
      CHECK(worstP <= 1e-6);
    }
  }
}

TEST_CASE("optimizer steps refuse bad options and names they would reuse", "[autodiff][optimizer]") {
  ir::Graph forward = example("layer_norm_loss");
  ir::Graph training = autodiff::grad(forward, "loss", kLayerNormParams);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([&] { autodiff::sgdStep(training, kLayerNormParams, {0.0}); }) ==
        "--sgd 0: must be a finite number greater than 0");
  autodiff::AdamOptions bad;
  bad.beta2 = 1.0;
  CHECK(message([&] { autodiff::adamStep(training, kLayerNormParams, bad); }) ==
        "--beta2 1: must be in [0, 1)");
  bad = {};
  bad.eps = -1;
  CHECK(message([&] { autodiff::adamStep(training, kLayerNormParams, bad); }) ==
        "--eps -1: must be a finite number greater than 0");
  CHECK(message([&] { autodiff::sgdStep(training, {"x", "dy"}, {0.1}); }) ==
        "parameter \"dy\": the training graph has no output \"grad_dy\"");
  // A forward graph that already has an input named like Adam's state.
  ir::Graph clash = forward;
  clash.parameter("m_gamma", clash.node(*clash.find("gamma")).type);
  ir::Graph clashTraining = autodiff::grad(clash, "loss", kLayerNormParams);
  CHECK(message([&] { autodiff::adamStep(clashTraining, kLayerNormParams, {}); }) ==
        "\"m_gamma\": the training step's name for it is already a value's name in the graph");
}

TEST_CASE("grad and Adam name their own values around the forward graph's names",
          "[autodiff][optimizer]") {
  // Values named like the seed of the loss's adjoint and Adam's internal scalars: valid names
  // of the forward graph (no op named d_loss or adam_step.f32), once refused as taken.
  ir::Graph forward = frontend::readGraphJson(R"({"inputs": [
      {"name": "x", "dtype": "f32", "shape": [3]}],
    "ops": [
      {"name": "d_loss.seed", "op": "exp", "inputs": ["x"]},
      {"name": "adam_step.f32.t", "op": "mul", "inputs": ["d_loss.seed", "x"]},
      {"name": "adam_step.increment", "op": "sin", "inputs": ["adam_step.f32.t"]},
      {"name": "loss", "op": "reduce", "kind": "sum", "axes": [0], "inputs": ["adam_step.increment"]}],
    "outputs": ["loss"]})",
                                              "clash.json")
                          .graph;
  ir::Graph training = autodiff::grad(forward, "loss", {"x"});
  ir::Graph step = autodiff::adamStep(training, {"x"}, {});
  std::vector<HostTensor> in = frontend::randomInputs(step, {}, 3); // x, m_x, v_x, adam_step
  for (size_t k : {1, 2})
    for (int64_t i = 0; i < 3; ++i)
      in[k].set(i, 0.0);
  in.back().setInt(0, 1);
  std::vector<HostTensor> got = interpret(step, in);
  // The first Adam step moves each element by lr against its gradient's sign.
  std::vector<HostTensor> grads = interpret(training, {in[0]});
  for (int64_t i = 0; i < 3; ++i) {
    double g = grads[1].get(i);
    CHECK(got[1].get(i) == Approx(in[0].get(i) - 0.001 * g / (std::abs(g) + 1e-8)).epsilon(1e-5));
  }
}

TEST_CASE("the MLP example learns its synthetic task in 50 SGD steps on the simulator",
          "[autodiff][optimizer][sim]") {
  ir::Graph step = mlpStep(0.5);
  const int64_t rows = 64;
  ir::Binding b{{"B", rows}};
  std::map<Policy, std::vector<double>> losses;
  for (Policy policy : {Policy::AStitch, Policy::Xla, Policy::None}) {
    INFO(policyName(policy));
    std::vector<HostTensor> in = mlpTask(rows);
    CompileOptions o;
    o.policy = policy;
    o.cacheDir = "off";
    auto device = makeDevice("sim", o.device);
    Executable exe(compile(step, o), *device);
    std::vector<double>& loss = losses[policy];
    for (int s = 0; s < 50; ++s) {
      std::vector<HostTensor> out = exe.run(in, b);
      if (s == 0) {
        // The simulator's first step is the interpreter's.
        std::vector<HostTensor> want = interpret(step, in, b);
        for (size_t k = 0; k < want.size(); ++k) {
          INFO(step.node(step.outputs()[k]).name);
          double worst = 0;
          for (int64_t i = 0; i < want[k].numElements(); ++i)
            worst = std::max(worst, std::abs(out[k].get(i) - want[k].get(i)));
          CHECK(worst <= 1e-4 * (1 + maxAbs(want[k])));
        }
      }
      loss.push_back(out[0].get(0));
      for (size_t k = 0; k < kMlpParams.size(); ++k) in[2 + k] = out[1 + k]; // new_<p> -> <p>
    }
    INFO(fmt::format("loss: first {:.4f}, step 10 {:.4f}, step 25 {:.4f}, last {:.4f}", loss[0],
                     loss[10], loss[25], loss[49]));
    // Ten classes from a random start: about ln 10 = 2.3. A gradient with a wrong sign or a
    // wrong scale on any layer stalls or diverges; this one falls below a tenth of it.
    CHECK(loss[0] > 1.5);
    CHECK(loss[49] < 0.1 * loss[0]);
    for (size_t s = 1; s < loss.size(); ++s) CHECK(std::isfinite(loss[s]));
    // Every policy trains the same model: the same curve up to f32 summation order.
    double drift = 0;
    for (size_t s = 0; s < loss.size(); ++s)
      drift = std::max(drift, std::abs(loss[s] - losses[Policy::AStitch][s]) / losses[Policy::AStitch][s]);
    INFO("largest relative difference from astitch's curve: " << drift);
    CHECK(drift <= 1e-3);
  }
}

TEST_CASE("Adam trains the MLP with its state fed back by name: new_<name> into <name>",
          "[autodiff][optimizer]") {
  autodiff::AdamOptions o;
  o.lr = 0.01;
  ir::Graph step =
      autodiff::adamStep(autodiff::grad(example("mlp_train"), "loss", kMlpParams), kMlpParams, o);
  ir::Binding b{{"B", 64}};
  // The example's inputs, then zero moments and step 1, each input found by its name.
  std::vector<HostTensor> in = mlpTask(64);
  for (size_t i = in.size(); i < step.inputs().size(); ++i) {
    const ir::Node& n = step.node(step.inputs()[i]);
    in.emplace_back(n.type.dtype, ir::evaluate(n.type.shape, b));
  }
  in.back().setInt(0, 1);
  std::map<std::string, size_t> inputAt;
  for (size_t i = 0; i < step.inputs().size(); ++i) inputAt[step.node(step.inputs()[i]).name] = i;
  std::vector<double> losses;
  for (int s = 0; s < 30; ++s) {
    std::vector<HostTensor> out = interpret(step, in, b);
    losses.push_back(out[0].get(0));
    size_t fed = 0;
    for (size_t k = 1; k < out.size(); ++k) {
      std::string name = step.node(step.outputs()[k]).name;
      REQUIRE(name.rfind("new_", 0) == 0);
      in[inputAt.at(name.substr(4))] = out[k];
      ++fed;
    }
    CHECK(fed == 3 * kMlpParams.size() + 1); // parameters, both moments, the step count
  }
  CHECK(in[inputAt.at("adam_step")].getInt(0) == 31);
  INFO("loss: first " << losses[0] << ", last " << losses.back());
  CHECK(losses.back() < 0.2 * losses[0]);
}

TEST_CASE("the MLP's backward transposes the smaller side of each dot", "[autodiff]") {
  // d_w2 = a^T d_z would transpose the activations a [B, 64]; (d_z^T a)^T transposes d_z
  // [B, 10] and the [10, 64] result instead. d_w1 = x^T d_h keeps x^T ([B, 32] against d_h
  // [B, 64]), d_a = d_z w2^T keeps w2^T.
  ir::Graph t = autodiff::grad(example("mlp_train"), "loss", kMlpParams);
  std::vector<std::string> transposed;
  for (const ir::Node& n : t.nodes())
    if (n.kind == ir::OpKind::Transpose) transposed.push_back(t.node(n.operands[0]).type.str());
  std::sort(transposed.begin(), transposed.end());
  CHECK(transposed == std::vector<std::string>{"f32[10, 64]", "f32[64, 10]", "f32[B, 10]", "f32[B, 32]"});
}

TEST_CASE("the MLP example's gradients match finite differences in f64", "[autodiff][optimizer]") {
  ir::Graph f64 = testing::retypeFloats(example("mlp_train"), DType::f64);
  ir::Binding b{{"B", 4}};
  std::vector<HostTensor> in;
  for (const HostTensor& t : mlpTask(4)) in.push_back(retyped(t, DType::f64));
  testing::GradCheck r = testing::checkGradients(f64, f64, "loss", kMlpParams, in, b, 1e-6);
  INFO(r.worst);
  CHECK(r.compared >= 2800); // of 2890 parameters; GELU and layer norm are smooth
  CHECK(r.failed == 0);
}

TEST_CASE("the MLP's f16 and bf16 training steps match f32, with no cast-only kernel",
          "[autodiff][optimizer][amp][sim]") {
  const int64_t rows = 64;
  ir::Binding b{{"B", rows}};
  std::vector<HostTensor> in = mlpTask(rows);
  // Halfway through training too, where the gradients are small beside the parameters.
  ir::Graph f32 = mlpStep(0.5);
  for (int s = 0; s < 2; ++s) {
    std::vector<HostTensor> want = interpret(f32, in, b);
    for (DType low : {DType::f16, DType::bf16}) {
      ir::Graph step = mlpStep(0.5, low);
      // The interface is f32's; the forward and backward ran low (a tenth of their ops or more).
      REQUIRE(names(step, step.inputs()) == names(f32, f32.inputs()));
      REQUIRE(names(step, step.outputs()) == names(f32, f32.outputs()));
      int lowered = 0;
      for (const ir::Node& n : step.nodes()) lowered += n.type.dtype == low;
      CHECK(lowered * 10 >= static_cast<int>(step.size()));
      // docs/graph-format.md's tolerance of the low dtype (atol, rtol), element by element, on
      // the loss and on each update (new_p - p: the part of new_p the precision touches).
      double atol = low == DType::f16 ? 1e-3 : 1e-2, rtol = low == DType::f16 ? 5e-3 : 2e-2;
      CompileOptions o;
      o.cacheDir = "off";
      auto device = makeDevice("sim", o.device);
      Executable exe(compile(step, o), *device);
      std::vector<HostTensor> got = exe.run(in, b);
      for (size_t k = 0; k < want.size(); ++k) {
        std::string name = f32.node(f32.outputs()[k]).name;
        int64_t bad = 0;
        double worst = 0, worstAbs = 0, scale = 0;
        for (int64_t i = 0; i < want[k].numElements(); ++i) {
          double base = k == 0 ? 0.0 : in[1 + k].get(i); // the parameter new_p replaces
          double w = want[k].get(i) - base, g = got[k].get(i) - base;
          double err = std::abs(g - w), allowed = atol + rtol * std::abs(w);
          worst = std::max(worst, err / allowed);
          worstAbs = std::max(worstAbs, err);
          scale = std::max(scale, std::abs(w));
          bad += !(err <= allowed);
        }
        INFO(name << " in " << dtypeName(low) << " at step " << s << ": worst error "
                  << worst << " of the tolerance, " << bad << " of " << want[k].numElements()
                  << " elements outside; worst " << worstAbs << " of scale " << scale << " = "
                  << worstAbs / scale);
        CHECK(bad == 0);
        // and against the tensor's own scale (an update is small beside atol): a few roundings
        // of the low precision, not a lost term (f16 keeps 11 significant bits, bf16 8).
        CHECK(worstAbs <= (low == DType::f16 ? 1e-2 : 5e-2) * scale);
      }
      // Under astitch (and xla) no kernel is casts alone: every convert fused into a consumer.
      ir::Graph canonical = passes::canonicalize(ir::bindSymbols(step, b));
      for (fusion::Policy policy : {fusion::Policy::AStitch, fusion::Policy::Xla}) {
        fusion::FusionPlan p = fusion::plan(canonical, *deviceSpecProfile("h100"), policy);
        int castKernels = 0, kernels = 0;
        for (const fusion::Step& st : p.steps) {
          const auto* k = std::get_if<fusion::KernelPlan>(&st);
          if (!k) continue;
          ++kernels;
          bool onlyCasts = true;
          for (NodeId op : k->ops) onlyCasts = onlyCasts && p.graph.node(op).kind == ir::OpKind::Convert;
          castKernels += onlyCasts;
        }
        INFO(dtypeName(low) << " under " << fusion::policyName(policy) << ": " << kernels << " kernels");
        CHECK(kernels > 0);
        CHECK(castKernels == 0);
      }
    }
    // Ten steps on: the second round compares where the gradients have shrunk.
    for (int t = 0; t < 10; ++t) {
      std::vector<HostTensor> out = interpret(f32, in, b);
      for (size_t k = 0; k < kMlpParams.size(); ++k) in[2 + k] = out[1 + k];
    }
  }
}
