#include "runtime/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weft/error.h"

namespace weft::runtime::cuda::lt {
namespace {

/// Opens `library` and resolves every entry point into a table; "" and the table, or the
/// reason it cannot serve (the library stays loaded only when it serves).
std::shared_ptr<const Api> open(const std::string& library, std::string& why) {
  dlerror();
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    why = e ? e : library + ": dlopen failed";
    return nullptr;
  }
  auto api = std::make_shared<Api>();
  api->library = library;
  std::vector<std::string> missing;
#define WEFT_CUBLASLT_RESOLVE(name, result, params)                                                \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(lib, #name));                            \
  if (!api->name) missing.push_back(#name);
  WEFT_CUBLASLT_ENTRIES(WEFT_CUBLASLT_RESOLVE)
#undef WEFT_CUBLASLT_RESOLVE
  if (!missing.empty()) {
    why = fmt::format("{}: no {}", library, fmt::join(missing, ", "));
    dlclose(lib);
    return nullptr;
  }
  api->cublasLtGetStatusName =
      reinterpret_cast<decltype(api->cublasLtGetStatusName)>(dlsym(lib, "cublasLtGetStatusName"));
  // Never dlclose'd: handles and the kernels it loaded live as long as the process.
  return api;
}

} // namespace

std::vector<std::string> defaultLibraries() {
  return {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
}

Loaded load(const std::vector<std::string>& libraries) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, Loaded> loaded;
  std::lock_guard lock(mutex);
  if (auto it = loaded.find(libraries); it != loaded.end()) return it->second;
  Loaded result;
  std::vector<std::string> reasons;
  for (const std::string& library : libraries) {
    std::string why;
    result.api = open(library, why);
    if (result.api) break;
    reasons.push_back(why);
  }
  if (!result.api)
    result.why = libraries.empty() ? "no cuBLASLt library to try"
                                   : fmt::format("no cuBLASLt found ({})", fmt::join(reasons, "; "));
  loaded.emplace(libraries, result);
  return result;
}

Loaded load() {
  const char* env = std::getenv("WEFT_CUBLASLT_LIBRARY");
  if (env && std::string(env) == "off")
    return {nullptr, "cuBLASLt is off (WEFT_CUBLASLT_LIBRARY=off)"};
  if (env && *env) return load(std::vector<std::string>{env});
  return load(defaultLibraries());
}

std::string describeStatus(const Api& api, Status status) {
  if (api.cublasLtGetStatusName)
    if (const char* name = api.cublasLtGetStatusName(status); name && *name) return name;
  return fmt::format("cublasStatus_t {}", status);
}

void check(const Api& api, Status status, const char* call) {
  if (status != kStatusSuccess)
    throw DeviceError(fmt::format("{} failed: {}", call, describeStatus(api, status)));
}

} // namespace weft::runtime::cuda::lt
