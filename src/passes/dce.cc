#include "passes/dce.h"

#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

Graph dce(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (NodeId o : g.outputs())
    live[static_cast<size_t>(o)] = true;
  for (size_t i = g.size(); i-- > 0;) // operands come before users, so one backward sweep suffices
    if (live[i])
      for (NodeId o : g.node(static_cast<NodeId>(i)).operands)
        live[static_cast<size_t>(o)] = true;

  Rewriter rw(g);
  for (const Node& n : g.nodes())
    if (live[static_cast<size_t>(n.id)]) rw.copy(n);
  return std::move(rw).finish();
}

} // namespace weft::passes
