#pragma once
// The first step of the AStitch planner: a reduction over a row's dims and more (the scalar
// loss sum(y * dy) of a training step, a mean over [B, S, H]) becomes a reduction of each row
// followed by a reduction of the rows, so that the first joins the row-mapped group that
// computes its operand (the row loop of a softmax, a layer norm) and reads it where it is
// computed, instead of a split-mapped group of its own that recomputes the operand in a pass
// over memory. The second reads one value per row. Returns the rewritten graph, on which the
// rest of the plan is made (FusionPlan::graph), and one line per split saying why.
// Guarantees: inputs and outputs keep their order, names and types; every original op keeps
// its name; the split's first half is named "<reduce>.rows".
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

struct SplitReductions {
  ir::Graph graph;
  std::vector<std::string> notes; // one per split reduce: what and why
};

/// Splits every reduce whose axes hold a trailing run of dims (the row) and more: into a
/// reduce over the row and a reduce of the result over the rest. The row is the trailing run
/// another reduce of the same operand shape uses when there is one (the group the first half
/// joins), else the longest proper trailing run. Rows statically shorter than
/// kMinSplitRowLength stay whole: one partial per few elements would write more than it saves.
SplitReductions splitRowReductions(const ir::Graph& g);

inline constexpr int64_t kMinSplitRowLength = 32;

} // namespace weft::fusion
