#pragma once
// Transcendental math for the element generators: calls into libdevice (__nv_expf, __nv_exp,
// ...) when it will be linked, otherwise weft's own algorithms of math_algorithms.h emitted as
// IR (f64 through f32 then). sqrt is llvm.sqrt (sqrt.rn) either way; rsqrt is 1 / sqrt.
#include <llvm/IR/IRBuilder.h>

#include "ir/op.h"

namespace weft::codegen {

struct KernelContext;

/// `kind` is one of Exp, Log, Tanh, Sqrt, Rsqrt, Erf, Sin, Cos, Pow (y only for Pow);
/// x (and y) are float or double compute values.
llvm::Value* emitMath(KernelContext& k, ir::OpKind kind, llvm::Value* x, llvm::Value* y = nullptr);

} // namespace weft::codegen
