#pragma once
// The stitched-kernel emitter's state and its parts, shared by the files that define them:
// kernel_emitter.cc (function, phases, stages, elementwise and slot stages, staging) and
// across_tiles_emitter.cc (split and across-tiles reduces: partials, their block and grid
// combines). Private to src/codegen; the interface is kernel_emitter.h.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/elemental_emitter.h"
#include "codegen/kernel_emitter.h"
#include "codegen/reduction_emitter.h"

namespace weft::codegen::detail {

using fusion::Storage;
using fusion::sharedPartialDType;

/// Adds `key = value` for f to the module's nvvm.annotations (kernel, maxntidx, maxnreg).
void annotate(llvm::Module& m, llvm::Function* f, const char* key, int value);

/// A phase's tile space (the plan's) and, inside the tile loop, the current tile.
struct TileSpace : fusion::TileSpace {
  explicit TileSpace(const fusion::TileSpace& planned) : fusion::TileSpace(planned) {}
  llvm::Value* u0 = nullptr;
  llvm::Value* u1 = nullptr;
  llvm::Value* part = nullptr;
  llvm::Value* firstTile = nullptr; // i1: this is the block's first tile of the phase
  llvm::Value* ordinal = nullptr;   // which of the block's tiles this is (resident values' slot)
  llvm::Value* clusterPart = nullptr; // this block's part of a tile shared by its cluster
};

/// The function builder for one KernelPlan.
class KernelEmitter {
public:
  KernelEmitter(llvm::Module& m, const fusion::FusionPlan& plan, int step, bool useLibdevice)
      : m_(m), plan_(plan), kp_(std::get<fusion::KernelPlan>(plan.steps[size_t(step)])),
        step_(step), b_(m.getContext()) {
    k_.module = &m;
    k_.b = &b_;
    k_.plan = &plan;
    k_.kernel = &kp_;
    k_.kernelName = kp_.name;
    k_.graph = &plan.graph;
    k_.useLibdevice = useLibdevice;
    k_.blockSize = kp_.launch.blockSize;
  }

  EmittedKernel run();

private:
  const ir::Node& node(ir::NodeId id) const { return plan_.graph.node(id); }
  const fusion::ValuePlacement& placement(ir::NodeId id) const;
  void validate();
  void declareFunction();
  ir::Dim innerOf(const TileSpace& s, ir::NodeId value) const; // elements per unit
  llvm::Value* localIndex(const TileSpace& s, ir::NodeId value, llvm::Value* flat);
  /// The element of a Shared value's array that holds `flat`: its tile-local index, in the slot
  /// of the block's current tile for a resident value.
  llvm::Value* sharedIndex(const TileSpace& s, ir::NodeId value, llvm::Value* flat);
  void installLoad(ir::NodeId value, const TileSpace* space);
  void store(const TileSpace& s, ir::NodeId value, llvm::Value* flat, llvm::Value* v);
  void emitPhase(const fusion::PhasePlan& phase);
  bool inSlots(const fusion::Group& g) const;
  void emitStagedInputs(const fusion::PhasePlan& phase);
  /// Visits each value v's cone reads once: v's operands, and the operands of every value
  /// computed inline (one without a generator that reads it from memory) below them. `visit`
  /// returns false to go no further below the value it is given.
  void walkCone(ir::NodeId v, const std::function<bool(ir::NodeId)>& visit) const;
  /// The reduces a split stage `st` of group `g` materialises beside its dominant with partials
  /// of their own (split with it: a log-softmax's logsumexp beside its max).
  std::vector<ir::NodeId> splitSiblings(const fusion::Stage& st, const fusion::Group& g) const;
  /// A computed staged value (StagedInput::computed) into its array of the phase's `array`,
  /// from its cone: the kernel inputs in it read from global memory, or from this phase's
  /// block-wide copies (`copied`), never from a tile's slots (there is no tile here).
  void computeIntoShared(const fusion::StagedInput& in, llvm::Value* array,
                         const std::set<ir::NodeId>& copied);
  void installTileSlices(const fusion::PhasePlan& phase);
  void copyTileSlices(const TileSpace& s, const fusion::SlotPlan& sp, bool contiguous);
  /// Loads the current tile of each resident input into its slot (its first phase).
  void loadResidentInputs(const TileSpace& s, const std::vector<ir::NodeId>& inputs);
  /// The staging arena (the kernel's static shared memory for inputs staged per block or tile,
  /// across-tiles partials and the slot combine) at the plan's byte `offset`: every phase lays
  /// its arrays out from 0 (the previous phase's are dead behind the grid barrier).
  llvm::Value* stagingArray(int64_t offset);
  void finishStagingArena(); // gives the arena its final size (the plan's stagingBytes)
  void emitSlotStage(const TileSpace& s, const std::vector<ir::NodeId>& values);
  void emitStage(TileSpace& s, const fusion::Stage& st);
  /// The barrier shared memory needs before the next reads: the block's where the plan asks for
  /// it or a value other warps read was written, bar.warp.sync where only warp-local values were
  /// (or the plan asks for Barrier::Warp), none otherwise.
  void syncShared(fusion::Barrier planned);
  /// Warp-local values one per row (ValuePlacement::warpLocal), in a slot phase: computed by
  /// every lane of the row, stored by its first.
  void emitInRowLanes(const TileSpace& s, const std::vector<ir::NodeId>& values);
  void emitElementwiseStage(TileSpace& s, const fusion::Group& g,
                            const std::vector<ir::NodeId>& values);
  bool tileStartMultipleOf(const TileSpace& s, const ir::Dim& inner, int width) const;
  void emitVectorGroup(const TileSpace& s, const std::vector<ir::NodeId>& values,
                       llvm::Value* flat0, int width);
  /// Sibling row reduces of one operand shape and axes, each materialising only itself, in one
  /// pass over the rows (emitRowReduces). `split`: a split stage's dominant and siblings
  /// (splitSiblings) over the block's part of each row, each into its partials. False where they
  /// cannot share a pass (other shapes or axes, register slots, no row mapping, atomics), and
  /// nothing was emitted.
  bool emitRowReducesInOnePass(TileSpace& s, const fusion::Group& g,
                               const std::vector<ir::NodeId>& reduces, bool split);
  /// The part [begin, end) of the reduced elements block part `s.part` of a split reduce covers.
  std::pair<llvm::Value*, llvm::Value*> splitPart(const TileSpace& s, const fusion::Group& g,
                                                  const ReduceGeometry& geo);
  /// partials[s.part][kept] = value, for `reduce`'s cross-block combine.
  void storePartial(const TileSpace& s, ir::NodeId reduce, llvm::Value* kept, llvm::Value* value);
  /// `splitSibling`: `reduce` is a split stage's sibling of the dominant (splitSiblings),
  /// accumulated into its own partials like the dominant.
  void emitReduceStage(TileSpace& s, const fusion::Group& g, ir::NodeId reduce,
                       const std::vector<ir::NodeId>& materialized,
                       const std::vector<ir::NodeId>& operandStores = {},
                       bool splitSibling = false);
  /// Whether the current phase's plan lists `st` among its across-tiles stages.
  bool isAcrossTiles(const fusion::Stage& st) const;
  std::vector<ir::NodeId> acrossReduces(const fusion::Stage& st) const;
  /// Where an across-tiles reduce's block partials accumulate: shared memory (row 0) or the
  /// global partials buffer (row blockIdx), in `dtype`.
  struct AcrossPartials {
    llvm::Value* base;
    ir::DType dtype;
    llvm::Value* row; // flat index of the block's first partial
  };
  AcrossPartials acrossPartials(ir::NodeId reduce);
  void emitAcrossTilesInit(ir::NodeId reduce);
  void emitSharedPartialsToGlobal();
  /// Combines the cluster's blocks' partials of `reduce` (at `shared` in each block) into the
  /// cluster's row of the partials buffer; behind a cluster barrier.
  void writeClusterPartials(ir::NodeId reduce, llvm::Value* shared);
  void emitAcrossTilesAccumulate(const TileSpace& s, ir::NodeId reduce);
  void emitAcrossTilesCombine(const fusion::Stage& st);
  void emitSlotAccumulate(ir::NodeId reduce);
  void emitSlotAccumulatorsToPartials(const fusion::SlotPlan& sp);
  void emitPartialsCombine(const TileSpace& s, const fusion::Group& g, ir::NodeId reduce,
                           const std::vector<ir::NodeId>& materialized);
  bool isSplit(const fusion::Group& g) const;
  void emitSplitInit();
  void gridBarrier();
  /// Barrier::LastBlock: the block counts itself out of the phases so far and returns, unless
  /// it is the last to, which goes on as block 0 of a grid of one (KernelContext::aloneInGrid).
  void handOffToLastBlock();

