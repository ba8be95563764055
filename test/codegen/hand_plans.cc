#include "hand_plans.h"

#include "fusion/phase_planner.h"
#include "ir/graph.h"

namespace weft::test {

using namespace weft::fusion;
using ir::DType;
using ir::OpKind;

namespace {

int addBuffer(FusionPlan& p, ir::NodeId v, Buffer::Kind kind) {
  const ir::Node& n = p.graph.node(v);
  p.buffers.push_back({kind, v, n.type.dtype, ir::numElements(n.type.shape), -1});
  int b = int(p.buffers.size()) - 1;
  p.bufferOfValue[size_t(v)] = b;
  return b;
}

ValuePlacement inBuffer(Storage s, int buffer) {
  ValuePlacement p;
  p.storage = s;
  p.buffer = buffer;
  return p;
}

ValuePlacement inShared(int64_t offset, int64_t bytes) {
  ValuePlacement p;
  p.storage = Storage::Shared;
  p.sharedOffset = offset;
  p.sharedBytes = bytes;
  return p;
}

Group group(ir::NodeId dominant, std::vector<ir::NodeId> ops, ThreadMapping mapping) {
  Group g;
  g.dominant = dominant;
  g.ops = std::move(ops);
  g.mapping = mapping;
  return g;
}

Stage stage(int group, Barrier before, std::vector<ir::NodeId> materialized) {
  Stage s;
  s.group = group;
  s.barrierBefore = before;
  s.materialized = std::move(materialized);
  return s;
}

FusionPlan start(const DeviceSpec& d, ir::Graph g) {
  FusionPlan p;
  p.policy = Policy::AStitch;
  p.device = d;
  p.graph = std::move(g);
  p.bufferOfValue.assign(p.graph.size(), -1);
  return p;
}

} // namespace

FusionPlan layerNormOneKernel(const DeviceSpec& d, int64_t rows, int64_t hidden, bool warpPerRow) {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {rows, hidden}});
  auto s = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  auto n = g.constant(DType::f32, {rows}, {double(hidden)}, "n");
  auto mean = g.binary(OpKind::Div, s, n, "mean");
  auto mb = g.broadcastInDim(mean, {rows, hidden}, {0}, "mean_b");
  auto c = g.binary(OpKind::Sub, x, mb, "centered");
  auto sq = g.binary(OpKind::Mul, c, c, "sq");
  auto vs = g.reduce(ir::ReduceKind::Sum, sq, {1}, "var_sum");
  auto var = g.binary(OpKind::Div, vs, n, "var");
  auto eps = g.constant(DType::f32, {rows}, {1e-5}, "eps");
  auto rs = g.unary(OpKind::Rsqrt, g.binary(OpKind::Add, var, eps, "var_eps"), "rstd");
  auto rb = g.broadcastInDim(rs, {rows, hidden}, {0}, "rstd_b");
  auto y = g.binary(OpKind::Mul, c, rb, "y");
  g.setOutputs({y});
  FusionPlan p = start(d, std::move(g));
  int bx = addBuffer(p, x, Buffer::Kind::Input);
  int by = addBuffer(p, y, Buffer::Kind::Output);

  KernelPlan k;
  k.name = "layer_norm_one_kernel";
  for (ir::NodeId id = 1; id < ir::NodeId(p.graph.size()); ++id)
    k.ops.push_back(id);
  k.inputs = {x};
  k.outputs = {y};
  RowReduceMapping rm;
  int block = 128;
  if (warpPerRow) {
    rm.kind = RowReduceMapping::Kind::WarpPerRow;
    rm.threadsPerRow = 32;
    rm.rowsPerBlock = block / 32;
  } else {
    rm.kind = RowReduceMapping::Kind::BlockPerRow;
    rm.threadsPerRow = block;
    rm.rowsPerBlock = 1;
  }
  rm.vectorWidth = hidden % 4 == 0 ? 4 : 1;
  ElementwiseMapping em{hidden % 4 == 0 ? 4 : 1, 4};
  k.groups = {group(s, {n, s, mean}, rm), group(c, {mb, c}, em),
              group(vs, {sq, vs, var, eps, p.graph.find("var_eps").value(), rs}, rm),
              group(y, {rb, y}, em)};
  k.stages = {stage(0, Barrier::None, {mean}), stage(1, Barrier::Block, {c}),
              stage(2, Barrier::Block, {rs}), stage(3, Barrier::Block, {y})};
  int64_t tileRows = rm.rowsPerBlock;
  for (ir::NodeId id : k.ops)
    k.placement[id] = ValuePlacement{};
  k.placement[x] = inBuffer(Storage::Input, bx);
  k.placement[y] = inBuffer(Storage::Output, by);
  k.placement[mean] = inShared(0, 4 * tileRows);
  int64_t cOffset = 16 * ((4 * tileRows + 15) / 16);
  k.placement[c] = inShared(cOffset, 4 * tileRows * hidden);
  int64_t rOffset = cOffset + 16 * ((4 * tileRows * hidden + 15) / 16);
  k.placement[rs] = inShared(rOffset, 4 * tileRows);
  k.launch.blockSize = block;
  k.launch.tiles = (rows + tileRows - 1) / tileRows;
  k.launch.sharedBytes = rOffset + 4 * tileRows;
  p.steps.emplace_back(std::in_place_type<KernelPlan>, std::move(k));
  fusion::planPhases(p);
  return p;
}

