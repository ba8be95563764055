#include "codegen/kernel_emitter.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Metadata.h>
#include <optional>
#include <set>

#include "codegen/elemental_emitter.h"
#include "codegen/grid_barrier.h"
#include "codegen/reduction_emitter.h"
#include "fusion/launch_config.h"
#include "weft/error.h"

namespace weft::codegen {

using fusion::Storage;

namespace {

constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();

void annotate(llvm::Module& m, llvm::Function* f, const char* key, int value) {
  llvm::LLVMContext& c = m.getContext();
  llvm::NamedMDNode* md = m.getOrInsertNamedMetadata("nvvm.annotations");
  llvm::Metadata* ops[] = {
      llvm::ValueAsMetadata::get(f), llvm::MDString::get(c, key),
      llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), value))};
  md->addOperand(llvm::MDNode::get(c, ops));
}

/// Whether `value` is computed from `source` (through any chain of operands).
bool readsValue(const ir::Graph& g, ir::NodeId value, ir::NodeId source) {
  std::vector<ir::NodeId> work = {value};
  std::set<ir::NodeId> seen;
  while (!work.empty()) {
    ir::NodeId v = work.back();
    work.pop_back();
    if (v == source) return true;
    if (!seen.insert(v).second) continue;
    for (ir::NodeId o : g.node(v).operands)
      work.push_back(o);
  }
  return false;
}

/// The type a reduce's partial results are kept in shared memory: f16 and bf16 accumulate in
/// f32 there (their compute type), other types as themselves.
ir::DType partialType(ir::DType t) {
  return ir::isFloat(t) && ir::dtypeBytes(t) < 4 ? ir::DType::f32 : t;
}

/// Bytes of shared memory for one partial of each of a reduce's results, 16-byte aligned.
int64_t partialBytes(const ir::Node& reduce) {
  int64_t bytes = ir::numElements(reduce.type.shape).size() *
                  std::max(4, ir::dtypeBytes(partialType(reduce.type.dtype)));
  return (bytes + 15) / 16 * 16;
}

/// How a phase's tile loop cuts its index space.
struct TileSpace {
  enum class Kind { Flat, Rows, Columns };
  Kind kind = Kind::Flat;
  ir::Dim units = 1; // rows, columns or flat elements
  int64_t unitsPerTile = 1;
  int split = 1;
  ir::NodeId anchor = -1; // the dominant the space comes from
  // the current tile, valid inside the tile loop
  llvm::Value* u0 = nullptr;
  llvm::Value* u1 = nullptr;
  llvm::Value* part = nullptr;
  llvm::Value* firstTile = nullptr; // i1: this is the block's first tile of the phase
};

/// A phase whose row-reduce group runs as slots (RowSlots): every stage of the group has each
/// thread visit the same elements of its row, so `reused` values stay in registers across
/// the group's stages (operator-level reuse).
struct SlotPhase {
  int group = -1;
  ir::Shape loop;
  size_t rowDims = 0;
  fusion::RowReduceMapping mapping;
  std::set<ir::NodeId> reused;
  int registers = 0; // per thread, for the reused values and the across accumulators
  // acrossTiles reduces of the phase over the slots' loop that reduce its rows: each thread
  // accumulates them at its slots, in registers, over every tile it handles (layer norm
  // backward's dgamma and dbeta in the row reduce's slots), and its block combines them once.
  std::vector<ir::NodeId> across;
};

/// Registers per thread assumed for everything but reused values (the planner's assumption):
/// the register budget for reused values is what a thread may have beyond it.
constexpr int kBaseRegisters = 32;

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
  TileSpace spaceOf(const std::vector<const fusion::Stage*>& phase);
  ir::Dim innerOf(const TileSpace& s, ir::NodeId value) const; // elements per unit
  llvm::Value* localIndex(const TileSpace& s, ir::NodeId value, llvm::Value* flat);
  void installLoad(ir::NodeId value, const TileSpace* space);
  void store(const TileSpace& s, ir::NodeId value, llvm::Value* flat, llvm::Value* v);
  void emitPhase(const std::vector<const fusion::Stage*>& phase);
  std::optional<SlotPhase> slotPhaseOf(const TileSpace& s,
                                       const std::vector<const fusion::Stage*>& phase) const;
  /// Chooses which of `candidates` (in priority order) the slot phase keeps in registers
  /// (adds them to sp.reused) within `budget` registers per thread, counting a kept value only
  /// over the stages it is live in; returns the most registers the kept values take at once.
  int keptRegisters(const std::vector<const fusion::Stage*>& phase, SlotPhase& sp,
                    const std::vector<ir::NodeId>& candidates,
                    const std::function<int(ir::NodeId)>& cost, int budget) const;
  bool inSlots(const fusion::Group& g) const;
  std::vector<ir::NodeId> stageBroadcasts(const TileSpace& s, const std::vector<int>& groups,
                                          int64_t maxElements, bool outerOnly = false);
  void planTileSlices(const TileSpace& s, const SlotPhase& sp);
  void copyTileSlices(const TileSpace& s, const SlotPhase& sp);
  /// `bytes` of static shared memory for the current phase (inputs staged once per block or
  /// tile, across-tiles partials, the slot combine): a 16-byte aligned pointer into the
  /// kernel's staging arena, whose phase part is free again in the next phase.
  llvm::Value* newStagingArray(int64_t bytes);
  void finishStagingArena(); // gives the arena its final size (the largest phase's)
  /// Shared bytes per block in use now: the plan's, reduce scratch, this phase's staging.
  int64_t sharedInUse() const { return sharedUsed_ + phaseStaged_; }
  /// Bytes the current phase may still stage: within static shared memory's 48 KB (with the
  /// reduce scratch) and the device's per-block limit.
  int64_t stagingRoom() const {
    constexpr int64_t kMaxStaticShared = 48 * 1024;
    return std::min(kMaxStaticShared - reduceScratch_ - phaseStaged_,
                    plan_.device.sharedMemoryPerBlock - sharedInUse());
  }
  /// Elements of a value of `shape` (spread evenly over the phase's units) that one block
  /// visits in phase `s`.
  int64_t elementsPerBlock(const TileSpace& s, const ir::Shape& shape) const;
  /// Whether each block of the kernel handles at least two tiles of phase `s`.
  bool manyTilesPerBlock(const TileSpace& s) const;
  int registersPerThreadCap() const; // the most registers a thread of a full block can have
  /// Whether `moreShared` bytes of shared memory per block beyond what is used so far keep a
  /// cooperative launch's planned blocks resident in one wave (always true otherwise).
  bool keepsGridResident(int64_t moreShared) const;
  void emitSlotStage(const TileSpace& s, const std::vector<ir::NodeId>& values);
  void emitStage(TileSpace& s, const fusion::Stage& st);
  void emitElementwiseStage(TileSpace& s, const fusion::Group& g,
                            const std::vector<ir::NodeId>& values);
  bool tileStartMultipleOf(const TileSpace& s, const ir::Dim& inner, int width) const;
  void emitVectorGroup(const TileSpace& s, const std::vector<ir::NodeId>& values,
                       llvm::Value* flat0, int width);
  void emitReduceStage(TileSpace& s, const fusion::Group& g, ir::NodeId reduce,
                       const std::vector<ir::NodeId>& materialized);
  bool isAcrossTiles(const fusion::Group& g, const fusion::Stage& st) const;
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
  void emitAcrossTilesAccumulate(const TileSpace& s, ir::NodeId reduce);
  void emitAcrossTilesCombine(const fusion::Stage& st);
  bool accumulatesInSlots(ir::NodeId reduce, const SlotPhase& sp) const;
  void emitSlotAccumulate(ir::NodeId reduce);
  /// Bytes of shared memory the block combine of sp.across needs, and each reduce's offset.
  int64_t slotCombineBytes(const SlotPhase& sp, std::vector<int64_t>* offsets = nullptr) const;
  void emitSlotAccumulatorsToPartials(const SlotPhase& sp, llvm::Value* array);
  void emitPartialsCombine(const TileSpace& s, const fusion::Group& g, ir::NodeId reduce,
                           const std::vector<ir::NodeId>& materialized);
  bool isSplit(const fusion::Group& g) const;
  void emitSplitInit();
  void gridBarrier();

  llvm::Module& m_;
  const fusion::FusionPlan& plan_;
  const fusion::KernelPlan& kp_;
  int step_;
  llvm::IRBuilder<> b_;
  KernelContext k_;
  std::unique_ptr<ElementalEmitter> gen_;
  CompiledKernel info_;
  std::set<ir::NodeId> written_; // values materialised by an earlier stage
  std::set<ir::NodeId> sharedThisPhase_;
  bool sharedDirty_ = false;            // shared memory written since the last block barrier
  std::vector<ir::NodeId> phaseShared_; // shared values written by the current phase
  int64_t dynamicShared_ = 0;
  bool needsBarrierState_ = false;
  // the current phase's SlotPhase, and the current tile's slots, when it runs as slots
  std::optional<SlotPhase> slotPhase_;
  std::optional<RowSlots> slots_;
  int slotGroup_ = -1;
  int slotRegisters_ = 0;  // most registers per thread any phase keeps reused values in
  int64_t sharedUsed_ = 0; // shared bytes per block: the plan's and the reduce scratch
  int64_t reduceScratch_ = 0; // static shared bytes of the reduce emitters' scratch
  /// An input the slot group reads, through a broadcast, at the same row coordinates in every
  /// row of a tile (softmax's mask [B, 1, 1, 128] in tiles of rows of one batch): the tile's
  /// slice is copied to shared memory at the start of each tile and read there by the slots.
  struct TileSlice {
    ir::NodeId input = -1;
    llvm::Value* shared = nullptr;
    ir::Shape shape;               // the slice: the input's dims that follow the row length
    std::vector<size_t> sliceDims; // input dims in the slice, in order
    std::vector<int64_t> rowDimOf; // per input dim: the loop row dim it reads, or -1
  };
  std::vector<TileSlice> tileSlices_;
  bool slotsReading_ = false; // slot stages are being emitted: tile slices may be read
  // per across reduce of the slot phase: one accumulator per slot step and vector lane
  std::map<ir::NodeId, std::vector<llvm::AllocaInst*>> slotAccumulators_;
  // across-tiles reduces of the current phase whose block partials are in shared memory
  std::map<ir::NodeId, llvm::Value*> sharedPartials_;
  llvm::GlobalVariable* stagingArena_ = nullptr; // placeholder until finishStagingArena
  int64_t phaseStaged_ = 0;                      // bytes of the arena the current phase uses
  int64_t stagingBytes_ = 0;                     // the most any phase used
};

const fusion::ValuePlacement& KernelEmitter::placement(ir::NodeId id) const {
  auto it = kp_.placement.find(id);
  if (it == kp_.placement.end()) k_.fail(id, "has no placement in the kernel plan");
  return it->second;
}

bool KernelEmitter::isSplit(const fusion::Group& g) const {
  if (const auto* r = std::get_if<fusion::RowReduceMapping>(&g.mapping)) return r->splitFactor > 1;
  if (const auto* c = std::get_if<fusion::ColumnReduceMapping>(&g.mapping))
    return c->splitFactor > 1;
  return false;
}

