#pragma once
// Writes an ir::Graph in weft's JSON graph format (docs/graph-format.md), IR primitives only,
// one op per line. readGraphJson(writeGraphJson(g, n)) gives a graph that prints exactly as g
// does (ir::printGraph): same names, same order, same attributes, constants bit-exact.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::frontend {

std::string writeGraphJson(const ir::Graph& g, const std::string& name);
/// The same with the inputs named in `weightNames` written as "weights" (after "inputs"; they
/// should follow every other input in g) and "weights_file": `weightsFile`, the file holding
/// their values (frontend/weights_file.h), relative to the graph file.
std::string writeGraphJson(const ir::Graph& g, const std::string& name,
                           const std::vector<std::string>& weightNames,
                           const std::string& weightsFile);

} // namespace weft::frontend
