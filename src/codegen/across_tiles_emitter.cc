// Split and across-tiles reduces of a stitched kernel: per-block partials (in shared memory
// while the tiles run, or in the plan's partials buffer), their block combines and the grid-wide
// combine behind the phase's grid barrier; reduces split with atomics.
#include <algorithm>
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/cluster_access.h"
#include "codegen/grid_barrier.h"
#include "codegen/stitched_kernel_emitter.h"
#include "weft/error.h"

namespace weft::codegen::detail {

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
bool KernelEmitter::isAcrossTiles(const fusion::Stage& st) const {
  size_t index = size_t(&st - kp_.stages.data());
  return std::find(phase_->acrossStages.begin(), phase_->acrossStages.end(), index) !=
         phase_->acrossStages.end();
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
    return {it->second, sharedPartialDType(r.type.dtype), k_.index(0)};
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
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  for (const fusion::SharedPartials& sp : phase_->sharedPartials)
    if (sp.reduce == reduce) sharedPartials_[reduce] = stagingArray(sp.offset);
  AcrossPartials p = acrossPartials(reduce);
  llvm::Value* results = k_.dim(geo.kept);
  k_.loop(r.name + ".pinit", k_.toIndex(k_.threadId()), results, k_.index(k_.blockSize),
          [&](llvm::Value* c) {
            k_.storeElement(p.base, p.dtype, b.CreateAdd(p.row, c),
                            reductionIdentity(k_.ctx(), kind, r.type.dtype));
          });
}

void KernelEmitter::writeClusterPartials(ir::NodeId reduce, llvm::Value* shared) {
  // Behind a cluster barrier: block r of the cluster's C combines results
  // [r * chunk, (r + 1) * chunk) of every block's partials, in rank order, and writes them to
  // the cluster's row (chunk = ceil(results / C)).
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ir::ReduceKind kind = r.attr<ir::ReduceAttrs>().kind;
  ir::DType partialType = sharedPartialDType(r.type.dtype);
  llvm::Value* results = k_.dim(ir::numElements(r.type.shape));
  llvm::Value* blocks = clusterBlocks(k_);
  ClusterShare own = clusterShare(k_, results, clusterChunk(k_, results, k_.toIndex(blocks)),
                                  k_.toIndex(clusterRank(k_)));
  llvm::Value* partials = k_.bufferPointer(placement(reduce).partialsBuffer, reduce);
  llvm::Value* row = b.CreateMul(k_.toIndex(clusterIndex(k_)), results);
  // Each rank's array mapped once. The launch's cluster has at most the planned size; ranks
  // past it (a launch without clusters) read rank 0's again and contribute the identity.
  std::vector<llvm::Value*> arrays;
  for (int q = 0; q < kp_.launch.clusterSize; ++q) {
    llvm::Value* valid = b.CreateICmpULT(b.getInt32(uint32_t(q)), blocks);
    arrays.push_back(mapToClusterBlock(k_, shared, b.CreateSelect(valid, b.getInt32(uint32_t(q)),
                                                                  b.getInt32(0))));
  }
  k_.loop(r.name + ".cluster", b.CreateAdd(own.lo, k_.toIndex(k_.threadId())), own.hi,
          k_.index(k_.blockSize), [&](llvm::Value* c) {
            llvm::Value* acc = reductionIdentity(k_.ctx(), kind, r.type.dtype);
            for (size_t q = 0; q < arrays.size(); ++q) {
              llvm::Value* v = loadClusterElement(k_, arrays[q], partialType, c);
              llvm::Value* combined = reductionCombine(k_, kind, r.type.dtype, acc, v);
              acc = q == 0 ? combined
                           : b.CreateSelect(b.CreateICmpULT(b.getInt32(uint32_t(q)), blocks),
                                            combined, acc);
            }
            k_.storeElement(partials, r.type.dtype, b.CreateAdd(row, c), acc);
          });
  clusterPartials_.insert(reduce);
}

void KernelEmitter::emitSharedPartialsToGlobal() {
  // Each thread writes the partials it owns (no barrier: the same thread accumulated them).
  // Through the cluster, every block's partials are combined first (writeClusterPartials).
  llvm::IRBuilder<>& b = b_;
  if (phase_->throughCluster && !sharedPartials_.empty()) {
    clusterBarrier(k_);
    for (const auto& [reduce, shared] : sharedPartials_)
      writeClusterPartials(reduce, shared);
    sharedPartials_.clear();
    return;
  }
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
                b.CreateStore(reductionCombine(k_, kind, r.type.dtype,
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
                  llvm::Value* sum = reductionCombine(k_, kind, r.type.dtype, old, v);
                  b.CreateStore(b.CreateSelect(slots.valid, inRowOr(b, step, sum, old), old), acc);
                }
              });
  slotsReading_ = false;
}

