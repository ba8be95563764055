#include "fusion/thread_mapping.h"

#include <algorithm>
#include <cassert>

#include "fusion/cost_model.h"
#include "fusion/graph_queries.h"
#include "fusion/launch_config.h"

namespace weft::fusion {
namespace {

constexpr int kBlockSizes[] = {1024, 512, 256, 128};
constexpr double kUtilizationSlack = 0.05; // prefer bigger blocks within this of the best

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
/// The least power of two >= x, at most 2^30 (callers cap it by a warp or a block): a symbolic
/// loop's assumed size can pass 2^31, where doubling an int overflowed and never ended
/// (random graph 1059 with a symbolic size hung planning its column sum).
int pow2Ceil(int64_t x) {
  int p = 1;
  while (p < x && p < (1 << 30))
    p *= 2;
  return p;
}

int memoryBytesOf(const LoopSpace& s) {
  return s.memoryBytes > 0 ? s.memoryBytes : int(ir::dtypeBytes(s.dtype));
}

/// Loop spaces of at most this many elements (assumed sizes) may trade vector width for code
/// size (narrowerIsFree).
constexpr int64_t kSmallLoopElements = 8192;

/// Code size for small loop spaces. A thread computes each of its elements with its own copy of
/// every op's code (a vector of 4 is 4 scalar copies), so 4-wide vectors that leave lanes idle
/// make each thread's code larger, not the kernel faster, once the grid cannot fill the
/// device. Width 1 is taken when the loop space is small (kSmallLoopElements: 32 KB of f32,
/// a few blocks) and one element per lane still gives every block an SM of its own
/// (`tilesAtWidth1` at most the SM count): then the bytes in flight that the cost model's
/// bandwidth sees (fusion/cost_model.h, streamUs: blocks x threads x bytes per thread) total
/// the same either way, and launch and barrier costs do not depend on the width.
/// Taken for warp-per-row row reduces (the elementwise groups stitched into their tiles follow
/// them): graph_10000's [64, 64] clusters, 16 lanes of 4 per row, become 32 lanes of 2, half
/// the code to compile (modeled 11.0 -> 6.4 ms: twice the blocks); the suite's other tensors
/// are larger and keep their widths (chain_softmax_64's [4, 8]: 2 lanes of 4 become 8 of 1).
bool narrowerIsFree(const DeviceSpec& spec, int64_t elements, int64_t tilesAtWidth1) {
  return elements <= kSmallLoopElements && tilesAtWidth1 <= spec.smCount;
}

double utilization(const DeviceSpec& spec, int64_t tiles, int64_t bpw, int blockSize,
                   double laneUse) {
  if (bpw == 0) return 0;
  return double(std::min(tiles, bpw)) * blockSize * std::min(laneUse, 1.0) /
         double(spec.threadSlots());
}

/// Whether splitting each of `rows` rows of `len` elements over `split` blocks of `blockSize`
/// beats the best block per row (the largest block; `blocksPerRow` of them when a cluster
/// shares each row) by the cost model (fusion/cost_model.h):
/// the split streams the rows on more SMs, with more bytes in flight, but combines its partials
/// behind a grid barrier. (A [64, 30000] f32 row reduce on the H100 ran faster unsplit: 8.8 µs
/// against 10.5 split, docs/performance.md.)
bool splitPays(const LoopSpace& s, const DeviceSpec& spec, int blockSize, int64_t rows,
               int64_t len, int64_t split, int64_t blocksPerRow) {
  const CostModel m = costModel(spec);
  const double elementBytes = memoryBytesOf(s);
  const double bytes = double(rows) * double(len) * elementBytes;
  auto perThread = [&](int threads) {
    return (s.contiguousRows ? vectorWidthFor(memoryBytesOf(s), len, s.rowLengthDivisor, threads)
                             : 1) *
           elementBytes;
  };
  const int perSM = std::max<int>(1, int(blocksPerWave(spec, blockSize) / spec.smCount));
  const int wholeBlock = std::min(spec.maxThreadsPerBlock, kBlockSizes[0]);
  const double whole = streamUs(m, bytes, rows * blocksPerRow, wholeBlock, perThread(wholeBlock), 1);
  const double parts = streamUs(m, bytes, rows * split, blockSize, perThread(blockSize), perSM) +
                       gridBarrierUs(m, uint64_t(std::min<int64_t>(rows * split,
                                                                   blocksPerWave(spec, blockSize))));
  return parts < whole;
}

/// Elements of a row a thread keeps in registers, at most, before its row is shared by a
/// thread-block cluster: 16 (64 bytes of f32 per reused value) leaves the slots of a layer norm
/// (x and x - mean) room in the 64 registers a 1024-thread block allows.
constexpr int64_t kClusterRowElementsPerThread = 16;

/// The thread-block cluster that shares each row of a block-per-row mapping (sm_90, a static
/// contiguous row): the fewest blocks, a power of two up to 8
/// (the portable limit), that hold the row at kClusterRowElementsPerThread per thread; 1 when
/// one block does, or the hardware has no clusters. The phase planner must still give the row
/// slots (registers), or the kernel is planned again without (fusion/cluster_plan.h).
int rowCluster(const LoopSpace& s, const DeviceSpec& spec, int blockSize, int64_t len) {
  if (spec.computeCapability < 90 || !s.contiguousRows || !s.rowLength.isStatic() ||
      s.rowLength.size() != len)
    return 1;
  const int64_t perBlock = int64_t(blockSize) * kClusterRowElementsPerThread;
  if (len <= perBlock) return 1;
  for (int c = 2; c <= 8; c *= 2)
    if (ceilDiv(len, c) <= perBlock) return c;
  return 8;
}

MappingChoice mapRowReduce(const LoopSpace& s, const DeviceSpec& spec, int blockSize) {
  MappingChoice c;
  c.blockSize = blockSize;
  c.blocksPerWave = blocksPerWave(spec, blockSize);
  // empty tensors still get a valid mapping (one row of one element)
  int64_t rows = std::max<int64_t>(1, s.assumedRows);
  int64_t len = std::max<int64_t>(1, s.assumedRowLength);
  RowReduceMapping m;
  double laneUse = 1;
  bool scalar = !s.contiguousRows;
  if (len <= kWarpRowLimit) { // warp (or part of one) per row, rows packed into the block
    m.kind = RowReduceMapping::Kind::WarpPerRow;
    // Lanes for 4-wide vectors when the row holds them (a row of 32 floats: 8 lanes of 4, a
    // quarter of the instructions of 32 lanes of 1), else one element per lane.
    int64_t perLane = s.contiguousRows ? vectorWidthFor(memoryBytesOf(s), len, s.rowLengthDivisor, 1) : 1;
    const int scalarLanes = std::min(spec.warpSize, pow2Ceil(len));
    if (perLane > 1 && scalarLanes > pow2Ceil(ceilDiv(len, perLane)) &&
        narrowerIsFree(spec, rows * len, ceilDiv(rows, blockSize / scalarLanes)))
      scalar = true; // more lanes per row, fewer elements (and copies of the code) per lane
    if (scalar) perLane = 1;
    m.threadsPerRow = std::min(spec.warpSize, pow2Ceil(ceilDiv(len, perLane)));
    m.rowsPerBlock = blockSize / m.threadsPerRow;
    c.tiles = ceilDiv(rows, m.rowsPerBlock);
    laneUse = double(len) / m.threadsPerRow;
  } else { // a block per row; few long rows are split across blocks to fill the wave
    m.kind = RowReduceMapping::Kind::BlockPerRow;
    m.threadsPerRow = blockSize;
    m.rowsPerBlock = 1;
    // A row too long for one block's registers is shared by a cluster (read once); a split
    // across the grid must beat that too.
    const int cluster = rowCluster(s, spec, blockSize, len);
    if (rows < c.blocksPerWave) {
      const int64_t split = std::clamp<int64_t>(c.blocksPerWave / rows, 1, ceilDiv(len, blockSize));
      if (split > cluster && splitPays(s, spec, blockSize, rows, len, split, cluster))
        m.splitFactor = static_cast<int>(split);
    }
    m.clusterBlocks = m.splitFactor > 1 ? 1 : cluster;
    c.tiles = rows * m.splitFactor * m.clusterBlocks;
    laneUse = double(ceilDiv(len, m.splitFactor * m.clusterBlocks)) / blockSize;
  }
  m.vectorWidth = scalar ? 1 : vectorWidthFor(memoryBytesOf(s), len, s.rowLengthDivisor, m.threadsPerRow);
  if (m.kind == RowReduceMapping::Kind::BlockPerRow && m.vectorWidth > 4) {
    // A block's steps of blockSize x 8 elements can overshoot a row (or a cluster's part of
    // it) by a whole step more than steps of 4 would: lanes past the row re-read its last
    // vector, and a cluster's last block gets little of it ([16, 20000] bf16 in clusters of 2:
    // parts of 16,384 and 3,616). Vectors of 4 where they cover the row in fewer elements.
    RowReduceMapping four = m;
    four.vectorWidth = 4;
    auto covered = [&](const RowReduceMapping& r) {
      return r.slotSteps(len, blockSize) * blockSize * r.vectorWidth;
    };
    if (covered(four) < covered(m)) m.vectorWidth = 4;
  }
  c.rowsPerTile = m.rowsPerBlock;
  c.mapping = m;
  c.waveUtilization = utilization(spec, c.tiles, c.blocksPerWave, blockSize, laneUse);
  return c;
}

MappingChoice mapColumnReduce(const LoopSpace& s, const DeviceSpec& spec, int blockSize) {
  MappingChoice c;
  c.blockSize = blockSize;
  c.blocksPerWave = blocksPerWave(spec, blockSize);
  int64_t columns = std::max<int64_t>(1, s.assumedRows);
  int64_t reduced = std::max<int64_t>(1, s.assumedRowLength);
  ColumnReduceMapping m;
  m.tileColumns = std::min(spec.warpSize, pow2Ceil(columns));
  m.tileRows = blockSize / m.tileColumns;
  int64_t columnTiles = ceilDiv(columns, m.tileColumns);
  if (columnTiles < c.blocksPerWave && reduced > m.tileRows)
    m.splitFactor = static_cast<int>(
        std::clamp<int64_t>(c.blocksPerWave / columnTiles, 1, ceilDiv(reduced, m.tileRows)));
  c.tiles = columnTiles * m.splitFactor;
  c.rowsPerTile = m.tileColumns;
  c.mapping = m;
  double laneUse = std::min(1.0, double(columns) / m.tileColumns) *
                   std::min(1.0, double(ceilDiv(reduced, m.splitFactor)) / m.tileRows);
  c.waveUtilization = utilization(spec, c.tiles, c.blocksPerWave, blockSize, laneUse);
  return c;
}

MappingChoice mapElementwise(const LoopSpace& s, const DeviceSpec& spec, int blockSize) {
  MappingChoice c;
  c.blockSize = blockSize;
  c.blocksPerWave = blocksPerWave(spec, blockSize);
  int64_t n = std::max<int64_t>(1, s.assumedRows * s.assumedRowLength);
  // A symbolic innermost dim known to be a multiple of d (d ≥ 1) is at least d long.
  int64_t inner = s.shape.empty() ? 1 : staticOr(s.shape.back(), s.innerDivisor);
  ElementwiseMapping m;
  m.vectorWidth = vectorWidthFor(memoryBytesOf(s), inner, s.innerDivisor, 1);
  m.elementsPerThread = m.vectorWidth;
  c.rowsPerTile = int64_t(blockSize) * m.elementsPerThread;
  c.tiles = ceilDiv(n, c.rowsPerTile);
  c.mapping = m;
  c.waveUtilization =
      utilization(spec, c.tiles, c.blocksPerWave, blockSize, double(n) / c.rowsPerTile);
  return c;
}

MappingChoice mapFor(const LoopSpace& s, const DeviceSpec& spec, int blockSize) {
  switch (s.kind) {
  case LoopSpace::Kind::RowReduce:
    return mapRowReduce(s, spec, blockSize);
  case LoopSpace::Kind::ColumnReduce:
    return mapColumnReduce(s, spec, blockSize);
  case LoopSpace::Kind::Elementwise:
    return mapElementwise(s, spec, blockSize);
  }
  return mapElementwise(s, spec, blockSize);
}

/// A whole row per block streams at the bytes its SM holds in flight, and an SM holds as many
/// rows as it holds blocks: with a thread's part of the row in registers (at most
/// kClusterRowElementsPerThread elements), the smallest block that holds the row keeps the most
/// rows, and bytes, in flight per SM. Measured on an H200 (docs/performance.md, the sweep):
/// rows of 2,048 f32 in 1024-thread blocks (2 elements a thread, one block an SM) streamed at
/// 35% of a copy's speed and rows of 16,384 (16 a thread) at 86%; bf16, half the bytes in
/// flight, 20% and 51%. So a block-per-row choice `chosen` (unsplit, no cluster) gives way to
/// the smallest block of `choices` (largest first) that maps the same rows the same way, unsplit
/// and unclustered, at most kClusterRowElementsPerThread elements a thread.
///
/// Rows shared by a cluster (32,768 f32 and longer) measured 20-78% of the copy on the same
/// H200, in 1024-thread blocks, one an SM: while a block waits at its cluster barriers (two per
/// row reduce) its SM moves nothing. So a clustered choice of 4 blocks or more gives way to the
/// next smaller block whose cluster (at most the portable 8) still holds the row at
/// kClusterRowElementsPerThread: half the threads in twice the blocks, two blocks an SM, one
/// cluster's loads in flight while another's barrier waits (65,536: 4 x 1024 -> 8 x 512;
/// 131,072 and longer have no such choice). Measured on the H200 (2026-11-26, the sweep, 6
/// workloads each): 65,536 in 8 x 512 ran 6-8 points of the copy faster than in 4 x 1024
/// (softmax f32 41% -> 48%, RMSNorm f32 52% -> 59%), but 32,768 in 4 x 512 ran 11-17 points
/// slower than in 2 x 1024 (softmax f32 65% -> 50%, RMSNorm f32 78% -> 61%): a cluster of 2
/// keeps its 1024-thread blocks.
MappingChoice mostRowsInFlight(const LoopSpace& space, const std::vector<MappingChoice>& choices,
                               const MappingChoice& chosen) {
  auto perRow = [](const MappingChoice& c) -> const RowReduceMapping* {
    const auto* m = std::get_if<RowReduceMapping>(&c.mapping);
    return m && m->kind == RowReduceMapping::Kind::BlockPerRow && m->splitFactor == 1 ? m
                                                                                       : nullptr;
  };
  const RowReduceMapping* mapped = perRow(chosen);
  if (!mapped) return chosen;
  const int64_t len = std::max<int64_t>(1, space.assumedRowLength);
  auto holds = [&](const MappingChoice& c, const RowReduceMapping& m) {
    return ceilDiv(len, int64_t(c.blockSize) * m.clusterBlocks) <= kClusterRowElementsPerThread;
  };
  if (mapped->clusterBlocks > 1) {
    if (mapped->clusterBlocks < 4) return chosen;
    for (const MappingChoice& c : choices) // largest first
      if (const RowReduceMapping* m = perRow(c);
          m && c.blockSize < chosen.blockSize && m->clusterBlocks > 1 && holds(c, *m))
        return c;
    return chosen;
  }
  for (auto c = choices.rbegin(); c != choices.rend(); ++c) // smallest first
    if (const RowReduceMapping* m = perRow(*c);
        m && c->blockSize < chosen.blockSize && m->clusterBlocks == 1 && holds(*c, *m))
      return *c;
  return chosen;
}

} // namespace

int vectorWidthFor(int memoryBytes, int64_t contiguous, int64_t divisor, int64_t lanes) {
  const int widest = memoryBytes >= 16 ? 1 : std::min(8, 16 / std::max(1, memoryBytes));
  for (int w : {widest, 4})
    if (w > 1 && w <= widest && divisor % w == 0 && contiguous >= w * lanes) return w;
  return 1;
}

static LoopSpace loopSpaceShape(const ir::Graph& g, ir::NodeId dominant) {
  const ir::Node& n = g.node(dominant);
  LoopSpace s;
  s.dtype = n.type.dtype;
  if (n.kind != ir::OpKind::Reduce) {
    s.kind = LoopSpace::Kind::Elementwise;
    s.shape = n.type.shape;
    for (size_t i = 0; i < s.shape.size(); ++i)
      s.tileDims.push_back(static_cast<int64_t>(i));
    s.rows = ir::numElements(s.shape);
    return s;
  }
  s.shape = g.node(n.operands[0]).type.shape;
  const auto& axes = n.attr<ir::ReduceAttrs>().axes;
  std::vector<bool> reduced(s.shape.size(), false);
  for (int64_t a : axes)
    reduced[static_cast<size_t>(a)] = true;
  ir::Dim rowLength = 1;
  for (size_t i = 0; i < s.shape.size(); ++i) {
    if (reduced[i])
      rowLength = rowLength * s.shape[i];
    else
      s.tileDims.push_back(static_cast<int64_t>(i));
  }
  s.rows = ir::numElements(rowShapeOf(s.shape, s.tileDims));
  s.rowLength = rowLength;
  bool leadingPrefix =
      !axes.empty() && axes.front() == 0 && axes.back() == int64_t(axes.size()) - 1;
  bool trailingSuffix = !axes.empty() && axes.back() == int64_t(s.shape.size()) - 1 &&
                        axes.front() == int64_t(s.shape.size() - axes.size());
  if (leadingPrefix && !s.tileDims.empty())
    s.kind = LoopSpace::Kind::ColumnReduce;
  else
    s.kind = LoopSpace::Kind::RowReduce;
  s.contiguousRows = trailingSuffix;
  return s;
}

LoopSpace loopSpaceOf(const ir::Graph& g, ir::NodeId dominant, const ir::SymbolRanges& ranges) {
  LoopSpace s = loopSpaceShape(g, dominant);
  s.assumedRows = ir::assumedSize(s.rows, ranges);
  s.assumedRowLength = ir::assumedSize(s.rowLength, ranges);
  s.rowLengthDivisor = ir::knownDivisor(s.rowLength, ranges);
  s.innerDivisor = s.shape.empty() ? 1 : ir::knownDivisor(s.shape.back(), ranges);
  return s;
}

MappingChoice chooseThreadMapping(const LoopSpace& space, const DeviceSpec& spec, int blockSize) {
  if (blockSize > 0) return mapFor(space, spec, blockSize);
  std::vector<MappingChoice> choices;
  for (int b : kBlockSizes)
    if (b <= spec.maxThreadsPerBlock) choices.push_back(mapFor(space, spec, b));
  assert(!choices.empty() && "the device allows no candidate block size");
  double best = 0;
  for (const MappingChoice& c : choices)
    best = std::max(best, c.waveUtilization);
  for (const MappingChoice& c : choices) // largest first
    if (c.waveUtilization >= best - kUtilizationSlack)
      return space.kind == LoopSpace::Kind::RowReduce ? mostRowsInFlight(space, choices, c) : c;
  return choices.front();
}

namespace {

/// Whether `small` gives each thread the work `chosen` gives it, both in one tile: the same
/// lanes per row and vectors (a warp-per-row reduce), the same single step of the row (a block
/// per row), one row each (a column reduce), the same elements (elementwise).
bool sameWorkInOneTile(const LoopSpace& s, const MappingChoice& chosen, const MappingChoice& small) {
  if (chosen.tiles != 1 || small.tiles != 1) return false;
  if (const auto* a = std::get_if<RowReduceMapping>(&chosen.mapping)) {
    const auto* b = std::get_if<RowReduceMapping>(&small.mapping);
    if (!b || a->kind != b->kind || a->vectorWidth != b->vectorWidth || a->splitFactor != 1 ||
        b->splitFactor != 1 || a->clusterBlocks != 1 || b->clusterBlocks != 1)
      return false;
    if (a->kind == RowReduceMapping::Kind::WarpPerRow) return a->threadsPerRow == b->threadsPerRow;
    const int64_t len = std::max<int64_t>(1, s.assumedRowLength);
    return a->slotSteps(len, chosen.blockSize) == 1 && b->slotSteps(len, small.blockSize) == 1;
  }
  if (const auto* a = std::get_if<ColumnReduceMapping>(&chosen.mapping)) {
    const auto* b = std::get_if<ColumnReduceMapping>(&small.mapping);
    return b && a->tileColumns == b->tileColumns && a->splitFactor == 1 && b->splitFactor == 1 &&
           std::max<int64_t>(1, s.assumedRowLength) <= b->tileRows;
  }
  const auto* a = std::get_if<ElementwiseMapping>(&chosen.mapping);
  const auto* b = std::get_if<ElementwiseMapping>(&small.mapping);
  return a && b && a->vectorWidth == b->vectorWidth && a->elementsPerThread == b->elementsPerThread;
}

} // namespace

int smallestBlockForOneTile(const std::vector<LoopSpace>& spaces, const DeviceSpec& spec,
                            int blockSize) {
  for (const LoopSpace& s : spaces)
    if (!ir::isStatic(s.shape)) return blockSize;
  int best = blockSize;
  for (int b = blockSize / 2; b >= spec.warpSize; b /= 2) {
    for (const LoopSpace& s : spaces)
      if (!sameWorkInOneTile(s, mapFor(s, spec, blockSize), mapFor(s, spec, b))) return best;
    best = b;
  }
  return best;
}

MappingChoice elementwiseInTiles(int64_t rowsPerTile, int64_t rowLength, int64_t rowLengthDivisor,
                                 int memoryBytes, int blockSize, const DeviceSpec& spec) {
  MappingChoice c;
  c.blockSize = blockSize;
  c.blocksPerWave = blocksPerWave(spec, blockSize);
  c.rowsPerTile = rowsPerTile;
  int64_t len = std::max<int64_t>(1, rowLength);
  int64_t tileElements = rowsPerTile * len;
  ElementwiseMapping m;
  m.vectorWidth = tileElements >= 4 * int64_t(blockSize)
                      ? vectorWidthFor(memoryBytes, len, rowLengthDivisor, 1)
                      : 1;
  m.elementsPerThread =
      static_cast<int>(ceilDiv(ceilDiv(tileElements, blockSize), m.vectorWidth) * m.vectorWidth);
  c.mapping = m;
  return c;
}

} // namespace weft::fusion
