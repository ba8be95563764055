#pragma once
// The log of a row's sum of exponentials below its max, built as a logsumexp: one way for the
// composite log_softmax (frontend/composite_ops.cc) and the pass that recognizes a
// hand-decomposed one (passes/log_sum_exp.h).
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::ir {

/// log(sum over `axes` of exp(x - m)) = logsumexp(x) - m, where m is x's max over the same
/// axes: the logsumexp reads x itself, so it is a sibling of the max (one pass over the row).
/// For f16 and bf16 x the logsumexp and the difference are computed in f32 and the difference
/// rounded to x's type once: a logsumexp rounded to f16 first would lose up to half an ulp of
/// m (0.03 at m = 95) from a difference that is at most log(row length). `name` gives each
/// new op its name from a base ("logsumexp", "log_sum", ...).
NodeId logSumBelowMax(Graph& g, NodeId x, NodeId max, const std::vector<int64_t>& axes,
                      const std::function<std::string(const std::string&)>& name);

} // namespace weft::ir
