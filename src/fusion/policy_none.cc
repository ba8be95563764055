#include "fusion/policy_none.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "ir/op.h"

namespace weft::fusion {
namespace {

int64_t nextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

/// Whether `d` (static or symbolic) is a multiple of `k`.
bool divisible(const ir::Dim& d, int64_t k) {
  return d.isStatic() ? d.size() % k == 0 : d.factor() % k == 0;
}

/// ceil(d / per) when static; d / per when exact; otherwise d itself (an over-provisioned
/// grid: tile loops skip tiles past the end), which the caller caps with maxBlocks.
ir::Dim ceilDiv(const ir::Dim& d, int64_t per, bool* exact) {
  *exact = true;
  if (d.isStatic()) return (d.size() + per - 1) / per;
  if (auto q = d.dividedBy(ir::Dim(per))) return *q;
  *exact = false;
  return d;
}

int vectorWidthFor(ir::DType t, const ir::Dim& inner, const ir::Dim& elements) {
  int w = ir::dtypeBytes(t) >= 8 ? 2 : 4;
  if (inner.isStatic() && inner.size() == 0) return 1;
  return divisible(inner, w) && divisible(elements, w) ? w : 1;
}

std::string kernelName(size_t index, const std::string& opName) {
  std::string n = "k" + std::to_string(index) + "_";
  for (char c : opName)
    n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

/// A grid cap for over-provisioned symbolic tile counts: four waves of full-occupancy blocks.
int64_t waveCap(const DeviceSpec& d, int blockSize) {
  return int64_t(d.smCount) * std::max(1, d.maxThreadsPerSM / blockSize) * 4;
}

bool isSource(ir::OpKind k) {
  return k == ir::OpKind::Constant || k == ir::OpKind::Iota;
}

} // namespace

NoneMapping noneThreadMapping(const ir::Graph& graph, ir::NodeId op, const DeviceSpec& device) {
  const ir::Node& n = graph.node(op);
  NoneMapping m;
  bool exact = true;
  if (n.kind != ir::OpKind::Reduce) {
    const ir::Shape& s = n.type.shape;
    ir::Dim elements = ir::numElements(s);
    ir::Dim inner = s.empty() ? ir::Dim(1) : s.back();
    ElementwiseMapping e;
    e.vectorWidth = vectorWidthFor(n.type.dtype, inner, elements);
    e.elementsPerThread = e.vectorWidth;
    m.mapping = e;
    m.blockSize = 256;
    m.tiles = ceilDiv(elements, int64_t(m.blockSize) * e.elementsPerThread, &exact);
    if (!exact) m.maxBlocks = waveCap(device, m.blockSize);
    return m;
  }
  const ir::Node& x = graph.node(n.operands[0]);
  const ir::Shape& s = x.type.shape;
  const auto& axes = n.attr<ir::ReduceAttrs>().axes;
  std::set<int64_t> reduced(axes.begin(), axes.end());
  ir::Dim reducedLength = 1, kept = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    ir::Dim& part = reduced.count(int64_t(i)) ? reducedLength : kept;
    part = part * s[i];
  }
  bool innermostReduced = !s.empty() && reduced.count(int64_t(s.size()) - 1);
  if (innermostReduced) {
    RowReduceMapping r;
    int ebytes = ir::dtypeBytes(x.type.dtype);
    r.vectorWidth = vectorWidthFor(x.type.dtype, reducedLength, reducedLength);
    if (ebytes < 4 && r.vectorWidth > 1) r.vectorWidth = 4;
    if (reducedLength.isStatic() && reducedLength.size() <= 512) {
      r.kind = RowReduceMapping::Kind::WarpPerRow;
      int64_t lanes = (reducedLength.size() + r.vectorWidth - 1) / r.vectorWidth;
      r.threadsPerRow = static_cast<int>(std::clamp<int64_t>(nextPow2(lanes), 1, device.warpSize));
      m.blockSize = 256;
      r.rowsPerBlock = m.blockSize / r.threadsPerRow;
    } else {
      r.kind = RowReduceMapping::Kind::BlockPerRow;
      int64_t want =
          reducedLength.isStatic()
              ? nextPow2((reducedLength.size() + 8 * r.vectorWidth - 1) / (8 * r.vectorWidth))
              : 1024;
      m.blockSize = static_cast<int>(
          std::clamp<int64_t>(want, 128, std::min(1024, device.maxThreadsPerBlock)));
      r.threadsPerRow = m.blockSize;
      r.rowsPerBlock = 1;
    }
    m.mapping = r;
    m.tiles = ceilDiv(kept, r.rowsPerBlock, &exact);
  } else {
    ColumnReduceMapping c;
    c.tileColumns = 32;
    c.tileRows = 8;
    m.blockSize = c.tileColumns * c.tileRows;
    m.mapping = c;
    m.tiles = ceilDiv(kept, c.tileColumns, &exact);
  }
  if (!exact) m.maxBlocks = waveCap(device, m.blockSize);
  return m;
}

FusionPlan planNone(const ir::Graph& graph, const DeviceSpec& device) {
  FusionPlan plan;
  plan.policy = Policy::None;
  plan.device = device;
  plan.graph = graph;
  plan.bufferOfValue.assign(graph.size(), -1);
  const auto users = graph.users();

  // Constants and iotas whose users are all memory-intensive ops are recomputed inside each
  // user's kernel; the rest get kernels of their own.
  auto inlined = [&](ir::NodeId id) {
    const ir::Node& n = graph.node(id);
    if (!isSource(n.kind) || graph.isOutput(id)) return false;
    for (ir::NodeId u : users[size_t(id)])
      if (graph.node(u).kind == ir::OpKind::Dot) return false;
    return true;
  };
  auto bufferFor = [&](ir::NodeId id) {
    int& b = plan.bufferOfValue[size_t(id)];
    if (b >= 0) return b;
    const ir::Node& n = graph.node(id);
    Buffer buf;
    buf.kind = n.kind == ir::OpKind::Parameter ? Buffer::Kind::Input
               : graph.isOutput(id)            ? Buffer::Kind::Output
                                               : Buffer::Kind::Intermediate;
    buf.value = id;
    buf.dtype = n.type.dtype;
    buf.elements = ir::numElements(n.type.shape);
    b = static_cast<int>(plan.buffers.size());
    plan.buffers.push_back(buf);
    return b;
  };

  // Every input has a buffer, used by a kernel or not: an output that is an input (an identity
  // graph, or one that the passes reduced to one) is read back from it.
  for (ir::NodeId in : graph.inputs())
    bufferFor(in);
  for (const ir::Node& n : graph.nodes()) {
    if (n.kind == ir::OpKind::Parameter || inlined(n.id)) continue;
    if (n.kind == ir::OpKind::Dot) {
      for (ir::NodeId o : n.operands)
        bufferFor(o);
      bufferFor(n.id);
      plan.steps.emplace_back(std::in_place_type<LibraryCall>, LibraryCall{n.id});
      continue;
    }
    KernelPlan k;
    k.name = kernelName(plan.steps.size(), n.name);
    // Inlined sources first (topological order), then the op; operands from buffers.
    std::set<ir::NodeId> seenInputs;
    for (ir::NodeId o : n.operands) {
      if (inlined(o)) {
        if (std::find(k.ops.begin(), k.ops.end(), o) == k.ops.end()) {
          k.ops.push_back(o);
          k.placement[o] = ValuePlacement{};
        }
        continue;
      }
      if (!seenInputs.insert(o).second) continue;
      k.inputs.push_back(o);
      ValuePlacement p;
      p.storage = Storage::Input;
      p.buffer = bufferFor(o);
      k.placement[o] = p;
    }
    std::sort(k.ops.begin(), k.ops.end());
    k.ops.push_back(n.id);
    k.outputs.push_back(n.id);
    ValuePlacement out;
    out.storage = Storage::Output;
    out.buffer = bufferFor(n.id);
    k.placement[n.id] = out;

    NoneMapping m = noneThreadMapping(graph, n.id, device);
    Group g;
    g.dominant = n.id;
    g.ops = k.ops;
    g.mapping = m.mapping;
    k.groups.push_back(g);
    Stage st;
    st.group = 0;
    st.materialized = {n.id};
    k.stages.push_back(st);
    k.launch.blockSize = m.blockSize;
    k.launch.tiles = m.tiles;
    k.launch.maxBlocks = m.maxBlocks;
    plan.steps.emplace_back(std::in_place_type<KernelPlan>, std::move(k));
  }
  return plan;
}

} // namespace weft::fusion
