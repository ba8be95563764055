#pragma once
// Floating-point `rem`: C's fmod, exactly. LLVM's frem lowers on NVPTX to x - trunc(x / y) * y,
// which is wrong for infinities (fmod(inf, y) is NaN) and for quotients past 2^24 (fmod(1e30, 3)).
// weft instead calls an internal function weft_fmod_f32 / weft_fmod_f64 of the module (made
// once per module) that divides the mantissas as integers, one exponent step at a time: the
// result is exact for every input (fmod's result is always representable), so it is the same
// bit for bit as the C library's, NaN and signed zeros included.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace weft::codegen {

/// fmod(x, y) for x, y of one type, float or double.
llvm::Value* emitFmod(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, llvm::Value* y);

} // namespace weft::codegen
