#include "fusion/graph_queries.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

namespace weft::fusion {

bool isSource(const ir::Node& n) {
  return n.kind == ir::OpKind::Constant || n.kind == ir::OpKind::Iota;
}

bool readsAtDataPositions(const ir::Node& user, ir::NodeId operand) {
  return user.kind == ir::OpKind::Gather && user.operands[0] == operand;
}

bool gatheredFromMemory(const ir::Graph& g, const Users& users, ir::NodeId v) {
  const ir::Node& n = g.node(v);
  if (n.kind == ir::OpKind::Parameter || isSource(n)) return false;
  const auto& us = users[static_cast<size_t>(v)];
  return std::any_of(us.begin(), us.end(),
                     [&](ir::NodeId u) { return readsAtDataPositions(g.node(u), v); });
}

namespace {

/// The broadcasts that expand `op` one-to-many, directly or through reshapes and broadcasts,
/// until `stop` says so of one (true: found what the caller looks for).
bool anyExpansion(const ir::Graph& g, const Users& users, ir::NodeId op,
                  const std::function<bool(const ir::Node&)>& stop) {
  std::vector<ir::NodeId> work = users[size_t(op)];
  while (!work.empty()) {
    ir::NodeId u = work.back();
    work.pop_back();
    const ir::Node& n = g.node(u);
    if (n.kind == ir::OpKind::BroadcastInDim &&
        ir::numElements(n.type.shape) != ir::numElements(g.node(n.operands[0]).type.shape) &&
        stop(n))
      return true;
    if (n.kind == ir::OpKind::Reshape || n.kind == ir::OpKind::BroadcastInDim)
      work.insert(work.end(), users[size_t(u)].begin(), users[size_t(u)].end());
  }
  return false;
}

} // namespace

bool isExpensiveBroadcastSource(const ir::Graph& g, const Users& users, ir::NodeId op) {
  if (ir::opClass(g.node(op).kind) != ir::OpClass::ExpensiveElementwise) return false;
  return anyExpansion(g, users, op, [](const ir::Node&) { return true; });
}

BlockComputable blockComputable(const ir::Graph& g, const std::vector<bool>& inScope,
                                ir::NodeId op) {
  auto small = [&](const ir::Node& n) {
    ir::Dim elements = ir::numElements(n.type.shape);
    return elements.isStatic() && elements.size() <= kMaxBlockComputedElements &&
           elements.size() * ir::dtypeBytes(n.type.dtype) <= kMaxBlockComputedBytes;
  };
  if (!inScope[size_t(op)] || !small(g.node(op))) return BlockComputable::No;
  bool readsOrExpensive = false; // an input read, or an expensive op in the cone
  std::set<ir::NodeId> seen;
  std::vector<ir::NodeId> work = {op};
  while (!work.empty()) {
    ir::NodeId v = work.back();
    work.pop_back();
    if (!seen.insert(v).second) continue;
    if (!inScope[size_t(v)]) { // read before the scope
      readsOrExpensive = true;
      continue;
    }
    const ir::Node& n = g.node(v);
    switch (ir::opClass(n.kind)) {
    case ir::OpClass::ExpensiveElementwise:
      readsOrExpensive = true;
      break;
    case ir::OpClass::Input:
    case ir::OpClass::LightElementwise:
    case ir::OpClass::Broadcast:
    case ir::OpClass::Layout:
      break;
    default:
      return BlockComputable::No; // a reduce or a library call: another group's work
    }
    // Every intermediate is small too: the block computes each of its elements once per read.
    if (!small(n) || int(seen.size()) > kMaxBlockComputedOps) return BlockComputable::No;
    work.insert(work.end(), n.operands.begin(), n.operands.end());
  }
  return readsOrExpensive ? BlockComputable::PerBlock : BlockComputable::Inline;
}

bool isBroadcastAlongOuterDim(const ir::Graph& g, const Users& users, ir::NodeId op) {
  return !anyExpansion(g, users, op, [&](const ir::Node& n) { return variesAlongOuterDim(g, n); });
}

bool variesAlongOuterDim(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& in = g.node(n.operands[0]).type.shape;
  const auto& dims = n.attr<ir::BroadcastAttrs>().dims;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 0 && !in[i].isOne()) return true;
  return false;
}

ir::Shape rowShapeOf(const ir::Shape& loopShape, const std::vector<int64_t>& tileDims) {
  ir::Shape rows;
  for (int64_t d : tileDims)
    rows.push_back(loopShape[static_cast<size_t>(d)]);
  return rows;
}

int64_t staticOr(const ir::Dim& d, int64_t fallback) {
  return d.isStatic() ? d.size() : fallback;
}

int64_t staticElementsOr(const ir::Shape& s, int64_t fallback) {
  int64_t n = 1;
  for (const ir::Dim& d : s) {
    if (!d.isStatic()) return fallback;
    n *= d.size();
  }
  return n;
}

std::string ptxIdentifier(const std::string& text) {
  std::string id;
  for (char c : text)
    id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "k_" + id;
  return id;
}

} // namespace weft::fusion