void KernelEmitter::validate() {
  const DeviceSpec& d = plan_.device;
  const fusion::LaunchPlan& l = kp_.launch;
  ir::NodeId first = kp_.stages.empty() ? -1 : kp_.groups.at(size_t(kp_.stages[0].group)).dominant;
  if (kp_.stages.empty()) throw Error(k_.where(-1) + ": the plan has no stages");
  if (l.blockSize < 1 || l.blockSize > d.maxThreadsPerBlock)
    k_.fail(first, fmt::format("block size {} is outside [1, {}] for {}", l.blockSize,
                               d.maxThreadsPerBlock, d.name));
  if (l.tiles.isStatic()) {
    int64_t grid = l.maxBlocks > 0 ? std::min(l.tiles.size(), l.maxBlocks) : l.tiles.size();
    if (grid > kMaxGrid)
      k_.fail(first, fmt::format(
                         "the mapping needs a grid of {} blocks but a launch holds at most 2^31-1; "
                         "use more elements per thread or cap the grid (maxBlocks)",
                         grid));
  }
  for (ir::NodeId op : kp_.ops) {
    const ir::Node& n = node(op);
    if (n.kind == ir::OpKind::Dot || n.kind == ir::OpKind::Parameter)
      k_.fail(op, "cannot be computed inside a stitched kernel (parameters are inputs; dots are "
                  "library calls)");
  }
  for (const fusion::Group& g : kp_.groups) {
    if (!isSplit(g)) continue;
    needsBarrierState_ = true;
    if (!l.cooperative)
      k_.fail(
          g.dominant,
          "a split reduce combines its partials across blocks behind a grid barrier, so the kernel "
          "must be cooperative");
    if (placement(g.dominant).partialsBuffer >= 0)
      continue; // partials + grid barrier: any kind and dtype
    const ir::Node& r = node(g.dominant);
    ir::DType t = r.type.dtype;
    auto kind =
        r.kind == ir::OpKind::Reduce ? r.attr<ir::ReduceAttrs>().kind : ir::ReduceKind::Prod;
    bool typeOk =
        t == ir::DType::f32 || t == ir::DType::f64 || t == ir::DType::i32 || t == ir::DType::i64;
    // Float atomic max/min follow maxnum (NaN is dropped), not weft's NaN-propagating max.
    bool kindOk = kind == ir::ReduceKind::Sum ||
                  ((kind == ir::ReduceKind::Max || kind == ir::ReduceKind::Min) &&
                   !ir::isFloat(t));
    if (r.kind != ir::OpKind::Reduce || !typeOk || !kindOk)
      k_.fail(
          g.dominant,
          fmt::format("a split reduce combines partials with atomics, which exist for sum of f32, "
                      "f64, i32 and i64 and max/min of i32 and i64 only, not {} of {}; use "
                      "splitFactor 1 or a partials buffer",
                      r.kind == ir::OpKind::Reduce ? ir::reduceKindName(kind) : "a non-reduce",
                      ir::dtypeName(t)));
    Storage s = placement(g.dominant).storage;
    if (s != Storage::Global && s != Storage::Output)
      k_.fail(g.dominant,
              "a split reduce without a partials buffer must be placed in global or output storage "
              "(its partials meet there through atomics)");
  }
  for (const fusion::Group& g : kp_.groups) {
    if (!g.acrossTiles) continue;
    needsBarrierState_ = true;
    if (node(g.dominant).kind != ir::OpKind::Reduce || placement(g.dominant).partialsBuffer < 0)
      k_.fail(g.dominant, "an across-tiles group needs a reduce dominant with a partials buffer");
    if (!l.cooperative)
      k_.fail(
          g.dominant,
          "an across-tiles reduce combines per-block partials behind a grid barrier, so the kernel "
          "must be cooperative");
  }
  if (kp_.hasGridBarrier() && !l.cooperative)
    k_.fail(first, "the plan has a grid barrier but the launch is not cooperative");
}

void KernelEmitter::declareFunction() {
  llvm::LLVMContext& c = m_.getContext();
  // Buffers (by buffer index), then symbols (sorted), then the barrier state.
  std::map<int, bool> buffers; // buffer → read-only in this kernel
  for (const auto& [id, p] : kp_.placement) {
    if (p.storage == Storage::Register || p.storage == Storage::Shared) continue;
    if (p.buffer < 0)
      k_.fail(id, fmt::format("is placed in {} storage without a buffer", int(p.storage)));
    bool readOnly = p.storage == Storage::Input;
    auto [it, inserted] = buffers.emplace(p.buffer, readOnly);
    if (!inserted) it->second = it->second && readOnly;
  }
  for (const auto& [id, p] : kp_.placement)
    if (p.partialsBuffer >= 0) buffers[p.partialsBuffer] = false;
  std::set<std::string> symbols;
  int64_t largest = 0;
  auto noteShape = [&](const ir::Shape& s) {
    for (const std::string& sym : ir::symbolsOf(s))
      symbols.insert(sym);
    ir::Dim e = ir::numElements(s);
    if (e.isStatic()) largest = std::max(largest, e.size());
  };
  for (const auto& [id, p] : kp_.placement)
    noteShape(node(id).type.shape);
  for (ir::NodeId op : kp_.ops) {
    noteShape(node(op).type.shape);
    for (ir::NodeId o : node(op).operands)
      noteShape(node(o).type.shape);
  }
  k_.indexTy = symbols.empty() && largest < (int64_t(1) << 30) ? llvm::Type::getInt32Ty(c)
                                                               : llvm::Type::getInt64Ty(c);
  needsBarrierState_ = needsBarrierState_ || kp_.hasGridBarrier();

  std::vector<llvm::Type*> types;
  llvm::Type* gptr = llvm::PointerType::get(c, 1);
  for (const auto& [buf, ro] : buffers) {
    (void)ro;
    types.push_back(gptr);
    info_.params.push_back({KernelParam::Kind::Buffer, buf, ""});
  }
  for (const std::string& s : symbols) {
    types.push_back(llvm::Type::getInt64Ty(c));
    info_.params.push_back({KernelParam::Kind::Symbol, -1, s});
  }
  if (needsBarrierState_) {
    types.push_back(gptr);
    info_.params.push_back({KernelParam::Kind::BarrierState, -1, ""});
  }
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(c), types, false);
  if (m_.getFunction(kp_.name))
    throw Error(k_.where(-1) + ": two kernels of the plan have this name");
  k_.fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, kp_.name, m_);
  unsigned i = 0;
  for (const auto& [buf, ro] : buffers) {
    llvm::Argument* a = k_.fn->getArg(i++);
    a->setName(fmt::format("b{}", buf));
    a->addAttr(llvm::Attribute::getWithAlignment(c, llvm::Align(16)));
    if (ro) {
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::ReadOnly);
    }
    k_.bufferArg[buf] = a;
  }
  for (const std::string& s : symbols) {
    llvm::Argument* a = k_.fn->getArg(i++);
    a->setName(s);
    k_.symbolArg[s] = a;
  }
  if (needsBarrierState_) {
    k_.barrierState = k_.fn->getArg(i++);
    k_.barrierState->setName("barrier_state");
  }
  annotate(m_, k_.fn, "kernel", 1);
  annotate(m_, k_.fn, "maxntidx", kp_.launch.blockSize);

  // Shared memory: the plan's values in one dynamic array, reduction scratch static.
  for (const auto& [id, p] : kp_.placement)
    if (p.storage == Storage::Shared) {
      if (p.sharedOffset < 0 || p.sharedOffset % ir::dtypeBytes(node(id).type.dtype) != 0)
        k_.fail(id, fmt::format("shared offset {} is not aligned for its dtype", p.sharedOffset));
      dynamicShared_ = std::max(dynamicShared_, p.sharedOffset + p.sharedBytes);
    }
  if (dynamicShared_ > 0) {
    k_.dynamicShared = m_.getNamedGlobal("weft_dynamic_shared");
    if (!k_.dynamicShared) {
      auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(c), 0);
      k_.dynamicShared = new llvm::GlobalVariable(m_, at, false, llvm::GlobalValue::ExternalLinkage,
                                                  nullptr, "weft_dynamic_shared", nullptr,
                                                  llvm::GlobalValue::NotThreadLocal, 3);
      k_.dynamicShared->setAlignment(llvm::Align(16));
    }
  }
  int64_t scratch = 0;
  for (const fusion::Group& g : kp_.groups)
    scratch = std::max(scratch, reduceScratchBytes(g.mapping, kp_.launch.blockSize));
  if (scratch > 0) {
    auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(c), uint64_t(scratch));
    k_.reduceScratch = new llvm::GlobalVariable(
        m_, at, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(at),
        kp_.name + "_reduce_scratch", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    k_.reduceScratch->setAlignment(llvm::Align(16));
  }
  sharedUsed_ = dynamicShared_ + scratch;
  reduceScratch_ = scratch;
  const DeviceSpec& d = plan_.device;
  if (dynamicShared_ + scratch > d.sharedMemoryPerBlock)
    k_.fail(
        kp_.groups.at(size_t(kp_.stages[0].group)).dominant,
        fmt::format(
            "needs {} B of shared memory per block ({} B planned + {} B reduction scratch) but {} "
            "allows {} B",
            dynamicShared_ + scratch, dynamicShared_, scratch, d.name, d.sharedMemoryPerBlock));
}

TileSpace KernelEmitter::spaceOf(const std::vector<const fusion::Stage*>& phase) {
  TileSpace s;
  for (const fusion::Stage* st : phase) {
    const fusion::Group& g = kp_.groups.at(size_t(st->group));
    if (const auto* r = std::get_if<fusion::RowReduceMapping>(&g.mapping)) {
      if (node(g.dominant).kind != ir::OpKind::Reduce)
        k_.fail(g.dominant, "has a row-reduce mapping but is not a reduce");
      s.kind = TileSpace::Kind::Rows;
      s.units = reduceGeometry(plan_.graph, node(g.dominant)).kept;
      s.unitsPerTile = std::max(1, r->rowsPerBlock);
      s.split = std::max(1, r->splitFactor);
      s.anchor = g.dominant;
      break;
    }
    if (const auto* c = std::get_if<fusion::ColumnReduceMapping>(&g.mapping)) {
      if (node(g.dominant).kind != ir::OpKind::Reduce)
        k_.fail(g.dominant, "has a column-reduce mapping but is not a reduce");
      s.kind = TileSpace::Kind::Columns;
      s.units = reduceGeometry(plan_.graph, node(g.dominant)).kept;
      s.unitsPerTile = c->tileColumns;
      s.split = std::max(1, c->splitFactor);
      s.anchor = g.dominant;
      break;
    }
  }
  if (s.anchor < 0) {
    const fusion::Group& g = kp_.groups.at(size_t(phase.front()->group));
    const auto& e = std::get<fusion::ElementwiseMapping>(g.mapping);
    s.kind = TileSpace::Kind::Flat;
    s.units = ir::numElements(node(g.dominant).type.shape);
    s.unitsPerTile = int64_t(kp_.launch.blockSize) * std::max(1, e.elementsPerThread);
    s.anchor = g.dominant;
  }
  // A planner schedule (Group::rows / rowsPerTile) fixes the phase's tiles: its first group's.
  const fusion::Group& first = kp_.groups.at(size_t(phase.front()->group));
  if (!first.loopShape.empty()) {
    s.units = first.rows;
    s.unitsPerTile = std::max<int64_t>(1, first.rowsPerTile);
    if (s.kind == TileSpace::Kind::Flat) s.kind = TileSpace::Kind::Rows;
  }
  const auto& m0 = phase.front()->materialized;
  bool splitHere = kp_.groups.at(size_t(phase.front()->group)).dominant == s.anchor &&
                   std::find(m0.begin(), m0.end(), s.anchor) != m0.end() &&
                   !written_.count(s.anchor);
  if (!splitHere) s.split = 1;
  if (s.split > 1 && phase.size() > 1)
    k_.fail(s.anchor, "a split reduce must be the only stage of its phase");
  return s;
}

ir::Dim KernelEmitter::innerOf(const TileSpace& s, ir::NodeId value) const {
  ir::Dim e = ir::numElements(node(value).type.shape);
  if (e == s.units) return 1;
  auto q = e.dividedBy(s.units);
  if (!q)
    k_.fail(value,
            fmt::format("has {} elements, which the phase's index space of {} {} does not divide; "
                        "it cannot share the tile loop of {}",
                        e.str(), s.units.str(),
                        s.kind == TileSpace::Kind::Rows      ? "rows"
                        : s.kind == TileSpace::Kind::Columns ? "columns"
                                                             : "elements",
                        ir::describe(node(s.anchor))));
  if (s.kind == TileSpace::Kind::Flat)
    k_.fail(value, fmt::format("has {} elements but the phase's elementwise space has {}", e.str(),
                               s.units.str()));
  return *q;
}

llvm::Value* KernelEmitter::localIndex(const TileSpace& s, ir::NodeId value, llvm::Value* flat) {
  llvm::IRBuilder<>& b = b_;
  ir::Dim inner = innerOf(s, value);
  switch (s.kind) {
  case TileSpace::Kind::Flat:
    return b.CreateSub(flat, s.u0);
  case TileSpace::Kind::Rows:
    return b.CreateSub(flat, b.CreateMul(s.u0, k_.dim(inner)));
  case TileSpace::Kind::Columns: {
    llvm::Value* units = k_.dim(s.units);
    llvm::Value* r = b.CreateUDiv(flat, units);
    llvm::Value* c = b.CreateURem(flat, units);
    return b.CreateAdd(b.CreateMul(r, k_.index(s.unitsPerTile)), b.CreateSub(c, s.u0));
  }
  }
  return nullptr;
}

