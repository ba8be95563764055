#pragma once
// Step 1 of the AStitch planner (AStitch §4.1): the stitch scope. Takes a verified graph and
// returns the groups of memory-intensive ops that become one kernel each ("stitch ops").
// Guarantees: every memory-intensive op is in exactly one scope, except sources (constants,
// iotas) that no compute-intensive op reads and that are not graph outputs: those are
// regenerated inline in every scope that uses them. Contracting each scope to one node leaves
// the graph acyclic (no scope both feeds and depends on a compute-intensive op through
// another step). Scopes come in the order of their first op; ops in topological order.
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

struct StitchScope {
  std::vector<ir::NodeId> ops;
};

struct StitchScopeOptions {
  /// Merge scopes with no path between them (AStitch's remote stitching).
  bool remoteStitching = true;
  /// Ops no scope computes, by node id (empty: none): the ops of GEMM epilogues
  /// (fusion/epilogue_planner.h), run by their dot's library step.
  std::vector<bool> excluded = {};
};

std::vector<StitchScope> findStitchScopes(const ir::Graph& g,
                                          const StitchScopeOptions& options = {});

} // namespace weft::fusion
