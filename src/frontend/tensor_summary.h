#pragma once
// A short text summary of a tensor for people: type, min, max, mean, NaN count and the first
// values. `weft eval` and `weft run` print their outputs with it.
#include <string>

#include "weft/tensor.h"

namespace weft::frontend {

/// "f32[2, 3] min 0.0900306 max 0.665241 mean 0.333333 first [0.0900306, 0.244728, ...]"
/// (NaNs are left out of min/max/mean and counted as "nan N" when there are any).
std::string summarizeTensor(const HostTensor& t, size_t firstValues = 6);

} // namespace weft::frontend
