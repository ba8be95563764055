#pragma once
// What the ONNX importer's tests share beside the model builder: tensors from literal values,
// their values back, an approximate comparison, and the InputError a model gives.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "weft/error.h"
#include "weft/tensor.h"

namespace weft::onnx::test {

/// A tensor of `shape` holding `values` (row-major) in dtype `t`.
inline HostTensor tensor(std::vector<int64_t> shape, const std::vector<double>& values,
                         DType t = DType::f32) {
  HostTensor h(t, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == h.numElements());
  for (size_t i = 0; i < values.size(); ++i)
    h.set(static_cast<int64_t>(i), values[i]);
  return h;
}

inline std::vector<double> valuesOf(const HostTensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(t.get(i));
  return v;
}

/// Every element of `got` within `tol` of `want`'s.
inline void checkClose(const HostTensor& got, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> v = valuesOf(got);
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    CHECK(v[i] == Approx(want[i]).margin(tol));
  }
}

/// The message of the InputError importing `bytes` gives (a test failure if it imports).
inline std::string errorOf(const std::string& bytes, const std::string& source = "m.onnx") {
  try {
    importOnnxBytes(bytes, source);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

} // namespace weft::onnx::test
