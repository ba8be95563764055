// What the cuda device asks of the driver, in order, for each thing weft does: set up, load
// and launch, cooperative launch, the shared-memory opt-in, graph capture, replay and
// argument update, timers, copies and teardown. Checked against a fake driver.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unistd.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "fake_driver.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_device_impl.h"
#include "runtime/cuda/ptx_split.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda;
using namespace weft::runtime::cuda::testing;
using Calls = std::vector<std::string>;

namespace {
/// The calls with runs of one call collapsed ("cuDeviceGetAttribute" × 15 → once).
Calls collapsed(const Calls& calls) {
  Calls out;
  for (const std::string& c : calls)
    if (out.empty() || out.back() != c) out.push_back(c);
  return out;
}

std::vector<uint8_t> bytesOf(uint64_t v) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

/// A one-wave cooperative grid of 264 blocks of 128 threads in clusters of 4 (cluster_200's).
LaunchConfig cooperativeInClustersOf4() {
  LaunchConfig c;
  c.grid = {264, 1, 1};
  c.block = {128, 1, 1};
  c.cooperative = true;
  c.clusterSize = 4;
  return c;
}

} // namespace

TEST_CASE("the device is set up on the primary context with a stream, and reads its spec",
          "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  CHECK(collapsed(fakeDriver().calls) ==
        Calls{"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
              "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuStreamCreate"});
  const DeviceSpec& s = device.spec();
  CHECK(device.name() == "cuda:0 (Fake H100, sm_90, 132 SMs)");
  CHECK(s.name == "Fake H100");
  CHECK(s.computeCapability == 90);
  CHECK(s.smCount == 132);
  CHECK(s.maxThreadsPerSM == 2048);
  CHECK(s.maxBlocksPerSM == 32);
  CHECK(s.registersPerSM == 65536);
  CHECK(s.sharedMemoryPerSM == 228 * 1024);
  CHECK(s.sharedMemoryPerBlock == 227 * 1024);
  CHECK(s.sharedMemoryPerBlockDefault == 48 * 1024);
  CHECK(s.clockGHz == Approx(1.98));
  // 5120-bit bus × 2619 MHz × 2 transfers per clock
  CHECK(s.memoryBandwidthGBs == Approx(5120 / 8.0 * 2.619e9 * 2 / 1e9));
}

TEST_CASE("teardown waits for the stream and frees everything before releasing the context",
          "[cuda]") {
  auto api = fakeDriverApi();
  {
    CudaDevice device(api, 0);
    device.getKernel(device.loadModule("ptx"), "k");
    device.allocate(100);
    device.free(device.allocate(5000));
    device.beginCapture();
    device.endCapture();
    device.startTimer();
    device.stopTimer();
    fakeDriver().calls.clear();
  }
  CHECK(collapsed(fakeDriver().calls) ==
        Calls{"cuStreamSynchronize", "cuGraphExecDestroy", "cuGraphDestroy", "cuEventDestroy",
              "cuModuleUnload", "cuMemFree", "cuStreamDestroy", "cuDevicePrimaryCtxRelease"});
  CHECK(fakeDriver().allocations.empty());
}

TEST_CASE("load, look up and launch a kernel", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().paramSizes["scale"] = {8, 4};
  fakeDriver().jitInfoLog = "ptxas info    : Used 8 registers";
  ModuleHandle m = device.loadModule(".version 8.0 ...");
  KernelHandle k = device.getKernel(m, "scale");
  LaunchConfig c;
  c.grid = {4, 2, 1};
  c.block = {128, 1, 1};
  device.launch(k, c, {KernelArg::pointer(0xabc0), KernelArg::of<float>(2.0f)});
  device.synchronize();
  CHECK(callsSince("cuModuleLoadDataEx") == Calls{"cuModuleLoadDataEx", "cuModuleGetFunction",
                                                  "cuFuncGetAttribute", "cuLaunchKernel",
                                                  "cuStreamSynchronize"});
  REQUIRE(fakeDriver().launches.size() == 1);
  const FakeLaunch& l = fakeDriver().launches[0];
  CHECK(l.kernel == "scale");
  CHECK(l.grid[0] == 4);
  CHECK(l.grid[1] == 2);
  CHECK(l.block[0] == 128);
  CHECK_FALSE(l.cooperative);
  CHECK(l.args[0] == bytesOf(0xabc0));
  float scale = 0;
  std::memcpy(&scale, l.args[1].data(), 4);
  CHECK(scale == 2.0f);
}

