#include "frontend/tensor_summary.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace weft::frontend {

std::string summarizeTensor(const HostTensor& t, size_t firstValues) {
  int64_t n = t.numElements();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.get(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::string out = t.typeStr();
  if (n - nans > 0)
    out += fmt::format(" min {:.6g} max {:.6g} mean {:.6g}", lo, hi,
                       sum / static_cast<double>(n - nans));
  if (nans) out += fmt::format(" nan {}", nans);
  std::string first;
  for (int64_t i = 0; i < n && static_cast<size_t>(i) < firstValues; ++i)
    first += fmt::format("{}{:.6g}", i ? ", " : "", t.get(i));
  if (static_cast<size_t>(n) > firstValues) first += ", ...";
  return out + " first [" + first + "]";
}

} // namespace weft::frontend
