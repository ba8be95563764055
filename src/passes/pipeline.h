#pragma once
// canonicalize: the graph rewrites that run before fusion, to a fixed point. Takes a graph;
// returns an equivalent one on which every pass below is a no-op (or, should that take more
// than kMaxCanonicalizeRounds rounds, the graph after the last one, still equivalent).
// Each round: algebraicSimplify, recognizeLogSumExp, pickThroughOneHot, foldConstants, cse,
// eliminateIdentityBroadcasts, dce.
// Guarantees: parameters (used or not) kept in order; outputs kept in order under their
// names (rewriter.h says how).
#include "ir/graph.h"

namespace weft::passes {

inline constexpr int kMaxCanonicalizeRounds = 32;

ir::Graph canonicalize(const ir::Graph& g);

} // namespace weft::passes
