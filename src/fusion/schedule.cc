#include "fusion/schedule.h"

#include "fusion/graph_queries.h"

namespace weft::fusion {

OpSpace spaceOf(const ir::Graph& g, const Group& group, ir::NodeId value) {
  const ir::Shape& shape = g.node(value).type.shape;
  if (shape == group.loopShape) return OpSpace::Loop;
  if (shape == rowShapeOf(group.loopShape, group.tileDims)) return OpSpace::Row;
  return OpSpace::Other;
}

void propagateSchedule(const ir::Graph& g, Group& group) {
  group.space.clear();
  for (ir::NodeId op : group.ops)
    group.space[op] = spaceOf(g, group, op);
}

} // namespace weft::fusion