void KernelEmitter::emitSlotAccumulatorsToPartials(const fusion::SlotPlan& sp) {
  // After the tile loop: the threads that share columns (one per row of the block's tile) fold
  // their accumulators into shared memory one row after another, then the block writes its
  // partials (partials[block][column]) for the combine behind the grid barrier. Row 0's threads
  // cover every column, so they store rather than combine.
  llvm::IRBuilder<>& b = b_;
  bool warpPerRow = sp.mapping.kind == fusion::RowReduceMapping::Kind::WarpPerRow;
  int tpr = warpPerRow ? sp.mapping.threadsPerRow : k_.blockSize;
  int width = std::max(1, sp.mapping.vectorWidth);
  int rounds = k_.blockSize / tpr;
  const std::vector<int64_t>& offsets = sp.combineOffsets;
  llvm::Value* array = stagingArray(sp.combineOffset);
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
              v = reductionCombine(k_, kind, r.type.dtype,
                                   k_.loadElement(sharedOf(i), sharedPartialDType(r.type.dtype), column), v);
            k_.storeElement(sharedOf(i), sharedPartialDType(r.type.dtype), column, v);
          });
        }
      }
    });
    k_.blockBarrier();
  }
  if (phase_->throughCluster) {
    clusterBarrier(k_); // every block of the cluster has combined its rows
    for (size_t i = 0; i < sp.across.size(); ++i)
      writeClusterPartials(sp.across[i], sharedOf(i));
    slotAccumulators_.clear();
    return;
  }
  for (size_t i = 0; i < sp.across.size(); ++i) {
    const ir::Node& r = node(sp.across[i]);
    llvm::Value* results = k_.dim(ir::numElements(r.type.shape));
    llvm::Value* partials = k_.bufferPointer(placement(r.id).partialsBuffer, r.id);
    llvm::Value* row = b.CreateMul(k_.toIndex(k_.blockId()), results);
    k_.loop(r.name + ".partials", tid, results, k_.index(k_.blockSize), [&](llvm::Value* c) {
      k_.storeElement(partials, r.type.dtype, b.CreateAdd(row, c),
                      k_.loadElement(sharedOf(i), sharedPartialDType(r.type.dtype), c));
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
  // A block's partials, combined as its elements were (a logsumexp as a running max and sum
  // below it: combining logs one at a time rounds at their magnitude every step).
  std::vector<ThreadAccumulator> accs;
  for (ir::NodeId r : reduces)
    accs.emplace_back(k_, node(r).attr<ir::ReduceAttrs>().kind, node(r).type.dtype,
                      node(r).name + ".cacc");
  k_.loop("across.combine", start, results, stride, [&](llvm::Value* c) {
    for (size_t i = 0; i < reduces.size(); ++i) {
      const ir::Node& r = node(reduces[i]);
      llvm::Value* partials = k_.bufferPointer(placement(r.id).partialsBuffer, r.id);
      ThreadAccumulator& acc = accs[i];
      acc.reset();
      // one row per block, or per cluster when the cluster combined its blocks' rows
      llvm::Value* rows = clusterPartials_.count(r.id) ? k_.toIndex(clusterCount(k_)) : blocks;
      k_.loop(r.name + ".blocks", k_.index(0), rows, k_.index(1), [&](llvm::Value* blk) {
        acc.add(k_.loadElement(partials, r.type.dtype, b.CreateAdd(b.CreateMul(blk, results), c)));
      });
    }
    gen_->clearCache();
    for (size_t i = 0; i < reduces.size(); ++i) {
      const ir::Node& r = node(reduces[i]);
      llvm::Value* total = accs[i].value();
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
  // After the grid barrier: every result combines its splitFactor partials (and its split
  // siblings'), then the stage's values are computed from them and stored (one thread per
  // result, grid-stride).
  llvm::IRBuilder<>& b = b_;
  const ir::Node& r = node(reduce);
  ReduceGeometry geo = reduceGeometry(plan_.graph, r);
  llvm::Value* results = k_.dim(geo.kept);
  llvm::Value* start = b.CreateAdd(b.CreateMul(k_.toIndex(k_.blockId()), k_.index(k_.blockSize)),
                                   k_.toIndex(k_.threadId()));
  llvm::Value* stride = b.CreateMul(k_.toIndex(k_.gridSize()), k_.index(k_.blockSize));
  // The dominant and the sibling reduces split with it (splitSiblings), each from its partials.
  std::vector<ir::NodeId> combined = {reduce};
  for (const fusion::Stage& st : kp_.stages)
    if (std::find(st.materialized.begin(), st.materialized.end(), reduce) != st.materialized.end())
      for (ir::NodeId v : splitSiblings(st, g))
        combined.push_back(v);
  k_.loop(r.name + ".combine", start, results, stride, [&](llvm::Value* kept) {
    gen_->clearCache();
    for (ir::NodeId c : combined) {
      const ir::Node& cr = node(c);
      llvm::Value* buffer = k_.bufferPointer(placement(c).partialsBuffer, c);
      ThreadAccumulator parts(k_, cr.attr<ir::ReduceAttrs>().kind, cr.type.dtype,
                              cr.name + ".parts"); // as across.combine
      parts.reset();
      for (int part = 0; part < s.split; ++part) {
        llvm::Value* slot = b.CreateAdd(b.CreateMul(k_.index(part), results), kept);
        parts.add(k_.loadElement(buffer, cr.type.dtype, slot));
      }
      llvm::Value* acc = parts.value();
      gen_->setGenerator(c, [acc](const Index&) { return acc; });
    }
    for (ir::NodeId v : materialized) {
      if (v == r.operands[0]) continue; // stored by the reduce's pass (emitReduceStage)
      if (placement(v).storage == Storage::Shared)
        k_.fail(v, "a split reduce's stage cannot keep values in shared memory (they are combined "
                   "across blocks)");
      store(s, v, kept, gen_->emit(v, delinearize(k_, node(v).type.shape, kept)));
    }
    for (ir::NodeId c : combined)
      gen_->clearGenerator(c);
    gen_->clearCache();
  });
}

} // namespace weft::codegen::detail
