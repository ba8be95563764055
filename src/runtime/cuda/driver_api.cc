#include "runtime/cuda/driver_api.h"

#include <dlfcn.h>

#include <array>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "weft/error.h"

namespace weft::runtime::cuda {
namespace {

#define WEFT_CUDA_STRINGIFY_EXPANDED(x) WEFT_CUDA_STRINGIFY(x)
#define WEFT_CUDA_STRINGIFY(x) #x

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

/// Resolves one entry point. `base` is the name cuGetProcAddress knows ("cuMemAlloc"),
/// `versioned` the exported symbol cuda.h maps it to ("cuMemAlloc_v2"), tried first by dlsym.
void* resolve(void* lib, GetProcAddressFn getProcAddress, const char* base, const char* versioned,
              const std::string& library) {
  if (getProcAddress) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r =
        getProcAddress(base, &fn, kDriverAbiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    if (r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && fn) return fn;
    if (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
      throw DeviceError(
          fmt::format("the CUDA driver in {} is too old: {} needs a driver for CUDA {}.{} or newer",
                      library, base, kDriverAbiVersion / 1000, kDriverAbiVersion % 1000 / 10));
    // fall through to dlsym: some driver shims export symbols without answering for them
  }
  if (void* fn = dlsym(lib, versioned)) return fn;
  if (void* fn = dlsym(lib, base)) return fn;
  throw DeviceError(fmt::format(
      "the CUDA driver in {} has no entry point {} ({}); it is older than CUDA {}.{} or "
      "not a CUDA driver",
      library, base, versioned, kDriverAbiVersion / 1000, kDriverAbiVersion % 1000 / 10));
}

std::shared_ptr<const DriverApi> openDriver(const std::string& library) {
  dlerror();
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    throw DeviceError(
        fmt::format("no CUDA driver found ({})", why ? why : library + ": dlopen failed"));
  }
  // cuGetProcAddress_v2 (CUDA 12+) hands out the entry point of the ABI we ask for; without
  // it, the versioned symbol names cuda.h uses are looked up directly.
  auto getProcAddress = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  auto api = std::make_shared<DriverApi>();
  api->library = library;
  api->viaGetProcAddress = getProcAddress != nullptr;
#define WEFT_CUDA_DRIVER_RESOLVE(fn)                                                               \
  api->fn = reinterpret_cast<decltype(api->fn)>(                                                   \
      resolve(lib, getProcAddress, #fn, WEFT_CUDA_STRINGIFY_EXPANDED(fn), library));
  WEFT_CUDA_DRIVER_ENTRIES(WEFT_CUDA_DRIVER_RESOLVE)
#undef WEFT_CUDA_DRIVER_RESOLVE
  // The library is deliberately never dlclose'd: the driver keeps threads and state alive
  // until exit, and devices may outlive any one owner of the table.
  return api;
}

} // namespace

std::shared_ptr<const DriverApi> loadDriverApi(const std::string& library) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const DriverApi>> loaded;
  std::lock_guard lock(mutex);
  auto it = loaded.find(library);
  if (it != loaded.end()) return it->second;
  auto api = openDriver(library); // a failure is not cached: the next call tries again
  loaded.emplace(library, api);
  return api;
}

namespace {
/// Names for the codes of a driver that cannot name them itself: the ones a stub, missing
/// or mismatched driver answers with before anything else works.
const char* const* unusableDriverCode(CUresult result) {
  static const std::map<CUresult, std::array<const char*, 2>> codes = {
      {CUDA_ERROR_STUB_LIBRARY, {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"}},
      {CUDA_ERROR_NO_DEVICE, {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"}},
      {CUDA_ERROR_NOT_INITIALIZED, {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"}},
      {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
       {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        "system has unsupported display driver / cuda driver combination"}},
      {CUDA_ERROR_DEVICE_UNAVAILABLE,
       {"CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or "
                                         "unavailable"}},
  };
  auto it = codes.find(result);
  return it == codes.end() ? nullptr : it->second.data();
}
} // namespace

std::string describeResult(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (!api.cuGetErrorName || api.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) {
    if (const char* const* known = unusableDriverCode(result))
      return fmt::format("{} ({})", known[0], known[1]);
    return fmt::format("CUresult {}", static_cast<int>(result));
  }
  if (!api.cuGetErrorString || api.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    return name;
  return fmt::format("{} ({})", name, text);
}

void check(const DriverApi& api, CUresult result, const char* call, const std::string& detail) {
  if (result == CUDA_SUCCESS) return;
  std::string message = fmt::format("{} failed: {}", call, describeResult(api, result));
  if (!detail.empty()) message += ": " + detail;
  throw DeviceError(message);
}

} // namespace weft::runtime::cuda
