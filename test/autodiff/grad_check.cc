#include "grad_check.h"

#include <cmath>
#include <fmt/format.h>
#include <random>

#include "autodiff/grad.h"
#include "ir/interpreter.h"

namespace weft::testing {

using namespace ir;

Graph retypeFloats(const Graph& g, DType to) {
  Graph out;
  for (const Node& n : g.nodes()) {
    TensorType t = n.type;
    if (isFloat(t.dtype)) t.dtype = to;
    if (n.kind == OpKind::Parameter)
      out.parameter(n.name, t);
    else
      out.add(n.kind, n.operands, n.attrs, t, n.name);
  }
  out.setOutputs(g.outputs());
  return out;
}

std::vector<HostTensor> drawInputs(const Graph& g, const Binding& binding,
                                   const std::vector<Range>& ranges, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> inputs;
  for (size_t k = 0; k < g.inputs().size(); ++k) {
    const TensorType& t = g.node(g.inputs()[k]).type;
    Range r = k < ranges.size() ? ranges[k] : Range{};
    std::uniform_real_distribution<double> value(r.lo, r.hi);
    std::uniform_int_distribution<int> integer(-3, 3);
    HostTensor x(t.dtype, evaluate(t.shape, binding));
    for (int64_t i = 0; i < x.numElements(); ++i) {
      if (isFloat(t.dtype))
        x.set(i, static_cast<float>(value(rng)));
      else if (isBool(t.dtype))
        x.set(i, integer(rng) > 0);
      else
        x.set(i, integer(rng));
    }
    inputs.push_back(std::move(x));
  }
  return inputs;
}

namespace {

HostTensor as(const HostTensor& x, DType t) {
  if (x.dtype == t || !isFloat(x.dtype)) return x;
  HostTensor y(t, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) y.set(i, x.get(i));
  return y;
}

size_t outputIndex(const Graph& g, const std::string& name) {
  for (size_t k = 0; k < g.outputs().size(); ++k)
    if (g.node(g.outputs()[k]).name == name) return k;
  return 0;
}

} // namespace

GradCheck checkGradients(const Graph& forward, const Graph& reference, const std::string& loss,
                         const std::vector<std::string>& wrt, const std::vector<HostTensor>& inputs,
                         const Binding& binding, double tol) {
  Graph training = autodiff::grad(forward, loss, wrt);
  std::vector<HostTensor> got = interpret(training, inputs, binding);
  std::vector<HostTensor> ref;
  for (size_t k = 0; k < inputs.size(); ++k)
    ref.push_back(as(inputs[k], reference.node(reference.inputs()[k]).type.dtype));
  size_t lossAt = outputIndex(reference, loss);
  auto lossOf = [&](const std::vector<HostTensor>& in) {
    return interpret(reference, in, binding)[lossAt].get(0);
  };
  GradCheck c;
  double worstExcess = 0;
  for (size_t w = 0; w < wrt.size(); ++w) {
    size_t k = 0;
    while (reference.node(reference.inputs()[k]).name != wrt[w]) ++k;
    const HostTensor& g = got[forward.outputs().size() + w];
    for (int64_t i = 0; i < ref[k].numElements(); ++i) {
      double x0 = ref[k].get(i);
      auto diff = [&](double h) {
        std::vector<HostTensor> in = ref;
        in[k].set(i, x0 + h);
        double up = lossOf(in);
        in[k].set(i, x0 - h);
        return (up - lossOf(in)) / (2 * h);
      };
      double h = 1e-5 * std::max(1.0, std::abs(x0));
      double fd = diff(h), fd2 = diff(h / 4);
      if (!(std::abs(fd - fd2) <= 1e-5 * (1 + std::abs(fd)))) {
        ++c.skipped; // not differentiable here: no answer is right
        continue;
      }
      ++c.compared;
      double a = g.get(i), excess = std::abs(a - fd) / (tol * (1 + std::abs(fd)));
      if (!(excess <= 1)) {
        ++c.failed;
        if (!(excess <= worstExcess)) {
          worstExcess = excess;
          c.worst = fmt::format("{}[{}]: autodiff {} vs finite difference {} (x = {})",
                                autodiff::gradName(wrt[w]), i, a, fd, x0);
        }
      }
    }
  }
  return c;
}

} // namespace weft::testing
