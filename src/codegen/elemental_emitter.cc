#include "codegen/elemental_emitter.h"

#include <algorithm>
#include <cassert>
#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/fmod_emitter.h"
#include "codegen/math_emitter.h"
#include "codegen/reduction_emitter.h"
#include "weft/error.h"

namespace weft::codegen {

using ir::DType;
using ir::OpKind;

// ---- KernelContext ------------------------------------------------------------------------

std::string KernelContext::where(ir::NodeId op) const {
  if (op < 0) return fmt::format("kernel \"{}\"", kernelName);
  return fmt::format("kernel \"{}\": {}", kernelName, ir::describe(graph->node(op)));
}

void KernelContext::fail(ir::NodeId op, const std::string& what) const {
  throw Error(where(op) + ": " + what);
}

llvm::Value* KernelContext::dim(const ir::Dim& d) const {
  llvm::Value* v = index(d.factor());
  for (const std::string& s : d.symbols()) {
    auto it = symbolArg.find(s);
    if (it == symbolArg.end())
      throw Error(where(-1) + ": symbol " + s + " has no kernel parameter");
    v = b->CreateMul(v, toIndex(it->second));
  }
  return v;
}

llvm::Value* KernelContext::elements(const ir::Shape& s) const {
  llvm::Value* v = index(1);
  for (const ir::Dim& d : s)
    v = d.isOne() ? v : b->CreateMul(v, dim(d));
  return v;
}

llvm::Value* KernelContext::toIndex(llvm::Value* v) const {
  return b->CreateSExtOrTrunc(v, indexTy);
}

llvm::Value* KernelContext::threadId() {
  return b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
}
llvm::Value* KernelContext::blockId() {
  if (aloneInGrid) return b->getInt32(0);
  return b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
}
llvm::Value* KernelContext::gridSize() {
  if (aloneInGrid) return b->getInt32(1);
  return b->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, {}, {});
}
void KernelContext::blockBarrier() {
  b->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

void KernelContext::warpBarrier() {
  b->CreateIntrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {b->getInt32(~0u)});
}

void KernelContext::noteFlatIndex(const std::vector<llvm::Value*>& idx, const ir::Shape& s,
                                  llvm::Value* flat) {
  bool dependsOnFlat = std::any_of(idx.begin(), idx.end(),
                                   [](llvm::Value* v) { return !llvm::isa<llvm::Constant>(v); });
  if (dependsOnFlat) flatOfIndex[idx] = {s, flat, scope()};
}

llvm::AllocaInst* KernelContext::entryAlloca(llvm::Type* t, const std::string& name) {
  llvm::IRBuilder<> eb(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  return eb.CreateAlloca(t, nullptr, name);
}

void KernelContext::loop(const std::string& name, llvm::Value* start, llvm::Value* end,
                         llvm::Value* step, const std::function<void(llvm::Value*)>& body,
                         int unrollCount) {
  llvm::BasicBlock* pre = b->GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx(), name + ".header", fn);
  auto* bodyBB = llvm::BasicBlock::Create(ctx(), name + ".body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx(), name + ".exit", fn);
  b->CreateBr(header);
  b->SetInsertPoint(header);
  llvm::PHINode* iv = b->CreatePHI(start->getType(), 2, name + ".iv");
  iv->addIncoming(start, pre);
  b->CreateCondBr(b->CreateICmpSLT(iv, end), bodyBB, exit);
  b->SetInsertPoint(bodyBB);
  ++depth;
  scopeIds.push_back(nextScopeId++);
  body(iv);
  scopeIds.pop_back();
  --depth;
  llvm::Value* next = b->CreateAdd(iv, step, name + ".next", /*HasNUW=*/false, /*HasNSW=*/true);
  iv->addIncoming(next, b->GetInsertBlock());
  llvm::BranchInst* latch = b->CreateBr(header);
  if (unrollCount > 1) {
    llvm::Metadata* count[] = {
        llvm::MDString::get(ctx(), "llvm.loop.unroll.count"),
        llvm::ConstantAsMetadata::get(b->getInt32(uint32_t(unrollCount)))};
    llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx(), count)};
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx(), ops);
    id->replaceOperandWith(0, id); // a loop ID names itself
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b->SetInsertPoint(exit);
}

void KernelContext::ifThen(llvm::Value* cond, const std::function<void()>& then) {
  auto* thenBB = llvm::BasicBlock::Create(ctx(), "then", fn);
  auto* merge = llvm::BasicBlock::Create(ctx(), "endif", fn);
  b->CreateCondBr(cond, thenBB, merge);
  b->SetInsertPoint(thenBB);
  ++depth;
  scopeIds.push_back(nextScopeId++);
  then();
  scopeIds.pop_back();
  --depth;
  b->CreateBr(merge);
  b->SetInsertPoint(merge);
}

llvm::Value* KernelContext::bufferPointer(int buffer, ir::NodeId forValue) const {
  auto it = bufferArg.find(buffer);
  if (it == bufferArg.end())
    fail(forValue, fmt::format("its buffer b{} is not a parameter of the kernel", buffer));
  return it->second;
}

