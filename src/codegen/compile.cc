// codegen's pipeline, top to bottom: split the plan's steps into chunks, emit each chunk into an
// LLVM module of its own and link libdevice into it, optimise (O3, new pass manager, NVPTX's own
// callbacks included; big plans compile for size, compactCode in compile.h), print PTX with the
// NVPTX backend for the plan's sm_XX, and join the
// chunks' PTX into one module. Chunks run on a pool of threads, one LLVM context per chunk
// (contexts are not thread-safe); every chunk finishes a step before any starts the next.
#include "codegen/compile.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <spdlog/spdlog.h>

#include "codegen/kernel_emitter.h"
#include "codegen/libdevice.h"
#include "codegen/math_emitter.h"
#include "codegen/parallel_compile.h"
#include "codegen/ptx_annotate.h"
#include "codegen/ptx_merge.h"
#include "weft/error.h"

namespace weft::codegen {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";
// The newest PTX ISA LLVM 19 writes; CUDA 13's ptxas (PTX 9.0) accepts it.
constexpr const char* kPtxFeature = "+ptx85";

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void initialiseNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

/// One per module: a TargetMachine is not shared between threads. `sm` is ptxTarget's.
std::unique_ptr<llvm::TargetMachine> nvptxMachine(const std::string& sm, bool compact) {
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!target) throw Error("LLVM has no NVPTX target: " + err);
  llvm::TargetOptions opts;
  auto* tm = target->createTargetMachine(kTriple, sm, kPtxFeature, opts, llvm::Reloc::PIC_,
                                         std::nullopt,
                                         compact ? llvm::CodeGenOptLevel::Default
                                                 : llvm::CodeGenOptLevel::Aggressive);
  if (!tm) throw Error("LLVM cannot target " + sm);
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

std::string printModule(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

/// A chunk of the plan's steps and everything compiling it produces. Each owns its LLVM
/// context, so chunks can be compiled on different threads.
struct Chunk {
  StepRange steps;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::vector<CompiledKernel> kernels;
  std::string llvmIr; // as printed to PTX, when CodegenOptions::keepLlvmIr
  std::string ptx;
};

/// Library kernels whose bodies another library kernel of the plan already has: for each
/// such step, its kernel (its own parameters and launch) under the name of the first step
/// with the same body, which alone is emitted. Empty unless `compact`: big graphs repeat their
/// layers (graph_10000: 199 GEMMs, 90 distinct bodies). Each library step is emitted alone
/// into a scratch module (a few ms in all) and compared as text with its name left out, so
/// the result depends on the plan only, not on the chunks or threads.
std::map<int, CompiledKernel> sharedLibraryKernels(const fusion::FusionPlan& plan,
                                                   bool useLibdevice, bool compact,
                                                   int threads) {
  std::map<int, CompiledKernel> shared;
  if (!compact) return shared;
  std::vector<int> library;
  for (int i = 0; i < int(plan.steps.size()); ++i)
    if (std::holds_alternative<fusion::LibraryCall>(plan.steps[size_t(i)])) library.push_back(i);
  if (library.size() < 2) return shared;
  std::vector<std::string> bodies(library.size());
  std::vector<CompiledKernel> infos(library.size());
  const llvm::DataLayout layout = nvptxMachine(ptxTarget(plan), compact)->createDataLayout();
  parallelFor(threads, library.size(), [&](size_t j) {
    llvm::LLVMContext ctx;
    llvm::Module m("weft", ctx);
    m.setTargetTriple(kTriple);
    m.setDataLayout(layout);
    m.addModuleFlag(llvm::Module::Override, "weft.sm", uint32_t(plan.device.computeCapability));
    EmittedKernel k = emitLibraryKernel(m, plan, library[j], useLibdevice);
    // compared without the names of its values (the graph's), blocks and globals
    for (llvm::Function& f : m) {
      for (llvm::Argument& a : f.args())
        a.setName("");
      for (llvm::BasicBlock& bb : f) {
        bb.setName("");
        for (llvm::Instruction& inst : bb)
          inst.setName("");
      }
    }
    int global = 0;
    for (llvm::GlobalVariable& v : m.globals())
      if (v.hasLocalLinkage()) v.setName(fmt::format("weft_global_{}", global++));
    k.function->setName("weft_library_kernel");
    bodies[j] = printModule(m);
    infos[j] = std::move(k.info);
  });
  std::map<std::string, size_t> firstWith;
  for (size_t j = 0; j < library.size(); ++j) {
    auto [it, fresh] = firstWith.emplace(bodies[j], j);
    if (fresh) continue;
    CompiledKernel k = std::move(infos[j]);
    k.name = infos[it->second].name;
    shared.emplace(library[j], std::move(k));
  }
  return shared;
}

/// The chunk's steps as the kernels of a verified module, libdevice linked in when `libdevice`
/// names it; the steps in `shared` are not emitted, their kernels launch another step's entry.
void emitChunk(Chunk& c, const fusion::FusionPlan& plan, const std::string& libdevice,
               bool compact, const std::map<int, CompiledKernel>& shared) {
  c.tm = nvptxMachine(ptxTarget(plan), compact);
  c.ctx = std::make_unique<llvm::LLVMContext>();
  c.module = std::make_unique<llvm::Module>("weft", *c.ctx);
  llvm::Module& m = *c.module;
  m.setTargetTriple(kTriple);
  m.setDataLayout(c.tm->createDataLayout());
  m.addModuleFlag(llvm::Module::Override, "weft.sm", uint32_t(plan.device.computeCapability));
  bool useLibdevice = !libdevice.empty();
  if (compact && !useLibdevice) m.addModuleFlag(llvm::Module::Override, kMathCallsFlag, 1u);
  for (int i = c.steps.begin; i < c.steps.end; ++i) {
    if (auto it = shared.find(i); it != shared.end()) {
      c.kernels.push_back(it->second);
      continue;
    }
    EmittedKernel k = std::holds_alternative<fusion::KernelPlan>(plan.steps[size_t(i)])
                          ? emitKernel(m, plan, i, useLibdevice)
                          : emitLibraryKernel(m, plan, i, useLibdevice);
    c.kernels.push_back(std::move(k.info));
  }
  std::string broken;
  llvm::raw_string_ostream bos(broken);
  if (llvm::verifyModule(m, &bos))
    throw Error("codegen produced invalid LLVM IR (a weft bug): " + broken + "\n" + printModule(m));
  if (useLibdevice)
    linkLibdevice(m, libdevice, compact);
  else
    m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
}

void optimiseChunk(Chunk& c, const CodegenOptions& options, bool compact) {
  if (options.optimise) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopUnrolling = !compact;
    llvm::PassBuilder pb(c.tm.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(
        compact ? llvm::OptimizationLevel::O2 : llvm::OptimizationLevel::O3);
    mpm.run(*c.module, mam);
  }
}

void printPtx(Chunk& c, const std::string& sm, bool keepLlvmIr) {
  if (keepLlvmIr) c.llvmIr = printModule(*c.module);
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (c.tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw Error("the NVPTX backend cannot emit PTX for " + sm);
  pm.run(*c.module);
  c.ptx = std::string(ptx.str());
  c.module.reset(); // frees the chunk's IR while the other chunks print
  c.ctx.reset();
}

/// Runs `step` on every chunk, on up to `threads` threads; the wall time in ms.
double forEachChunk(std::vector<Chunk>& chunks, int threads,
                    const std::function<void(Chunk&)>& step) {
  auto t0 = std::chrono::steady_clock::now();
  parallelFor(threads, chunks.size(), [&](size_t i) { step(chunks[i]); });
  return msSince(t0);
}

} // namespace

std::string ptxTarget(const fusion::FusionPlan& plan) {
  for (const fusion::Step& step : plan.steps)
    if (const auto* call = std::get_if<fusion::LibraryCall>(&step);
        call && plan.graph.node(call->op).kind == ir::OpKind::Dot && call->gemm.warpgroups())
      return plan.device.smName() + "a";
  return plan.device.smName();
}

bool compactCode(const fusion::FusionPlan& plan) {
  return int64_t(plan.graph.size()) >= kCompactCodeOps;
}

CompiledModule compileToPtx(const fusion::FusionPlan& plan, const CodegenOptions& options) {
  CompiledModule out;
  initialiseNvptx(); // before the threads start
  std::string libdevice = options.useLibdevice ? findLibdevice(options.libdevicePath) : "";
  if (options.useLibdevice && libdevice.empty())
    spdlog::debug("codegen: no libdevice found; using weft's own math");

  int steps = int(plan.steps.size());
  int threads = compileThreads(options.threads);
  std::vector<StepRange> ranges =
      threads == 1 ? std::vector<StepRange>{{0, steps}} : partitionSteps(steps);
  std::vector<Chunk> chunks(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i)
    chunks[i].steps = ranges[i];
  threads = std::min(threads, int(chunks.size()));
  out.timings.modules = int(chunks.size());
  out.timings.threads = threads;

  const bool compact = compactCode(plan);
  auto t0 = std::chrono::steady_clock::now();
  const std::map<int, CompiledKernel> shared =
      sharedLibraryKernels(plan, !libdevice.empty(), compact, threads);
  out.timings.llvmIrMs =
      msSince(t0) + forEachChunk(chunks, threads, [&](Chunk& c) {
        emitChunk(c, plan, libdevice, compact, shared);
      });
  out.timings.optimiseMs =
      forEachChunk(chunks, threads, [&](Chunk& c) { optimiseChunk(c, options, compact); });

  t0 = std::chrono::steady_clock::now();
  std::vector<llvm::Module*> modules;
  for (Chunk& c : chunks)
    modules.push_back(c.module.get());
  if (chunks.size() > 1) uniquifyLocalSymbols(modules);
  const std::string sm = ptxTarget(plan);
  forEachChunk(chunks, threads, [&](Chunk& c) { printPtx(c, sm, options.keepLlvmIr); });
  std::vector<std::string> ptx;
  for (Chunk& c : chunks) {
    ptx.push_back(std::move(c.ptx));
    for (CompiledKernel& k : c.kernels)
      out.kernels.push_back(std::move(k));
    if (!options.keepLlvmIr) continue;
    if (chunks.size() > 1)
      out.llvmIr +=
          fmt::format("; ---- plan steps {} to {} (module {} of {}) ----\n", c.steps.begin,
                      c.steps.end - 1, &c - chunks.data() + 1, chunks.size());
    out.llvmIr += c.llvmIr;
  }
  out.ptx = annotateKernels(numberCallSequences(mergePtxModules(ptx)), plan);
  out.timings.ptxMs = msSince(t0);
  spdlog::info("codegen: {} kernel(s) for {} as {} module(s) on {} thread(s): LLVM IR {:.1f} ms, "
               "optimise {:.1f} ms, PTX {:.1f} ms{}{}",
               out.kernels.size(), plan.device.smName(), out.timings.modules, threads,
               out.timings.llvmIrMs, out.timings.optimiseMs, out.timings.ptxMs,
               libdevice.empty() ? "" : " (libdevice)",
               compact ? fmt::format(" (compact: math as calls, O2, no unrolling; {} library "
                                     "kernel(s) share another's entry)",
                                     shared.size())
                       : "");
  return out;
}

} // namespace weft::codegen
