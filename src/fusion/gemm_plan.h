#pragma once
// GemmPlan: how one dot (a LibraryCall step) runs — the contract between the GEMM planner
// (src/fusion/gemm_planner.h, which decides) and codegen's GEMM emitter (which only emits).
// Plain data, printed by `weft plan` on the library-call line.
//
// Model. out[b, m, n] = sum_k a[b, m, k] * b[b, k, n] over the batch (the product of the
// leading dims). The output of each batch is cut into blockM × blockN block tiles; block t of
// the grid computes tiles t, t + gridDim, ... The K dim is walked blockK at a time: each step
// stages an A tile (blockM × blockK, stored K-major so a thread reads its rows contiguously)
// and a B tile (blockK × blockN) in shared memory, then every thread accumulates its
// threadM × threadN register block (its rows and columns inside its warp's warpM × warpN
// tile) with one FMA per element pair. Every edge (M, N, K not multiples of the tile) is
// guarded: out-of-range operand elements are staged as zero and out-of-range results are not
// stored, so any shape, symbolic dims included, is correct.
#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace weft::fusion {

/// Where a GEMM operand's elements are in its buffer: the matrix of batch b (A [M, K] or
/// B [K, N]) at b * batchStride, row i and column j at i * rowStride + j * colStride, one of
/// the two 1 (the dim read contiguously). A dense operand is row-major with rowStride the
/// column count; a transpose the plan absorbed (B as [N, K] row-major: column-major here) or a
/// head split of a wider matrix (rowStride the full row) reads the source's buffer in place.
/// batchStride 0: every batch reads the same matrix (a broadcast along the batch).
struct GemmOperand {
  enum class Layout : uint8_t { RowMajor, ColumnMajor };
  Layout layout = Layout::RowMajor;
  ir::Dim batchStride = 0;
  ir::Dim ld = 1; // the stride of the dim read with stride (RowMajor: rows, ColumnMajor: columns)
  /// A prologue with elementwise ops (GemmPrologue): each element is loaded from `source`
  /// (of dtype `sourceType`) and becomes `value` (the dot's operand) through the graph's ops
  /// between them before it is staged; -1: loaded as it is.
  ir::NodeId value = -1, source = -1;
  ir::DType sourceType = ir::DType::f32;

  bool rowMajor() const { return layout == Layout::RowMajor; }
  bool computed() const { return value >= 0; }
  /// Whether it is how a dense operand of `batch` matrices `rows` × `cols` lies.
  bool dense(const ir::Dim& batch, const ir::Dim& rows, const ir::Dim& cols) const;
  std::string str() const; // "column-major (ld 256, batch stride 64)"
};

