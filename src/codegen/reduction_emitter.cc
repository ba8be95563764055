#include "codegen/reduction_emitter.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/cluster_access.h"
#include "codegen/math_emitter.h"
#include "weft/error.h"

namespace weft::codegen {

using ir::DType;
using ir::ReduceKind;

llvm::Value* reductionIdentity(llvm::LLVMContext& c, ReduceKind kind, DType t) {
  llvm::Type* ty = computeType(c, t);
  switch (kind) {
  case ReduceKind::Sum:
    return constantOf(c, t, 0.0);
  case ReduceKind::Prod:
    return constantOf(c, t, 1.0);
  case ReduceKind::Any:
    return llvm::ConstantInt::getFalse(c);
  case ReduceKind::All:
    return llvm::ConstantInt::getTrue(c);
  case ReduceKind::Max:
    if (ir::isFloat(t)) return llvm::ConstantFP::getInfinity(ty, /*Negative=*/true);
    if (ir::isBool(t)) return llvm::ConstantInt::getFalse(c);
    return llvm::ConstantInt::get(c, llvm::APInt::getSignedMinValue(ty->getIntegerBitWidth()));
  case ReduceKind::Min:
    if (ir::isFloat(t)) return llvm::ConstantFP::getInfinity(ty, /*Negative=*/false);
    if (ir::isBool(t)) return llvm::ConstantInt::getTrue(c);
    return llvm::ConstantInt::get(c, llvm::APInt::getSignedMaxValue(ty->getIntegerBitWidth()));
  case ReduceKind::LogSumExp:
    return llvm::ConstantFP::getInfinity(ty, /*Negative=*/true);
  }
  return nullptr;
}

namespace {

/// x - y, but 0 where they are equal: equal infinities differ by 0, not NaN (a NaN operand
/// still gives NaN).
llvm::Value* gapOrZero(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  return b.CreateSelect(b.CreateFCmpOEQ(x, y), llvm::ConstantFP::get(x->getType(), 0.0),
                        b.CreateFSub(x, y));
}

/// exp(-|d|): the smaller operand's exponential relative to the larger's (never above 1).
llvm::Value* expOfMinusAbs(KernelContext& k, llvm::Value* d) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Value* abs = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d);
  return emitMath(k, ir::OpKind::Exp, b.CreateFNeg(abs));
}

/// exp(a), a <= 0 (or NaN), per element of a thread's logsumexp: for f32, ex2.approx.ftz of
/// a log2(e) (two instructions where libdevice's expf takes a dozen; relative error about
/// 2^-22, and the rounding of the scaled argument moves a term by |a| 2^-24 of itself, so the
/// row's sum, whose large terms have small |a|, moves by a few units of its last place; what
/// the flush to zero drops is below 2^-126 of the largest term); f64 through emitMath.
llvm::Value* fastExpOfNonPositive(KernelContext& k, llvm::Value* a) {
  llvm::IRBuilder<>& b = *k.b;
  if (!a->getType()->isFloatTy()) return emitMath(k, ir::OpKind::Exp, a);
  llvm::Value* scaled = b.CreateFMul(a, llvm::ConstantFP::get(a->getType(), 1.4426950408889634));
  return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {scaled});
}

/// exp(v - top) for v <= top (or NaN), by fastExpOfNonPositive; exactly 1 where v equals top, so
/// that equal infinities (whose difference is NaN) weigh 1.
llvm::Value* expBelowTop(KernelContext& k, llvm::Value* v, llvm::Value* top) {
  llvm::IRBuilder<>& b = *k.b;
  return b.CreateSelect(b.CreateFCmpOEQ(v, top), llvm::ConstantFP::get(v->getType(), 1.0),
                        fastExpOfNonPositive(k, b.CreateFSub(v, top)));
}

} // namespace

ReducePartial identityPartial(llvm::LLVMContext& c, ReduceKind kind, DType t) {
  ReducePartial p{reductionIdentity(c, kind, t)};
  if (kind == ReduceKind::LogSumExp) p.sum = constantOf(c, t, 0.0);
  return p;
}

ReducePartial combinePartials(KernelContext& k, ReduceKind kind, DType t, const ReducePartial& x,
                              const ReducePartial& y) {
  if (kind != ReduceKind::LogSumExp) return {reductionCombine(k, kind, t, x.value, y.value)};
  // (m, s) ⊕ (m', s') = (M, s exp(m - M) + s' exp(m' - M)), M = max(m, m') (NaN if either is):
  // an empty partial (-inf, 0) adds 0, and two of the same infinity add their sums.
  llvm::IRBuilder<>& b = *k.b;
  llvm::Value* top = emitMax(b, x.value, y.value, t);
  llvm::Value* sum = b.CreateFAdd(b.CreateFMul(x.sum, expBelowTop(k, x.value, top)),
                                  b.CreateFMul(y.sum, expBelowTop(k, y.value, top)));
  return {top, sum};
}

