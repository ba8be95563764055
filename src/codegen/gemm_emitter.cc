// A tiled GEMM, on CUDA cores or tensor cores (mma.sync, or Hopper's wgmma), emitted from its
// GemmPlan.
#include "codegen/gemm_emitter.h"

#include <map>

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/elemental_emitter.h"

namespace weft::codegen {
namespace {

using llvm::Value;

/// A value loaded from memory (storage type) → its compute type. Dots take no bools.
Value* toCompute(llvm::IRBuilder<>& b, Value* v, ir::DType t) {
  if (t == ir::DType::f16) return b.CreateFPExt(v, b.getFloatTy());
  if (t == ir::DType::bf16)
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(v, b.getInt32Ty()), 16), b.getFloatTy());
  return v;
}

/// A float compute value → its storage type (f16 and bf16 rounded to nearest even).
Value* toStorage(llvm::IRBuilder<>& b, Value* v, ir::DType t) {
  if (t == ir::DType::f16) return b.CreateFPTrunc(v, b.getHalfTy());
  if (t == ir::DType::bf16) {
    Value* bits = b.CreateBitCast(roundToDType(b, v, t), b.getInt32Ty());
    return b.CreateTrunc(b.CreateLShr(bits, 16), b.getInt16Ty());
  }
  return v;
}

class GemmEmitter {
public:
  GemmEmitter(KernelContext& k, const fusion::GemmPlan& p, ir::DType t,
              const GemmResultElement* epilogue)
      : k_(k), b_(*k.b), p_(p), t_(t), e_(int(ir::dtypeBytes(t))), mt_(memoryType(k.ctx(), t)),
        ct_(computeType(k.ctx(), t)), epi_(epilogue) {}

  void emit(Value* pa, Value* pb, Value* po);

private:
  // Where the operands are staged: stage s holds the A tile then the B tile. The FMA path
  // stages A as [blockK][blockM] (K-major, so that a thread's rows are contiguous) and B as
  // [blockK][blockN]; tensor cores stage each tile as its operand lies, for ldmatrix (a
  // row-major A as [blockM][blockK], a column-major B as [blockN][blockK], the others K-major),
  // rows padded by the plan's rowPad.
  // Warpgroup MMA stages both tiles K-major in core matrices (GemmPlan::Engine::Warpgroup).
  bool mma() const { return p_.tensorCores(); }
  /// One operand's tile: how it lies in global memory and in shared memory.
  struct Operand {
    const fusion::GemmOperand* layout;
    int outer;          // the tile's M (A) or N (B) extent
    int vector;         // elements per global load, along the dim contiguous in global memory
    bool kContiguous;   // global memory: K is the contiguous dim
    bool kRows;         // shared memory: K-major ([blockK][pitch]), else [outer][pitch]
    int pitch;          // elements per staged row
    /// Shared memory: core matrices of 8 rows × 8 K elements (wgmma's no-swizzle layout),
    /// kChunks = blockK / 8 of them per 8 rows; kRows is false and pitch is blockK. Inside a
    /// core matrix, 16 contiguous bytes are 8 elements of K of one row (K-major), or, mnMajor
    /// (the operand contiguous along M or N, wgmma's imm-trans 1), 8 rows at one k.
    int kChunks = 0;
    bool mnMajor = false;
    int64_t offset = 0; // bytes from the stage's start
    Value* arg = nullptr;
    Value *outerDim = nullptr, *ld = nullptr, *batchStride = nullptr;
    Value *origin = nullptr, *base = nullptr; // the tile's first row (A) or column (B); batch
    bool outerExact = false;
    int64_t bytes(int blockK, int e) const { return int64_t(kRows ? blockK : outer) * pitch * e; }
    /// The staged element of tile coordinates (o, kk).
    Value* element(llvm::IRBuilder<>& b, Value* o, Value* kk) const {
      if (kChunks) {
        Value* matrix = b.CreateAdd(b.CreateMul(b.CreateLShr(o, 3), b.getInt32(uint32_t(kChunks))),
                                    b.CreateLShr(kk, 3));
        Value* inside = mnMajor
                            ? b.CreateAdd(b.CreateMul(b.CreateAnd(kk, 7), b.getInt32(8)), b.CreateAnd(o, 7))
                            : b.CreateAdd(b.CreateMul(b.CreateAnd(o, 7), b.getInt32(8)), b.CreateAnd(kk, 7));
        return b.CreateAdd(b.CreateMul(matrix, b.getInt32(64)), inside);
      }
      return kRows ? b.CreateAdd(b.CreateMul(kk, b.getInt32(uint32_t(pitch))), o)
                   : b.CreateAdd(b.CreateMul(o, b.getInt32(uint32_t(pitch))), kk);
    }
  };
  Operand operandA() const;
  Operand operandB() const;
  int64_t stageBytes() const { return aTile_.bytes(p_.blockK, e_) + bTile_.bytes(p_.blockK, e_); }
  /// Columns between the runs of one thread's columns (GemmPlan::columnRun).
  int runStride() const { return p_.lanesN() * p_.columnRun; }
  /// Pointer to element `elem` (i32) of the array at byte `offset` (i32) of the tiles.
  Value* shared(Value* offset, Value* elem) {
    Value* base = b_.CreateGEP(b_.getInt8Ty(), tiles_, offset);
    return b_.CreateGEP(mt_, base, elem);
  }
  Value* i32(int64_t v) { return b_.getInt32(uint32_t(v)); }
  /// The conjunction of two guards, either of which may be nullptr (known to hold).
  Value* both(Value* x, Value* y) { return !x ? y : !y ? x : b_.CreateAnd(x, y); }
  /// A load of `ty` from `ptr` when `cond` holds (nullptr: always), zero otherwise: an
  /// out-of-range operand element contributes nothing to the sums.
  Value* guardedLoad(Value* cond, llvm::Type* ty, Value* ptr, unsigned align);
  llvm::Type* accessType(int width) const {
    return width == 1 ? mt_ : llvm::FixedVectorType::get(mt_, unsigned(width));
  }