struct GemmPlan {
  /// Fma: CUDA cores, one fused multiply-add per element pair (every dtype).
  /// TensorCore: mma.sync.m16n8k16 (sm_80+, f16/bf16 inputs, f32 accumulation): each warp
  /// covers its warpM × warpN tile with (warpM / 16) × (warpN / 8) mma tiles whose A and B
  /// fragments come from the staged tiles through ldmatrix (a row-major A as [blockM][blockK],
  /// a row-major B as [blockK][blockN] read with .trans; column-major operands staged as they
  /// lie, the other way round); threadM, threadN and columnRun are unused.
  /// Warpgroup: Hopper's wgmma.mma_async.m64nNk16 (sm_90 only, the sm_90a PTX target; f16/bf16
  /// inputs, f32 accumulation): warpgroups of 128 threads (blockSize / 128 of them) each cover
  /// warpM (64) × warpN (= blockN) of the block tile with one wgmma m64n<warpN>k16 per 16-wide
  /// K step, A and B read by the tensor cores from shared memory through matrix descriptors.
  /// Both tiles are staged as they lie in core matrices of 8 × 8 elements (no swizzle): core
  /// matrix ((o / 8) * (blockK / 8) + kk / 8) holds element (o, kk) of a tile (o along M or N)
  /// at (o % 8) * 8 + kk % 8 when the operand is contiguous along K (K-major), at
  /// (kk % 8) * 8 + o % 8 when it is contiguous along M or N (MN-major: wgmma's imm-trans 1),
  /// so the descriptors' leading-dimension offset is 128 bytes and their stride offset
  /// blockK * 16 either way; each global vector lands in one 16-byte core-matrix row (cp.async
  /// as on the TensorCore path).
  /// Accumulator fragments are mma.sync's (each warp's 16 rows, warpN / 8 m16n8 tiles), so
  /// the result's store and epilogue are the TensorCore path's; sharedPad is 0.
  enum class Engine : uint8_t { Fma, TensorCore, Warpgroup };
  Engine engine = Engine::Fma;
  /// TensorCore on f32 operands (CompileOptions::tf32, sm_80+): mma.sync.m16n8k8 with tf32
  /// inputs, k-steps of 8. The tiles are staged in f32 as they lie (cp.async as for f16); each
  /// fragment element is rounded to tf32 (10-bit significand, nearest with ties away from zero,
  /// by cvt.rna.tf32.f32) when it is read from shared memory. An 8 × 8 b16 ldmatrix matrix is
  /// an 8 × 4 f32 one, so tiles staged [outer][k] (a row-major A, a column-major B) are read
  /// with ldmatrix without .trans; K-major tiles (which .trans, moving 16-bit halves, cannot
  /// transpose) with one ld.shared per fragment register. Accumulation and the result's
  /// fragment are m16n8k16's.
  bool tf32 = false;
  /// Why the engine is not the one the compile asked for ("": it is), e.g. tf32 asked for on a
  /// device without tensor-core tf32; printed by str().
  std::string engineNote;
  ir::Dim batch = 1, m = 1, n = 1, k = 1; // the problem (batch: product of the leading dims)
  /// How A ([M, K]) and B ([K, N]) lie in their buffers. Staging follows the layout: a
  /// vector is loaded along the dim the operand is contiguous in, and the tensor-core path
  /// stages each tile as its source lies (ldmatrix with or without .trans).
  GemmOperand a, b;
  /// Where the result's elements go (row-major; a head merge the plan absorbed stores into the
  /// wider matrix in place: ld the full row, batch stride one head's columns).
  GemmOperand c;
  int blockM = 64, blockN = 64, blockK = 8; // block tile
  int warpM = 32, warpN = 16;               // warp tile inside the block tile
  int threadM = 4, threadN = 4;             // register block of one thread inside its warp tile
  /// A thread's threadN columns are runs of columnRun contiguous columns, run r at
  /// r * lanesN() * columnRun from the first: the lanes of a row then read B from shared memory
  /// and write results to global memory in one contiguous span per instruction.
  int columnRun = 4;
  /// Elements per global load: of A and B along the dim each is contiguous in (row-major A:
  /// K; row-major B: N; needs that dim and the operand's strides static multiples), of the
  /// result's stores along N (needs N a static multiple); 1 = scalar accesses.
  int vectorA = 1, vectorB = 1, vectorC = 1;
  /// Shared-memory buffers per operand: 2 = double buffering (the next K tile is loaded into
  /// registers while the current one is multiplied, then stored into the other buffer, so a
  /// K step needs one block barrier instead of two).
  int stages = 1;
  /// Double buffering through cp.async (sm_80+, tensor cores, vectors of 4, 8 or 16 bytes):
  /// global → shared with no register round trip; edges copy zeros (src-size 0).
  bool asyncCopy = false;
  int splitK = 1; // K split across blocks (1: none)
  /// Elements of padding after each staged row (TensorCore: 8 f16/bf16 or 4 f32 elements, so
  /// that the eight 16-byte rows one ldmatrix reads fall in different banks; Fma: 0).
  int sharedPad = 0;
  /// The padding of a staged tile's rows: sharedPad, but twice that for a K-major tile on the
  /// tf32 path, whose fragments are read with ld.shared (lanes g + 8 t of a warp read column g
  /// of row t: a pitch of 8 mod 32 words puts them in 32 different banks; 4 would pair them).
  int rowPad(bool kMajor) const { return tf32 && kMajor ? 2 * sharedPad : sharedPad; }
  /// Float sums of long K: each K tile's products are summed apart and then added to the
  /// accumulators (two-level summation: error ~ K / blockK + blockK roundings, not K), at the
  /// cost of a second register block.
  bool tileSums = false;
  int blockSize = 256;
  int64_t sharedBytes = 0; // static shared memory per block (the staged tiles)
  ir::Dim tiles = 1;       // block tiles wanted (an upper bound when a dim is symbolic)
  int64_t maxBlocks = 0;   // cap on the grid when `tiles` is symbolic (0: none)
  /// Modeled global bytes the plan reads and writes, against the compulsory bytes (operands
  /// read once, result written once); static shapes only (0 otherwise).
  int64_t modeledBytes = 0, compulsoryBytes = 0;

  /// K of one mma instruction (m16n8k16, or m16n8k8 for tf32).
  int mmaK() const { return tf32 ? 8 : 16; }
  bool warpgroups() const { return engine == Engine::Warpgroup; }
  /// Tensor cores of either kind: accumulators in m16n8 fragments.
  bool tensorCores() const { return engine != Engine::Fma; }
  int warpsM() const { return blockM / warpM; }
  int warpsN() const { return blockN / warpN; }
  int lanesN() const { return warpN / threadN; } // lanes of a warp across its tile's columns
  std::string str() const;                       // one line for `weft plan`
};

} // namespace weft::fusion
