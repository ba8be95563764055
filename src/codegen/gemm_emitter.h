#pragma once
// The body of a dot's kernel as its GemmPlan (fusion/gemm_plan.h) says: block tiles staged
// through shared memory, register blocks per thread, guarded edges. Decides nothing.
#include <functional>

#include <llvm/IR/Value.h>

#include "codegen/emitter_context.h"

namespace weft::codegen {

/// What a GEMM with an epilogue stores at each result element instead of its sum: `value` of
/// the element's batch (flat over the leading dims), row and column (indexTy, clamped into
/// the result, so it is also asked for elements past an edge, which are not stored) and its
/// accumulator (the compute type of the dot's dtype, unrounded), of dtype `dtype`.
struct GemmResultElement {
  ir::DType dtype;
  std::function<llvm::Value*(llvm::Value* batch, llvm::Value* row, llvm::Value* col,
                             llvm::Value* acc)>
      value;
};

/// Emits, into k's function at the builder's position, out = a · b over the plan's batch for
/// operands and result of dtype t at pointers pa, pb and po (global); with `epilogue`, out is
/// the epilogue's value at each element instead. k.indexTy must hold every offset of the
/// tensors.
void emitGemm(KernelContext& k, const fusion::GemmPlan& p, ir::DType t, llvm::Value* pa,
              llvm::Value* pb, llvm::Value* po, const GemmResultElement* epilogue = nullptr);

} // namespace weft::codegen
