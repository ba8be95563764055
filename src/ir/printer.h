#pragma once
// A stable text form of a graph, one value per line, used by `weft check` and in tests:
//   graph layer_norm(%x: f32[B, 768], %gamma: f32[768]) {
//     %mean.sum = reduce[sum, axes=[1]](%x) : f32[B]
//     ...
//     return %y
//   }
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace weft::ir {

std::string printGraph(const Graph& g, const std::string& name = "main");
std::string printNode(const Graph& g, const Node& n);
std::string printAttrs(const Node& n); // "" or "[sum, axes=[1]]"

/// `text` with control characters written as escapes (\n, \r, \t, \xNN): a user's names may
/// hold any bytes, and a listing, a PTX comment or an error message must stay one line each.
std::string escapeControl(std::string_view text);

} // namespace weft::ir
