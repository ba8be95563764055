#pragma once
// The body of a dot's kernel as its GemmPlan (fusion/gemm_plan.h) says: block tiles staged
// through shared memory, register blocks per thread, guarded edges. Decides nothing.
#include <llvm/IR/Value.h>

#include "codegen/emitter_context.h"

namespace weft::codegen {

/// Emits, into k's function at the builder's position, out = a · b over the plan's batch for
/// operands and result of dtype t at pointers pa, pb and po (global). k.indexTy must hold
/// every offset of the three tensors.
void emitGemm(KernelContext& k, const fusion::GemmPlan& p, ir::DType t, llvm::Value* pa,
              llvm::Value* pb, llvm::Value* po);

} // namespace weft::codegen
