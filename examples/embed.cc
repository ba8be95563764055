// Embedding weft in a C++ program: build BERT's LayerNorm over a symbolic batch with the
// graph builder, compile it once, run it on the default device (a GPU when a CUDA driver is
// present, else the simulator) for two batch sizes, check it against the reference
// interpreter and print a checksum. Built as build/examples/embed_layer_norm; CI runs it.
#include <cmath>
#include <cstdio>
#include <exception>

#include "ir/interpreter.h"
#include "weft/weft.h"

namespace {

using weft::ir::Dim;
using weft::ir::OpKind;
using weft::ir::ReduceKind;

/// y = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta over the last axis of x [B, hidden].
weft::ir::Graph layerNorm(int64_t hidden, double epsilon) {
  weft::ir::Graph g;
  Dim batch = Dim::symbol("B");
  weft::ir::Shape rows = {batch}, full = {batch, hidden};
  auto x = g.parameter("x", {weft::DType::f32, full});
  auto gamma = g.parameter("gamma", {weft::DType::f32, {hidden}});
  auto beta = g.parameter("beta", {weft::DType::f32, {hidden}});
  auto perRow = [&](weft::ir::NodeId sum) { // a row sum / hidden, broadcast back over the row
    auto mean = g.binary(OpKind::Div, sum,
                         g.broadcastInDim(g.scalar(weft::DType::f32, double(hidden)), rows, {}));
    return g.broadcastInDim(mean, full, {0});
  };
  auto centered =
      g.binary(OpKind::Sub, x, perRow(g.reduce(ReduceKind::Sum, x, {1}, "mean_sum")), "centered");
  auto var =
      perRow(g.reduce(ReduceKind::Sum, g.binary(OpKind::Mul, centered, centered), {1}, "var_sum"));
  auto eps = g.broadcastInDim(g.scalar(weft::DType::f32, epsilon), full, {});
  auto normalized =
      g.binary(OpKind::Mul, centered, g.unary(OpKind::Rsqrt, g.binary(OpKind::Add, var, eps)));
  auto scaled = g.binary(OpKind::Mul, normalized, g.broadcastInDim(gamma, full, {1}));
  g.addOutput(g.binary(OpKind::Add, scaled, g.broadcastInDim(beta, full, {1}), "y"));
  return g;
}

weft::HostTensor filled(std::vector<int64_t> shape, double (*f)(int64_t)) {
  weft::HostTensor t(weft::DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, f(i));
  return t;
}

} // namespace

int main() try {
  constexpr int64_t kHidden = 768;
  weft::ir::Graph graph = layerNorm(kHidden, 1e-12);
  weft::CompileOptions options; // astitch policy, h100 profile
  auto compiled = weft::compile(graph, options);
  auto device = weft::makeDevice("auto", options.device);
  weft::Executable exe(compiled, *device);

  bool ok = true;
  for (int64_t batch : {64, 200}) {
    std::vector<weft::HostTensor> inputs = {
        filled({batch, kHidden}, [](int64_t i) { return std::sin(0.37 * double(i)) * 2.0; }),
        filled({kHidden}, [](int64_t i) { return 1.0 + 0.001 * double(i % 7); }),
        filled({kHidden}, [](int64_t i) { return 0.01 * double(i % 5); })};
    std::vector<weft::HostTensor> y = exe.run(inputs); // B is bound from x's shape
    std::vector<weft::HostTensor> want = weft::ir::interpret(graph, inputs, {{"B", batch}});
    double checksum = 0, worst = 0;
    for (int64_t i = 0; i < y[0].numElements(); ++i) {
      checksum += y[0].get(i);
      worst = std::max(worst, std::abs(y[0].get(i) - want[0].get(i)));
    }
    int kernels = exe.programFor({{"B", batch}})->plan.kernelCount();
    std::printf("layer norm [%lld, %lld] on %s: %d kernel(s), checksum %.6f, max |error| vs the "
                "reference %.3g\n",
                static_cast<long long>(batch), static_cast<long long>(kHidden),
                device->name().c_str(), kernels, checksum, worst);
    ok = ok && worst <= 1e-4;
  }
  std::printf("%s\n", ok ? "ok" : "MISMATCH against the reference interpreter");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "embed_layer_norm: %s\n", e.what());
  return 1;
}
