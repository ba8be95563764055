#include "codegen/reduction_emitter.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/cluster_access.h"
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
  }
  return nullptr;
}

llvm::Value* reductionCombine(llvm::IRBuilder<>& b, ReduceKind kind, DType t, llvm::Value* x,
                              llvm::Value* y) {
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
  }
  return nullptr;
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

/// The operand multi-index of kept index `kept` and reduced index `red`.
Index mergeIndex(const ReduceGeometry& geo, const Index& kept, const Index& red) {
  Index idx(geo.keptAxes.size() + geo.reducedAxes.size());
  for (size_t i = 0; i < geo.keptAxes.size(); ++i)
    idx[size_t(geo.keptAxes[i])] = kept[i];
  for (size_t i = 0; i < geo.reducedAxes.size(); ++i)
    idx[size_t(geo.reducedAxes[i])] = red[i];
  return idx;
}

/// acc ⊕= operand[kept, r] for r = start, start + step, ... while r < end, with `vector`
/// consecutive elements per step (then a scalar tail). `first` is a multiple of `vector`, so
/// when the reduced axes end with the operand's innermost one each step is a vector group
/// (one vector load per operand read).
void accumulate(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                const ReduceGeometry& geo, llvm::AllocaInst* acc, llvm::Value* kept,
                llvm::Value* first, llvm::Value* end, int lane0Step, int vector,
                llvm::Value* laneOffset, const OperandSink& onOperand = {}) {
  llvm::IRBuilder<>& b = *k.b;
  ReduceKind kind = reduce.attr<ir::ReduceAttrs>().kind;
  DType t = reduce.type.dtype;
  llvm::Type* at = acc->getAllocatedType();
  auto combine = [&](const Index& idx) {
    gen.clearCache();
    llvm::Value* v = gen.emit(reduce.operands[0], idx);
    if (onOperand) onOperand(idx, v);
    b.CreateStore(reductionCombine(b, kind, t, b.CreateLoad(at, acc), v), acc);
  };
  auto add = [&](llvm::Value* r) { combine(reduceOperandIndex(k, geo, kept, r)); };
  llvm::Value* start = b.CreateAdd(first, b.CreateMul(laneOffset, k.index(vector)));
  llvm::Value* step = k.index(int64_t(lane0Step) * vector);
  if (vector <= 1) {
    k.loop(reduce.name + ".acc", start, end, step, add);
    return;
  }
  size_t rank = geo.keptAxes.size() + geo.reducedAxes.size();
  bool grouped = (vector & (vector - 1)) == 0 && !geo.reducedAxes.empty() &&
                 geo.reducedAxes.back() == int64_t(rank) - 1;
  llvm::Value* vecEnd = b.CreateSub(end, k.index(vector - 1));
  k.loop(reduce.name + ".vacc", start, vecEnd, step, [&](llvm::Value* r) {
    if (!grouped) {
      for (int v = 0; v < vector; ++v)
        add(b.CreateAdd(r, k.index(v)));
      return;
    }
    k.beginVectorGroup(vector);
    Index keptIdx = delinearize(k, geo.keptShape, kept);
    std::vector<Index> lanes = k.vectorLaneIndices(geo.reducedShape, r);
    for (const Index& red : lanes)
      combine(mergeIndex(geo, keptIdx, red));
    k.endVectorGroup();
    gen.clearCache();
  });
  // Tail: the last (end - first) % vector elements, one per lane.
  llvm::Value* len = b.CreateSub(end, first);
  llvm::Value* tailStart =
      b.CreateAdd(first, b.CreateMul(b.CreateSDiv(len, k.index(vector)), k.index(vector)));
  k.loop(reduce.name + ".tail", b.CreateAdd(tailStart, laneOffset), end, k.index(lane0Step), add);
}

} // namespace

