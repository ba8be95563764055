#include "passes/dce.h"

#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

Graph dce(const Graph& g) {
  std::vector<bool> live = liveNodes(g);

  Rewriter rw(g);
  for (const Node& n : g.nodes())
    if (live[static_cast<size_t>(n.id)]) rw.copy(n);
  return std::move(rw).finish();
}

} // namespace weft::passes
