#pragma once
// Picking through a one-hot mask. Frameworks lower "the value at each row's label" (a gather
// over the vocabulary, as in a negative log-likelihood) as
//
//   sum over axis a of select(iota_a == broadcast(label), F, 0)
//
// iota_a an integer iota along a, label constant along a. At most one element of each row is
// selected, so the sum is F at the label (0 where the label lies outside [0, n)). This pass
// rewrites it into F evaluated once per row:
//
//   select(0 <= label < n, F', 0)
//
// where F' is F with each leaf picked: a value constant along a (a broadcast, a splat) taken
// as it is, iota_a as the label, an elementwise op applied to its operands' picks, and any other
// value v (it varies along a) as sum over a of select(mask, v, 0), exact since it adds one
// element to zeros. It applies where F reads a row statistic through a broadcast (log-softmax's
// logsumexp, a normalization's mean): the sum then no longer waits for that statistic, so the
// row is read once, by sibling reductions, instead of once per dependent reduction.
// Guarantees: results are equal to the source's (one element picked, not summed: the same
// value, also for NaN and infinities elsewhere in the row); parameters and outputs are kept
// (rewriter.h); values no longer used are left for dce.
#include "ir/graph.h"

namespace weft::passes {

ir::Graph pickThroughOneHot(const ir::Graph& g);

} // namespace weft::passes