llvm::Value* partialValue(KernelContext& k, const ReducePartial& p) {
  if (!p.sum) return p.value;
  // s is 0 only when nothing was added (m = -inf): -inf + log(0) = -inf.
  return k.b->CreateFAdd(p.value, emitMath(k, ir::OpKind::Log, p.sum));
}

llvm::Value* reductionCombine(KernelContext& k, ReduceKind kind, DType t, llvm::Value* x,
                              llvm::Value* y) {
  llvm::IRBuilder<>& b = *k.b;
  bool fp = ir::isFloat(t);
  switch (kind) {
  case ReduceKind::Sum:
    return fp ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  case ReduceKind::Prod:
    return fp ? b.CreateFMul(x, y) : b.CreateMul(x, y);
  case ReduceKind::Max:
    return emitMax(b, x, y, t);
  case ReduceKind::Min:
    return emitMin(b, x, y, t);
  case ReduceKind::Any:
    return b.CreateOr(x, y);
  case ReduceKind::All:
    return b.CreateAnd(x, y);
  case ReduceKind::LogSumExp: {
    // max(x, y) + log(1 + exp(-|x - y|)); equal operands (±inf too) give x + log 2, NaN NaN.
    llvm::Value* d = gapOrZero(b, x, y);
    llvm::Value* hi = b.CreateSelect(b.CreateFCmpOGT(d, llvm::ConstantFP::get(d->getType(), 0.0)),
                                     x, y);
    llvm::Value* one = llvm::ConstantFP::get(d->getType(), 1.0);
    return b.CreateFAdd(hi, emitMath(k, ir::OpKind::Log, b.CreateFAdd(one, expOfMinusAbs(k, d))));
  }
  }
  return nullptr;
}

ThreadAccumulator::ThreadAccumulator(KernelContext& k, ReduceKind kind, DType t,
                                     const std::string& name)
    : k_(k), kind_(kind), t_(t), acc_(k.entryAlloca(computeType(k.ctx(), t), name)) {
  if (kind == ReduceKind::LogSumExp)
    sum_ = k.entryAlloca(computeType(k.ctx(), t), name + ".sum");
}

void ThreadAccumulator::reset() {
  llvm::IRBuilder<>& b = *k_.b;
  b.CreateStore(reductionIdentity(k_.ctx(), kind_, t_), acc_);
  if (sum_) b.CreateStore(llvm::ConstantFP::get(sum_->getAllocatedType(), 0.0), sum_);
}

void ThreadAccumulator::add(llvm::Value* x, llvm::Value* when) { addGroup({x}, when); }

void ThreadAccumulator::addGroup(const std::vector<llvm::Value*>& xs, llvm::Value* when) {
  llvm::IRBuilder<>& b = *k_.b;
  llvm::Type* ty = acc_->getAllocatedType();
  llvm::Value* old = b.CreateLoad(ty, acc_);
  auto keep = [&](llvm::Value* next, llvm::Value* prev) {
    return when ? b.CreateSelect(when, next, prev) : next;
  };
  if (!sum_) {
    llvm::Value* v = old;
    for (llvm::Value* x : xs)
      v = reductionCombine(k_, kind_, t_, v, x);
    b.CreateStore(keep(v, old), acc_);
    return;
  }
  // The group's maximum m' = max(m, x...) (NaN if any is), then s = s exp(m - m') + sum of
  // exp(x - m'): one exponential per element and one per group, and a chain of a few
  // instructions per group instead of a dozen per element. A value equal to m' adds exp(0)
  // (infinities too, where x - m' is NaN; -inf into an empty sum: m + log(k) = -inf).
  llvm::Value* s = b.CreateLoad(ty, sum_);
  llvm::Value* top = old;
  for (llvm::Value* x : xs)
    top = emitMax(b, top, x, t_);
  llvm::Value* sum = b.CreateFMul(s, expBelowTop(k_, old, top));
  for (llvm::Value* x : xs)
    sum = b.CreateFAdd(sum, expBelowTop(k_, x, top));
  b.CreateStore(keep(sum, s), sum_);
  b.CreateStore(keep(top, old), acc_);
}

ReducePartial ThreadAccumulator::partial() {
  llvm::IRBuilder<>& b = *k_.b;
  llvm::Type* ty = acc_->getAllocatedType();
  return {b.CreateLoad(ty, acc_), sum_ ? b.CreateLoad(ty, sum_) : nullptr};
}