  /// One K tile of A or B, loaded from global memory into registers: per chunk of the block's
  /// threads, the vector this thread loads (nullptr where it loads none).
  struct Staged {
    std::vector<Value*> vectors;
    std::vector<Value*> rows, cols; // tile coordinates of each vector's first element
    std::vector<Value*> active;     // whether the thread has that chunk (nullptr: always)
  };
  /// With `asyncStage` (GemmPlan::asyncCopy), each vector is copied into that stage with
  /// cp.async instead, and the result is empty.
  Staged load(const Operand& o, Value* k0, Value* asyncStage = nullptr);
  /// A loaded vector of the operand's source → the operand's values (GemmOperand::computed),
  /// zero where `cond` (nullptr: always in range) does not hold.
  Value* computeOnLoad(const Operand& o, Value* loaded, Value* cond);
  Staged loadA(Value* k0, Value* asyncStage = nullptr) { return load(aTile_, k0, asyncStage); }
  Staged loadB(Value* k0, Value* asyncStage = nullptr) { return load(bTile_, k0, asyncStage); }
  /// cp.async of `bytes` from `from` to shared `to` when `inRange` (nullptr: always), else
  /// zeros (src-size 0, from a valid address); only by threads with `active` (nullptr: all).
  void copyAsync(Value* active, Value* inRange, Value* from, Value* base, Value* to, int bytes);
  void store(const Operand& o, const Staged& s, Value* stage);
  void storeA(const Staged& s, Value* stage) { store(aTile_, s, stage); }
  void storeB(const Staged& s, Value* stage) { store(bTile_, s, stage); }
  /// Guard of the K coordinate `kk` of a tile starting at k0 (nullptr: always in range).
  Value* kGuard(Value* k0, Value* kk);
  /// The accumulators += this thread's products over the K tile staged in `stage`.
  void multiply(Value* stage);
  /// The same on tensor cores: per 16-wide K step, ldmatrix fragments and mma.sync per tile.
  void multiplyMma(Value* stage);
  /// The same with tf32 inputs (GemmPlan::tf32): per 8-wide K step, each warp's fragments of
  /// f32 elements (ldmatrix or ld.shared), rounded to tf32, and mma.sync m16n8k8 per tile.
  void multiplyTf32(Value* stage);
  /// The same with Hopper's warpgroup MMA: per 16-wide K step one wgmma m64n<warpN>k16 per
  /// warpgroup, A and B read from the staged core matrices through matrix descriptors; the
  /// K tile's wgmmas are fenced, committed and waited for in one inline-PTX sequence.
  void multiplyWarpgroup(Value* stage);
  /// fence.proxy.async.shared::cta: the tiles this thread wrote to shared memory (st.shared or
  /// cp.async, the generic proxy) become visible to wgmma's reads (the async proxy).
  void fenceProxyAsync();
  /// The barrier before a staged K tile is multiplied (after the proxy fence on wgmma).
  void tilesStaged() {
    if (p_.warpgroups()) fenceProxyAsync();
    k_.blockBarrier();
  }
  /// m16n8 accumulator tiles per warp: rows (a wgmma warp's 16) and columns.
  int fragmentTilesM() const { return p_.warpgroups() ? 1 : p_.warpM / 16; }
  /// The declaration of intrinsic `id`; ldmatrix's is overloaded on its (shared) pointer.
  llvm::Function* declare(llvm::Intrinsic::ID id);
  /// acc (tilesM × tilesN m16n8 accumulator fragments, 4 each, row-major) += the mma `mmaFn`
  /// of A fragments a[mi] and B fragments bf[ni] for each tile.
  void mmaTiles(llvm::Function* mmaFn, const std::vector<std::vector<Value*>>& a,
                const std::vector<std::vector<Value*>>& bf, std::vector<Value*>& acc);
  /// An f32's bits (i32) rounded to tf32 by cvt.rna.tf32.f32: the 13 low significand bits
  /// dropped, to nearest with ties away from zero.
  Value* roundToTf32(Value* bits);
  void storeMmaResult(Value* po);
  void storeResult(Value* po);
  /// The epilogue's value of each of a store's lanes: accumulators acc at row gRow and
  /// columns gCol, gCol + 1, ...; `row` and `col` name the row and first column inside the
  /// thread's part of the tile, so each is made (and clamped into the result, where its edge
  /// is not exact) once per tile.
  std::vector<Value*> epilogueLanes(int row, Value* gRow, int col, Value* gCol,
                                    const std::vector<Value*>& acc);
  /// threadM or threadN consecutive elements of a staged array, in compute type.
  std::vector<Value*> loadRun(Value* offset, Value* first, int count);

  KernelContext& k_;
  llvm::IRBuilder<>& b_;
  const fusion::GemmPlan& p_;
  ir::DType t_;
  int e_;
  llvm::Type* mt_;
  llvm::Type* ct_;
  const GemmResultElement* epi_;
  llvm::GlobalVariable* tiles_ = nullptr;
  Operand aTile_, bTile_;
  Value *M_ = nullptr, *N_ = nullptr, *K_ = nullptr;
  Value *m0_ = nullptr, *n0_ = nullptr; // the block tile's origin
  Value* batch_ = nullptr;              // the block tile's batch
  Value* cBase_ = nullptr;              // the batch's offset in the result
  Value* cLd_ = nullptr;                // elements between the result's rows (GemmPlan::c)
  // i32, inside the tile: the thread's first row and the first column of its first run
  Value *tid_ = nullptr, *row0_ = nullptr, *col0_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_; // threadM × threadN, row-major
  std::map<int, Value*> rows_, cols_;  // epilogue: the tile's row and column indices
  bool mExact_ = false, nExact_ = false, kExact_ = false; // dims static multiples of the tile
};

Value* GemmEmitter::guardedLoad(Value* cond, llvm::Type* ty, Value* ptr, unsigned align) {
  if (!cond) return b_.CreateAlignedLoad(ty, ptr, llvm::Align(align));
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* then = llvm::BasicBlock::Create(k_.ctx(), "gemm.load", k_.fn);
  auto* merge = llvm::BasicBlock::Create(k_.ctx(), "gemm.loaded", k_.fn);
  b_.CreateCondBr(cond, then, merge);
  b_.SetInsertPoint(then);
  Value* v = b_.CreateAlignedLoad(ty, ptr, llvm::Align(align));
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  llvm::PHINode* phi = b_.CreatePHI(ty, 2);
  phi->addIncoming(llvm::Constant::getNullValue(ty), from);
  phi->addIncoming(v, then);
  return phi;
}

Value* GemmEmitter::kGuard(Value* k0, Value* kk) {
  // With two stages the last iteration prefetches past K: the tile origin guards it.
  if (kExact_) return p_.stages > 1 ? b_.CreateICmpSLT(k0, K_) : nullptr;
  return b_.CreateICmpSLT(b_.CreateAdd(k0, k_.toIndex(kk)), K_);
}