  llvm::Module& m_;
  const fusion::FusionPlan& plan_;
  const fusion::KernelPlan& kp_;
  int step_;
  llvm::IRBuilder<> b_;
  KernelContext k_;
  std::unique_ptr<ElementalEmitter> gen_;
  CompiledKernel info_;
  std::set<ir::NodeId> written_; // values materialised by an earlier stage
  std::set<ir::NodeId> phaseWritten_; // ... of the current phase
  bool sharedDirty_ = false;            // shared memory written since the last block barrier
  bool warpDirty_ = false; // warp-local shared values written since the last barrier (warpLocal)
  std::vector<ir::NodeId> phaseShared_; // shared values written by the current phase
  bool untiledLoop_ = false; // emitting values outside the phase's tiles: no shared reads
  int64_t dynamicShared_ = 0;
  bool needsBarrierState_ = false;
  const fusion::PhasePlan* phase_ = nullptr; // the phase being emitted
  // the current phase's slot plan, and the current tile's slots, when it runs as slots
  const fusion::SlotPlan* slotPhase_ = nullptr;
  std::optional<RowSlots> slots_;
  int slotGroup_ = -1;
  /// A tile slice of the current phase (fusion::TileSlice) and its shared-memory array.
  struct TileSlice {
    const fusion::TileSlice* plan = nullptr;
    llvm::Value* shared = nullptr;
    // In contiguous tiles: the input element the copied slice starts at (-1: none yet).
    llvm::AllocaInst* copiedFrom = nullptr;
  };
  std::vector<TileSlice> tileSlices_;
  bool slotsReading_ = false; // slot stages are being emitted: tile slices may be read
  // per across reduce of the slot phase: one accumulator per slot step and vector lane
  std::map<ir::NodeId, std::vector<llvm::AllocaInst*>> slotAccumulators_;
  // across-tiles reduces of the current phase whose partials have one row per cluster
  std::set<ir::NodeId> clusterPartials_;
  // across-tiles reduces of the current phase whose block partials are in shared memory
  std::map<ir::NodeId, llvm::Value*> sharedPartials_;
  llvm::GlobalVariable* stagingArena_ = nullptr; // placeholder until finishStagingArena
};

} // namespace weft::codegen::detail
