// Library steps: a dot's kernel — its function, parameters and launch — around the GEMM that
// its GemmPlan describes (gemm_emitter.h).
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/elemental_emitter.h"
#include "codegen/gemm_emitter.h"
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
  k.blockSize = call.gemm.blockSize;
  std::string name = fmt::format("lib{}_", step);
  for (char ch : n.name)
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  k.kernelName = name;
  if (n.kind != ir::OpKind::Dot) k.fail(n.id, "only dot has a library kernel");

  const fusion::GemmEpilogue& epilogue = call.epilogue;
  // the values loaded for the operands (a prologue's source: its layout is the GemmPlan's)
  const std::vector<ir::NodeId> operands = epilogue.operands(n.operands);
  const ir::Node& a = g.node(operands[0]);
  const ir::Node& bm = g.node(operands[1]);
  // the operands, the stored result, then what the epilogue reads
  std::vector<ir::NodeId> values = {a.id, bm.id, call.result()};
  for (const fusion::EpilogueRead& r : epilogue.reads)
    values.push_back(r.value);
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

  const fusion::GemmPlan& gemm = call.gemm;
  // The epilogue: element generators over the dot's accumulator and the values it reads.
  ElementalEmitter gen(k);
  std::map<llvm::Value*, Index> batchIndex; // a tile's flat batch → its leading indices
  GemmResultElement result{g.node(call.result()).type.dtype, nullptr};
  if (!epilogue.empty()) {
    for (const fusion::EpilogueRead& r : epilogue.reads) {
      const ir::Node& v = g.node(r.value);
      llvm::Value* base = k.bufferArg[plan.bufferOfValue[size_t(r.value)]];
      gen.setGenerator(r.value, [&k, &v, base](const Index& idx) {
        return k.loadTensorElement(base, v.type.dtype, v.type.shape, idx);
      });
    }
    const ir::Shape& out = n.type.shape;
    ir::Shape leading(out.begin(), out.end() - 2);
    result.value = [&, leading](llvm::Value* batch, llvm::Value* row, llvm::Value* col,
                                llvm::Value* acc) {
      auto [it, fresh] = batchIndex.try_emplace(batch);
      if (fresh) it->second = delinearize(k, leading, batch);
      Index idx = it->second;
      idx.push_back(row);
      idx.push_back(col);
      // the dot's value as the unfused step would have stored it
      llvm::Value* dot = roundToDType(b, acc, n.type.dtype);
      gen.setGenerator(n.id, [dot](const Index&) { return dot; });
      return gen.emit(epilogue.result, idx);
    };
  }
  emitGemm(k, gemm, n.type.dtype, k.bufferArg[plan.bufferOfValue[size_t(a.id)]],
           k.bufferArg[plan.bufferOfValue[size_t(bm.id)]],
           k.bufferArg[plan.bufferOfValue[size_t(call.result())]],
           epilogue.empty() ? nullptr : &result);
  b.CreateRetVoid();

  info.name = name;
  info.planStep = step;
  info.launch.blockSize = gemm.blockSize;
  info.launch.tiles = gemm.tiles;
  info.launch.maxBlocks = gemm.maxBlocks;
  info.launch.sharedBytes = gemm.sharedBytes;
  return {k.fn, info};
}

} // namespace weft::codegen
