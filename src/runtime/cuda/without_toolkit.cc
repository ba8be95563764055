// The cuda device's entry points in a weft built without the CUDA toolkit's cuda.h
// (WEFT_USE_CUDA_TOOLKIT=OFF or no toolkit found): they say so instead of failing to link.
#include "runtime/cuda/cuda_device.h"
#include "weft/error.h"

namespace weft::runtime::cuda {
namespace {
constexpr const char* kWhy =
    "weft was built without the CUDA toolkit (no cuda.h at configure time); install it and "
    "reconfigure with -DWEFT_USE_CUDA_TOOLKIT=ON to use the cuda device";
}

std::unique_ptr<Device> makeCudaDevice(int, const std::string&) {
  throw DeviceError(kWhy);
}
std::unique_ptr<Device> makeCudaDevice(int ordinal) {
  return makeCudaDevice(ordinal, "libcuda.so.1");
}

bool cudaDriverAvailable(std::string* why, const std::string&) {
  if (why) *why = kWhy;
  return false;
}
bool cudaDriverAvailable(std::string* why) {
  return cudaDriverAvailable(why, "libcuda.so.1");
}

ModuleHandle loadModule(Device& device, const std::string& ptx, const std::string&) {
  return device.loadModule(ptx);
}

size_t trimDeviceMemoryCache(Device&) {
  return 0;
}

} // namespace weft::runtime::cuda
