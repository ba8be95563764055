#include "fusion/gemm_planner.h"

#include <algorithm>
#include <span>
#include <stdexcept>

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
/// Warpgroup-MMA tiles: warpgroups of 64 rows × the whole blockN (one wgmma m64n<blockN>k16 per
/// K step each), one or two per block.
constexpr TileShape kWarpgroupTiles[] = {
    {128, 128, 64, 128, 0, 0}, // 2 warpgroups, 64 accumulators per thread
    {128, 64, 64, 64, 0, 0},   // 2 warpgroups, 32
    {64, 128, 64, 128, 0, 0},  // 1 warpgroup, 64
    {64, 64, 64, 64, 0, 0},    // 1 warpgroup, 32
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
/// aligned to its size) and so are the strides `aligned` (a dim's elements start there).
int vectorAlong(const ir::Dim& d, int elementBytes, int limit,
                std::initializer_list<ir::Dim> aligned = {}) {
  int v = std::min(limit, std::max(1, 16 / elementBytes));
  if (!d.isStatic()) return 1;
  auto fits = [&](int w) {
    if (d.size() % w != 0) return false;
    for (const ir::Dim& s : aligned)
      if (s.factor() % w != 0) return false;
    return true;
  };
  while (v > 1 && !fits(v))
    v /= 2;
  return v;
}

/// A dense operand of `rows` × `cols` matrices of dtype t.
GemmOperand dense(const ir::Dim& rows, const ir::Dim& cols, ir::DType t) {
  GemmOperand o;
  o.sourceType = t;
  o.ld = cols;
  o.batchStride = rows * cols;
  return o;
}

/// The strides of a reshape's result from its operand's (nullopt: it merges dims that are not
/// contiguous). Dims are matched in groups of equal products; a group's operand dims must be
/// contiguous (each stride the next's times its size), and its result dims split that run.
std::optional<std::vector<ir::Dim>>
reshapeStrides(const ir::Shape& in, const std::vector<ir::Dim>& inStrides, const ir::Shape& out) {
  std::vector<size_t> ins;
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].isOne()) ins.push_back(i);
  std::vector<ir::Dim> strides(out.size(), ir::Dim(0));
  size_t i = 0, j = 0;
  while (j < out.size()) {
    if (out[j].isOne()) {
      ++j;
      continue;
    }
    if (i >= ins.size()) return std::nullopt;
    std::vector<size_t> gi{ins[i++]}, gj{j++};
    ir::Dim inProd = in[gi[0]], outProd = out[gj[0]];
    while (inProd != outProd) {
      auto more = outProd.dividedBy(inProd);
      if (more && !more->isOne()) {
        if (i >= ins.size()) return std::nullopt;
        gi.push_back(ins[i++]);
        inProd = inProd * in[gi.back()];
      } else if (auto fewer = inProd.dividedBy(outProd)) {
        while (j < out.size() && out[j].isOne())
          ++j;
        if (j >= out.size()) return std::nullopt;
        gj.push_back(j++);
        outProd = outProd * out[gj.back()];
      } else {
        return std::nullopt;
      }
    }
    for (size_t x = 0; x + 1 < gi.size(); ++x)
      if (inStrides[gi[x]] != in[gi[x + 1]] * inStrides[gi[x + 1]]) return std::nullopt;
    ir::Dim stride = inStrides[gi.back()];
    for (size_t x = gj.size(); x-- > 0;) {
      strides[gj[x]] = stride;
      stride = stride * out[gj[x]];
    }
  }
  if (i != ins.size()) return std::nullopt;
  return strides;
}

/// The operand's (or, without a prologue, its dense) layout, checked against `rows` × `cols`.
GemmOperand layoutOf(const ir::Graph& g, const GemmPrologue& prologue, const ir::Dim& rows,
                     const ir::Dim& cols, ir::DType t) {
  if (prologue.empty()) return dense(rows, cols, t);
  auto l = operandLayout(g, prologue);
  if (!l) throw std::logic_error("fusion: a GEMM prologue whose layout has no strides");
  bool elementwise = std::any_of(prologue.ops.begin(), prologue.ops.end(),
                                 [&](ir::NodeId op) { return ir::isElementwise(g.node(op).kind); });
  if (elementwise) {
    l->value = prologue.ops.front();
    l->source = prologue.source;
  }
  l->sourceType = g.node(prologue.source).type.dtype;
  return *l;
}

