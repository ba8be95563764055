#include "fusion/gemm_planner.h"

#include <algorithm>
#include <fmt/format.h>

namespace weft::fusion {
namespace {

/// A block tile and how its 256 threads cover it: 8 warps of warpM × warpN, each lane a
/// threadM × threadN register block (lanes: warpM / threadM rows × warpN / threadN columns).
struct TileShape {
  int blockM, blockN, warpM, warpN, threadM, threadN;
};

/// Largest first. 8 × 8 register blocks are the classic SGEMM balance (16 shared loads for 64
/// FMAs); the smaller tiles trade operand re-reads for more blocks on small problems.
constexpr TileShape kTiles[] = {
    {128, 128, 32, 64, 8, 8}, // warps 4 × 2, lanes 4 × 8
    {128, 64, 32, 32, 8, 4},  // warps 4 × 2, lanes 4 × 8
    {64, 128, 32, 32, 4, 8},  // warps 2 × 4, lanes 8 × 4
    {64, 64, 32, 16, 4, 4},   // warps 2 × 4, lanes 8 × 4
    {32, 32, 16, 8, 2, 2},    // warps 2 × 4, lanes 8 × 4
};
/// Tensor-core tiles, 8 warps each: warp tiles of whole m16n8 mma tiles.
constexpr TileShape kMmaTiles[] = {
    {128, 128, 32, 64, 0, 0}, // warps 4 × 2, 2 × 8 mma tiles per warp
    {128, 64, 32, 32, 0, 0},  // warps 4 × 2, 2 × 4
    {64, 128, 32, 32, 0, 0},  // warps 2 × 4, 2 × 4
    {64, 64, 32, 16, 0, 0},   // warps 2 × 4, 2 × 2
    {32, 32, 16, 8, 0, 0},    // warps 2 × 4, 1 × 1
};
constexpr int kThreads = 256;
/// K beyond which float sums are two-level (GemmPlan::tileSums).
constexpr int64_t kLongK = 256;

/// The size a heuristic assumes for a symbolic dim: large, so that the plan is the one for the
/// production sizes a symbolic dim usually stands for.
constexpr int64_t kAssumedSymbolic = 1024;

int64_t assumed(const ir::Dim& d) {
  if (d.isStatic()) return d.size();
  int64_t v = d.factor();
  for (size_t i = 0; i < d.symbols().size(); ++i)
    v *= kAssumedSymbolic;
  return v;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Tiles along a dim of size d: exact when d is a static or symbolic multiple of `tile`, else
/// an upper bound (d itself; the grid-stride loop skips tiles past the end).
ir::Dim tilesAlong(const ir::Dim& d, int tile) {
  if (d.isStatic()) return ceilDiv(d.size(), tile);
  if (auto q = d.dividedBy(ir::Dim(tile))) return *q;
  return d;
}

/// Elements per access of at most 16 bytes along a dim of size d, at most `limit`: only when d
/// is a static multiple of it (so a vector is entirely inside or outside the tensor, and
/// aligned to its size).
int vectorAlong(const ir::Dim& d, int elementBytes, int limit) {
  int v = std::min(limit, std::max(1, 16 / elementBytes));
  if (!d.isStatic()) return 1;
  while (v > 1 && d.size() % v != 0)
    v /= 2;
  return v;
}

} // namespace

GemmPlan planGemm(const ir::Graph& g, ir::NodeId dot, const DeviceSpec& spec) {
  const ir::Node& n = g.node(dot);
  const ir::Shape& as = g.node(n.operands[0]).type.shape;
  const ir::Shape& os = n.type.shape;
  size_t r = os.size();
  GemmPlan p;
  for (size_t i = 0; i + 2 < r; ++i)
    p.batch = p.batch * os[i];
  p.m = os[r - 2];
  p.n = os[r - 1];
  p.k = as[r - 1];
  ir::DType t = n.type.dtype;
  int e = int(ir::dtypeBytes(t));
  // Wide accumulators (f64, i64) take twice the registers: no 8 × 8 blocks for them.
  bool wide = e == 8;
  // f16 and bf16 run on tensor cores where the device has mma.sync m16n8k16 (sm_80+).
  bool mma = spec.computeCapability >= 80 && (t == ir::DType::f16 || t == ir::DType::bf16);
  if (mma) p.engine = GemmPlan::Engine::TensorCore;

  int64_t B = assumed(p.batch), M = assumed(p.m), N = assumed(p.n), K = assumed(p.k);
  int64_t aBytes = B * M * K * e, bBytes = B * K * N * e, cBytes = B * M * N * e;
  int64_t compulsory = aBytes + bBytes + cBytes;
  // Each block tile reads its A rows and B columns once per K step: A is read once per tile
  // column, B once per tile row. Pick the tile with the most blocks among those that read at
  // most 2.5x the compulsory bytes (parallelism while traffic stays low); when none does, the
  // one that reads the least; ties go to the smaller tile (less padding on small problems).
  // An mma accumulator pair of 16-bit results is 4 bytes, and the 4 lanes of a row write 16:
  // each 32-byte sector of the result is written twice (by two store instructions).
  const int64_t cSectorShare = mma ? std::max(1, 32 / (4 * 2 * e)) : 1;
  const TileShape* best = nullptr;
  int64_t bestBytes = 0, bestBlocks = 0;
  bool bestFits = false;
  for (const TileShape& c : mma ? kMmaTiles : kTiles) {
    if (wide && c.threadM * c.threadN > 32) continue;
    int64_t tm = ceilDiv(M, c.blockM), tn = ceilDiv(N, c.blockN);
    int64_t bytes = aBytes * tn + bBytes * tm + cBytes * cSectorShare;
    int64_t blocks = B * tm * tn;
    bool fits = double(bytes) <= 2.5 * double(compulsory);
    bool better = !best || (fits && !bestFits) ||
                  (fits == bestFits &&
                   (fits ? (blocks > bestBlocks || (blocks == bestBlocks && bytes <= bestBytes))
                         : bytes <= bestBytes));
    if (better) {
      best = &c;
      bestBytes = bytes;
      bestBlocks = blocks;
      bestFits = fits;
    }
  }
  p.blockM = best->blockM;
  p.blockN = best->blockN;
  p.warpM = best->warpM;
  p.warpN = best->warpN;
  p.threadM = best->threadM;
  p.threadN = best->threadN;
  // One K step reads 32 bytes of each A row: a whole sector per row and request (two mma
  // k-steps of 16 on tensor cores: 64 bytes).
  p.blockK = mma ? 32 : std::max(4, 32 / e);
  p.blockSize = kThreads;
  p.vectorA = vectorAlong(p.k, e, p.blockK);
  p.vectorB = vectorAlong(p.n, e, p.blockN);
  if (mma) {
    p.columnRun = 2; // an mma accumulator holds two adjacent columns
    p.sharedPad = 8;
  } else {
    p.columnRun = std::min(p.threadN, std::max(1, 16 / e));
  }
  p.vectorC = vectorAlong(p.n, e, p.columnRun);
  // A sequential f32 sum of 768 products already drifts past what the output check allows
  // for the dot's conditioning; two-level sums keep long dots as accurate as short ones.
  p.tileSums = !mma && ir::isFloat(t) && K > kLongK;
  // Double buffering pays once there is a next K tile to load while this one is multiplied.
  p.stages = K > p.blockK ? 2 : 1;
  // cp.async copies 4, 8 or 16 bytes into a layout equal to global's (tensor cores only; the
  // FMA path transposes A on the way).
  p.asyncCopy = mma && p.stages == 2 && p.vectorA * e >= 4 && p.vectorB * e >= 4;
  // Without cp.async, a tensor-core tile's next K tile would wait in registers beside the
  // accumulators and fragments (255 registers and spills at 128 x 128 with scalar loads):
  // one stage instead.
  if (mma && !p.asyncCopy) p.stages = 1;
  p.sharedBytes = int64_t(p.stages) *
                  (int64_t(p.blockM) * (p.blockK + p.sharedPad) +
                   int64_t(p.blockK) * (p.blockN + p.sharedPad)) *
                  e;

  p.tiles = p.batch * tilesAlong(p.m, p.blockM) * tilesAlong(p.n, p.blockN);
  if (!p.tiles.isStatic()) {
    // Registers: the accumulators and one K step's operands, plus addressing.
    int regs = mma ? p.warpM * p.warpN / 32 + 48
                   : (p.threadM * p.threadN + p.threadM + p.threadN) * (wide ? 2 : 1) + 40;
    p.maxBlocks = int64_t(spec.smCount) *
                  std::max(1, blocksPerSM(spec, p.blockSize, regs, p.sharedBytes)) * 4;
  }
  if (ir::isStatic(as) && ir::isStatic(os)) {
    p.modeledBytes = bestBytes;
    p.compulsoryBytes = compulsory;
  }
  return p;
}

std::string GemmPlan::str() const {
  std::string inner = engine == Engine::Fma
                          ? fmt::format("thread {}x{} (runs of {})", threadM, threadN, columnRun)
                          : fmt::format("{}x{} mma m16n8k16 per warp, ldmatrix, pad {}", warpM / 16,
                                        warpN / 8, sharedPad);
  std::string s = fmt::format(
      "gemm {} batch {} M {} N {} K {}: block {}x{}x{}, warp {}x{}, {}, "
      "vector a{} b{} c{}, stages {}{}, split-k {}{}, {} threads, shared {} B, tiles {}",
      engine == Engine::Fma ? "fma" : "mma", batch.str(), m.str(), n.str(), k.str(), blockM, blockN,
      blockK, warpM, warpN, inner, vectorA, vectorB, vectorC, stages,
      asyncCopy ? " (cp.async)" : "", splitK, tileSums ? ", tile sums" : "", blockSize, sharedBytes,
      tiles.str());
  if (maxBlocks > 0) s += fmt::format(" (grid at most {})", maxBlocks);
  if (compulsoryBytes > 0)
    s += fmt::format(", reads+writes {:.2f}x the operands and result",
                     double(modeledBytes) / double(compulsoryBytes));
  return s;
}

} // namespace weft::fusion
