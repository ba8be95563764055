// Library steps (dot) as simple generated kernels: one output element per thread.
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/kernel_emitter.h"
#include "codegen/stitched_kernel_emitter.h"
#include "weft/error.h"

namespace weft::codegen {

using detail::annotate;

EmittedKernel emitLibraryKernel(llvm::Module& module, const fusion::FusionPlan& plan, int step,
                                bool useLibdevice) {
  const auto& call = std::get<fusion::LibraryCall>(plan.steps[size_t(step)]);
  const ir::Graph& g = plan.graph;
  const ir::Node& n = g.node(call.op);
  llvm::LLVMContext& c = module.getContext();
  llvm::IRBuilder<> b(c);
  KernelContext k;
  k.module = &module;
  k.b = &b;
  k.plan = &plan;
  k.graph = &g;
  k.useLibdevice = useLibdevice;
  k.blockSize = 256;
  std::string name = fmt::format("lib{}_", step);
  for (char ch : n.name)
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  k.kernelName = name;
  if (n.kind != ir::OpKind::Dot) k.fail(n.id, "only dot has a library kernel");

  const ir::Node& a = g.node(n.operands[0]);
  const ir::Node& bm = g.node(n.operands[1]);
  std::vector<ir::NodeId> values = {a.id, bm.id, n.id};
  CompiledKernel info;
  std::set<std::string> symbols;
  bool big = false;
  for (ir::NodeId v : values) {
    for (const std::string& s : ir::symbolsOf(g.node(v).type.shape))
      symbols.insert(s);
    ir::Dim e = ir::numElements(g.node(v).type.shape);
    big = big || !e.isStatic() || e.size() >= (int64_t(1) << 30);
  }
  k.indexTy = big ? b.getInt64Ty() : b.getInt32Ty();
  std::vector<llvm::Type*> types;
  std::vector<int> bufs;
  for (ir::NodeId v : values) {
    int buf = plan.bufferOfValue.at(size_t(v));
    if (buf < 0) k.fail(v, "a library call's operands and result need buffers");
    if (std::find(bufs.begin(), bufs.end(), buf) != bufs.end()) continue;
    bufs.push_back(buf);
    types.push_back(llvm::PointerType::get(c, 1));
    info.params.push_back({KernelParam::Kind::Buffer, buf, ""});
  }
  for (const std::string& s : symbols) {
    types.push_back(b.getInt64Ty());
    info.params.push_back({KernelParam::Kind::Symbol, -1, s});
  }
  k.fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), types, false),
                                llvm::GlobalValue::ExternalLinkage, name, module);
  unsigned i = 0;
  for (int buf : bufs)
    k.bufferArg[buf] = k.fn->getArg(i++);
  for (const std::string& s : symbols)
    k.symbolArg[s] = k.fn->getArg(i++);
  annotate(module, k.fn, "kernel", 1);
  annotate(module, k.fn, "maxntidx", k.blockSize);
  b.SetInsertPoint(llvm::BasicBlock::Create(c, "entry", k.fn));

  // out[..., m, n] = sum_k a[..., m, k] * b[..., k, n], accumulated in the compute type.
  const ir::Shape& os = n.type.shape;
  size_t r = os.size();
  ir::Dim kDim = a.type.shape[r - 1];
  ir::DType t = n.type.dtype;
  llvm::Value* total = k.elements(os);
  llvm::Value* start = b.CreateAdd(b.CreateMul(k.toIndex(k.blockId()), k.index(k.blockSize)),
                                   k.toIndex(k.threadId()));
  llvm::Value* stride = b.CreateMul(k.toIndex(k.gridSize()), k.index(k.blockSize));
  llvm::AllocaInst* acc = k.entryAlloca(computeType(c, t), "acc");
  llvm::Value* pa = k.bufferArg[plan.bufferOfValue[size_t(a.id)]];
  llvm::Value* pb = k.bufferArg[plan.bufferOfValue[size_t(bm.id)]];
  llvm::Value* po = k.bufferArg[plan.bufferOfValue[size_t(n.id)]];
  k.loop("out", start, total, stride, [&](llvm::Value* flat) {
    Index idx = delinearize(k, os, flat);
    b.CreateStore(constantOf(c, t, 0.0), acc);
    k.loop("k", k.index(0), k.dim(kDim), k.index(1), [&](llvm::Value* kk) {
      Index ai = idx, bi = idx;
      ai[r - 1] = kk;
      bi[r - 2] = kk;
      llvm::Value* x = k.loadElement(pa, t, linearize(k, a.type.shape, ai));
      llvm::Value* y = k.loadElement(pb, t, linearize(k, bm.type.shape, bi));
      llvm::Value* cur = b.CreateLoad(acc->getAllocatedType(), acc);
      llvm::Value* sum =
          ir::isFloat(t) ? b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, cur})
                         : b.CreateAdd(cur, b.CreateMul(x, y));
      b.CreateStore(sum, acc);
    });
    llvm::Value* v = b.CreateLoad(acc->getAllocatedType(), acc);
    k.storeElement(po, t, flat, ir::isFloat(t) ? roundToDType(b, v, t) : v);
  });
  b.CreateRetVoid();

  info.name = name;
  info.planStep = step;
  info.launch.blockSize = k.blockSize;
  ir::Dim elems = ir::numElements(os);
  if (elems.isStatic()) {
    info.launch.tiles = std::max<int64_t>(1, (elems.size() + k.blockSize - 1) / k.blockSize);
  } else {
    info.launch.tiles = elems;
    info.launch.maxBlocks =
        int64_t(plan.device.smCount) * std::max(1, plan.device.maxThreadsPerSM / k.blockSize) * 4;
  }
  return {k.fn, info};
}

} // namespace weft::codegen
