#pragma once
// Transcendental math for the element generators: calls into libdevice (__nv_expf, __nv_exp,
// ...) when it will be linked, otherwise weft's own algorithms of math_algorithms.h emitted as
// IR (their accuracy is stated there): inline, except sin and cos, which are calls to internal
// functions weft_sin_f32 / weft_cos_f64 / ... of the module (made once per module; they hold
// the branch to the large-argument reduction, and reference the internal table
// weft_two_over_pi). sqrt is llvm.sqrt (sqrt.rn) either way; rsqrt is 1 / sqrt.
#include <llvm/IR/IRBuilder.h>

#include "ir/op.h"

namespace weft::codegen {

struct KernelContext;

/// The module flag that tells emitMath to call weft's own exp, log, tanh and erf as functions
/// of the module (set by codegen's pipeline when compactCode, compile.h, and weft's own math is
/// used).
inline constexpr const char* kMathCallsFlag = "weft.math-calls";

/// `kind` is one of Exp, Log, Tanh, Sqrt, Rsqrt, Erf, Sin, Cos, Pow (y only for Pow);
/// x (and y) are float or double compute values.
llvm::Value* emitMath(KernelContext& k, ir::OpKind kind, llvm::Value* x, llvm::Value* y = nullptr);

} // namespace weft::codegen
