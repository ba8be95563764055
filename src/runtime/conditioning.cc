#include "runtime/conditioning.h"

#include <cmath>
#include <iterator>
#include <string>

#include "ir/interpreter.h"
#include "passes/dce.h"
#include "weft/error.h"

namespace weft::runtime {
namespace {

/// Whether the op's float result is rounded (so a device, computing in another order or
/// precision, may round it differently): parameters count, since the device reads what the
/// producer of a real input rounded. A max or min reduction is not: it is one of its operands
/// exactly, on every device (perturbing it apart from them made max(v) - v negative where it
/// is exactly 0, and a log of that NaN: cluster_200's check allowed anything everywhere).
bool rounds(const ir::Node& n) {
  using K = ir::OpKind;
  switch (n.kind) {
  case K::Reduce: {
    ir::ReduceKind kind = n.attr<ir::ReduceAttrs>().kind;
    return ir::isFloat(n.type.dtype) && (kind == ir::ReduceKind::Sum ||
                                         kind == ir::ReduceKind::Prod ||
                                         kind == ir::ReduceKind::LogSumExp);
  }
  case K::Parameter: case K::Exp: case K::Log: case K::Tanh: case K::Sqrt: case K::Rsqrt:
  case K::Erf: case K::Sigmoid: case K::Sin: case K::Cos: case K::Reciprocal: case K::Convert:
  case K::Add: case K::Sub: case K::Mul: case K::Div: case K::Pow: case K::Rem: case K::Dot:
    return ir::isFloat(n.type.dtype);
  default:
    return false;
  }
}

/// splitmix64: the same stream on every machine and standard library.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int mantissaBits(ir::DType t) {
  switch (t) {
  case ir::DType::f16: return 10;
  case ir::DType::bf16: return 7;
  case ir::DType::f64: return 52;
  default: return 23;
  }
}

/// Whether the op adds up many terms in an order of the device's choosing (a float sum, a dot):
/// its error is then relative to the terms' magnitudes, not to its result (x and -x summed in
/// another order leave a few ulps of x where the reference has 0: random graph 302402's row
/// sum of concat(m, -m)).
bool sumsTerms(const ir::Node& n) {
  if (!ir::isFloat(n.type.dtype)) return false;
  if (n.kind == ir::OpKind::Dot) return true;
  return n.kind == ir::OpKind::Reduce && n.attr<ir::ReduceAttrs>().kind == ir::ReduceKind::Sum;
}

/// Whether the op is a logsumexp: m + log(s), s a sum of exponentials (each at most 1) in the
/// device's order. Its error is absolute: a few units of s's last place (log(s(1 + d)) moves by
/// d) and of the larger of |m| and |log s| (their sum's rounding). So it is measured against
/// 1 + max |x|, which bounds both, not against its result (0 for a row of log-probabilities).
bool sumsExponentials(const ir::Node& n) {
  return n.kind == ir::OpKind::Reduce &&
         n.attr<ir::ReduceAttrs>().kind == ir::ReduceKind::LogSumExp;
}

/// The mantissa bits a device accumulates a sum of `t` in: f16 and bf16 in f32.
int accumulatedBits(ir::DType t) {
  return t == ir::DType::f64 ? mantissaBits(t) : mantissaBits(ir::DType::f32);
}

/// The device's error may exceed one perturbation's effect: the spread is this many times the
/// largest effect.
constexpr double kMargin = 4;
/// A dot's operands rounded to tf32 (relative errors of at most 2^-11 each) move its result by
/// at most (2 * 2^-11 + 2^-22) sum_k |a_k b_k|, and its f32 sums (one rounding per k-step of
/// 8, each at most 2^-24 of that sum) by at most K / 8 * 2^-24 of it: 2^-10 + 2^-16 bounds
/// both up to K = 2048. A rigorous bound, which the margin above does not widen.
constexpr double kTf32Bound = 0x1.04p-10;

/// `g` with every rounded float value multiplied by a new input (same shape), and those inputs:
/// 1 + e * `ulps` units in the last place of the value's dtype, e = +1 for every element
/// (sign > 0), -1 (sign < 0), or uniform in [-1, 1) (sign == 0). Each float sum and dot also
/// gets e' * `ulps` units of its accumulator's last place times the same op over its operands'
/// magnitudes (sum |x|, dot(|a|, |b|)) added, e' a new input of the same kind: the error of
/// adding its terms in another order. With `tf32Dots`, each f32 dot's result gets
/// e' * kTf32Bound / kMargin * dot(|a|, |b|) instead.
std::pair<ir::Graph, std::vector<HostTensor>> withRoundingNoise(const ir::Graph& g,
                                                                const ir::Binding& binding,
                                                                uint64_t seed, int ulps, int sign,
                                                                bool tf32Dots) {
  ir::Graph noisy;
  std::vector<ir::NodeId> at(g.size(), -1);
  struct Noise {
    double step; // the size of e's unit
    bool term;   // added to the value (tf32 dots), else a factor
  };
  std::vector<Noise> noises; // per noise input
  for (ir::NodeId in : g.inputs())
    at[size_t(in)] = noisy.parameter(g.node(in).name, g.node(in).type);
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::OpKind::Parameter) {
      std::vector<ir::NodeId> operands;
      for (ir::NodeId o : n.operands)
        operands.push_back(at[size_t(o)]);
      at[size_t(n.id)] = noisy.add(n.kind, operands, n.attrs, n.type, n.name);
    }
    if (!rounds(n)) continue;
    ir::NodeId noise = noisy.parameter("noise." + n.name, n.type);
    noises.push_back({ulps * std::ldexp(1.0, -mantissaBits(n.type.dtype)), false});
    at[size_t(n.id)] = noisy.binary(ir::OpKind::Mul, at[size_t(n.id)], noise, "noisy." + n.name);
    if (sumsExponentials(n)) {
      const ir::Node& x = g.node(n.operands[0]);
      ir::NodeId largest = noisy.reduce(
          ir::ReduceKind::Max, noisy.unary(ir::OpKind::Abs, at[size_t(x.id)], "lse.abs." + n.name),
          n.attr<ir::ReduceAttrs>().axes, "lse.largest." + n.name);
      // max(largest, 0) + 1: an empty row's largest is -inf, and -inf * e added to its -inf
      // made NaN, so an exact -inf was never checked.
      ir::NodeId zero = noisy.constant(n.type.dtype, n.type.shape, {0.0}, "lse.zero." + n.name);
      largest = noisy.binary(ir::OpKind::Max, largest, zero, "lse.largest0." + n.name);
      ir::NodeId bound = noisy.binary(
          ir::OpKind::Add, largest, noisy.constant(n.type.dtype, n.type.shape, {1.0}, "lse.one." + n.name),
          "lse.bound." + n.name);
      ir::NodeId e = noisy.parameter("lse.noise." + n.name, n.type);
      noises.push_back({ulps * std::ldexp(1.0, -accumulatedBits(n.type.dtype)), true});
      ir::NodeId moved = noisy.binary(ir::OpKind::Mul, bound, e, "lse.moved." + n.name);
      at[size_t(n.id)] =
          noisy.binary(ir::OpKind::Add, at[size_t(n.id)], moved, "lse.noisy." + n.name);
    }
    if (sumsTerms(n)) {
      bool tf32 = tf32Dots && n.kind == ir::OpKind::Dot && n.type.dtype == ir::DType::f32;
      std::string prefix = tf32 ? "tf32." : "order.";
      std::vector<ir::NodeId> magnitudes;
      for (size_t i = 0; i < n.operands.size(); ++i)
        magnitudes.push_back(noisy.unary(ir::OpKind::Abs, at[size_t(n.operands[i])],
                                         prefix + "abs" + std::to_string(i) + "." + n.name));
      ir::NodeId bound = noisy.add(n.kind, magnitudes, n.attrs, n.type, prefix + "bound." + n.name);
      ir::NodeId e = noisy.parameter(prefix + "noise." + n.name, n.type);
      noises.push_back({tf32 ? kTf32Bound / kMargin
                             : ulps * std::ldexp(1.0, -accumulatedBits(n.type.dtype)),
                        true});
      ir::NodeId moved = noisy.binary(ir::OpKind::Mul, bound, e, prefix + "moved." + n.name);
      at[size_t(n.id)] =
          noisy.binary(ir::OpKind::Add, at[size_t(n.id)], moved, prefix + "noisy." + n.name);
    }
  }
  std::vector<ir::NodeId> outputs;
  for (ir::NodeId o : g.outputs())
    outputs.push_back(at[size_t(o)]);
  noisy.setOutputs(outputs);
  std::vector<HostTensor> noise;
  for (size_t i = g.inputs().size(); i < noisy.inputs().size(); ++i) {
    const ir::Node& n = noisy.node(noisy.inputs()[i]);
    const Noise& kind = noises[i - g.inputs().size()];
    HostTensor t(n.type.dtype, ir::evaluate(n.type.shape, binding));
    for (int64_t e = 0; e < t.numElements(); ++e) {
      double unit = double(mix(seed * 1000003 + i * 7919 + uint64_t(e)) >> 11) * 0x1p-52 - 1.0;
      t.set(e, (kind.term ? 0 : 1) + kind.step * (sign > 0 ? 1.0 : sign < 0 ? -1.0 : unit));
    }
    noise.push_back(std::move(t));
  }
  return {std::move(noisy), std::move(noise)};
}

} // namespace

