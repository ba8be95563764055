#pragma once
// Step 4 of the AStitch planner (AStitch §4.2 Observation-A, §4.3 step 2): schedule
// propagation. Takes a group whose loop space (loopShape, tileDims) is set; fills
// Group::space for every op of the group. Elementwise ops keep their operand's index space,
// a reduce maps the loop space to the row space, a broadcast along the non-tile dims maps the
// row space back to the loop space; reshapes, transposes and other layout ops keep a space
// only when their result has exactly the space's shape (an element's index is then the loop
// index). Guarantees: an op marked Loop (Row) has exactly loopShape (the row shape), so
// element (row, column) of it is computed by the thread the mapping gives that loop index;
// Other ops are only ever generated inline for a consumer's index.
#include "fusion/kernel_plan.h"
#include "ir/graph.h"

namespace weft::fusion {

void propagateSchedule(const ir::Graph& g, Group& group);

/// Space of a value of `g` relative to `group`'s loop space: Group::space for the group's ops
/// once propagated, else by the rule above. In an acrossTiles group the reduces over its loop
/// and the ops computed from them are Other (one element per result, after the combine),
/// whatever their shape, but for those over the whole loop again.
OpSpace spaceOf(const ir::Graph& g, const Group& group, ir::NodeId value);

} // namespace weft::fusion