TEST_CASE("a cooperative launch goes through cuLaunchCooperativeKernel", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "grid_sync");
  LaunchConfig c;
  c.grid = {264, 1, 1};
  c.block = {256, 1, 1};
  c.cooperative = true;
  fakeDriver().calls.clear();
  device.launch(k, c, {});
  CHECK(fakeDriver().calls == Calls{"cuLaunchCooperativeKernel"});
  REQUIRE(fakeDriver().launches.size() == 1);
  CHECK(fakeDriver().launches[0].cooperative);
  CHECK(fakeDriver().launches[0].grid[0] == 264);
}

TEST_CASE("a cooperative launch in clusters goes through cuLaunchKernelEx once the clusters fit",
          "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "grid_sync");
  LaunchConfig c = cooperativeInClustersOf4();
  fakeDriver().calls.clear();
  device.launch(k, c, {});
  device.launch(k, c, {}); // the occupancy answer is kept
  CHECK(fakeDriver().calls ==
        Calls{"cuOccupancyMaxActiveClusters", "cuLaunchKernelEx", "cuLaunchKernelEx"});
  REQUIRE(fakeDriver().launches.size() == 2);
  CHECK(fakeDriver().launches[0].cooperative);
  CHECK(fakeDriver().launches[0].clusterSize == 4);
  CHECK(fakeDriver().launches[0].grid[0] == 264);
}

TEST_CASE("clusters that cannot all be resident, or that the driver refuses, launch without",
          "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "grid_sync");
  LaunchConfig c = cooperativeInClustersOf4();
  fakeDriver().maxActiveClusters = 65; // 260 blocks: one cluster short of the grid
  fakeDriver().calls.clear();
  device.launch(k, c, {});
  CHECK(fakeDriver().calls == Calls{"cuOccupancyMaxActiveClusters", "cuLaunchCooperativeKernel"});
  CHECK(fakeDriver().launches.back().clusterSize == 1);

  KernelHandle other = device.getKernel(device.loadModule("ptx2"), "other");
  fakeDriver().maxActiveClusters = 66;
  fakeDriver().failures["cuLaunchKernelEx"] = CUDA_ERROR_NOT_SUPPORTED;
  fakeDriver().calls.clear();
  device.launch(other, c, {});
  device.launch(other, c, {}); // refused once: never asked again
  CHECK(fakeDriver().calls == Calls{"cuOccupancyMaxActiveClusters", "cuLaunchKernelEx",
                                    "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel"});
  CHECK(fakeDriver().launches.back().clusterSize == 1);
  CHECK(fakeDriver().launches.back().cooperative);
}

TEST_CASE("a kernel whose rows its clusters share is never launched without them", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "rows");
  LaunchConfig c;
  c.grid = {512, 1, 1};
  c.block = {1024, 1, 1};
  c.clusterSize = 4;
  c.clusterRequired = true;
  fakeDriver().calls.clear();
  device.launch(k, c, {});
  CHECK(fakeDriver().calls == Calls{"cuLaunchKernelEx"}); // no occupancy question: not cooperative
  CHECK(fakeDriver().launches.back().clusterSize == 4);
  CHECK_FALSE(fakeDriver().launches.back().cooperative);

  fakeDriver().failures["cuLaunchKernelEx"] = CUDA_ERROR_NOT_SUPPORTED;
  fakeDriver().calls.clear();
  try {
    device.launch(k, c, {});
    FAIL("a launch that needs its clusters fell back");
  } catch (const DeviceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cuLaunchKernelEx failed"));
    CHECK_THAT(e.what(), Catch::Contains("clusters of 4"));
  }
  CHECK(fakeDriver().calls == Calls{"cuLaunchKernelEx"});
}

