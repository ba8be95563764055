#include "passes/amp.h"

#include <fmt/format.h>

#include "weft/error.h"

namespace weft::passes {

using namespace ir;

namespace {

/// Where a value computes, decided per node in graph order.
enum class Precision : uint8_t {
  Source, // keeps its dtype and is converted at each use (parameters, constants, ...)
  Kept,   // sensitive or a statistic: f32
  Low,    // the low precision
};

/// Ops that compute in f32 whatever their operands: accumulation and the exp/log of softmax
/// and losses.
bool sensitive(OpKind k) {
  return k == OpKind::Reduce || k == OpKind::Exp || k == OpKind::Log;
}

/// The precision of node n from its operands' (only f32 values are candidates). `feedsDot`:
/// n is an operand of a dot; `feedsCompare`: of a compare.
Precision decide(const Graph& g, const Node& n, const std::vector<Precision>& p, bool feedsDot,
                 bool feedsCompare) {
  // compare: a bool from f32 operands, decided below with them
  if (n.type.dtype != DType::f32 && n.kind != OpKind::Compare) return Precision::Source;
  switch (n.kind) {
  case OpKind::Parameter:
  case OpKind::Constant:
  case OpKind::Iota:
    return Precision::Source;
  case OpKind::Convert:
    // into f32 from another dtype: a source; f32 -> f32 does not exist
    return Precision::Source;
  default:
    break;
  }
  if (sensitive(n.kind)) return Precision::Kept;
  // A dot's operand is computed in f32 where it is made: cast up on its own, in front of the
  // library kernel, it would be a kernel (xla does not fuse it back into a producer with other
  // users).
  if (feedsDot && n.kind != OpKind::Dot) return Precision::Kept;
  bool anyKept = false, anyLow = false;
  for (NodeId o : n.operands) {
    if (g.node(o).type.dtype != DType::f32) continue;
    Precision q = p[static_cast<size_t>(o)];
    anyKept |= q == Precision::Kept;
    anyLow |= q == Precision::Low;
  }
  // A compare of values that exist in f32 (inputs, statistics) compares them in f32: rounded,
  // two close values would tie (a max's adjoint, x == broadcast(max x), would split its
  // gradient between them). Values computed in the low precision compare as computed.
  if (n.kind == OpKind::Compare) return anyLow ? Precision::Low : Precision::Kept;
  if (n.kind == OpKind::BroadcastInDim) { // where a statistic meets the full-size tensor
    if (feedsCompare && !anyLow) return anyKept ? Precision::Kept : Precision::Source;
    return anyKept || anyLow ? Precision::Low : Precision::Source;
  }
  // A dot is a library kernel: a cast in front of it would be a kernel of its own (nothing to
  // fuse into), so a dot reads f32 and its result counts as a source, which its consumers cast
  // as they fuse.
  if (n.kind == OpKind::Dot) return Precision::Source;
  if (opClass(n.kind) == OpClass::Layout && !anyKept && !anyLow) return Precision::Source;
  return anyKept && !anyLow ? Precision::Kept : Precision::Low;
}

/// The dtype an op of precision `p` needs its f32 operands in.
DType operandDType(const Node& n, Precision p, DType low) {
  if (sensitive(n.kind)) return DType::f32;
  return p == Precision::Low ? low : DType::f32;
}

} // namespace

Graph autoMixedPrecision(const Graph& g, DType low) {
  if (low != DType::f16 && low != DType::bf16)
    throw InputError(fmt::format("--amp {}: the low precision must be f16 or bf16", dtypeName(low)));
  std::vector<Precision> p(g.size(), Precision::Source);
  std::vector<bool> feedsDot(g.size(), false), feedsCompare(g.size(), false);
  for (const Node& n : g.nodes())
    for (NodeId o : n.operands) {
      if (n.kind == OpKind::Dot) feedsDot[static_cast<size_t>(o)] = true;
      if (n.kind == OpKind::Compare) feedsCompare[static_cast<size_t>(o)] = true;
    }
  for (const Node& n : g.nodes())
    p[static_cast<size_t>(n.id)] = decide(g, n, p, feedsDot[static_cast<size_t>(n.id)],
                                          feedsCompare[static_cast<size_t>(n.id)]);

  Graph out;
  std::vector<NodeId> map(g.size(), -1);
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; out.find(name) || g.find(name); ++k) name = fmt::format("{}.{}", base, k);
    return name;
  };
  for (const Node& n : g.nodes()) {
    Precision q = p[static_cast<size_t>(n.id)];
    // An output computed in low precision is renamed; the convert back takes its name.
    bool lowered = q == Precision::Low && n.type.dtype == DType::f32;
    bool renamed = lowered && g.isOutput(n.id);
    std::string name = renamed ? fresh(n.name + ".amp") : n.name;
    if (n.kind == OpKind::Parameter) {
      map[static_cast<size_t>(n.id)] = out.parameter(n.name, n.type);
      continue;
    }
    std::vector<NodeId> operands;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      NodeId o = map[static_cast<size_t>(n.operands[i])];
      DType has = out.node(o).type.dtype;
      // Only values that were f32 change dtype; bool predicates, integers and f64 stay.
      DType need = g.node(n.operands[i]).type.dtype == DType::f32 ? operandDType(n, q, low) : has;
      if (n.kind == OpKind::Convert) need = has; // a convert converts whatever it gets
      if (has != need) o = out.convert(o, need, fresh(fmt::format("{}.amp_in{}", n.name, i)));
      operands.push_back(o);
    }
    TensorType t = n.type;
    if (lowered) t.dtype = low;
    map[static_cast<size_t>(n.id)] = out.add(n.kind, operands, n.attrs, t, name);
  }
  std::vector<NodeId> outputs;
  for (NodeId o : g.outputs()) {
    NodeId v = map[static_cast<size_t>(o)];
    const Node& src = g.node(o);
    if (out.node(v).type.dtype != src.type.dtype) {
      std::optional<NodeId> named = out.find(src.name);
      v = named ? *named : out.convert(v, src.type.dtype, src.name);
    }
    outputs.push_back(v);
  }
  out.setOutputs(outputs);
  return out;
}

} // namespace weft::passes