GemmEmitter::Operand GemmEmitter::operandA() const {
  Operand o{&p_.a, p_.blockM, p_.vectorA, p_.a.rowMajor(),
            !mma() || (!p_.warpgroups() && !p_.a.rowMajor()), 0};
  o.pitch = (o.kRows ? p_.blockM : p_.blockK) + p_.rowPad(o.kRows);
  if (p_.warpgroups()) {
    o.kChunks = p_.blockK / 8;
    o.mnMajor = !o.kContiguous;
  }
  return o;
}

GemmEmitter::Operand GemmEmitter::operandB() const {
  Operand o{&p_.b, p_.blockN, p_.vectorB, !p_.b.rowMajor(),
            !mma() || (!p_.warpgroups() && p_.b.rowMajor()), 0};
  o.pitch = (o.kRows ? p_.blockN : p_.blockK) + p_.rowPad(o.kRows);
  if (p_.warpgroups()) {
    o.kChunks = p_.blockK / 8;
    o.mnMajor = !o.kContiguous;
  }
  o.offset = aTile_.bytes(p_.blockK, e_);
  return o;
}

GemmEmitter::Staged GemmEmitter::load(const Operand& o, Value* k0, Value* asyncStage) {
  // Vectors along the dim the operand is contiguous in: consecutive threads read consecutive
  // vectors of one row (of A's or B's buffer, whichever way the operand lies).
  Staged s;
  const int v = o.vector;
  int perRow = (o.kContiguous ? p_.blockK : o.outer) / v;
  int64_t count = int64_t(o.outer) * p_.blockK / v;
  for (int64_t first = 0; first < count; first += p_.blockSize) {
    Value* x = b_.CreateAdd(tid_, i32(first));
    Value* active = first + p_.blockSize > count ? b_.CreateICmpULT(x, i32(count)) : nullptr;
    Value* along = b_.CreateMul(b_.CreateURem(x, i32(perRow)), i32(v));
    Value* across = b_.CreateUDiv(x, i32(perRow));
    if (o.kChunks && v == 8) {
      // Core matrices: 16-byte vectors, lanes 8j .. 8j + 7 fill the eight rows of one core
      // matrix (128 contiguous bytes of shared memory: no two in a bank), j the next one along
      // the contiguous dim; each global row is still read in whole sectors by its lanes.
      Value* rest = b_.CreateLShr(x, 3);
      along = b_.CreateMul(b_.CreateURem(rest, i32(perRow)), i32(8));
      across = b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(rest, i32(perRow)), i32(8)),
                            b_.CreateAnd(x, 7));
    }
    Value* outer = o.kContiguous ? across : along;
    Value* kk = o.kContiguous ? along : across;
    Value* gOuter = b_.CreateAdd(o.origin, k_.toIndex(outer));
    Value* inRange =
        both(o.outerExact ? nullptr : b_.CreateICmpSLT(gOuter, o.outerDim), kGuard(k0, kk));
    Value* cond = both(active, inRange);
    Value* gK = b_.CreateAdd(k0, k_.toIndex(kk));
    Value* off = o.kContiguous ? b_.CreateAdd(b_.CreateMul(gOuter, o.ld), gK)
                               : b_.CreateAdd(b_.CreateMul(gK, o.ld), gOuter);
    llvm::Type* st = memoryType(k_.ctx(), o.layout->sourceType);
    const int se = int(ir::dtypeBytes(o.layout->sourceType));
    Value* ptr = b_.CreateGEP(st, o.arg, b_.CreateAdd(o.base, off));
    if (asyncStage) {
      // staged as it lies (the planner copies asynchronously only then)
      Value* at = b_.CreateAdd(b_.CreateMul(asyncStage, i32(stageBytes())), i32(o.offset));
      copyAsync(active, inRange, ptr, o.arg, shared(at, o.element(b_, outer, kk)), v * e_);
      continue;
    }
    llvm::Type* access = v == 1 ? st : llvm::FixedVectorType::get(st, unsigned(v));
    Value* loaded = guardedLoad(cond, access, ptr, unsigned(v * se));
    s.vectors.push_back(o.layout->computed() ? computeOnLoad(o, loaded, cond) : loaded);
    s.rows.push_back(outer);
    s.cols.push_back(kk);
    s.active.push_back(active);
  }
  return s;
}

Value* GemmEmitter::computeOnLoad(const Operand& o, Value* loaded, Value* cond) {
  // Each element through the graph's ops from the source to the operand (the layout ops among
  // them only move indices, which the loads already did: their index arithmetic is dead).
  const fusion::GemmOperand& l = *o.layout;
  const ir::Shape& shape = k_.graph->node(l.value).type.shape;
  Index idx(shape.size(), k_.index(0));
  llvm::Type* ty = accessType(o.vector);
  Value* out = llvm::UndefValue::get(ty);
  for (int j = 0; j < o.vector; ++j) {
    Value* x =
        toCompute(b_, o.vector == 1 ? loaded : b_.CreateExtractElement(loaded, j), l.sourceType);
    ElementalEmitter gen(k_);
    gen.setGenerator(l.source, [x](const Index&) { return x; });
    Value* y = toStorage(b_, gen.emit(l.value, idx), t_);
    // past an edge the operand is zero, whatever the ops make of the zero loaded there
    if (cond) y = b_.CreateSelect(cond, y, llvm::Constant::getNullValue(mt_));
    out = o.vector == 1 ? y : b_.CreateInsertElement(out, y, j);
  }
  return out;
}

void GemmEmitter::copyAsync(Value* active, Value* inRange, Value* from, Value* base, Value* to,
                            int bytes) {
  using llvm::Intrinsic::ID;
  ID id = bytes == 16  ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
          : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                       : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
  auto* fn = llvm::Intrinsic::getDeclaration(k_.module, id);
  auto issue = [&] {
    Value* src = inRange ? b_.CreateSelect(inRange, from, base) : from;
    Value* size = inRange ? b_.CreateSelect(inRange, i32(bytes), i32(0)) : i32(bytes);
    b_.CreateCall(fn, {to, src, size});
  };
  if (active)
    k_.ifThen(active, issue);
  else
    issue();
}

