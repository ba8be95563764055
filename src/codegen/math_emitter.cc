#include "codegen/math_emitter.h"

#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include "codegen/emitter_context.h"
#include "codegen/math_algorithms.h"

namespace weft::codegen {
namespace {

/// math_algorithms.h's backend that emits LLVM IR: f32 (D = false; I = i32) or f64 (D = true;
/// I = U = i64) values. An f32 backend holds the f64 one as wide().
template <bool D> struct IrOps {
  using F = llvm::Value*;
  using I = llvm::Value*;
  using U = llvm::Value*;
  using Bool = llvm::Value*;
  using Wide = IrOps<true>;
  static constexpr bool kDouble = D;
  IrOps(llvm::IRBuilder<>& builder, llvm::Module& module) : b(builder), m(module) {}
  llvm::IRBuilder<>& b;
  llvm::Module& m;
  llvm::Type* fty() { return D ? b.getDoubleTy() : b.getFloatTy(); }
  llvm::IntegerType* ity() { return D ? b.getInt64Ty() : b.getInt32Ty(); }
  F c(double v) { return llvm::ConstantFP::get(fty(), v); }
  I ci(int64_t v) { return llvm::ConstantInt::get(ity(), uint64_t(v), true); }
  F add(F x, F y) { return b.CreateFAdd(x, y); }
  F sub(F x, F y) { return b.CreateFSub(x, y); }
  F mul(F x, F y) { return b.CreateFMul(x, y); }
  F div(F x, F y) { return b.CreateFDiv(x, y); }
  F fma(F x, F y, F z) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {fty()}, {x, y, z}); }
  F neg(F x) { return b.CreateFNeg(x); }
  F abs(F x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  F rint(F x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x); }
  F floor(F x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); }
  F min(F x, F y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y); }
  F max(F x, F y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y); }
  I f2i(F x) { return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {ity(), fty()}, {x}); }
  F i2f(I x) { return b.CreateSIToFP(x, fty()); }
  I bits(F x) { return b.CreateBitCast(x, ity()); }
  F fromBits(I x) { return b.CreateBitCast(x, fty()); }
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
  /// slow() in a block of its own that only lanes with `c` enter; the value joins `fast`.
  template <class Fn> F branch(Bool c, Fn slow, F fast) {
    llvm::BasicBlock* from = b.GetInsertBlock();
    llvm::Function* fn = from->getParent();
    auto* slowBB = llvm::BasicBlock::Create(b.getContext(), "slow", fn);
    auto* join = llvm::BasicBlock::Create(b.getContext(), "join", fn);
    b.CreateCondBr(c, slowBB, join);
    b.SetInsertPoint(slowBB);
    F v = slow();
    llvm::BasicBlock* slowEnd = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    llvm::PHINode* phi = b.CreatePHI(fast->getType(), 2);
    phi->addIncoming(fast, from);
    phi->addIncoming(v, slowEnd);
    return phi;
  }
  IrOps<true>& wide();
  llvm::Value* ext(F x) { return D ? x : b.CreateFPExt(x, b.getDoubleTy()); }
  F narrow(llvm::Value* x) { return D ? x : b.CreateFPTrunc(x, b.getFloatTy()); }
  I narrowQuadrant(U q) { return D ? q : b.CreateTrunc(q, b.getInt32Ty()); }
  // 64-bit unsigned integers (used through the f64 backend)
  U uc(uint64_t v) { return b.getInt64(v); }
  U uadd(U x, U y) { return b.CreateAdd(x, y); }
  U usub(U x, U y) { return b.CreateSub(x, y); }
  U umul(U x, U y) { return b.CreateMul(x, y); }
  U umulhi(U x, U y) { return b.CreateIntrinsic(llvm::Intrinsic::nvvm_mulhi_ull, {}, {x, y}); }
  U ushl(U x, U s) { return b.CreateShl(x, s); }
  U ushr(U x, U s) { return b.CreateLShr(x, s); }
  U uand(U x, U y) { return b.CreateAnd(x, y); }
  U uor(U x, U y) { return b.CreateOr(x, y); }
  U unot(U x) { return b.CreateNot(x); }
  Bool ult(U x, U y) { return b.CreateICmpULT(x, y); }
  U usel(Bool c, U x, U y) { return b.CreateSelect(c, x, y); }
  U umin(U x, U y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, x, y); }
  U ucarry(U sum, U addend) { return b.CreateZExt(b.CreateICmpULT(sum, addend), b.getInt64Ty()); }
  U uclz(U x) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, b.getFalse()); }
  F u2f(U x) { return b.CreateUIToFP(x, b.getDoubleTy()); }
  U fbits(F x) { return b.CreateBitCast(x, b.getInt64Ty()); }
  F ffrombits(U x) { return b.CreateBitCast(x, b.getDoubleTy()); }
  /// kTwoOverPi[i], from a constant table in global memory (one per module).
  U table(U i) {
    const char* name = "weft_two_over_pi";
    auto* arrTy = llvm::ArrayType::get(b.getInt64Ty(), math::kTwoOverPiWords);
    llvm::GlobalVariable* g = m.getGlobalVariable(name, true);
    if (!g) {
      std::vector<uint64_t> words(math::kTwoOverPi, math::kTwoOverPi + math::kTwoOverPiWords);
      g = new llvm::GlobalVariable(m, arrTy, true, llvm::GlobalValue::InternalLinkage,
                                   llvm::ConstantDataArray::get(b.getContext(), words), name,
                                   nullptr, llvm::GlobalValue::NotThreadLocal, 1);
      g->setAlignment(llvm::Align(8));
    }
    llvm::Value* p = b.CreateInBoundsGEP(arrTy, g, {b.getInt64(0), i});
    return b.CreateAlignedLoad(b.getInt64Ty(), p, llvm::Align(8));
  }
  std::unique_ptr<IrOps<true>> wide_;
};

