#pragma once
// KernelPlan: what one stitched kernel computes and how — the contract between the planner
// (src/fusion) and codegen (src/codegen). It is plain data, printable as text and DOT.
// Every field is serialised by fusion/plan_serialization.cc: add new ones there.
//
// Model (AStitch §3–4). A kernel computes a set of graph ops. The ops are partitioned into
// groups; each group has one dominant op whose thread mapping decides how every op of the
// group is scheduled (schedule propagation). Groups run as stages, in order; a stage
// materialises the values of its group that others need (shared memory, global scratch, or a
// kernel output) and everything else stays in registers, recomputed inline where used
// (local stitching: one-to-one uses only).
//
// Stages are split into phases by grid barriers. All stages of a phase share one tile loop:
// the phase's index space ([rows, rowLength], flat elementwise being rows = 1 element per
// "row" unit) is cut into tiles; block b processes tiles b, b + gridDim, ... (vertical
// packing). Inside one tile iteration the stages run in order, separated by block barriers,
// and a Shared value written by one stage is read by a later stage of the same tile
// (regional stitching). Values read across phases live in Global scratch or Output buffers
// (global stitching) and are visible after the grid barrier, or, when every later reader reads
// them at its own rows in the same tiles, stay in shared memory across the barrier (resident:
// each block keeps its tiles' elements, fusion/resident_values.h).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

enum class Storage : uint8_t {
  Register, // local: generated inline in registers where it is used
  Shared,   // regional: materialised in shared memory for the current tile
  Global,   // global: materialised in a scratch buffer, read after a grid barrier
  Output,   // written to a buffer that outlives the kernel (graph output / later kernel input)
  Input,    // produced before this kernel; read from its buffer
};

// Before a stage that reads values earlier stages of its phase wrote: none, the warp's lanes
// (bar.warp.sync: every value it reads is one per row, written by a lane of the warp that owns
// that row), the block, or the grid (a new phase). LastBlock also starts a new phase, with no
// grid barrier: every block counts itself out of the phases before (an atomic counter in the
// barrier state) and leaves, but the last to do so, which runs the rest of the kernel alone,
// as block 0 of a grid of one (fusion/last_block_handoff.h). The kernel need not be
// cooperative: no block waits for another.
enum class Barrier : uint8_t { None, Warp, Block, Grid, LastBlock };

// ---- thread mappings (AStitch §4.4, adaptive thread mapping) ----

/// Flat, vectorised: each thread handles `vectorWidth` contiguous elements per access and
/// `elementsPerThread / vectorWidth` accesses per tile.
struct ElementwiseMapping {
  int vectorWidth = 1;
  int elementsPerThread = 1;
  bool operator==(const ElementwiseMapping&) const = default;
};

/// Row reduce over [rows, rowLength] (reduced axes innermost).
/// WarpPerRow: `threadsPerRow` (<= 32) lanes per row, rowsPerBlock = blockSize / threadsPerRow
/// (horizontal packing of short rows). BlockPerRow: the whole block on one row
/// (rowsPerBlock = 1, threadsPerRow = blockSize). splitFactor > 1 splits each row across that
/// many blocks (task splitting) and combines the partials across blocks.
struct RowReduceMapping {
  enum class Kind : uint8_t { WarpPerRow, BlockPerRow };
  Kind kind = Kind::BlockPerRow;
  int threadsPerRow = 256;
  int rowsPerBlock = 1;
  int splitFactor = 1;
  int vectorWidth = 1;
  // BlockPerRow on sm_90: the blocks of one thread-block cluster share each row, block r of the
  // cluster holding part r of clusterBlocks equal parts in its slots, and every row reduce is
  // combined across the cluster (distributed shared memory); rows too long for one block's
  // registers are then read once (QuACK). 1: a row per block.
  int clusterBlocks = 1;
  // Where a row is streamed (its reduce loops read memory, not row slots): the vector steps a
  // thread loads at once, before it uses any of them, so that an SM keeps enough bytes in
  // flight to cover DRAM latency (a chunk's steps past the row load nothing and add nothing;
  // decided at launch configuration, fusion/launch_config.cc). 1: one step at a time.
  int streamLoads = 1;
  bool operator==(const RowReduceMapping&) const = default;