void GemmEmitter::store(const Operand& o, const Staged& s, Value* stage) {
  Value* offset = b_.CreateAdd(b_.CreateMul(stage, i32(stageBytes())), i32(o.offset));
  // Staged as it lies: one vector store; the other way round: one store per element. Core
  // matrices take a vector as it lies either way (K-major or MN-major).
  const bool asItLies = o.kChunks || o.kRows != o.kContiguous;
  for (size_t c = 0; c < s.vectors.size(); ++c) {
    auto store = [&] {
      if (asItLies || o.vector == 1) {
        b_.CreateAlignedStore(s.vectors[c], shared(offset, o.element(b_, s.rows[c], s.cols[c])),
                              llvm::Align(unsigned(o.vector * e_)));
        return;
      }
      for (int j = 0; j < o.vector; ++j) {
        Value* x = b_.CreateExtractElement(s.vectors[c], j);
        Value* elem = o.kContiguous ? o.element(b_, s.rows[c], b_.CreateAdd(s.cols[c], i32(j)))
                                    : o.element(b_, b_.CreateAdd(s.rows[c], i32(j)), s.cols[c]);
        b_.CreateAlignedStore(x, shared(offset, elem), llvm::Align(e_));
      }
    };
    if (s.active[c])
      k_.ifThen(s.active[c], store);
    else
      store();
  }
}

std::vector<Value*> GemmEmitter::loadRun(Value* offset, Value* first, int count) {
  // As wide as 16 bytes allow: `first` is a multiple of `count`, so every chunk is aligned.
  int w = std::min(count, std::max(1, 16 / e_));
  std::vector<Value*> out;
  for (int c = 0; c < count; c += w) {
    Value* ptr = shared(offset, b_.CreateAdd(first, i32(c)));
    Value* v = b_.CreateAlignedLoad(accessType(w), ptr, llvm::Align(unsigned(w * e_)));
    for (int j = 0; j < w; ++j)
      out.push_back(toCompute(b_, w == 1 ? v : b_.CreateExtractElement(v, j), t_));
  }
  return out;
}

void GemmEmitter::multiply(Value* stage) {
  Value* aOff = b_.CreateMul(stage, i32(stageBytes()));
  Value* bOff = b_.CreateAdd(aOff, i32(bTile_.offset));
  // With tileSums, each K tile's products are summed on their own and then added to the
  // accumulators: the rounding error grows with K / blockK + blockK instead of K.
  std::vector<Value*> acc;
  for (llvm::AllocaInst* a : acc_)
    acc.push_back(p_.tileSums ? static_cast<Value*>(llvm::Constant::getNullValue(ct_))
                              : b_.CreateLoad(ct_, a));
  for (int kk = 0; kk < p_.blockK; ++kk) {
    std::vector<Value*> a = loadRun(aOff, b_.CreateAdd(i32(kk * aTile_.pitch), row0_), p_.threadM);
    std::vector<Value*> bv;
    for (int r = 0; r < p_.threadN / p_.columnRun; ++r) {
      Value* first = b_.CreateAdd(i32(kk * bTile_.pitch + r * runStride()), col0_);
      for (Value* x : loadRun(bOff, first, p_.columnRun))
        bv.push_back(x);
    }
    for (int i = 0; i < p_.threadM; ++i)
      for (int j = 0; j < p_.threadN; ++j) {
        Value*& c = acc[size_t(i * p_.threadN + j)];
        c = ir::isFloat(t_) ? b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ct_},
                                                 {a[size_t(i)], bv[size_t(j)], c})
                            : b_.CreateAdd(c, b_.CreateMul(a[size_t(i)], bv[size_t(j)]));
      }
  }
  for (size_t i = 0; i < acc_.size(); ++i) {
    Value* sum = acc[i];
    if (p_.tileSums) sum = b_.CreateFAdd(b_.CreateLoad(ct_, acc_[i]), sum);
    b_.CreateStore(sum, acc_[i]);
  }
}

void GemmEmitter::multiplyMma(Value* stage) {
  if (p_.tf32) {
    multiplyTf32(stage);
    return;
  }
  if (p_.warpgroups()) {
    multiplyWarpgroup(stage);
    return;
  }
  Value* aOff = b_.CreateMul(stage, i32(stageBytes()));
  Value* bOff = b_.CreateAdd(aOff, i32(bTile_.offset));
  const int tilesM = p_.warpM / 16, tilesN = p_.warpN / 8;
  // ldmatrix: lane l names row l % 8 of matrix l / 8. A (x4): matrices (rows 0-7, k 0-7),
  // (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) are a0a1, a2a3, a4a5, a6a7;
  // B (x2): k 0-7 and k 8-15 of eight columns are b0b1 and b2b3. A tile staged K-major is read
  // with .trans (its memory rows are k; the fragments want rows of A and columns of B), one
  // staged [outer][k] without.
  Value* lane = b_.CreateAnd(tid_, 31);
  Value* matrix = b_.CreateLShr(lane, 3);
  Value* r = b_.CreateAnd(lane, 7);
  Value* aSubRow = b_.CreateMul(b_.CreateAnd(matrix, 1), i32(8));
  Value* aSubK = b_.CreateMul(b_.CreateLShr(matrix, 1), i32(8));
  Value* bSubK = aSubRow; // lanes 0-15 (x2 reads only their addresses)
  auto* ldA = declare(aTile_.kRows ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                                   : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16);
  auto* ldB = declare(bTile_.kRows ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16
                                   : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16);
  auto* mmaFn = declare(t_ == ir::DType::bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                              : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32);
  // The row address of this lane in an 8 x 8 matrix at (o, kk) of a staged tile: row r along
  // whichever dim the tile's memory rows run.
  auto rowAddress = [&](const Operand& o, Value* off, Value* outer, Value* kk) {
    if (o.kRows)
      kk = b_.CreateAdd(kk, r);
    else
      outer = b_.CreateAdd(outer, r);
    return shared(off, o.element(b_, outer, kk));
  };
  std::vector<Value*> acc;
  for (llvm::AllocaInst* a : acc_)
    acc.push_back(b_.CreateLoad(b_.getFloatTy(), a));
  for (int ks = 0; ks < p_.blockK / 16; ++ks) {
    std::vector<std::vector<Value*>> a(static_cast<size_t>(tilesM)),
        bf(static_cast<size_t>(tilesN));
    for (int mi = 0; mi < tilesM; ++mi) {
      Value* row = b_.CreateAdd(row0_, b_.CreateAdd(i32(mi * 16), aSubRow));
      Value* kk = b_.CreateAdd(aSubK, i32(ks * 16));
      Value* frag = b_.CreateCall(ldA, {rowAddress(aTile_, aOff, row, kk)});
      for (unsigned j = 0; j < 4; ++j)
        a[size_t(mi)].push_back(b_.CreateExtractValue(frag, j));
    }
    for (int ni = 0; ni < tilesN; ++ni) {
      Value* col = b_.CreateAdd(col0_, i32(ni * 8));
      Value* kk = b_.CreateAdd(bSubK, i32(ks * 16));
      Value* frag = b_.CreateCall(ldB, {rowAddress(bTile_, bOff, col, kk)});
      for (unsigned j = 0; j < 2; ++j)
        bf[size_t(ni)].push_back(b_.CreateExtractValue(frag, j));
    }
    mmaTiles(mmaFn, a, bf, acc);
  }
  for (size_t i = 0; i < acc_.size(); ++i)
    b_.CreateStore(acc[i], acc_[i]);
}