std::vector<ir::Dim> denseStrides(const ir::Shape& shape) {
  std::vector<ir::Dim> strides(shape.size(), ir::Dim(1));
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

/// The GemmOperand of a [batch..., rows, cols] tensor whose dims lie at `strides` (nullopt:
/// neither of the last two has stride 1, or the batch dims do not flatten to one stride).
std::optional<GemmOperand> withStrides(const ir::Shape& shape, std::vector<ir::Dim> strides) {
  size_t r = shape.size();
  if (r < 2) return std::nullopt;
  // A dim of size 1 is read at index 0 only: any stride serves, 1 included.
  for (size_t i = 0; i < r; ++i)
    if (shape[i].isOne()) strides[i] = i + 1 == r ? ir::Dim(1) : ir::Dim(0);
  GemmOperand o;
  if (strides[r - 1] == ir::Dim(1)) {
    o.ld = strides[r - 2];
  } else if (strides[r - 2] == ir::Dim(1)) {
    o.layout = GemmOperand::Layout::ColumnMajor;
    o.ld = strides[r - 1];
  } else {
    return std::nullopt;
  }
  std::vector<size_t> batch;
  for (size_t i = 0; i + 2 < r; ++i)
    if (!shape[i].isOne()) batch.push_back(i);
  for (size_t x = 0; x + 1 < batch.size(); ++x)
    if (strides[batch[x]] != shape[batch[x + 1]] * strides[batch[x + 1]]) return std::nullopt;
  o.batchStride = batch.empty() ? ir::Dim(0) : strides[batch.back()];
  return o;
}

} // namespace

std::optional<GemmOperand> operandLayout(const ir::Graph& g, const GemmPrologue& prologue) {
  const ir::Shape* shape = &g.node(prologue.source).type.shape;
  std::vector<ir::Dim> strides = denseStrides(*shape);
  for (size_t c = prologue.ops.size(); c-- > 0;) {
    const ir::Node& n = g.node(prologue.ops[c]);
    const ir::Shape& out = n.type.shape;
    std::vector<ir::Dim> next(out.size(), ir::Dim(0));
    switch (n.kind) {
    case ir::OpKind::Transpose: {
      const auto& perm = n.attr<ir::TransposeAttrs>().perm;
      for (size_t i = 0; i < out.size(); ++i)
        next[i] = strides[size_t(perm[i])];
      break;
    }
    case ir::OpKind::BroadcastInDim: {
      const auto& dims = n.attr<ir::BroadcastAttrs>().dims;
      for (size_t i = 0; i < dims.size(); ++i)
        if ((*shape)[i] == out[size_t(dims[i])]) next[size_t(dims[i])] = strides[i];
      break;
    }
    case ir::OpKind::Reshape: {
      auto r = reshapeStrides(*shape, strides, out);
      if (!r) return std::nullopt;
      next = std::move(*r);
      break;
    }
    default:
      if (!ir::isElementwise(n.kind)) return std::nullopt;
      next = strides; // an element becomes the element at its own index
      break;
    }
    strides = std::move(next);
    shape = &out;
  }
  return withStrides(*shape, std::move(strides));
}

std::optional<GemmOperand> storeLayout(const ir::Graph& g, ir::NodeId from,
                                       const std::vector<ir::NodeId>& store) {
  if (store.empty()) return std::nullopt;
  const ir::Shape* shape = &g.node(store.back()).type.shape;
  std::vector<ir::Dim> strides = denseStrides(*shape);
  for (size_t c = store.size(); c-- > 0;) {
    const ir::Node& n = g.node(store[c]);
    const ir::Shape& in = g.node(c == 0 ? from : store[c - 1]).type.shape;
    std::vector<ir::Dim> prev(in.size(), ir::Dim(0));
    switch (n.kind) {
    case ir::OpKind::Transpose: {
      const auto& perm = n.attr<ir::TransposeAttrs>().perm;
      for (size_t i = 0; i < perm.size(); ++i)
        prev[size_t(perm[i])] = strides[i];
      break;
    }
    case ir::OpKind::Reshape: {
      auto r = reshapeStrides(*shape, strides, in);
      if (!r) return std::nullopt;
      prev = std::move(*r);
      break;
    }
    default:
      return std::nullopt;
    }
    strides = std::move(prev);
    shape = &in;
  }
  auto o = withStrides(*shape, std::move(strides));
  if (!o || !o->rowMajor()) return std::nullopt;
  return o;
}

