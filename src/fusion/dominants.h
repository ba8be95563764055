#pragma once
// Step 2 of the AStitch planner (AStitch §4.3 step 1): dominant identification and merging.
// Takes a graph, one stitch scope and the scope's outputs (values read after the kernel);
// returns its groups. Candidates are reduces, expensive elementwise ops whose result is
// broadcast, and the scope's outputs; everything else is local. Candidates are connected
// through local ops (a shared parameter counts, as parameter.2 in AStitch's Figure 9; a
// candidate's one-to-many use through a broadcast does not, its one-to-one uses do). Within
// one connected region, reduces over the same loop and dims form one group (the region's first
// row reduce leads); every other candidate joins the nearest reduce group (fewest local ops
// between them) whose schedule it fits: its result lies in the group's loop space, its row
// space, or a projection of the row space (broadcast along some row dims; materialised in its
// own index space). Candidates that fit no reduce group form elementwise groups dominated by
// the biggest result. Guarantees: every op of the scope (sources included) is in exactly one
// group; groups come in topological order of their dominants.
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
/// The same with the graph's users() computed once by a caller planning many scopes.
std::vector<GroupSeed> identifyDominants(const ir::Graph& g,
                                         const std::vector<std::vector<ir::NodeId>>& users,
                                         const std::vector<ir::NodeId>& scopeOps,
                                         const std::vector<ir::NodeId>& scopeOutputs);

} // namespace weft::fusion
