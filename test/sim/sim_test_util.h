#pragma once
// Helpers shared by the simulator tests: a sim device on the H100 profile, typed buffers,
// and PTX files from test/sim/ptx.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/sim_device.h"
#include "weft/device.h"
#include "weft/device_spec.h"

namespace weft::sim::test {

inline DeviceSpec h100() {
  DeviceSpec s; // the defaults of DeviceSpec are the H100 profile
  s.name = "h100";
  return s;
}

inline std::string readPtx(const std::string& name) {
  std::ifstream f(std::string(WEFT_SOURCE_DIR) + "/test/sim/ptx/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A device buffer holding a std::vector<T>.
template <class T> struct Buffer {
  Device& dev;
  DevicePtr ptr = 0;
  size_t count = 0;
  Buffer(Device& d, const std::vector<T>& host) : dev(d), count(host.size()) {
    ptr = dev.allocate(count * sizeof(T));
    dev.copyToDevice(ptr, host.data(), count * sizeof(T));
  }
  Buffer(Device& d, size_t n) : dev(d), count(n) {
    ptr = dev.allocate(n * sizeof(T));
    dev.memset(ptr, 0, n * sizeof(T));
  }
  ~Buffer() { dev.free(ptr); }
  std::vector<T> get() const {
    std::vector<T> r(count);
    dev.copyToHost(r.data(), ptr, count * sizeof(T));
    return r;
  }
  KernelArg arg() const { return KernelArg::pointer(ptr); }
};

inline LaunchConfig grid1D(uint32_t blocks, uint32_t threads, bool cooperative = false, uint32_t dyn = 0) {
  LaunchConfig c;
  c.grid.x = blocks;
  c.block.x = threads;
  c.cooperative = cooperative;
  c.dynamicSharedBytes = dyn;
  return c;
}

/// Runs `kernel` of a PTX text once and returns its counters.
inline LaunchCounters runPtx(Device& dev, const std::string& ptx, const std::string& kernel, const LaunchConfig& cfg,
                             const std::vector<KernelArg>& args) {
  ModuleHandle m = dev.loadModule(ptx);
  KernelHandle k = dev.getKernel(m, kernel);
  dev.takeCounters();
  dev.launch(k, cfg, args);
  auto c = dev.takeCounters();
  return c.at(0);
}

} // namespace weft::sim::test
