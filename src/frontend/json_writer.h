#pragma once
// Writes an ir::Graph in weft's JSON graph format (docs/graph-format.md), IR primitives only,
// one op per line. readGraphJson(writeGraphJson(g, n)) gives a graph that prints exactly as g
// does (ir::printGraph): same names, same order, same attributes, constants bit-exact.
#include <string>

#include "ir/graph.h"

namespace weft::frontend {

std::string writeGraphJson(const ir::Graph& g, const std::string& name);

} // namespace weft::frontend
