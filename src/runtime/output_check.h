#pragma once
// Compares what a device computed with what the reference interpreter computed, under
// tolerances per dtype. An element passes when
//     |actual - expected| <= atol + rtol * |expected| + scaled * maxAbs(expected tensor)
// The `scaled` term allows the rounding error of accumulations whose magnitude is the
// tensor's scale rather than the element's (a sum that cancels to nearly zero). Integers and
// bools must match exactly; NaN matches NaN, infinities match themselves.
#include <string>
#include <vector>

#include "weft/tensor.h"

namespace weft::runtime {

struct Tolerance {
  double atol = 0, rtol = 0, scaled = 0;
};
Tolerance toleranceFor(ir::DType t);

struct TensorCheck {
  std::string name;
  bool passed = true;
  int64_t mismatches = 0;
  int64_t worstIndex = -1; // flat index of the worst element (largest error / allowed error)
  double expected = 0, actual = 0, error = 0, allowed = 0;
  std::string str() const; // "y: ok" or "y: 3 mismatches; worst at [1, 7] ..."
  std::vector<int64_t> shape;
};

/// `spread`, when given (expected's dtype is irrelevant: f64 of expected's shape), is per element
/// how far the reference itself moves when its inputs move by a few units in the last place:
/// it is added to the allowed error, so that an ill-conditioned element (a sum that cancels
/// and is then amplified, a float converted to an integer at a rounding boundary) is judged by
/// its conditioning. An infinite spread accepts any value.
TensorCheck checkTensor(const std::string& name, const HostTensor& expected, const HostTensor& actual,
                        const std::vector<double>* spread = nullptr);

} // namespace weft::runtime