namespace {

llvm::Value* shuffleXor32(KernelContext& k, llvm::Value* v32, int offset) {
  llvm::IRBuilder<>& b = *k.b;
  return b.CreateIntrinsic(
      llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
      {b.getInt32(0xffffffffu), v32, b.getInt32(uint32_t(offset)), b.getInt32(0x1f)});
}

/// shfl.sync.bfly of any compute type (split into 32-bit halves where wider).
llvm::Value* shuffleXor(KernelContext& k, llvm::Value* v, int offset) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* t = v->getType();
  if (t->isFloatTy())
    return b.CreateBitCast(shuffleXor32(k, b.CreateBitCast(v, b.getInt32Ty()), offset), t);
  if (t->isIntegerTy(32)) return shuffleXor32(k, v, offset);
  if (t->isIntegerTy() && t->getIntegerBitWidth() < 32)
    return b.CreateTrunc(shuffleXor32(k, b.CreateZExt(v, b.getInt32Ty()), offset), t);
  // 64-bit: two halves.
  llvm::Value* bits = t->isDoubleTy() ? b.CreateBitCast(v, b.getInt64Ty()) : v;
  llvm::Value* lo = shuffleXor32(k, b.CreateTrunc(bits, b.getInt32Ty()), offset);
  llvm::Value* hi = shuffleXor32(k, b.CreateTrunc(b.CreateLShr(bits, 32), b.getInt32Ty()), offset);
  llvm::Value* r = b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()),
                              b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
  return t->isDoubleTy() ? b.CreateBitCast(r, t) : r;
}

/// Shared-memory scratch slots hold accumulators; i1 is kept as i8 there.
llvm::Type* slotType(llvm::Type* acc) {
  return acc->isIntegerTy(1) ? llvm::Type::getInt8Ty(acc->getContext()) : acc;
}

void storeSlot(KernelContext& k, llvm::Value* slot, llvm::Value* v) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* st = slotType(v->getType());
  llvm::Value* p = b.CreateInBoundsGEP(st, k.reduceScratch, slot);
  b.CreateStore(v->getType()->isIntegerTy(1) ? b.CreateZExt(v, st) : v, p);
}

llvm::Value* loadSlot(KernelContext& k, llvm::Type* acc, llvm::Value* slot) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* st = slotType(acc);
  llvm::Value* v = b.CreateLoad(st, b.CreateInBoundsGEP(st, k.reduceScratch, slot));
  return acc->isIntegerTy(1) ? b.CreateTrunc(v, acc) : v;
}

/// Partials in the reduce scratch, 8 bytes each, from element `origin` of their slot type on:
/// one slot each, or two for a logsumexp of f32, its pair (m, s) in one 8-byte word. A
/// logsumexp of f64 keeps its value m + log(s) alone, read back as the pair (value, 1).
int slotsOfPartial(ReduceKind kind, DType t) {
  return kind == ReduceKind::LogSumExp && ir::dtypeBytes(t) <= 4 ? 2 : 1;
}

/// The partial whose slots `slot(0)` (and `slot(1)`) read, in the layout above.
ReducePartial partialOfSlots(KernelContext& k, ReduceKind kind, DType t,
                             const std::function<llvm::Value*(int64_t)>& slot) {
  if (slotsOfPartial(kind, t) == 2) return {slot(0), slot(1)};
  llvm::Type* acc = computeType(k.ctx(), t);
  return {slot(0), kind == ReduceKind::LogSumExp ? llvm::ConstantFP::get(acc, 1.0) : nullptr};
}

void storePartial(KernelContext& k, ReduceKind kind, DType t, llvm::Value* origin,
                  llvm::Value* index, const ReducePartial& p) {
  llvm::IRBuilder<>& b = *k.b;
  const int n = slotsOfPartial(kind, t);
  llvm::Value* at = b.CreateAdd(origin, b.CreateMul(index, k.index(n)));
  if (n == 1) {
    storeSlot(k, at, partialValue(k, p));
    return;
  }
  storeSlot(k, at, p.value);
  storeSlot(k, b.CreateAdd(at, k.index(1)), p.sum);
}

ReducePartial loadPartial(KernelContext& k, ReduceKind kind, DType t, llvm::Value* origin,
                          llvm::Value* index) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* acc = computeType(k.ctx(), t);
  llvm::Value* at = b.CreateAdd(origin, b.CreateMul(index, k.index(slotsOfPartial(kind, t))));
  return partialOfSlots(k, kind, t,
                        [&](int64_t i) { return loadSlot(k, acc, b.CreateAdd(at, k.index(i))); });
}

/// Partial 0 of the reduce scratch of cluster block `rank` (ld.shared::cluster).
ReducePartial loadClusterPartial(KernelContext& k, ReduceKind kind, DType t, llvm::Value* rank) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* acc = computeType(k.ctx(), t);
  llvm::Type* st = slotType(acc);
  return partialOfSlots(k, kind, t, [&](int64_t i) {
    llvm::Value* slot = b.CreateInBoundsGEP(st, k.reduceScratch, k.index(i));
    llvm::Value* v = loadClusterValue(k, mapToClusterBlock(k, slot, rank), st);
    return acc->isIntegerTy(1) ? b.CreateTrunc(v, acc) : v;
  });
}