std::vector<std::vector<double>> conditioningSpread(const ir::Graph& g,
                                                    const std::vector<HostTensor>& inputs,
                                                    const std::vector<HostTensor>& expected,
                                                    const ir::Binding& binding, uint64_t seed,
                                                    bool tf32Dots) {
  // All up, all down (an error that grows along a chain), then random directions (an error
  // that cancels: a - b with a ~ b); the largest effect counts.
  constexpr int kSigns[] = {1, -1, 0, 0, 0, 0};
  constexpr int kUlps = 2;
  // Noise only where it can reach an output: a value no output reads would cost its noise
  // tensor and its interpretation, six times (a training step checked on its loss alone).
  const ir::Graph live = passes::dce(g);
  std::vector<std::vector<double>> spread;
  for (const HostTensor& e : expected)
    spread.emplace_back(size_t(e.numElements()), 0.0);
  for (size_t run = 0; run < std::size(kSigns); ++run) {
    auto [noisy, noise] =
        withRoundingNoise(live, binding, seed * 8 + run, kUlps, kSigns[run], tf32Dots);
    std::vector<HostTensor> all = inputs;
    all.insert(all.end(), noise.begin(), noise.end());
    std::vector<HostTensor> moved;
    try {
      moved = ir::interpret(noisy, all, binding);
    } catch (const InputError&) {
      continue; // e.g. an integer divisor that the noise made zero: no information
    }
    for (size_t k = 0; k < expected.size(); ++k)
      for (int64_t i = 0; i < expected[k].numElements(); ++i) {
        double a = expected[k].get(i), b = moved[k].get(i);
        double d = std::isfinite(a) && std::isfinite(b) ? kMargin * std::fabs(a - b)
                   : (std::isnan(a) && std::isnan(b)) || a == b ? 0.0
                                                                 : INFINITY;
        spread[k][size_t(i)] = std::max(spread[k][size_t(i)], d);
      }
  }
  return spread;
}

} // namespace weft::runtime
