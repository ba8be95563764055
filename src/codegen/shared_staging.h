#pragma once
// Copies of whole arrays into a block's shared memory, by all of the block's threads: the rows
// a phase stages (fusion::StagedInput), from global memory or from the shared memory of
// another block of the cluster (fusion/cluster_plan.h). Both copy 16-byte vectors while whole
// ones fit and single elements after, so that a row of 768 floats takes 192 vector loads
// instead of 768 scalar ones (the instructions that an issue-bound kernel such as cluster_200
// waits for).
#include <string>

#include <llvm/IR/Value.h>

#include "codegen/emitter_context.h"

namespace weft::codegen {

/// Elements of dtype t in one 16-byte vector (1 for types wider than 16 bytes).
int elementsPerVector(ir::DType t);

/// Copies elements [lo, hi) (indexTy) of the dtype-t array at `global` (ptr addrspace(1)) to
/// the same elements of the array at `shared` (this block's shared memory). Both arrays start
/// 16-byte aligned and lo is a multiple of elementsPerVector(t).
void copyGlobalToShared(KernelContext& k, const std::string& name, llvm::Value* global,
                        llvm::Value* shared, ir::DType t, llvm::Value* lo, llvm::Value* hi);

/// The same from the array at shared::cluster address `peer` (i32, from mapToClusterBlock):
/// another block's copy of the array at `shared`.
void copyPeerToShared(KernelContext& k, const std::string& name, llvm::Value* peer,
                      llvm::Value* shared, ir::DType t, llvm::Value* lo, llvm::Value* hi);

} // namespace weft::codegen
