#include "passes/cse.h"

#include <map>

#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

Graph cse(const Graph& g) {
  Rewriter rw(g);
  // Ops already emitted, by kind and (mapped) operands; attributes and type are compared
  // within a bucket, which stays short.
  std::map<std::pair<OpKind, std::vector<NodeId>>, std::vector<NodeId>> emitted;
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    auto& bucket = emitted[{n.kind, rw.mappedOperands(n)}];
    bool merged = false;
    for (NodeId e : bucket) {
      const Node& earlier = rw.result().node(e);
      if (earlier.attrs == n.attrs && earlier.type == n.type) {
        rw.replaceWith(n, e);
        merged = true;
        break;
      }
    }
    if (!merged) bucket.push_back(rw.copy(n));
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
