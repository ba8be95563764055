#include "fusion/reduction_split.h"

#include <algorithm>

#include <fmt/format.h>

namespace weft::fusion {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for (int64_t d = from; d < to; ++d)
    r.push_back(d);
  return r;
}

std::string axesStr(const std::vector<int64_t>& axes) {
  std::string s;
  for (int64_t a : axes)
    s += (s.empty() ? "" : ", ") + std::to_string(a);
  return "{" + s + "}";
}

/// Where reduce `n`'s row starts (its first dim), or -1 when it is not split: see the header.
/// `rowReduce` names the reduce whose row it takes, when one does.
int64_t rowStart(const Graph& g, const std::vector<NodeId>& rowReduces, const Node& n,
                 NodeId& rowReduce) {
  const auto& attrs = n.attr<ir::ReduceAttrs>();
  const ir::Shape& shape = g.node(n.operands[0]).type.shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t>& axes = attrs.axes;
  if (rank < 2 || axes.size() < 2 || axes.back() != rank - 1) return -1;
  // Summing low-precision partials would round each row's sum before the total.
  ir::DType dt = n.type.dtype;
  if ((dt == ir::DType::f16 || dt == ir::DType::bf16) &&
      (attrs.kind == ir::ReduceKind::Sum || attrs.kind == ir::ReduceKind::Prod ||
       attrs.kind == ir::ReduceKind::LogSumExp))
    return -1;
  int64_t run = rank - 1; // the trailing run of reduced dims starts at `run`
  while (run > 0 && std::binary_search(axes.begin(), axes.end(), run - 1))
    --run;
  auto splits = [&](int64_t j) { return j >= std::max<int64_t>(run, 1) && j < rank && axes.front() < j; };
  int64_t start = -1;
  for (NodeId r : rowReduces) { // the row another reduce of this shape takes
    const Node& other = g.node(r);
    const auto& oa = other.attr<ir::ReduceAttrs>().axes;
    if (other.id == n.id || g.node(other.operands[0]).type.shape != shape || oa.back() != rank - 1 ||
        oa != range(oa.front(), rank) || !splits(oa.front()))
      continue;
    start = oa.front(), rowReduce = other.id;
    break;
  }
  if (start < 0) {
    if (run > 0 && splits(run)) start = run;
    else if (run == 0) start = 1;
    else return -1;
  }
  ir::Dim rowLength = 1, rows = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d >= start) rowLength = rowLength * shape[static_cast<size_t>(d)];
    else if (std::binary_search(axes.begin(), axes.end(), d)) rows = rows * shape[static_cast<size_t>(d)];
  if ((rowLength.isStatic() && rowLength.size() < kMinSplitRowLength) ||
      (rows.isStatic() && rows.size() <= 1))
    return -1;
  return start;
}

std::string freshName(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.find(name); ++i)
    name = base + "." + std::to_string(i);
  return name;
}

} // namespace

SplitReductions splitRowReductions(const Graph& g) {
  std::vector<NodeId> rowReduces;
  for (const Node& n : g.nodes())
    if (n.kind == ir::OpKind::Reduce) rowReduces.push_back(n.id);
  std::vector<std::pair<NodeId, int64_t>> splits; // reduce, its row's first dim
  std::vector<NodeId> takenFrom;
  for (NodeId r : rowReduces) {
    NodeId from = -1;
    int64_t start = rowStart(g, rowReduces, g.node(r), from);
    if (start >= 0) splits.push_back({r, start}), takenFrom.push_back(from);
  }
  SplitReductions out;
  if (splits.empty()) {
    out.graph = g;
    return out;
  }

  Graph& result = out.graph;
  std::vector<NodeId> map(g.size(), -1);
  size_t next = 0;
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> operands;
    for (NodeId o : n.operands)
      operands.push_back(map[static_cast<size_t>(o)]);
    if (n.kind == ir::OpKind::Parameter) {
      map[static_cast<size_t>(n.id)] = result.parameter(n.name, n.type);
      continue;
    }
    if (next < splits.size() && splits[next].first == n.id) {
      const auto& attrs = n.attr<ir::ReduceAttrs>();
      const int64_t rank = static_cast<int64_t>(g.node(n.operands[0]).type.shape.size());
      const int64_t start = splits[next].second;
      std::vector<int64_t> row = range(start, rank), outer;
      for (int64_t a : attrs.axes)
        if (a < start) outer.push_back(a);
      std::string rowsName = freshName(g, n.name + ".rows");
      NodeId partial = result.add(ir::OpKind::Reduce, operands, ir::ReduceAttrs{attrs.kind, row},
                                  std::nullopt, rowsName);
      map[static_cast<size_t>(n.id)] = result.add(
          ir::OpKind::Reduce, {partial}, ir::ReduceAttrs{attrs.kind, outer}, n.type, n.name);
      std::string why =
          takenFrom[next] >= 0
              ? fmt::format("the row of %{}, so it joins that row loop and reads its operand "
                            "where the loop computes it",
                            g.node(takenFrom[next]).name)
              : std::string("a row loop of its own, which the operand's other readers follow");
      out.notes.push_back(fmt::format(
          "%{} ({} over axes {} of {}) split: %{} reduces axes {} ({}), then %{} reduces "
          "axes {} of one value per row",
          n.name, ir::reduceKindName(attrs.kind), axesStr(attrs.axes),
          ir::shapeStr(g.node(n.operands[0]).type.shape), rowsName, axesStr(row), why, n.name,
          axesStr(outer)));
      ++next;
      continue;
    }
    map[static_cast<size_t>(n.id)] = result.add(n.kind, operands, n.attrs, n.type, n.name);
  }
  std::vector<NodeId> outputs;
  for (NodeId o : g.outputs())
    outputs.push_back(map[static_cast<size_t>(o)]);
  result.setOutputs(outputs);
  result.inheritSymbolEqualities(g);
  return out;
}

} // namespace weft::fusion
