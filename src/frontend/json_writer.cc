#include "frontend/json_writer.h"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>

namespace weft::frontend {
namespace {

using json = nlohmann::json;
using ir::OpKind;

json shapeJson(const ir::Shape& s) {
  json out = json::array();
  for (const ir::Dim& d : s) {
    if (d.isStatic())
      out.push_back(d.size());
    else
      out.push_back(d.str());
  }
  return out;
}

/// JSON has no infinities or NaN; the reader takes these strings instead.
json numberJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15 && !(v == 0 && std::signbit(v)))
    return static_cast<int64_t>(v);
  return v;
}

struct AttrWriter {
  json& out;
  const ir::Node& n;
  void operator()(const ir::NoAttrs&) const {}
  void operator()(const ir::ParameterAttrs&) const {}
  void operator()(const ir::ConstantAttrs& a) const {
    out["dtype"] = ir::dtypeName(n.type.dtype);
    out["shape"] = shapeJson(n.type.shape);
    if (a.values.size() == 1) {
      out["value"] = numberJson(a.values[0]);
      return;
    }
    json values = json::array();
    for (double v : a.values)
      values.push_back(numberJson(v));
    out["values"] = std::move(values);
  }
  void operator()(const ir::IotaAttrs& a) const {
    out["dtype"] = ir::dtypeName(n.type.dtype);
    out["shape"] = shapeJson(n.type.shape);
    out["axis"] = a.axis;
  }
  void operator()(const ir::CompareAttrs& a) const { out["direction"] = ir::compareDirName(a.dir); }
  void operator()(const ir::BroadcastAttrs& a) const {
    out["shape"] = shapeJson(n.type.shape);
    out["dims"] = a.dims;
  }
  void operator()(const ir::TransposeAttrs& a) const { out["perm"] = a.perm; }
  void operator()(const ir::SliceAttrs& a) const {
    out["starts"] = a.starts;
    out["limits"] = a.limits;
    out["strides"] = a.strides;
  }
  void operator()(const ir::ConcatAttrs& a) const { out["axis"] = a.axis; }
  void operator()(const ir::PadAttrs& a) const {
    out["low"] = a.low;
    out["high"] = a.high;
    out["value"] = numberJson(a.value);
  }
  void operator()(const ir::GatherAttrs& a) const {
    out["axes"] = a.axes;
    out["dims"] = a.dims;
  }
  void operator()(const ir::ReduceAttrs& a) const {
    out["kind"] = ir::reduceKindName(a.kind);
    out["axes"] = a.axes;
  }
};

/// Like json::dump() but with ", " between array elements, as people write JSON.
std::string dumpSpaced(const json& j) {
  if (!j.is_array()) return j.dump();
  std::string out = "[";
  for (size_t i = 0; i < j.size(); ++i)
    out += (i ? ", " : "") + dumpSpaced(j[i]);
  return out + "]";
}

/// Fields in a fixed, readable order: name, op, inputs, then the attributes.
std::string opLine(const ir::Graph& g, const ir::Node& n) {
  json attrs = json::object();
  std::visit(AttrWriter{attrs, n}, n.attrs);
  if (n.kind == OpKind::Convert) attrs["dtype"] = ir::dtypeName(n.type.dtype);
  if (n.kind == OpKind::Reshape) attrs["shape"] = shapeJson(n.type.shape);
  json inputs = json::array();
  for (ir::NodeId o : n.operands)
    inputs.push_back(g.node(o).name);
  std::string line = fmt::format("{{\"name\": {}, \"op\": {}", json(n.name).dump(),
                                 json(std::string(ir::opName(n.kind))).dump());
  if (!inputs.empty()) line += fmt::format(", \"inputs\": {}", dumpSpaced(inputs));
  // A fixed attribute order keeps diffs of written files small.
  static const char* kOrder[] = {"kind",    "direction", "dtype", "shape",  "dims",
                                 "axis",    "axes",      "perm",  "starts", "limits",
                                 "strides", "low",       "high",  "value",  "values"};
  for (const char* key : kOrder)
    if (attrs.contains(key)) line += fmt::format(", \"{}\": {}", key, dumpSpaced(attrs[key]));
  return line + "}";
}

} // namespace

std::string writeGraphJson(const ir::Graph& g, const std::string& name) {
  return writeGraphJson(g, name, {}, "");
}

std::string writeGraphJson(const ir::Graph& g, const std::string& name,
                           const std::vector<std::string>& weightNames,
                           const std::string& weightsFile) {
  std::set<std::string> weights(weightNames.begin(), weightNames.end());
  std::string out = fmt::format("{{\n  \"name\": {},\n", json(name).dump());
  // "inputs", then "weights" (the inputs whose values are in the weights file).
  for (bool weight : {false, true}) {
    if (weight && weights.empty()) break;
    out += weight ? ",\n  \"weights_file\": " + json(weightsFile).dump() + ",\n  \"weights\": ["
                  : "  \"inputs\": [";
    bool firstInput = true;
    for (ir::NodeId id : g.inputs()) {
      const ir::Node& n = g.node(id);
      if (weights.count(n.name) != (weight ? 1u : 0u)) continue;
      out += fmt::format("{}\n    {{\"name\": {}, \"dtype\": \"{}\", \"shape\": {}}}",
                         firstInput ? "" : ",", json(n.name).dump(), ir::dtypeName(n.type.dtype),
                         dumpSpaced(shapeJson(n.type.shape)));
      firstInput = false;
    }
    out += firstInput ? "]" : "\n  ]";
  }
  out += ",\n  \"ops\": [";
  bool first = true;
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == OpKind::Parameter) continue;
    out += fmt::format("{}\n    {}", first ? "" : ",", opLine(g, n));
    first = false;
  }
  out += first ? "],\n  \"outputs\": [" : "\n  ],\n  \"outputs\": [";
  for (size_t i = 0; i < g.outputs().size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", json(g.node(g.outputs()[i]).name).dump());
  return out + "]\n}\n";
}

} // namespace weft::frontend