  /// Threads that share one row: threadsPerRow for a warp per row, the block otherwise.
  int rowThreads(int blockSize) const {
    return kind == Kind::WarpPerRow ? threadsPerRow : blockSize;
  }
  /// Steps of rowThreads × vectorWidth elements each thread takes of a row of `length`
  /// elements, or of its block's part of it when a cluster shares the row (ceil(length /
  /// clusterBlocks)): what the row slots hold, and where each part starts (steps × per step).
  int64_t slotSteps(int64_t length, int blockSize) const {
    int64_t parts = clusterBlocks > 1 ? clusterBlocks : 1;
    int64_t perStep = int64_t(rowThreads(blockSize)) * (vectorWidth > 1 ? vectorWidth : 1);
    return ((length + parts - 1) / parts + perStep - 1) / perStep;
  }
};

/// Column reduce over [reducedLength, columns] (reduced axes outermost): a block tile covers
/// `tileColumns` consecutive columns (coalesced along threadIdx.x) with `tileRows` threads
/// along the reduced dimension, combined through shared memory (transpose); splitFactor > 1
/// splits the reduced dimension across blocks, combined with atomics or after a grid barrier.
struct ColumnReduceMapping {
  int tileColumns = 32;
  int tileRows = 8;
  int splitFactor = 1;
  bool useAtomics = false;
  bool operator==(const ColumnReduceMapping&) const = default;
};

using ThreadMapping = std::variant<ElementwiseMapping, RowReduceMapping, ColumnReduceMapping>;

/// How many blocks share each row (or column) of a reduce mapping: its splitFactor; 1 for an
/// elementwise mapping.
int splitFactor(const ThreadMapping& m);
/// How many blocks of a thread-block cluster share each row of a mapping
/// (RowReduceMapping::clusterBlocks); 1 for every other mapping.
int clusterBlocks(const ThreadMapping& m);

// ---- the kernel ----

/// Where an op of a group lives after schedule propagation (src/fusion/schedule.h).
enum class OpSpace : uint8_t {
  Loop,  // the group's loop space (Group::loopShape): one element per (row, column)
  Row,   // the group's row space (loopShape restricted to tileDims): one element per row,
         // e.g. a reduce's result and the elementwise ops between it and a broadcast
  Other, // neither (layout ops feeding the loop through an index map): generated inline
         // at whatever index its consumer asks for. A materialised Other value (a sub-dominant
         // in a projection of the row space, or an acrossTiles reduce) is never block-local: it
         // is Global or Output, produced by a flat loop over its own elements spread over the
         // grid (acrossTiles reduces: by their partials combine).
};

struct Group {
  ir::NodeId dominant = -1;
  std::vector<ir::NodeId> subDominants; // merged candidates materialised for one-to-many uses
  std::vector<ir::NodeId> ops;          // every op scheduled by this group, topological order
  ThreadMapping mapping;

