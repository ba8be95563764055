#include "codegen/grid_barrier.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace weft::codegen {

namespace {

/// A grid-wide synchronisation function: external (the simulator and the PTX merge know it by
/// name), never inlined, convergent (every thread of a block calls it).
llvm::Function* declareSyncFunction(llvm::Module& m, const char* name, llvm::FunctionType* fty) {
  auto* f = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::NoInline);
  f->addFnAttr(llvm::Attribute::Convergent);
  return f;
}

/// `atom.acq_rel.gpu.global.add.u32`: the old value of the counter at its pointer.
llvm::InlineAsm* atomicAddAcqRel(llvm::LLVMContext& c) {
  llvm::Type* i32 = llvm::Type::getInt32Ty(c);
  return llvm::InlineAsm::get(
      llvm::FunctionType::get(i32, {llvm::PointerType::get(c, 1), i32}, false),
      "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;", "=r,l,r,~{memory}", true);
}

/// bar.sync, then thread 0 of the block to `leader` and the others to `rest`.
void syncThenThreadZero(llvm::IRBuilder<>& b, llvm::BasicBlock* leader, llvm::BasicBlock* rest) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  llvm::Value* tid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  b.CreateCondBr(b.CreateICmpEQ(tid, b.getInt32(0)), leader, rest);
}

} // namespace

llvm::Function* getOrEmitGridBarrier(llvm::Module& m) {
  if (llvm::Function* f = m.getFunction(kGridBarrierName)) return f;
  llvm::LLVMContext& c = m.getContext();
  llvm::Type* ptr = llvm::PointerType::get(c, 1);
  auto* f = declareSyncFunction(
      m, kGridBarrierName,
      llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, llvm::Type::getInt32Ty(c)}, false));
  llvm::Value* state = f->getArg(0);
  llvm::Value* blocks = f->getArg(1);

  auto* entry = llvm::BasicBlock::Create(c, "entry", f);
  auto* leader = llvm::BasicBlock::Create(c, "leader", f);
  auto* last = llvm::BasicBlock::Create(c, "last", f);
  auto* spin = llvm::BasicBlock::Create(c, "spin", f);
  auto* done = llvm::BasicBlock::Create(c, "done", f);
  llvm::IRBuilder<> b(entry);
  auto i32 = b.getInt32Ty();
  auto* ldAcquire =
      llvm::InlineAsm::get(llvm::FunctionType::get(i32, {ptr}, false),
                           "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", true);
  llvm::InlineAsm* atomAdd = atomicAddAcqRel(c);
  auto* stRelease =
      llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), {ptr, i32}, false),
                           "st.release.gpu.global.u32 [$0], $1;", "l,r,~{memory}", true);

  syncThenThreadZero(b, leader, done);

  b.SetInsertPoint(leader);
  llvm::Value* genPtr = b.CreateConstInBoundsGEP1_32(i32, state, 1);
  llvm::Value* gen = b.CreateCall(ldAcquire, {genPtr});
  llvm::Value* old = b.CreateCall(atomAdd, {state, b.getInt32(1)});
  b.CreateCondBr(b.CreateICmpEQ(old, b.CreateSub(blocks, b.getInt32(1))), last, spin);

  b.SetInsertPoint(last);
  b.CreateAlignedStore(b.getInt32(0), state, llvm::Align(4), /*isVolatile=*/true);
  b.CreateCall(stRelease, {genPtr, b.CreateAdd(gen, b.getInt32(1))});
  b.CreateBr(done);

  b.SetInsertPoint(spin);
  llvm::Value* now = b.CreateCall(ldAcquire, {genPtr});
  b.CreateCondBr(b.CreateICmpEQ(now, gen), spin, done);

  b.SetInsertPoint(done);
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  b.CreateRetVoid();
  return f;
}

llvm::Function* getOrEmitLastBlock(llvm::Module& m) {
  if (llvm::Function* f = m.getFunction(kLastBlockName)) return f;
  llvm::LLVMContext& c = m.getContext();
  llvm::Type* ptr = llvm::PointerType::get(c, 1);
  llvm::Type* i32 = llvm::Type::getInt32Ty(c);
  llvm::Type* sharedPtr = llvm::PointerType::get(c, 3);
  auto* f = declareSyncFunction(m, kLastBlockName,
                                llvm::FunctionType::get(i32, {ptr, i32, sharedPtr}, false));
  llvm::Value* state = f->getArg(0);
  llvm::Value* blocks = f->getArg(1);
  llvm::Value* flag = f->getArg(2);

  auto* entry = llvm::BasicBlock::Create(c, "entry", f);
  auto* leader = llvm::BasicBlock::Create(c, "leader", f);
  auto* reset = llvm::BasicBlock::Create(c, "reset", f);
  auto* done = llvm::BasicBlock::Create(c, "done", f);
  llvm::IRBuilder<> b(entry);
  llvm::InlineAsm* atomAdd = atomicAddAcqRel(c);
  syncThenThreadZero(b, leader, done);

  b.SetInsertPoint(leader);
  llvm::Value* counter = b.CreateConstInBoundsGEP1_32(i32, state, 2);
  llvm::Value* old = b.CreateCall(atomAdd, {counter, b.getInt32(1)});
  llvm::Value* last = b.CreateICmpEQ(old, b.CreateSub(blocks, b.getInt32(1)));
  b.CreateAlignedStore(b.CreateZExt(last, i32), flag, llvm::Align(4), /*isVolatile=*/true);
  b.CreateCondBr(last, reset, done);

  // The last block zeroes the counter for the next launch (no block of this one adds again).
  b.SetInsertPoint(reset);
  b.CreateAlignedStore(b.getInt32(0), counter, llvm::Align(4), /*isVolatile=*/true);
  b.CreateBr(done);

  b.SetInsertPoint(done);
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  llvm::Value* result = b.CreateAlignedLoad(i32, flag, llvm::Align(4), /*isVolatile=*/true);
  b.CreateRet(result);
  return f;
}

} // namespace weft::codegen
