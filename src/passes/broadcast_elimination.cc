#include "passes/broadcast_elimination.h"

#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

namespace {

bool isIdentityBroadcast(const Node& n, const Node& operand) {
  if (n.kind != OpKind::BroadcastInDim || operand.type.shape != n.type.shape) return false;
  const auto& dims =
      n.attr<BroadcastAttrs>().dims; // equal ranks make these 0..rank-1; checked anyway
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<int64_t>(i)) return false;
  return true;
}

} // namespace

Graph eliminateIdentityBroadcasts(const Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    if (n.kind == OpKind::BroadcastInDim && isIdentityBroadcast(n, rw.mappedNode(n.operands[0])))
      rw.replaceWith(n, rw.mapped(n.operands[0]));
    else
      rw.copy(n);
  }
  return std::move(rw).finish();
}

} // namespace weft::passes
