#include "runtime/cuda/cublaslt_choice.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "weft/error.h"

namespace weft::runtime::cuda::lt {

ProviderMode parseProviderMode(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t.empty() || t == "auto") return ProviderMode::Auto;
  if (t == "weft") return ProviderMode::Weft;
  if (t == "cublaslt") return ProviderMode::CublasLt;
  throw InputError(
      fmt::format("WEFT_GEMM_PROVIDER={}: expected auto, weft or cublaslt", text));
}

ProviderMode providerModeFromEnvironment() {
  const char* env = std::getenv("WEFT_GEMM_PROVIDER");
  return parseProviderMode(env ? env : "");
}

double medianMs(std::vector<double> ms) {
  if (ms.empty()) return 0;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

ProviderChoice chooseProvider(const std::string& step, const std::vector<double>& weftMs,
                              const std::vector<double>& libraryMs, ProviderMode mode) {
  ProviderChoice c;
  c.step = step;
  if (mode != ProviderMode::Auto) {
    c.library = mode == ProviderMode::CublasLt;
    c.why = c.library ? "WEFT_GEMM_PROVIDER=cublaslt" : "WEFT_GEMM_PROVIDER=weft";
    return c;
  }
  if (weftMs.empty() || libraryMs.empty()) {
    c.why = "not measured";
    return c;
  }
  c.measured = true;
  c.weftUs = medianMs(weftMs) * 1e3;
  c.libraryUs = medianMs(libraryMs) * 1e3;
  c.library = c.libraryUs < c.weftUs;
  return c;
}

std::string ProviderChoice::str() const {
  if (!measured) return fmt::format("{}: {} ({})", step, library ? "cublasLt" : "weft", why);
  return fmt::format("{}: cublasLt {:.1f} us vs weft {:.1f} us → {}", step, libraryUs, weftUs,
                     library ? "cublasLt" : "weft");
}

} // namespace weft::runtime::cuda::lt
