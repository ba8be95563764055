#pragma once
// A reduce's operand seen as [kept, reduced]: which axes the reduce keeps (its result's
// elements) and which it folds. Pure shape arithmetic, shared by the planner (tile spaces, slot
// plans) and codegen (reduce loops).
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft::ir {

struct ReduceGeometry {
  std::vector<int64_t> keptAxes, reducedAxes; // operand axes, ascending
  Shape keptShape, reducedShape;
  Dim kept = 1, reduced = 1; // element counts
};

/// The geometry of `reduce` (a Reduce node of g).
ReduceGeometry reduceGeometry(const Graph& g, const Node& reduce);

} // namespace weft::ir
