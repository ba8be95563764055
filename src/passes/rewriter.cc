#include "passes/rewriter.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace weft::passes {

using namespace ir;

Rewriter::Rewriter(const Graph& source) : source_(source), map_(source.size()) {
  result_.inheritSymbolEqualities(source);
  for (NodeId id : source.inputs()) {
    const Node& p = source.node(id);
    map_[static_cast<size_t>(id)] = result_.parameter(p.name, p.type);
  }
}

NodeId Rewriter::mapped(NodeId sourceId) const {
  const auto& m = map_.at(static_cast<size_t>(sourceId));
  assert(m && "a pass read a source value before mapping it");
  return *m;
}

std::vector<NodeId> Rewriter::mappedOperands(const Node& n) const {
  std::vector<NodeId> ops;
  ops.reserve(n.operands.size());
  for (NodeId o : n.operands)
    ops.push_back(mapped(o));
  return ops;
}

NodeId Rewriter::copy(const Node& n) {
  if (n.kind == OpKind::Parameter) return mapped(n.id);
  NodeId id = result_.add(n.kind, mappedOperands(n), n.attrs, n.type, n.name);
  map_[static_cast<size_t>(n.id)] = id;
  return id;
}

NodeId Rewriter::replaceWithNew(const Node& n, OpKind kind, std::vector<NodeId> operands,
                                Attrs attrs) {
  NodeId id = result_.add(kind, std::move(operands), std::move(attrs), n.type, n.name);
  map_[static_cast<size_t>(n.id)] = id;
  return id;
}

void Rewriter::replaceWith(const Node& n, NodeId existing) {
  assert(result_.node(existing).type == n.type && "a value was replaced by one of another type");
  map_[static_cast<size_t>(n.id)] = existing;
}

std::string Rewriter::freshName(const std::string& base) const {
  std::string name = base;
  for (int i = 1; source_.find(name) || result_.find(name); ++i)
    name = base + "." + std::to_string(i);
  return name;
}

Graph Rewriter::finish() && {
  const std::vector<NodeId>& sourceOutputs = source_.outputs();
  size_t count = sourceOutputs.size();
  std::vector<NodeId> values(count);
  std::vector<std::string> names(count);
  std::vector<bool> named(count, false), claimed(result_.size(), false);
  for (size_t i = 0; i < count; ++i) {
    values[i] = mapped(sourceOutputs[i]);
    names[i] = source_.node(sourceOutputs[i]).name;
    if (result_.node(values[i]).name != names[i]) continue;
    named[i] = true;
    claimed[static_cast<size_t>(values[i])] = true;
  }
  if (std::find(named.begin(), named.end(), false) == named.end()) {
    result_.setOutputs(values);
    return std::move(result_);
  }

  // An output replaced by an op no other output names: that op takes the output's name.
  std::map<NodeId, std::string> renamed;
  for (size_t i = 0; i < count; ++i) {
    auto r = static_cast<size_t>(values[i]);
    if (named[i] || claimed[r] || result_.node(values[i]).kind == OpKind::Parameter) continue;
    renamed[values[i]] = names[i];
    named[i] = true;
    claimed[r] = true;
  }

  // Rebuild under the new names (same order, so node ids stay), then give each output still
  // unnamed its identity reshape.
  Graph g;
  for (const Node& n : result_.nodes()) {
    auto it = renamed.find(n.id);
    g.add(n.kind, n.operands, n.attrs, n.type, it == renamed.end() ? n.name : it->second);
  }
  for (size_t i = 0; i < count; ++i)
    if (!named[i]) values[i] = g.reshape(values[i], g.node(values[i]).type.shape, names[i]);
  g.setOutputs(values);
  return g;
}

bool sameGraph(const Graph& a, const Graph& b) {
  if (a.size() != b.size() || a.inputs() != b.inputs() || a.outputs() != b.outputs()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Node& x = a.nodes()[i];
    const Node& y = b.nodes()[i];
    if (x.name != y.name || x.kind != y.kind || x.operands != y.operands || !(x.type == y.type) ||
        !(x.attrs == y.attrs))
      return false;
  }
  return true;
}

} // namespace weft::passes
