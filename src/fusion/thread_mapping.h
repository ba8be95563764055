#pragma once
// Step 3 of the AStitch planner (AStitch §3.3 and §4.3 "Tensor Shape Adaptation"): adaptive
// thread mapping of a dominant op from its shape and the DeviceSpec. Takes the dominant's loop
// space; returns a ThreadMapping, the block size, the tile size and the fraction of the
// device's thread slots one wave keeps busy. Guarantees: short rows are packed into big blocks
// (horizontal packing), many tiles are covered by at most one wave of blocks (vertical packing,
// see launch_config.h), and rows that are few and long are split across blocks (task
// splitting) so that one wave is filled; among block sizes that fill the wave about equally
// well the largest is chosen (fewer, bigger blocks make grid barriers cheaper, AStitch §4.5).
#include <cstdint>
#include <vector>

#include "fusion/kernel_plan.h"
#include "ir/graph.h"
#include "ir/symbol_ranges.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// The index space a dominant's thread mapping covers (see Group::loopShape).
struct LoopSpace {
  enum class Kind : uint8_t { RowReduce, ColumnReduce, Elementwise };
  Kind kind = Kind::Elementwise;
  ir::Shape shape;               // reduce: its operand's shape; otherwise the op's shape
  std::vector<int64_t> tileDims; // reduce: kept dims; elementwise: all dims
  ir::Dim rows = 1;              // product of shape[tileDims]
  ir::Dim rowLength = 1;         // product of the other dims
  ir::DType dtype = ir::DType::f32;
  bool contiguousRows = true; // the row's elements are contiguous (reduced dims innermost)
  // rows and rowLength as the mapping heuristics size them: static sizes, or symbolic ones at
  // their likely size under the plan's symbol ranges (ir/symbol_ranges.h). Only heuristics
  // read these; nothing the kernel's correctness rests on.
  int64_t assumedRows = 1;
  int64_t assumedRowLength = 1;
  // What vector widths rest on, which correctness does: the power of two known to divide the
  // row length and the innermost dim (static sizes, or a version's divisibility guard).
  int64_t rowLengthDivisor = 1;
  int64_t innerDivisor = 1;
  // Bytes of the widest element the kernel streams through global memory (its largest inputs
  // and outputs, kernel_builder's streamedElementBytes): what a 16-byte vector holds
  // (vectorWidthFor). 0: dtype's.
  int memoryBytes = 0;
};

/// Row reduce when the kept dims are not a leading prefix (reduced dims innermost or mixed:
/// mixed ones are correct but uncoalesced), column reduce when the reduced dims are a proper
/// leading prefix, elementwise otherwise.
LoopSpace loopSpaceOf(const ir::Graph& g, ir::NodeId dominant,
                      const ir::SymbolRanges& ranges = {});

struct MappingChoice {
  ThreadMapping mapping;
  int blockSize = 0;
  int64_t rowsPerTile = 1;
  int64_t tiles = 1;          // tiles of work (estimate: symbolic dims at their assumed size)
  int64_t blocksPerWave = 0;  // with the assumed register bound and no shared memory
  double waveUtilization = 0; // busy thread slots in the first wave / device thread slots
};

/// Rows longer than this are reduced by a whole block (and split across blocks when few).
inline constexpr int64_t kWarpRowLimit = 1024;

/// blockSize 0: choose it (1024, 512, 256, 128); otherwise map for that block size.
MappingChoice chooseThreadMapping(const LoopSpace& space, const DeviceSpec& spec,
                                  int blockSize = 0);

/// A kernel too small for the block its heaviest group chose (chain_softmax_64's [4, 8] rows in
/// a 1024-thread block: one warp's work, 31 warps that only load their clamped row again and
/// wait at every barrier): the smallest block, down to one warp, in which every loop of
/// `spaces` (all static) still fits one tile and each thread keeps the work it has in
/// `blockSize`. `blockSize` where a loop is symbolic or takes more than one tile.
int smallestBlockForOneTile(const std::vector<LoopSpace>& spaces, const DeviceSpec& spec,
                            int blockSize);

/// Proactive re-mapping: an elementwise group that runs in another group's tiles of
/// `rowsPerTile` rows, each row `rowLength` elements long (assumed size, as LoopSpace's) and a
/// known multiple of `rowLengthDivisor`.
MappingChoice elementwiseInTiles(int64_t rowsPerTile, int64_t rowLength, int64_t rowLengthDivisor,
                                 int memoryBytes, int blockSize, const DeviceSpec& spec);

/// Elements a thread moves per access so that each of its loads and stores of the kernel's
/// widest streamed element (`memoryBytes`) is one 16-byte vector: 4 for f32, 8 for f16,
/// bf16 and 1-byte types (at most 8: every element is its own copy of the code), 1 for f64
/// and wider. Only when `contiguous` elements (assumed size) are a known multiple of the width
/// (`divisor`) and fill `lanes` lanes of it; else 4 where that fits, else 1.
int vectorWidthFor(int memoryBytes, int64_t contiguous, int64_t divisor, int64_t lanes);

} // namespace weft::fusion
