#pragma once
// The CUDA Driver API as weft uses it: a table of entry points resolved at run time from
// the driver library (dlopen, then cuGetProcAddress_v2, else dlsym), so weft never links
// libcuda and runs where there is none. Every device call goes through a DriverApi, which
// lets tests substitute fake entry points. Only compiled when the toolkit's cuda.h is found.
#include <cuda.h>

#include <memory>
#include <string>

namespace weft::runtime::cuda {

/// The driver library dlopen'ed by default.
inline constexpr const char* kDriverLibrary = "libcuda.so.1";

/// The CUDA version whose entry-point ABIs the table holds (asked of cuGetProcAddress); a
/// driver older than this is refused with a message saying so.
inline constexpr int kDriverAbiVersion = 12000;

// X(name): every entry point weft calls, by its base name. cuda.h maps some base names to
// versioned symbols (cuMemAlloc → cuMemAlloc_v2); the member and its type follow that
// mapping, and cuGetProcAddress is asked for the base name at kDriverAbiVersion, which
// returns that same version.
#define WEFT_CUDA_DRIVER_ENTRIES(X)                                                                \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)                                                                             \
  X(cuMemsetD8Async)                                                                               \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleLoadData)                                                                              \
  X(cuLinkCreate)                                                                                  \
  X(cuLinkAddData)                                                                                 \
  X(cuLinkComplete)                                                                                \
  X(cuLinkDestroy)                                                                                 \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncGetAttribute)                                                                            \
  X(cuFuncSetAttribute)                                                                            \
  X(cuLaunchKernel)                                                                                \
  X(cuLaunchCooperativeKernel)                                                                     \
  X(cuLaunchKernelEx)                                                                              \
  X(cuOccupancyMaxActiveClusters)                                                                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                   \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuStreamBeginCapture)                                                                          \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiateWithFlags)                                                                   \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphGetNodes)                                                                               \
  X(cuGraphNodeGetType)                                                                            \
  X(cuGraphKernelNodeGetParams)                                                                    \
  X(cuGraphExecKernelNodeSetParams)                                                                \
  X(cuGraphExecDestroy)                                                                            \
  X(cuGraphDestroy)

/// One function pointer per entry point, typed by cuda.h's prototype. A default-constructed
/// table is all null; tests fill one with fakes.
struct DriverApi {
#define WEFT_CUDA_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  WEFT_CUDA_DRIVER_ENTRIES(WEFT_CUDA_DRIVER_MEMBER)
#undef WEFT_CUDA_DRIVER_MEMBER
  std::string library;            // where the entry points came from ("libcuda.so.1", "fake")
  bool viaGetProcAddress = false; // resolved with cuGetProcAddress_v2 (else dlsym)
};

/// dlopens `library` and resolves every entry point. Throws DeviceError
/// "no CUDA driver found (<dlerror>)" when the library cannot be opened, and names the
/// missing entry point when one cannot be resolved. The library stays loaded for the
/// process's lifetime. Loading the same path again returns the same table.
std::shared_ptr<const DriverApi> loadDriverApi(const std::string& library = kDriverLibrary);

/// "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)", or "CUresult 218" when the
/// driver cannot name the code.
std::string describeResult(const DriverApi& api, CUresult result);

/// Throws DeviceError "<call> failed: <describeResult>" (plus ": <detail>" when given)
/// unless `result` is CUDA_SUCCESS.
void check(const DriverApi& api, CUresult result, const char* call, const std::string& detail = {});

} // namespace weft::runtime::cuda
