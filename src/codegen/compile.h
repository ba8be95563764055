#pragma once
// codegen's entry point: a FusionPlan's kernels → LLVM modules of contiguous steps, compiled on
// a pool of threads → optimised (O3) → PTX text from LLVM 19's NVPTX backend for the plan's
// DeviceSpec, joined into one PTX module, plus what the runtime needs to launch each kernel.
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "weft/compile_options.h"

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

/// Wall-clock times of codegen's three steps: emitting the kernels as LLVM IR and linking
/// libdevice, O3, and NVPTX → PTX (with joining the modules' PTX). Every module finishes a step
/// before any starts the next, so each time is the step's time over all threads, and their sum
/// is codegen's time to PTX; the CPU time spent is up to `threads` times as much.
struct CompileTimings {
  double llvmIrMs = 0, optimiseMs = 0, ptxMs = 0;
  int modules = 1; // LLVM modules the plan's steps were split into (parallel_compile.h)
  int threads = 1; // threads that compiled them
};

struct CompiledModule {
  std::string ptx;
  /// After optimisation, when CodegenOptions::keepLlvmIr: with several modules, each in step
  /// order after a "; ---- plan steps A to B" line (a listing, not one module llc would read;
  /// CodegenOptions::threads = 1 gives one).
  std::string llvmIr;
  std::vector<CompiledKernel> kernels; // one per KernelPlan (and per generated library kernel)
  CompileTimings timings;
};

// Codegen's switches are public (weft/compile_options.h); codegen names them as its own.
using weft::CodegenOptions;

/// Plans of graphs of at least this many nodes compile for code size (compactCode); the bound
/// at which planning, too, keeps one version (fusion/plan_versions.h, kMaxVersionedOps).
inline constexpr int64_t kCompactCodeOps = 2000;

/// Whether a plan is big enough to compile for code size: each math function (libdevice's made
/// noinline; weft's own exp, log, tanh and erf as internal functions weft_exp_f32, ...) compiled
/// once per LLVM module and called instead of inlined at every use, the O2 pipeline without
/// loop unrolling, and NVPTX's default codegen level instead of the aggressive one.
/// graph_10000: less than half the CPU to PTX for 4% more modeled time from the calls
/// (docs/performance.md); the suite's other graphs (at most 448 nodes) compile as before.
bool compactCode(const fusion::FusionPlan& plan);

/// Throws weft::Error (with the kernel and op named) for plans codegen cannot emit, e.g. an
/// unsupported dtype combination or a shape too large for the chosen mapping: the error of the
/// first such step, on any number of threads. The emitters run on several threads at once, each
/// on a module of its own, so they must keep no mutable state outside it.
CompiledModule compileToPtx(const fusion::FusionPlan& plan, const CodegenOptions& options = {});

/// The PTX target (.target, and LLVM's NVPTX CPU) a plan compiles for: the device's sm_XX, or
/// its architecture-specific sm_XXa when a GEMM runs on instructions only that has (wgmma:
/// sm_90a). ptxas must assemble such PTX for the same sm_XXa (runPtxas does).
std::string ptxTarget(const fusion::FusionPlan& plan);

} // namespace weft::codegen