  // ---- schedule (added by the planner, additive; see src/fusion/thread_mapping.h) ----
  // The group's loop space. For a reduce dominant it is the reduce's operand shape and
  // tileDims are its kept (non-reduced) dims; for an elementwise dominant it is the
  // dominant's shape and tileDims are all its dims (each element is a "row" of length 1),
  // unless the group follows another group (proactive re-mapping), in which case it copies
  // that group's rows. rows = product of loopShape[tileDims], rowLength = the rest: the
  // [rows, rowLength] view the mappings above describe (for a ColumnReduceMapping "rows"
  // are its columns and rowLength its reduced length). A tile is `rowsPerTile` rows; block
  // b handles tiles b, b + gridDim, ... (times splitFactor parts when a reduce is split).
  ir::Shape loopShape;
  std::vector<int64_t> tileDims;
  ir::Dim rows = 1;
  ir::Dim rowLength = 1;
  int64_t rowsPerTile = 1;
  int follows = -1;                     // proactive re-mapping: runs in the tiles of this group
  // With follows >= 0 and a reduce dominant: the reduce runs in the followed group's tiles and
  // reduces across them (e.g. a column sum over a row reduce's loop): each block accumulates
  // the tiles it handles into its partials (ValuePlacement::partialsBuffer, maxBlocks x result
  // elements), then the partials are combined across blocks (a grid-wide combine; the kernel is
  // cooperative). `mapping` then says how the block's threads cover one tile (elementwise).
  bool acrossTiles = false;
  std::map<ir::NodeId, OpSpace> space;  // every op of the group
};

struct ValuePlacement {
  Storage storage = Storage::Register;
  int buffer = -1;          // FusionPlan buffer index for Global / Output / Input
  int64_t sharedOffset = 0; // byte offset in the kernel's shared memory for Shared
  int64_t sharedBytes = 0;
  // Operator-level reuse (AStitch §3.2.1), added by the planner: the value (an Input or a
  // Register op) is read by several stages of one group (so with the same thread mapping), so
  // each thread loads/computes its elements once per tile and keeps them in registers for all
  // of those stages instead of reloading them. Only set across a grid barrier when every block
  // handles a single tile of that group.
  bool registerReuse = false;
  // A Shared value one per row of a warp-per-row group, written by the lanes of the warp that
  // owns the row and read by no other warp (fusion/stitching_scheme.cc): its readers wait at
  // bar.warp.sync, not at a block barrier (Barrier::Warp).
  bool warpLocal = false;
  // Task splitting: a Scratch buffer of splitFactor x (result elements) for the per-block
  // partials of a split reduce, combined across blocks inside the reduce's stage (grid
  // barrier or atomics); for a reduce of an acrossTiles group, maxBlocks x (result elements).
  // -1 when the value is neither.
  int partialsBuffer = -1;
  // Store against recompute (fusion/stitching_scheme.cc), set on a local op the planner chose to
  // materialise (normally Global scratch) because stages of several phases use it: per element,
  // what regenerating it costs in each further phase (the loads of its recompute cone plus its
  // ALU, in DRAM-byte equivalents) against what storing it once and reading it back costs.
  // Later phases read it back; stages of its own phase regenerate it (their operands are in
  // registers or shared memory there). With tooManyOps, every later stage reads it back.
  struct StoreDecision {
    int phases = 0;            // phases whose stages use the value
    double recomputeBytes = 0; // per element and further phase
    double storeBytes = 0;     // per element: one store and (phases - 1) reloads
    bool tooManyOps = false;   // materialised for code size (kMaxRegeneratedOps), not bytes
  };
  std::optional<StoreDecision> stored;
  // Every read of the value is block-local but for its phase: each reader reads it at its own
  // rows, in tiles like its producer's (an input: like every other reader's;
  // stitching_scheme.cc). A Global value with it set could
  // stay on chip across grid barriers (fusion/resident_values.h).
  bool readAtOwnRows = false;
  // Resident (fusion/resident_values.h): a Shared value that stays on chip across grid barriers
  // for the later phases that read it, or an Input that its first reading phase loads into
  // shared memory [sharedOffset, + sharedBytes) for the later ones. Tile t of every phase goes to the same block, as that
  // block's i-th tile (t = blockIdx + i * gridDim), so the block keeps one copy of its tile's
  // elements per tile it handles: KernelPlan::residentTiles slots of sharedBytes /
  // residentTiles bytes, slot i for its i-th tile. `resident` says what it saves.
  struct ResidentDecision {
    int firstPhase = 0, lastPhase = 0; // the phase that writes it and the last that reads it
    int64_t savedBytes = 0;            // global traffic saved: its store and one load per reader
  };
  std::optional<ResidentDecision> resident;
};

