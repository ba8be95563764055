#pragma once
// Constant folding. Takes a graph; returns it with every op whose operands are all constants
// replaced by the constant it computes (a splat when all its elements are equal), evaluated
// by the reference interpreter, so folding never changes a result. Folded are:
//  - elementwise ops whose operands are all splats, whatever the shape (the result is a splat);
//  - any other op with static operands and result of at most kMaxFoldedElements elements each.
// Ops without operands (iota) stay, and so does an op the interpreter refuses (integer division
// by zero): the error belongs to whoever runs the graph. Chains fold in one pass.
// Guarantees: parameters and outputs are kept (rewriter.h); a folded value keeps its name;
// the constants it no longer needs are left for dce.
#include <cstdint>

#include "ir/graph.h"

namespace weft::passes {

/// Larger results stay ops: folding them would fill the graph with constant data.
inline constexpr int64_t kMaxFoldedElements = 1024;

ir::Graph foldConstants(const ir::Graph& g);

} // namespace weft::passes