llvm::Value* KernelContext::sharedPointer(int64_t byteOffset) {
  return b->CreateConstInBoundsGEP1_64(llvm::Type::getInt8Ty(ctx()), dynamicShared,
                                       uint64_t(byteOffset));
}

llvm::Type* memoryType(llvm::LLVMContext& c, DType t) {
  switch (t) {
  case DType::f32:
    return llvm::Type::getFloatTy(c);
  case DType::f16:
    return llvm::Type::getHalfTy(c);
  case DType::bf16:
    return llvm::Type::getInt16Ty(c); // converted by bit manipulation: works on every sm
  case DType::f64:
    return llvm::Type::getDoubleTy(c);
  case DType::i8:
  case DType::boolean:
    return llvm::Type::getInt8Ty(c);
  case DType::i32:
    return llvm::Type::getInt32Ty(c);
  case DType::i64:
    return llvm::Type::getInt64Ty(c);
  }
  return nullptr;
}

llvm::Type* computeType(llvm::LLVMContext& c, DType t) {
  switch (t) {
  case DType::f32:
  case DType::f16:
  case DType::bf16:
    return llvm::Type::getFloatTy(c);
  case DType::boolean:
    return llvm::Type::getInt1Ty(c);
  default:
    return memoryType(c, t);
  }
}

namespace {

llvm::Value* bf16BitsToFloat(llvm::IRBuilder<>& b, llvm::Value* bits16) {
  llvm::Value* w = b.CreateShl(b.CreateZExt(bits16, b.getInt32Ty()), 16);
  return b.CreateBitCast(w, b.getFloatTy());
}

/// f32 → bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
llvm::Value* floatToBf16Bits(llvm::IRBuilder<>& b, llvm::Value* f) {
  // sm_80+ has cvt.rn.bf16.f32 (compile.cc records the target's sm as module flag "weft.sm").
  auto* sm = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
      b.GetInsertBlock()->getModule()->getModuleFlag("weft.sm"));
  if (sm && sm->getZExtValue() >= 80)
    return b.CreateBitCast(b.CreateFPTrunc(f, b.getBFloatTy()), b.getInt16Ty());
  llvm::Value* bits = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7fff))), 16);
  llvm::Value* isNan = b.CreateFCmpUNO(f, f);
  llvm::Value* r = b.CreateSelect(isNan, b.getInt32(0x7fc0), rounded);
  return b.CreateTrunc(r, b.getInt16Ty());
}

} // namespace

llvm::Value* roundToDType(llvm::IRBuilder<>& b, llvm::Value* v, DType t) {
  if (t == DType::f16) return b.CreateFPExt(b.CreateFPTrunc(v, b.getHalfTy()), b.getFloatTy());
  if (t == DType::bf16) return bf16BitsToFloat(b, floatToBf16Bits(b, v));
  return v;
}

llvm::Value* fromMemory(llvm::IRBuilder<>& b, llvm::Value* v, DType t) {
  switch (t) {
  case DType::f16:
    return b.CreateFPExt(v, b.getFloatTy());
  case DType::bf16:
    return bf16BitsToFloat(b, v);
  case DType::boolean:
    return b.CreateICmpNE(v, b.getInt8(0));
  default:
    return v;
  }
}

llvm::Value* toMemory(llvm::IRBuilder<>& b, llvm::Value* v, DType t) {
  switch (t) {
  case DType::f16:
    return b.CreateFPTrunc(v, b.getHalfTy());
  case DType::bf16:
    return floatToBf16Bits(b, v);
  case DType::boolean:
    return b.CreateZExt(v, b.getInt8Ty());
  default:
    return v;
  }
}

llvm::Value* KernelContext::loadElement(llvm::Value* base, DType t, llvm::Value* flat,
                                        unsigned align) {
  llvm::Type* mt = memoryType(ctx(), t);
  llvm::Value* p = b->CreateInBoundsGEP(mt, base, flat);
  unsigned a = align ? align : unsigned(ir::dtypeBytes(t));
  return fromMemory(*b, b->CreateAlignedLoad(mt, p, llvm::Align(a)), t);
}

void KernelContext::storeElement(llvm::Value* base, DType t, llvm::Value* flat, llvm::Value* value,
                                 unsigned align) {
  llvm::Type* mt = memoryType(ctx(), t);
  llvm::Value* p = b->CreateInBoundsGEP(mt, base, flat);
  unsigned a = align ? align : unsigned(ir::dtypeBytes(t));
  b->CreateAlignedStore(toMemory(*b, value, t), p, llvm::Align(a));
}

// ---- vector groups --------------------------------------------------------------------------

int vectorChunk(DType t, int width) {
  return std::max(1, std::min(width, 16 / int(ir::dtypeBytes(t))));
}

