#pragma once
// The conditioning guard of the output check: how far the reference interpreter's result moves
// when every rounded floating-point value of the graph (its float inputs included) moves by a
// few units in the last place. A device computes in its own order and rounds intermediates its
// own way, so its error on an element is of this size; a wrong result is not (it is wrong on
// well-conditioned elements too). docs/graph-format.md ("Checking outputs") states the rules.
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::runtime {

/// Per output and element: kMargin times the largest move of the element over a few perturbed
/// runs (all values up by kUlps ulps, all down, then random directions), or +inf where a
/// perturbation turns the element non-finite or flips its class (the element is that
/// ill-conditioned). Deterministic for a seed on every machine. A float sum or dot also moves by
/// kUlps ulps of its accumulator times the sum of its terms' magnitudes (the error of adding
/// them in another order, which cancellation does not shrink). With `tf32Dots`, each f32
/// dot's result also moves by e (2^-10 + 2^-16) sum_k |a_k b_k| (e as for the ulps above; the
/// spread is then at least that bound, not kMargin times it): the error bound of a dot whose
/// operands are rounded to tf32 and summed in f32 (CompileOptions::tf32).
std::vector<std::vector<double>> conditioningSpread(const ir::Graph& g,
                                                    const std::vector<HostTensor>& inputs,
                                                    const std::vector<HostTensor>& expected,
                                                    const ir::Binding& binding = {},
                                                    uint64_t seed = 0, bool tf32Dots = false);

} // namespace weft::runtime
