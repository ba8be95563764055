#pragma once
// Weights: the values of graph inputs that stay the same from one call to the next (a model's
// parameters, ONNX initializers, large constants), held beside the graph by input name and
// never in op attributes. In the graph a weight is an ordinary parameter (a pointer argument of
// every kernel that reads it), so the plan, the PTX and the compile-cache key depend on its
// dtype and shape only, never on its values (docs/architecture.md, "Weights").
// Header only: the functions over weights live where they are used (passes/hoist_weights.h,
// frontend/weights_file.h, runtime/weights.h).
#include <cstddef>
#include <map>
#include <string>

#include "weft/tensor.h"

namespace weft::ir {

/// A constant holding more than this many bytes is never compiled into code: the compiler
/// makes it a weight (passes::hoistWeights). Splats (one value) and small tables still fold.
inline constexpr size_t kMaxEmbeddedConstantBytes = 256;

/// Weight values by graph input name.
using Weights = std::map<std::string, HostTensor>;

} // namespace weft::ir