TEST_CASE("dynamic shared memory above 48 KiB is opted in once per kernel and size", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().staticSharedBytes["with_static"] = 16 * 1024;
  ModuleHandle m = device.loadModule("ptx");
  KernelHandle k = device.getKernel(m, "k");
  KernelHandle s = device.getKernel(m, "with_static");
  LaunchConfig c;
  fakeDriver().calls.clear();

  c.dynamicSharedBytes = 40 * 1024; // fits the default 48 KiB: no opt-in
  device.launch(k, c, {});
  CHECK(fakeDriver().calls == Calls{"cuLaunchKernel"});

  c.dynamicSharedBytes = 64 * 1024;
  device.launch(k, c, {});
  device.launch(k, c, {});
  c.dynamicSharedBytes = 60 * 1024; // below what was opted in
  device.launch(k, c, {});
  CHECK(callsSince("cuFuncSetAttribute") ==
        Calls{"cuFuncSetAttribute", "cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel"});
  CHECK(fakeDriver().dynamicSharedOptIn["k"] == 64 * 1024);

  // 16 KiB static + 40 KiB dynamic exceeds 48 KiB in total: opted in
  c.dynamicSharedBytes = 40 * 1024;
  fakeDriver().calls.clear();
  device.launch(s, c, {});
  CHECK(fakeDriver().calls == Calls{"cuFuncSetAttribute", "cuLaunchKernel"});
  CHECK(fakeDriver().dynamicSharedOptIn["with_static"] == 40 * 1024);

  // occupancy is asked with the opt-in in place
  fakeDriver().calls.clear();
  CHECK(device.maxActiveBlocksPerSM(k, 256, 100 * 1024) == 8);
  CHECK(fakeDriver().calls ==
        Calls{"cuFuncSetAttribute", "cuOccupancyMaxActiveBlocksPerMultiprocessor"});
}

TEST_CASE("graph capture records launches, replays them and updates one node's arguments",
          "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().paramSizes["first"] = {8};
  fakeDriver().paramSizes["second"] = {8, 8};
  ModuleHandle m = device.loadModule("ptx");
  KernelHandle first = device.getKernel(m, "first");
  KernelHandle second = device.getKernel(m, "second");
  LaunchConfig plain;
  plain.grid = {8, 1, 1};
  LaunchConfig cooperative = plain;
  cooperative.cooperative = true;

  fakeDriver().calls.clear();
  device.beginCapture();
  device.launch(first, plain, {KernelArg::pointer(0x100)});
  device.launch(second, cooperative, {KernelArg::pointer(0x200), KernelArg::pointer(0x300)});
  GraphHandle g = device.endCapture();
  CHECK(g == 0);
  CHECK(collapsed(fakeDriver().calls) ==
        Calls{"cuStreamBeginCapture", "cuLaunchKernel", "cuLaunchCooperativeKernel",
              "cuStreamEndCapture", "cuGraphGetNodes", "cuGraphNodeGetType",
              "cuGraphKernelNodeGetParams", "cuGraphInstantiateWithFlags"});
  CHECK(fakeDriver().launches.empty()); // captured, not run

  fakeDriver().calls.clear();
  device.replay(g);
  CHECK(fakeDriver().calls == Calls{"cuGraphLaunch"});
  REQUIRE(fakeDriver().graphLaunches.size() == 2);
  CHECK(fakeDriver().graphLaunches[0].kernel == "first");
  CHECK(fakeDriver().graphLaunches[1].kernel == "second");
  CHECK(fakeDriver().graphLaunches[1].cooperative);

  // node 1 (in capture order) gets new pointers; node 0 keeps its own
  fakeDriver().calls.clear();
  fakeDriver().graphLaunches.clear();
  device.updateGraphKernelArgs(g, 1, {KernelArg::pointer(0x2000), KernelArg::pointer(0x3000)});
  device.replay(g);
  CHECK(fakeDriver().calls == Calls{"cuGraphExecKernelNodeSetParams", "cuGraphLaunch"});
  REQUIRE(fakeDriver().graphLaunches.size() == 2);
  CHECK(fakeDriver().graphLaunches[0].args[0] == bytesOf(0x100));
  CHECK(fakeDriver().graphLaunches[1].args[0] == bytesOf(0x2000));
  CHECK(fakeDriver().graphLaunches[1].args[1] == bytesOf(0x3000));
  CHECK(fakeDriver().graphLaunches[1].grid[0] == 8); // the launch shape is the captured one

  // a new shape for node 0: its grid and arguments change in place; later argument updates
  // keep the new grid
  LaunchConfig wider = plain;
  wider.grid = {40, 1, 1};
  fakeDriver().calls.clear();
  fakeDriver().graphLaunches.clear();
  device.updateGraphKernelLaunch(g, 0, wider, {KernelArg::pointer(0x500)});
  device.updateGraphKernelArgs(g, 0, {KernelArg::pointer(0x600)});
  device.replay(g);
  CHECK(fakeDriver().calls == Calls{"cuGraphExecKernelNodeSetParams",
                                    "cuGraphExecKernelNodeSetParams", "cuGraphLaunch"});
  REQUIRE(fakeDriver().graphLaunches.size() == 2);
  CHECK(fakeDriver().graphLaunches[0].grid[0] == 40);
  CHECK(fakeDriver().graphLaunches[0].args[0] == bytesOf(0x600));
  CHECK(fakeDriver().graphLaunches[1].grid[0] == 8);
  // a cooperative launch stays cooperative
  try {
    device.updateGraphKernelLaunch(g, 1, plain,
                                   {KernelArg::pointer(0x2000), KernelArg::pointer(0x3000)});
    FAIL("a cooperative node was updated to a plain launch");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()) ==
          "updateGraphKernelLaunch: node 1 of graph 0 (kernel 'second') was captured cooperative");
  }
}

