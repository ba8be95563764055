#include "symbolic_dims.h"

#include <exception>

#include "ir/fingerprint.h"

namespace weft::testing {
namespace {

using ir::Dim;

/// A static dim of `size` → `symbol`; a multiple of it → that multiple of `symbol` when
/// `multiples` (reshape targets: flattening [size, c] gives size * c).
Dim mapDim(const Dim& d, int64_t size, const Dim& symbol, bool multiples) {
  if (!d.isStatic()) return d;
  if (d.size() == size) return symbol;
  if (multiples && d.size() > size && d.size() % size == 0) return symbol * Dim(d.size() / size);
  return d;
}

ir::Shape mapShape(const ir::Shape& s, int64_t size, const Dim& symbol, bool multiples) {
  ir::Shape out;
  for (const Dim& d : s)
    out.push_back(mapDim(d, size, symbol, multiples));
  return out;
}

} // namespace

ir::Binding bindEverySymbol(const ir::Graph& g, int64_t size) {
  ir::Binding b;
  for (const std::string& s : g.symbols())
    b[s] = size;
  for (const ir::SymbolEquality& e : g.symbolEqualities())
    b[e.symbol] = e.value.evaluate(b);
  return b;
}

std::optional<ir::Graph> withSymbolicDim(const ir::Graph& g, int64_t size,
                                         const std::string& symbol, bool perParameterSymbols) {
  if (size <= 1) return std::nullopt;
  const Dim sym = Dim::symbol(symbol);
  int parameters = 0;
  ir::Graph out;
  std::vector<ir::NodeId> id(g.size(), -1);
  try {
    for (const ir::Node& n : g.nodes()) {
      std::vector<ir::NodeId> operands;
      for (ir::NodeId o : n.operands)
        operands.push_back(id[size_t(o)]);
      std::optional<ir::TensorType> declared;
      ir::Attrs attrs = n.attrs;
      switch (n.kind) {
      case ir::OpKind::Parameter:
        declared = ir::TensorType{
            n.type.dtype,
            mapShape(n.type.shape, size,
                     perParameterSymbols ? Dim::symbol(symbol + std::to_string(parameters++)) : sym,
                     false)};
        break;
      case ir::OpKind::Iota:
      case ir::OpKind::BroadcastInDim:
        declared = ir::TensorType{n.type.dtype, mapShape(n.type.shape, size, sym, false)};
        break;
      case ir::OpKind::Reshape:
        declared = ir::TensorType{n.type.dtype, mapShape(n.type.shape, size, sym, true)};
        break;
      case ir::OpKind::Constant: {
        // A splat takes any shape; per-element values keep the constant static.
        bool splat = n.attr<ir::ConstantAttrs>().values.size() == 1;
        declared = ir::TensorType{n.type.dtype,
                                  splat ? mapShape(n.type.shape, size, sym, false) : n.type.shape};
        break;
      }
      case ir::OpKind::Convert:
        declared = n.type;
        declared->shape = out.node(operands[0]).type.shape;
        break;
      case ir::OpKind::Slice: {
        // A whole symbolic axis is sliced with limit -1; any other slice of it stays static
        // and fails the type check below.
        auto a = n.attr<ir::SliceAttrs>();
        const ir::Shape& in = out.node(operands[0]).type.shape;
        for (size_t i = 0; i < in.size(); ++i)
          if (!in[i].isStatic() && a.starts[i] == 0 && a.limits[i] == size && a.strides[i] == 1)
            a.limits[i] = -1;
        attrs = a;
        break;
      }
      default:
        break;
      }
      id[size_t(n.id)] = out.add(n.kind, operands, attrs, declared, n.name);
    }
    std::vector<ir::NodeId> outputs;
    for (ir::NodeId o : g.outputs())
      outputs.push_back(id[size_t(o)]);
    out.setOutputs(outputs);
    ir::verify(out);
    if (out.symbols().empty()) return std::nullopt;
    if (ir::fingerprint(ir::bindSymbols(out, bindEverySymbol(out, size))) != ir::fingerprint(g))
      return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt; // not expressible with this symbol
  }
  return out;
}

} // namespace weft::testing