llvm::Function* GemmEmitter::declare(llvm::Intrinsic::ID id) {
  if (!llvm::Intrinsic::isOverloaded(id)) return llvm::Intrinsic::getDeclaration(k_.module, id);
  return llvm::Intrinsic::getDeclaration(k_.module, id, {tiles_->getType()});
}

void GemmEmitter::mmaTiles(llvm::Function* mmaFn, const std::vector<std::vector<Value*>>& a,
                           const std::vector<std::vector<Value*>>& bf, std::vector<Value*>& acc) {
  llvm::FunctionType* mt = mmaFn->getFunctionType();
  for (size_t mi = 0; mi < a.size(); ++mi)
    for (size_t ni = 0; ni < bf.size(); ++ni) {
      std::vector<Value*> args(a[mi]);
      args.insert(args.end(), bf[ni].begin(), bf[ni].end());
      size_t first = (mi * bf.size() + ni) * 4;
      for (size_t i = 0; i < 4; ++i)
        args.push_back(acc[first + i]);
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i]->getType() != mt->getParamType(unsigned(i)))
          args[i] = b_.CreateBitCast(args[i], mt->getParamType(unsigned(i)));
      Value* d = b_.CreateCall(mmaFn, args);
      for (unsigned i = 0; i < 4; ++i)
        acc[first + i] = b_.CreateExtractValue(d, i);
    }
}

void GemmEmitter::fenceProxyAsync() {
  auto* fence = llvm::InlineAsm::get(llvm::FunctionType::get(b_.getVoidTy(), false),
                                     "fence.proxy.async.shared::cta;", "~{memory}", true);
  b_.CreateCall(fence);
}

void GemmEmitter::multiplyWarpgroup(Value* stage) {
  // Matrix descriptors (PTX ISA, wgmma): start address >> 4 in bits 0-13, the leading-dimension
  // byte offset (between core matrices along K: 128) >> 4 in bits 16-29, the stride-dimension
  // byte offset (between 8-row groups: blockK / 8 core matrices of 128 bytes) >> 4 in bits
  // 32-45, no swizzle (bits 62-63 zero); the same for K-major and MN-major tiles (imm-trans
  // says which, the ISA's canonical layouts ((8,m),(T,2k)):((1T,SBO),(1,LBO)) and
  // ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))). Warpgroup w multiplies rows 64 w .. 64 w + 63 of A
  // by all of B; K step ks starts 2 ks core matrices in.
  const int n = p_.warpN, regs = n / 2, ksteps = p_.blockK / 16;
  const uint64_t strideBytes = uint64_t(p_.blockK) * 16;
  const uint64_t fixed = (uint64_t(128) >> 4) << 16 | (strideBytes >> 4) << 32;
  llvm::Type* i64 = b_.getInt64Ty();
  Value* tiles = b_.CreatePtrToInt(tiles_, i64);
  Value* stageStart =
      b_.CreateAdd(tiles, b_.CreateZExt(b_.CreateMul(stage, i32(stageBytes())), i64));
  Value* group = b_.CreateZExt(b_.CreateLShr(tid_, 7), i64);
  Value* aStart = b_.CreateAdd(
      b_.CreateAdd(stageStart, b_.getInt64(uint64_t(aTile_.offset))),
      b_.CreateMul(group, b_.getInt64(uint64_t(p_.warpM) * uint64_t(p_.blockK) * uint64_t(e_))));
  Value* bStart = b_.CreateAdd(stageStart, b_.getInt64(uint64_t(bTile_.offset)));
  auto descriptor = [&](Value* start, int ks) {
    Value* at = b_.CreateAdd(start, b_.getInt64(uint64_t(ks) * 256));
    Value* field = b_.CreateLShr(b_.CreateAnd(at, b_.getInt64(0x3ffff)), 4);
    return b_.CreateOr(field, b_.getInt64(fixed));
  };
  // One inline-PTX sequence per K tile: its accumulators out ($0 ..) and in (tied to them, the
  // next regs operands), then two descriptors per K step; waiting for the group inside it keeps
  // every use of the results after the wait.
  const char* type = t_ == ir::DType::bf16 ? "bf16" : "f16";
  std::string list;
  for (int i = 0; i < regs; ++i)
    list += fmt::format("{}${}", i ? ", " : "", i);
  std::string text = "wgmma.fence.sync.aligned;\n";
  for (int ks = 0; ks < ksteps; ++ks)
    text += fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, ${}, ${}, 1, 1, "
                        "1, {}, {};\n",
                        n, type, type, list, 2 * regs + 2 * ks, 2 * regs + 2 * ks + 1,
                        int(aTile_.mnMajor), int(bTile_.mnMajor));
  text += "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;";
  std::string constraints;
  for (int i = 0; i < regs; ++i)
    constraints += "=f,";
  for (int i = 0; i < regs; ++i)
    constraints += fmt::format("{},", i);
  for (int i = 0; i < 2 * ksteps; ++i)
    constraints += "l,";
  constraints += "~{memory}";
  std::vector<llvm::Type*> results(size_t(regs), b_.getFloatTy()), params(size_t(regs), b_.getFloatTy());
  params.insert(params.end(), size_t(2 * ksteps), i64);
  auto* fnType = llvm::FunctionType::get(llvm::StructType::get(k_.ctx(), results), params, false);
  auto* wgmma = llvm::InlineAsm::get(fnType, text, constraints, true);
  std::vector<Value*> args;
  for (llvm::AllocaInst* a : acc_)
    args.push_back(b_.CreateLoad(b_.getFloatTy(), a));
  for (int ks = 0; ks < ksteps; ++ks) {
    args.push_back(descriptor(aStart, ks));
    args.push_back(descriptor(bStart, ks));
  }
  Value* d = b_.CreateCall(wgmma, args);
  for (unsigned i = 0; i < unsigned(regs); ++i)
    b_.CreateStore(b_.CreateExtractValue(d, i), acc_[i]);
}

Value* GemmEmitter::roundToTf32(Value* bits) {
  return b_.CreateCall(declare(llvm::Intrinsic::nvvm_f2tf32_rna),
                       {b_.CreateBitCast(bits, b_.getFloatTy())});
}

