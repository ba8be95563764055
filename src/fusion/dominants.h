#pragma once
// Step 2 of the AStitch planner (AStitch §4.3 step 1): dominant identification and merging.
// Takes a graph, one stitch scope and the scope's outputs (values read after the kernel);
// returns its groups. Candidates are reduces, expensive elementwise ops whose result is
// broadcast, and the scope's outputs; everything else is local. Two candidates connected
// through local ops only (a shared parameter counts, as in AStitch's Figure 9) merge into one
// group whose dominant is a reduce when there is one (the first row reduce, else the first
// reduce, topologically), otherwise the candidate with the largest result. A merged candidate whose
// result is neither in the dominant's loop space nor in its row space cannot take the dominant's
// schedule and becomes the dominant of a group of its own. Guarantees: every op of the scope
// (sources included) is in exactly one group; groups come in topological order of their dominants.
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

struct GroupSeed {
  ir::NodeId dominant = -1;
  std::vector<ir::NodeId> subDominants;
  std::vector<ir::NodeId> ops; // topological order, dominant and sub-dominants included
};

bool isDominantCandidate(const ir::Graph& g, const std::vector<std::vector<ir::NodeId>>& users,
                         const std::vector<bool>& inScope, const std::vector<bool>& scopeOutput,
                         ir::NodeId op);

std::vector<GroupSeed> identifyDominants(const ir::Graph& g,
                                         const std::vector<ir::NodeId>& scopeOps,
                                         const std::vector<ir::NodeId>& scopeOutputs);

} // namespace weft::fusion
