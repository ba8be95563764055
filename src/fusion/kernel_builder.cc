#include "fusion/kernel_builder.h"

#include <algorithm>
#include <set>

#include "fusion/graph_queries.h"
#include "fusion/last_block_handoff.h"
#include "fusion/launch_config.h"
#include "fusion/resident_values.h"
#include "fusion/schedule.h"
#include "fusion/stitching_scheme.h"
#include "fusion/thread_mapping.h"

namespace weft::fusion {
namespace {

/// The smallest block size a cooperative kernel is re-mapped to for registers.
constexpr int kMinRemapBlockSize = 128;
constexpr int kPackedRowsBlock = 256; // packsRowsBetweenStages

void applyChoice(Group& group, const LoopSpace& space, const MappingChoice& c) {
  group.loopShape = space.shape;
  group.tileDims = space.tileDims;
  group.rows = space.rows;
  group.rowLength = space.rowLength;
  group.rowsPerTile = c.rowsPerTile;
  group.mapping = c.mapping;
}

/// The group (reduce-dominated, or following one) whose tiles an elementwise group can run in:
/// one that produces a value the group reads, else one that reads a value the group produces,
/// and in whose loop or row space the group's dominant lies.
int groupToFollow(const ir::Graph& g, const KernelPlan& k, size_t gi,
                  const std::vector<int>& groupOfOp, const std::vector<bool>& mapped) {
  const Group& group = k.groups[gi];
  const ir::Shape& shape = g.node(group.dominant).type.shape;
  auto fits = [&](int p) {
    if (p < 0 || p == static_cast<int>(gi) || !mapped[static_cast<size_t>(p)]) return false;
    const Group& other = k.groups[static_cast<size_t>(p)];
    bool tiled =
        !std::holds_alternative<ElementwiseMapping>(other.mapping) && splitFactor(other.mapping) == 1;
    if (!tiled && other.follows < 0) return false;
    return shape == other.loopShape || shape == rowShapeOf(other.loopShape, other.tileDims);
  };
  auto groupOf = [&](ir::NodeId v) { return groupOfOp[static_cast<size_t>(v)]; };
  for (ir::NodeId op : group.ops) // producers
    for (ir::NodeId o : g.node(op).operands)
      if (fits(groupOf(o))) return groupOf(o);
  std::set<ir::NodeId> produced(group.subDominants.begin(), group.subDominants.end());
  produced.insert(group.dominant);
  for (const Group& other : k.groups) // consumers
    for (ir::NodeId op : other.ops)
      for (ir::NodeId o : g.node(op).operands)
        if (produced.count(o) && fits(groupOf(op))) return groupOf(op);
  return -1;
}

/// Where `producer`'s tile (row) coordinates sit in a loop of `shape`: its tileDims when the
/// loop is its loop, every dim when the loop is its row space; empty when neither.
std::vector<int64_t> tilePositions(const Group& producer, const ir::Shape& shape) {
  if (shape == producer.loopShape) return producer.tileDims;
  std::vector<int64_t> all;
  if (shape == rowShapeOf(producer.loopShape, producer.tileDims))
    for (size_t d = 0; d < shape.size(); ++d)
      all.push_back(static_cast<int64_t>(d));
  return all;
}

/// A tiled, unsplit row-reduce group whose tiles a reduce over `space` can run in and reduce
/// across: the reduce's loop is that group's loop or row space and it reduces only dims that
/// tiles cut (so each tile adds a partial, and blocks combine their partials).
int tilesToReduceAcross(const ir::Graph& g, const KernelPlan& k, const LoopSpace& space,
                        const std::vector<bool>& mapped) {
  (void)g;
  for (size_t p = 0; p < k.groups.size(); ++p) {
    const Group& producer = k.groups[p];
    auto* row = std::get_if<RowReduceMapping>(&producer.mapping);
    if (!mapped[p] || !row || row->splitFactor > 1 || producer.acrossTiles) continue;
    std::vector<int64_t> tiles = tilePositions(producer, space.shape);
    if (tiles.empty()) continue;
    bool reducesTileDimsOnly = true;
    for (size_t d = 0; d < space.shape.size(); ++d) {
      bool kept = std::find(space.tileDims.begin(), space.tileDims.end(), int64_t(d)) !=
                  space.tileDims.end();
      bool tiled = std::find(tiles.begin(), tiles.end(), int64_t(d)) != tiles.end();
      if (!kept && !tiled) reducesTileDimsOnly = false;
    }
    if (reducesTileDimsOnly && ir::numElements(space.shape).dividedBy(producer.rows))
      return static_cast<int>(p);
  }
  return -1;
}

/// Rows packed a warp (or part of one) each into 1024-thread blocks, in a stitched kernel of
/// several stages that wait for their warp only (Barrier::Warp: softmax, layer norm): the block
/// still waits for its tile slices, with the SM's only block (its registers take the SM), so
/// nothing is in flight while it waits. In blocks of kPackedRowsBlock threads, four or more
/// share an SM and one's loads overlap another's wait. Measured on the H200 (2026-11-26, before
/// and after in one run): softmax [49152, 128] 54% -> 74% of a copy's speed, the sweep's
/// softmax rows of 256-1,024 1.06-1.58x faster; with layer norm's stages on the warp too, layer
/// norm 86% -> 98%. Not where a stage waits for the block: layer norm's and RMSNorm's rows of
/// 512 and 1,024 ran 0.81-0.96x as fast in 256-thread blocks while their stages still waited for
/// the block (four block barriers per 8 rows instead of per 32). A one-stage kernel (Figure
/// 6(a)'s row sums, 88-90% of a copy's speed) has no barrier to hide and keeps its blocks;
/// cooperative kernels keep theirs: more blocks mean more partials and more arrivals at each
/// grid barrier.
bool packsRowsBetweenStages(const Group& heaviest, const KernelPlan& k) {
  const auto* m = std::get_if<RowReduceMapping>(&heaviest.mapping);
  const bool warpBarriers = std::none_of(k.stages.begin(), k.stages.end(), [](const Stage& s) {
    return s.barrierBefore == Barrier::Block;
  });
  return m && m->kind == RowReduceMapping::Kind::WarpPerRow && !k.launch.cooperative &&
         k.stages.size() > 1 && warpBarriers && k.launch.blockSize > kPackedRowsBlock;
}

/// Bytes of the widest element among the kernel's streamed inputs and outputs: those at least
/// half as large as its largest (assumed sizes), the tensors its time goes to. Every group's
/// vectors are sized for it (LoopSpace::memoryBytes): a bf16 RMSNorm loads and stores 8
/// elements (16 bytes) per access, not the 4 (8 bytes) its f32 statistics would ask for; the
/// H200 measured bf16 rows 5-35 points of the copy below f32 ones at every length, with half
/// the bytes in flight per load (docs/performance.md). Not the narrowest: a kernel that streams
/// f16 in and f32 out would then give each thread 8 f32, two 16-byte accesses 32 bytes apart,
/// and each warp access would touch twice the sectors it uses. 0 when the kernel has none.
int streamedElementBytes(const ir::Graph& g, const KernelPlan& k, const ir::SymbolRanges& ranges) {
  auto elements = [&](ir::NodeId v) {
    return ir::assumedSize(ir::numElements(g.node(v).type.shape), ranges);
  };
  int64_t largest = 0;
  for (const auto* list : {&k.inputs, &k.outputs})
    for (ir::NodeId v : *list)
      largest = std::max(largest, elements(v));
  int bytes = 0;
  for (const auto* list : {&k.inputs, &k.outputs})
    for (ir::NodeId v : *list)
      if (largest > 0 && elements(v) * 2 >= largest)
        bytes = std::max(bytes, int(ir::dtypeBytes(g.node(v).type.dtype)));
  return bytes;
}

/// Maps every group for block size `blockSize` (the heaviest group first, then row reduces in
/// their own tiles, other reduces across a row reduce's tiles, elementwise groups in the tiles
/// of a group they exchange values with), then propagates schedules, stitches and configures
/// the launch.
KernelPlan mapAndStitch(const ir::Graph& g, KernelPlan k, const std::vector<LoopSpace>& spaces,
                        size_t heaviest, int blockSize, const std::vector<int>& groupOfOp,
                        const DeviceSpec& spec, const ir::SymbolRanges& ranges) {
  k.launch.blockSize = blockSize;
  std::vector<bool> mapped(k.groups.size(), false);
  applyChoice(k.groups[heaviest], spaces[heaviest],
              chooseThreadMapping(spaces[heaviest], spec, blockSize));
  mapped[heaviest] = true;
  for (size_t i = 0; i < k.groups.size(); ++i) { // row reduces: their own tiles
    if (mapped[i] || spaces[i].kind != LoopSpace::Kind::RowReduce) continue;
    applyChoice(k.groups[i], spaces[i], chooseThreadMapping(spaces[i], spec, blockSize));
    mapped[i] = true;
  }
  for (size_t i = 0; i < k.groups.size(); ++i) { // other reduces: across a row reduce's tiles
    if (mapped[i] || spaces[i].kind == LoopSpace::Kind::Elementwise) continue;
    int p = tilesToReduceAcross(g, k, spaces[i], mapped);
    if (p < 0) {
      applyChoice(k.groups[i], spaces[i], chooseThreadMapping(spaces[i], spec, blockSize));
    } else {
      Group& group = k.groups[i];
      const Group& producer = k.groups[static_cast<size_t>(p)];
      group.follows = p;
      group.acrossTiles = true;
      group.loopShape = spaces[i].shape;
      group.tileDims = tilePositions(producer, spaces[i].shape);
      group.rows = producer.rows;
      group.rowsPerTile = producer.rowsPerTile;
      group.rowLength = *ir::numElements(group.loopShape).dividedBy(producer.rows);
      group.mapping =
          elementwiseInTiles(group.rowsPerTile, ir::assumedSize(group.rowLength, ranges),
                             ir::knownDivisor(group.rowLength, ranges), spaces[i].memoryBytes,
                             blockSize, spec)
              .mapping;
    }
    mapped[i] = true;
  }
  for (size_t i = 0; i < k.groups.size(); ++i) {
    if (mapped[i]) continue;
    Group& group = k.groups[i];
    int p = groupToFollow(g, k, i, groupOfOp, mapped);
    if (p < 0) {
      applyChoice(group, spaces[i], chooseThreadMapping(spaces[i], spec, blockSize));
    } else { // proactive re-mapping into the tiles of the group it exchanges values with
      const Group& producer = k.groups[static_cast<size_t>(p)];
      const ir::Shape& shape = g.node(group.dominant).type.shape;
      group.follows = producer.follows >= 0 ? producer.follows : p;
      group.loopShape = shape;
      if (shape == producer.loopShape) {
        group.tileDims = producer.tileDims;
        group.rowLength = producer.rowLength;
      } else {
        group.tileDims.clear();
        for (size_t d = 0; d < shape.size(); ++d)
          group.tileDims.push_back(static_cast<int64_t>(d));
        group.rowLength = 1;
      }
      group.rows = producer.rows;
      group.rowsPerTile = producer.rowsPerTile;
      group.mapping = elementwiseInTiles(group.rowsPerTile, ir::assumedSize(group.rowLength, ranges),
                                         ir::knownDivisor(group.rowLength, ranges),
                                         spaces[i].memoryBytes, blockSize, spec)
                          .mapping;
    }
    mapped[i] = true;
  }

  for (Group& group : k.groups)
    propagateSchedule(g, group);
  planStitching(g, spec, k, ranges);
  handOffLastPhase(k);
  configureLaunch(g, k, spec);
  return k;
}

} // namespace

KernelPlan buildKernel(const ir::Graph& g, std::vector<ir::NodeId> ops,
                       std::vector<ir::NodeId> outputs, const std::vector<GroupSeed>& seeds,
                       const DeviceSpec& spec, std::string name,
                       const ir::SymbolRanges& ranges) {
  KernelPlan k;
  k.name = std::move(name);
  k.ops = std::move(ops);
  std::sort(k.ops.begin(), k.ops.end());
  k.outputs = std::move(outputs);
  std::sort(k.outputs.begin(), k.outputs.end());
  std::set<ir::NodeId> inKernel(k.ops.begin(), k.ops.end()), inputs;
  for (ir::NodeId op : k.ops)
    for (ir::NodeId o : g.node(op).operands)
      if (!inKernel.count(o)) inputs.insert(o);
  k.inputs.assign(inputs.begin(), inputs.end());

  std::vector<int> groupOfOp(g.size(), -1);
  std::vector<LoopSpace> spaces;
  for (const GroupSeed& s : seeds) {
    Group group;
    group.dominant = s.dominant;
    group.subDominants = s.subDominants;
    group.ops = s.ops;
    for (ir::NodeId op : s.ops)
      groupOfOp[static_cast<size_t>(op)] = static_cast<int>(k.groups.size());
    k.groups.push_back(std::move(group));
    spaces.push_back(loopSpaceOf(g, s.dominant, ranges));
  }
  const int streamed = streamedElementBytes(g, k, ranges);
  for (LoopSpace& space : spaces)
    space.memoryBytes = streamed > 0 ? streamed : int(ir::dtypeBytes(space.dtype));

  // The heaviest group (a row reduce, then a column reduce, then an elementwise group; then
  // the biggest loop) picks the block size the whole kernel shares. A cooperative kernel whose
  // blocks cannot hold what it keeps in registers at that size (layer norm backward: a row's
  // values and its column sums in every thread) is mapped again with smaller blocks.
  size_t heaviest = 0;
  auto weight = [&](size_t i) {
    int kind = spaces[i].kind == LoopSpace::Kind::RowReduce      ? 2
               : spaces[i].kind == LoopSpace::Kind::ColumnReduce ? 1
                                                                 : 0;
    return std::pair<int, int64_t>(kind, staticElementsOr(spaces[i].shape, int64_t(1) << 40));
  };
  for (size_t i = 1; i < spaces.size(); ++i)
    if (weight(i) > weight(heaviest)) heaviest = i;
  KernelPlan planned;
  const int chosen = chooseThreadMapping(spaces[heaviest], spec).blockSize;
  for (int blockSize = smallestBlockForOneTile(spaces, spec, chosen);; blockSize /= 2) {
    planned = mapAndStitch(g, k, spaces, heaviest, blockSize, groupOfOp, spec, ranges);
    int wanted = assumedRegisters(g, planned);
    bool fits = wanted <= spec.maxRegistersPerThread / 8 * 8 &&
                blocksPerSM(spec, blockSize, wanted, planned.launch.sharedBytes) > 0;
    if (fits || !planned.launch.cooperative || blockSize / 2 < kMinRemapBlockSize) break;
  }
  if (packsRowsBetweenStages(planned.groups[heaviest], planned)) {
    KernelPlan smaller =
        mapAndStitch(g, k, spaces, heaviest, kPackedRowsBlock, groupOfOp, spec, ranges);
    if (!smaller.launch.cooperative) planned = std::move(smaller);
  }
  planResidentValues(g, spec, planned, ranges);
  return planned;
}

} // namespace weft::fusion