void GemmEmitter::multiplyTf32(Value* stage) {
  Value* aOff = b_.CreateMul(stage, i32(stageBytes()));
  Value* bOff = b_.CreateAdd(aOff, i32(bTile_.offset));
  const int tilesM = p_.warpM / 16, tilesN = p_.warpN / 8;
  // m16n8k8 tf32 fragments (PTX ISA), g = lane / 4, t = lane % 4: A a0..a3 at row g (+ 8 for
  // a1, a3), k t (+ 4 for a2, a3); B b0, b1 at k t (+ 4 for b1), column g. ldmatrix (b16) gives
  // lane l the 32 bits at row l / 4, halves 2 (l % 4) and 2 (l % 4) + 1 of each 8 x 8 matrix:
  // of f32 rows, element l % 4 of row l / 4, which is a fragment register of a tile staged
  // [outer][k]. A (x4): matrices (rows 0-7, k 0-3), (rows 8-15, k 0-3), (rows 0-7, k 4-7),
  // (rows 8-15, k 4-7) are a0..a3; B (x2): k 0-3 and k 4-7 of eight columns are b0, b1.
  // K-major tiles: one ld.shared per register.
  Value* lane = b_.CreateAnd(tid_, 31);
  Value* matrix = b_.CreateLShr(lane, 3);
  Value* r = b_.CreateAnd(lane, 7);
  Value* g = b_.CreateLShr(lane, 2);
  Value* t = b_.CreateAnd(lane, 3);
  Value* aSubRow = b_.CreateMul(b_.CreateAnd(matrix, 1), i32(8));
  Value* aSubK = b_.CreateMul(b_.CreateLShr(matrix, 1), i32(4));
  Value* bSubK = b_.CreateMul(b_.CreateAnd(matrix, 1), i32(4)); // lanes 0-15 name addresses
  auto* mmaFn = declare(llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32);
  // One staged element's bits, (o, kk) in tile coordinates.
  auto scalar = [&](const Operand& o, Value* off, Value* outer, Value* kk) {
    return b_.CreateAlignedLoad(b_.getInt32Ty(), shared(off, o.element(b_, outer, kk)),
                                llvm::Align(4));
  };
  std::vector<Value*> acc;
  for (llvm::AllocaInst* a : acc_)
    acc.push_back(b_.CreateLoad(b_.getFloatTy(), a));
  for (int ks = 0; ks < p_.blockK / 8; ++ks) {
    std::vector<std::vector<Value*>> a(static_cast<size_t>(tilesM)),
        bf(static_cast<size_t>(tilesN));
    for (int mi = 0; mi < tilesM; ++mi) {
      std::vector<Value*>& frag = a[size_t(mi)];
      if (!aTile_.kRows) {
        Value* row = b_.CreateAdd(row0_, b_.CreateAdd(i32(mi * 16), b_.CreateAdd(aSubRow, r)));
        Value* kk = b_.CreateAdd(aSubK, i32(ks * 8));
        Value* x = b_.CreateCall(declare(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16),
                                 {shared(aOff, aTile_.element(b_, row, kk))});
        for (unsigned j = 0; j < 4; ++j)
          frag.push_back(b_.CreateExtractValue(x, j));
      } else {
        for (int i = 0; i < 4; ++i) {
          Value* row = b_.CreateAdd(row0_, b_.CreateAdd(g, i32(mi * 16 + (i & 1) * 8)));
          Value* kk = b_.CreateAdd(t, i32(ks * 8 + (i >> 1) * 4));
          frag.push_back(scalar(aTile_, aOff, row, kk));
        }
      }
    }
    for (int ni = 0; ni < tilesN; ++ni) {
      std::vector<Value*>& frag = bf[size_t(ni)];
      if (!bTile_.kRows) {
        Value* col = b_.CreateAdd(col0_, b_.CreateAdd(i32(ni * 8), r));
        Value* kk = b_.CreateAdd(bSubK, i32(ks * 8));
        Value* x = b_.CreateCall(declare(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16),
                                 {shared(bOff, bTile_.element(b_, col, kk))});
        for (unsigned j = 0; j < 2; ++j)
          frag.push_back(b_.CreateExtractValue(x, j));
      } else {
        for (int i = 0; i < 2; ++i) {
          Value* col = b_.CreateAdd(col0_, b_.CreateAdd(g, i32(ni * 8)));
          Value* kk = b_.CreateAdd(t, i32(ks * 8 + i * 4));
          frag.push_back(scalar(bTile_, bOff, col, kk));
        }
      }
    }
    for (auto* fragments : {&a, &bf})
      for (std::vector<Value*>& frag : *fragments)
        for (Value*& x : frag)
          x = roundToTf32(x);
    mmaTiles(mmaFn, a, bf, acc);
  }
  for (size_t i = 0; i < acc_.size(); ++i)
    b_.CreateStore(acc[i], acc_[i]);
}

void GemmEmitter::storeMmaResult(Value* po) {
  // Accumulator i of tile (mi, ni): row g (+ 8 for i >= 2), columns 2t and 2t + 1 (PTX ISA's
  // m16n8 C/D fragment), g = lane / 4, t = lane % 4.
  Value* lane = b_.CreateAnd(tid_, 31);
  Value* g = b_.CreateLShr(lane, 2);
  Value* t2 = b_.CreateMul(b_.CreateAnd(lane, 3), i32(2));
  const int tilesM = fragmentTilesM(), tilesN = p_.warpN / 8;
  for (int mi = 0; mi < tilesM; ++mi)
    for (int half = 0; half < 2; ++half) {
      Value* row = b_.CreateAdd(row0_, b_.CreateAdd(g, i32(mi * 16 + half * 8)));
      Value* gRow = b_.CreateAdd(m0_, k_.toIndex(row));
      Value* rowOk = mExact_ ? nullptr : b_.CreateICmpSLT(gRow, M_);
      for (int ni = 0; ni < tilesN; ++ni)
        for (int c = 0; c < 2; c += p_.vectorC) {
          Value* col = b_.CreateAdd(col0_, b_.CreateAdd(t2, i32(ni * 8 + c)));
          Value* gCol = b_.CreateAdd(n0_, k_.toIndex(col));
          Value* cond = both(rowOk, nExact_ ? nullptr : b_.CreateICmpSLT(gCol, N_));
          std::vector<Value*> values; // with an epilogue: computed on the main path
          if (epi_) {
            std::vector<Value*> acc;
            for (int j = 0; j < p_.vectorC; ++j)
              acc.push_back(
                  b_.CreateLoad(ct_, acc_[size_t((mi * tilesN + ni) * 4 + half * 2 + c + j)]));
            values = epilogueLanes(mi * 16 + half * 8, gRow, ni * 8 + c, gCol, acc);
          }
          auto store = [&] {
            Value* flat = b_.CreateAdd(cBase_, b_.CreateAdd(b_.CreateMul(gRow, cLd_), gCol));
            if (epi_) {
              k_.storeVector(po, epi_->dtype, flat, values);
              return;
            }
            std::vector<Value*> lanes;
            for (int j = 0; j < p_.vectorC; ++j)
              lanes.push_back(
                  b_.CreateLoad(ct_, acc_[size_t((mi * tilesN + ni) * 4 + half * 2 + c + j)]));
            k_.storeVector(po, t_, flat, lanes);
          };
          if (cond)
            k_.ifThen(cond, store);
          else
            store();
        }
    }
}

