#include "runtime/output_check.h"

#include <cmath>
#include <fmt/format.h>

namespace weft::runtime {

Tolerance toleranceFor(ir::DType t) {
  switch (t) {
  case ir::DType::f64: return {1e-12, 1e-9, 1e-12};
  case ir::DType::f32: return {1e-6, 1e-4, 1e-5};
  case ir::DType::f16: return {1e-3, 5e-3, 1e-3};
  case ir::DType::bf16: return {1e-2, 2e-2, 8e-3};
  default: return {0, 0, 0};
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
} // namespace

TensorCheck checkTensor(const std::string& name, const HostTensor& expected, const HostTensor& actual,
                        const std::vector<double>* spread) {
  TensorCheck r;
  r.name = name;
  r.shape = expected.shape;
  if (expected.dtype != actual.dtype || expected.shape != actual.shape) {
    r.passed = false;
    r.mismatches = expected.numElements();
    return r;
  }
  Tolerance tol = toleranceFor(expected.dtype);
  int64_t n = expected.numElements();
  double maxAbs = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(expected.get(i))) maxAbs = std::max(maxAbs, std::fabs(expected.get(i)));
  double worstRatio = -1;
  for (int64_t i = 0; i < n; ++i) {
    double e = expected.get(i), a = actual.get(i);
    double err, allowed = tol.atol + tol.rtol * std::fabs(e) + tol.scaled * maxAbs;
    if (spread && size_t(i) < spread->size()) allowed += (*spread)[size_t(i)];
    if (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a)) {
      bool same = (std::isnan(e) && std::isnan(a)) || e == a;
      err = same ? 0 : INFINITY;
    } else {
      err = std::fabs(a - e);
    }
    bool ok = err <= allowed || std::isinf(allowed);
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

std::string TensorCheck::str() const {
  if (worstIndex < 0) return fmt::format("{}: {}", name, passed ? "ok (empty)" : "type or shape differs");
  std::string worst = fmt::format("worst at {}: expected {:.9g}, actual {:.9g}, error {:.3g} (allowed {:.3g})",
                                  multiIndex(worstIndex, shape), expected, actual, error, allowed);
  if (passed) return fmt::format("{}: ok; {}", name, worst);
  return fmt::format("{}: {} mismatch(es); {}", name, mismatches, worst);
}

} // namespace weft::runtime