TEST_CASE("a captured launch in clusters replays in clusters and keeps its cluster size",
          "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().paramSizes["grid_sync"] = {8};
  KernelHandle k = device.getKernel(device.loadModule("ptx"), "grid_sync");
  LaunchConfig c = cooperativeInClustersOf4();
  device.launch(k, c, {KernelArg::pointer(0x100)}); // a plain run first, as Executable does
  fakeDriver().calls.clear();
  device.beginCapture();
  device.launch(k, c, {KernelArg::pointer(0x100)});
  GraphHandle g = device.endCapture();
  CHECK(collapsed(fakeDriver().calls) ==
        Calls{"cuStreamBeginCapture", "cuLaunchKernelEx", "cuStreamEndCapture", "cuGraphGetNodes",
              "cuGraphNodeGetType", "cuGraphKernelNodeGetParams", "cuGraphInstantiateWithFlags"});
  device.updateGraphKernelArgs(g, 0, {KernelArg::pointer(0x200)});
  fakeDriver().graphLaunches.clear();
  device.replay(g);
  REQUIRE(fakeDriver().graphLaunches.size() == 1);
  CHECK(fakeDriver().graphLaunches[0].clusterSize == 4);
  CHECK(fakeDriver().graphLaunches[0].cooperative);
  CHECK(fakeDriver().graphLaunches[0].args[0] == bytesOf(0x200));
  // a new launch shape in clusters of another size cannot be set on the captured node
  LaunchConfig other = c;
  other.grid = {266, 1, 1};
  other.clusterSize = 2;
  try {
    device.updateGraphKernelLaunch(g, 0, other, {KernelArg::pointer(0x300)});
    FAIL("a node captured in clusters of 4 was updated to clusters of 2");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()) ==
          "updateGraphKernelLaunch: node 0 of graph 0 (kernel 'grid_sync') was captured in "
          "clusters of 4, this launch runs in clusters of 2; capture it again");
  }
}