ReducePartial selectPartial(llvm::IRBuilder<>& b, llvm::Value* when, const ReducePartial& x,
                            const ReducePartial& y) {
  return {b.CreateSelect(when, x.value, y.value),
          x.sum ? b.CreateSelect(when, x.sum, y.sum) : nullptr};
}

/// The operand multi-index of kept index `kept` and reduced index `red`.
Index mergeIndex(const ReduceGeometry& geo, const Index& kept, const Index& red) {
  Index idx(geo.keptAxes.size() + geo.reducedAxes.size());
  for (size_t i = 0; i < geo.keptAxes.size(); ++i)
    idx[size_t(geo.keptAxes[i])] = kept[i];
  for (size_t i = 0; i < geo.reducedAxes.size(); ++i)
    idx[size_t(geo.reducedAxes[i])] = red[i];
  return idx;
}

/// acc[i] ⊕= operand i[kept, r] for r = start, start + step, ... while r < end, with `vector`
/// consecutive elements per step (then a scalar tail), for every reduce i (all of geometry
/// `geo`: one pass over the elements serves them all, and an input they share is loaded once
/// per element). `first` is a multiple of `vector`, so when the reduced axes end with the
/// operand's innermost one each step is a vector group (one vector load per operand read).
/// With `streamLoads` > 1 (the plan's RowReduceMapping::streamLoads) the vector steps go in
/// chunks of that many, every step's loads issued before any is used: a step past the row
/// loads nothing and adds nothing.
void accumulate(KernelContext& k, ElementalEmitter& gen, const std::vector<const ir::Node*>& reduces,
                const ReduceGeometry& geo, std::vector<ThreadAccumulator>& accs, llvm::Value* kept,
                llvm::Value* first, llvm::Value* end, int lane0Step, int vector,
                llvm::Value* laneOffset, const OperandSink& onOperand = {}, int streamLoads = 1) {
  llvm::IRBuilder<>& b = *k.b;
  // The reduces' operands at the elements of `idx` (a new element: what the reduces share is
  // generated once for it), each reduce's values then added as one group.
  using Values = std::vector<std::vector<llvm::Value*>>; // per reduce, per element
  auto generate = [&](const std::vector<Index>& idx) {
    Values values(reduces.size());
    for (const Index& at : idx) {
      gen.clearCache();
      for (size_t i = 0; i < reduces.size(); ++i) {
        llvm::Value* v = gen.emit(reduces[i]->operands[0], at);
        if (onOperand) onOperand(at, v);
        values[i].push_back(v);
      }
    }
    return values;
  };
  auto addValues = [&](const Values& values, llvm::Value* when) {
    for (size_t i = 0; i < reduces.size(); ++i)
      accs[i].addGroup(values[i], when);
  };
  auto combine = [&](const std::vector<Index>& idx) { addValues(generate(idx), nullptr); };
  auto add = [&](llvm::Value* r) { combine({reduceOperandIndex(k, geo, kept, r)}); };
  llvm::Value* start = b.CreateAdd(first, b.CreateMul(laneOffset, k.index(vector)));
  llvm::Value* step = k.index(int64_t(lane0Step) * vector);
  if (vector <= 1) {
    k.loop(reduces.front()->name + ".acc", start, end, step, add);
    return;
  }
  size_t rank = geo.keptAxes.size() + geo.reducedAxes.size();
  bool grouped = (vector & (vector - 1)) == 0 && !geo.reducedAxes.empty() &&
                 geo.reducedAxes.back() == int64_t(rank) - 1;
  llvm::Value* vecEnd = b.CreateSub(end, k.index(vector - 1));
  const std::string& name = reduces.front()->name;
  // The values of the vector group at r (a vector load per operand read).
  auto groupValues = [&](llvm::Value* r) {
    k.beginVectorGroup(vector);
    Index keptIdx = delinearize(k, geo.keptShape, kept);
    std::vector<Index> lanes;
    for (const Index& red : k.vectorLaneIndices(geo.reducedShape, r))
      lanes.push_back(mergeIndex(geo, keptIdx, red));
    Values values = generate(lanes);
    k.endVectorGroup();
    gen.clearCache();
    return values;
  };
  auto group = [&](llvm::Value* r) {
    if (!grouped) {
      for (int v = 0; v < vector; ++v)
        add(b.CreateAdd(r, k.index(v)));
      return;
    }
    addValues(groupValues(r), nullptr);
  };
  if (grouped && streamLoads > 1 && !onOperand) {
    // A chunk's steps r, r + step, ...: each one past vecEnd is generated under a branch (its
    // values pass through allocas) and its additions are selected away.
    k.loop(name + ".vchunk", start, vecEnd, b.CreateMul(step, k.index(streamLoads)),
           [&](llvm::Value* r) {
             std::vector<Values> chunk;
             std::vector<llvm::Value*> inRow{nullptr};
             chunk.push_back(groupValues(r));
             for (int u = 1; u < streamLoads; ++u) {
               llvm::Value* at = b.CreateAdd(r, b.CreateMul(step, k.index(u)));
               inRow.push_back(b.CreateICmpSLT(at, vecEnd));
               std::vector<std::vector<llvm::AllocaInst*>> held(reduces.size());
               k.ifThen(inRow.back(), [&] {
                 Values values = groupValues(at);
                 for (size_t i = 0; i < values.size(); ++i)
                   for (llvm::Value* v : values[i]) {
                     held[i].push_back(k.entryAlloca(v->getType(), name + ".step"));
                     b.CreateStore(v, held[i].back());
                   }
               });
               Values values(reduces.size());
               for (size_t i = 0; i < held.size(); ++i)
                 for (llvm::AllocaInst* a : held[i])
                   values[i].push_back(b.CreateLoad(a->getAllocatedType(), a));
               chunk.push_back(std::move(values));
             }
             for (size_t u = 0; u < chunk.size(); ++u)
               addValues(chunk[u], inRow[u]);
           });
  } else {
    k.loop(name + ".vacc", start, vecEnd, step, group);
  }
  // Tail: the last (end - first) % vector elements, one per lane.
  llvm::Value* len = b.CreateSub(end, first);
  llvm::Value* tailStart =
      b.CreateAdd(first, b.CreateMul(b.CreateSDiv(len, k.index(vector)), k.index(vector)));
  k.loop(name + ".tail", b.CreateAdd(tailStart, laneOffset), end, k.index(lane0Step), add);
}

} // namespace

