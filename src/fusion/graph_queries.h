#pragma once
// Small questions the planner's steps ask of a graph: which ops are sources that every kernel
// may regenerate inline, which expensive ops feed a broadcast, the row shape of a loop space.
// Pure functions of the graph; no planner state.
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

using Users = std::vector<std::vector<ir::NodeId>>;

/// Constants and iotas: free to regenerate inline in every kernel that uses them.
bool isSource(const ir::Node& n);

/// An expensive elementwise op whose result is broadcast (one-to-many), directly or through
/// reshapes: AStitch's second kind of dominant candidate (Observation-B).
bool isExpensiveBroadcastSource(const ir::Graph& g, const Users& users, ir::NodeId op);

/// loopShape restricted to tileDims (in order).
ir::Shape rowShapeOf(const ir::Shape& loopShape, const std::vector<int64_t>& tileDims);

/// Product of the dims' static sizes, or `fallback` when any dim is symbolic.
int64_t staticElementsOr(const ir::Shape& s, int64_t fallback);
int64_t staticOr(const ir::Dim& d, int64_t fallback);

/// A valid PTX identifier made from `text` (letters, digits and '_' kept, others → '_').
std::string ptxIdentifier(const std::string& text);

} // namespace weft::fusion
