#include "ir/printer.h"

#include <fmt/format.h>

namespace weft::ir {
namespace {

std::string list(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::string values(const std::vector<double>& v) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < v.size() && i < kShown; ++i) out += fmt::format("{}{:g}", i ? ", " : "", v[i]);
  if (v.size() > kShown) out += fmt::format(", ... ({} values)", v.size());
  return v.size() == 1 ? out : "[" + out + "]";
}

struct AttrPrinter {
  std::string operator()(const NoAttrs&) const { return ""; }
  std::string operator()(const ParameterAttrs& a) const { return fmt::format("[{}]", a.index); }
  std::string operator()(const ConstantAttrs& a) const { return "[" + values(a.values) + "]"; }
  std::string operator()(const IotaAttrs& a) const { return fmt::format("[axis={}]", a.axis); }
  std::string operator()(const CompareAttrs& a) const { return fmt::format("[{}]", compareDirName(a.dir)); }
  std::string operator()(const BroadcastAttrs& a) const { return fmt::format("[dims={}]", list(a.dims)); }
  std::string operator()(const TransposeAttrs& a) const { return fmt::format("[perm={}]", list(a.perm)); }
  std::string operator()(const SliceAttrs& a) const {
    return fmt::format("[starts={}, limits={}, strides={}]", list(a.starts), list(a.limits), list(a.strides));
  }
  std::string operator()(const ConcatAttrs& a) const { return fmt::format("[axis={}]", a.axis); }
  std::string operator()(const PadAttrs& a) const {
    return fmt::format("[low={}, high={}, value={:g}]", list(a.low), list(a.high), a.value);
  }
  std::string operator()(const GatherAttrs& a) const {
    return fmt::format("[axes={}, dims={}]", list(a.axes), list(a.dims));
  }
  std::string operator()(const ReduceAttrs& a) const {
    return fmt::format("[{}, axes={}]", reduceKindName(a.kind), list(a.axes));
  }
};

} // namespace

std::string printAttrs(const Node& n) { return std::visit(AttrPrinter{}, n.attrs); }

std::string escapeControl(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

std::string printNode(const Graph& g, const Node& n) {
  std::string ops;
  for (size_t i = 0; i < n.operands.size(); ++i)
    ops += fmt::format("{}%{}", i ? ", " : "", escapeControl(g.node(n.operands[i]).name));
  return fmt::format("%{} = {}{}({}) : {}", escapeControl(n.name), opName(n.kind), printAttrs(n),
                     ops, n.type.str());
}

std::string printGraph(const Graph& g, const std::string& name) {
  std::string params;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    params += fmt::format("{}%{}: {}", params.empty() ? "" : ", ", escapeControl(n.name),
                          n.type.str());
  }
  std::string out = fmt::format("graph {}({}) {{\n", name, params);
  for (const SymbolEquality& e : g.symbolEqualities())
    out += fmt::format("  // {} = {}: unified by {}\n", e.symbol, e.value.str(), e.where);
  for (const Node& n : g.nodes())
    if (n.kind != OpKind::Parameter) out += "  " + printNode(g, n) + "\n";
  std::string rets;
  for (NodeId id : g.outputs())
    rets += fmt::format("{}%{}", rets.empty() ? "" : ", ", escapeControl(g.node(id).name));
  return out + "  return " + rets + "\n}\n";
}

} // namespace weft::ir
