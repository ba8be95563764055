// makeDevice(): picks the device a user asked for. "auto" prefers a real GPU and falls back
// to the simulator with a one-line notice on stderr.
#include <fmt/format.h>
#include <iostream>

#include "sim/sim_device.h"
#include "weft/device.h"
#include "weft/error.h"
#ifdef WEFT_HAVE_CUDA_DEVICE
#include "runtime/cuda/cuda_device.h"
#endif

namespace weft {

std::unique_ptr<Device> makeDevice(const std::string& kind, const DeviceSpec& spec) {
  if (kind == "sim") return sim::makeSimDevice(spec);
  if (kind == "cuda") {
#ifdef WEFT_HAVE_CUDA_DEVICE
    return runtime::cuda::makeCudaDevice(0);
#else
    throw DeviceError("the cuda device is not available: weft was built without it");
#endif
  }
  if (kind == "auto") {
#ifdef WEFT_HAVE_CUDA_DEVICE
    std::string why;
    if (runtime::cuda::cudaDriverAvailable(&why)) return runtime::cuda::makeCudaDevice(0);
    std::cerr << "weft: " << why << "; running on the simulator (sim)\n";
#else
    std::cerr << "weft: built without the cuda device; running on the simulator (sim)\n";
#endif
    return sim::makeSimDevice(spec);
  }
  throw InputError(fmt::format("unknown device \"{}\"; use sim, cuda or auto", kind));
}

} // namespace weft
