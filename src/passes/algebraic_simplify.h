#pragma once
// Algebraic simplification. Takes a graph; returns it with these identities applied, each
// where its operands (after simplification) match:
//   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1       -> x   (0 and 1: constants of that value)
//   neg(neg(x))                                    -> x
//   reshape(reshape(x))                            -> reshape(x)
//   reshape(x) to x's own shape                    -> x
//   transpose(x) with the identity permutation     -> x
//   convert(x) to x's own dtype                    -> x
//   broadcast_in_dim(c) of a splat constant c      -> a splat constant of the result shape
// (x + 0 -> x is what XLA does too; it differs from IEEE only in the sign of a zero x = -0.)
// Guarantees: results are unchanged otherwise; parameters and outputs are kept (rewriter.h);
// a value replaced by a new op keeps its name; values no longer used are left for dce.
#include "ir/graph.h"

namespace weft::passes {

ir::Graph algebraicSimplify(const ir::Graph& g);

} // namespace weft::passes
