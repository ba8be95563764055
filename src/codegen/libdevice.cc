#include "codegen/libdevice.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include "codegen/grid_barrier.h"
#include "weft/error.h"

#ifndef WEFT_LIBDEVICE_DEFAULT
#define WEFT_LIBDEVICE_DEFAULT ""
#endif

namespace weft::codegen {
namespace {

bool exists(const std::string& p) {
  std::error_code ec;
  return !p.empty() && std::filesystem::is_regular_file(p, ec);
}

/// The file's bytes, read once per process (modules are loaded lazily from them).
const llvm::MemoryBuffer& libdeviceBytes(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[path];
  if (!slot) {
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf) throw Error("cannot read libdevice " + path + ": " + buf.getError().message());
    slot = std::move(*buf);
  }
  return *slot;
}

} // namespace

std::string findLibdevice(const std::string& explicitPath) {
  if (!explicitPath.empty()) return exists(explicitPath) ? explicitPath : "";
  const char* rel = "nvvm/libdevice/libdevice.10.bc";
  if (const char* env = std::getenv("WEFT_LIBDEVICE"); env && exists(env)) return env;
  if (exists(WEFT_LIBDEVICE_DEFAULT)) return WEFT_LIBDEVICE_DEFAULT;
  if (const char* home = std::getenv("CUDA_HOME"); home && exists(std::string(home) + "/" + rel))
    return std::string(home) + "/" + rel;
  std::string dflt = std::string("/usr/local/cuda/") + rel;
  return exists(dflt) ? dflt : "";
}

void linkLibdevice(llvm::Module& m, const std::string& path, bool asCalls) {
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  bool callsLibdevice = false;
  for (const llvm::Function& f : m)
    callsLibdevice = callsLibdevice || (f.isDeclaration() && f.getName().starts_with("__nv_"));
  if (!callsLibdevice) return;
  auto lib = llvm::getLazyBitcodeModule(libdeviceBytes(path).getMemBufferRef(), m.getContext());
  if (!lib) throw Error("cannot parse libdevice " + path + ": " + llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    throw Error("cannot link libdevice " + path + " into the kernels' module");
  // Keep kernels (external definitions that are not libdevice's), the grid barrier and the
  // last-block handoff.
  llvm::internalizeModule(m, [](const llvm::GlobalValue& gv) {
    if (gv.getName() == kGridBarrierName || gv.getName() == kLastBlockName) return true;
    if (gv.getName() == "weft_dynamic_shared") return true;
    const auto* f = llvm::dyn_cast<llvm::Function>(&gv);
    return f && !f->isDeclaration() && !f->getName().starts_with("__nv_") && !f->hasLocalLinkage();
  });
  llvm::ModuleAnalysisManager mam;
  mam.registerPass([] { return llvm::PassInstrumentationAnalysis(); });
  llvm::GlobalDCEPass().run(m, mam);
  if (!asCalls) return;
  // libdevice marks its functions alwaysinline; as calls, each is one function of the module.
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && f.getName().starts_with("__nv_")) {
      f.removeFnAttr(llvm::Attribute::AlwaysInline);
      f.addFnAttr(llvm::Attribute::NoInline);
    }
}

} // namespace weft::codegen
