#pragma once
// Which provider runs a GEMM step on the cuda device, weft's own kernel or cuBLASLt: chosen by
// measurement (the faster median of a few timed runs of each), or forced for measurements by
// WEFT_GEMM_PROVIDER=weft|cublaslt|auto. Pure logic over given timings, tested without a GPU.
#include <string>
#include <vector>

namespace weft::runtime::cuda::lt {

enum class ProviderMode { Auto, Weft, CublasLt };

/// WEFT_GEMM_PROVIDER's value: "auto" (also unset or empty), "weft", "cublaslt" (any case).
/// Throws InputError "WEFT_GEMM_PROVIDER=<v>: expected auto, weft or cublaslt" otherwise.
ProviderMode parseProviderMode(const std::string& text);
/// The mode WEFT_GEMM_PROVIDER asks for.
ProviderMode providerModeFromEnvironment();

struct ProviderChoice {
  std::string step;       // the kernel's name ("lib3_q0")
  bool library = false;   // cuBLASLt runs it
  bool measured = false;  // by timings (false: forced, or cuBLASLt could not run it)
  double weftUs = 0, libraryUs = 0; // medians, when measured
  std::string why;        // when not measured: the reason ("WEFT_GEMM_PROVIDER=cublaslt")
  /// "lib3_q0: cublasLt 41.2 us vs weft 55.0 us → cublasLt", or
  /// "lib3_q0: cublasLt (WEFT_GEMM_PROVIDER=cublaslt)", "lib3_q0: weft (<why>)"
  std::string str() const;
};

/// The median of `ms` (the upper middle of an even count); 0 for none.
double medianMs(std::vector<double> ms);

/// Auto: cuBLASLt when its median is strictly below weft's (ties keep weft's own kernel);
/// Weft / CublasLt: that one, unmeasured. Empty timings under Auto keep weft's kernel.
ProviderChoice chooseProvider(const std::string& step, const std::vector<double>& weftMs,
                              const std::vector<double>& libraryMs, ProviderMode mode);

} // namespace weft::runtime::cuda::lt
