#pragma once
// Elimination of identity broadcasts (BladeDISC §3.2). Takes a graph; returns it with every
// broadcast_in_dim whose operand shape provably equals its result shape replaced by its
// operand. "Provably" is Dim equality: equal static sizes, or the same factor and symbols
// (B == B, B*S == S*B), so [B, 768] -> [B, 768] goes and [B, 768] -> [S, 768] stays.
// Guarantees: parameters and outputs are kept (rewriter.h); nothing else changes.
#include "ir/graph.h"

namespace weft::passes {

ir::Graph eliminateIdentityBroadcasts(const ir::Graph& g);

} // namespace weft::passes
