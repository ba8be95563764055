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

void clusterBarrier(KernelContext& k) {
  k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive, {}, {});
  k.b->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait, {}, {});
}

llvm::Value* loadFromClusterBlock(KernelContext& k, llvm::Value* shared, ir::DType t,
                                  llvm::Value* flat, llvm::Value* rank) {
  // LLVM 19 has no address space for shared::cluster (its loads of a mapa result would be
  // ld.shared, which reads the own block), so the address map and the load are inline PTX on a
  // 32-bit shared address.
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* mt = memoryType(k.ctx(), t);
  llvm::Value* element = b.CreateInBoundsGEP(mt, shared, flat);
  llvm::Value* address = b.CreateTrunc(b.CreatePtrToInt(element, b.getInt64Ty()), b.getInt32Ty());
  auto* i32 = b.getInt32Ty();
  auto* mapa = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {i32, i32}, false),
                                    "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", false);
  llvm::Value* peer = b.CreateCall(mapa, {address, rank});
  unsigned bits = unsigned(ir::dtypeBytes(t)) * 8;
  llvm::Value* raw = nullptr;
  if (bits == 8) {
    auto* load = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {i32}, false),
                                      "ld.shared::cluster.u8 $0, [$1];", "=r,r,~{memory}", true);
    raw = b.CreateTrunc(b.CreateCall(load, {peer}), b.getInt8Ty());
  } else {
    const char* form = bits == 16 ? "ld.shared::cluster.b16 $0, [$1];"
                       : bits == 32 ? "ld.shared::cluster.b32 $0, [$1];"
                                    : "ld.shared::cluster.b64 $0, [$1];";
    const char* constraints = bits == 16 ? "=h,r,~{memory}" : bits == 32 ? "=r,r,~{memory}"
                                                                        : "=l,r,~{memory}";
    llvm::Type* it = b.getIntNTy(bits);
    auto* load = llvm::InlineAsm::get(llvm::FunctionType::get(it, {i32}, false), form,
                                      constraints, true);
    raw = b.CreateCall(load, {peer});
  }
  return fromMemory(b, b.CreateBitCast(raw, mt), t);
}

} // namespace weft::codegen
