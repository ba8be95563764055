#pragma once
// cuBLASLt as a second kernel provider for a bound program's GEMM steps on the cuda device.
// The Executable asks for one per program it binds; on any other device, without cuBLASLt
// (cublaslt_api.h), under WEFT_GEMM_PROVIDER=weft or with no eligible step (cublaslt_gemm.h)
// there is none and every kernel is weft's. Otherwise, the first time a binding reaches an
// eligible step, weft's kernel and cuBLASLt's best heuristic algorithm are each timed a few
// times on the device's stream (after a warm-up) and the faster runs that step from then on
// (cublaslt_choice.h); the choice is logged at info level and named by Executable::time.
// This header does not need cuda.h: a weft built without the toolkit has no provider.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "fusion/fusion_plan.h"
#include "weft/device.h"
#include "weft/graph.h"

namespace weft::runtime::cuda {

/// Whether `device` runs plain GEMM steps on cuBLASLt where faster: the cuda device, with
/// cuBLASLt loadable and WEFT_GEMM_PROVIDER not "weft" (DeviceSpec::gemmLibrary). Loads the
/// library (once per process), so it is asked only for a graph with dots.
bool gemmLibraryAvailable(Device& device);

class LibraryGemms {
public:
  /// The provider for a program of `plan` whose kernels are `kernels` (one per launch, in
  /// launch order), or null (see above). `tf32`: f32 GEMMs may round their inputs to tf32, as
  /// the program was compiled to allow. Throws InputError for a WEFT_GEMM_PROVIDER it does not
  /// know.
  static std::unique_ptr<LibraryGemms> make(Device& device, const fusion::FusionPlan& plan,
                                            const std::vector<codegen::CompiledKernel>& kernels,
                                            bool tf32);
  virtual ~LibraryGemms() = default;

  /// Runs launch `kernel` of the program: `weft` (its own kernel) or cuBLASLt as chosen for
  /// `binding`, choosing first when it has not (never while capturing: then weft's kernel
  /// runs). `buffers`: the plan's buffer pointers for this run.
  virtual void launch(size_t kernel, const std::function<void()>& weft,
                      const std::vector<DevicePtr>& buffers, const Binding& binding) = 0;
  /// Whether every eligible step has its provider for `binding` (choices are made on a plain
  /// run: a capture cannot time).
  virtual bool decided(const Binding& binding) const = 0;
  /// Whether cuBLASLt runs launch `kernel` under `binding` (it has no node of weft's kernel in
  /// a captured graph).
  virtual bool serves(size_t kernel, const Binding& binding) const = 0;
  /// What a captured graph's cuBLASLt nodes hold (each served step's pointers, and the
  /// binding; "" when cuBLASLt serves no step): a graph captured under another key must be
  /// captured again.
  virtual std::string captureKey(const std::vector<DevicePtr>& buffers,
                                 const Binding& binding) const = 0;
  /// The name Executable::time shows for launch `kernel`: its own, and where a choice was
  /// made, the choice ("lib3_q0 [cublasLt 41.2 us vs weft 55.0 us → cublasLt]").
  virtual std::string timedName(size_t kernel, const std::string& name,
                                const Binding& binding) const = 0;
};

} // namespace weft::runtime::cuda