std::vector<Value*> GemmEmitter::epilogueLanes(int row, Value* gRow, int col, Value* gCol,
                                               const std::vector<Value*>& acc) {
  // One index value per row and column of the tile (the element generators key their cache
  // by llvm::Value), so the epilogue's broadcast reads (a bias per column) are loaded once per
  // thread and column, not once per element. Past an inexact edge the row is clamped to the
  // last one and a store's columns to the last whole vector of them (N is a multiple of the
  // vector): the elements are computed but not stored.
  const int w = int(acc.size());
  auto [r, freshRow] = rows_.try_emplace(row, nullptr);
  if (freshRow)
    r->second =
        mExact_ ? gRow
                : b_.CreateSelect(b_.CreateICmpSLT(gRow, M_), gRow, b_.CreateSub(M_, k_.index(1)));
  if (!cols_.count(col)) {
    Value* base =
        nExact_ ? gCol
                : b_.CreateSelect(b_.CreateICmpSLT(gCol, N_), gCol, b_.CreateSub(N_, k_.index(w)));
    for (int j = 0; j < w; ++j)
      cols_[col + j] = j ? b_.CreateAdd(base, k_.index(j), "", true, true) : base;
  }
  // The store's columns are one vector group: the epilogue's reads along the row (a residual,
  // a bias) are vector loads of the same width.
  if (w > 1) {
    k_.beginVectorGroup(w);
    for (int j = 0; j < w; ++j)
      k_.vectorLanes[cols_[col + j]] = {cols_[col], j};
  }
  std::vector<Value*> out;
  for (int j = 0; j < w; ++j)
    out.push_back(epi_->value(batch_, r->second, cols_[col + j], acc[size_t(j)]));
  if (w > 1) k_.endVectorGroup();
  return out;
}

void GemmEmitter::storeResult(Value* po) {
  if (mma()) {
    storeMmaResult(po);
    return;
  }
  for (int i = 0; i < p_.threadM; ++i) {
    Value* gRow = b_.CreateAdd(m0_, k_.toIndex(b_.CreateAdd(row0_, i32(i))));
    Value* rowOk = mExact_ ? nullptr : b_.CreateICmpSLT(gRow, M_);
    for (int c = 0; c < p_.threadN; c += p_.vectorC) {
      int column = c / p_.columnRun * runStride() + c % p_.columnRun;
      Value* gCol = b_.CreateAdd(n0_, k_.toIndex(b_.CreateAdd(col0_, i32(column))));
      Value* cond = both(rowOk, nExact_ ? nullptr : b_.CreateICmpSLT(gCol, N_));
      std::vector<Value*> values; // with an epilogue: computed on the main path
      if (epi_) {
        std::vector<Value*> acc;
        for (int j = 0; j < p_.vectorC; ++j)
          acc.push_back(b_.CreateLoad(ct_, acc_[size_t(i * p_.threadN + c + j)]));
        values = epilogueLanes(i, gRow, c, gCol, acc);
      }
      auto store = [&] {
        Value* flat = b_.CreateAdd(cBase_, b_.CreateAdd(b_.CreateMul(gRow, cLd_), gCol));
        if (epi_) {
          k_.storeVector(po, epi_->dtype, flat, values);
          return;
        }
        std::vector<Value*> lanes;
        for (int j = 0; j < p_.vectorC; ++j)
          lanes.push_back(b_.CreateLoad(ct_, acc_[size_t(i * p_.threadN + c + j)]));
        k_.storeVector(po, t_, flat, lanes);
      };
      if (cond)
        k_.ifThen(cond, store);
      else
        store();
    }
  }
}