FusionPlan gridBarrierKernel(const DeviceSpec& d, int64_t rows, int64_t cols, int64_t maxBlocks) {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {rows, cols}});
  auto s = g.reduce(ir::ReduceKind::Sum, x, {1}, "row_sum");
  auto sb = g.broadcastInDim(s, {rows, cols}, {0}, "row_sum_b");
  auto y = g.binary(OpKind::Mul, x, sb, "y");
  g.setOutputs({y});
  FusionPlan p = start(d, std::move(g));
  int bx = addBuffer(p, x, Buffer::Kind::Input);
  int bs = addBuffer(p, s, Buffer::Kind::Scratch);
  int by = addBuffer(p, y, Buffer::Kind::Output);
  KernelPlan k;
  k.name = "global_stitch";
  k.ops = {s, sb, y};
  k.inputs = {x};
  k.outputs = {y};
  RowReduceMapping rm;
  rm.kind = RowReduceMapping::Kind::WarpPerRow;
  rm.threadsPerRow = 8;
  rm.rowsPerBlock = 256 / 8;
  k.groups = {group(s, {s}, rm), group(y, {sb, y}, ElementwiseMapping{1, 1})};
  k.stages = {stage(0, Barrier::None, {s}), stage(1, Barrier::Grid, {y})};
  k.placement[x] = inBuffer(Storage::Input, bx);
  k.placement[s] = inBuffer(Storage::Global, bs);
  k.placement[sb] = ValuePlacement{};
  k.placement[y] = inBuffer(Storage::Output, by);
  k.launch.blockSize = 256;
  k.launch.tiles = (rows + 31) / 32;
  k.launch.maxBlocks = maxBlocks;
  k.launch.cooperative = true;
  p.steps.emplace_back(std::in_place_type<KernelPlan>, std::move(k));
  fusion::planPhases(p);
  return p;
}

FusionPlan splitRowReduce(const DeviceSpec& d, int64_t rows, int64_t cols, int split) {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {rows, cols}});
  auto s = g.reduce(ir::ReduceKind::Sum, x, {1}, "row_sum");
  g.setOutputs({s});
  FusionPlan p = start(d, std::move(g));
  int bx = addBuffer(p, x, Buffer::Kind::Input);
  int bs = addBuffer(p, s, Buffer::Kind::Output);
  KernelPlan k;
  k.name = "split_row_sum";
  k.ops = {s};
  k.inputs = {x};
  k.outputs = {s};
  RowReduceMapping rm;
  rm.kind = RowReduceMapping::Kind::BlockPerRow;
  rm.threadsPerRow = 128;
  rm.rowsPerBlock = 1;
  rm.splitFactor = split;
  rm.vectorWidth = 4;
  k.groups = {group(s, {s}, rm)};
  k.stages = {stage(0, Barrier::None, {s})};
  k.placement[x] = inBuffer(Storage::Input, bx);
  k.placement[s] = inBuffer(Storage::Output, bs);
  k.launch.blockSize = 128;
  k.launch.tiles = rows * split;
  k.launch.maxBlocks = int64_t(d.smCount) * 4;
  k.launch.cooperative = true;
  p.steps.emplace_back(std::in_place_type<KernelPlan>, std::move(k));
  fusion::planPhases(p);
  return p;
}

FusionPlan columnReduceThenScale(const DeviceSpec& d, int64_t rows, int64_t cols) {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {rows, cols}});
  auto m = g.reduce(ir::ReduceKind::Max, x, {0}, "col_max");
  auto two = g.constant(DType::f32, {cols}, {2.0}, "two");
  auto y = g.binary(OpKind::Mul, m, two, "y");
  g.setOutputs({y});
  FusionPlan p = start(d, std::move(g));
  int bx = addBuffer(p, x, Buffer::Kind::Input);
  int by = addBuffer(p, y, Buffer::Kind::Output);
  KernelPlan k;
  k.name = "column_max_scale";
  k.ops = {m, two, y};
  k.inputs = {x};
  k.outputs = {y};
  ColumnReduceMapping cm{32, 8, 1, false};
  k.groups = {group(m, {m, two, y}, cm)};
  k.stages = {stage(0, Barrier::None, {y})};
  k.placement[x] = inBuffer(Storage::Input, bx);
  k.placement[m] = ValuePlacement{};
  k.placement[two] = ValuePlacement{};
  k.placement[y] = inBuffer(Storage::Output, by);
  k.launch.blockSize = 256;
  k.launch.tiles = (cols + 31) / 32;
  p.steps.emplace_back(std::in_place_type<KernelPlan>, std::move(k));
  fusion::planPhases(p);
  return p;
}

} // namespace weft::test
