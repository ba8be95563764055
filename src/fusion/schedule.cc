#include "fusion/schedule.h"

#include <algorithm>
#include <set>

#include "fusion/graph_queries.h"

namespace weft::fusion {
namespace {

OpSpace spaceOfShape(const ir::Graph& g, const Group& group, ir::NodeId value) {
  const ir::Shape& shape = g.node(value).type.shape;
  if (shape == group.loopShape) return OpSpace::Loop;
  if (shape == rowShapeOf(group.loopShape, group.tileDims)) return OpSpace::Row;
  return OpSpace::Other;
}

} // namespace

OpSpace spaceOf(const ir::Graph& g, const Group& group, ir::NodeId value) {
  auto it = group.space.find(value);
  if (it != group.space.end()) return it->second;
  return spaceOfShape(g, group, value);
}

void propagateSchedule(const ir::Graph& g, Group& group) {
  group.space.clear();
  // An acrossTiles group's reduces over its loop are combined across blocks: their results,
  // and what the group computes from them outside its loop, are one element per result, never
  // the tiles' rows, whatever their shape (random graph 200809: a [2] column max of a [2, 2]
  // loop in tiles of rows has the row shape, and was taken for a row value). What it
  // broadcasts back over the loop is computed in the tiles again, behind the combine.
  std::set<ir::NodeId> combined;
  for (ir::NodeId op : group.ops) {
    const ir::Node& n = g.node(op);
    OpSpace space = spaceOfShape(g, group, op);
    bool fromCombine =
        group.acrossTiles &&
        ((n.kind == ir::OpKind::Reduce && g.node(n.operands[0]).type.shape == group.loopShape) ||
         std::any_of(n.operands.begin(), n.operands.end(),
                     [&](ir::NodeId o) { return combined.count(o) > 0; }));
    if (fromCombine) combined.insert(op);
    group.space[op] = fromCombine && space != OpSpace::Loop ? OpSpace::Other : space;
  }
}

} // namespace weft::fusion