template <bool D> IrOps<true>& IrOps<D>::wide() {
  if constexpr (D) {
    return *this;
  } else {
    if (!wide_) wide_ = std::make_unique<IrOps<true>>(b, m);
    return *wide_;
  }
}

/// The internal function `name`(x) of `m` (made on first use) whose body is body(ops, x): sin
/// and cos branch to their slow path inside a function of their own, so no control flow enters
/// the kernel's element code.
template <bool D, class Body>
llvm::Function* ownFunction(llvm::Module& m, const std::string& name, Body body) {
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* t = D ? llvm::Type::getDoubleTy(ctx) : llvm::Type::getFloatTy(ctx);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(t, {t}, false),
                                   llvm::GlobalValue::InternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr(llvm::Attribute::WillReturn);
  llvm::IRBuilder<> fb(llvm::BasicBlock::Create(ctx, "entry", f));
  IrOps<D> ops{fb, m};
  fb.CreateRet(body(ops, f->getArg(0)));
  return f;
}

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

/// weft's own exp, log, tanh or erf of x.
template <bool D> llvm::Value* ownUnary(IrOps<D>& ops, ir::OpKind kind, llvm::Value* x) {
  switch (kind) {
  case ir::OpKind::Exp:
    return math::exp(ops, x);
  case ir::OpKind::Log:
    return math::log(ops, x);
  case ir::OpKind::Tanh:
    return math::tanh(ops, x);
  default:
    return math::erf(ops, x);
  }
}

const char* ownName(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::Exp:
    return "exp";
  case ir::OpKind::Log:
    return "log";
  case ir::OpKind::Tanh:
    return "tanh";
  default:
    return "erf";
  }
}

template <bool D>
llvm::Value* own(llvm::IRBuilder<>& b, ir::OpKind kind, llvm::Value* x, llvm::Value* y) {
  llvm::Module& m = *b.GetInsertBlock()->getModule();
  IrOps<D> ops{b, m};
  bool unary = kind == ir::OpKind::Exp || kind == ir::OpKind::Log || kind == ir::OpKind::Tanh ||
               kind == ir::OpKind::Erf;
  if (unary) {
    if (!m.getModuleFlag(kMathCallsFlag)) return ownUnary(ops, kind, x);
    std::string name = std::string("weft_") + ownName(kind) + (D ? "_f64" : "_f32");
    llvm::Function* f = ownFunction<D>(
        m, name, [&](IrOps<D>& fo, llvm::Value* v) { return ownUnary(fo, kind, v); });
    f->addFnAttr(llvm::Attribute::NoInline);
    return b.CreateCall(f, {x});
  }
  switch (kind) {
  case ir::OpKind::Sin:
  case ir::OpKind::Cos: {
    bool cosine = kind == ir::OpKind::Cos;
    std::string name = std::string("weft_") + (cosine ? "cos" : "sin") + (D ? "_f64" : "_f32");
    llvm::Function* f = ownFunction<D>(
        m, name, [&](IrOps<D>& fo, llvm::Value* v) { return math::sincos(fo, v, cosine); });
    return b.CreateCall(f, {x});
  }
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
  return f64 ? own<true>(b, kind, x, y) : own<false>(b, kind, x, y);
}

} // namespace weft::codegen