void KernelEmitter::installLoad(ir::NodeId value, const TileSpace* space) {
  const fusion::ValuePlacement& p = placement(value);
  const ir::Node& n = node(value);
  if (p.storage == Storage::Shared) {
    gen_->setGenerator(value, [this, value, space, off = p.sharedOffset, &n](const Index& idx) {
      if (!space)
        k_.fail(value,
                "is read from shared memory outside the phase that wrote it; use global storage");
      llvm::Value* flat = linearize(k_, n.type.shape, idx);
      return k_.loadElement(k_.sharedPointer(off), n.type.dtype, localIndex(*space, value, flat));
    });
    return;
  }
  llvm::Value* base = k_.bufferPointer(p.buffer, value);
  gen_->setGenerator(value, [this, base, &n](const Index& idx) {
    return k_.loadTensorElement(base, n.type.dtype, n.type.shape, idx);
  });
}

void KernelEmitter::store(const TileSpace& s, ir::NodeId value, llvm::Value* flat, llvm::Value* v) {
  const fusion::ValuePlacement& p = placement(value);
  const ir::Node& n = node(value);
  switch (p.storage) {
  case Storage::Register:
    return;
  case Storage::Input:
    k_.fail(value, "is an input of the kernel but a stage materialises it");
  case Storage::Shared: {
    k_.storeElement(k_.sharedPointer(p.sharedOffset), n.type.dtype, localIndex(s, value, flat), v);
    sharedDirty_ = true;
    return;
  }
  case Storage::Global:
  case Storage::Output:
    k_.storeElement(k_.bufferPointer(p.buffer, value), n.type.dtype, flat, v);
    return;
  }
}

void KernelEmitter::gridBarrier() {
  llvm::Function* f = getOrEmitGridBarrier(m_);
  b_.CreateCall(f, {k_.barrierState, k_.gridSize()});
}

void KernelEmitter::emitSplitInit() {
  // Split reduces meet in their buffer through atomics: fill it with the identity first.
  bool any = false;
  for (const fusion::Group& g : kp_.groups) {
    if (!isSplit(g) || placement(g.dominant).partialsBuffer >= 0) continue;
    any = true;
    const ir::Node& r = node(g.dominant);
    llvm::Value* base = k_.bufferPointer(placement(g.dominant).buffer, g.dominant);
    llvm::Value* start = b_.CreateAdd(
        b_.CreateMul(k_.toIndex(k_.blockId()), k_.index(k_.blockSize)), k_.toIndex(k_.threadId()));
    llvm::Value* stride = b_.CreateMul(k_.toIndex(k_.gridSize()), k_.index(k_.blockSize));
    k_.loop(r.name + ".init", start, k_.elements(r.type.shape), stride, [&](llvm::Value* i) {
      k_.storeElement(base, r.type.dtype, i,
                      reductionIdentity(k_.ctx(), r.attr<ir::ReduceAttrs>().kind, r.type.dtype));
    });
  }
  if (any) gridBarrier();
}

void KernelEmitter::emitElementwiseStage(TileSpace& s, const fusion::Group& g,
                                         const std::vector<ir::NodeId>& values) {
  llvm::IRBuilder<>& b = b_;
  int vector = 1;
  if (const auto* e = std::get_if<fusion::ElementwiseMapping>(&g.mapping))
    vector = std::max(1, e->vectorWidth);
  // In a slot phase, the group's values over its loop visit the slots (in registers).
  std::vector<ir::NodeId> inLoop, others;
  for (ir::NodeId v : values)
    (inSlots(g) && node(v).type.shape == slotPhase_->loop ? inLoop : others).push_back(v);
  if (!inLoop.empty()) emitSlotStage(s, inLoop);
  // One loop per distinct element count (usually one: the group's dominant's).
  std::map<ir::Dim, std::vector<ir::NodeId>> byCount;
  for (ir::NodeId v : others)
    byCount[ir::numElements(node(v).type.shape)].push_back(v);
  for (const auto& [count, vs] : byCount) {
    bool fits = count == s.units ||
                (s.kind != TileSpace::Kind::Flat && count.dividedBy(s.units).has_value());
    bool inMemory = std::all_of(vs.begin(), vs.end(), [&](ir::NodeId v) {
      Storage st = placement(v).storage;
      return st == Storage::Global || st == Storage::Output;
    });
    if (!fits && inMemory && !phaseShared_.empty())
      k_.fail(vs.front(),
              fmt::format(
                  "has {} elements, outside the phase's {} rows, and its phase keeps values in "
                  "shared memory that it may read across tiles; a reduce over the tiles must be "
                  "an acrossTiles group with a partials buffer",
                  count.str(), s.units.str()));
    if (!fits && inMemory) {
      // Not in the phase's index space (e.g. a projection of it): computed once per phase by
      // a grid-stride loop over its own elements, in each block's first tile; readers see it
      // after the next grid barrier.
      k_.ifThen(s.firstTile, [&] {
        llvm::Value* start =
            b.CreateAdd(b.CreateMul(k_.toIndex(k_.blockId()), k_.index(k_.blockSize)),
                        k_.toIndex(k_.threadId()));
        llvm::Value* stride = b.CreateMul(k_.toIndex(k_.gridSize()), k_.index(k_.blockSize));
        k_.loop("untiled", start, k_.dim(count), stride, [&](llvm::Value* flat) {
          gen_->clearCache();
          for (ir::NodeId v : vs)
            store(s, v, flat, gen_->emit(v, delinearize(k_, node(v).type.shape, flat)));
        });
        gen_->clearCache();
      });
      continue;
    }
    ir::Dim inner = innerOf(s, vs.front());
    llvm::Value* width = b.CreateSub(s.u1, s.u0);
    llvm::Value* localCount = b.CreateMul(width, k_.dim(inner)); // Flat/Rows: width * inner
    llvm::Value* base = s.kind == TileSpace::Kind::Rows ? b.CreateMul(s.u0, k_.dim(inner)) : s.u0;
    auto flatOf = [&](llvm::Value* l) -> llvm::Value* {
      if (s.kind != TileSpace::Kind::Columns) return b.CreateAdd(base, l);
      llvm::Value* r = b.CreateUDiv(l, width);
      llvm::Value* c = b.CreateURem(l, width);
      return b.CreateAdd(b.CreateMul(r, k_.dim(s.units)), b.CreateAdd(s.u0, c));
    };
    auto element = [&](llvm::Value* l) {
      gen_->clearCache();
      llvm::Value* flat = flatOf(l);
      for (ir::NodeId v : vs) {
        const ir::Shape& shape = node(v).type.shape;
        store(s, v, flat, gen_->emit(v, delinearize(k_, shape, flat)));
      }
    };
    int vw = s.kind == TileSpace::Kind::Columns ? 1 : vector;
    llvm::Value* tid = k_.toIndex(k_.threadId());
    llvm::Value* start = b.CreateMul(tid, k_.index(vw));
    llvm::Value* stride = k_.index(int64_t(k_.blockSize) * vw);
    // A tile of at most one step per thread gets an `if`, not a loop: fewer live induction
    // variables (64-bit ones with symbolic sizes) for ptxas to keep.
    bool oneStep = inner.isStatic() && s.kind != TileSpace::Kind::Columns &&
                   s.unitsPerTile * inner.size() <= int64_t(k_.blockSize) * vw;
    auto steps = [&](const std::string& name, llvm::Value* end,
                     const std::function<void(llvm::Value*)>& body) {
      if (oneStep)
        k_.ifThen(b.CreateICmpSLT(start, end), [&] { body(start); });
      else
        k_.loop(name, start, end, stride, body);
    };
    if (vw == 1) {
      steps("ew", localCount, element);
    } else {
      bool grouped = tileStartMultipleOf(s, inner, vw);
      steps("ewv", b.CreateSub(localCount, k_.index(vw - 1)), [&](llvm::Value* l) {
        if (!grouped) {
          for (int j = 0; j < vw; ++j)
            element(b.CreateAdd(l, k_.index(j)));
          return;
        }
        emitVectorGroup(s, vs, flatOf(l), vw);
      });
      // The last localCount % vw (< vw <= blockSize) elements: one step of the first threads.
      llvm::Value* tail =
          b.CreateAdd(b.CreateMul(b.CreateSDiv(localCount, k_.index(vw)), k_.index(vw)), tid);
      k_.ifThen(b.CreateICmpSLT(tail, localCount), [&] { element(tail); });
    }
    gen_->clearCache();
  }
}

bool KernelEmitter::tileStartMultipleOf(const TileSpace& s, const ir::Dim& inner, int width) const {
  // A tile starts at flat u0 * inner (u0 = tile * unitsPerTile): a multiple of the width when
  // unitsPerTile times inner's static factor is (symbols are whole numbers).
  if ((width & (width - 1)) != 0) return false;
  int64_t factor = s.kind == TileSpace::Kind::Flat ? 1 : inner.factor();
  return (s.unitsPerTile * factor) % width == 0;
}

void KernelEmitter::emitVectorGroup(const TileSpace& s, const std::vector<ir::NodeId>& values,
                                    llvm::Value* flat0, int width) {
  // Elements flat0 .. flat0 + width - 1 (flat0 a multiple of width) of every value: all lanes
  // are generated first (their loads share vector loads), then stored, with vector stores where
  // the value lives in global memory.
  k_.beginVectorGroup(width);
  std::map<ir::Shape, std::vector<Index>> lanesOf;
  for (ir::NodeId v : values) {
    const ir::Shape& shape = node(v).type.shape;
    if (!lanesOf.count(shape)) lanesOf[shape] = k_.vectorLaneIndices(shape, flat0);
  }
  std::map<ir::NodeId, std::vector<llvm::Value*>> results;
  for (int j = 0; j < width; ++j) {
    gen_->clearCache();
    for (ir::NodeId v : values)
      results[v].push_back(gen_->emit(v, lanesOf[node(v).type.shape][size_t(j)]));
  }
  for (ir::NodeId v : values) {
    const fusion::ValuePlacement& p = placement(v);
    if (p.storage == Storage::Global || p.storage == Storage::Output) {
      k_.storeVector(k_.bufferPointer(p.buffer, v), node(v).type.dtype, flat0, results[v]);
      continue;
    }
    for (int j = 0; j < width; ++j)
      store(s, v, j ? b_.CreateAdd(flat0, k_.index(j)) : flat0, results[v][size_t(j)]);
  }
  k_.endVectorGroup();
  gen_->clearCache();
}

int64_t KernelEmitter::elementsPerBlock(const TileSpace& s, const ir::Shape& shape) const {
  ir::Dim n = ir::numElements(shape);
  if (!s.units.isStatic() || !n.isStatic() || kp_.launch.maxBlocks <= 0 || s.units.size() == 0)
    return std::numeric_limits<int64_t>::max();
  int64_t tiles = (s.units.size() + s.unitsPerTile - 1) / s.unitsPerTile;
  int64_t tilesPerBlock = (tiles + kp_.launch.maxBlocks - 1) / kp_.launch.maxBlocks;
  return tilesPerBlock * s.unitsPerTile * std::max<int64_t>(1, n.size() / s.units.size());
}

bool KernelEmitter::manyTilesPerBlock(const TileSpace& s) const {
  if (!s.units.isStatic() || kp_.launch.maxBlocks <= 0) return false;
  int64_t tiles = (s.units.size() + s.unitsPerTile - 1) / s.unitsPerTile;
  return tiles >= 2 * kp_.launch.maxBlocks;
}

llvm::Value* KernelEmitter::newStagingArray(int64_t bytes) {
  // Phases are separated by grid barriers, so every phase's arrays start at offset 0 of one
  // static array (sized to the largest phase when the kernel is finished, finishStagingArena).
  llvm::LLVMContext& c = m_.getContext();
  if (!stagingArena_) {
    auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(c), 1);
    stagingArena_ = new llvm::GlobalVariable(m_, at, false, llvm::GlobalValue::InternalLinkage,
                                             llvm::UndefValue::get(at), kp_.name + "_staged_tmp",
                                             nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  }
  int64_t offset = (phaseStaged_ + 15) / 16 * 16;
  phaseStaged_ = offset + bytes;
  stagingBytes_ = std::max(stagingBytes_, phaseStaged_);
  return llvm::ConstantExpr::getInBoundsGetElementPtr(
      llvm::Type::getInt8Ty(c), stagingArena_,
      llvm::ConstantInt::get(llvm::Type::getInt64Ty(c), uint64_t(offset)));
}

