#pragma once
// The `cuda` device: weft's Device on a real GPU through the CUDA Driver API, which is
// loaded at run time (dlopen "libcuda.so.1"), so weft builds and runs without CUDA. This
// header does not need cuda.h; a weft built without the toolkit's headers still provides
// these functions and they say so.
#include <memory>
#include <string>

#include "weft/device.h"

namespace weft::runtime::cuda {

/// The cuda device for GPU `ordinal`: the driver loaded and initialised, the device's
/// primary context retained, a stream created and the DeviceSpec read from the device's
/// attributes. Throws DeviceError with one line saying why not, e.g.
/// "no CUDA driver found (libcuda.so.1: cannot open shared object file: No such file or
/// directory)".
std::unique_ptr<Device> makeCudaDevice(int ordinal = 0);
/// The same, dlopen'ing `driverLibrary` instead of libcuda.so.1 (a path or a soname).
std::unique_ptr<Device> makeCudaDevice(int ordinal, const std::string& driverLibrary);

/// True when the driver loads, initialises and sees at least one GPU; otherwise false and,
/// when `why` is given, the reason in one line. Never throws.
bool cudaDriverAvailable(std::string* why);
bool cudaDriverAvailable(std::string* why, const std::string& driverLibrary);

/// `device.loadModule(ptx)`, except that a cuda device keeps the cubins beside the compile
/// cache `compileCacheDir` (CompileOptions::cacheDir; "off": none), unless WEFT_CUBIN_CACHE
/// says otherwise (cuda_device_impl.h, cubinCacheFor).
ModuleHandle loadModule(Device& device, const std::string& ptx,
                        const std::string& compileCacheDir);

/// Gives the cached free device memory of a cuda device back to the driver; returns the
/// bytes released (0 for any other device).
size_t trimDeviceMemoryCache(Device& device);

} // namespace weft::runtime::cuda
