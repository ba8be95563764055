#include "codegen/kernel_emitter.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Metadata.h>
#include <optional>
#include <set>

#include "codegen/cluster_access.h"
#include "codegen/grid_barrier.h"
#include "codegen/shared_staging.h"
#include "codegen/stitched_kernel_emitter.h"
#include "weft/error.h"

namespace weft::codegen {
namespace detail {

void annotate(llvm::Module& m, llvm::Function* f, const char* key, int value) {
  llvm::LLVMContext& c = m.getContext();
  llvm::NamedMDNode* md = m.getOrInsertNamedMetadata("nvvm.annotations");
  llvm::Metadata* ops[] = {
      llvm::ValueAsMetadata::get(f), llvm::MDString::get(c, key),
      llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), value))};
  md->addOperand(llvm::MDNode::get(c, ops));
}

namespace {

constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();

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

} // namespace

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
  size_t covered = 0;
  for (const fusion::PhasePlan& p : kp_.phases) {
    if (p.firstStage != covered || p.stageCount == 0)
      throw Error(k_.where(-1) + ": the plan's phases do not cover its stages in order");
    covered += p.stageCount;
  }
  if (covered != kp_.stages.size())
    throw Error(k_.where(-1) + fmt::format(": the plan's phases cover {} of its {} stages (run "
                                           "fusion::planPhases once the kernel is planned)",
                                           covered, kp_.stages.size()));
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
  needsBarrierState_ = needsBarrierState_ || kp_.needsBarrierState();

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
    if (p.storage == Storage::Shared || p.resident) {
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
  int64_t scratch = kp_.reduceScratchBytes;
  if (scratch > 0) {
    auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(c), uint64_t(scratch));
    k_.reduceScratch = new llvm::GlobalVariable(
        m_, at, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(at),
        kp_.name + "_reduce_scratch", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    k_.reduceScratch->setAlignment(llvm::Align(16));
  }
  const DeviceSpec& d = plan_.device;
  if (dynamicShared_ + scratch > d.sharedMemoryPerBlock)
    k_.fail(
        kp_.groups.at(size_t(kp_.stages[0].group)).dominant,
        fmt::format(
            "needs {} B of shared memory per block ({} B planned + {} B reduction scratch) but {} "
            "allows {} B",
            dynamicShared_ + scratch, dynamicShared_, scratch, d.name, d.sharedMemoryPerBlock));
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

llvm::Value* KernelEmitter::sharedIndex(const TileSpace& s, ir::NodeId value, llvm::Value* flat) {
  // Shared values hold the current tile's elements only: a value computed outside the tiles
  // (a grid-stride loop over its own elements) cannot read them. The planner never lets it:
  // values read off the rows are Global, and an input read off them is not resident.
  if (untiledLoop_)
    k_.fail(value, "is held in shared memory for the current tile only, but a value computed "
                   "outside the phase's tiles reads it");
  llvm::Value* local = localIndex(s, value, flat);
  if (!placement(value).resident) return local;
  if (!s.ordinal || !s.sameTiles(kp_.residentSpace))
    k_.fail(value, "is kept in shared memory across grid barriers, but this phase cuts its tiles "
                   "differently from the plan's resident space");
  ir::Dim inner = innerOf(s, value);
  if (!inner.isStatic())
    k_.fail(value, "is kept in shared memory across grid barriers with a symbolic tile size");
  return b_.CreateAdd(b_.CreateMul(s.ordinal, k_.index(s.unitsPerTile * inner.size())), local);
}

void KernelEmitter::installLoad(ir::NodeId value, const TileSpace* space) {
  const fusion::ValuePlacement& p = placement(value);
  const ir::Node& n = node(value);
  // A resident input is read from its slots in the phases that keep it (they pass their space).
  if (p.storage == Storage::Shared || (p.resident && space)) {
    gen_->setGenerator(value, [this, value, space, off = p.sharedOffset, &n](const Index& idx) {
      if (!space)
        k_.fail(value,
                "is read from shared memory outside the phase that wrote it; use global storage");
      llvm::Value* flat = linearize(k_, n.type.shape, idx);
      return k_.loadElement(k_.sharedPointer(off), n.type.dtype, sharedIndex(*space, value, flat));
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
    k_.storeElement(k_.sharedPointer(p.sharedOffset), n.type.dtype, sharedIndex(s, value, flat),
                    v);
    (p.warpLocal ? warpDirty_ : sharedDirty_) = true;
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

void KernelEmitter::handOffToLastBlock() {
  llvm::Function* f = getOrEmitLastBlock(m_);
  llvm::Type* i32 = b_.getInt32Ty();
  auto* flag = new llvm::GlobalVariable(m_, i32, false, llvm::GlobalValue::InternalLinkage,
                                        llvm::UndefValue::get(i32), kp_.name + "_handoff", nullptr,
                                        llvm::GlobalValue::NotThreadLocal, 3);
  flag->setAlignment(llvm::Align(4));
  llvm::Value* last = b_.CreateCall(f, {k_.barrierState, k_.gridSize(), flag});
  auto* leave = llvm::BasicBlock::Create(m_.getContext(), "handoff.leave", k_.fn);
  auto* stay = llvm::BasicBlock::Create(m_.getContext(), "handoff.last", k_.fn);
  b_.CreateCondBr(b_.CreateICmpNE(last, b_.getInt32(0)), stay, leave);
  b_.SetInsertPoint(leave);
  b_.CreateRetVoid();
  b_.SetInsertPoint(stay);
  k_.aloneInGrid = true; // the rest of the kernel runs as block 0 of a grid of one
}

void KernelEmitter::emitElementwiseStage(TileSpace& s, const fusion::Group& g,
                                         const std::vector<ir::NodeId>& values) {
  llvm::IRBuilder<>& b = b_;
  int vector = 1;
  if (const auto* e = std::get_if<fusion::ElementwiseMapping>(&g.mapping))
    vector = std::max(1, e->vectorWidth);
  // In a slot phase, the group's values over its loop visit the slots (in registers).
  // Warp-local values one per row: in the row's own lanes.
  std::vector<ir::NodeId> inLoop, inLanes, others;
  for (ir::NodeId v : values) {
    if (placement(v).warpLocal && !inSlots(g))
      k_.fail(v, "is warp-local, but its stage does not run in its group's row slots");
    (inSlots(g) && node(v).type.shape == slotPhase_->loop ? inLoop
     : placement(v).warpLocal                             ? inLanes
                                                          : others)
        .push_back(v);
  }
  if (!inLoop.empty()) emitSlotStage(s, inLoop);
  if (!inLanes.empty()) emitInRowLanes(s, inLanes);
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
    if (!fits && inMemory) {
      // Not in the phase's index space (e.g. a projection of it): computed once per phase by
      // a grid-stride loop over its own elements, in each block's first tile; readers see it
      // after the next grid barrier. Its reads of shared memory would be the tile's only:
      // sharedIndex refuses them (random graph 13907's sin of a column max, beside a row max in
      // shared memory, read none and was refused for the row max).
      untiledLoop_ = true;
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
      untiledLoop_ = false;
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

llvm::Value* KernelEmitter::stagingArray(int64_t offset) {
  // One static array for every phase (sized when the kernel is finished, finishStagingArena).
  llvm::LLVMContext& c = m_.getContext();
  if (!stagingArena_) {
    auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(c), 1);
    stagingArena_ = new llvm::GlobalVariable(m_, at, false, llvm::GlobalValue::InternalLinkage,
                                             llvm::UndefValue::get(at), kp_.name + "_staged_tmp",
                                             nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  }
  return llvm::ConstantExpr::getInBoundsGetElementPtr(
      llvm::Type::getInt8Ty(c), stagingArena_,
      llvm::ConstantInt::get(llvm::Type::getInt64Ty(c), uint64_t(offset)));
}

void KernelEmitter::finishStagingArena() {
  if (!stagingArena_) return;
  auto* at = llvm::ArrayType::get(llvm::Type::getInt8Ty(m_.getContext()), uint64_t(kp_.stagingBytes));
  auto* arena = new llvm::GlobalVariable(m_, at, false, llvm::GlobalValue::InternalLinkage,
                                         llvm::UndefValue::get(at), kp_.name + "_staged", nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 3);
  arena->setAlignment(llvm::Align(16));
  stagingArena_->replaceAllUsesWith(arena);
  stagingArena_->eraseFromParent();
  stagingArena_ = nullptr;
}

void KernelEmitter::emitStagedInputs(const fusion::PhasePlan& phase) {
  // Each staged input is copied into shared memory once per block, before the phase's tiles,
  // and the phase reads it there. Through the cluster, block r of C loads elements
  // [r * chunk, (r + 1) * chunk) from global memory and copies the others from the cluster's
  // blocks that loaded them (chunk = ceil(n / C), rounded up to whole 16-byte vectors).
  if (phase.staged.empty()) return;
  llvm::LLVMContext& c = m_.getContext();
  llvm::Value* array = stagingArray(phase.stagedOffset);
  llvm::Value* rank = nullptr;
  llvm::Value* blocks = nullptr;
  if (phase.throughCluster) {
    rank = k_.toIndex(clusterRank(k_));
    blocks = k_.toIndex(clusterBlocks(k_));
  }
  struct Copy {
    const ir::Node* n;
    llvm::Value* shared;
    llvm::Value* chunk; // elements each block of the cluster loads
    int vector;         // elements per copy
  };
  std::vector<Copy> copies;
  // A computed value whose cone reads an input the phase copies is computed from the copy,
  // behind the copies' barrier (Figure 7's power.1 from parameter.2), and the phase waits for it
  // behind a second one. The others are computed first, from global memory, before the copies
  // point their inputs' reads at shared memory not yet written.
  std::set<ir::NodeId> copied;
  for (const fusion::StagedInput& in : phase.staged)
    if (!in.computed) copied.insert(in.input);
  // Whether v's cone reads one of `values`.
  auto reads = [&](ir::NodeId v, const std::set<ir::NodeId>& values) {
    bool found = false;
    walkCone(v, [&](ir::NodeId u) {
      found = found || values.count(u) > 0;
      return !found;
    });
    return found;
  };
  // A computed value whose cone reads another one computed before it reads that one's shared
  // array, other threads' elements: a block barrier between them.
  std::set<ir::NodeId> computed;
  auto compute = [&](const fusion::StagedInput& in) {
    if (reads(in.input, computed)) k_.blockBarrier();
    computeIntoShared(in, array, copied);
    computed.insert(in.input);
  };
  std::vector<const fusion::StagedInput*> fromCopies;
  for (const fusion::StagedInput& in : phase.staged) {
    if (!in.computed) continue;
    if (reads(in.input, copied))
      fromCopies.push_back(&in);
    else
      compute(in);
  }
  for (const fusion::StagedInput& in : phase.staged) {
    if (in.computed) continue;
    const ir::Node& n = node(in.input);
    llvm::Value* global = k_.bufferPointer(placement(in.input).buffer, in.input);
    llvm::Value* shared =
        b_.CreateConstInBoundsGEP1_64(llvm::Type::getInt8Ty(c), array, uint64_t(in.offset));
    llvm::Value* count = k_.elements(n.type.shape);
    ClusterShare own{k_.index(0), count};
    llvm::Value* chunk = nullptr;
    const int vector = in.vector;
    if (phase.throughCluster) {
      // Whole vectors per block, so that every share starts aligned.
      llvm::Value* vec = k_.index(vector);
      chunk = b_.CreateMul(clusterChunk(k_, clusterChunk(k_, count, blocks), vec), vec);
      own = clusterShare(k_, count, chunk, rank);
    }
    copyGlobalToShared(k_, n.name + ".stage", global, shared, n.type.dtype, vector, own.lo,
                       own.hi);
    copies.push_back({&n, shared, chunk, vector});
    gen_->setGenerator(in.input, [this, shared, &n](const Index& idx) {
      return k_.loadTensorElement(shared, n.type.dtype, n.type.shape, idx);
    });
  }
  if (phase.throughCluster) {
    clusterBarrier(k_); // every block's share is in its shared memory
    // The other blocks' shares, one rank at a time (the launch's cluster has at most the
    // planned size; a launch without clusters has one block and copies nothing).
    for (const Copy& cp : copies) {
      const ir::Node& n = *cp.n;
      llvm::Value* count = k_.elements(n.type.shape);
      for (int q = 0; q < kp_.launch.clusterSize; ++q) {
        llvm::Value* peer = k_.index(q);
        k_.ifThen(b_.CreateAnd(b_.CreateICmpULT(peer, blocks), b_.CreateICmpNE(peer, rank)), [&] {
          llvm::Value* array = mapToClusterBlock(k_, cp.shared, b_.getInt32(uint32_t(q)));
          ClusterShare theirs = clusterShare(k_, count, cp.chunk, peer);
          copyPeerToShared(k_, n.name + ".peer", array, cp.shared, n.type.dtype, cp.vector,
                           theirs.lo, theirs.hi);
        });
      }
    }
  }
  k_.blockBarrier();
  if (fromCopies.empty()) return;
  computed.clear(); // behind the barrier above
  for (const fusion::StagedInput* in : fromCopies)
    compute(*in);
  k_.blockBarrier();
}

void KernelEmitter::walkCone(ir::NodeId v, const std::function<bool(ir::NodeId)>& visit) const {
  std::vector<ir::NodeId> work = node(v).operands;
  std::set<ir::NodeId> seen;
  while (!work.empty()) {
    ir::NodeId u = work.back();
    work.pop_back();
    if (!seen.insert(u).second || !visit(u) || gen_->hasGenerator(u)) continue;
    work.insert(work.end(), node(u).operands.begin(), node(u).operands.end());
  }
}

void KernelEmitter::computeIntoShared(const fusion::StagedInput& in, llvm::Value* array,
                                      const std::set<ir::NodeId>& copied) {
  // One element per thread per step, each computed from its cone; the phase's reads of the
  // value then load it from shared memory (behind emitStagedInputs' closing block barrier).
  // An input of the cone kept resident per tile (a small x read whole by its rows' blocks) is
  // read from global memory here, outside any tile, and its slot reader is put back after.
  std::vector<std::pair<ir::NodeId, std::optional<ElementalEmitter::Generator>>> resident;
  walkCone(in.input, [&](ir::NodeId u) {
    if (copied.count(u)) return false;
    const fusion::ValuePlacement& p = placement(u);
    if (!p.resident || p.storage != Storage::Input) return true;
    const ElementalEmitter::Generator* g = gen_->generatorOf(u);
    resident.push_back({u, g ? std::optional(*g) : std::nullopt});
    installLoad(u, nullptr);
    return false;
  });
  const ir::Node& n = node(in.input);
  llvm::Value* shared = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), array, uint64_t(in.offset));
  k_.loop(n.name + ".compute", k_.toIndex(k_.threadId()), k_.elements(n.type.shape),
          k_.index(k_.blockSize), [&](llvm::Value* i) {
            k_.storeElement(shared, n.type.dtype, i,
                            gen_->emit(in.input, delinearize(k_, n.type.shape, i)));
          });
  gen_->clearCache();
  for (auto& [u, g] : resident) {
    if (g)
      gen_->setGenerator(u, std::move(*g));
    else
      gen_->clearGenerator(u);
  }
  gen_->setGenerator(in.input, [this, shared, &n](const Index& idx) {
    return k_.loadTensorElement(shared, n.type.dtype, n.type.shape, idx);
  });
}

void KernelEmitter::installTileSlices(const fusion::PhasePlan& phase) {
  tileSlices_.clear();
  if (phase.slices.empty()) return;
  llvm::LLVMContext& c = m_.getContext();
  llvm::Value* array = stagingArray(phase.slicesOffset);
  for (const fusion::TileSlice& slice : phase.slices) {
    const ir::Node& n = node(slice.input);
    TileSlice t{&slice,
                b_.CreateConstInBoundsGEP1_64(llvm::Type::getInt8Ty(c), array,
                                              uint64_t(slice.offset)),
                nullptr};
    if (phase.contiguousTiles) {
      t.copiedFrom = k_.entryAlloca(k_.indexTy, n.name + ".slice_from");
      b_.CreateStore(k_.index(-1), t.copiedFrom);
    }
    llvm::Value* global = k_.bufferPointer(placement(slice.input).buffer, slice.input);
    // Slot stages read the tile's slice (their rows are the tile's); anything else the input.
    gen_->setGenerator(slice.input, [this, t, global, &n](const Index& idx) {
      if (!slotsReading_) return k_.loadTensorElement(global, n.type.dtype, n.type.shape, idx);
      Index at;
      for (size_t i : t.plan->sliceDims)
        at.push_back(idx[i]);
      return k_.loadTensorElement(t.shared, n.type.dtype, t.plan->shape, at);
    });
    tileSlices_.push_back(t);
  }
}

void KernelEmitter::copyTileSlices(const TileSpace& s, const fusion::SlotPlan& sp,
                                   bool contiguous) {
  if (tileSlices_.empty()) return;
  // Row coordinates of the tile's first row; every row of the tile has the slices' ones.
  ir::Shape rowShape(sp.loop.begin(), sp.loop.begin() + int64_t(sp.rowDims));
  Index row = delinearize(k_, rowShape, s.u0);
  // The input element at slice position `in` of this tile's slice.
  auto inputIndex = [&](const TileSlice& slice, const Index& in) {
    const fusion::TileSlice& t = *slice.plan;
    const ir::Shape& shape = node(t.input).type.shape;
    Index full;
    size_t next = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (t.rowDimOf[d] >= 0)
        full.push_back(row[size_t(t.rowDimOf[d])]);
      else if (next < t.sliceDims.size() && t.sliceDims[next] == d)
        full.push_back(in[next++]);
      else
        full.push_back(k_.index(0)); // stretched
    }
    return linearize(k_, shape, full);
  };
  auto copy = [&] {
    for (const TileSlice& slice : tileSlices_) {
      const fusion::TileSlice& t = *slice.plan;
      const ir::Node& n = node(t.input);
      llvm::Value* global = k_.bufferPointer(placement(t.input).buffer, t.input);
      k_.loop(n.name + ".slice", k_.toIndex(k_.threadId()), k_.elements(t.shape),
              k_.index(k_.blockSize), [&](llvm::Value* i) {
                k_.storeElement(slice.shared, n.type.dtype, i,
                                k_.loadElement(global, n.type.dtype,
                                               inputIndex(slice, delinearize(k_, t.shape, i))));
              });
    }
  };
  if (!contiguous) {
    copy(); // the previous tile's end barrier let every reader of the last slices finish
    k_.blockBarrier();
    return;
  }
  // Contiguous tiles: copy only where a slice starts elsewhere than the copied one (the same
  // in every thread of the block, so the barriers inside are reached by all). The barrier
  // before the copy lets the previous tiles' readers finish.
  llvm::Value* changed = b_.getFalse();
  std::vector<llvm::Value*> from;
  for (const TileSlice& slice : tileSlices_) {
    Index zero(slice.plan->shape.size(), k_.index(0));
    from.push_back(inputIndex(slice, zero));
    changed = b_.CreateOr(changed,
                          b_.CreateICmpNE(from.back(), b_.CreateLoad(k_.indexTy,
                                                                      slice.copiedFrom)));
  }
  k_.ifThen(changed, [&] {
    k_.blockBarrier();
    copy();
    for (size_t i = 0; i < tileSlices_.size(); ++i)
      b_.CreateStore(from[i], tileSlices_[i].copiedFrom);
    k_.blockBarrier();
  });
}

void KernelEmitter::loadResidentInputs(const TileSpace& s, const std::vector<ir::NodeId>& inputs) {
  // The tile's elements of each input, from global memory into the block's slot for this tile
  // (consecutive threads, consecutive elements); every phase that keeps it reads it there.
  llvm::IRBuilder<>& b = b_;
  for (ir::NodeId v : inputs) {
    const ir::Node& n = node(v);
    const fusion::ValuePlacement& p = placement(v);
    if (s.kind == TileSpace::Kind::Columns)
      k_.fail(v, "is kept in shared memory across grid barriers in column tiles");
    llvm::Value* inner = k_.dim(innerOf(s, v));
    llvm::Value* base = s.kind == TileSpace::Kind::Rows ? b.CreateMul(s.u0, inner) : s.u0;
    llvm::Value* count = b.CreateMul(b.CreateSub(s.u1, s.u0), inner);
    if (s.kind == TileSpace::Kind::Flat) count = b.CreateSub(s.u1, s.u0);
    llvm::Value* global = k_.bufferPointer(p.buffer, v);
    llvm::Value* shared = k_.sharedPointer(p.sharedOffset);
    k_.loop(n.name + ".resident", k_.toIndex(k_.threadId()), count, k_.index(k_.blockSize),
            [&](llvm::Value* l) {
              llvm::Value* flat = b.CreateAdd(base, l);
              k_.storeElement(shared, n.type.dtype, sharedIndex(s, v, flat),
                              k_.loadElement(global, n.type.dtype, flat));
            });
  }
  k_.blockBarrier();
}

bool KernelEmitter::inSlots(const fusion::Group& g) const {
  return slots_ && slotGroup_ >= 0 && &g == &kp_.groups.at(size_t(slotGroup_));
}

void KernelEmitter::emitInRowLanes(const TileSpace& s, const std::vector<ir::NodeId>& values) {
  // Every lane of a row computes the row's values from values its own warp wrote; the row's
  // first lane stores them (fusion/stitching_scheme.cc, warpLocalBarriers).
  const RowSlots& slots = *slots_;
  const int lanes = slotPhase_->mapping.threadsPerRow;
  llvm::Value* first =
      b_.CreateICmpEQ(b_.CreateURem(k_.toIndex(k_.threadId()), k_.index(lanes)), k_.index(0));
  // Warp-local tiles are whole (a plan condition); a row past the tile would still read the
  // tile's first, in bounds, as the slots do.
  llvm::Value* row = b_.CreateSelect(slots.valid, slots.row, s.u0);
  gen_->clearCache();
  std::vector<llvm::Value*> results;
  for (ir::NodeId v : values)
    results.push_back(gen_->emit(v, delinearize(k_, node(v).type.shape, row)));
  gen_->clearCache();
  k_.ifThen(b_.CreateAnd(slots.valid, first), [&] {
    for (size_t i = 0; i < values.size(); ++i)
      store(s, values[i], slots.row, results[i]);
  });
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

std::vector<ir::NodeId> KernelEmitter::splitSiblings(const fusion::Stage& st,
                                                     const fusion::Group& g) const {
  // Reduces over the same axes of an operand of the same shape: the same rows, the same parts.
  const ir::Node& d = node(g.dominant);
  auto sameRows = [&](const ir::Node& r) {
    return r.attr<ir::ReduceAttrs>().axes == d.attr<ir::ReduceAttrs>().axes &&
           node(r.operands[0]).type.shape == node(d.operands[0]).type.shape;
  };
  std::vector<ir::NodeId> siblings;
  for (ir::NodeId v : st.materialized)
    if (v != g.dominant && node(v).kind == ir::OpKind::Reduce &&
        placement(v).partialsBuffer >= 0 && sameRows(node(v)))
      siblings.push_back(v);
  return siblings;
}

void KernelEmitter::emitReduceStage(TileSpace& s, const fusion::Group& g, ir::NodeId reduce,
                                    const std::vector<ir::NodeId>& materialized,
                                    const std::vector<ir::NodeId>& operandStores,
                                    bool splitSibling) {
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  bool split = isSplit(g) && (reduce == g.dominant || splitSibling);
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

  auto [reducedBegin, reducedEnd] =
      split ? splitPart(s, g, geo) : std::pair(k_.index(0), k_.dim(geo.reduced));
  ReduceResult onResult = [&](llvm::Value* kept, llvm::Value* value) {
    gen_->clearCache();
    if (partials >= 0) {
      storePartial(s, reduce, kept, value);
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
  } else {
    // A split column sum whose stage also stores its operand (fusion: operandStage) stores each
    // element as it adds it.
    OperandSink onOperand;
    if (!operandStores.empty())
      onOperand = [&](const Index& idx, llvm::Value* v) {
        const ir::Node& o = node(r.operands[0]);
        llvm::Value* flat = linearize(k_, o.type.shape, idx);
        for (ir::NodeId w : operandStores)
          store(s, w, flat, v);
      };
    emitColumnReduce(k_, *gen_, r, std::get<fusion::ColumnReduceMapping>(g.mapping), s.u0, s.u1,
                     reducedBegin, reducedEnd, onResult, onOperand);
  }
  gen_->clearCache();
}

std::pair<llvm::Value*, llvm::Value*> KernelEmitter::splitPart(const TileSpace& s,
                                                               const fusion::Group& g,
                                                               const ReduceGeometry& geo) {
  // ceil(n / split) rounded up to whole vectors, so that every part starts aligned.
  llvm::IRBuilder<>& b = b_;
  int vw = 1;
  if (const auto* rm = std::get_if<fusion::RowReduceMapping>(&g.mapping))
    vw = std::max(1, rm->vectorWidth);
  llvm::Value* n = k_.dim(geo.reduced);
  llvm::Value* chunk = b.CreateUDiv(b.CreateAdd(n, k_.index(int64_t(s.split) * vw - 1)),
                                    k_.index(int64_t(s.split) * vw));
  chunk = b.CreateMul(chunk, k_.index(vw));
  llvm::Value* begin = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateMul(s.part, chunk), n);
  llvm::Value* end =
      b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(begin, chunk), n);
  return {begin, end};
}

void KernelEmitter::storePartial(const TileSpace& s, ir::NodeId reduce, llvm::Value* kept,
                                 llvm::Value* value) {
  // partials[part][kept], combined after the phase's grid barrier (emitPartialsCombine).
  const ir::Node& r = node(reduce);
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  llvm::Value* slot = b_.CreateAdd(b_.CreateMul(s.part, k_.dim(geo.kept)), kept);
  k_.storeElement(k_.bufferPointer(placement(reduce).partialsBuffer, reduce), r.type.dtype, slot,
                  value);
}

bool KernelEmitter::emitRowReducesInOnePass(TileSpace& s, const fusion::Group& g,
                                            const std::vector<ir::NodeId>& reduces, bool split) {
  const auto* rm = std::get_if<fusion::RowReduceMapping>(&g.mapping);
  if (reduces.size() < 2 || !rm || isSplit(g) != split || inSlots(g) ||
      s.kind != TileSpace::Kind::Rows)
    return false;
  const ir::Node& first = node(reduces.front());
  std::vector<const ir::Node*> nodes;
  for (ir::NodeId r : reduces) {
    const ir::Node& n = node(r);
    if (node(n.operands[0]).type.shape != node(first.operands[0]).type.shape ||
        n.attr<ir::ReduceAttrs>().axes != first.attr<ir::ReduceAttrs>().axes ||
        !(reduceGeometry(plan_.graph, n).kept == s.units) ||
        (split && placement(r).partialsBuffer < 0))
      return false; // emitReduceStage emits them one by one, or names the mismatch
    nodes.push_back(&n);
  }
  llvm::IRBuilder<>& b = b_;
  ReduceGeometry geo = reduceGeometry(plan_.graph, first);
  // A split block's partials go to global memory; so do unsplit results stored there.
  bool toGlobal = split;
  std::vector<ReduceResult> onResults;
  for (const ir::Node* n : nodes) {
    toGlobal = toGlobal || placement(n->id).storage == Storage::Global ||
               placement(n->id).storage == Storage::Output;
    onResults.push_back([this, &b, &s, n, split](llvm::Value* kept, llvm::Value* value) {
      gen_->clearCache();
      if (split) {
        storePartial(s, n->id, kept, value);
        return;
      }
      llvm::Value* result =
          ir::isFloat(n->type.dtype) ? roundToDType(b, value, n->type.dtype) : value;
      store(s, n->id, kept, result);
      gen_->clearCache();
    });
  }
  auto [begin, end] =
      split ? splitPart(s, g, geo) : std::pair{k_.index(0), k_.dim(geo.reduced)};
  emitRowReduces(k_, *gen_, nodes, *rm, s.u0, s.u1, begin, end, onResults, toGlobal);
  gen_->clearCache();
  return true;
}

void KernelEmitter::emitStage(TileSpace& s, const fusion::Stage& st) {
  const fusion::Group& g = kp_.groups.at(size_t(st.group));
  syncShared(st.barrierBefore);
  // Values materialised by earlier stages are loaded from their storage from now on; a value
  // stored for later phases (ValuePlacement::stored, by cost) is regenerated in its own phase.
  auto installWritten = [&] {
    for (ir::NodeId v : written_) {
      const fusion::ValuePlacement& p = placement(v);
      bool regenerated = p.stored && !p.stored->tooManyOps && phaseWritten_.count(v);
      if (!gen_->hasGenerator(v) && !regenerated)
        installLoad(v, p.storage == Storage::Shared ? &s : nullptr);
    }
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
  if (isAcrossTiles(st)) {
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
    // The stage's values that are the reduce's operand are stored as the reduce reads them.
    std::vector<ir::NodeId> operandStores;
    for (ir::NodeId v : st.materialized)
      if (v == node(g.dominant).operands[0]) operandStores.push_back(v);
    // Sibling reduces the planner split with it (their own partials: a log-softmax's
    // logsumexp beside its max) accumulate their partials too, in the same pass over the
    // block's part of each row where the mapping allows, else in a pass each; left to the
    // combine they were computed whole by one thread.
    std::vector<ir::NodeId> siblings = splitSiblings(st, g);
    std::vector<ir::NodeId> all = {g.dominant};
    all.insert(all.end(), siblings.begin(), siblings.end());
    if (operandStores.empty() && emitRowReducesInOnePass(s, g, all, /*split=*/true)) return;
    emitReduceStage(s, g, g.dominant, {g.dominant}, operandStores);
    for (ir::NodeId v : siblings)
      emitReduceStage(s, g, v, {v}, {}, /*splitSibling=*/true);
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
  } else if (emitRowReducesInOnePass(s, g, reduces, /*split=*/false)) {
    for (ir::NodeId r : reduces)
      written_.insert(r);
  } else {
    for (ir::NodeId r : reduces) {
      emitReduceStage(s, g, r, {r});
      written_.insert(r);
    }
  }
  if (rest.empty()) return;
  for (ir::NodeId r : reduces)
    written_.insert(r);
  syncShared(fusion::Barrier::None);
  installWritten();
  emitElementwiseStage(s, g, rest);
}

void KernelEmitter::syncShared(fusion::Barrier planned) {
  if (planned == fusion::Barrier::Block || sharedDirty_) {
    k_.blockBarrier();
    sharedDirty_ = warpDirty_ = false;
  } else if (planned == fusion::Barrier::Warp || warpDirty_) {
    k_.warpBarrier();
    warpDirty_ = false;
  }
}

void KernelEmitter::emitPhase(const fusion::PhasePlan& plan) {
  llvm::IRBuilder<>& b = b_;
  phase_ = &plan;
  phaseWritten_.clear();
  std::vector<const fusion::Stage*> phase;
  for (size_t i = 0; i < plan.stageCount; ++i)
    phase.push_back(&kp_.stages.at(plan.firstStage + i));
  TileSpace s(plan.space);
  llvm::Value* units = k_.dim(s.units);
  llvm::Value* unitTiles =
      b.CreateUDiv(b.CreateAdd(units, k_.index(s.unitsPerTile - 1)), k_.index(s.unitsPerTile));
  llvm::Value* tiles = b.CreateMul(unitTiles, k_.index(int64_t(s.split) * s.clusterParts));
  sharedDirty_ = warpDirty_ = false;
  std::vector<ir::NodeId>& phaseShared =
      phaseShared_; // shared values of this phase: valid per tile only
  phaseShared.clear();
  for (const fusion::Stage* st : phase)
    for (ir::NodeId v : st->materialized)
      if (placement(v).storage == Storage::Shared && !placement(v).resident)
        phaseShared.push_back(v);
  bool residentTiles = kp_.residentTiles > 0 && s.sameTiles(kp_.residentSpace);
  // Resident inputs this phase reads from shared memory; the first phase of each loads it there.
  int phaseIndex = static_cast<int>(&plan - kp_.phases.data());
  std::vector<ir::NodeId> residentInputs, loadedHere;
  for (const auto& [v, p] : kp_.placement)
    if (p.resident && p.storage == Storage::Input && p.resident->firstPhase <= phaseIndex &&
        phaseIndex <= p.resident->lastPhase) {
      residentInputs.push_back(v);
      if (p.resident->firstPhase == phaseIndex) loadedHere.push_back(v);
      installLoad(v, &s);
    }
  std::vector<const fusion::Stage*> across; // across-tiles reduce stages of this phase
  std::vector<ir::NodeId> acrossValues;      // what they materialise, after the combine
  for (size_t i : plan.acrossStages)
    across.push_back(&kp_.stages.at(i));
  slotPhase_ = plan.slots ? &*plan.slots : nullptr;
  const fusion::SlotPlan* slotPhase = slotPhase_;
  std::vector<ir::NodeId> slotAcross = slotPhase ? slotPhase->across : std::vector<ir::NodeId>{};
  for (ir::NodeId r : slotAcross) {
    const ir::Node& n = node(r);
    int64_t count = int64_t(slotPhase->steps) * std::max(1, slotPhase->mapping.vectorWidth);
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
  emitStagedInputs(plan);
  installTileSlices(plan);
  // A block's tiles: every grid-size-th from its index, or one contiguous run of them
  // (PhasePlan::contiguousTiles), the runs' lengths within one of each other.
  const bool contiguous = plan.contiguousTiles;
  if (contiguous && (residentTiles || !across.empty() || s.split > 1 || s.clusterParts > 1))
    k_.fail(kp_.groups.front().dominant,
            "has contiguous tiles in a phase whose tile order is read (a plan error)");
  llvm::Value* block = k_.toIndex(k_.blockId());
  llvm::Value* grid = k_.toIndex(k_.gridSize());
  // Block b's run starts at b * tiles / grid, in 64 bits (the product can pass 32).
  auto runStart = [&](llvm::Value* blockIndex) {
    llvm::Type* i64 = b.getInt64Ty();
    return k_.toIndex(b.CreateUDiv(b.CreateMul(b.CreateZExt(blockIndex, i64),
                                               b.CreateZExt(tiles, i64)),
                                   b.CreateZExt(grid, i64)));
  };
  llvm::Value* firstOfBlock = contiguous ? runStart(block) : block;
  llvm::Value* endOfBlock = contiguous ? runStart(b.CreateAdd(block, k_.index(1))) : tiles;
  k_.loop(
      "tile", firstOfBlock, endOfBlock, contiguous ? k_.index(1) : grid, [&](llvm::Value* tile) {
        s.firstTile = b.CreateICmpEQ(tile, firstOfBlock);
        llvm::Value* unitTile = s.split > 1 ? b.CreateUDiv(tile, k_.index(s.split)) : tile;
        s.part = s.split > 1 ? b.CreateURem(tile, k_.index(s.split)) : k_.index(0);
        if (s.clusterParts > 1) {
          // The grid is whole clusters, so this block's part of the tile is its cluster rank.
          unitTile = b.CreateUDiv(tile, k_.index(s.clusterParts));
          s.clusterPart = b.CreateURem(tile, k_.index(s.clusterParts));
        }
        s.u0 = b.CreateMul(unitTile, k_.index(s.unitsPerTile));
        s.u1 = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                       b.CreateAdd(s.u0, k_.index(s.unitsPerTile)), units);
        if (residentTiles) {
          // Resident values keep residentTiles slots per block: a grid smaller than the plan's
          // would give a block more tiles than it has slots for. Trap, never overwrite.
          s.ordinal = b.CreateUDiv(b.CreateSub(tile, k_.toIndex(k_.blockId())),
                                   k_.toIndex(k_.gridSize()));
          k_.ifThen(b.CreateICmpUGE(s.ordinal, k_.index(kp_.residentTiles)),
                    [&] { b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {}); });
        }
        if (!loadedHere.empty()) loadResidentInputs(s, loadedHere);
        if (slotPhase) {
          slots_ = makeRowSlots(k_, slotPhase->loop, slotPhase->rowDims, slotPhase->mapping, s.u0,
                                s.u1, s.clusterPart);
          slotGroup_ = slotPhase->group;
          gen_->beginReuse(slotPhase->reused);
          copyTileSlices(s, *slotPhase, contiguous);
        }
        for (const fusion::Stage* st : phase) {
          emitStage(s, *st);
          bool acrossStage = isAcrossTiles(*st);
          for (ir::NodeId v : st->materialized) {
            if (acrossStage) {
              // Computed behind the phase's grid barrier, after the tiles: a later stage of the
              // phase cannot read it (the planner puts its readers in later phases).
              acrossValues.push_back(v);
              gen_->setGenerator(v, [this, v](const Index&) -> llvm::Value* {
                k_.fail(v, "is combined across blocks after this phase's tiles; a stage of the "
                           "same phase cannot read it");
              });
              continue;
            }
            written_.insert(v);
            phaseWritten_.insert(v);
          }
        }
        if (slotPhase) {
          gen_->endReuse();
          slots_.reset();
          slotGroup_ = -1;
        }
        // The next tile overwrites this tile's shared values and slices: the block's, or only
        // the warp's own. Contiguous tiles wait for the block before a slice's copy instead.
        if ((!tileSlices_.empty() && !contiguous) ||
            std::any_of(phaseShared.begin(), phaseShared.end(),
                        [&](ir::NodeId v) { return !placement(v).warpLocal; }))
          k_.blockBarrier();
        else if (!phaseShared.empty())
          k_.warpBarrier();
        sharedDirty_ = warpDirty_ = false;
      });
  slotPhase_ = nullptr;
  for (ir::NodeId v : residentInputs)
    installLoad(v, nullptr); // its reads here captured this phase's `s`
  for (const fusion::StagedInput& in : plan.staged) {
    if (in.computed)
      gen_->clearGenerator(in.input); // computed again where a later phase reads it
    else
      installLoad(in.input, nullptr); // later phases read the input from global memory again
  }
  for (const TileSlice& t : tileSlices_)
    installLoad(t.plan->input, nullptr);
  tileSlices_.clear();
  if (!slotAcross.empty()) emitSlotAccumulatorsToPartials(*slotPhase);
  emitSharedPartialsToGlobal();
  for (ir::NodeId v : acrossValues)
    gen_->clearGenerator(v);
  if (!across.empty()) {
    gridBarrier();
    for (const fusion::Stage* st : across)
      emitAcrossTilesCombine(*st);
  }
  for (ir::NodeId v : acrossValues) { // stored by the combine: later phases load them
    written_.insert(v);
    phaseWritten_.insert(v);
  }
  clusterPartials_.clear();
  // A split reduce with a partials buffer: combine the partials after a grid barrier.
  const fusion::Group& g0 = kp_.groups.at(size_t(phase.front()->group));
  if (s.split > 1 && placement(g0.dominant).partialsBuffer >= 0) {
    gridBarrier();
    emitPartialsCombine(s, g0, g0.dominant, phase.front()->materialized);
    for (ir::NodeId v : phase.front()->materialized)
      written_.insert(v);
  }
  // Resident values are read again in later phases, through their own tiles: their loads are
  // installed again there (these captured this phase's `s`).
  for (const auto& [v, p] : kp_.placement)
    if (p.resident && p.storage == Storage::Shared && gen_->hasGenerator(v))
      gen_->clearGenerator(v);
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
  for (size_t i = 0; i < kp_.phases.size(); ++i) {
    if (i > 0 && kp_.handedOff(kp_.phases[i]))
      handOffToLastBlock();
    else if (i > 0)
      gridBarrier();
    emitPhase(kp_.phases[i]);
  }
  phase_ = nullptr;
  // A block's shared memory must outlive its cluster's reads of it.
  if (std::any_of(kp_.phases.begin(), kp_.phases.end(),
                  [](const fusion::PhasePlan& p) { return p.throughCluster; }))
    clusterBarrier(k_);
  b_.CreateRetVoid();
  finishStagingArena();
  if (kp_.registerLimit > 0) annotate(m_, k_.fn, "maxnreg", kp_.registerLimit);
  if (kp_.minBlocksPerSM > 0) annotate(m_, k_.fn, "minctasm", kp_.minBlocksPerSM);

  info_.name = kp_.name;
  info_.launch = kp_.launch;
  info_.dynamicSharedBytes = uint32_t(dynamicShared_);
  info_.planStep = step_;
  return {k_.fn, info_};
}

} // namespace detail

EmittedKernel emitKernel(llvm::Module& module, const fusion::FusionPlan& plan, int step,
                         bool useLibdevice) {
  return detail::KernelEmitter(module, plan, step, useLibdevice).run();
}

} // namespace weft::codegen
