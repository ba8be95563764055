#include "codegen/math_emitter.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "codegen/emitter_context.h"
#include "codegen/math_algorithms.h"

namespace weft::codegen {
namespace {

/// math_algorithms.h's backend that emits f32 LLVM IR.
struct IrF32Ops {
  using F = llvm::Value*;
  using I = llvm::Value*;
  using Bool = llvm::Value*;
  llvm::IRBuilder<>& b;
  F c(double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }
  I ci(int32_t v) { return b.getInt32(uint32_t(v)); }
  F add(F x, F y) { return b.CreateFAdd(x, y); }
  F sub(F x, F y) { return b.CreateFSub(x, y); }
  F mul(F x, F y) { return b.CreateFMul(x, y); }
  F div(F x, F y) { return b.CreateFDiv(x, y); }
  F fma(F x, F y, F z) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {x, y, z});
  }
  F neg(F x) { return b.CreateFNeg(x); }
  F abs(F x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  F rint(F x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x); }
  F floor(F x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); }
  F min(F x, F y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y); }
  F max(F x, F y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y); }
  I f2i(F x) {
    return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt32Ty(), b.getFloatTy()}, {x});
  }
  F i2f(I x) { return b.CreateSIToFP(x, b.getFloatTy()); }
  I bits(F x) { return b.CreateBitCast(x, b.getInt32Ty()); }
  F fromBits(I x) { return b.CreateBitCast(x, b.getFloatTy()); }
  I shl(I x, int s) { return b.CreateShl(x, uint64_t(s)); }
  I ashr(I x, int s) { return b.CreateAShr(x, uint64_t(s)); }
  I iadd(I x, I y) { return b.CreateAdd(x, y); }
  I isub(I x, I y) { return b.CreateSub(x, y); }
  I iand(I x, I y) { return b.CreateAnd(x, y); }
  I ior(I x, I y) { return b.CreateOr(x, y); }
  Bool ieq(I x, I y) { return b.CreateICmpEQ(x, y); }
  Bool lt(F x, F y) { return b.CreateFCmpOLT(x, y); }
  Bool gt(F x, F y) { return b.CreateFCmpOGT(x, y); }
  Bool eq(F x, F y) { return b.CreateFCmpOEQ(x, y); }
  Bool isnan(F x) { return b.CreateFCmpUNO(x, x); }
  Bool signbit(F x) { return b.CreateICmpSLT(bits(x), ci(0)); }
  Bool bor(Bool x, Bool y) { return b.CreateOr(x, y); }
  Bool band(Bool x, Bool y) { return b.CreateAnd(x, y); }
  Bool bnot(Bool x) { return b.CreateNot(x); }
  F sel(Bool c, F x, F y) { return b.CreateSelect(c, x, y); }
  I sel_i(Bool c, I x, I y) { return b.CreateSelect(c, x, y); }
};

const char* libdeviceName(ir::OpKind kind, bool f64) {
  switch (kind) {
  case ir::OpKind::Exp:
    return f64 ? "__nv_exp" : "__nv_expf";
  case ir::OpKind::Log:
    return f64 ? "__nv_log" : "__nv_logf";
  case ir::OpKind::Tanh:
    return f64 ? "__nv_tanh" : "__nv_tanhf";
  case ir::OpKind::Erf:
    return f64 ? "__nv_erf" : "__nv_erff";
  case ir::OpKind::Sin:
    return f64 ? "__nv_sin" : "__nv_sinf";
  case ir::OpKind::Cos:
    return f64 ? "__nv_cos" : "__nv_cosf";
  case ir::OpKind::Pow:
    return f64 ? "__nv_pow" : "__nv_powf";
  default:
    return nullptr;
  }
}

llvm::Value* ownF32(llvm::IRBuilder<>& b, ir::OpKind kind, llvm::Value* x, llvm::Value* y) {
  IrF32Ops ops{b};
  switch (kind) {
  case ir::OpKind::Exp:
    return math::exp(ops, x);
  case ir::OpKind::Log:
    return math::log(ops, x);
  case ir::OpKind::Tanh:
    return math::tanh(ops, x);
  case ir::OpKind::Erf:
    return math::erf(ops, x);
  case ir::OpKind::Sin:
    return math::sincos(ops, x, false);
  case ir::OpKind::Cos:
    return math::sincos(ops, x, true);
  case ir::OpKind::Pow:
    return math::pow(ops, x, y);
  default:
    return nullptr;
  }
}

} // namespace

llvm::Value* emitMath(KernelContext& k, ir::OpKind kind, llvm::Value* x, llvm::Value* y) {
  llvm::IRBuilder<>& b = *k.b;
  llvm::Type* t = x->getType();
  bool f64 = t->isDoubleTy();
  if (kind == ir::OpKind::Sqrt) return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  if (kind == ir::OpKind::Rsqrt)
    return b.CreateFDiv(llvm::ConstantFP::get(t, 1.0),
                        b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  if (k.useLibdevice) {
    const char* name = libdeviceName(kind, f64);
    llvm::SmallVector<llvm::Type*, 2> params(kind == ir::OpKind::Pow ? 2 : 1, t);
    llvm::FunctionCallee fn =
        k.module->getOrInsertFunction(name, llvm::FunctionType::get(t, params, false));
    if (kind == ir::OpKind::Pow) return b.CreateCall(fn, {x, y});
    return b.CreateCall(fn, {x});
  }
  if (!f64) return ownF32(b, kind, x, y);
  llvm::Value* xf = b.CreateFPTrunc(x, b.getFloatTy());
  llvm::Value* yf = y ? b.CreateFPTrunc(y, b.getFloatTy()) : nullptr;
  return b.CreateFPExt(ownF32(b, kind, xf, yf), t);
}

} // namespace weft::codegen