llvm::Value* warpReduce(KernelContext& k, ReduceKind kind, DType t, llvm::Value* v, int width) {
  for (int off = width / 2; off >= 1; off /= 2)
    v = reductionCombine(*k.b, kind, t, v, shuffleXor(k, v, off));
  return v;
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
  llvm::IRBuilder<>& b = *k.b;
  bool warpPerRow = m.kind == fusion::RowReduceMapping::Kind::WarpPerRow;
  int tpr = warpPerRow ? m.threadsPerRow : k.blockSize;
  if (warpPerRow && (tpr < 1 || tpr > 32 || (tpr & (tpr - 1)) != 0 || k.blockSize % tpr != 0))
    k.fail(reduce.id,
           fmt::format("warp-per-row needs threadsPerRow a power of two <= 32 dividing the block "
                       "size {}, got {}",
                       k.blockSize, tpr));
  if (!warpPerRow && k.blockSize % 32 != 0)
    k.fail(reduce.id,
           fmt::format("block-per-row needs a block size that is a multiple of 32, got {}",
                       k.blockSize));
  int vector = std::max(1, m.vectorWidth);
  ReduceGeometry geo = reduceGeometry(*k.graph, reduce);
  ReduceKind kind = reduce.attr<ir::ReduceAttrs>().kind;
  DType t = reduce.type.dtype;
  llvm::Type* at = computeType(k.ctx(), t);
  int rowsPerPass = k.blockSize / tpr;
  llvm::Value* tid = k.toIndex(k.threadId());
  llvm::Value* rowInPass = b.CreateUDiv(tid, k.index(tpr));
  llvm::Value* lane = b.CreateURem(tid, k.index(tpr));
  llvm::AllocaInst* acc = k.entryAlloca(at, reduce.name + ".acc");
  // A row shared by a thread-block cluster: this block accumulates its part (its slots) and the
  // cluster combines the parts.
  int cluster = warpPerRow ? 1 : std::max(1, m.clusterBlocks);
  if (cluster > 1 && !slots)
    k.fail(reduce.id, "a row shared by a thread-block cluster needs the row's slots (registers)");

  auto emitPass = [&](llvm::Value* pass) {
    llvm::Value* row = b.CreateAdd(pass, rowInPass);
    llvm::Value* valid = b.CreateICmpSLT(row, end);
    b.CreateStore(reductionIdentity(k.ctx(), kind, t), acc);
    if (slots) {
      // Rows past the tile accumulate their clamped row's elements; their result is dropped.
      emitAtSlots(k, gen, *slots, reduce.operands[0],
                  [&](const RowSlots::Step& step, const std::vector<llvm::Value*>& lanes) {
                    for (llvm::Value* x : lanes) {
                      llvm::Value* old = b.CreateLoad(at, acc);
                      b.CreateStore(inRowOr(b, step, reductionCombine(b, kind, t, old, x), old),
                                    acc);
                    }
                  });
    } else {
      // Lanes of a row past the end accumulate nothing but still take part in the shuffles.
      llvm::Value* rowEnd = b.CreateSelect(valid, reducedEnd, reducedBegin);
      accumulate(k, gen, reduce, geo, acc, row, reducedBegin, rowEnd, tpr, vector, lane);
    }
    llvm::Value* v = b.CreateLoad(at, acc);
    if (warpPerRow && (!coalesceResults || rowsPerPass == 1)) {
      v = warpReduce(k, kind, t, v, tpr);
      k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(lane, k.index(0))), [&] { onResult(row, v); });
      return;
    }
    if (warpPerRow) {
      // The pass's results leave from consecutive threads (thread i: row pass + i), so that
      // results in global memory are written by one request per 32 rows, not one per row.
      v = warpReduce(k, kind, t, v, tpr);
      k.ifThen(b.CreateICmpEQ(lane, k.index(0)), [&] { storeSlot(k, rowInPass, v); });
      k.blockBarrier();
      llvm::Value* owned = b.CreateAdd(pass, tid);
      k.ifThen(b.CreateAnd(b.CreateICmpSLT(tid, k.index(rowsPerPass)), b.CreateICmpSLT(owned, end)),
               [&] { onResult(owned, loadSlot(k, at, tid)); });
      k.blockBarrier(); // the scratch is reused by the next pass
      return;
    }
    v = warpReduce(k, kind, t, v, 32);
    llvm::Value* warp = b.CreateUDiv(tid, k.index(32));
    llvm::Value* lane32 = b.CreateURem(tid, k.index(32));
    k.ifThen(b.CreateICmpEQ(lane32, k.index(0)), [&] { storeSlot(k, warp, v); });
    k.blockBarrier();
    k.ifThen(b.CreateICmpEQ(warp, k.index(0)), [&] {
      llvm::Value* partial =
          b.CreateSelect(b.CreateICmpSLT(lane32, k.index(k.blockSize / 32)),
                         loadSlot(k, at,
                                  b.CreateSelect(b.CreateICmpSLT(lane32, k.index(k.blockSize / 32)),
                                                 lane32, k.index(0))),
                         reductionIdentity(k.ctx(), kind, t));
      llvm::Value* total = warpReduce(k, kind, t, partial, 32);
      if (cluster > 1) { // the block's part of the row, for the cluster's blocks to combine
        k.ifThen(b.CreateICmpEQ(lane32, k.index(0)), [&] { storeSlot(k, k.index(0), total); });
        return;
      }
      k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(lane32, k.index(0))),
               [&] { onResult(row, total); });
    });
    if (cluster > 1) {
      // Every block of the cluster combines the blocks' parts in rank order (the same total in
      // each); the second barrier keeps slot 0 until the whole cluster has read it.
      clusterBarrier(k);
      llvm::Type* st = slotType(at);
      llvm::Value* slot0 = b.CreateInBoundsGEP(st, k.reduceScratch, k.index(0));
      llvm::Value* total = reductionIdentity(k.ctx(), kind, t);
      for (int q = 0; q < cluster; ++q) {
        llvm::Value* v = loadClusterValue(k, mapToClusterBlock(k, slot0, b.getInt32(uint32_t(q))), st);
        if (at->isIntegerTy(1)) v = b.CreateTrunc(v, at);
        total = reductionCombine(b, kind, t, total, v);
      }
      k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(tid, k.index(0))), [&] { onResult(row, total); });
      clusterBarrier(k);
    }
    k.blockBarrier(); // the scratch is reused by the next row
  };
  if (slots) {
    emitPass(
        begin); // the tile is one pass: straight-line code, so slot values dominate what follows
    return;
  }
  k.loop(reduce.name + ".rows", begin, end, k.index(rowsPerPass), emitPass);
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
  llvm::AllocaInst* acc = k.entryAlloca(at, reduce.name + ".acc");
  b.CreateStore(reductionIdentity(k.ctx(), kind, t), acc);
  accumulate(k, gen, reduce, geo, acc, col, reducedBegin,
             b.CreateSelect(valid, reducedEnd, reducedBegin), tr, 1, ty, onOperand);
  storeSlot(k, tid, b.CreateLoad(at, acc));
  k.blockBarrier();
  k.ifThen(b.CreateAnd(valid, b.CreateICmpEQ(ty, k.index(0))), [&] {
    llvm::Value* v = loadSlot(k, at, tx);
    for (int j = 1; j < tr; ++j)
      v = reductionCombine(b, kind, t, v,
                           loadSlot(k, at, b.CreateAdd(tx, k.index(int64_t(j) * tc))));
    onResult(col, v);
  });
  k.blockBarrier(); // the scratch is reused by the next tile
}

} // namespace weft::codegen
