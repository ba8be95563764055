#pragma once
// Thread-block clusters (sm_90+) for stitched kernels: the cluster's geometry, its barrier, and
// loads from another block's shared memory (distributed shared memory). A kernel launched
// without clusters is a cluster of one block, so code built on these is correct for any
// cluster size the launch picks (fusion/cluster_plan.h).
#include <llvm/IR/Value.h>

#include "codegen/emitter_context.h"

namespace weft::codegen {

/// i32 sregs: this block's rank in its cluster, the cluster's blocks, the cluster's index
/// along x and the clusters along x.
llvm::Value* clusterRank(KernelContext& k);
llvm::Value* clusterBlocks(KernelContext& k);
llvm::Value* clusterIndex(KernelContext& k);
llvm::Value* clusterCount(KernelContext& k);

/// Block `rank`'s share [lo, hi) of `count` elements split over the cluster's blocks in
/// chunks of `chunk` (clusterChunk); indexTy values.
struct ClusterShare {
  llvm::Value* lo;
  llvm::Value* hi;
};
/// ceil(count / blocks): the elements each of `blocks` blocks (indexTy) takes of `count`.
llvm::Value* clusterChunk(KernelContext& k, llvm::Value* count, llvm::Value* blocks);
ClusterShare clusterShare(KernelContext& k, llvm::Value* count, llvm::Value* chunk,
                          llvm::Value* rank);

/// barrier.cluster.arrive (release) then barrier.cluster.wait (acquire): every thread of every
/// block of the cluster; shared-memory writes before it are visible to the cluster after it.
void clusterBarrier(KernelContext& k);

/// The shared::cluster address (i32) of the array at `shared` (this block's shared memory) as
/// block `rank` (i32) of the cluster holds it: mapa.shared::cluster.
llvm::Value* mapToClusterBlock(KernelContext& k, llvm::Value* shared, llvm::Value* rank);

/// The value of LLVM type `t` (an integer or float of 8 to 64 bits) at shared::cluster address
/// `address` (i32): ld.shared::cluster.
llvm::Value* loadClusterValue(KernelContext& k, llvm::Value* address, llvm::Type* t);

/// The 16 bytes at shared::cluster address `address` (i32, 16-byte aligned) as <4 x i32>:
/// ld.shared::cluster.v4.b32.
llvm::Value* loadClusterVector(KernelContext& k, llvm::Value* address);

/// Element `flat` of the dtype-`t` array at shared::cluster address `array` (from
/// mapToClusterBlock): ld.shared::cluster, in compute type as KernelContext::loadElement.
llvm::Value* loadClusterElement(KernelContext& k, llvm::Value* array, ir::DType t,
                                llvm::Value* flat);

} // namespace weft::codegen
