#pragma once
// Copies of whole arrays into a block's shared memory, by all of the block's threads: the rows
// a phase stages (fusion::StagedInput), from global memory or from the shared memory of
// another block of the cluster (fusion/cluster_plan.h). Both copy 16-byte vectors while whole
// ones fit and single elements after where the plan says so (StagedInput::vector), so that a
// row of 768 floats takes 192 vector loads instead of 768 scalar ones (the instructions that
// an issue-bound kernel such as cluster_200 waits for).
#include <string>

#include <llvm/IR/Value.h>

#include "codegen/emitter_context.h"

namespace weft::codegen {

/// Copies elements [lo, hi) (indexTy) of the dtype-t array at `global` (ptr addrspace(1)) to
/// the same elements of the array at `shared` (this block's shared memory), `vector` elements
/// a copy while whole ones fit (StagedInput::vector: 1, or 16 bytes' worth). Both arrays start
/// 16-byte aligned and lo is a multiple of `vector`.
void copyGlobalToShared(KernelContext& k, const std::string& name, llvm::Value* global,
                        llvm::Value* shared, ir::DType t, int vector, llvm::Value* lo,
                        llvm::Value* hi);

/// The same from the array at shared::cluster address `peer` (i32, from mapToClusterBlock):
/// another block's copy of the array at `shared`.
void copyPeerToShared(KernelContext& k, const std::string& name, llvm::Value* peer,
                      llvm::Value* shared, ir::DType t, int vector, llvm::Value* lo,
                      llvm::Value* hi);

} // namespace weft::codegen