ReducePartial warpReduce(KernelContext& k, ReduceKind kind, DType t, ReducePartial p, int width) {
  for (int off = width / 2; off >= 1; off /= 2) {
    ReducePartial other{shuffleXor(k, p.value, off), p.sum ? shuffleXor(k, p.sum, off) : nullptr};
    p = combinePartials(k, kind, t, p, other);
  }
  return p;
}

Index reduceOperandIndex(KernelContext& k, const ReduceGeometry& geo, llvm::Value* keptFlat,
                         llvm::Value* reducedFlat) {
  return mergeIndex(geo, delinearize(k, geo.keptShape, keptFlat),
                    delinearize(k, geo.reducedShape, reducedFlat));
}

void emitRowReduce(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                   const fusion::RowReduceMapping& m, llvm::Value* begin, llvm::Value* end,
                   llvm::Value* reducedBegin, llvm::Value* reducedEnd, const ReduceResult& onResult,
                   bool coalesceResults, const RowSlots* slots) {
  emitRowReduces(k, gen, {&reduce}, m, begin, end, reducedBegin, reducedEnd, {onResult},
                 coalesceResults, slots);
}

void emitRowReduces(KernelContext& k, ElementalEmitter& gen,
                    const std::vector<const ir::Node*>& reduces, const fusion::RowReduceMapping& m,
                    llvm::Value* begin, llvm::Value* end, llvm::Value* reducedBegin,
                    llvm::Value* reducedEnd, const std::vector<ReduceResult>& onResults,
                    bool coalesceResults, const RowSlots* slots) {
  llvm::IRBuilder<>& b = *k.b;
  const ir::Node& first = *reduces.front();
  bool warpPerRow = m.kind == fusion::RowReduceMapping::Kind::WarpPerRow;
  int tpr = warpPerRow ? m.threadsPerRow : k.blockSize;
  if (warpPerRow && (tpr < 1 || tpr > 32 || (tpr & (tpr - 1)) != 0 || k.blockSize % tpr != 0))
    k.fail(first.id,
           fmt::format("warp-per-row needs threadsPerRow a power of two <= 32 dividing the block "
                       "size {}, got {}",
                       k.blockSize, tpr));
  if (!warpPerRow && k.blockSize % 32 != 0)
    k.fail(first.id,
           fmt::format("block-per-row needs a block size that is a multiple of 32, got {}",
                       k.blockSize));
  int vector = std::max(1, m.vectorWidth);
  ReduceGeometry geo = reduceGeometry(*k.graph, first);
  for (const ir::Node* r : reduces)
    if (k.graph->node(r->operands[0]).type.shape != k.graph->node(first.operands[0]).type.shape ||
        r->attr<ir::ReduceAttrs>().axes != first.attr<ir::ReduceAttrs>().axes)
      k.fail(r->id, fmt::format("shares a row pass with reduce \"{}\" but not its operand's "
                                "shape and axes (a plan error)",
                                first.name));
  int rowsPerPass = k.blockSize / tpr;
  llvm::Value* tid = k.toIndex(k.threadId());
  llvm::Value* rowInPass = b.CreateUDiv(tid, k.index(tpr));
  llvm::Value* lane = b.CreateURem(tid, k.index(tpr));
  std::vector<ThreadAccumulator> accs;
  for (const ir::Node* r : reduces)
    accs.emplace_back(k, r->attr<ir::ReduceAttrs>().kind, r->type.dtype, r->name + ".acc");
  // A row shared by a thread-block cluster: this block accumulates its part (its slots) and the
  // cluster combines the parts.
  int cluster = warpPerRow ? 1 : std::max(1, m.clusterBlocks);
  if (cluster > 1 && !slots)
    k.fail(first.id, "a row shared by a thread-block cluster needs the row's slots (registers)");

  // In the calling warp, the combined partials of the block's warps, partial w of warp w at
  // `origin` of the reduce scratch (lanes past the warps add the identity).
  auto warpsPartial = [&](ReduceKind kind, DType t, llvm::Value* origin, llvm::Value* lane32) {
    const int warps = k.blockSize / 32;
    llvm::Value* inBlock = b.CreateICmpSLT(lane32, k.index(warps));
    ReducePartial partial = selectPartial(
        b, inBlock, loadPartial(k, kind, t, origin, b.CreateSelect(inBlock, lane32, k.index(0))),
        identityPartial(k.ctx(), kind, t));
    return warpReduce(k, kind, t, partial, 32);
  };

  // Reduce i's thread partial v across the row's threads, then onResults[i] by one thread.
  auto combineRow = [&](size_t i, llvm::Value* row, llvm::Value* valid, llvm::Value* pass,
                        ReducePartial v) {
    ReduceKind kind = reduces[i]->attr<ir::ReduceAttrs>().kind;
    DType t = reduces[i]->type.dtype;
    const ReduceResult& onResult = onResults[i];
    if (warpPerRow && (!coalesceResults || rowsPerPass == 1)) {
      llvm::Value* total = partialValue(k, warpReduce(k, kind, t, v, tpr));
      k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(lane, k.index(0))), [&] { onResult(row, total); });
      return;
    }
    if (warpPerRow) {
      // The pass's results leave from consecutive threads (thread i: row pass + i), so that
      // results in global memory are written by one request per 32 rows, not one per row.
      llvm::Value* total = partialValue(k, warpReduce(k, kind, t, v, tpr));
      k.ifThen(b.CreateICmpEQ(lane, k.index(0)), [&] { storeSlot(k, rowInPass, total); });
      k.blockBarrier();
      llvm::Value* owned = b.CreateAdd(pass, tid);
      k.ifThen(b.CreateAnd(b.CreateICmpSLT(tid, k.index(rowsPerPass)), b.CreateICmpSLT(owned, end)),
               [&] { onResult(owned, loadSlot(k, total->getType(), tid)); });
      k.blockBarrier(); // the scratch is reused by the next pass
      return;
    }
    // Block-per-row in a cluster (block-per-row without one: combineBlockRows below): the
    // block's part of the row in partial 0, then every block of the cluster combines the
    // blocks' parts in rank order (the same total in each); the second cluster barrier keeps
    // partial 0 until the whole cluster has read it.
    v = warpReduce(k, kind, t, v, 32);
    llvm::Value* warp = b.CreateUDiv(tid, k.index(32));
    llvm::Value* lane32 = b.CreateURem(tid, k.index(32));
    llvm::Value* origin = k.index(0);
    k.ifThen(b.CreateICmpEQ(lane32, k.index(0)), [&] { storePartial(k, kind, t, origin, warp, v); });
    k.blockBarrier();
    k.ifThen(b.CreateICmpEQ(warp, k.index(0)), [&] {
      ReducePartial total = warpsPartial(kind, t, origin, lane32);
      k.ifThen(b.CreateICmpEQ(lane32, k.index(0)),
               [&] { storePartial(k, kind, t, origin, k.index(0), total); });
    });
    clusterBarrier(k);
    ReducePartial total = identityPartial(k.ctx(), kind, t);
    for (int q = 0; q < cluster; ++q)
      total = combinePartials(k, kind, t, total,
                              loadClusterPartial(k, kind, t, b.getInt32(uint32_t(q))));
    llvm::Value* result = partialValue(k, total);
    k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(tid, k.index(0))), [&] { onResult(row, result); });
    clusterBarrier(k);
    k.blockBarrier(); // the scratch is reused by the next row (or reduce)
  };

  // Block-per-row without a cluster: every reduce's warp totals at once (independent shuffle
  // trees), then as many reduces as the scratch holds (32 8-byte words per reduce) combined
  // side by side, reduce p by warp p, behind one barrier: a row's tail is one combine for its
  // sibling reduces, not one per reduce (a single reduce: warp 0 combines it).
  auto combineBlockRows = [&](llvm::Value* row, llvm::Value* valid,
                              const std::vector<ReducePartial>& partials) {
    const int warps = k.blockSize / 32;
    const int64_t scratch = k.kernel ? k.kernel->reduceScratchBytes : 32 * 8;
    const size_t perBatch =
        size_t(std::clamp<int64_t>(scratch / (int64_t(warps) * 8), 1, warps));
    llvm::Value* warp = b.CreateUDiv(tid, k.index(32));
    llvm::Value* lane32 = b.CreateURem(tid, k.index(32));
    std::vector<ReducePartial> totals;
    for (size_t i = 0; i < reduces.size(); ++i)
      totals.push_back(warpReduce(k, reduces[i]->attr<ir::ReduceAttrs>().kind,
                                  reduces[i]->type.dtype, partials[i], 32));
    // Reduce p of a batch keeps its warps' partials from word p * warps (8 bytes each) on.
    auto originOf = [&](size_t p, const ir::Node& r) {
      int64_t bytes = int64_t(slotType(computeType(k.ctx(), r.type.dtype))->getPrimitiveSizeInBits() / 8);
      return k.index(int64_t(p) * warps * 8 / std::max<int64_t>(1, bytes));
    };
    for (size_t first = 0; first < reduces.size(); first += perBatch) {
      size_t count = std::min(perBatch, reduces.size() - first);
      k.ifThen(b.CreateICmpEQ(lane32, k.index(0)), [&] {
        for (size_t p = 0; p < count; ++p) {
          const ir::Node& r = *reduces[first + p];
          storePartial(k, r.attr<ir::ReduceAttrs>().kind, r.type.dtype, originOf(p, r), warp,
                       totals[first + p]);
        }
      });
      k.blockBarrier();
      for (size_t p = 0; p < count; ++p) {
        const ir::Node& r = *reduces[first + p];
        ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
        DType t = r.type.dtype;
        k.ifThen(b.CreateICmpEQ(warp, k.index(int64_t(p))), [&] {
          llvm::Value* total = partialValue(k, warpsPartial(kind, t, originOf(p, r), lane32));
          k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(lane32, k.index(0))),
                   [&] { onResults[first + p](row, total); });
        });
      }
      k.blockBarrier(); // the scratch is reused by the next batch or row
    }
  };

  auto emitPass = [&](llvm::Value* pass) {
    llvm::Value* row = b.CreateAdd(pass, rowInPass);
    llvm::Value* valid = b.CreateICmpSLT(row, end);
    for (ThreadAccumulator& acc : accs)
      acc.reset();
    if (slots) {
      // Rows past the tile accumulate their clamped row's elements; their result is dropped.
      for (size_t i = 0; i < reduces.size(); ++i)
        emitAtSlots(k, gen, *slots, reduces[i]->operands[0],
                    [&](const RowSlots::Step& step, const std::vector<llvm::Value*>& lanes) {
                      accs[i].addGroup(lanes, step.inRow);
                    });
    } else {
      // Lanes of a row past the end accumulate nothing but still take part in the shuffles.
      llvm::Value* rowEnd = b.CreateSelect(valid, reducedEnd, reducedBegin);
      accumulate(k, gen, reduces, geo, accs, row, reducedBegin, rowEnd, tpr, vector, lane, {},
                 m.streamLoads);
    }
    std::vector<ReducePartial> partials;
    for (ThreadAccumulator& acc : accs)
      partials.push_back(acc.partial());
    if (!warpPerRow && cluster == 1) {
      combineBlockRows(row, valid, partials);
      return;
    }
    for (size_t i = 0; i < reduces.size(); ++i)
      combineRow(i, row, valid, pass, partials[i]);
  };
  if (slots) {
    emitPass(
        begin); // the tile is one pass: straight-line code, so slot values dominate what follows
    return;
  }
  k.loop(first.name + ".rows", begin, end, k.index(rowsPerPass), emitPass);
}

