#include "passes/pipeline.h"

#include "passes/algebraic_simplify.h"
#include "passes/broadcast_elimination.h"
#include "passes/constant_folding.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/log_sum_exp.h"
#include "passes/one_hot_pick.h"
#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

Graph canonicalize(const Graph& g) {
  Graph current = g;
  for (int round = 0; round < kMaxCanonicalizeRounds; ++round) {
    Graph next = algebraicSimplify(current);
    next = recognizeLogSumExp(next);
    next = pickThroughOneHot(next);
    next = foldConstants(next);
    next = cse(next);
    next = eliminateIdentityBroadcasts(next);
    next = dce(next);
    if (sameGraph(next, current)) break;
    current = std::move(next);
  }
  return current;
}

} // namespace weft::passes
