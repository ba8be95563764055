#pragma once
// The epilogue planner (astitch, before the stitch scopes): which elementwise consumers of each
// dot run in the dot's GEMM kernel (fusion/gemm_epilogue.h). A consumer qualifies when each
// value it reads besides the dot and the epilogue's own ops is cheap to read per result element:
// a source (regenerated inline), a broadcast of a value already in memory (a bias row, a scale
// column, a scalar), or a tensor of the result's shape already in memory for another reason (a
// graph input, a dot operand or result, a graph output: a residual). The epilogue is the largest
// such region with one exit: the dot's result and every op but the last are read only inside it,
// so fusing moves no other tensor into memory. It is fused only where that cuts traffic: when
// no kernel reads its result (a dot or the caller does), the [M, N] result's write and re-read
// are saved; when kernels read it as well as a dot, one pass; when only kernels read it (a
// layer norm after a residual add, a transpose after a bias add), they would read it instead
// of the dot's result, so nothing is saved and the consumers stay stitched. A consumer that
// needs a whole row (a reduce) never qualifies. No path leaves the region and
// comes back (every value it reads is produced before the dot or independently of it), so the
// stitch scopes around it stay acyclic.
//
// Prologues come first: a layout op (transpose, reshape, broadcast) whose every reader is a dot
// or another such op is absorbed into the dots' operand reads (GemmEpilogue::a and b), where the
// GEMM can say where each element lies in the chain's source (fusion::operandLayout: attention's
// head split and K^T, a transposed weight, Gemm's transA/transB); no kernel computes it, and a
// value it reads counts as read by a dot (so a bias add before a head split is an epilogue).
#include <map>

#include "fusion/gemm_epilogue.h"
#include "fusion/graph_queries.h"

namespace weft::fusion {

/// The epilogue and prologues of every dot that has one, by dot.
std::map<ir::NodeId, GemmEpilogue> planEpilogues(const ir::Graph& g, const Users& users);

/// Ops that belong to an epilogue or a prologue (by node id): no stitch scope computes them.
std::vector<bool> epilogueOps(const ir::Graph& g, const std::map<ir::NodeId, GemmEpilogue>& e);

} // namespace weft::fusion