TEST_CASE("a timer records two events on the stream and reads the time between them", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  device.startTimer();
  std::optional<double> ms = device.stopTimer();
  REQUIRE(ms.has_value());
  CHECK(*ms == Approx(1.5));
  CHECK(fakeDriver().calls == Calls{"cuEventCreate", "cuEventCreate", "cuEventRecord",
                                    "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime"});
  fakeDriver().calls.clear();
  device.startTimer(); // events are made once
  device.stopTimer();
  CHECK(fakeDriver().calls ==
        Calls{"cuEventRecord", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime"});
}

TEST_CASE("copies are ordered on the device's stream and complete before returning", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  DevicePtr p = device.allocate(16);
  float host[4] = {};
  fakeDriver().calls.clear();
  device.copyToDevice(p, host, sizeof host);
  device.memset(p, 0, sizeof host);
  device.copyToHost(host, p, sizeof host);
  device.copyToHost(host, p, 0); // nothing to do
  CHECK(fakeDriver().calls == Calls{"cuMemcpyHtoDAsync", "cuStreamSynchronize", "cuMemsetD8Async",
                                    "cuMemcpyDtoHAsync", "cuStreamSynchronize"});
}

TEST_CASE("freed device memory is reused from the cache and given back by a trim", "[cuda]") {
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  DevicePtr a = device.allocate(1000);
  device.free(a);
  DevicePtr b = device.allocate(900); // the same 1 KiB size class
  CHECK(b == a);
  CHECK(fakeDriver().memAllocCalls == 1);
  device.free(b);
  fakeDriver().calls.clear();
  CHECK(trimDeviceMemoryCache(device) == 1024);
  CHECK(fakeDriver().calls == Calls{"cuStreamSynchronize", "cuMemFree"});
  CHECK(fakeDriver().allocations.empty());

  SECTION("out of memory: the cache is trimmed and the allocation retried") {
    DevicePtr c = device.allocate(4096);
    device.free(c);
    fakeDriver().failures["cuMemAlloc"] = CUDA_ERROR_OUT_OF_MEMORY;
    CHECK_THROWS_WITH(device.allocate(1 << 20), "out of device memory allocating 1048576 bytes (0 "
                                                "bytes live in weft's allocator, cache trimmed)");
    CHECK(fakeDriver().allocations.empty()); // the cached 4 KiB went back to the driver
  }
}

namespace {
/// Sets or unsets (nullptr) environment variables for one test and puts them back after it.
class Environment {
public:
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~Environment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->second ? ::setenv(it->first, it->second->c_str(), 1) : ::unsetenv(it->first);
  }

private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

/// A fresh, empty folder for one test, removed after it.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

size_t cubinFiles(const std::filesystem::path& dir) {
  size_t n = 0;
  if (!std::filesystem::exists(dir)) return n;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().extension() == ".cubin";
  return n;
}

/// WEFT_CUBIN_CACHE set to a fresh directory for one test, put back (test_cuda: "off") after it.
struct CubinCacheDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("weft-cubin-test-" + std::to_string(::getpid()));
  Environment env;
  CubinCacheDir() {
    std::filesystem::remove_all(dir);
    env.set("WEFT_CUBIN_CACHE", dir.c_str());
  }
  ~CubinCacheDir() { std::filesystem::remove_all(dir); }
  size_t files() const { return cubinFiles(dir); }
};

/// The warnings (and errors) logged while it lives, one message a line.
class Warnings {
public:
  Warnings() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    sink->set_pattern("%v");
    auto logger = std::make_shared<spdlog::logger>("weft-test-warnings", sink);
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
  }
  ~Warnings() { spdlog::set_default_logger(saved_); } // unregisters this one
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(text_.str());
    for (std::string line; std::getline(in, line);)
      out.push_back(line);
    return out;
  }

private:
  std::shared_ptr<spdlog::logger> saved_ = spdlog::default_logger();
  std::ostringstream text_;
};
} // namespace

TEST_CASE("with WEFT_CUBIN_CACHE the PTX is linked to a cubin once, and later loads read it",
          "[cuda]") {
  CubinCacheDir cache;
  auto api = fakeDriverApi();
  {
    CudaDevice device(api, 0);
    fakeDriver().calls.clear();
    device.getKernel(device.loadModule(".version 8.0 // kernel k"), "k");
    CHECK(fakeDriver().calls == Calls{"cuLinkCreate", "cuLinkAddData", "cuLinkComplete",
                                      "cuModuleLoadData", "cuLinkDestroy", "cuModuleGetFunction",
                                      "cuFuncGetAttribute"});
    CHECK(fakeDriver().loadedImages == std::vector<std::string>{"cubin of .version 8.0 // kernel k"});
    CHECK(cache.files() == 1);
  }
  // A second process (a fresh device): the cubin from disk, no link.
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  fakeDriver().loadedImages.clear();
  device.getKernel(device.loadModule(".version 8.0 // kernel k"), "k");
  CHECK(fakeDriver().calls ==
        Calls{"cuModuleLoadData", "cuModuleGetFunction", "cuFuncGetAttribute"});
  CHECK(fakeDriver().loadedImages == std::vector<std::string>{"cubin of .version 8.0 // kernel k"});
  // Other PTX is another entry.
  device.loadModule(".version 8.0 // kernel k2");
  CHECK(cache.files() == 2);
}

