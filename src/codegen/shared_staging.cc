#include "codegen/shared_staging.h"

#include <functional>

#include "codegen/cluster_access.h"

namespace weft::codegen {

namespace {

constexpr int kVectorBytes = 16;

/// Element i (indexTy) of [lo, hi) → `load` it at its byte offset (indexTy) from the array's
/// start, store it at the same offset of `shared`: vectors of `vec` elements (16 bytes) from lo
/// while whole ones fit, one element at a time after (the scalar load is `scalar(i)`).
void copyRange(KernelContext& k, const std::string& name, llvm::Value* shared, ir::DType t,
               int vec, llvm::Value* lo, llvm::Value* hi,
               const std::function<llvm::Value*(llvm::Value* byteOffset)>& loadVector,
               const std::function<llvm::Value*(llvm::Value* i)>& scalar) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Value* tid = k.toIndex(k.threadId());
  llvm::Value* vecEnd = lo;
  if (vec > 1) {
    llvm::Value* whole = b.CreateMul(b.CreateUDiv(b.CreateSub(hi, lo), k.index(vec)), k.index(vec));
    vecEnd = b.CreateAdd(lo, whole);
    k.loop(name + ".vec", b.CreateAdd(lo, b.CreateMul(tid, k.index(vec))), vecEnd,
           k.index(int64_t(k.blockSize) * vec), [&](llvm::Value* i) {
             llvm::Value* offset = b.CreateMul(i, k.index(int64_t(ir::dtypeBytes(t))));
             llvm::Value* to = b.CreateInBoundsGEP(b.getInt8Ty(), shared, offset);
             b.CreateAlignedStore(loadVector(offset), to, llvm::Align(kVectorBytes));
           });
  }
  k.loop(name, b.CreateAdd(vecEnd, tid), hi, k.index(k.blockSize),
         [&](llvm::Value* i) { k.storeElement(shared, t, i, scalar(i)); });
}

} // namespace

void copyGlobalToShared(KernelContext& k, const std::string& name, llvm::Value* global,
                        llvm::Value* shared, ir::DType t, int vector, llvm::Value* lo,
                        llvm::Value* hi) {
  llvm::IRBuilder<>& b = *k.b;
  copyRange(
      k, name, shared, t, vector, lo, hi,
      [&](llvm::Value* offset) -> llvm::Value* {
        return b.CreateAlignedLoad(llvm::FixedVectorType::get(b.getInt32Ty(), kVectorBytes / 4),
                                   b.CreateInBoundsGEP(b.getInt8Ty(), global, offset),
                                   llvm::Align(kVectorBytes));
      },
      [&](llvm::Value* i) { return k.loadElement(global, t, i); });
}

void copyPeerToShared(KernelContext& k, const std::string& name, llvm::Value* peer,
                      llvm::Value* shared, ir::DType t, int vector, llvm::Value* lo,
                      llvm::Value* hi) {
  llvm::IRBuilder<>& b = *k.b;
  auto* i32 = b.getInt32Ty();
  copyRange(
      k, name, shared, t, vector, lo, hi,
      [&](llvm::Value* offset) {
        return loadClusterVector(k, b.CreateAdd(peer, b.CreateZExtOrTrunc(offset, i32)));
      },
      [&](llvm::Value* i) { return loadClusterElement(k, peer, t, i); });
}

} // namespace weft::codegen
