#pragma once
// libdevice: NVIDIA's bitcode math library (nvvm/libdevice/libdevice.10.bc of a CUDA toolkit).
#include <string>

namespace llvm {
class Module;
}

namespace weft::codegen {

/// The first of: `explicitPath` (CodegenOptions::libdevicePath), $WEFT_LIBDEVICE, the CMake
/// cache variable WEFT_LIBDEVICE (compiled in), $CUDA_HOME/nvvm/libdevice/libdevice.10.bc,
/// /usr/local/cuda/nvvm/libdevice/libdevice.10.bc — that exists. "" when none does.
std::string findLibdevice(const std::string& explicitPath = "");

/// Links the libdevice functions `m` calls (Linker::LinkOnlyNeeded), internalizes everything
/// but the kernels and weft_grid_barrier, removes what is unused (global DCE) and sets the
/// module flag nvvm-reflect-ftz = 0 (IEEE denormals) for NVVMReflect. `asCalls`
/// (compactCode, compile.h): the linked functions are noinline instead of libdevice's
/// alwaysinline, so each is compiled once and called. Throws weft::Error when the file cannot
/// be read or linked.
void linkLibdevice(llvm::Module& m, const std::string& path, bool asCalls = false);

} // namespace weft::codegen