TEST_CASE("a cubin cache entry compiled from other PTX under the same name is never loaded",
          "[cuda]") {
  CubinCacheDir cache;
  auto api = fakeDriverApi();
  const std::string ptx = ".version 8.0 // kernel k";
  {
    CudaDevice device(api, 0);
    device.loadModule(ptx);
  }
  REQUIRE(cache.files() == 1);
  std::filesystem::path entry = std::filesystem::directory_iterator(cache.dir)->path();
  auto rewrite = [&](const std::string& text) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text;
  };
  // What a 64-bit hash collision would leave: an entry of another PTX of the same size.
  std::string other = ".version 8.0 // kernel X";
  REQUIRE(other.size() == ptx.size());
  for (const std::string& text :
       {"weft-cubin 1\n" + std::to_string(other.size()) + "\n" + other + "cubin of " + other,
        std::string("weft-cubin 1\n24\n.version 8.0"), // cut short
        std::string("cubin of ") + ptx}) {               // not an entry at all
    rewrite(text);
    CudaDevice device(api, 0);
    fakeDriver().calls.clear();
    fakeDriver().loadedImages.clear();
    device.loadModule(ptx);
    CHECK(fakeDriver().calls.front() == "cuLinkCreate"); // compiled again, not loaded
    CHECK(fakeDriver().loadedImages == std::vector<std::string>{"cubin of " + ptx});
  }
  // The entry was rewritten by the last link: it loads again.
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  device.loadModule(ptx);
  CHECK(fakeDriver().calls == Calls{"cuModuleLoadData"});
}

TEST_CASE("the cubin cache is keyed by the driver version too", "[cuda]") {
  CubinCacheDir cache;
  auto api = fakeDriverApi();
  {
    CudaDevice device(api, 0);
    device.loadModule("ptx");
  }
  fakeDriver().driverVersion = 13010; // an updated driver compiles again
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  device.loadModule("ptx");
  CHECK(fakeDriver().calls.front() == "cuLinkCreate");
  CHECK(cache.files() == 2);
}

TEST_CASE("a PTX that fails to link through the cubin cache carries the JIT's error log",
          "[cuda]") {
  CubinCacheDir cache;
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().failures["cuLinkAddData"] = CUDA_ERROR_INVALID_PTX;
  fakeDriver().jitErrorLog = "ptxas application ptx input, line 9; error   : Unknown symbol 'x'\n";
  CHECK_THROWS_WITH(device.loadModule("bad ptx"),
                    Catch::Contains("cuLinkAddData failed: CUDA_ERROR_INVALID_PTX") &&
                        Catch::Contains("line 9; error   : Unknown symbol 'x'"));
  CHECK(callsSince("cuLinkCreate") == Calls{"cuLinkCreate", "cuLinkAddData", "cuLinkDestroy"});
  CHECK(cache.files() == 0);
}

namespace {
/// A module with a helper function and two kernels `a` and `b` of `lines` instructions each.
std::string twoKernelPtx(size_t lines) {
  std::string body;
  for (size_t i = 0; i < lines; ++i)
    body += "\tmov.u32 \t%r1, 0;\n";
  std::string ptx = ".version 8.5\n.target sm_90\n.address_size 64\n\n"
                    ".visible .func helper\n(\n\t.param .b32 helper_param_0\n)\n;\n"
                    ".extern .shared .align 16 .b8 weft_dynamic_shared[];\n\n"
                    "// weft: kernel a computes x\n";
  for (const char* k : {"a", "b"})
    ptx += std::string(".visible .entry ") + k + "(\n\t.param .u64 " + k +
           "_param_0\n)\n.maxntid 256, 1, 1\n{\n\t.reg .b32 \t%r<2>;\n" + body + "\tret;\n\n}\n";
  ptx += ".visible .func helper(\n\t.param .b32 helper_param_0\n)\n{\n\tret;\n\n}\n";
  return ptx;
}
} // namespace

