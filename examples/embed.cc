// Embedding weft in a C++ program through its public API alone (include/weft, nothing from
// src/): build BERT's LayerNorm over a symbolic batch with the graph builder, compile it once,
// run it on the default device (a GPU when a CUDA driver is present, else the simulator) for
// two batch sizes, check it against a plain C++ LayerNorm and print the plan and a checksum.
// Built as build/examples/embed_layer_norm with only include/ on its include path; CI runs it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <weft/weft.h>

namespace {

using weft::DType;
using weft::Value;

/// y = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta over the last axis of x [B, hidden].
weft::Graph layerNorm(int64_t hidden, double epsilon) {
  weft::Graph g("layer_norm");
  weft::Shape rows = {"B"}, full = {"B", hidden};
  Value x = g.parameter("x", DType::f32, full);
  Value gamma = g.parameter("gamma", DType::f32, {hidden});
  Value beta = g.parameter("beta", DType::f32, {hidden});
  auto perRow = [&](Value sum) { // a row sum / hidden, broadcast back over the row
    Value mean = g.div(sum, g.broadcastInDim(g.scalar(DType::f32, double(hidden)), rows, {}));
    return g.broadcastInDim(mean, full, {0});
  };
  Value centered = g.sub(x, perRow(g.reduceSum(x, {1}, "mean_sum")), "centered");
  Value var = perRow(g.reduceSum(g.mul(centered, centered), {1}, "var_sum"));
  Value eps = g.broadcastInDim(g.scalar(DType::f32, epsilon), full, {});
  Value normalized = g.mul(centered, g.rsqrt(g.add(var, eps)));
  Value scaled = g.mul(normalized, g.broadcastInDim(gamma, full, {1}));
  g.addOutput(g.add(scaled, g.broadcastInDim(beta, full, {1}), "y"));
  return g;
}

/// The same LayerNorm in double precision, row by row: what the device's result must match.
std::vector<double> layerNormOnHost(const weft::HostTensor& x, const weft::HostTensor& gamma,
                                    const weft::HostTensor& beta, double epsilon) {
  const int64_t batch = x.shape[0], hidden = x.shape[1];
  std::vector<double> y(static_cast<size_t>(batch * hidden));
  for (int64_t r = 0; r < batch; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < hidden; ++c)
      mean += x.get(r * hidden + c);
    mean /= double(hidden);
    for (int64_t c = 0; c < hidden; ++c)
      var += (x.get(r * hidden + c) - mean) * (x.get(r * hidden + c) - mean);
    var /= double(hidden);
    for (int64_t c = 0; c < hidden; ++c)
      y[size_t(r * hidden + c)] = (x.get(r * hidden + c) - mean) / std::sqrt(var + epsilon) *
                                      gamma.get(c) + beta.get(c);
  }
  return y;
}

weft::HostTensor filled(std::vector<int64_t> shape, double (*f)(int64_t)) {
  weft::HostTensor t(DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, f(i));
  return t;
}

} // namespace

int main() try {
  constexpr int64_t kHidden = 768;
  constexpr double kEpsilon = 1e-12;
  weft::Graph graph = layerNorm(kHidden, kEpsilon);
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
    std::vector<double> want = layerNormOnHost(inputs[0], inputs[1], inputs[2], kEpsilon);
    double checksum = 0, worst = 0;
    for (int64_t i = 0; i < y[0].numElements(); ++i) {
      checksum += y[0].get(i);
      worst = std::max(worst, std::abs(y[0].get(i) - want[size_t(i)]));
    }
    weft::Program program = exe.programFor({{"B", batch}});
    std::printf("layer norm [%lld, %lld] on %s: %d kernel(s), checksum %.6f, max |error| vs the "
                "host reference %.3g, compiled in %.1f ms\n",
                static_cast<long long>(batch), static_cast<long long>(kHidden),
                device->name().c_str(), program.plan().kernelCount(), checksum, worst,
                program.timings().totalMs);
    ok = ok && worst <= 1e-4;
  }
  std::string plan = exe.programFor({{"B", 64}}).plan().str();
  std::printf("the plan for B = 64:\n%s%s", plan.c_str(), plan.ends_with('\n') ? "" : "\n");
  std::printf("%s\n", ok ? "ok" : "MISMATCH against the host reference");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "embed_layer_norm: %s\n", e.what());
  return 1;
}