void KernelEmitter::finishStagingArena() {
  if (!stagingArena_) return;
  auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(m_.getContext()), uint64_t(stagingBytes_));
  auto* arena = new llvm::GlobalVariable(m_, at, false, llvm::GlobalValue::InternalLinkage,
                                         llvm::UndefValue::get(at), kp_.name + "_staged", nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 3);
  arena->setAlignment(llvm::Align(16));
  stagingArena_->replaceAllUsesWith(arena);
  stagingArena_->eraseFromParent();
  stagingArena_ = nullptr;
}

bool KernelEmitter::keepsGridResident(int64_t moreShared) const {
  if (!kp_.launch.cooperative || kp_.launch.maxBlocks <= 0) return true;
  int64_t perSM = fusion::blocksPerSM(plan_.device, k_.blockSize, kp_.launch.maxRegisters,
                                      sharedInUse() + moreShared);
  return perSM * plan_.device.smCount >= kp_.launch.maxBlocks;
}

int KernelEmitter::registersPerThreadCap() const {
  const DeviceSpec& d = plan_.device;
  return std::min(d.maxRegistersPerThread, d.registersPerSM / k_.blockSize) / 8 * 8;
}

std::vector<ir::NodeId> KernelEmitter::stageBroadcasts(const TileSpace& s,
                                                       const std::vector<int>& groups,
                                                       int64_t maxElements, bool outerOnly) {
  // A small input the slot group broadcasts over its rows (gamma, beta) is read by every row's
  // threads: when a block handles several rows (in one tile or over several tiles), it copies
  // the input into shared memory once, before its tiles, and the phase reads it there. Values
  // an earlier phase left in global scratch (Figure 7's power.1 and reduce.2) are staged the
  // same way. Not in cooperative kernels beyond what keeps their grid's blocks per SM (the
  // plan sized it). With outerOnly, only sources that the broadcast repeats along its result's
  // outermost dim (a row vector over many rows, not a per-row value).
  constexpr int64_t kMaxStagedBytes = 48 * 1024; // bounded by stagingRoom() too
  // One row per tile and at most one tile per block: every read is already the only one.
  bool oneRowPerBlock = s.unitsPerTile < 2 && kp_.launch.tiles.isStatic() &&
                        kp_.launch.maxBlocks > 0 && kp_.launch.tiles.size() <= kp_.launch.maxBlocks;
  if (oneRowPerBlock) return {};
  // The inputs the groups broadcast, also through converts and reshapes (an f16 gamma is
  // converted to f32 before its broadcast).
  std::map<ir::NodeId, int64_t> broadcast; // source → its elements' reads per block (most)
  for (int group : groups)
    for (ir::NodeId op : kp_.groups.at(size_t(group)).ops) {
      const ir::Node& bc = node(op);
      if (bc.kind != ir::OpKind::BroadcastInDim) continue;
      const auto& dims = bc.attr<ir::BroadcastAttrs>().dims;
      if (outerOnly && (bc.type.shape.size() < 2 ||
                        std::find(dims.begin(), dims.end(), 0) != dims.end()))
        continue;
      ir::NodeId source = bc.operands[0];
      while (node(source).kind == ir::OpKind::Convert || node(source).kind == ir::OpKind::Reshape)
        source = node(source).operands[0];
      int64_t& reads = broadcast[source];
      reads = std::max(reads, elementsPerBlock(s, bc.type.shape));
    }
  int64_t room = std::min(kMaxStagedBytes, stagingRoom());
  std::vector<std::pair<ir::NodeId, int64_t>> chosen; // input, byte offset
  int64_t bytes = 0;
  for (const auto& [v, p] : kp_.placement) {
    ir::Dim n = ir::numElements(node(v).type.shape);
    bool readable = p.storage == Storage::Input ||
                    (p.storage == Storage::Global && written_.count(v) && p.partialsBuffer < 0);
    if (!readable || !broadcast.count(v) || !n.isStatic() || n.size() > maxElements) continue;
    if (outerOnly && 2 * n.size() > broadcast[v]) continue; // a block reads it less than twice
    int64_t size = (n.size() * ir::dtypeBytes(node(v).type.dtype) + 15) / 16 * 16;
    if (bytes + size > room || !keepsGridResident(bytes + size)) continue;
    chosen.push_back({v, bytes});
    bytes += size;
  }
  if (chosen.empty()) return {};
  llvm::LLVMContext& c = m_.getContext();
  llvm::Value* array = newStagingArray(bytes);
  std::vector<ir::NodeId> staged;
  for (const auto& [v, offset] : chosen) {
    const ir::Node& n = node(v);
    llvm::Value* global = k_.bufferPointer(placement(v).buffer, v);
    llvm::Value* shared =
        b_.CreateConstInBoundsGEP1_64(llvm::Type::getInt8Ty(c), array, uint64_t(offset));
    k_.loop(n.name + ".stage", k_.toIndex(k_.threadId()), k_.elements(n.type.shape),
            k_.index(k_.blockSize), [&](llvm::Value* i) {
              k_.storeElement(shared, n.type.dtype, i, k_.loadElement(global, n.type.dtype, i));
            });
    gen_->setGenerator(v, [this, shared, &n](const Index& idx) {
      return k_.loadTensorElement(shared, n.type.dtype, n.type.shape, idx);
    });
    staged.push_back(v);
  }
  k_.blockBarrier();
  return staged;
}

void KernelEmitter::planTileSlices(const TileSpace& s, const SlotPhase& sp) {
  tileSlices_.clear();
  constexpr int64_t kMaxSliceBytes = 16 * 1024;
  if (s.unitsPerTile < 2) return;
  const fusion::Group& g = kp_.groups.at(size_t(sp.group));
  int64_t room = std::min(kMaxSliceBytes, stagingRoom());
  int64_t bytes = 0;
  std::vector<std::pair<TileSlice, int64_t>> chosen;
  for (ir::NodeId op : g.ops) {
    const ir::Node& bc = node(op);
    if (bc.kind != ir::OpKind::BroadcastInDim || bc.type.shape != sp.loop) continue;
    ir::NodeId v = bc.operands[0];
    auto p = kp_.placement.find(v);
    if (p == kp_.placement.end() || p->second.storage != Storage::Input) continue;
    if (std::any_of(chosen.begin(), chosen.end(),
                    [&](const auto& c) { return c.first.input == v; }))
      continue;
    const ir::Shape& in = node(v).type.shape;
    const auto& dims = bc.attr<ir::BroadcastAttrs>().dims;
    TileSlice t;
    t.input = v;
    bool rowDependent = false, ok = true;
    for (size_t i = 0; i < in.size(); ++i) {
      bool stretched = in[i].isStatic() && in[i].size() == 1;
      size_t d = size_t(dims[i]);
      t.rowDimOf.push_back(!stretched && d < sp.rowDims ? int64_t(d) : -1);
      if (stretched) continue;
      if (d >= sp.rowDims) {
        t.sliceDims.push_back(i);
        t.shape.push_back(in[i]);
        ok = ok && in[i].isStatic();
        continue;
      }
      // Row dim d is constant over an aligned tile when the rows after it span whole tiles.
      rowDependent = true;
      int64_t span = 1;
      for (size_t e = d + 1; e < sp.rowDims; ++e)
        span = sp.loop[e].isStatic() ? span * sp.loop[e].size() : -1;
      ok = ok && span > 0 && span % s.unitsPerTile == 0;
    }
    if (!ok || !rowDependent || t.shape.empty()) continue;
    int64_t size =
        (ir::numElements(t.shape).size() * ir::dtypeBytes(node(v).type.dtype) + 15) / 16 * 16;
    if (bytes + size > room || !keepsGridResident(bytes + size)) continue;
    chosen.push_back({t, bytes});
    bytes += size;
  }
  if (chosen.empty()) return;
  llvm::LLVMContext& c = m_.getContext();
  llvm::Value* array = newStagingArray(bytes);
  for (auto& [t, offset] : chosen) {
    t.shared = b_.CreateConstInBoundsGEP1_64(llvm::Type::getInt8Ty(c), array, uint64_t(offset));
    const ir::Node& n = node(t.input);
    llvm::Value* global = k_.bufferPointer(placement(t.input).buffer, t.input);
    TileSlice slice = t;
    // Slot stages read the tile's slice (their rows are the tile's); anything else the input.
    gen_->setGenerator(t.input, [this, slice, global, &n](const Index& idx) {
      if (!slotsReading_) return k_.loadTensorElement(global, n.type.dtype, n.type.shape, idx);
      Index at;
      for (size_t i : slice.sliceDims)
        at.push_back(idx[i]);
      return k_.loadTensorElement(slice.shared, n.type.dtype, slice.shape, at);
    });
    tileSlices_.push_back(t);
  }
}

void KernelEmitter::copyTileSlices(const TileSpace& s, const SlotPhase& sp) {
  if (tileSlices_.empty()) return;
  // Row coordinates of the tile's first row; every row of the tile has the slices' ones.
  ir::Shape rowShape(sp.loop.begin(), sp.loop.begin() + int64_t(sp.rowDims));
  Index row = delinearize(k_, rowShape, s.u0);
  for (const TileSlice& t : tileSlices_) {
    const ir::Node& n = node(t.input);
    llvm::Value* global = k_.bufferPointer(placement(t.input).buffer, t.input);
    k_.loop(n.name + ".slice", k_.toIndex(k_.threadId()), k_.elements(t.shape),
            k_.index(k_.blockSize), [&](llvm::Value* i) {
              Index in = delinearize(k_, t.shape, i), full;
              size_t next = 0;
              for (size_t d = 0; d < n.type.shape.size(); ++d) {
                if (t.rowDimOf[d] >= 0)
                  full.push_back(row[size_t(t.rowDimOf[d])]);
                else if (next < t.sliceDims.size() && t.sliceDims[next] == d)
                  full.push_back(in[next++]);
                else
                  full.push_back(k_.index(0)); // stretched
              }
              k_.storeElement(
                  t.shared, n.type.dtype, i,
                  k_.loadElement(global, n.type.dtype, linearize(k_, n.type.shape, full)));
            });
  }
  k_.blockBarrier();
}

bool KernelEmitter::inSlots(const fusion::Group& g) const {
  return slots_ && slotGroup_ >= 0 && &g == &kp_.groups.at(size_t(slotGroup_));
}

