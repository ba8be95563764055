// Training graphs end to end: the gradient of the layer norm example against the hand-written
// backward, and the training graphs autodiff makes for the suite's normalisations and
// activations compiled under every policy, run on the simulator and checked against the
// reference interpreter, with astitch's kernel count held to what the hand-written backward
// gets (one).
#include <catch2/catch.hpp>

#include "autodiff/grad.h"
#include "compile.h"
#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "ir/interpreter.h"
#include "runtime/conditioning.h"
#include "runtime/output_check.h"

using namespace weft;
using weft::ir::interpret;
using weft::ir::NodeId;

namespace {

frontend::ParsedGraph example(const std::string& name) {
  return frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" + name + ".json");
}

/// A forward graph with the loss sum(f(x, ...) * dy): its gradients are f's backward for the
/// upstream gradient dy. `op` is one JSON op on inputs x (+ `extra`) giving "y".
frontend::ParsedGraph lossGraph(const std::string& name, int64_t hidden, const std::string& op,
                                const std::string& extraInputs = "") {
  std::string h = std::to_string(hidden);
  std::string text = R"({"name": ")" + name + R"(", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", )" + h +
                     "]}" + extraInputs + R"(, {"name": "dy", "dtype": "f32", "shape": ["B", )" + h +
                     R"(]}], "ops": [)" + op +
                     R"(, {"name": "y_dy", "op": "mul", "inputs": ["y", "dy"]},
      {"name": "loss", "op": "reduce", "inputs": ["y_dy"], "kind": "sum", "axes": [0, 1]}],
      "outputs": ["loss"]})";
  return frontend::readGraphJson(text, name + ".json");
}

struct TrainingCase {
  frontend::ParsedGraph forward;
  std::vector<std::string> wrt;
};

std::vector<TrainingCase> trainingCases() {
  return {
      {example("layer_norm_loss"), {"x", "gamma", "beta"}},
      {lossGraph("softmax", 1024, R"({"name": "y", "op": "softmax", "inputs": ["x"]})"), {"x"}},
      {lossGraph("log_softmax", 1000, R"({"name": "y", "op": "log_softmax", "inputs": ["x"]})"), {"x"}},
      {lossGraph("rms_norm", 4096, R"({"name": "y", "op": "rms_norm", "inputs": ["x", "w"]})",
                 R"(, {"name": "w", "dtype": "f32", "shape": [4096]})"),
       {"x", "w"}},
      {lossGraph("gelu_bias", 3072,
                 R"({"name": "h", "op": "add", "inputs": ["x", "bias"]}, {"name": "y", "op": "gelu", "inputs": ["h"]})",
                 R"(, {"name": "bias", "dtype": "f32", "shape": [3072]})"),
       {"x", "bias"}},
  };
}

} // namespace

TEST_CASE("the gradient of the layer norm example is the hand-written layer norm backward",
          "[autodiff][layer_norm]") {
  ir::Graph forward = example("layer_norm_loss").graph;
  ir::Graph training = autodiff::grad(forward, "loss", {"x", "gamma", "beta"});
  // The hand-written backward reads the forward's saved statistics: take them from the
  // training graph's own forward part.
  std::vector<NodeId> outs = training.outputs();
  outs.push_back(*training.find("y.mean"));
  outs.push_back(*training.find("y.rstd"));
  training.setOutputs(outs);
  ir::Graph backward = example("layer_norm_backward").graph;
  for (int64_t b : {1, 7, 64}) {
    Binding binding{{"B", b}};
    std::vector<HostTensor> in = frontend::randomInputs(forward, binding, uint64_t(b));
    std::vector<HostTensor> got = interpret(training, in, binding); // loss, dx, dgamma, dbeta, mean, rstd
    // layer_norm_backward's inputs: x, dy, gamma, mean, rstd
    std::vector<HostTensor> want = interpret(backward, {in[0], in[3], in[1], got[4], got[5]}, binding);
    for (size_t k = 0; k < 3; ++k) {
      INFO("B=" << b << ", " << backward.node(backward.outputs()[k]).name);
      REQUIRE(got[1 + k].shape == want[k].shape);
      double worst = 0, scale = 0;
      for (int64_t i = 0; i < want[k].numElements(); ++i) {
        worst = std::max(worst, std::abs(got[1 + k].get(i) - want[k].get(i)));
        scale = std::max(scale, std::abs(want[k].get(i)));
      }
      CHECK(worst <= 1e-5 * (1 + scale)); // both in f32, summed in different orders
    }
  }
}

TEST_CASE("training graphs compile under every policy and match the interpreter on the simulator",
          "[autodiff][sim]") {
  for (const TrainingCase& c : trainingCases()) {
    ir::Graph training = autodiff::grad(c.forward.graph, "loss", c.wrt);
    for (Policy policy : {Policy::AStitch, Policy::Xla, Policy::None}) {
      CompileOptions o;
      o.policy = policy;
      o.cacheDir = "off";
      auto compiled = compile(training, o);
      auto device = makeDevice("sim", o.device);
      Executable exe(compiled, *device);
      for (int64_t b : {1, 37}) {
        Binding binding{{"B", b}};
        INFO(c.forward.name << " under " << policyName(policy) << " at B=" << b);
        std::vector<HostTensor> in = frontend::randomInputs(training, binding, uint64_t(b));
        std::vector<HostTensor> expected = interpret(training, in, binding);
        auto spread = runtime::conditioningSpread(training, in, expected, binding, uint64_t(b));
        std::vector<HostTensor> got = exe.run(in, binding);
        for (size_t k = 0; k < expected.size(); ++k) {
          runtime::TensorCheck check = runtime::checkTensor(
              training.node(training.outputs()[k]).name, expected[k], got[k], &spread[k]);
          INFO(check.str());
          CHECK(check.passed);
        }
        if (policy == Policy::AStitch) {
          // Measured: forward, loss and backward of each case stitch into one kernel (row
          // reductions share the row mapping, the column sums of dgamma/dbeta/dbias and the
          // loss's full reduction ride along behind grid barriers) — as many as the
          // hand-written layer_norm_backward gets.
          CHECK(exe.programFor(binding).plan().kernelCount() == 1);
        }
      }
    }
  }
}

