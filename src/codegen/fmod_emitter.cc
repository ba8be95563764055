#include "codegen/fmod_emitter.h"

namespace weft::codegen {
namespace {

/// The body of weft_fmod_*: with |x| and |y| as bits, mantissas mx, my (implicit bit set for
/// normal numbers) and exponent fields ex >= ey (subnormals count as exponent 1),
///   while ex > ey: mx -= my if mx >= my; mx <<= 1; ex -= 1
///   mx -= my if mx >= my
/// leaves mx * 2^(ey - bias - M) = |x| mod |y|, exactly; it is renormalised and given x's sign.
/// Special cases first: NaN for y = 0, x infinite or either NaN; x for |x| < |y| (y infinite
/// included); ±0 for |x| = |y|.
void emitBody(llvm::Function* f, bool f64) {
  llvm::LLVMContext& c = f->getContext();
  const unsigned bits = f64 ? 64 : 32, mant = f64 ? 52 : 23;
  llvm::IntegerType* I = llvm::IntegerType::get(c, bits);
  auto k = [&](uint64_t v) { return llvm::ConstantInt::get(I, v); };
  const uint64_t sign = uint64_t(1) << (bits - 1), implicit = uint64_t(1) << mant;
  const uint64_t infBits = (f64 ? uint64_t(0x7ff) : uint64_t(0xff)) << mant;

  auto* entry = llvm::BasicBlock::Create(c, "entry", f);
  auto* special = llvm::BasicBlock::Create(c, "special", f);
  auto* small = llvm::BasicBlock::Create(c, "small", f);
  auto* checkEqual = llvm::BasicBlock::Create(c, "check_equal", f);
  auto* equal = llvm::BasicBlock::Create(c, "equal", f);
  auto* divide = llvm::BasicBlock::Create(c, "divide", f);
  auto* loop = llvm::BasicBlock::Create(c, "loop", f);
  auto* last = llvm::BasicBlock::Create(c, "last", f);
  auto* norm = llvm::BasicBlock::Create(c, "normalise", f);
  auto* normBody = llvm::BasicBlock::Create(c, "normalise_step", f);
  auto* compose = llvm::BasicBlock::Create(c, "compose", f);

  llvm::IRBuilder<> b(entry);
  llvm::Value* x = f->getArg(0);
  llvm::Value* y = f->getArg(1);
  llvm::Value* ux = b.CreateBitCast(x, I);
  llvm::Value* uy = b.CreateBitCast(y, I);
  llvm::Value* sx = b.CreateAnd(ux, k(sign));
  llvm::Value* ax = b.CreateAnd(ux, k(~sign));
  llvm::Value* ay = b.CreateAnd(uy, k(~sign));
  llvm::Value* isSpecial = b.CreateOr(b.CreateOr(b.CreateICmpEQ(ay, k(0)), b.CreateICmpUGE(ax, k(infBits))),
                                      b.CreateICmpUGT(ay, k(infBits)));
  b.CreateCondBr(isSpecial, special, small);

  b.SetInsertPoint(special);
  b.CreateRet(llvm::ConstantFP::getNaN(x->getType()));

  auto* returnX = llvm::BasicBlock::Create(c, "return_x", f, checkEqual);
  b.SetInsertPoint(small);
  b.CreateCondBr(b.CreateICmpULT(ax, ay), returnX, checkEqual);
  b.SetInsertPoint(returnX);
  b.CreateRet(x);

  auto signed0 = [&](llvm::Value* magnitude) { return b.CreateBitCast(b.CreateOr(magnitude, sx), x->getType()); };
  b.SetInsertPoint(checkEqual);
  b.CreateCondBr(b.CreateICmpEQ(ax, ay), equal, divide);
  b.SetInsertPoint(equal);
  b.CreateRet(signed0(k(0)));

  // Mantissas and exponents; a subnormal has exponent field 0, counted as 1, and no implicit bit.
  b.SetInsertPoint(divide);
  auto split = [&](llvm::Value* a, llvm::Value*& m, llvm::Value*& e) {
    llvm::Value* field = b.CreateLShr(a, k(mant));
    llvm::Value* frac = b.CreateAnd(a, k(implicit - 1));
    llvm::Value* normal = b.CreateICmpNE(field, k(0));
    m = b.CreateSelect(normal, b.CreateOr(frac, k(implicit)), frac);
    e = b.CreateSelect(normal, field, k(1));
  };
  llvm::Value *mx0, *ex0, *my, *ey;
  split(ax, mx0, ex0);
  split(ay, my, ey);
  b.CreateCondBr(b.CreateICmpUGT(ex0, ey), loop, last);

  // while ex > ey: subtract if it fits, shift, step the exponent down.
  b.SetInsertPoint(loop);
  llvm::PHINode* mx = b.CreatePHI(I, 2, "mx");
  llvm::PHINode* ex = b.CreatePHI(I, 2, "ex");
  mx->addIncoming(mx0, divide);
  ex->addIncoming(ex0, divide);
  llvm::Value* reduced = b.CreateSelect(b.CreateICmpUGE(mx, my), b.CreateSub(mx, my), mx);
  llvm::Value* shifted = b.CreateShl(reduced, k(1));
  llvm::Value* exNext = b.CreateSub(ex, k(1));
  mx->addIncoming(shifted, loop);
  ex->addIncoming(exNext, loop);
  b.CreateCondBr(b.CreateICmpUGT(exNext, ey), loop, last);

  b.SetInsertPoint(last);
  llvm::PHINode* mxL = b.CreatePHI(I, 2, "mx_last");
  mxL->addIncoming(mx0, divide);
  mxL->addIncoming(shifted, loop);
  llvm::Value* rem = b.CreateSelect(b.CreateICmpUGE(mxL, my), b.CreateSub(mxL, my), mxL);
  auto* zero = llvm::BasicBlock::Create(c, "zero", f, norm);
  b.CreateCondBr(b.CreateICmpEQ(rem, k(0)), zero, norm);
  b.SetInsertPoint(zero);
  b.CreateRet(signed0(k(0)));

  // Renormalise: shift left until the implicit bit is set or the exponent reaches 1 (then the
  // result is subnormal and its exponent field is 0).
  b.SetInsertPoint(norm);
  llvm::PHINode* mn = b.CreatePHI(I, 2, "mn");
  llvm::PHINode* en = b.CreatePHI(I, 2, "en");
  mn->addIncoming(rem, last);
  en->addIncoming(ey, last);
  llvm::Value* more = b.CreateAnd(b.CreateICmpULT(mn, k(implicit)), b.CreateICmpUGT(en, k(1)));
  b.CreateCondBr(more, normBody, compose);
  b.SetInsertPoint(normBody);
  mn->addIncoming(b.CreateShl(mn, k(1)), normBody);
  en->addIncoming(b.CreateSub(en, k(1)), normBody);
  b.CreateBr(norm);

  b.SetInsertPoint(compose);
  llvm::Value* isNormal = b.CreateICmpUGE(mn, k(implicit));
  llvm::Value* normalBits = b.CreateOr(b.CreateShl(en, k(mant)), b.CreateSub(mn, k(implicit)));
  b.CreateRet(signed0(b.CreateSelect(isNormal, normalBits, mn)));
}

} // namespace

llvm::Value* emitFmod(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, llvm::Value* y) {
  bool f64 = x->getType()->isDoubleTy();
  const char* name = f64 ? "weft_fmod_f64" : "weft_fmod_f32";
  llvm::Function* f = m.getFunction(name);
  if (!f) {
    llvm::Type* t = x->getType();
    f = llvm::Function::Create(llvm::FunctionType::get(t, {t, t}, false),
                               llvm::GlobalValue::InternalLinkage, name, m);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr(llvm::Attribute::WillReturn);
    emitBody(f, f64);
  }
  return b.CreateCall(f, {x, y});
}

} // namespace weft::codegen