TEST_CASE("a module is split between its kernels, each part a whole module", "[cuda]") {
  std::string ptx = twoKernelPtx(3);
  std::vector<PtxPart> one = splitPtxModule(ptx, 1);
  REQUIRE(one.size() == 1);
  CHECK(one[0].ptx == ptx);
  CHECK(one[0].entries == std::vector<std::string>{"a", "b"});
  std::vector<PtxPart> two = splitPtxModule(ptx, 2);
  REQUIRE(two.size() == 2);
  for (size_t p = 0; p < 2; ++p) {
    const std::string& text = two[p].ptx;
    CHECK(text.find(".target sm_90") != std::string::npos);
    CHECK(text.find(".extern .shared .align 16 .b8 weft_dynamic_shared[];") != std::string::npos);
    CHECK(text.find(")\n;\n") != std::string::npos);          // the helper's prototype
    CHECK(text.find(")\n{\n\tret;\n\n}\n") != std::string::npos); // and its definition
    CHECK(text.find("// weft") == std::string::npos);         // top-level comments left out
  }
  CHECK(two[0].entries == std::vector<std::string>{"a"});
  CHECK(two[1].entries == std::vector<std::string>{"b"});
  CHECK(two[0].ptx.find(".entry b(") == std::string::npos);
  CHECK(two[1].ptx.find(".entry a(") == std::string::npos);
  CHECK(splitPtxModule(ptx, 8).size() == 2); // no more parts than kernels
}

