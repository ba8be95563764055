#pragma once
// codegen's entry point: a FusionPlan's kernels → one LLVM module → optimised (O3) → PTX text
// from LLVM 19's NVPTX backend for the plan's DeviceSpec, plus what the runtime needs to
// launch each kernel.
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"

namespace weft::codegen {

/// One kernel parameter, in declaration order.
struct KernelParam {
  enum class Kind : uint8_t {
    Buffer,      // pointer to FusionPlan::buffers[buffer]
    Symbol,      // i64 size of a symbolic dim, bound at launch
    BarrierState // pointer to a zeroed device word block used by grid barriers (see grid_barrier.h)
  };
  Kind kind = Kind::Buffer;
  int buffer = -1;    // for Buffer
  std::string symbol; // for Symbol
};

struct CompiledKernel {
  std::string name; // the .entry name in the PTX
  std::vector<KernelParam> params;
  fusion::LaunchPlan launch;       // copied from the KernelPlan (grid evaluated at launch)
  uint32_t dynamicSharedBytes = 0; // passed as LaunchConfig::dynamicSharedBytes
  int planStep = -1;               // index into FusionPlan::steps
};

struct CompileTimings {
  double llvmIrMs = 0, optimiseMs = 0, ptxMs = 0;
};

struct CompiledModule {
  std::string ptx;
  std::string llvmIr;                  // after optimisation, when CodegenOptions::keepLlvmIr
  std::vector<CompiledKernel> kernels; // one per KernelPlan (and per generated library kernel)
  CompileTimings timings;
};

struct CodegenOptions {
  bool keepLlvmIr = false;
  bool optimise = true;      // O3; off only for debugging codegen
  std::string libdevicePath; // "" = find through CUDA_HOME, /usr/local/cuda, or WEFT_LIBDEVICE
  bool useLibdevice = true;  // false: weft's own math implementations
};

/// Throws weft::Error (with the kernel and op named) for plans codegen cannot emit, e.g. an
/// unsupported dtype combination or a shape too large for the chosen mapping.
CompiledModule compileToPtx(const fusion::FusionPlan& plan, const CodegenOptions& options = {});

} // namespace weft::codegen
