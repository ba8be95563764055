#pragma once
// Helpers shared by the simulator tests: a sim device on the H100 profile, typed buffers,
// and PTX files from test/sim/ptx.
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/ptx_parser.h"
#include "sim/sim_device.h"
#include "weft/device.h"
#include "weft/device_spec.h"
#include "weft/error.h"

namespace weft::sim::test {

inline DeviceSpec h100() {
  DeviceSpec s; // the defaults of DeviceSpec are the H100 profile
  s.name = "h100";
  return s;
}

/// Parses PTX with global variables placed at 256-byte aligned addresses from 0x10000.
inline Program parse(const std::string& ptx) {
  uint64_t next = 0x10000;
  return parsePtx(ptx, [&](uint64_t bytes) {
    uint64_t a = next;
    next += (bytes + 255) / 256 * 256;
    return a;
  });
}

/// The DeviceError `f` throws, as its message; "" when it throws none.
inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const weft::DeviceError& e) {
    return e.what();
  }
  return "";
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

inline LaunchConfig grid1D(uint32_t blocks, uint32_t threads, bool cooperative = false,
                           uint32_t dyn = 0) {
  LaunchConfig c;
  c.grid.x = blocks;
  c.block.x = threads;
  c.cooperative = cooperative;
  c.dynamicSharedBytes = dyn;
  return c;
}

/// Runs `kernel` of a PTX text once and returns its counters.
inline LaunchCounters runPtx(Device& dev, const std::string& ptx, const std::string& kernel,
                             const LaunchConfig& cfg, const std::vector<KernelArg>& args) {
  ModuleHandle m = dev.loadModule(ptx);
  KernelHandle k = dev.getKernel(m, kernel);
  dev.takeCounters();
  dev.launch(k, cfg, args);
  auto c = dev.takeCounters();
  return c.at(0);
}

} // namespace weft::sim::test

namespace weft::sim::test {

/// A kernel `t(.param .u64 t_out)` whose threads each own `slots` 8-byte result slots at
/// %rd2 = out + tid.x * slots * 8. Declared registers: %p0-7, %h0-15 (b16), %r0-31 (b32),
/// %f0-31 (f32), %rd0-31 (b64; %rd0-%rd2 taken), %fd0-15 (f64). %r0 = tid.x.
inline std::string scalarKernel(const std::string& body, int slots, const std::string& decls = "") {
  return ".version 8.5\n.target sm_80\n.address_size 64\n" + decls +
         "\n.visible .entry t(.param .u64 t_out)\n{\n"
         "  .reg .pred %p<8>;\n  .reg .b16 %h<16>;\n  .reg .b32 %r<32>;\n  .reg .f32 %f<32>;\n"
         "  .reg .b64 %rd<32>;\n  .reg .f64 %fd<16>;\n"
         "  ld.param.u64 %rd0, [t_out];\n  mov.u32 %r0, %tid.x;\n"
         "  mul.wide.u32 %rd1, %r0, " +
         std::to_string(slots * 8) +
         ";\n"
         "  add.s64 %rd2, %rd0, %rd1;\n" +
         body + "\n  ret;\n}\n";
}

/// Runs scalarKernel(body) with `threads` threads and returns all slots (thread-major).
inline std::vector<uint64_t> runScalar(const std::string& body, int slots, int threads = 1,
                                       const std::string& decls = "") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(slots * threads));
  runPtx(*dev, scalarKernel(body, slots, decls), "t", grid1D(1, uint32_t(threads)), {out.arg()});
  return out.get();
}

inline uint64_t fbits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
inline uint64_t dbits(double d) {
  uint64_t u;
  __builtin_memcpy(&u, &d, 8);
  return u;
}
inline float asFloat(uint64_t v) {
  uint32_t u = uint32_t(v);
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
inline double asDouble(uint64_t v) {
  double d;
  __builtin_memcpy(&d, &v, 8);
  return d;
}

} // namespace weft::sim::test