namespace {

/// Whether a tensor of shape s can be read by vector groups of `width` lanes: its innermost
/// dim is a multiple of the width (static, or by the plan's version guard), so a lane base (a
/// multiple of the width) and its width - 1 successors lie in one row, at an address aligned
/// to the width.
bool lanesFit(const ir::Shape& s, int width, const fusion::FusionPlan* plan) {
  if (width <= 1 || s.empty()) return false;
  if (s.back().isStatic()) return s.back().size() % width == 0;
  return plan && ir::knownDivisor(s.back(), plan->symbolRanges) % width == 0;
}

} // namespace

void KernelContext::beginVectorGroup(int width) {
  assert(vectorWidth == 0 && "vector groups do not nest");
  assert(width > 1 && (width & (width - 1)) == 0 && "a vector group's width is a power of two");
  vectorWidth = width;
  vectorDepth = depth;
  vectorLanes.clear();
  vectorLoads.clear();
}

void KernelContext::endVectorGroup() {
  vectorWidth = 0;
  vectorDepth = -1;
  vectorLanes.clear();
  vectorLoads.clear();
}

std::vector<Index> KernelContext::vectorLaneIndices(const ir::Shape& s, llvm::Value* flat0,
                                                    const Index* index0) {
  assert(vectorWidth > 1 && "vectorLaneIndices needs an open vector group");
  std::vector<Index> lanes;
  if (!lanesFit(s, vectorWidth, plan)) {
    for (int j = 0; j < vectorWidth; ++j)
      lanes.push_back(delinearize(*this, s, j ? b->CreateAdd(flat0, index(j)) : flat0));
    return lanes;
  }
  Index idx0 = index0 ? *index0 : delinearize(*this, s, flat0);
  llvm::Value* base = idx0.back();
  vectorLanes[base] = {base, 0};
  lanes.push_back(idx0);
  for (int j = 1; j < vectorWidth; ++j) {
    Index idx = idx0;
    idx.back() = b->CreateAdd(base, index(j), "", /*HasNUW=*/true, /*HasNSW=*/true);
    vectorLanes[idx.back()] = {base, j};
    noteFlatIndex(idx, s, b->CreateAdd(flat0, index(j), "", true, true));
    lanes.push_back(idx);
  }
  return lanes;
}

llvm::Value* KernelContext::loadTensorElement(llvm::Value* base, DType t, const ir::Shape& s,
                                              const Index& idx) {
  auto lane = idx.empty() ? vectorLanes.end() : vectorLanes.find(idx.back());
  int chunk = vectorChunk(t, vectorWidth);
  if (lane == vectorLanes.end() || !lanesFit(s, vectorWidth, plan) || chunk < 2)
    return loadElement(base, t, linearize(*this, s, idx));
  // Lane j of base c reads the chunk that starts at c + (j / chunk) * chunk: the same row as
  // idx, at an address that is a multiple of chunk elements (c and the row length are
  // multiples of the width, the buffer is 16-byte aligned).
  int first = lane->second.lane / chunk * chunk;
  Index at = idx;
  at.back() = lane->second.base;
  auto key = std::make_tuple(base, at, first);
  auto hit = vectorLoads.find(key);
  if (hit == vectorLoads.end() && depth == vectorDepth) { // the main path dominates every lane
    llvm::Value* flat = linearize(*this, s, at);
    if (first) flat = b->CreateAdd(flat, index(first), "", true, true);
    llvm::Type* mt = memoryType(ctx(), t);
    llvm::Value* p = b->CreateInBoundsGEP(mt, base, flat);
    llvm::Value* vec = b->CreateAlignedLoad(llvm::FixedVectorType::get(mt, unsigned(chunk)), p,
                                            llvm::Align(uint64_t(chunk) * ir::dtypeBytes(t)));
    std::vector<llvm::Value*> elements;
    for (int j = 0; j < chunk; ++j)
      elements.push_back(fromMemory(*b, b->CreateExtractElement(vec, uint64_t(j)), t));
    hit = vectorLoads.emplace(key, std::move(elements)).first;
  }
  if (hit == vectorLoads.end()) return loadElement(base, t, linearize(*this, s, idx));
  return hit->second[size_t(lane->second.lane - first)];
}

void KernelContext::storeVector(llvm::Value* base, DType t, llvm::Value* flat0,
                                const std::vector<llvm::Value*>& lanes) {
  int width = int(lanes.size());
  assert(width > 0 && (width & (width - 1)) == 0 && "vector stores take a power of two lanes");
  int chunk = vectorChunk(t, width);
  llvm::Type* mt = memoryType(ctx(), t);
  for (int first = 0; first < width; first += chunk) {
    llvm::Value* flat = first ? b->CreateAdd(flat0, index(first), "", true, true) : flat0;
    if (chunk < 2) {
      storeElement(base, t, flat, lanes[size_t(first)]);
      continue;
    }
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(mt, unsigned(chunk)));
    for (int j = 0; j < chunk; ++j)
      vec = b->CreateInsertElement(vec, toMemory(*b, lanes[size_t(first + j)], t), uint64_t(j));
    b->CreateAlignedStore(vec, b->CreateInBoundsGEP(mt, base, flat),
                          llvm::Align(uint64_t(chunk) * ir::dtypeBytes(t)));
  }
}

