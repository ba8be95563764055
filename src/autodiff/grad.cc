#include "autodiff/grad.h"

#include <fmt/format.h>
#include <set>

#include "autodiff/adjoints.h"
#include "weft/error.h"

namespace weft::autodiff {

using namespace ir;

namespace {

std::string namesOf(const Graph& g, const std::vector<NodeId>& ids) {
  std::string s;
  for (NodeId id : ids) s += (s.empty() ? "" : ", ") + g.node(id).name;
  return s;
}

/// The output named `loss`, checked to be a scalar float.
NodeId findLoss(const Graph& g, const std::string& loss) {
  std::optional<NodeId> id = g.find(loss);
  if (!id || !g.isOutput(*id))
    throw InputError(fmt::format("loss \"{}\": not an output of the graph (its outputs: {})", loss,
                                 namesOf(g, g.outputs())));
  const TensorType& t = g.node(*id).type;
  if (!t.shape.empty() || !isFloat(t.dtype))
    throw InputError(fmt::format("loss \"{}\": the loss must be a scalar floating-point output, "
                                 "but \"{}\" is {}",
                                 loss, loss, t.str()));
  return *id;
}

/// The inputs named in `wrt`, checked to be distinct floating-point inputs.
std::vector<NodeId> findWrt(const Graph& g, const std::vector<std::string>& wrt) {
  std::vector<NodeId> ids;
  std::set<std::string> seen;
  for (const std::string& name : wrt) {
    std::optional<NodeId> id = g.find(name);
    if (!id || g.node(*id).kind != OpKind::Parameter)
      throw InputError(fmt::format("wrt \"{}\": not an input of the graph (its inputs: {})", name,
                                   namesOf(g, g.inputs())));
    if (!seen.insert(name).second)
      throw InputError(fmt::format("wrt \"{}\": named twice", name));
    const TensorType& t = g.node(*id).type;
    if (!isFloat(t.dtype))
      throw InputError(fmt::format("wrt \"{}\": cannot differentiate with respect to {} input "
                                   "({}); only floating-point inputs have gradients",
                                   name, isBool(t.dtype) ? "a bool" : "an integer", t.str()));
    if (g.find(gradName(name)))
      throw InputError(fmt::format("wrt \"{}\": the gradient's name \"{}\" is already a value's "
                                   "name in the graph",
                                   name, gradName(name)));
    ids.push_back(*id);
  }
  return ids;
}

/// The sum of `parts` (all of one type) as one balanced add tree, the last add named `name`
/// when it is free; a single part is returned as it is.
NodeId sumOnce(Graph& g, std::vector<NodeId> parts, const std::string& name) {
  while (parts.size() > 1) {
    std::vector<NodeId> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      bool last = parts.size() == 2;
      std::string n = last && !g.find(name) ? name : "";
      next.push_back(g.binary(OpKind::Add, parts[i], parts[i + 1], n));
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts.front();
}

} // namespace

std::string gradName(const std::string& input) {
  return "grad_" + input;
}

std::vector<std::string> floatInputs(const Graph& g) {
  std::vector<std::string> names;
  for (NodeId id : g.inputs())
    if (isFloat(g.node(id).type.dtype)) names.push_back(g.node(id).name);
  return names;
}

Graph grad(const Graph& forward, const std::string& loss, const std::vector<std::string>& wrt) {
  NodeId lossId = findLoss(forward, loss);
  std::vector<NodeId> wrtIds = findWrt(forward, wrt);
  size_t n = forward.size();

  // Only values on a path from a wrt input to the loss get adjoints.
  std::vector<bool> fromWrt(n, false), toLoss(n, false);
  for (NodeId id : wrtIds) fromWrt[static_cast<size_t>(id)] = true;
  for (const Node& node : forward.nodes())
    for (NodeId o : node.operands)
      if (fromWrt[static_cast<size_t>(o)]) fromWrt[static_cast<size_t>(node.id)] = true;
  toLoss[static_cast<size_t>(lossId)] = true;
  for (size_t v = n; v-- > 0;)
    if (toLoss[v])
      for (NodeId o : forward.node(static_cast<NodeId>(v)).operands) toLoss[static_cast<size_t>(o)] = true;
  auto onPath = [&](NodeId v) {
    auto i = static_cast<size_t>(v);
    return fromWrt[i] && toLoss[i] && isFloat(forward.node(v).type.dtype);
  };

  // The forward graph is kept whole (ids unchanged); the backward is appended in reverse
  // order. parts[v] collects the contributions to v's adjoint; they are summed when v's turn
  // comes, after every user of v (a later node) has contributed.
  Graph g = forward;
  std::vector<std::vector<NodeId>> parts(n);
  std::vector<NodeId> adjointOf(n, -1);
  const TensorType& lt = forward.node(lossId).type;
  if (onPath(lossId)) parts[static_cast<size_t>(lossId)].push_back(g.constant(lt.dtype, {}, {1.0}, unusedName(g, "d_" + loss + ".seed")));
  for (size_t v = n; v-- > 0;) {
    if (parts[v].empty()) continue;
    const Node y = forward.node(static_cast<NodeId>(v)); // a copy: g grows below
    std::string name = y.kind == OpKind::Parameter ? gradName(y.name) : "d_" + y.name;
    NodeId dy = sumOnce(g, parts[v], name);
    adjointOf[v] = dy;
    std::vector<bool> want(y.operands.size());
    bool any = false;
    for (size_t i = 0; i < y.operands.size(); ++i) any |= (want[i] = onPath(y.operands[i]));
    if (!any) continue;
    std::vector<NodeId> d = adjoint(g, y, dy, want);
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] >= 0) parts[static_cast<size_t>(y.operands[i])].push_back(d[i]);
  }

  // Outputs: the forward's, then grad_<input> per wrt input; an input whose adjoint is a value
  // of another name (a single contribution) gets it through an identity reshape, one with no
  // path to the loss gets zeros.
  std::vector<NodeId> outputs = forward.outputs();
  for (NodeId x : wrtIds) {
    const Node& in = forward.node(x);
    std::string name = gradName(in.name);
    NodeId d = adjointOf[static_cast<size_t>(x)];
    if (d < 0)
      d = g.constant(in.type.dtype, in.type.shape, {0.0}, name);
    else if (g.node(d).name != name)
      d = g.reshape(d, in.type.shape, name);
    outputs.push_back(d);
  }
  g.setOutputs(outputs);
  verify(g);
  return g;
}

} // namespace weft::autodiff