void emitAtSlots(KernelContext& k, ElementalEmitter& gen, const RowSlots& slots, ir::NodeId value,
                 const std::function<void(const RowSlots::Step&,
                                          const std::vector<llvm::Value*>&)>& onStep) {
  for (const RowSlots::Step& step : slots.steps) {
    if (slots.width > 1) {
      k.beginVectorGroup(slots.width);
      k.vectorLanes = step.vectorLanes;
    }
    std::vector<llvm::Value*> lanes;
    for (const Index& idx : step.lanes) {
      gen.clearCache();
      lanes.push_back(gen.emit(value, idx));
    }
    if (slots.width > 1) k.endVectorGroup();
    onStep(step, lanes);
    gen.clearCache();
  }
}

llvm::Value* inRowOr(llvm::IRBuilder<>& b, const RowSlots::Step& step, llvm::Value* value,
                     llvm::Value* otherwise) {
  return step.inRow ? b.CreateSelect(step.inRow, value, otherwise) : value;
}

RowSlots makeRowSlots(KernelContext& k, const ir::Shape& loop, size_t rowDims,
                      const fusion::RowReduceMapping& m, llvm::Value* u0, llvm::Value* u1,
                      llvm::Value* clusterPart) {
  llvm::IRBuilder<>& b = *k.b;
  int tpr = m.rowThreads(k.blockSize);
  int vector = std::max(1, m.vectorWidth);
  int64_t length = 1;
  for (size_t d = rowDims; d < loop.size(); ++d)
    length *= loop[d].size();
  RowSlots slots;
  slots.width = vector;
  llvm::Value* tid = k.toIndex(k.threadId());
  slots.row = b.CreateAdd(u0, b.CreateUDiv(tid, k.index(tpr)));
  slots.valid = b.CreateICmpSLT(slots.row, u1);
  llvm::Value* row = b.CreateSelect(slots.valid, slots.row, u0);
  llvm::Value* rowStart = b.CreateMul(row, k.index(length));
  llvm::Value* lane = b.CreateURem(tid, k.index(tpr));
  Index rowIndex = delinearize(k, ir::Shape(loop.begin(), loop.begin() + int64_t(rowDims)), row);
  int64_t perStep = int64_t(tpr) * vector;
  int64_t parts = std::max(1, m.clusterBlocks);
  int64_t steps = m.slotSteps(length, k.blockSize);
  if (parts > 1 && !clusterPart)
    throw std::logic_error("makeRowSlots: a row shared by a cluster needs the block's part");
  // The first column of this block's part of the row (0 without a cluster).
  llvm::Value* partStart =
      parts > 1 ? b.CreateMul(clusterPart, k.index(steps * perStep)) : k.index(0);
  for (int64_t i = 0; i < steps; ++i) {
    // Element lane * vector + i * tpr * vector of the row (of the part): a multiple of the
    // vector width. In a ragged last step, lanes past the row read its last vector instead (and
    // are masked).
    llvm::Value* column =
        b.CreateAdd(b.CreateMul(lane, k.index(vector)), k.index(i * tpr * vector), "", true, true);
    if (parts > 1) column = b.CreateAdd(partStart, column, "", true, true);
    RowSlots::Step step;
    if ((parts - 1) * steps * perStep + (i + 1) * perStep > length) { // past the row in a part
      step.inRow = b.CreateICmpSLT(column, k.index(length));
      column = b.CreateSelect(step.inRow, column, k.index(length - vector));
    }
    step.flat0 = b.CreateAdd(rowStart, column, "", true, true);
    Index index0 = rowColumnIndex(k, loop, rowIndex, column, step.flat0);
    if (vector > 1) {
      k.beginVectorGroup(vector);
      step.lanes = k.vectorLaneIndices(loop, step.flat0, &index0);
      step.vectorLanes = k.vectorLanes;
      k.endVectorGroup();
    } else {
      step.lanes = {index0};
    }
    slots.steps.push_back(std::move(step));
  }
  return slots;
}