llvm::Constant* constantOf(llvm::LLVMContext& c, DType t, double v) {
  llvm::Type* ty = computeType(c, t);
  if (ir::isFloat(t)) return llvm::ConstantFP::get(ty, v);
  if (ir::isBool(t)) return llvm::ConstantInt::get(ty, v != 0 ? 1 : 0);
  return llvm::ConstantInt::get(ty, uint64_t(int64_t(v)), true);
}

llvm::Value* convertValue(llvm::IRBuilder<>& b, llvm::Value* v, DType from, DType to) {
  llvm::LLVMContext& c = b.getContext();
  llvm::Type* dst = computeType(c, to);
  if (ir::isBool(to)) {
    if (ir::isBool(from)) return v;
    if (ir::isFloat(from)) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (ir::isBool(from)) {
    if (ir::isFloat(to)) return b.CreateUIToFP(v, dst);
    return b.CreateZExt(v, dst);
  }
  if (ir::isFloat(from) && ir::isFloat(to)) {
    llvm::Value* r = v->getType() == dst ? v : b.CreateFPCast(v, dst);
    return roundToDType(b, r, to);
  }
  if (ir::isFloat(to)) return roundToDType(b, b.CreateSIToFP(v, dst), to);
  if (ir::isFloat(from)) {
    // Truncate toward zero, saturate, NaN → 0 (llvm.fptosi.sat); i8 through i32.
    llvm::Type* wide = to == DType::i64 ? b.getInt64Ty() : b.getInt32Ty();
    llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {wide, v->getType()}, {v});
    if (to == DType::i8) {
      r = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, r, b.getInt32(-128));
      r = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, r, b.getInt32(127));
      r = b.CreateTrunc(r, dst);
    }
    return r;
  }
  // integer → integer: sign-extend, or wrap to the narrower width (two's complement, as the
  // interpreter and numpy do).
  unsigned fw = v->getType()->getIntegerBitWidth(), tw = dst->getIntegerBitWidth();
  if (tw >= fw) return b.CreateSExt(v, dst);
  return b.CreateTrunc(v, dst);
}

Index delinearize(KernelContext& k, const ir::Shape& s, llvm::Value* flat) {
  llvm::Value* original = flat;
  Index idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    if (s[d].isOne()) {
      idx[d] = k.index(0);
      continue;
    }
    if (d == 0) {
      idx[d] = flat;
      break;
    }
    llvm::Value* size = k.dim(s[d]);
    idx[d] = k.b->CreateURem(flat, size);
    flat = k.b->CreateUDiv(flat, size);
  }
  k.noteFlatIndex(idx, s, original);
  return idx;
}

Index rowColumnIndex(KernelContext& k, const ir::Shape& s, const Index& rowIndex,
                     llvm::Value* column, llvm::Value* flat) {
  ir::Shape columns(s.begin() + int64_t(rowIndex.size()), s.end());
  Index idx = rowIndex;
  for (llvm::Value* v : delinearize(k, columns, column))
    idx.push_back(v);
  k.noteFlatIndex(idx, s, flat);
  return idx;
}

llvm::Value* linearize(KernelContext& k, const ir::Shape& s, const Index& idx) {
  if (auto it = k.flatOfIndex.find(idx); it != k.flatOfIndex.end() && it->second.shape == s &&
                                         k.isOpen(it->second.scope))
    return it->second.flat;
  llvm::Value* flat = k.index(0);
  for (size_t d = 0; d < s.size(); ++d) {
    if (d == 0) {
      flat = idx[d];
      continue;
    }
    flat = k.b->CreateAdd(k.b->CreateMul(flat, k.dim(s[d])), idx[d]);
  }
  return flat;
}

// ---- max / min ----------------------------------------------------------------------------

llvm::Value* emitMax(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t) {
  if (ir::isBool(t)) return b.CreateOr(x, y);
  if (!ir::isFloat(t)) return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
  // IEEE 754-2019 maximum (NaN from either side, -0 < +0), as the interpreter: max.NaN on
  // sm_80+, a short select sequence before. The compute type is f32 or f64 here.
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y);
}

llvm::Value* emitMin(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t) {
  if (ir::isBool(t)) return b.CreateAnd(x, y);
  if (!ir::isFloat(t)) return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y);
}

// ---- ElementalEmitter ---------------------------------------------------------------------

llvm::Value* ElementalEmitter::emit(ir::NodeId value, const Index& index) {
  auto key = std::make_pair(value, index);
  if (auto it = cache_.find(key); it != cache_.end() && k_.isOpen(it->second.scope))
    return it->second.value;
  bool reuse = reuseDepth_ >= 0 && reused_.count(value);
  if (reuse)
    if (auto it = kept_.find(key); it != kept_.end() && k_.isOpen(it->second.scope)) {
      cache_[key] = it->second;
      return it->second.value;
    }
  llvm::Value* v;
  if (auto o = overrides_.find(value); o != overrides_.end())
    v = o->second(index);
  else
    v = compute(k_.graph->node(value), index);
  cache_[key] = {v, k_.scope()};
  if (reuse && k_.depth == reuseDepth_) kept_[key] = {v, k_.scope()};
  return v;
}