/// A stage whose barrierBefore is Grid or LastBlock starts a new phase. All stages of a phase run in the
/// tiles of the phase's first group (the planner guarantees every group of a phase has the
/// same rows and rowsPerTile). A stage that materialises a split reduce (splitFactor > 1)
/// combines its partials across blocks itself, so its kernel is cooperative even without a
/// Grid stage barrier, and every consumer of that reduce sits behind a Grid barrier. The
/// planner also guarantees: a split reduce's stage is alone in its phase and holds only
/// reduces; a phase never mixes row-reduce and column-reduce groups; a Shared value read
/// through a group's loop space comes from a group whose tile dims lead its loop (or trail
/// it, for column tiles), so a tile's loop elements are one contiguous run.
struct Stage {
  int group = 0;                        // index into KernelPlan::groups
  Barrier barrierBefore = Barrier::None;
  std::vector<ir::NodeId> materialized; // values this stage stores (its dominant first when stored)
};

/// Launch configuration after assume-relax-apply (AStitch §4.5). The grid is
/// min(maxBlocks, ceil(tiles / 1)) evaluated at launch time when `tiles` is symbolic; a kernel
/// with a grid barrier must be cooperative and never exceeds one wave (maxBlocks).
struct LaunchPlan {
  int blockSize = 256;
  ir::Dim tiles = 1;         // tiles of the first phase = blocks wanted without a cap
  int64_t maxBlocks = 0;     // cap on the grid (0: none); one wave for cooperative kernels
  int64_t sharedBytes = 0;   // static + dynamic shared memory per block
  int maxRegisters = 0;      // applied as .maxnreg; 0: none
  bool cooperative = false;
  // Blocks per thread-block cluster (sm_90+, fusion/cluster_plan.h); 1: none. A launch uses it
  // when it divides the grid and clusterSize 1 otherwise: the kernel reads its cluster's size at
  // run time and is correct for any.
  int clusterSize = 1;
  // The kernel is correct only in clusters of clusterSize (its rows are shared by a cluster's
  // blocks: RowReduceMapping::clusterBlocks); the grid is then always a multiple of it, and no
  // more clusters than the device keeps resident at once (Device::maxActiveClusters): its
  // tiles follow the grid's size, read at run time.
  bool clusterRequired = false;
  // The grid is as many blocks as the compiled kernel keeps resident on every SM where that is
  // more than maxBlocks (the device tells at load: Device::maxActiveBlocksPerSM), for kernels
  // whose threads keep few bytes in flight per load (phase_planner.cc, fillsSMs). Such a kernel
  // runs any grid: its tiles follow the grid's size, read at run time.
  bool fillSMs = false;
};

// ---- phases: every emission decision (the planner's last step, src/fusion/phase_planner.h) ----
//
// A phase runs one tile loop over its TileSpace. Before the loop a block may copy small inputs
// into shared memory (staged inputs: gamma and beta of a layer norm, read by every row of the
// block's tiles), and at the start of each tile the slices of inputs that are constant over the
// tile's rows (tile slices: softmax's mask row). A phase whose row-reduce group runs as slots
// keeps the values its stages share in registers (operator-level reuse, AStitch §3.2.1) and
// accumulates its across-tiles reduces there too. All of that shared memory lives in one static
// staging arena per kernel: each phase lays its arrays out from offset 0 (the previous phase's
// are dead behind the grid barrier); the arena is as large as the largest phase's. Codegen reads
// these decisions and takes none of its own.

