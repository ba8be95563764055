#pragma once
// Dead-code elimination. Takes a graph; returns it without the ops that no output depends on.
// Guarantees: parameters (used or not) and outputs are kept with their names and order; the
// ops that remain keep their names and relative order.
#include "ir/graph.h"

namespace weft::passes {

ir::Graph dce(const ir::Graph& g);

} // namespace weft::passes
