#include "fusion/graph_queries.h"

#include <cctype>

namespace weft::fusion {

bool isSource(const ir::Node& n) {
  return n.kind == ir::OpKind::Constant || n.kind == ir::OpKind::Iota;
}

bool isExpensiveBroadcastSource(const ir::Graph& g, const Users& users, ir::NodeId op) {
  if (ir::opClass(g.node(op).kind) != ir::OpClass::ExpensiveElementwise) return false;
  std::vector<ir::NodeId> work = users[static_cast<size_t>(op)];
  while (!work.empty()) {
    ir::NodeId u = work.back();
    work.pop_back();
    const ir::Node& n = g.node(u);
    if (n.kind == ir::OpKind::BroadcastInDim) {
      ir::Dim in = ir::numElements(g.node(n.operands[0]).type.shape);
      if (ir::numElements(n.type.shape) != in) return true; // a real one-to-many expansion
    }
    if (n.kind == ir::OpKind::Reshape || n.kind == ir::OpKind::BroadcastInDim)
      for (ir::NodeId w : users[static_cast<size_t>(u)])
        work.push_back(w);
  }
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
