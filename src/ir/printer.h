#pragma once
// A stable text form of a graph, one value per line, used by `weft check` and in tests:
//   graph layer_norm(%x: f32[B, 768], %gamma: f32[768]) {
//     %mean.sum = reduce[sum, axes=[1]](%x) : f32[B]
//     ...
//     return %y
//   }
#include <string>

#include "ir/graph.h"

namespace weft::ir {

std::string printGraph(const Graph& g, const std::string& name = "main");
std::string printNode(const Graph& g, const Node& n);
std::string printAttrs(const Node& n); // "" or "[sum, axes=[1]]"

} // namespace weft::ir