/// How a phase's tile loop cuts its index space: rows of a row reduce (or of a planner
/// schedule), columns of a column reduce, or flat elements. Tile t covers units
/// [t * unitsPerTile, (t + 1) * unitsPerTile), times `split` parts when the phase's reduce is
/// split across blocks.
struct TileSpace {
  enum class Kind : uint8_t { Flat, Rows, Columns };
  Kind kind = Kind::Flat;
  ir::Dim units = 1; // rows, columns or flat elements
  int64_t unitsPerTile = 1;
  int split = 1;
  // Tiles shared by a thread-block cluster's blocks (RowReduceMapping::clusterBlocks): tile
  // t * clusterParts + r is part r of unit tile t, run by the cluster's block of rank r.
  int clusterParts = 1;
  ir::NodeId anchor = -1; // the dominant the space comes from

  /// Whether tile t of this space and of `o` cover the same units, unsplit: the block that
  /// handles one handles the other, as the same one of its tiles (resident values rely on it).
  bool sameTiles(const TileSpace& o) const {
    return kind == o.kind && units == o.units && unitsPerTile == o.unitsPerTile && split == 1 &&
           o.split == 1 && clusterParts == 1 && o.clusterParts == 1;
  }
};

/// A phase whose row-reduce group runs as slots: every stage of the group has each thread visit
/// the same elements of its row (`steps` steps of `mapping.vectorWidth` elements), so `reused`
/// values stay in registers across the group's stages.
struct SlotPlan {
  int group = -1; // index into KernelPlan::groups
  ir::Shape loop; // the group's loop shape: rows (its leading rowDims dims), then the row
  size_t rowDims = 0;
  RowReduceMapping mapping;
  int steps = 0;               // slot steps per thread
  std::set<ir::NodeId> reused; // values kept in registers (constants: folded, no registers)
  int registers = 0;           // per thread, for the reused values and the across accumulators
  // Across-tiles reduces of the phase over the slots' loop that reduce its rows away: each
  // thread accumulates them at its slots, in registers, over every tile it handles (layer norm
  // backward's dgamma and dbeta), and the block combines them once after its tiles, in shared
  // memory at combineOffset (each reduce at its combineOffsets entry from there).
  std::vector<ir::NodeId> across;
  int64_t combineOffset = 0;
  std::vector<int64_t> combineOffsets;
  int64_t combineBytes = 0;
};

/// An input copied into shared memory once per block, before the phase's tiles, and read there
/// by the phase (a row vector every row reads, or a value an earlier phase left in global
/// scratch: Figure 7's power.1 and reduce.2).
struct StagedInput {
  ir::NodeId input = -1;
  int64_t offset = 0; // from PhasePlan::stagedOffset
  // Elements per copy into shared memory: 16 bytes' worth (codegen/shared_staging.h) where the
  // load/store pairs that saves outnumber the second loop's cost to every warp, else 1
  // (stagedCopyVector, phase_planner.h).
  int vector = 1;
  // Computed, not copied: a small value of the kernel (fusion/graph_queries.h,
  // blockComputable) that the block computes from its cone, one element per thread: from the
  // phase's copies of the inputs it reads, behind their barrier, where it reads one; else from
  // global memory, before the copies. Never shared through a cluster.
  bool computed = false;
};

/// An input the slot group reads through a broadcast at the same row coordinates in every row
/// of a tile (softmax's mask [B, 1, 1, 128] in tiles of rows of one batch): the tile's slice is
/// copied to shared memory at the start of each tile and read there by the slot stages.
struct TileSlice {
  ir::NodeId input = -1;
  int64_t offset = 0;            // from PhasePlan::slicesOffset
  ir::Shape shape;               // the slice: the input's dims that follow the row dims
  std::vector<size_t> sliceDims; // input dims in the slice, in order
  std::vector<int64_t> rowDimOf; // per input dim: the loop row dim it reads, or -1
};

/// The type a reduce's partials are kept in shared memory: f16 and bf16 accumulate in f32 there
/// (their compute type), other types as themselves.
inline ir::DType sharedPartialDType(ir::DType t) {
  return ir::isFloat(t) && ir::dtypeBytes(t) < 4 ? ir::DType::f32 : t;
}