TEST_CASE("the hand-written layer norm backward stitches into one kernel too", "[autodiff][sim]") {
  CompileOptions o;
  o.cacheDir = "off";
  auto compiled = compile(example("layer_norm_backward").graph, o);
  CHECK(compiled->program({{"B", 4096}}).plan().kernelCount() == 1);
  ir::Graph training = autodiff::grad(example("layer_norm_loss").graph, "loss", {"x", "gamma", "beta"});
  CHECK(compile(training, o)->program({{"B", 4096}}).plan().kernelCount() == 1);
}

TEST_CASE("generated training steps move at most 1.10x their compulsory bytes under astitch",
          "[autodiff][sim][traffic]") {
  // The step's scalar loss sum(y * dy) is split into per-row sums read off the forward's row
  // loop, then a sum of the rows (fusion/reduction_split.h): no pass of its own over x and dy.
  // Measured at B = 4096 (the suite's size; sim counters): layer norm 40.2 / 37.8 MB,
  // softmax 50.4 / 50.3, log-softmax 49.2 / 49.2, RMSNorm 208.0 / 201.4 — before the split
  // 2.17x, 4.23x, -, 2.09x. bias + GELU's step is left out: 2.05x (docs/training.md says why).
  std::vector<TrainingCase> cases = trainingCases();
  cases.pop_back(); // bias + GELU
  const Binding binding{{"B", 4096}};
  for (const TrainingCase& c : cases) {
    ir::Graph training = autodiff::grad(c.forward.graph, "loss", c.wrt);
    CompileOptions o;
    o.cacheDir = "off";
    auto compiled = compile(training, o);
    auto device = makeDevice("sim", o.device);
    Executable exe(compiled, *device);
    std::vector<HostTensor> in = frontend::randomInputs(training, binding, 5);
    std::vector<HostTensor> got = exe.run(in, binding);
    uint64_t moved = 0;
    for (const LaunchCounters& k : exe.takeCounters())
      moved += (k.globalSectorsRead + k.globalSectorsWritten) * 32;
    uint64_t compulsory = 0;
    for (const HostTensor& t : in)
      compulsory += t.bytes.size();
    for (const HostTensor& t : got)
      compulsory += t.bytes.size();
    INFO(c.forward.name << ": " << moved << " bytes moved, " << compulsory << " compulsory");
    CHECK(exe.programFor(binding).plan().kernelCount() == 1);
    CHECK(double(moved) <= 1.10 * double(compulsory));
    // The loss, summed per row then over the rows, is still the interpreter's loss (the
    // gradients, which the split does not touch, are held to it in the test above). Only the
    // loss is interpreted: the backward at this size made this test 8 minutes of CI.
    ir::Graph lossOnly = training;
    lossOnly.setOutputs({training.outputs()[0]});
    std::vector<HostTensor> expected = interpret(lossOnly, in, binding);
    auto spread = runtime::conditioningSpread(lossOnly, in, expected, binding, 5);
    runtime::TensorCheck check = runtime::checkTensor("loss", expected[0], got[0], &spread[0]);
    INFO(check.str());
    CHECK(check.passed);
  }
}

TEST_CASE("the MLP step's backward recomputes the forward's values after the dot",
          "[autodiff][sim][traffic]") {
  // bench's mlp_train_step (x [1024, 128] -> 512 -> 64, weft grad --sgd 0.1). The kernel after
  // the dots recomputes the layer norm and GELU values it reads from h and the [B] statistics
  // (fusion/scope_recompute.h) instead of loading seven stored [B, 512] values: measured 111.2
  // MB before, 51.3 MB after (sim counters, generic program).
  ir::Graph step =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/bench/workloads/mlp_train_step.json")
          .graph;
  CompileOptions o;
  o.cacheDir = "off";
  auto compiled = compile(step, o);
  auto device = makeDevice("sim", o.device);
  Executable exe(compiled, *device);
  CHECK(exe.programFor({}).plan().kernelCount() == 3);
  // The plan says which values and why: together, as h is what they all load.
  std::string text = exe.programFor({}).plan().str();
  CHECK(text.find("graph: %n.centered, %n.rstd_broadcast, %n.normalized, %n.gamma_broadcast, "
                  "%a.one_plus, %a.half_x, %d_a.erf.4, %d_n.rstd.3: recomputed by stitch2 "
                  "together") != std::string::npos);
  std::vector<HostTensor> in = frontend::randomInputs(step, {}, 7);
  std::vector<HostTensor> got = exe.run(in);
  uint64_t moved = 0;
  for (const LaunchCounters& k : exe.takeCounters())
    moved += (k.globalSectorsRead + k.globalSectorsWritten) * 32;
  INFO(moved << " bytes moved");
  CHECK(moved < 55'000'000);
  std::vector<HostTensor> expected = interpret(step, in);
  auto spread = runtime::conditioningSpread(step, in, expected, {}, 7);
  for (size_t k = 0; k < expected.size(); ++k) {
    runtime::TensorCheck check =
        runtime::checkTensor(step.node(step.outputs()[k]).name, expected[k], got[k], &spread[k]);
    INFO(check.str());
    CHECK(check.passed);
  }
}
