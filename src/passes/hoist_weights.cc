#include "passes/hoist_weights.h"

#include <cstdlib>

#include "ir/dtype.h"
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

HoistedWeights hoistWeights(const Graph& g, size_t maxBytes) {
  HoistedWeights out;
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