/// An across-tiles reduce whose block partials accumulate in shared memory while the block's
/// tiles run (one global row per block, written once after the tile loop).
struct SharedPartials {
  ir::NodeId reduce = -1;
  int64_t offset = 0; // in the staging arena
};

struct PhasePlan {
  size_t firstStage = 0; // stages [firstStage, firstStage + stageCount) of KernelPlan::stages
  size_t stageCount = 0;
  TileSpace space;
  std::vector<size_t> acrossStages; // stages (indices into KernelPlan::stages) with across-tiles
                                    // reduces, combined behind the phase's closing grid barrier
  std::optional<SlotPlan> slots;
  std::vector<SharedPartials> sharedPartials;
  int64_t stagedOffset = 0; // staged inputs' array in the staging arena
  std::vector<StagedInput> staged;
  int64_t slicesOffset = 0; // tile slices' array in the staging arena
  std::vector<TileSlice> slices;
  // Each block takes one contiguous run of the tiles instead of every grid-size-th tile, so that
  // its consecutive tiles mostly read the same slices: a slice is copied only when the tile's
  // differs from the previous tile's (softmax's mask: once per block and batch, not per tile).
  bool contiguousTiles = false;
  int64_t stagingBytes = 0; // of the staging arena this phase uses
  // Shared through the block's thread-block cluster (launch.clusterSize > 1): each block loads
  // its share of the staged inputs and copies the rest from its cluster's blocks, and the
  // block partials of the phase's across-tiles reduces kept in shared memory (slot
  // accumulators, sharedPartials) are combined across the cluster, one row per cluster.
  bool throughCluster = false;
};

struct KernelPlan {
  std::string name;                     // a valid PTX identifier, unique in the FusionPlan
  std::vector<ir::NodeId> ops;          // ops computed here, topological order
  std::vector<ir::NodeId> inputs;       // values read from buffers made before this kernel
  std::vector<ir::NodeId> outputs;      // values written for use after this kernel
  std::vector<Group> groups;
  std::vector<Stage> stages;
  std::map<ir::NodeId, ValuePlacement> placement; // every op and input of the kernel
  LaunchPlan launch;
  // ---- emission (planPhases, after buffers are assigned) ----
  std::vector<PhasePlan> phases;    // in stage order; every stage is in exactly one
  int64_t reduceScratchBytes = 0;   // static shared memory of the reduce emitters' scratch
  int64_t stagingBytes = 0;         // static shared memory of the staging arena (largest phase)
  int registerLimit = 0;            // .maxnreg (0: none, .maxntid bounds the registers)
  int minBlocksPerSM = 0;           // .minnctapersm (0: none): blocks per SM the bound plans for
  // Resident values (ValuePlacement::resident) live in phases that cut residentSpace into the
  // same tiles, of which each block handles at most residentTiles (0: the kernel has none).
  // Codegen checks every such phase against residentSpace and traps past residentTiles.
  int64_t residentTiles = 0;
  TileSpace residentSpace;

  bool hasGridBarrier() const;
  /// Whether the kernel hands its last phases to the last block (a LastBlock stage).
  bool handsOffToLastBlock() const;
  /// Whether `phase` runs in the last block alone (its first stage's barrier is LastBlock).
  bool handedOff(const PhasePlan& phase) const {
    return stages.at(phase.firstStage).barrierBefore == Barrier::LastBlock;
  }
  /// Whether codegen gives it the barrier-state parameter (grid barriers, the handoff's counter).
  bool needsBarrierState() const { return hasGridBarrier() || handsOffToLastBlock(); }
  /// The end of the highest value kept in the dynamic shared array (Shared values and resident
  /// inputs; 0 with none): the dynamic shared bytes codegen allocates.
  int64_t sharedValuesEnd() const;
  const Group& groupOf(ir::NodeId op) const; // throws std::out_of_range if not in the kernel
};

} // namespace weft::fusion