void ElementalEmitter::beginReuse(std::set<ir::NodeId> reused) {
  reused_ = std::move(reused);
  reuseDepth_ = k_.depth;
  kept_.clear();
}

void ElementalEmitter::endReuse() {
  reused_.clear();
  reuseDepth_ = -1;
  kept_.clear();
}

void ElementalEmitter::remember(ir::NodeId value, const Index& index, llvm::Value* v) {
  if (reuseDepth_ < 0 || k_.depth != reuseDepth_ || !reused_.count(value)) return;
  kept_[{value, index}] = {v, k_.scope()};
}

Index ElementalEmitter::operandIndex(const ir::Node& operand, const Index& index) const {
  if (operand.type.shape.empty()) return {};
  return index;
}

llvm::Value* ElementalEmitter::compute(const ir::Node& n, const Index& index) {
  llvm::IRBuilder<>& b = *k_.b;
  const ir::Graph& g = *k_.graph;
  if (ir::isUnary(n.kind) || n.kind == OpKind::Convert) return unary(n, index);
  if (ir::isBinary(n.kind)) return binary(n, index);
  switch (n.kind) {
  case OpKind::Parameter:
    k_.fail(n.id, "is a parameter but the plan gives it no input buffer in this kernel");
  case OpKind::Constant:
    return constant(n, index);
  case OpKind::Iota: {
    llvm::Value* i = index[size_t(n.attr<ir::IotaAttrs>().axis)];
    DType t = n.type.dtype;
    if (ir::isFloat(t)) return roundToDType(b, b.CreateSIToFP(i, computeType(k_.ctx(), t)), t);
    if (ir::isBool(t)) return b.CreateICmpNE(i, k_.index(0));
    return b.CreateSExtOrTrunc(i, computeType(k_.ctx(), t));
  }
  case OpKind::Select: {
    llvm::Value* p = emit(n.operands[0], operandIndex(g.node(n.operands[0]), index));
    llvm::Value* x = emit(n.operands[1], operandIndex(g.node(n.operands[1]), index));
    llvm::Value* y = emit(n.operands[2], operandIndex(g.node(n.operands[2]), index));
    return b.CreateSelect(p, x, y);
  }
  case OpKind::Clamp: {
    llvm::Value* lo = emit(n.operands[0], operandIndex(g.node(n.operands[0]), index));
    llvm::Value* x = emit(n.operands[1], operandIndex(g.node(n.operands[1]), index));
    llvm::Value* hi = emit(n.operands[2], operandIndex(g.node(n.operands[2]), index));
    return emitMin(b, emitMax(b, x, lo, n.type.dtype), hi, n.type.dtype);
  }
  case OpKind::BroadcastInDim: {
    const ir::Node& x = g.node(n.operands[0]);
    const auto& dims = n.attr<ir::BroadcastAttrs>().dims;
    Index xi(x.type.shape.size());
    for (size_t i = 0; i < xi.size(); ++i) {
      const ir::Dim& xd = x.type.shape[i];
      bool stretched = xd.isOne();
      xi[i] = stretched ? k_.index(0) : index[size_t(dims[i])];
    }
    return emit(x.id, xi);
  }
  case OpKind::Reshape: {
    const ir::Node& x = g.node(n.operands[0]);
    llvm::Value* flat = linearize(k_, n.type.shape, index);
    return emit(x.id, delinearize(k_, x.type.shape, flat));
  }
  case OpKind::Transpose: {
    const auto& perm = n.attr<ir::TransposeAttrs>().perm;
    Index xi(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      xi[size_t(perm[i])] = index[i];
    return emit(n.operands[0], xi);
  }
  case OpKind::Slice: {
    const auto& a = n.attr<ir::SliceAttrs>();
    Index xi(index.size());
    for (size_t i = 0; i < index.size(); ++i)
      xi[i] = b.CreateAdd(b.CreateMul(index[i], k_.index(a.strides[i])), k_.index(a.starts[i]));
    return emit(n.operands[0], xi);
  }
  case OpKind::Concatenate:
    return concatenate(n, index);
  case OpKind::Pad:
    return pad(n, index);
  case OpKind::Gather:
    return gather(n, index);
  case OpKind::Reduce:
    return reduceInline(n, index);
  case OpKind::Dot:
    k_.fail(n.id, "dot is compute-intensive and is emitted as a library kernel, never inside a "
                  "stitched kernel");
  default:
    break;
  }
  k_.fail(n.id, "no element generator for this op kind");
}

llvm::Value* ElementalEmitter::unary(const ir::Node& n, const Index& index) {
  llvm::IRBuilder<>& b = *k_.b;
  const ir::Node& xn = k_.graph->node(n.operands[0]);
  llvm::Value* x = emit(xn.id, operandIndex(xn, index));
  DType t = n.type.dtype;
  llvm::Type* ty = computeType(k_.ctx(), t);
  bool fp = ir::isFloat(t);
  llvm::Value* r = nullptr;
  switch (n.kind) {
  case OpKind::Convert:
    return convertValue(b, x, xn.type.dtype, t);
  case OpKind::Neg:
    r = fp ? b.CreateFNeg(x) : b.CreateNeg(x);
    break;
  case OpKind::Abs:
    r = fp ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
           : b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
    break;
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Tanh:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Erf:
  case OpKind::Sin:
  case OpKind::Cos:
    r = emitMath(k_, n.kind, x);
    break;
  case OpKind::Sigmoid: {
    // e = exp(-|x|) never overflows: sigmoid = 1 / (1 + e) for x >= 0 and e / (1 + e) below,
    // so large negative x gives exp(x)'s subnormals, not 1 / inf = 0.
    llvm::Value* one = llvm::ConstantFP::get(ty, 1.0);
    llvm::Value* e = emitMath(k_, OpKind::Exp,
                              b.CreateFNeg(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
    llvm::Value* q = b.CreateFDiv(one, b.CreateFAdd(one, e));
    r = b.CreateSelect(b.CreateFCmpOLT(x, llvm::ConstantFP::get(ty, 0.0)), b.CreateFMul(e, q), q);
    break;
  }
  case OpKind::Floor:
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    break;
  case OpKind::Ceil:
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    break;
  case OpKind::Reciprocal:
    r = b.CreateFDiv(llvm::ConstantFP::get(ty, 1.0), x);
    break;
  case OpKind::Sign:
    if (fp) {
      llvm::Value* one = llvm::ConstantFP::get(ty, 1.0);
      llvm::Value* pos = b.CreateUIToFP(b.CreateFCmpOGT(x, llvm::ConstantFP::get(ty, 0.0)), ty);
      llvm::Value* neg = b.CreateUIToFP(b.CreateFCmpOLT(x, llvm::ConstantFP::get(ty, 0.0)), ty);
      (void)one;
      r = b.CreateSelect(b.CreateFCmpUNO(x, x), x, b.CreateFSub(pos, neg));
    } else {
      llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
      r = b.CreateSub(b.CreateZExt(b.CreateICmpSGT(x, zero), ty),
                      b.CreateZExt(b.CreateICmpSLT(x, zero), ty));
    }
    break;
  case OpKind::Not:
    r = b.CreateNot(x);
    break;
  default:
    k_.fail(n.id, "not a unary op");
  }
  return fp ? roundToDType(b, r, t) : r;
}

llvm::Value* ElementalEmitter::binary(const ir::Node& n, const Index& index) {
  llvm::IRBuilder<>& b = *k_.b;
  const ir::Node& an = k_.graph->node(n.operands[0]);
  const ir::Node& bn = k_.graph->node(n.operands[1]);
  llvm::Value* x = emit(an.id, operandIndex(an, index));
  llvm::Value* y = emit(bn.id, operandIndex(bn, index));
  DType ot = an.type.dtype; // operand dtype (compare's result is bool)
  bool fp = ir::isFloat(ot);
  llvm::Value* r = nullptr;
  switch (n.kind) {
  case OpKind::Add:
    r = fp ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
    break;
  case OpKind::Sub:
    r = fp ? b.CreateFSub(x, y) : b.CreateSub(x, y);
    break;
  case OpKind::Mul:
    r = fp ? b.CreateFMul(x, y) : b.CreateMul(x, y);
    break;
  case OpKind::Div:
  case OpKind::Rem: {
    bool div = n.kind == OpKind::Div;
    if (fp) {
      r = div ? b.CreateFDiv(x, y) : emitFmod(b, *k_.module, x, y);
      break;
    }
    // Every divisor gives a defined result (sdiv and srem by 0 or INT_MIN / -1 are undefined
    // behaviour in LLVM IR, which the optimizer may exploit): x / -1 = -x and x % -1 = 0
    // without the INT_MIN / -1 trap; x / 0 = -1 and x % 0 = x (XLA's convention; the reference
    // interpreter refuses a zero divisor instead); other divisors as C.
    llvm::Type* ty = y->getType();
    llvm::Value* minusOne = llvm::ConstantInt::get(ty, uint64_t(-1), true);
    llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
    llvm::Value* isM1 = b.CreateICmpEQ(y, minusOne);
    llvm::Value* isZero = b.CreateICmpEQ(y, zero);
    llvm::Value* safeY =
        b.CreateSelect(b.CreateOr(isM1, isZero), llvm::ConstantInt::get(ty, 1), y);
    llvm::Value* q = div ? b.CreateSDiv(x, safeY) : b.CreateSRem(x, safeY);
    q = b.CreateSelect(isM1, div ? b.CreateNeg(x) : zero, q);
    r = b.CreateSelect(isZero, div ? minusOne : x, q);
    break;
  }
  case OpKind::Pow:
    r = emitMath(k_, OpKind::Pow, x, y);
    break;
  case OpKind::Max:
    r = emitMax(b, x, y, ot);
    break;
  case OpKind::Min:
    r = emitMin(b, x, y, ot);
    break;
  case OpKind::And:
    r = b.CreateAnd(x, y);
    break;
  case OpKind::Or:
    r = b.CreateOr(x, y);
    break;
  case OpKind::Compare: {
    using P = llvm::CmpInst::Predicate;
    P p;
    bool u = ir::isBool(ot);
    switch (n.attr<ir::CompareAttrs>().dir) {
    case ir::CompareDir::EQ:
      p = fp ? P::FCMP_OEQ : P::ICMP_EQ;
      break;
    case ir::CompareDir::NE:
      p = fp ? P::FCMP_UNE : P::ICMP_NE;
      break;
    case ir::CompareDir::LT:
      p = fp ? P::FCMP_OLT : u ? P::ICMP_ULT : P::ICMP_SLT;
      break;
    case ir::CompareDir::LE:
      p = fp ? P::FCMP_OLE : u ? P::ICMP_ULE : P::ICMP_SLE;
      break;
    case ir::CompareDir::GT:
      p = fp ? P::FCMP_OGT : u ? P::ICMP_UGT : P::ICMP_SGT;
      break;
    default:
      p = fp ? P::FCMP_OGE : u ? P::ICMP_UGE : P::ICMP_SGE;
      break;
    }
    return fp ? b.CreateFCmp(p, x, y) : b.CreateICmp(p, x, y);
  }
  default:
    k_.fail(n.id, "not a binary op");
  }
  return fp ? roundToDType(b, r, n.type.dtype) : r;
}

llvm::Value* ElementalEmitter::gather(const ir::Node& n, const Index& index) {
  // The operand is in memory (an input of the kernel, fusion/graph_queries.h readsInMemory) or
  // a source generated at any index: its element at a run-time position is a load there. Each
  // index is checked against its axis in 64 bits (unsigned: a negative one is out of range too)
  // and the load goes to position 0 instead when any is out: nothing is read out of bounds,
  // and the element is 0.
  llvm::IRBuilder<>& b = *k_.b;
  const auto& a = n.attr<ir::GatherAttrs>();
  const ir::Node& x = k_.graph->node(n.operands[0]);
  llvm::Type* i64 = b.getInt64Ty();
  Index xi(x.type.shape.size(), nullptr);
  llvm::Value* inRange = b.getTrue();
  for (size_t j = 0; j < a.axes.size(); ++j) {
    const ir::Node& idx = k_.graph->node(n.operands[j + 1]);
    llvm::Value* v = b.CreateSExtOrTrunc(emit(idx.id, index), i64);
    auto axis = static_cast<size_t>(a.axes[j]);
    llvm::Value* size = b.CreateSExtOrTrunc(k_.dim(x.type.shape[axis]), i64);
    inRange = b.CreateAnd(inRange, b.CreateICmpULT(v, size));
    xi[axis] = v;
  }
  for (size_t j = 0; j < a.axes.size(); ++j) {
    auto axis = static_cast<size_t>(a.axes[j]);
    xi[axis] = b.CreateSelect(inRange, k_.toIndex(xi[axis]), k_.index(0));
  }
  std::vector<int64_t> resultDim = ir::gatherResultDims(a, xi.size());
  for (size_t d = 0; d < xi.size(); ++d)
    if (resultDim[d] >= 0) xi[d] = index[static_cast<size_t>(resultDim[d])];
  llvm::Type* ty = computeType(k_.ctx(), n.type.dtype);
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  bool sized = true; // every gathered axis has a static size, so position 0 exists or none does
  for (int64_t axis : a.axes) {
    const ir::Dim& d = x.type.shape[static_cast<size_t>(axis)];
    if (d.isStatic() && d.size() == 0) return zero; // every index is out of range
    sized = sized && d.isStatic();
  }
  if (sized) return b.CreateSelect(inRange, emit(x.id, xi), zero);
  // A symbolic axis may be empty at run time, where position 0 is past the buffer: the load
  // runs only for indices in range.
  llvm::AllocaInst* slot = k_.entryAlloca(ty, n.name + ".gathered");
  b.CreateStore(zero, slot);
  k_.ifThen(inRange, [&] { b.CreateStore(emit(x.id, xi), slot); });
  return b.CreateLoad(ty, slot);
}

llvm::Value* ElementalEmitter::constant(const ir::Node& n, const Index& index) {
  const auto& values = n.attr<ir::ConstantAttrs>().values;
  DType t = n.type.dtype;
  if (values.size() == 1) {
    llvm::Value* c = constantOf(k_.ctx(), t, values[0]);
    return ir::isFloat(t) ? roundToDType(*k_.b, c, t) : c;
  }
  // A table in global memory, in the storage type, shared by every kernel of the module.
  std::string name = "weft_const_" + n.name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  llvm::GlobalVariable* table = k_.module->getNamedGlobal(name);
  if (!table) {
    llvm::Type* mt = memoryType(k_.ctx(), t);
    std::vector<llvm::Constant*> elems;
    elems.reserve(values.size());
    llvm::IRBuilder<> cb(k_.ctx());
    for (double v : values) {
      llvm::Constant* c;
      if (t == DType::f16)
        c = llvm::ConstantFP::get(mt, v);
      else if (t == DType::bf16) {
        float f = static_cast<float>(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        uint32_t lsb = (bits >> 16) & 1;
        uint16_t r = std::isnan(f) ? 0x7fc0 : uint16_t((bits + 0x7fff + lsb) >> 16);
        c = llvm::ConstantInt::get(mt, r);
      } else if (ir::isFloat(t))
        c = llvm::ConstantFP::get(mt, v);
      else
        c = llvm::ConstantInt::get(mt, uint64_t(int64_t(v != 0 && ir::isBool(t) ? 1 : v)), true);
      elems.push_back(c);
    }
    auto* at = llvm::ArrayType::get(mt, elems.size());
    table = new llvm::GlobalVariable(*k_.module, at, /*isConstant=*/true,
                                     llvm::GlobalValue::InternalLinkage,
                                     llvm::ConstantArray::get(at, elems), name, nullptr,
                                     llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/1);
    table->setAlignment(llvm::Align(16));
  }
  return k_.loadTensorElement(table, t, n.type.shape, index);
}

llvm::Value* ElementalEmitter::concatenate(const ir::Node& n, const Index& index) {
  llvm::IRBuilder<>& b = *k_.b;
  size_t axis = size_t(n.attr<ir::ConcatAttrs>().axis);
  // Every operand is read at a clamped (in-bounds) index; selects pick the right one.
  llvm::Value* offset = k_.index(0);
  llvm::Value* result = nullptr;
  for (ir::NodeId o : n.operands) {
    const ir::Node& on = k_.graph->node(o);
    llvm::Value* size = k_.dim(on.type.shape[axis]);
    llvm::Value* local = b.CreateSub(index[axis], offset);
    llvm::Value* last = b.CreateSub(size, k_.index(1));
    llvm::Value* clamped = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, local, k_.index(0)),
        last);
    Index oi = index;
    oi[axis] = clamped;
    llvm::Value* v = emit(o, oi);
    llvm::Value* end = b.CreateAdd(offset, size);
    result = result ? b.CreateSelect(b.CreateICmpSLT(index[axis], offset), result, v) : v;
    offset = end;
  }
  return result;
}

llvm::Value* ElementalEmitter::pad(const ir::Node& n, const Index& index) {
  llvm::IRBuilder<>& b = *k_.b;
  const auto& a = n.attr<ir::PadAttrs>();
  const ir::Node& x = k_.graph->node(n.operands[0]);
  llvm::Value* inside = b.getTrue();
  Index xi(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    llvm::Value* local = b.CreateSub(index[i], k_.index(a.low[i]));
    llvm::Value* size = k_.dim(x.type.shape[i]);
    inside = b.CreateAnd(
        inside, b.CreateAnd(b.CreateICmpSGE(local, k_.index(0)), b.CreateICmpSLT(local, size)));
    xi[i] = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, local, k_.index(0)),
        b.CreateSub(size, k_.index(1)));
  }
  llvm::Value* v = emit(x.id, xi);
  llvm::Value* padValue = constantOf(k_.ctx(), n.type.dtype, a.value);
  if (ir::isFloat(n.type.dtype)) padValue = roundToDType(b, padValue, n.type.dtype);
  return b.CreateSelect(inside, v, padValue);
}

llvm::Value* ElementalEmitter::reduceInline(const ir::Node& n, const Index& index) {
  // A reduce the plan keeps in registers and uses elsewhere: each element is reduced serially
  // by the thread that needs it (XLA's elemental reduce). Correct for any plan; slow.
  llvm::IRBuilder<>& b = *k_.b;
  ReduceGeometry geo = reduceGeometry(*k_.graph, n);
  ir::ReduceKind kind = n.attr<ir::ReduceAttrs>().kind;
  DType t = n.type.dtype;
  ThreadAccumulator acc(k_, kind, t, n.name + ".acc");
  acc.reset();
  llvm::Value* keptFlat = linearize(k_, n.type.shape, index);
  auto saved = cache_;
  k_.loop(n.name + ".serial", k_.index(0), k_.dim(geo.reduced), k_.index(1), [&](llvm::Value* r) {
    cache_ = saved;
    acc.add(emit(n.operands[0], reduceOperandIndex(k_, geo, keptFlat, r)));
  });
  cache_ = saved;
  llvm::Value* result = acc.value();
  return ir::isFloat(t) ? roundToDType(b, result, t) : result;
}

} // namespace weft::codegen
