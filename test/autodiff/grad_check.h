#pragma once
// Gradient checking for the autodiff tests: a graph's gradients from autodiff::grad, run on
// the reference interpreter, against central finite differences of its loss in f64.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::testing {

/// `g` with every floating-point value (inputs, constants, results) retyped to `to`: the f64
/// twin of an f32 graph, on which finite differences are meaningful.
ir::Graph retypeFloats(const ir::Graph& g, DType to);

/// Inputs for `g` under `binding`: floats uniform in [lo, hi] per input (rounded to f32 so that
/// an f32 graph and its f64 twin read the same numbers), integers in [-3, 3], bools half true.
struct Range {
  double lo = -2, hi = 2;
};
std::vector<HostTensor> drawInputs(const ir::Graph& g, const ir::Binding& binding,
                                   const std::vector<Range>& ranges, uint64_t seed);

/// The result of one check: elements compared, elements skipped (finite differences at two
/// steps disagree there: a kink or a jump of the function, where no gradient is right), and
/// the worst one with what it saw.
struct GradCheck {
  int64_t compared = 0, skipped = 0, failed = 0;
  std::string worst; // "grad_x[3]: autodiff 0.52 vs finite difference 0.49" when failed
};

/// Differentiates `forward` (its output `loss`, with respect to the inputs `wrt`) with
/// autodiff::grad, runs the training graph on `inputs`, and compares each gradient element
/// with the central difference of the loss of `reference` (forward's f64 twin, the same
/// inputs converted) within `tol` * (1 + |fd|).
GradCheck checkGradients(const ir::Graph& forward, const ir::Graph& reference,
                         const std::string& loss, const std::vector<std::string>& wrt,
                         const std::vector<HostTensor>& inputs, const ir::Binding& binding,
                         double tol);

} // namespace weft::testing