void GemmEmitter::emit(Value* pa, Value* pb, Value* po) {
  aTile_ = operandA();
  bTile_ = operandB();
  aTile_.arg = pa;
  bTile_.arg = pb;
  llvm::Module& m = *k_.module;
  auto* arr = llvm::ArrayType::get(b_.getInt8Ty(), uint64_t(p_.sharedBytes));
  tiles_ = new llvm::GlobalVariable(m, arr, false, llvm::GlobalValue::InternalLinkage,
                                    llvm::UndefValue::get(arr), k_.kernelName + "_tiles", nullptr,
                                    llvm::GlobalValue::NotThreadLocal, 3);
  tiles_->setAlignment(llvm::Align(16));
  auto exact = [](const ir::Dim& d, int tile) { return d.isStatic() && d.size() % tile == 0; };
  mExact_ = exact(p_.m, p_.blockM);
  nExact_ = exact(p_.n, p_.blockN);
  kExact_ = exact(p_.k, p_.blockK);
  aTile_.outerExact = mExact_;
  bTile_.outerExact = nExact_;
  // a warpgroup's 64 × warpN accumulators over its 128 threads; a warp's warpM × warpN over 32
  int accumulators = p_.warpgroups() ? p_.warpM * p_.warpN / 128
                     : mma()         ? p_.warpM * p_.warpN / 32
                                     : p_.threadM * p_.threadN;
  for (int i = 0; i < accumulators; ++i)
    acc_.push_back(k_.entryAlloca(ct_, fmt::format("acc{}", i)));

  M_ = k_.dim(p_.m);
  N_ = k_.dim(p_.n);
  K_ = k_.dim(p_.k);
  aTile_.outerDim = M_;
  bTile_.outerDim = N_;
  aTile_.ld = k_.dim(p_.a.ld);
  bTile_.ld = k_.dim(p_.b.ld);
  aTile_.batchStride = k_.dim(p_.a.batchStride);
  bTile_.batchStride = k_.dim(p_.b.batchStride);
  auto ceilDiv = [&](Value* x, int d) {
    return b_.CreateUDiv(b_.CreateAdd(x, k_.index(d - 1)), k_.index(d));
  };
  Value* tilesN = ceilDiv(N_, p_.blockN);
  Value* perBatch = b_.CreateMul(ceilDiv(M_, p_.blockM), tilesN);
  Value* total = b_.CreateMul(k_.dim(p_.batch), perBatch);
  Value* kTiles = ceilDiv(K_, p_.blockK);
  cLd_ = k_.dim(p_.c.ld);
  Value* cBatchStride = k_.dim(p_.c.batchStride);

  // Thread → register block: warps tile the block tile row-major, lanes tile the warp tile.
  tid_ = k_.threadId();
  Value* warp = b_.CreateLShr(tid_, 5);
  Value* lane = b_.CreateAnd(tid_, 31);
  Value* warpRow = b_.CreateUDiv(warp, i32(p_.warpsN()));
  Value* warpCol = b_.CreateURem(warp, i32(p_.warpsN()));
  if (p_.warpgroups()) {
    // warp w holds rows 16 w .. 16 w + 15 of the tile (warpgroup w / 4's rows 64 (w / 4) ..,
    // its own 16 of them by w % 4) across the whole blockN
    row0_ = b_.CreateMul(warp, i32(16));
    col0_ = i32(0);
  } else if (mma()) {
    // the warp's tile origin; fragments place the lanes inside it
    row0_ = b_.CreateMul(warpRow, i32(p_.warpM));
    col0_ = b_.CreateMul(warpCol, i32(p_.warpN));
  } else {
    Value* laneRow = b_.CreateUDiv(lane, i32(p_.lanesN()));
    Value* laneCol = b_.CreateURem(lane, i32(p_.lanesN()));
    row0_ =
        b_.CreateAdd(b_.CreateMul(warpRow, i32(p_.warpM)), b_.CreateMul(laneRow, i32(p_.threadM)));
    col0_ = b_.CreateAdd(b_.CreateMul(warpCol, i32(p_.warpN)),
                         b_.CreateMul(laneCol, i32(p_.columnRun)));
  }

  Value* start = k_.toIndex(k_.blockId());
  Value* stride = k_.toIndex(k_.gridSize());
  k_.loop("tile", start, total, stride, [&](Value* tile) {
    Value* batch = b_.CreateUDiv(tile, perBatch);
    batch_ = batch;
    rows_.clear();
    cols_.clear();
    Value* rem = b_.CreateURem(tile, perBatch);
    m0_ = b_.CreateMul(b_.CreateUDiv(rem, tilesN), k_.index(p_.blockM));
    n0_ = b_.CreateMul(b_.CreateURem(rem, tilesN), k_.index(p_.blockN));
    aTile_.origin = m0_;
    bTile_.origin = n0_;
    aTile_.base = b_.CreateMul(batch, aTile_.batchStride);
    bTile_.base = b_.CreateMul(batch, bTile_.batchStride);
    cBase_ = b_.CreateMul(batch, cBatchStride);
    for (llvm::AllocaInst* a : acc_)
      b_.CreateStore(llvm::Constant::getNullValue(ct_), a);
    if (p_.asyncCopy) {
      // Double buffering with cp.async: tile kt + 1 is copied into the other stage while
      // tile kt is multiplied; wait_group 1 leaves only the newest copy in flight. The second
      // barrier keeps the next copy into a stage from overtaking its last readers.
      auto commit = [&] {
        b_.CreateCall(llvm::Intrinsic::getDeclaration(k_.module,
                                                      llvm::Intrinsic::nvvm_cp_async_commit_group));
      };
      loadA(k_.index(0), i32(0));
      loadB(k_.index(0), i32(0));
      commit();
      k_.loop("kstep", k_.index(0), kTiles, k_.index(1), [&](Value* kt) {
        Value* stage = b_.CreateTrunc(b_.CreateAnd(kt, k_.index(1)), b_.getInt32Ty());
        Value* next = b_.CreateMul(b_.CreateAdd(kt, k_.index(1)), k_.index(p_.blockK));
        Value* other = b_.CreateXor(stage, i32(1));
        loadA(next, other);
        loadB(next, other);
        commit();
        b_.CreateCall(
            llvm::Intrinsic::getDeclaration(k_.module, llvm::Intrinsic::nvvm_cp_async_wait_group),
            {b_.getInt32(1)});
        tilesStaged();
        multiplyMma(stage);
        k_.blockBarrier();
      });
      b_.CreateCall(
          llvm::Intrinsic::getDeclaration(k_.module, llvm::Intrinsic::nvvm_cp_async_wait_all));
    } else if (p_.stages > 1) {
      // Double buffering: tile kt + 1 is loaded into registers while tile kt (in stage
      // kt & 1) is multiplied, then stored into the other stage, whose last readers finished
      // before the previous barrier: one barrier per K step.
      Staged a = loadA(k_.index(0)), bt = loadB(k_.index(0));
      storeA(a, i32(0));
      storeB(bt, i32(0));
      tilesStaged();
      k_.loop("kstep", k_.index(0), kTiles, k_.index(1), [&](Value* kt) {
        Value* stage = b_.CreateTrunc(b_.CreateAnd(kt, k_.index(1)), b_.getInt32Ty());
        Value* next = b_.CreateMul(b_.CreateAdd(kt, k_.index(1)), k_.index(p_.blockK));
        Staged na = loadA(next), nb = loadB(next);
        mma() ? multiplyMma(stage) : multiply(stage);
        Value* other = b_.CreateXor(stage, i32(1));
        storeA(na, other);
        storeB(nb, other);
        tilesStaged();
      });
    } else {
      k_.loop("kstep", k_.index(0), kTiles, k_.index(1), [&](Value* kt) {
        Value* k0 = b_.CreateMul(kt, k_.index(p_.blockK));
        Staged a = loadA(k0), bt = loadB(k0);
        storeA(a, i32(0));
        storeB(bt, i32(0));
        tilesStaged();
        mma() ? multiplyMma(i32(0)) : multiply(i32(0));
        k_.blockBarrier();
      });
    }
    storeResult(po);
  });
}

} // namespace

void emitGemm(KernelContext& k, const fusion::GemmPlan& p, ir::DType t, llvm::Value* pa,
              llvm::Value* pb, llvm::Value* po, const GemmResultElement* epilogue) {
  GemmEmitter(k, p, t, epilogue).emit(pa, pb, po);
}

} // namespace weft::codegen
