#include "copy_baseline.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "weft/error.h"

namespace weft::bench {

CopyRun runCopyBaseline(Device& device, uint64_t compulsoryBytes, int runs) {
  CopyRun r;
  r.launch = copyLaunch(compulsoryBytes, device.spec().smCount);
  const size_t bytes = r.launch.bufferBytes;
  DevicePtr src = device.allocate(bytes), dst = 0;
  try {
    dst = device.allocate(bytes);
    std::vector<uint8_t> pattern(bytes);
    for (size_t i = 0; i < bytes; ++i)
      pattern[i] = static_cast<uint8_t>(i * 131 + 7);
    device.copyToDevice(src, pattern.data(), bytes);
    device.memset(dst, 0, bytes);
    device.takeCounters(); // earlier launches' counters are not the copy's
    KernelHandle kernel =
        device.getKernel(device.loadModule(copyKernelPtx(device.spec().computeCapability)),
                         kCopyKernelName);
    LaunchConfig config;
    config.grid.x = r.launch.grid;
    config.block.x = r.launch.block;
    const std::vector<KernelArg> args = {KernelArg::pointer(src), KernelArg::pointer(dst),
                                         KernelArg::of<uint64_t>(r.launch.vectors)};
    device.launch(kernel, config, args);
    device.synchronize();
    std::vector<LaunchCounters> counted = device.takeCounters();
    if (!counted.empty()) r.counters = counted.front();
    std::vector<double> ms;
    r.deviceClock = true;
    for (int i = 0; i < runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      device.startTimer();
      device.launch(kernel, config, args);
      std::optional<double> t = device.stopTimer();
      if (!t) {
        device.synchronize();
        r.deviceClock = false;
        t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      }
      ms.push_back(*t);
    }
    device.takeCounters();
    if (!ms.empty()) {
      std::sort(ms.begin(), ms.end());
      r.ms = ms[ms.size() / 2];
    }
  } catch (...) {
    device.free(src);
    if (dst) device.free(dst);
    throw;
  }
  device.free(src);
  device.free(dst);
  return r;
}

} // namespace weft::bench
