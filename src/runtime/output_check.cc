#include "runtime/output_check.h"

#include <cmath>
#include <fmt/format.h>
#include <tuple>

#include "ir/interpreter.h"
#include "runtime/conditioning.h"

namespace weft::runtime {

Tolerance toleranceFor(ir::DType t) {
  switch (t) {
  case ir::DType::f64: return {1e-12, 1e-9};
  case ir::DType::f32: return {1e-6, 1e-4};
  case ir::DType::f16: return {1e-3, 5e-3};
  case ir::DType::bf16: return {1e-2, 2e-2};
  default: return {0, 0};
  }
}

namespace {

std::string multiIndex(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

/// The error of one float element and what is allowed for it; err is +inf for a mismatch of
/// class (NaN, +inf, -inf, finite) and 0 for a match of a non-finite class.
std::pair<double, double> floatError(double e, double a, Tolerance tol, double spread) {
  if (std::isinf(spread)) return {0, INFINITY};
  if (!std::isfinite(e) || !std::isfinite(a)) {
    bool same = (std::isnan(e) && std::isnan(a)) || (std::isinf(e) && e == a);
    return {same ? 0 : INFINITY, 0};
  }
  return {std::fabs(a - e), tol.atol + tol.rtol * std::fabs(e) + spread};
}

} // namespace

TensorCheck checkTensor(const std::string& name, const HostTensor& expected, const HostTensor& actual,
                        const std::vector<double>* spread) {
  TensorCheck r;
  r.name = name;
  r.shape = expected.shape;
  if (expected.dtype != actual.dtype || expected.shape != actual.shape ||
      expected.bytes.size() != actual.bytes.size()) {
    r.passed = false;
    r.mismatches = expected.numElements();
    return r;
  }
  Tolerance tol = toleranceFor(expected.dtype);
  bool exact = !ir::isFloat(expected.dtype);
  int64_t n = expected.numElements();
  double worstRatio = -1;
  for (int64_t i = 0; i < n; ++i) {
    double s = spread && size_t(i) < spread->size() ? (*spread)[size_t(i)] : 0.0;
    double e = expected.get(i), a = actual.get(i), err, allowed;
    if (exact) {
      // Integers: every bit; a float -> integer convert at a rounding boundary is conditioning.
      int64_t ei = expected.getInt(i), ai = actual.getInt(i);
      err = ei == ai ? 0.0 : std::max(std::fabs(double(ai) - double(ei)), 1.0);
      allowed = s;
    } else {
      std::tie(err, allowed) = floatError(e, a, tol, s);
      if (std::isinf(s)) {
        ++r.unchecked;
        continue;
      }
    }
    bool ok = err <= allowed;
    if (!ok) ++r.mismatches;
    double ratio = allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0);
    if (ratio > worstRatio) {
      worstRatio = ratio;
      r.worstIndex = i;
      r.expected = e;
      r.actual = a;
      r.error = err;
      r.allowed = allowed;
    }
  }
  r.passed = r.mismatches == 0;
  return r;
}

std::vector<TensorCheck> checkOutputs(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                      const ir::Binding& binding,
                                      const std::vector<HostTensor>& actual,
                                      const CheckOptions& options) {
  std::vector<HostTensor> expected = ir::interpret(g, inputs, binding);
  std::vector<std::vector<double>> spread =
      conditioningSpread(g, inputs, expected, binding, 0, options.tf32Dots);
  std::vector<TensorCheck> checks;
  for (size_t k = 0; k < expected.size(); ++k) {
    const std::string& name = g.node(g.outputs()[k]).name;
    if (k >= actual.size()) {
      TensorCheck missing;
      missing.name = name;
      missing.passed = false;
      checks.push_back(missing);
      continue;
    }
    checks.push_back(checkTensor(name, expected[k], actual[k], &spread[k]));
  }
  return checks;
}

std::string TensorCheck::str() const {
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  std::string skipped =
      unchecked > 0
          ? fmt::format("; {} of {} element(s) unchecked (ill-conditioned: 2 ulps of rounding "
                        "change whether they are finite)",
                        unchecked, elements)
          : "";
  if (worstIndex < 0) {
    if (unchecked > 0) return fmt::format("{}: ok{}", name, skipped);
    return fmt::format("{}: {}", name, passed ? "ok (empty)" : "type or shape differs");
  }
  std::string worst = fmt::format("worst at {}: expected {:.9g}, actual {:.9g}, error {:.3g} (allowed {:.3g})",
                                  multiIndex(worstIndex, shape), expected, actual, error, allowed);
  if (passed) return fmt::format("{}: ok; {}{}", name, worst, skipped);
  return fmt::format("{}: {} mismatch(es); {}{}", name, mismatches, worst, skipped);
}

} // namespace weft::runtime
