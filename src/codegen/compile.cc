// codegen's pipeline, top to bottom: emit every step of the plan into one LLVM module, link
// libdevice, optimise (O3, new pass manager, NVPTX's own callbacks included), and print PTX
// with the NVPTX backend for the plan's sm_XX.
#include "codegen/compile.h"

#include <chrono>
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
#include "weft/error.h"

namespace weft::codegen {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";
// The newest PTX ISA LLVM 19 writes; CUDA 13's ptxas (PTX 9.0) accepts it.
constexpr const char* kPtxFeature = "+ptx85";

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<llvm::TargetMachine> nvptxMachine(const DeviceSpec& device) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!target) throw Error("LLVM has no NVPTX target: " + err);
  llvm::TargetOptions opts;
  auto* tm =
      target->createTargetMachine(kTriple, device.smName(), kPtxFeature, opts, llvm::Reloc::PIC_,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive);
  if (!tm) throw Error("LLVM cannot target " + device.smName());
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

void optimise(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string printModule(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

} // namespace

CompiledModule compileToPtx(const fusion::FusionPlan& plan, const CodegenOptions& options) {
  CompiledModule out;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<llvm::TargetMachine> tm = nvptxMachine(plan.device);
  llvm::LLVMContext ctx;
  llvm::Module m("weft", ctx);
  m.setTargetTriple(kTriple);
  m.setDataLayout(tm->createDataLayout());
  m.addModuleFlag(llvm::Module::Override, "weft.sm", uint32_t(plan.device.computeCapability));

  std::string libdevice = options.useLibdevice ? findLibdevice(options.libdevicePath) : "";
  bool useLibdevice = !libdevice.empty();
  if (options.useLibdevice && !useLibdevice)
    spdlog::debug("codegen: no libdevice found; using weft's own math");

  for (size_t i = 0; i < plan.steps.size(); ++i) {
    EmittedKernel k = std::holds_alternative<fusion::KernelPlan>(plan.steps[i])
                          ? emitKernel(m, plan, int(i), useLibdevice)
                          : emitLibraryKernel(m, plan, int(i), useLibdevice);
    out.kernels.push_back(std::move(k.info));
  }
  std::string broken;
  llvm::raw_string_ostream bos(broken);
  if (llvm::verifyModule(m, &bos))
    throw Error("codegen produced invalid LLVM IR (a weft bug): " + broken + "\n" + printModule(m));
  if (useLibdevice)
    linkLibdevice(m, libdevice);
  else
    m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  out.timings.llvmIrMs = msSince(t0);

  auto t1 = std::chrono::steady_clock::now();
  if (options.optimise) optimise(m, *tm);
  out.timings.optimiseMs = msSince(t1);
  if (options.keepLlvmIr) out.llvmIr = printModule(m);

  auto t2 = std::chrono::steady_clock::now();
  llvm::SmallString<0> ptx;
  {
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      throw Error("the NVPTX backend cannot emit PTX for " + plan.device.smName());
    pm.run(m);
  }
  out.ptx = std::string(ptx.str());
  out.timings.ptxMs = msSince(t2);
  spdlog::info(
      "codegen: {} kernel(s) for {}: LLVM IR {:.1f} ms, optimise {:.1f} ms, PTX {:.1f} ms{}",
      out.kernels.size(), plan.device.smName(), out.timings.llvmIrMs, out.timings.optimiseMs,
      out.timings.ptxMs, useLibdevice ? " (libdevice)" : "");
  return out;
}

} // namespace weft::codegen
