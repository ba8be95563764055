#pragma once
// Common-subexpression elimination. Takes a graph; returns it with every op that repeats an
// earlier one (same kind, same operands after merging, same attributes, same type) replaced
// by that earlier op. Constants and iotas merge too; parameters never do.
// Guarantees: parameters and outputs are kept (rewriter.h says how an output merged into
// another output keeps its name); merged-away ops are not emitted, the rest keep their names.
#include "ir/graph.h"

namespace weft::passes {

ir::Graph cse(const ir::Graph& g);

} // namespace weft::passes
