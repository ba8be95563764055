#include "ir/reduce_geometry.h"

#include <algorithm>

namespace weft::ir {

ReduceGeometry reduceGeometry(const Graph& g, const Node& reduce) {
  ReduceGeometry geo;
  const Shape& s = g.node(reduce.operands[0]).type.shape;
  const auto& axes = reduce.attr<ReduceAttrs>().axes;
  for (size_t i = 0; i < s.size(); ++i) {
    bool r = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    (r ? geo.reducedAxes : geo.keptAxes).push_back(int64_t(i));
    (r ? geo.reducedShape : geo.keptShape).push_back(s[i]);
    (r ? geo.reduced : geo.kept) = (r ? geo.reduced : geo.kept) * s[i];
  }
  return geo;
}

} // namespace weft::ir