TEST_CASE("a big module is linked in parts on several threads, each part cached on its own",
          "[cuda]") {
  CubinCacheDir cache;
  ::setenv("WEFT_LINK_THREADS", "2", 1);
  std::string ptx = twoKernelPtx(70'000); // about 1.3 MB a kernel: two parts of 1 MB or more
  auto api = fakeDriverApi();
  {
    CudaDevice device(api, 0);
    fakeDriver().calls.clear();
    ModuleHandle m = device.loadModule(ptx);
    device.getKernel(m, "a");
    device.getKernel(m, "b");
    CHECK(std::count(fakeDriver().calls.begin(), fakeDriver().calls.end(), "cuLinkComplete") == 2);
    REQUIRE(fakeDriver().loadedImages.size() == 2);
    for (const std::string& image : fakeDriver().loadedImages) // one kernel each
      CHECK((image.find(".entry a(") == std::string::npos) !=
            (image.find(".entry b(") == std::string::npos));
    CHECK(cache.files() == 2);
  }
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  device.getKernel(device.loadModule(ptx), "b");
  CHECK(std::count(fakeDriver().calls.begin(), fakeDriver().calls.end(), "cuModuleLoadData") == 2);
  CHECK(std::count(fakeDriver().calls.begin(), fakeDriver().calls.end(), "cuLinkCreate") == 0);
  ::unsetenv("WEFT_LINK_THREADS");
}

TEST_CASE("without WEFT_CUBIN_CACHE the cubins are kept in the compile cache's folder, cubins",
          "[cuda]") {
  ScratchDir xdg("weft-xdg-test");
  Environment env;
  env.set("WEFT_CUBIN_CACHE", nullptr);
  env.set("XDG_CACHE_HOME", xdg.path.c_str());
  const std::filesystem::path cubins = xdg.path / "weft" / "cubins";
  CHECK(cubinCacheFor("").dir == cubins.string());
  CHECK_FALSE(cubinCacheFor("").driverJit);
  auto api = fakeDriverApi();
  {
    CudaDevice device(api, 0);
    fakeDriver().calls.clear();
    device.loadModule(".version 8.0 // kernel k");
    CHECK(fakeDriver().calls == Calls{"cuLinkCreate", "cuLinkAddData", "cuLinkComplete",
                                      "cuModuleLoadData", "cuLinkDestroy"});
    CHECK(cubinFiles(cubins) == 1);
  }
  CudaDevice device(api, 0); // a second process: the cubin from disk
  fakeDriver().calls.clear();
  fakeDriver().loadedImages.clear();
  device.loadModule(".version 8.0 // kernel k");
  CHECK(fakeDriver().calls == Calls{"cuModuleLoadData"});
  CHECK(fakeDriver().loadedImages == std::vector<std::string>{"cubin of .version 8.0 // kernel k"});

  env.set("WEFT_CUBIN_CACHE", ""); // empty is unset
  CHECK(cubinCacheFor("").dir == cubins.string());
  env.set("XDG_CACHE_HOME", nullptr); // then $HOME/.cache, as the compile cache
  env.set("HOME", "/home/someone");
  CHECK(cubinCacheFor("").dir == "/home/someone/.cache/weft/cubins");
}

TEST_CASE("WEFT_CUBIN_CACHE=off hands the PTX to the driver's JIT and keeps nothing", "[cuda]") {
  ScratchDir xdg("weft-xdg-test");
  Environment env;
  env.set("WEFT_CUBIN_CACHE", "off");
  env.set("XDG_CACHE_HOME", xdg.path.c_str());
  CHECK(cubinCacheFor("").driverJit);
  CHECK(cubinCacheFor("/some/compile/cache").driverJit);
  auto api = fakeDriverApi();
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  device.getKernel(device.loadModule(".version 8.0 // kernel k"), "k");
  CHECK(fakeDriver().calls ==
        Calls{"cuModuleLoadDataEx", "cuModuleGetFunction", "cuFuncGetAttribute"});
  CHECK(std::filesystem::is_empty(xdg.path));
}

TEST_CASE("the cubin cache follows CompileOptions::cacheDir unless WEFT_CUBIN_CACHE names one",
          "[cuda]") {
  ScratchDir xdg("weft-xdg-test");
  Environment env;
  env.set("WEFT_CUBIN_CACHE", nullptr);
  env.set("XDG_CACHE_HOME", xdg.path.c_str());
  CHECK(cubinCacheFor("/some/compile/cache").dir == "/some/compile/cache/cubins");
  // A program that turned the compile cache off keeps nothing on disk; weft still links.
  CubinCache off = cubinCacheFor("off");
  CHECK_FALSE(off.driverJit);
  CHECK(off.dir.empty());
  auto api = fakeDriverApi();
  {
    CudaDevice device(api, 0);
    fakeDriver().calls.clear();
    ModuleHandle m = loadModule(device, ".version 8.0 // kernel k", "off");
    CHECK(fakeDriver().calls == Calls{"cuLinkCreate", "cuLinkAddData", "cuLinkComplete",
                                      "cuModuleLoadData", "cuLinkDestroy"});
    device.getKernel(m, "k");
    CHECK(std::filesystem::is_empty(xdg.path));
  }
  // WEFT_CUBIN_CACHE=DIR, the user's word, wins over the program's "off".
  CubinCacheDir named;
  CHECK(cubinCacheFor("off").dir == named.dir.string());
  CudaDevice device(api, 0);
  loadModule(device, ".version 8.0 // kernel k", "off");
  CHECK(named.files() == 1);
}

TEST_CASE("a cubin cache that cannot be written is warned about once, and modules still load",
          "[cuda]") {
  ScratchDir scratch("weft-xdg-test");
  const std::filesystem::path file = scratch.path / "a-file"; // no folder can be made in it
  std::ofstream(file) << "not a folder";
  Environment env;
  env.set("WEFT_CUBIN_CACHE", nullptr);
  env.set("XDG_CACHE_HOME", file.c_str());
  auto api = fakeDriverApi();
  Warnings warnings;
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  KernelHandle a = device.getKernel(device.loadModule(".version 8.0 // kernel a"), "a");
  KernelHandle b = device.getKernel(device.loadModule(".version 8.0 // kernel b"), "b");
  CHECK(a != b);
  CHECK(std::count(fakeDriver().calls.begin(), fakeDriver().calls.end(), "cuLinkComplete") == 2);
  CHECK(fakeDriver().loadedImages == std::vector<std::string>{"cubin of .version 8.0 // kernel a",
                                                              "cubin of .version 8.0 // kernel b"});
  std::vector<std::string> lines = warnings.lines();
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("the cubin cache " + (file / "weft/cubins").string() +
                                       " cannot be written (") &&
                           Catch::Contains("linking the PTX without keeping its cubins"));
  CHECK(std::filesystem::is_regular_file(file));
}

TEST_CASE("with no XDG_CACHE_HOME and no HOME the PTX is linked without a cache or a warning",
          "[cuda]") {
  Environment env;
  env.set("WEFT_CUBIN_CACHE", nullptr);
  env.set("XDG_CACHE_HOME", nullptr);
  env.set("HOME", nullptr);
  CHECK(cubinCacheFor("").dir.empty());
  auto api = fakeDriverApi();
  Warnings warnings;
  CudaDevice device(api, 0);
  fakeDriver().calls.clear();
  device.getKernel(device.loadModule(".version 8.0 // kernel k"), "k");
  CHECK(fakeDriver().calls == Calls{"cuLinkCreate", "cuLinkAddData", "cuLinkComplete",
                                    "cuModuleLoadData", "cuLinkDestroy", "cuModuleGetFunction",
                                    "cuFuncGetAttribute"});
  CHECK(warnings.lines().empty());
}