int KernelEmitter::keptRegisters(const std::vector<const fusion::Stage*>& phase, SlotPhase& sp,
                                 const std::vector<ir::NodeId>& candidates,
                                 const std::function<int(ir::NodeId)>& cost, int budget) const {
  // A kept value holds its registers from the stage that first generates it to the last stage
  // that reads it: a chain of softmaxes keeps each softmax's values for two or three stages,
  // not for the whole phase. The stages' reads follow the emitter: each slot stage generates
  // its loop values and its reduces' operands at the slots, reading kept values and memory
  // and regenerating everything else down to them. A candidate that does not fit where it is
  // live is recomputed instead, which makes its operands live where it is read: the choice is
  // then made again with it recomputed.
  std::vector<std::vector<ir::NodeId>> roots(phase.size());
  for (size_t i = 0; i < phase.size(); ++i) {
    const fusion::Stage& st = *phase[i];
    bool slotGroup = st.group == sp.group;
    for (ir::NodeId m : st.materialized) {
      const ir::Node& n = node(m);
      bool across = std::find(sp.across.begin(), sp.across.end(), m) != sp.across.end();
      if (n.kind == ir::OpKind::Reduce && (slotGroup || across) &&
          node(n.operands[0]).type.shape == sp.loop)
        roots[i].push_back(n.operands[0]);
      else if (slotGroup && n.type.shape == sp.loop)
        roots[i].push_back(m);
    }
  }
  const std::set<ir::NodeId> candidateSet(candidates.begin(), candidates.end());
  std::set<ir::NodeId> rejected;
  for (;;) {
    std::map<ir::NodeId, std::pair<int, int>> live; // candidate → first and last stage
    std::set<ir::NodeId> generated;
    auto isCandidate = [&](ir::NodeId v) { return candidateSet.count(v) && !rejected.count(v); };
    for (size_t i = 0; i < phase.size(); ++i) {
      int stage = int(i);
      std::set<ir::NodeId> seen;
      std::vector<ir::NodeId> work(roots[i].rbegin(), roots[i].rend());
      while (!work.empty()) {
        ir::NodeId v = work.back();
        work.pop_back();
        if (!seen.insert(v).second) continue;
        bool candidate = isCandidate(v);
        if (candidate) {
          live.try_emplace(v, stage, stage).first->second.second = stage;
          if (!generated.insert(v).second) continue; // kept: read, not regenerated
        } else {
          auto p = kp_.placement.find(v);
          bool loaded = p == kp_.placement.end() || p->second.storage != Storage::Register;
          if (loaded || node(v).kind == ir::OpKind::Reduce) continue;
        }
        for (ir::NodeId o : node(v).operands)
          work.push_back(o);
      }
    }
    std::vector<int> load(phase.size(), 0);
    ir::NodeId misfit = -1;
    std::vector<ir::NodeId> kept;
    for (ir::NodeId v : candidates) {
      if (rejected.count(v)) continue;
      // A candidate these reads do not reach counts over the whole phase (to be safe).
      auto it = live.find(v);
      auto [first, last] = it != live.end() ? it->second : std::pair<int, int>(0, int(load.size()) - 1);
      int most = *std::max_element(load.begin() + first, load.begin() + last + 1);
      if (most + cost(v) > budget) {
        misfit = v;
        break;
      }
      for (int st = first; st <= last; ++st)
        load[size_t(st)] += cost(v);
      kept.push_back(v);
    }
    if (misfit < 0) {
      sp.reused.insert(kept.begin(), kept.end());
      return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
    }
    rejected.insert(misfit);
  }
}

std::optional<SlotPhase>
KernelEmitter::slotPhaseOf(const TileSpace& s,
                           const std::vector<const fusion::Stage*>& phase) const {
  if (s.kind != TileSpace::Kind::Rows || s.split != 1) return std::nullopt;
  // The slot pass accumulates a reduce of a row group over its loop's rows: only in a phase
  // that materialises one (a phase may run in the group's tiles before its reduces can be
  // computed, e.g. while they wait behind a grid barrier for a value another group produces).
  // The group's tiles must be the phase's.
  auto slotReduce = [&](const fusion::Group& g, ir::NodeId v) {
    const ir::Node& r = node(v);
    return r.kind == ir::OpKind::Reduce && !written_.count(v) &&
           node(r.operands[0]).type.shape == g.loopShape &&
           reduceGeometry(plan_.graph, r).keptAxes == g.tileDims;
  };
  int gi = -1;
  for (const fusion::Stage* st : phase) {
    const fusion::Group& g = kp_.groups.at(size_t(st->group));
    if (gi >= 0 || !std::holds_alternative<fusion::RowReduceMapping>(g.mapping) ||
        g.acrossTiles || g.loopShape.empty() || !(g.rows == s.units) ||
        g.rowsPerTile != s.unitsPerTile)
      continue;
    for (ir::NodeId v : st->materialized)
      if (slotReduce(g, v)) gi = st->group;
  }
  if (gi < 0) return std::nullopt;
  const fusion::Group& g = kp_.groups.at(size_t(gi));
  const auto* m = std::get_if<fusion::RowReduceMapping>(&g.mapping);
  for (size_t i = 0; i < g.tileDims.size(); ++i)
    if (g.tileDims[i] != int64_t(i)) return std::nullopt; // rows must lead the loop
  int steps = rowSlotSteps(g.loopShape, g.tileDims.size(), *m, k_.blockSize, s.unitsPerTile);
  if (steps == 0) return std::nullopt;

  SlotPhase sp;
  sp.group = gi;
  sp.loop = g.loopShape;
  sp.rowDims = g.tileDims.size();
  sp.mapping = *m;
  // Registers for reused values and across accumulators: what the launch allows beyond
  // kBaseRegisters. A cooperative launch sized its grid by the plan's bound (which counted
  // them: fusion::slotRegisters); otherwise the most one thread of a block can have.
  int cap = kp_.launch.cooperative ? kp_.launch.maxRegisters : registersPerThreadCap();
  int budget = cap - kBaseRegisters;
  if (kp_.launch.cooperative) budget = std::min(budget, fusion::slotRegisters(plan_.graph, kp_));
  int64_t elements = int64_t(steps) * std::max(1, m->vectorWidth);
  auto cost = [&](ir::NodeId v) {
    return int(elements * ((ir::dtypeBytes(node(v).type.dtype) + 3) / 4));
  };
  for (const fusion::Stage* st : phase) {
    const fusion::Group& other = kp_.groups.at(size_t(st->group));
    if (!other.acrossTiles || other.follows != gi || !isAcrossTiles(other, *st)) continue;
    for (ir::NodeId r : acrossReduces(*st)) {
      if (!accumulatesInSlots(r, sp) || cost(r) > budget) continue;
      sp.across.push_back(r);
      // The block's combine area must not cost the grid its planned blocks per SM.
      if (!keepsGridResident(slotCombineBytes(sp)) || slotCombineBytes(sp) > stagingRoom()) {
        sp.across.pop_back();
        continue;
      }
      budget -= cost(r);
      sp.registers += cost(r);
    }
  }
  // Candidates for registers, in priority order: memory reads first (inputs read by several
  // stages of the group, then values the group stores over its loop and reads back in a later
  // stage), then recomputed ops. Constants are folded by LLVM: no registers.
  std::vector<ir::NodeId> candidates;
  auto take = [&](ir::NodeId v) {
    if (node(v).kind == ir::OpKind::Constant) {
      sp.reused.insert(v);
      return;
    }
    if (cost(v) > budget ||
        std::find(candidates.begin(), candidates.end(), v) != candidates.end())
      return;
    candidates.push_back(v);
  };
  std::set<ir::NodeId> groupOps(g.ops.begin(), g.ops.end());
  for (const auto& [v, p] : kp_.placement)
    if (p.registerReuse && p.storage == Storage::Input && node(v).type.shape == sp.loop) take(v);
  std::vector<const fusion::Stage*> groupStages;
  for (const fusion::Stage* st : phase)
    if (st->group == gi) groupStages.push_back(st);
  for (size_t i = 0; i + 1 < groupStages.size(); ++i)
    for (ir::NodeId v : groupStages[i]->materialized)
      if (node(v).type.shape == sp.loop) take(v);
  for (const auto& [v, p] : kp_.placement)
    if (p.registerReuse && p.storage == Storage::Register && groupOps.count(v) &&
        node(v).type.shape == sp.loop)
      take(v);
  int peak = keptRegisters(phase, sp, candidates, cost, budget);
  if (peak > 0) sp.registers += peak;
  bool any = std::any_of(sp.reused.begin(), sp.reused.end(),
                         [&](ir::NodeId v) { return node(v).kind != ir::OpKind::Constant; });
  if (!any && sp.across.empty()) return std::nullopt;
  return sp;
}

void KernelEmitter::emitSlotStage(const TileSpace& s, const std::vector<ir::NodeId>& values) {
  // Each of the thread's slot steps: every value's lanes (vector loads shared), kept for later
  // stages, then stored where the row is inside the tile.
  const RowSlots& slots = *slots_;
  slotsReading_ = true;
  for (const RowSlots::Step& step : slots.steps) {
    if (slots.width > 1) {
      k_.beginVectorGroup(slots.width);
      k_.vectorLanes = step.vectorLanes;
    }
    std::map<ir::NodeId, std::vector<llvm::Value*>> results;
    for (const Index& idx : step.lanes) {
      gen_->clearCache();
      for (ir::NodeId v : values) {
        llvm::Value* x = gen_->emit(v, idx);
        gen_->remember(v, idx, x);
        results[v].push_back(x);
      }
    }
    if (slots.width > 1) k_.endVectorGroup();
    gen_->clearCache();
    k_.ifThen(step.inRow ? b_.CreateAnd(slots.valid, step.inRow) : slots.valid, [&] {
      for (ir::NodeId v : values) {
        const fusion::ValuePlacement& p = placement(v);
        if (slots.width > 1 && (p.storage == Storage::Global || p.storage == Storage::Output)) {
          k_.storeVector(k_.bufferPointer(p.buffer, v), node(v).type.dtype, step.flat0, results[v]);
          continue;
        }
        for (size_t j = 0; j < results[v].size(); ++j)
          store(s, v, j ? b_.CreateAdd(step.flat0, k_.index(int64_t(j))) : step.flat0,
                results[v][j]);
      }
    });
  }
  slotsReading_ = false;
}

void KernelEmitter::emitReduceStage(TileSpace& s, const fusion::Group& g, ir::NodeId reduce,
                                    const std::vector<ir::NodeId>& materialized) {
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  bool split = isSplit(g) && reduce == g.dominant;
  int partials = split ? placement(reduce).partialsBuffer : -1;
  bool rows = std::holds_alternative<fusion::RowReduceMapping>(g.mapping);
  if ((rows && s.kind != TileSpace::Kind::Rows) || (!rows && s.kind != TileSpace::Kind::Columns))
    k_.fail(
        reduce,
        "its mapping differs in kind from the phase's first reduce; put it in a phase of its own");
  if (!(geo.kept == s.units))
    k_.fail(reduce, fmt::format("reduces to {} results but the phase's tiles cover {}",
                                geo.kept.str(), s.units.str()));
  for (ir::NodeId v : materialized)
    if (!(ir::numElements(node(v).type.shape) == geo.kept))
      k_.fail(v, fmt::format("is materialised by the stage of reduce \"{}\" but has {} elements, "
                             "not one per result "
                             "({}); give it a stage of its own",
                             r.name, ir::numElements(node(v).type.shape).str(), geo.kept.str()));
  if (split && partials < 0 && (materialized.size() != 1 || materialized[0] != reduce))
    k_.fail(reduce, "a split reduce combined with atomics may materialise only the reduce itself");

  llvm::Value* reducedBegin = k_.index(0);
  llvm::Value* reducedEnd = k_.dim(geo.reduced);
  if (split) {
    int vw = 1;
    if (const auto* rm = std::get_if<fusion::RowReduceMapping>(&g.mapping))
      vw = std::max(1, rm->vectorWidth);
    llvm::Value* chunk = b.CreateUDiv(b.CreateAdd(reducedEnd, k_.index(int64_t(s.split) * vw - 1)),
                                      k_.index(int64_t(s.split) * vw));
    chunk = b.CreateMul(chunk, k_.index(vw));
    reducedBegin =
        b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateMul(s.part, chunk), reducedEnd);
    reducedEnd = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(reducedBegin, chunk),
                                         reducedEnd);
  }
  ReduceResult onResult = [&](llvm::Value* kept, llvm::Value* value) {
    gen_->clearCache();
    if (partials >= 0) { // partials[part][kept], combined after the phase's grid barrier
      llvm::Value* slot = b.CreateAdd(b.CreateMul(s.part, k_.dim(geo.kept)), kept);
      k_.storeElement(k_.bufferPointer(partials, reduce), r.type.dtype, slot, value);
      return;
    }
    if (split) {
      llvm::Value* base = k_.bufferPointer(placement(reduce).buffer, reduce);
      llvm::Value* p = b.CreateInBoundsGEP(memoryType(k_.ctx(), r.type.dtype), base, kept);
      bool fp = ir::isFloat(r.type.dtype);
      llvm::AtomicRMWInst::BinOp op;
      switch (r.attr<ir::ReduceAttrs>().kind) {
      case ir::ReduceKind::Sum:
        op = fp ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
        break;
      case ir::ReduceKind::Max:
        op = fp ? llvm::AtomicRMWInst::FMax : llvm::AtomicRMWInst::Max;
        break;
      default:
        op = fp ? llvm::AtomicRMWInst::FMin : llvm::AtomicRMWInst::Min;
        break;
      }
      b.CreateAtomicRMW(op, p, value, llvm::MaybeAlign(ir::dtypeBytes(r.type.dtype)),
                        llvm::AtomicOrdering::Monotonic);
      return;
    }
    llvm::Value* result = ir::isFloat(r.type.dtype) ? roundToDType(b, value, r.type.dtype) : value;
    gen_->setGenerator(reduce, [result](const Index&) { return result; });
    for (ir::NodeId v : materialized)
      store(s, v, kept, gen_->emit(v, delinearize(k_, node(v).type.shape, kept)));
    gen_->clearGenerator(reduce);
    gen_->clearCache();
  };
  bool toGlobal = split;
  for (ir::NodeId v : materialized)
    toGlobal = toGlobal || placement(v).storage == Storage::Global ||
               placement(v).storage == Storage::Output;
  // In a slot phase, a reduce of the group over its loop's rows accumulates the slots.
  const RowSlots* slots = nullptr;
  if (inSlots(g) && node(r.operands[0]).type.shape == slotPhase_->loop &&
      geo.keptAxes.size() == slotPhase_->rowDims) {
    bool leading = true;
    for (size_t i = 0; i < geo.keptAxes.size(); ++i)
      leading = leading && geo.keptAxes[i] == int64_t(i);
    if (leading) slots = &*slots_;
  }
  if (const auto* rm = std::get_if<fusion::RowReduceMapping>(&g.mapping)) {
    slotsReading_ = slots != nullptr;
    emitRowReduce(k_, *gen_, r, *rm, s.u0, s.u1, reducedBegin, reducedEnd, onResult, toGlobal,
                  slots);
    slotsReading_ = false;
  } else
    emitColumnReduce(k_, *gen_, r, std::get<fusion::ColumnReduceMapping>(g.mapping), s.u0, s.u1,
                     reducedBegin, reducedEnd, onResult);
  gen_->clearCache();
}

