#include "passes/hoist_weights.h"

#include <cstdlib>

#include "ir/dtype.h"
#include "ir/interpreter.h"
#include "passes/dce.h"
#include "passes/rewriter.h"

namespace weft::passes {

using namespace ir;

namespace {
bool isWeightConstant(const Graph& g, const Node& n, size_t maxBytes) {
  if (n.kind != OpKind::Constant || g.isOutput(n.id) || !isStatic(n.type.shape)) return false;
  const auto& values = n.attr<ConstantAttrs>().values;
  return values.size() > 1 && values.size() * dtypeBytes(n.type.dtype) > maxBytes;
}
} // namespace

size_t maxEmbeddedConstantBytes() {
  const char* limit = std::getenv("WEFT_MAX_EMBEDDED_CONSTANT_BYTES");
  return limit ? std::strtoull(limit, nullptr, 10) : kMaxEmbeddedConstantBytes;
}

HostTensor constantTensor(const Node& n) {
  std::vector<int64_t> shape;
  for (const Dim& d : n.type.shape)
    shape.push_back(d.size());
  HostTensor t(n.type.dtype, shape);
  const auto& values = n.attr<ConstantAttrs>().values;
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, values[values.size() == 1 ? 0 : static_cast<size_t>(i)]);
  return t;
}

namespace {

int64_t elements(const Shape& s) {
  return isStatic(s) ? numElements(s).size() : -1;
}

/// An op computed from constants alone, one of them a weight, whose result is no larger than
/// its largest operand (a transpose, a reshape, a convert, a slice of a weight, a dot of two):
/// computed once here rather than by a kernel on every run. Ops that expand (a broadcast of a
/// bias) stay ops: their result would be a larger weight. Outputs stay.
bool foldableOverWeights(const Rewriter& rw, const Graph& g, const Node& n, size_t maxBytes) {
  if (n.operands.empty() || g.isOutput(n.id) || elements(n.type.shape) < 0) return false;
  bool overWeight = false;
  int64_t largest = 0;
  for (NodeId o : n.operands) {
    const Node& m = rw.mappedNode(o);
    if (m.kind != OpKind::Constant) return false;
    overWeight = overWeight || isWeightConstant(rw.result(), m, maxBytes);
    largest = std::max(largest, elements(m.type.shape));
  }
  return overWeight && elements(n.type.shape) <= largest;
}

std::vector<double> evaluate(const Rewriter& rw, const Node& n) {
  Graph scratch;
  std::vector<NodeId> operands;
  for (NodeId o : n.operands) {
    const Node& m = rw.mappedNode(o);
    std::optional<NodeId> known = scratch.find(m.name); // dot(w, w) reads one constant twice
    operands.push_back(known ? *known : scratch.add(OpKind::Constant, {}, m.attrs, m.type, m.name));
  }
  scratch.addOutput(scratch.add(n.kind, operands, n.attrs, n.type, n.name));
  HostTensor t = interpret(scratch, {}).at(0);
  std::vector<double> values(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    values[static_cast<size_t>(i)] = t.get(i);
  return values;
}

/// Folds the ops foldableOverWeights admits, in one pass (chains fold too), and drops the
/// constants nothing reads any more.
Graph foldOverWeights(const Graph& g, size_t maxBytes) {
  Rewriter rw(g);
  bool folded = false;
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    if (foldableOverWeights(rw, g, n, maxBytes)) {
      rw.replaceWithNew(n, OpKind::Constant, {}, ConstantAttrs{evaluate(rw, n)});
      folded = true;
    } else {
      rw.copy(n);
    }
  }
  return folded ? dce(std::move(rw).finish()) : g;
}

} // namespace

HoistedWeights hoistWeights(const Graph& source, size_t maxBytes) {
  HoistedWeights out;
  const Graph g = foldOverWeights(source, maxBytes);
  Rewriter rw(g); // the source's inputs first, in order
  // The weights next, so that every input comes before every op (operands precede users).
  for (const Node& n : g.nodes())
    if (isWeightConstant(g, n, maxBytes)) {
      rw.replaceWithNew(n, OpKind::Parameter, {}, ParameterAttrs{});
      out.values.emplace(n.name, constantTensor(n));
    }
  for (const Node& n : g.nodes())
    if (n.kind != OpKind::Parameter && !rw.isMapped(n.id)) rw.copy(n);
  out.graph = std::move(rw).finish();
  return out;
}

} // namespace weft::passes