void emitColumnReduce(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                      const fusion::ColumnReduceMapping& m, llvm::Value* begin, llvm::Value* end,
                      llvm::Value* reducedBegin, llvm::Value* reducedEnd,
                      const ReduceResult& onResult, const OperandSink& onOperand) {
  llvm::IRBuilder<>& b = *k.b;
  int tc = m.tileColumns, tr = m.tileRows;
  if (tc < 1 || tr < 1 || int64_t(tc) * tr != k.blockSize)
    k.fail(
        reduce.id,
        fmt::format("column reduce needs tileColumns x tileRows = block size, got {} x {} for {}",
                    tc, tr, k.blockSize));
  ReduceGeometry geo = reduceGeometry(*k.graph, reduce);
  ReduceKind kind = reduce.attr<ir::ReduceAttrs>().kind;
  DType t = reduce.type.dtype;
  llvm::Type* at = computeType(k.ctx(), t);
  llvm::Value* tid = k.toIndex(k.threadId());
  llvm::Value* tx = b.CreateURem(tid, k.index(tc));
  llvm::Value* ty = b.CreateUDiv(tid, k.index(tc));
  llvm::Value* col = b.CreateAdd(begin, tx);
  llvm::Value* valid = b.CreateICmpSLT(col, end);
  std::vector<ThreadAccumulator> accs;
  accs.emplace_back(k, kind, t, reduce.name + ".acc");
  accs[0].reset();
  accumulate(k, gen, {&reduce}, geo, accs, col, reducedBegin,
             b.CreateSelect(valid, reducedEnd, reducedBegin), tr, 1, ty, onOperand);
  storeSlot(k, tid, accs[0].value());
  k.blockBarrier();
  k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(ty, k.index(0))), [&] {
    llvm::Value* v = loadSlot(k, at, tx);
    for (int j = 1; j < tr; ++j)
      v = reductionCombine(k, kind, t, v,
                           loadSlot(k, at, b.CreateAdd(tx, k.index(int64_t(j) * tc))));
    onResult(col, v);
  });
  k.blockBarrier(); // the scratch is reused by the next tile
}

} // namespace weft::codegen