bool KernelEmitter::isAcrossTiles(const fusion::Group& g, const fusion::Stage& st) const {
  if (!g.acrossTiles) return false;
  for (ir::NodeId r : acrossReduces(st))
    if (!written_.count(r)) return true;
  return false;
}

std::vector<ir::NodeId> KernelEmitter::acrossReduces(const fusion::Stage& st) const {
  std::vector<ir::NodeId> out;
  for (ir::NodeId v : st.materialized)
    if (node(v).kind == ir::OpKind::Reduce && placement(v).partialsBuffer >= 0) out.push_back(v);
  return out;
}

KernelEmitter::AcrossPartials KernelEmitter::acrossPartials(ir::NodeId reduce) {
  const ir::Node& r = node(reduce);
  if (auto it = sharedPartials_.find(reduce); it != sharedPartials_.end()) {
    return {it->second, partialType(r.type.dtype), k_.index(0)};
  }
  llvm::Value* results = k_.dim(reduceGeometry(plan_.graph, r).kept);
  return {k_.bufferPointer(placement(reduce).partialsBuffer, reduce), r.type.dtype,
          b_.CreateMul(k_.toIndex(k_.blockId()), results)};
}

void KernelEmitter::emitAcrossTilesInit(ir::NodeId reduce) {
  // partials[block][c] = identity; thread t owns the results c = t (mod blockSize), here and in
  // every tile, so no barrier is needed between the init and the accumulation. When the block's
  // partials fit, they live in shared memory while the tiles accumulate (one global row per
  // block, written once after the tile loop, instead of a read and a write per tile).
  constexpr int64_t kMaxSharedPartialsBytes = 16 * 1024;
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  if (geo.kept.isStatic()) {
    int64_t bytes = partialBytes(r);
    if (bytes <= std::min(kMaxSharedPartialsBytes, stagingRoom()) && keepsGridResident(bytes))
      sharedPartials_[reduce] = newStagingArray(bytes);
  }
  AcrossPartials p = acrossPartials(reduce);
  llvm::Value* results = k_.dim(geo.kept);
  k_.loop(r.name + ".pinit", k_.toIndex(k_.threadId()), results, k_.index(k_.blockSize),
          [&](llvm::Value* c) {
            k_.storeElement(p.base, p.dtype, b.CreateAdd(p.row, c),
                            reductionIdentity(k_.ctx(), kind, r.type.dtype));
          });
}

void KernelEmitter::emitSharedPartialsToGlobal() {
  // Each thread writes the partials it owns (no barrier: the same thread accumulated them).
  llvm::IRBuilder<>& b = b_;
  for (const auto& [reduce, shared] : sharedPartials_) {
    const ir::Node& r = node(reduce);
    AcrossPartials p = acrossPartials(reduce);
    llvm::Value* results = k_.dim(reduceGeometry(plan_.graph, r).kept);
    llvm::Value* partials = k_.bufferPointer(placement(reduce).partialsBuffer, reduce);
    llvm::Value* row = b.CreateMul(k_.toIndex(k_.blockId()), results);
    k_.loop(r.name + ".pflush", k_.toIndex(k_.threadId()), results, k_.index(k_.blockSize),
            [&](llvm::Value* c) {
              k_.storeElement(partials, r.type.dtype, b.CreateAdd(row, c),
                              k_.loadElement(p.base, p.dtype, c));
            });
  }
  sharedPartials_.clear();
}

void KernelEmitter::emitAcrossTilesAccumulate(const TileSpace& s, ir::NodeId reduce) {
  // The tile covers operand elements [u0 * inner, u1 * inner) (inner = operand elements per
  // row). With the reduced axes leading, element (red, c) sits at red * results + c, so the
  // thread owning result c visits exactly the red of this tile: no two threads touch one
  // partial, and tiles of a block are ordered by a block barrier.
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  bool leading = true;
  for (size_t i = 0; i < geo.reducedAxes.size(); ++i)
    leading = leading && geo.reducedAxes[i] == int64_t(i);
  ir::Dim opElements = ir::numElements(node(r.operands[0]).type.shape);
  std::optional<ir::Dim> inner =
      opElements == s.units ? std::optional<ir::Dim>(1) : opElements.dividedBy(s.units);
  if (s.kind != TileSpace::Kind::Rows || !leading || !inner)
    k_.fail(reduce,
            fmt::format("an across-tiles reduce needs its reduced axes leading and an operand that "
                        "covers the phase's {} rows; its operand has {} elements",
                        s.units.str(), opElements.str()));
  AcrossPartials p = acrossPartials(reduce);
  llvm::Value* partials = p.base;
  llvm::Value* results = k_.dim(geo.kept);
  llvm::Value* row = p.row;
  llvm::Value* lo = b.CreateMul(s.u0, k_.dim(*inner));
  llvm::Value* hi = b.CreateMul(s.u1, k_.dim(*inner));
  llvm::AllocaInst* acc = k_.entryAlloca(computeType(k_.ctx(), r.type.dtype), r.name + ".tacc");
  auto ceilDiv = [&](llvm::Value* x) { // ceil(max(x, 0) / results)
    llvm::Value* pos = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, k_.index(0));
    return b.CreateUDiv(b.CreateAdd(pos, b.CreateSub(results, k_.index(1))), results);
  };
  k_.loop(r.name + ".cols", k_.toIndex(k_.threadId()), results, k_.index(k_.blockSize),
          [&](llvm::Value* c) {
            llvm::Value* redLo = ceilDiv(b.CreateSub(lo, c));
            llvm::Value* redHi = ceilDiv(b.CreateSub(hi, c));
            k_.ifThen(b.CreateICmpSLT(redLo, redHi), [&] {
              llvm::Value* slot = b.CreateAdd(row, c);
              b.CreateStore(k_.loadElement(partials, p.dtype, slot), acc);
              k_.loop(r.name + ".reds", redLo, redHi, k_.index(1), [&](llvm::Value* red) {
                gen_->clearCache();
                llvm::Value* v = gen_->emit(r.operands[0], reduceOperandIndex(k_, geo, c, red));
                b.CreateStore(reductionCombine(b, kind, r.type.dtype,
                                               b.CreateLoad(acc->getAllocatedType(), acc), v),
                              acc);
              });
              gen_->clearCache();
              k_.storeElement(partials, p.dtype, slot, b.CreateLoad(acc->getAllocatedType(), acc));
            });
          });
  gen_->clearCache();
  k_.blockBarrier(); // the next tile's owners of these partials may be other threads
}

bool KernelEmitter::accumulatesInSlots(ir::NodeId reduce, const SlotPhase& sp) const {
  // The reduce sums the slots' rows away, keeping the row's elements: a thread's slots are the
  // same row elements (columns) in every tile, so its accumulators are per slot.
  constexpr int kMaxCombineRounds = 64; // rows per block tile, combined one after another
  const ir::Node& r = node(reduce);
  if (node(r.operands[0]).type.shape != sp.loop) return false;
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  if (geo.reducedAxes.size() != sp.rowDims) return false;
  for (size_t i = 0; i < geo.reducedAxes.size(); ++i)
    if (geo.reducedAxes[i] != int64_t(i)) return false;
  bool warpPerRow = sp.mapping.kind == fusion::RowReduceMapping::Kind::WarpPerRow;
  int rounds = warpPerRow ? k_.blockSize / std::max(1, sp.mapping.threadsPerRow) : 1;
  return rounds <= kMaxCombineRounds && geo.kept.isStatic();
}

void KernelEmitter::emitSlotAccumulate(ir::NodeId reduce) {
  // Each slot's element of the reduce's operand joins that slot's accumulator when the slot's
  // row lies inside the tile. The operand's inputs are loaded as the slot stages load them
  // (vector groups), so values reused by the group's later stages stay in registers.
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
  const RowSlots& slots = *slots_;
  const std::vector<llvm::AllocaInst*>& accs = slotAccumulators_.at(reduce);
  slotsReading_ = true;
  size_t a = 0;
  emitAtSlots(k_, *gen_, slots, r.operands[0],
              [&](const RowSlots::Step& step, const std::vector<llvm::Value*>& lanes) {
                for (llvm::Value* v : lanes) {
                  llvm::AllocaInst* acc = accs.at(a++);
                  llvm::Value* old = b.CreateLoad(acc->getAllocatedType(), acc);
                  llvm::Value* sum = reductionCombine(b, kind, r.type.dtype, old, v);
                  b.CreateStore(b.CreateSelect(slots.valid, inRowOr(b, step, sum, old), old), acc);
                }
              });
  slotsReading_ = false;
}

int64_t KernelEmitter::slotCombineBytes(const SlotPhase& sp, std::vector<int64_t>* offsets) const {
  int64_t bytes = 0;
  for (ir::NodeId r : sp.across) {
    if (offsets) offsets->push_back(bytes);
    bytes += partialBytes(node(r));
  }
  return bytes;
}

void KernelEmitter::emitSlotAccumulatorsToPartials(const SlotPhase& sp, llvm::Value* array) {
  // After the tile loop: the threads that share columns (one per row of the block's tile) fold
  // their accumulators into shared memory one row after another, then the block writes its
  // partials (partials[block][column]) for the combine behind the grid barrier. Row 0's threads
  // cover every column, so they store rather than combine.
  llvm::IRBuilder<>& b = b_;
  bool warpPerRow = sp.mapping.kind == fusion::RowReduceMapping::Kind::WarpPerRow;
  int tpr = warpPerRow ? sp.mapping.threadsPerRow : k_.blockSize;
  int width = std::max(1, sp.mapping.vectorWidth);
  int rounds = k_.blockSize / tpr;
  std::vector<int64_t> offsets;
  slotCombineBytes(sp, &offsets);
  auto sharedOf = [&](size_t i) {
    return b.CreateConstInBoundsGEP1_64(llvm::Type::getInt8Ty(m_.getContext()), array,
                                        uint64_t(offsets[i]));
  };
  llvm::Value* tid = k_.toIndex(k_.threadId());
  llvm::Value* lane = b.CreateURem(tid, k_.index(tpr));
  llvm::Value* rowInBlock = b.CreateUDiv(tid, k_.index(tpr));
  for (int round = 0; round < rounds; ++round) {
    k_.ifThen(b.CreateICmpEQ(rowInBlock, k_.index(round)), [&] {
      for (size_t i = 0; i < sp.across.size(); ++i) {
        const ir::Node& r = node(sp.across[i]);
        ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
        const std::vector<llvm::AllocaInst*>& accs = slotAccumulators_.at(r.id);
        for (size_t a = 0; a < accs.size(); ++a) {
          int64_t step = int64_t(a) / width, j = int64_t(a) % width;
          llvm::Value* column = b.CreateAdd(b.CreateMul(lane, k_.index(width)),
                                            k_.index(step * tpr * width + j));
          llvm::Value* results = k_.dim(ir::numElements(r.type.shape));
          k_.ifThen(b.CreateICmpSLT(column, results), [&] { // a ragged row's last step
            llvm::Value* v = b.CreateLoad(accs[a]->getAllocatedType(), accs[a]);
            if (round > 0)
              v = reductionCombine(b, kind, r.type.dtype,
                                   k_.loadElement(sharedOf(i), partialType(r.type.dtype), column), v);
            k_.storeElement(sharedOf(i), partialType(r.type.dtype), column, v);
          });
        }
      }
    });
    k_.blockBarrier();
  }
  for (size_t i = 0; i < sp.across.size(); ++i) {
    const ir::Node& r = node(sp.across[i]);
    llvm::Value* results = k_.dim(ir::numElements(r.type.shape));
    llvm::Value* partials = k_.bufferPointer(placement(r.id).partialsBuffer, r.id);
    llvm::Value* row = b.CreateMul(k_.toIndex(k_.blockId()), results);
    k_.loop(r.name + ".partials", tid, results, k_.index(k_.blockSize), [&](llvm::Value* c) {
      k_.storeElement(partials, r.type.dtype, b.CreateAdd(row, c),
                      k_.loadElement(sharedOf(i), partialType(r.type.dtype), c));
    });
  }
  slotAccumulators_.clear();
}

