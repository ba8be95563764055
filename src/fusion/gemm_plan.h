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

#include "ir/shape.h"

namespace weft::fusion {

struct GemmPlan {
  /// Fma: CUDA cores, one fused multiply-add per element pair (every dtype).
  /// TensorCore: mma.sync.m16n8k16 (sm_80+, f16/bf16 inputs, f32 accumulation): each warp
  /// covers its warpM × warpN tile with (warpM / 16) × (warpN / 8) mma tiles whose A and B
  /// fragments come from the staged tiles through ldmatrix (A row-major [blockM][blockK],
  /// B [blockK][blockN] read with .trans); threadM, threadN and columnRun are unused.
  enum class Engine : uint8_t { Fma, TensorCore };
  Engine engine = Engine::Fma;
  ir::Dim batch = 1, m = 1, n = 1, k = 1;   // the problem (batch: product of the leading dims)
  int blockM = 64, blockN = 64, blockK = 8; // block tile
  int warpM = 32, warpN = 16;               // warp tile inside the block tile
  int threadM = 4, threadN = 4;             // register block of one thread inside its warp tile
  /// A thread's threadN columns are runs of columnRun contiguous columns, run r at
  /// r * lanesN() * columnRun from the first: the lanes of a row then read B from shared memory
  /// and write results to global memory in one contiguous span per instruction.
  int columnRun = 4;
  /// Elements per global load: of A along K (needs K a static multiple), of B along N and of
  /// the result's stores along N (need N a static multiple); 1 = scalar accesses.
  int vectorA = 1, vectorB = 1, vectorC = 1;
  /// Shared-memory buffers per operand: 2 = double buffering (the next K tile is loaded into
  /// registers while the current one is multiplied, then stored into the other buffer, so a
  /// K step needs one block barrier instead of two).
  int stages = 1;
  /// Double buffering through cp.async (sm_80+, tensor cores, vectors of 4, 8 or 16 bytes):
  /// global → shared with no register round trip; edges copy zeros (src-size 0).
  bool asyncCopy = false;
  int splitK = 1; // K split across blocks (1: none)
  /// Elements of padding after each staged row (TensorCore: 8, so that the eight 16-byte rows
  /// one ldmatrix reads fall in different banks; Fma: 0).
  int sharedPad = 0;
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

  int warpsM() const { return blockM / warpM; }
  int warpsN() const { return blockN / warpN; }
  int lanesN() const { return warpN / threadN; } // lanes of a warp across its tile's columns
  std::string str() const;                       // one line for `weft plan`
};

} // namespace weft::fusion
