#include "codegen/cluster_access.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace weft::codegen {

llvm::Value* clusterRank(KernelContext& k) {
  return k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
}
llvm::Value* clusterBlocks(KernelContext& k) {
  return k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctarank, {}, {});
}
llvm::Value* clusterIndex(KernelContext& k) {
  return k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_clusterid_x, {}, {});
}
llvm::Value* clusterCount(KernelContext& k) {
  return k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_x, {}, {});
}

llvm::Value* clusterChunk(KernelContext& k, llvm::Value* count, llvm::Value* blocks) {
  llvm::IRBuilder<>& b = *k.b;
  return b.CreateUDiv(b.CreateAdd(count, b.CreateSub(blocks, k.index(1))), blocks);
}

ClusterShare clusterShare(KernelContext& k, llvm::Value* count, llvm::Value* chunk,
                          llvm::Value* rank) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Value* lo = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateMul(rank, chunk), count);
  llvm::Value* hi = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateAdd(lo, chunk), count);
  return {lo, hi};
}

void clusterBarrier(KernelContext& k) {
  k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive, {}, {});
  k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait, {}, {});
}

// LLVM 19 has no address space for shared::cluster (its loads of a mapa result would be
// ld.shared, which reads the own block), so the address map and the loads are inline PTX on
// 32-bit shared addresses.

llvm::Value* mapToClusterBlock(KernelContext& k, llvm::Value* shared, llvm::Value* rank) {
  llvm::IRBuilder<>& b = *k.b;
  auto* i32 = b.getInt32Ty();
  llvm::Value* address = b.CreateTrunc(b.CreatePtrToInt(shared, b.getInt64Ty()), i32);
  auto* mapa = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {i32, i32}, false),
                                    "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", false);
  return b.CreateCall(mapa, {address, rank});
}

llvm::Value* loadClusterValue(KernelContext& k, llvm::Value* address, llvm::Type* t) {
  llvm::IRBuilder<>& b = *k.b;
  auto* i32 = b.getInt32Ty();
  unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
  llvm::Value* raw = nullptr;
  if (bits == 8) {
    auto* load = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {i32}, false),
                                      "ld.shared::cluster.u8 $0, [$1];", "=r,r,~{memory}", true);
    raw = b.CreateTrunc(b.CreateCall(load, {address}), b.getInt8Ty());
  } else {
    const char* form = bits == 16 ? "ld.shared::cluster.b16 $0, [$1];"
                       : bits == 32 ? "ld.shared::cluster.b32 $0, [$1];"
                                    : "ld.shared::cluster.b64 $0, [$1];";
    const char* constraints = bits == 16 ? "=h,r,~{memory}" : bits == 32 ? "=r,r,~{memory}"
                                                                        : "=l,r,~{memory}";
    auto* load = llvm::InlineAsm::get(llvm::FunctionType::get(b.getIntNTy(bits), {i32}, false),
                                      form, constraints, true);
    raw = b.CreateCall(load, {address});
  }
  return b.CreateBitCast(raw, t);
}

llvm::Value* loadClusterVector(KernelContext& k, llvm::Value* address) {
  llvm::IRBuilder<>& b = *k.b;
  auto* i32 = b.getInt32Ty();
  auto* four = llvm::StructType::get(k.ctx(), {i32, i32, i32, i32});
  auto* load = llvm::InlineAsm::get(llvm::FunctionType::get(four, {i32}, false),
                                    "ld.shared::cluster.v4.b32 {$0, $1, $2, $3}, [$4];",
                                    "=r,=r,=r,=r,r,~{memory}", true);
  llvm::Value* parts = b.CreateCall(load, {address});
  llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(i32, 4));
  for (unsigned j = 0; j < 4; ++j)
    v = b.CreateInsertElement(v, b.CreateExtractValue(parts, j), uint64_t(j));
  return v;
}

llvm::Value* loadClusterElement(KernelContext& k, llvm::Value* array, ir::DType t,
                                llvm::Value* flat) {
  llvm::IRBuilder<>& b = *k.b;
  auto* i32 = b.getInt32Ty();
  llvm::Value* address = b.CreateAdd(
      array, b.CreateMul(b.CreateZExtOrTrunc(flat, i32), b.getInt32(uint32_t(ir::dtypeBytes(t)))));
  return fromMemory(b, loadClusterValue(k, address, memoryType(k.ctx(), t)), t);
}

} // namespace weft::codegen