GemmPlan planGemm(const ir::Graph& g, ir::NodeId dot, const DeviceSpec& spec,
                  const GemmEpilogue& fused, const GemmOptions& options) {
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
  p.a = layoutOf(g, fused.a, p.m, p.k, n.type.dtype);
  p.b = layoutOf(g, fused.b, p.k, p.n, n.type.dtype);
  p.c = dense(p.m, p.n, n.type.dtype);
  if (!fused.store.empty()) {
    auto c = storeLayout(g, fused.ops.empty() ? dot : fused.result, fused.store);
    if (!c) throw std::logic_error("fusion: a GEMM's store layout has no strides");
    p.c = *c;
  }
  ir::DType t = n.type.dtype;
  int e = int(ir::dtypeBytes(t));
  // Wide accumulators (f64, i64) take twice the registers: no 8 × 8 blocks for them.
  bool wide = e == 8;
  // f16 and bf16 run on tensor cores where the device has mma.sync m16n8k16 (sm_80+); f32
  // does with tf32 inputs (m16n8k8) only when the compile asks for it: it rounds every operand
  // element to a 10-bit significand, which exact f32 arithmetic does not.
  const bool tensorCores = spec.computeCapability >= 80;
  const bool tf32 = options.tf32 && t == ir::DType::f32;
  bool mma = tensorCores && (t == ir::DType::f16 || t == ir::DType::bf16 || tf32);
  if (mma) p.engine = GemmPlan::Engine::TensorCore;
  p.tf32 = mma && tf32;
  // Hopper's warpgroup MMA where the device has it: sm_90 (wgmma is an sm_90a instruction,
  // which later architectures do not keep), f16 and bf16 (tf32 stays on mma.sync).
  const bool wgmma = mma && !p.tf32 && spec.computeCapability == 90 && options.warpgroupMma;
  if (wgmma) p.engine = GemmPlan::Engine::Warpgroup;
  if (tf32 && !tensorCores)
    p.engineNote = fmt::format("tf32 asked for, but sm_{} has no tf32 tensor cores (sm_80+)",
                               spec.computeCapability);

  int64_t B = assumed(p.batch), M = assumed(p.m), N = assumed(p.n), K = assumed(p.k);
  // Operands are read in their sources' dtypes (a convert in a prologue: the wider one).
  int64_t eA = int64_t(ir::dtypeBytes(p.a.sourceType)),
          eB = int64_t(ir::dtypeBytes(p.b.sourceType));
  int64_t aBytes = B * M * K * eA, bBytes = B * K * N * eB, cBytes = B * M * N * e;
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
  for (const TileShape& c : wgmma ? std::span<const TileShape>(kWarpgroupTiles)
                             : mma ? std::span<const TileShape>(kMmaTiles)
                                   : std::span<const TileShape>(kTiles)) {
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
  // k-steps of 16 on tensor cores: 64 bytes; tf32: two k-steps of 8, 64 bytes of f32, which
  // keeps 128 x 128 double-buffered tiles within 48 KB of static shared memory).
  p.blockK = p.tf32 ? 16 : mma ? 32 : std::max(4, 32 / e);
  p.blockSize = wgmma ? 128 * (p.blockM / p.warpM) : kThreads;
  // Along the dim each operand is contiguous in (a transposed one: the other way).
  p.vectorA = p.a.rowMajor() ? vectorAlong(p.k, int(eA), p.blockK, {p.a.ld, p.a.batchStride})
                             : vectorAlong(p.m, int(eA), p.blockM, {p.a.ld, p.a.batchStride});
  p.vectorB = p.b.rowMajor() ? vectorAlong(p.n, int(eB), p.blockN, {p.b.ld, p.b.batchStride})
                             : vectorAlong(p.k, int(eB), p.blockK, {p.b.ld, p.b.batchStride});
  if (mma) {
    p.columnRun = 2; // an mma accumulator holds two adjacent columns
    // 16 bytes: a staged row's pitch is then an odd multiple of 16 bytes (f32: 16 + 4
    // elements, 80 bytes), so the eight rows one ldmatrix reads fall in different banks
    p.sharedPad = wgmma ? 0 : 16 / e;
  } else {
    p.columnRun = std::min(p.threadN, std::max(1, 16 / e));
  }
  p.vectorC = vectorAlong(p.n, e, p.columnRun, {p.c.ld, p.c.batchStride});
  // A sequential f32 sum of 768 products already drifts past what the output check allows
  // for the dot's conditioning; two-level sums keep long dots as accurate as short ones.
  p.tileSums = !mma && ir::isFloat(t) && K > kLongK;
  // Double buffering pays once there is a next K tile to load while this one is multiplied.
  p.stages = K > p.blockK ? 2 : 1;
  // cp.async copies 4, 8 or 16 bytes into a layout equal to global's (tensor cores only; the
  // FMA path transposes A on the way).
  // A prologue's elementwise ops run between the load and the store: no cp.async then.
  p.asyncCopy = mma && p.stages == 2 && p.vectorA * e >= 4 && p.vectorB * e >= 4 &&
                !p.a.computed() && !p.b.computed();
  // Without cp.async, a tensor-core tile's next K tile would wait in registers beside the
  // accumulators and fragments (255 registers and spills at 128 x 128 with scalar loads):
  // one stage instead. wgmma keeps no fragments in registers: its next tile waits there.
  if (mma && !wgmma && !p.asyncCopy) p.stages = 1;
  // Tensor cores stage each tile as its operand lies (a column-major A as [blockK][blockM], a
  // column-major B as [blockN][blockK]); the FMA path stages A K-major and B N-major.
  bool aKRows = !mma || (!wgmma && !p.a.rowMajor()), bNRows = wgmma || (mma && !p.b.rowMajor());
  int64_t aTile = aKRows ? int64_t(p.blockK) * (p.blockM + p.rowPad(true))
                         : int64_t(p.blockM) * (p.blockK + p.rowPad(false));
  int64_t bTile = bNRows ? int64_t(p.blockN) * (p.blockK + p.rowPad(false))
                         : int64_t(p.blockK) * (p.blockN + p.rowPad(true));
  p.sharedBytes = int64_t(p.stages) * (aTile + bTile) * e;

  p.tiles = p.batch * tilesAlong(p.m, p.blockM) * tilesAlong(p.n, p.blockN);
  if (!p.tiles.isStatic()) {
    // Registers: the accumulators and one K step's operands, plus addressing.
    int regs = mma ? p.warpM * p.warpN / (wgmma ? 128 : 32) + 48
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

void replanGemms(FusionPlan& plan, const GemmOptions& options) {
  for (Step& step : plan.steps)
    if (auto* call = std::get_if<LibraryCall>(&step);
        call && plan.graph.node(call->op).kind == ir::OpKind::Dot)
      call->gemm = planGemm(plan.graph, call->op, plan.device, call->epilogue, options);
}

bool GemmOperand::dense(const ir::Dim& batch, const ir::Dim& rows, const ir::Dim& cols) const {
  return rowMajor() && ld == cols && (batch.isOne() || batchStride == rows * cols) && !computed();
}

std::string GemmOperand::str() const {
  return fmt::format(
      "{} (ld {}, batch stride {}){}", rowMajor() ? "row-major" : "column-major", ld.str(),
      batchStride.str(),
      computed() ? fmt::format(", computed on load from {}", ir::dtypeName(sourceType)) : "");
}

std::string GemmPlan::str() const {
  // tf32 fragments: ldmatrix from tiles staged [outer][k], ld.shared from K-major ones
  auto fragments = [&] {
    if (!tf32) return std::string("ldmatrix");
    auto how = [](bool ldmatrix) { return ldmatrix ? "ldmatrix" : "ld.shared"; };
    return fmt::format("a by {}, b by {}", how(a.rowMajor()), how(!b.rowMajor()));
  };
  std::string inner =
      engine == Engine::Fma ? fmt::format("thread {}x{} (runs of {})", threadM, threadN, columnRun)
      : engine == Engine::Warpgroup
          ? fmt::format("wgmma m64n{}k16 per warpgroup, {} warpgroups, core matrices (no swizzle, "
                        "a {}, b {})",
                        warpN, blockSize / 128, a.rowMajor() ? "K-major" : "M-major",
                        b.rowMajor() ? "N-major" : "K-major")
          : fmt::format("{}x{} mma m16n8k{}{} per warp, {}, pad {}", warpM / 16, warpN / 8, mmaK(),
                        tf32 ? " (tensor cores tf32)" : "", fragments(),
                        tf32 ? fmt::format("{} ({} K-major)", sharedPad, rowPad(true))
                             : std::to_string(sharedPad));
  std::string s = fmt::format(
      "gemm {} batch {} M {} N {} K {}: block {}x{}x{}, warp {}x{}, {}, "
      "vector a{} b{} c{}, stages {}{}, split-k {}{}, {} threads, shared {} B, tiles {}",
      engine == Engine::Fma ? "fma" : engine == Engine::Warpgroup ? "wgmma" : "mma", batch.str(), m.str(), n.str(), k.str(), blockM, blockN,
      blockK, warpM, warpN, inner, vectorA, vectorB, vectorC, stages,
      asyncCopy ? " (cp.async)" : "", splitK, tileSums ? ", tile sums" : "", blockSize, sharedBytes,
      tiles.str());
  if (maxBlocks > 0) s += fmt::format(" (grid at most {})", maxBlocks);
  if (!engineNote.empty())
    s += fmt::format(", {} ({})", engine == Engine::Fma ? "fma" : "mma", engineNote);
  // Operands read in place through a prologue's layout ops (dense ones go unsaid).
  if (!a.dense(batch, m, k)) s += ", a " + a.str();
  if (!b.dense(batch, k, n)) s += ", b " + b.str();
  if (!c.dense(batch, m, n)) s += ", c " + c.str();
  if (compulsoryBytes > 0)
    s += fmt::format(", reads+writes {:.2f}x the operands and result",
                     double(modeledBytes) / double(compulsoryBytes));
  return s;
}

} // namespace weft::fusion