void KernelEmitter::emitAcrossTilesCombine(const fusion::Stage& st) {
  // Behind the phase's grid barrier: each result folds the per-block partials of every
  // across-tiles reduce of the stage, then the stage's values are computed from them.
  llvm::IRBuilder<>& b = b_;
  std::vector<ir::NodeId> reduces = acrossReduces(st);
  ir::Dim kept = reduceGeometry(plan_.graph, node(reduces.front())).kept;
  for (ir::NodeId v : st.materialized) {
    if (placement(v).storage == Storage::Shared)
      k_.fail(v, "an across-tiles reduce's stage cannot keep values in shared memory (they are "
                 "combined across "
                 "blocks)");
    if (!(ir::numElements(node(v).type.shape) == kept))
      k_.fail(v, fmt::format("is materialised by an across-tiles stage but has {} elements, not "
                             "one per result ({})",
                             ir::numElements(node(v).type.shape).str(), kept.str()));
  }
  llvm::Value* results = k_.dim(kept);
  llvm::Value* blocks = k_.toIndex(k_.gridSize());
  llvm::Value* start = b.CreateAdd(b.CreateMul(k_.toIndex(k_.blockId()), k_.index(k_.blockSize)),
                                   k_.toIndex(k_.threadId()));
  llvm::Value* stride = b.CreateMul(blocks, k_.index(k_.blockSize));
  std::vector<llvm::AllocaInst*> accs;
  for (ir::NodeId r : reduces)
    accs.push_back(
        k_.entryAlloca(computeType(k_.ctx(), node(r).type.dtype), node(r).name + ".cacc"));
  k_.loop("across.combine", start, results, stride, [&](llvm::Value* c) {
    for (size_t i = 0; i < reduces.size(); ++i) {
      const ir::Node& r = node(reduces[i]);
      ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
      llvm::Value* partials = k_.bufferPointer(placement(r.id).partialsBuffer, r.id);
      llvm::AllocaInst* acc = accs[i];
      b.CreateStore(reductionIdentity(k_.ctx(), kind, r.type.dtype), acc);
      k_.loop(r.name + ".blocks", k_.index(0), blocks, k_.index(1), [&](llvm::Value* blk) {
        llvm::Value* v =
            k_.loadElement(partials, r.type.dtype, b.CreateAdd(b.CreateMul(blk, results), c));
        b.CreateStore(
            reductionCombine(b, kind, r.type.dtype, b.CreateLoad(acc->getAllocatedType(), acc), v),
            acc);
      });
    }
    gen_->clearCache();
    for (size_t i = 0; i < reduces.size(); ++i) {
      const ir::Node& r = node(reduces[i]);
      llvm::Value* total = b.CreateLoad(accs[i]->getAllocatedType(), accs[i]);
      if (ir::isFloat(r.type.dtype)) total = roundToDType(b, total, r.type.dtype);
      gen_->setGenerator(r.id, [total](const Index&) { return total; });
    }
    for (ir::NodeId v : st.materialized) {
      Storage sto = placement(v).storage;
      if (sto == Storage::Global || sto == Storage::Output)
        k_.storeElement(k_.bufferPointer(placement(v).buffer, v), node(v).type.dtype, c,
                        gen_->emit(v, delinearize(k_, node(v).type.shape, c)));
    }
    for (ir::NodeId r : reduces)
      gen_->clearGenerator(r);
    gen_->clearCache();
  });
}

void KernelEmitter::emitPartialsCombine(const TileSpace& s, const fusion::Group& g,
                                        ir::NodeId reduce,
                                        const std::vector<ir::NodeId>& materialized) {
  // After the grid barrier: every result combines its splitFactor partials, then the stage's
  // values are computed from it and stored (one thread per result, grid-stride).
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
  llvm::Value* partials = k_.bufferPointer(placement(reduce).partialsBuffer, reduce);
  llvm::Value* results = k_.dim(geo.kept);
  llvm::Value* start = b.CreateAdd(b.CreateMul(k_.toIndex(k_.blockId()), k_.index(k_.blockSize)),
                                   k_.toIndex(k_.threadId()));
  llvm::Value* stride = b.CreateMul(k_.toIndex(k_.gridSize()), k_.index(k_.blockSize));
  (void)g;
  k_.loop(r.name + ".combine", start, results, stride, [&](llvm::Value* kept) {
    gen_->clearCache();
    llvm::Value* acc = reductionIdentity(k_.ctx(), kind, r.type.dtype);
    for (int part = 0; part < s.split; ++part) {
      llvm::Value* slot = b.CreateAdd(b.CreateMul(k_.index(part), results), kept);
      acc = reductionCombine(b, kind, r.type.dtype, acc,
                             k_.loadElement(partials, r.type.dtype, slot));
    }
    gen_->setGenerator(reduce, [acc](const Index&) { return acc; });
    for (ir::NodeId v : materialized) {
      if (placement(v).storage == Storage::Shared)
        k_.fail(v, "a split reduce's stage cannot keep values in shared memory (they are combined "
                   "across blocks)");
      store(s, v, kept, gen_->emit(v, delinearize(k_, node(v).type.shape, kept)));
    }
    gen_->clearGenerator(reduce);
    gen_->clearCache();
  });
}

void KernelEmitter::emitStage(TileSpace& s, const fusion::Stage& st) {
  const fusion::Group& g = kp_.groups.at(size_t(st.group));
  if (st.barrierBefore == fusion::Barrier::Block || sharedDirty_) {
    k_.blockBarrier();
    sharedDirty_ = false;
  }
  // Values materialised by earlier stages are loaded from their storage from now on.
  auto installWritten = [&] {
    for (ir::NodeId v : written_)
      if (!gen_->hasGenerator(v))
        installLoad(v, placement(v).storage == Storage::Shared ? &s : nullptr);
  };
  installWritten();
  bool reduceMapped = !std::holds_alternative<fusion::ElementwiseMapping>(g.mapping);
  // The reduces the stage materialises run with the group's reduce mapping, one after another;
  // everything else is elementwise over the tile (its rows, or its loop elements).
  std::vector<ir::NodeId> reduces, rest;
  for (ir::NodeId v : st.materialized) {
    bool isReduce = reduceMapped && node(v).kind == ir::OpKind::Reduce &&
                    reduceGeometry(plan_.graph, node(v)).kept == s.units;
    (isReduce ? reduces : rest).push_back(v);
  }
  bool materialisesDominant = std::find(st.materialized.begin(), st.materialized.end(),
                                        g.dominant) != st.materialized.end();
  if (isAcrossTiles(g, st)) {
    for (ir::NodeId r : acrossReduces(st)) // the stage's values are computed after the combine
      if (slots_ && slotAccumulators_.count(r))
        emitSlotAccumulate(r);
      else
        emitAcrossTilesAccumulate(s, r);
    return;
  }
  if (isSplit(g) && materialisesDominant && !written_.count(g.dominant)) {
    // Split reduces: the tile loop only accumulates partials; the stage's values are computed
    // after the cross-block combine (emitPartialsCombine) or meet through atomics.
    bool onlyDominant = st.materialized.size() == 1 && st.materialized[0] == g.dominant;
    if (placement(g.dominant).partialsBuffer < 0 && !onlyDominant)
      k_.fail(g.dominant,
              "a split reduce combined with atomics may materialise only the reduce itself");
    emitReduceStage(s, g, g.dominant, {g.dominant});
    return;
  }
  bool dominantStage = false;
  if (reduceMapped && node(g.dominant).kind == ir::OpKind::Reduce && !written_.count(g.dominant) &&
      reduceGeometry(plan_.graph, node(g.dominant)).kept == s.units) {
    ir::Dim results = reduceGeometry(plan_.graph, node(g.dominant)).kept;
    // A stage of per-result values that do not read the dominant (a later phase may compute
    // it, behind a grid barrier) is an elementwise stage over the rows, not the dominant's.
    for (ir::NodeId v : st.materialized)
      dominantStage = dominantStage || v == g.dominant ||
                      (reduces.empty() && ir::numElements(node(v).type.shape) == results &&
                       readsValue(plan_.graph, v, g.dominant));
  }
  if (dominantStage && (reduces.empty() || (reduces.size() == 1 && reduces[0] == g.dominant))) {
    reduces = {g.dominant};
    // The dominant's stage: values of one element per result are computed from the reduce in
    // the thread that holds it.
    std::vector<ir::NodeId> perResult = {g.dominant}, others;
    ir::Dim results = reduceGeometry(plan_.graph, node(g.dominant)).kept;
    for (ir::NodeId v : rest)
      (ir::numElements(node(v).type.shape) == results && !isSplit(g) ? perResult : others)
          .push_back(v);
    emitReduceStage(s, g, g.dominant, perResult);
    rest = others;
  } else {
    for (ir::NodeId r : reduces) {
      emitReduceStage(s, g, r, {r});
      written_.insert(r);
    }
  }
  if (rest.empty()) return;
  for (ir::NodeId r : reduces)
    written_.insert(r);
  if (sharedDirty_) {
    k_.blockBarrier();
    sharedDirty_ = false;
  }
  installWritten();
  emitElementwiseStage(s, g, rest);
}

void KernelEmitter::emitPhase(const std::vector<const fusion::Stage*>& phase) {
  llvm::IRBuilder<>& b = b_;
  phaseStaged_ = 0; // the previous phase's staging is dead behind the grid barrier
  TileSpace s = spaceOf(phase);
  llvm::Value* units = k_.dim(s.units);
  llvm::Value* unitTiles =
      b.CreateUDiv(b.CreateAdd(units, k_.index(s.unitsPerTile - 1)), k_.index(s.unitsPerTile));
  llvm::Value* tiles = b.CreateMul(unitTiles, k_.index(s.split));
  sharedDirty_ = false;
  std::vector<ir::NodeId>& phaseShared =
      phaseShared_; // shared values of this phase: valid per tile only
  phaseShared.clear();
  for (const fusion::Stage* st : phase)
    for (ir::NodeId v : st->materialized)
      if (placement(v).storage == Storage::Shared) phaseShared.push_back(v);
  std::vector<const fusion::Stage*> across; // across-tiles reduce stages of this phase
  for (const fusion::Stage* st : phase)
    if (isAcrossTiles(kp_.groups.at(size_t(st->group)), *st)) across.push_back(st);
  slotPhase_ = slotPhaseOf(s, phase);
  const std::optional<SlotPhase>& slotPhase = slotPhase_;
  if (slotPhase) slotRegisters_ = std::max(slotRegisters_, slotPhase->registers);
  std::vector<ir::NodeId> slotAcross = slotPhase ? slotPhase->across : std::vector<ir::NodeId>{};
  std::optional<SlotPhase> slotPhaseCopy = slotPhase;
  // Allocated before any staging, which must leave the combine its room.
  llvm::Value* combineArray =
      slotAcross.empty() ? nullptr : newStagingArray(slotCombineBytes(*slotPhase));
  for (ir::NodeId r : slotAcross) {
    const ir::Node& n = node(r);
    int64_t count = rowSlotSteps(slotPhase->loop, slotPhase->rowDims, slotPhase->mapping,
                                 k_.blockSize, s.unitsPerTile) *
                    std::max(1, slotPhase->mapping.vectorWidth);
    std::vector<llvm::AllocaInst*>& accs = slotAccumulators_[r];
    for (int64_t i = 0; i < count; ++i) {
      accs.push_back(k_.entryAlloca(computeType(k_.ctx(), n.type.dtype),
                                    fmt::format("{}.slot{}", n.name, i)));
      b.CreateStore(reductionIdentity(k_.ctx(), n.attr<ir::ReduceAttrs>().kind, n.type.dtype),
                    accs.back());
    }
  }
  for (const fusion::Stage* st : across)
    for (ir::NodeId r : acrossReduces(*st))
      if (!slotAccumulators_.count(r)) emitAcrossTilesInit(r);
  std::vector<ir::NodeId> staged;
  if (slotPhase) {
    int64_t rowLength = 1; // a row's elements: what one broadcast over the rows can hold
    for (size_t d = slotPhase->rowDims; d < slotPhase->loop.size(); ++d)
      rowLength *= slotPhase->loop[d].size();
    staged = stageBroadcasts(s, {slotPhase->group}, rowLength);
  } else if (std::holds_alternative<fusion::ElementwiseMapping>(
                 kp_.groups.at(size_t(phase.front()->group)).mapping) &&
             s.kind != TileSpace::Kind::Columns && manyTilesPerBlock(s)) {
    // A flat elementwise phase whose blocks handle several tiles (bias + GELU over [16384,
    // 3072]): its small broadcast inputs are read once per block, not once per element.
    staged = stageBroadcasts(s, {phase.front()->group}, std::numeric_limits<int64_t>::max());
  } else if (s.kind == TileSpace::Kind::Rows) {
    // Any other phase over rows: row vectors every row reads, where a block reads each twice.
    std::vector<int> groups;
    for (const fusion::Stage* st : phase)
      if (std::find(groups.begin(), groups.end(), st->group) == groups.end())
        groups.push_back(st->group);
    staged = stageBroadcasts(s, groups, std::numeric_limits<int64_t>::max(), true);
  }
  if (slotPhase) planTileSlices(s, *slotPhase);
  k_.loop(
      "tile", k_.toIndex(k_.blockId()), tiles, k_.toIndex(k_.gridSize()), [&](llvm::Value* tile) {
        s.firstTile = b.CreateICmpEQ(tile, k_.toIndex(k_.blockId()));
        llvm::Value* unitTile = s.split > 1 ? b.CreateUDiv(tile, k_.index(s.split)) : tile;
        s.part = s.split > 1 ? b.CreateURem(tile, k_.index(s.split)) : k_.index(0);
        s.u0 = b.CreateMul(unitTile, k_.index(s.unitsPerTile));
        s.u1 = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                       b.CreateAdd(s.u0, k_.index(s.unitsPerTile)), units);
        if (slotPhase) {
          slots_ =
              makeRowSlots(k_, slotPhase->loop, slotPhase->rowDims, slotPhase->mapping, s.u0, s.u1);
          slotGroup_ = slotPhase->group;
          gen_->beginReuse(slotPhase->reused);
          copyTileSlices(s, *slotPhase);
        }
        for (const fusion::Stage* st : phase) {
          emitStage(s, *st);
          for (ir::NodeId v : st->materialized)
            written_.insert(v);
        }
        if (slotPhase) {
          gen_->endReuse();
          slots_.reset();
          slotGroup_ = -1;
        }
        if (!phaseShared.empty())
          k_.blockBarrier(); // the next tile overwrites this tile's shared values
        sharedDirty_ = false;
      });
  slotPhase_.reset();
  for (ir::NodeId v : staged)
    installLoad(v, nullptr); // later phases read the input from global memory again
  for (const TileSlice& t : tileSlices_)
    installLoad(t.input, nullptr);
  tileSlices_.clear();
  if (!slotAcross.empty()) emitSlotAccumulatorsToPartials(*slotPhaseCopy, combineArray);
  emitSharedPartialsToGlobal();
  if (!across.empty()) {
    gridBarrier();
    for (const fusion::Stage* st : across)
      emitAcrossTilesCombine(*st);
  }
  // A split reduce with a partials buffer: combine the partials after a grid barrier.
  const fusion::Group& g0 = kp_.groups.at(size_t(phase.front()->group));
  if (s.split > 1 && placement(g0.dominant).partialsBuffer >= 0) {
    gridBarrier();
    emitPartialsCombine(s, g0, g0.dominant, phase.front()->materialized);
    for (ir::NodeId v : phase.front()->materialized)
      written_.insert(v);
  }
  // Later phases cannot read this phase's shared values (their generators captured `s`).
  for (ir::NodeId v : phaseShared)
    gen_->setGenerator(v, [this, v](const Index&) -> llvm::Value* {
      k_.fail(v, "is read from shared memory in a later phase than the one that wrote it; use "
                 "global storage");
    });
}

EmittedKernel KernelEmitter::run() {
  validate();
  declareFunction();
  auto* entry = llvm::BasicBlock::Create(m_.getContext(), "entry", k_.fn);
  b_.SetInsertPoint(entry);
  gen_ = std::make_unique<ElementalEmitter>(k_);
  for (const auto& [id, p] : kp_.placement)
    if (p.storage == Storage::Input) installLoad(id, nullptr);
  emitSplitInit();
  std::vector<const fusion::Stage*> phase;
  for (const fusion::Stage& st : kp_.stages) {
    if (st.barrierBefore == fusion::Barrier::Grid && !phase.empty()) {
      emitPhase(phase);
      phase.clear();
      gridBarrier();
    }
    phase.push_back(&st);
  }
  if (!phase.empty()) emitPhase(phase);
  b_.CreateRetVoid();
  finishStagingArena();
  // Values kept in registers across stages need room beyond the plan's register bound (which
  // assumed kBaseRegisters): a kernel that keeps some gets every register a thread of its
  // block can have, i.e. no .maxnreg, .maxntid bounds it (ptxas spilled a few bytes at an
  // explicit .maxnreg of that same bound). slotPhaseOf keeps cooperative kernels, whose grid
  // the bound sized, within it.
  int maxRegisters = kp_.launch.maxRegisters;
  if (slotRegisters_ > 0 && !kp_.launch.cooperative) maxRegisters = 0;
  if (maxRegisters > 0) annotate(m_, k_.fn, "maxnreg", maxRegisters);

  info_.name = kp_.name;
  info_.launch = kp_.launch;
  info_.dynamicSharedBytes = uint32_t(dynamicShared_);
  info_.planStep = step_;
  return {k_.fn, info_};
}

} // namespace

EmittedKernel emitKernel(llvm::Module& module, const fusion::FusionPlan& plan, int step,
                         bool useLibdevice) {
  return KernelEmitter(module, plan, step, useLibdevice).run();
}

// ---- library kernels ------------------------------------------------------------------------

EmittedKernel emitLibraryKernel(llvm::Module& module, const fusion::FusionPlan& plan, int step,
                                bool useLibdevice) {
  const auto& call = std::get<fusion::LibraryCall>(plan.steps[size_t(step)]);
  const ir::Graph& g = plan.graph;
  const ir::Node& n = g.node(call.op);
  llvm::LLVMContext& c = module.getContext();
  llvm::IRBuilder<> b(c);
  KernelContext k;
  k.module = &module;
  k.b = &b;
  k.plan = &plan;
  k.graph = &g;
  k.useLibdevice = useLibdevice;
  k.blockSize = 256;
  std::string name = fmt::format("lib{}_", step);
  for (char ch : n.name)
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  k.kernelName = name;
  if (n.kind != ir::OpKind::Dot) k.fail(n.id, "only dot has a library kernel");

  const ir::Node& a = g.node(n.operands[0]);
  const ir::Node& bm = g.node(n.operands[1]);
  std::vector<ir::NodeId> values = {a.id, bm.id, n.id};
  CompiledKernel info;
  std::set<std::string> symbols;
  bool big = false;
  for (ir::NodeId v : values) {
    for (const std::string& s : ir::symbolsOf(g.node(v).type.shape))
      symbols.insert(s);
    ir::Dim e = ir::numElements(g.node(v).type.shape);
    big = big || !e.isStatic() || e.size() >= (int64_t(1) << 30);
  }
  k.indexTy = big ? b.getInt64Ty() : b.getInt32Ty();
  std::vector<llvm::Type*> types;
  std::vector<int> bufs;
  for (ir::NodeId v : values) {
    int buf = plan.bufferOfValue.at(size_t(v));
    if (buf < 0) k.fail(v, "a library call's operands and result need buffers");
    if (std::find(bufs.begin(), bufs.end(), buf) != bufs.end()) continue;
    bufs.push_back(buf);
    types.push_back(llvm::PointerType::get(c, 1));
    info.params.push_back({KernelParam::Kind::Buffer, buf, ""});
  }
  for (const std::string& s : symbols) {
    types.push_back(b.getInt64Ty());
    info.params.push_back({KernelParam::Kind::Symbol, -1, s});
  }
  k.fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), types, false),
                                llvm::GlobalValue::ExternalLinkage, name, module);
  unsigned i = 0;
  for (int buf : bufs)
    k.bufferArg[buf] = k.fn->getArg(i++);
  for (const std::string& s : symbols)
    k.symbolArg[s] = k.fn->getArg(i++);
  annotate(module, k.fn, "kernel", 1);
  annotate(module, k.fn, "maxntidx", k.blockSize);
  b.SetInsertPoint(llvm::BasicBlock::Create(c, "entry", k.fn));

  // out[..., m, n] = sum_k a[..., m, k] * b[..., k, n], accumulated in the compute type.
  const ir::Shape& os = n.type.shape;
  size_t r = os.size();
  ir::Dim kDim = a.type.shape[r - 1];
  ir::DType t = n.type.dtype;
  llvm::Value* total = k.elements(os);
  llvm::Value* start = b.CreateAdd(b.CreateMul(k.toIndex(k.blockId()), k.index(k.blockSize)),
                                   k.toIndex(k.threadId()));
  llvm::Value* stride = b.CreateMul(k.toIndex(k.gridSize()), k.index(k.blockSize));
  llvm::AllocaInst* acc = k.entryAlloca(computeType(c, t), "acc");
  llvm::Value* pa = k.bufferArg[plan.bufferOfValue[size_t(a.id)]];
  llvm::Value* pb = k.bufferArg[plan.bufferOfValue[size_t(bm.id)]];
  llvm::Value* po = k.bufferArg[plan.bufferOfValue[size_t(n.id)]];
  k.loop("out", start, total, stride, [&](llvm::Value* flat) {
    Index idx = delinearize(k, os, flat);
    b.CreateStore(constantOf(c, t, 0.0), acc);
    k.loop("k", k.index(0), k.dim(kDim), k.index(1), [&](llvm::Value* kk) {
      Index ai = idx, bi = idx;
      ai[r - 1] = kk;
      bi[r - 2] = kk;
      llvm::Value* x = k.loadElement(pa, t, linearize(k, a.type.shape, ai));
      llvm::Value* y = k.loadElement(pb, t, linearize(k, bm.type.shape, bi));
      llvm::Value* cur = b.CreateLoad(acc->getAllocatedType(), acc);
      llvm::Value* sum =
          ir::isFloat(t) ? b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, cur})
                         : b.CreateAdd(cur, b.CreateMul(x, y));
      b.CreateStore(sum, acc);
    });
    llvm::Value* v = b.CreateLoad(acc->getAllocatedType(), acc);
    k.storeElement(po, t, flat, ir::isFloat(t) ? roundToDType(b, v, t) : v);
  });
  b.CreateRetVoid();

  info.name = name;
  info.planStep = step;
  info.launch.blockSize = k.blockSize;
  ir::Dim elems = ir::numElements(os);
  if (elems.isStatic()) {
    info.launch.tiles = std::max<int64_t>(1, (elems.size() + k.blockSize - 1) / k.blockSize);
  } else {
    info.launch.tiles = elems;
    info.launch.maxBlocks =
        int64_t(plan.device.smCount) * std::max(1, plan.device.maxThreadsPerSM / k.blockSize) * 4;
  }
  return {k.fn, info};
}

} // namespace weft::codegen
