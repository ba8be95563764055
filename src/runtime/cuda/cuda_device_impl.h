#pragma once
// CudaDevice: the Device interface implemented on a DriverApi table. makeCudaDevice() builds
// one on the real driver; tests build one on a table of fakes and check what it calls.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/cuda/driver_api.h"
#include "weft/device.h"

namespace weft::runtime::cuda {

/// How the cuda device turns PTX into modules. WEFT_CUBIN_CACHE decides when set: "off" hands
/// the PTX to the driver's JIT (cuModuleLoadDataEx, one module at a time), a directory keeps
/// the cubins there. Unset (or empty) it follows the compile cache (CompileOptions::cacheDir):
/// "" keeps them in defaultCacheBaseDir()/cubins, a directory D in D/cubins, and "off" (a
/// program that wants nothing on disk) links in parallel without keeping them, as when there
/// is no $XDG_CACHE_HOME or $HOME.
struct CubinCache {
  bool driverJit = false; // WEFT_CUBIN_CACHE=off
  std::string dir;        // "" when linked without a cache (or driverJit)
};
CubinCache cubinCacheFor(const std::string& compileCacheDir);

/// The DeviceSpec of `device`, from its attributes: SM count, threads, blocks and registers
/// per SM, shared memory per SM and per block (default and opt-in), compute capability,
/// clock, and DRAM bandwidth = bus width × memory clock × 2 (double data rate).
DeviceSpec readDeviceSpec(const DriverApi& api, CUdevice device);

class CudaDevice final : public Device {
public:
  /// cuInit, the device, its primary context (made current) and a non-blocking stream.
  CudaDevice(std::shared_ptr<const DriverApi> api, int ordinal);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const override { return name_; }
  const DeviceSpec& spec() const override { return spec_; }

  DevicePtr allocate(size_t bytes) override;
  void free(DevicePtr p) override;
  void copyToDevice(DevicePtr dst, const void* src, size_t bytes) override;
  void copyToHost(void* dst, DevicePtr src, size_t bytes) override;
  void memset(DevicePtr dst, uint8_t value, size_t bytes) override;

  /// Through the cubin cache of the default compile cache (cubinCacheFor("")).
  ModuleHandle loadModule(const std::string& ptx) override;
  /// Through cubinCacheFor(compileCacheDir): a directory that cannot be created or written is
  /// warned about once and the PTX linked without keeping its cubins; loading never fails
  /// for the cache's sake.
  ModuleHandle loadModule(const std::string& ptx, const std::string& compileCacheDir);
  /// Where the cubin of `ptx` is kept in the cubin cache `dir`.
  std::string cubinPath(const std::string& dir, const std::string& ptx) const;
  KernelHandle getKernel(ModuleHandle module, const std::string& name) override;
  void launch(KernelHandle kernel, const LaunchConfig& config,
              const std::vector<KernelArg>& args) override;
  void synchronize() override;
  int maxActiveBlocksPerSM(KernelHandle kernel, int blockSize, size_t dynamicSharedBytes) override;
  /// cuOccupancyMaxActiveClusters; 0 where the driver cannot place such clusters.
  int maxActiveClusters(KernelHandle kernel, int blockSize, size_t dynamicSharedBytes,
                        int clusterSize) override;

  void beginCapture() override;
  GraphHandle endCapture() override;
  void replay(GraphHandle graph) override;
  void updateGraphKernelArgs(GraphHandle graph, size_t node,
                             const std::vector<KernelArg>& args) override;
  void updateGraphKernelLaunch(GraphHandle graph, size_t node, const LaunchConfig& config,
                               const std::vector<KernelArg>& args) override;

  void startTimer() override;
  std::optional<double> stopTimer() override;

  /// Runs `call` on the device's stream: a library's own launches (cuBLASLt's GEMMs). During a
  /// capture they become nodes of the graph, and the launch counts as one launch in capture
  /// order with no node updateGraphKernel* can address (`what` names it in that error).
  void runLibraryCall(const std::string& what, const std::function<void(CUstream)>& call);
  bool capturing() const { return capture_.has_value(); }

  /// Cached free blocks back to the driver (after synchronising); the bytes released.
  size_t trimMemoryCache();
  const CachingAllocator::Stats& memoryStats() const { return allocator_.stats(); }

private:
  /// `ptx` linked by weft, in parts linked in parallel when it is big, through the cubin
  /// cache `dir` ("" = none; kept there only when `store`).
  ModuleHandle loadThroughCubinCache(const std::string& ptx, const std::string& dir, bool store);
  /// Whether cubins can be written to `dir` (created if missing); warns once per directory
  /// when not.
  bool cubinCacheWritable(const std::string& dir);
  /// How many parts a module of `ptxBytes` is linked in.
  size_t linkParts(size_t ptxBytes) const;
  /// A cubin from the cache at `path` (none when ""), else the driver's link of `ptx` (stored
  /// there when `store`), loaded.
  CUmodule cubinModule(const std::string& ptx, const std::string& path, bool store);
  struct Kernel {
    CUfunction function = nullptr;
    std::string name;
    int staticSharedBytes = 0;
    uint32_t dynamicSharedOptIn = 0; // MAX_DYNAMIC_SHARED_SIZE_BYTES set so far
    // Thread-block clusters: the size each (cluster, block, dynamic shared, grid) ran with
    // (the driver's answer, asked once), and whether the driver refused a cluster launch.
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, uint32_t> clusterSizes;
    bool clustersRefused = false;
  };
  struct CapturedLaunch {
    KernelHandle kernel;
    std::vector<size_t> argSizes;
    bool cooperative = false;
    uint32_t clusterSize = 1;
    std::string library; // a runLibraryCall (its `what`; kernel -1): no node of its own
  };
  void setGraphNode(const char* what, GraphHandle graph, size_t node, const LaunchConfig* config,
                    const std::vector<KernelArg>& args);
  struct Graph {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    std::vector<CUgraphNode> kernelNodes;        // in capture order
    std::vector<CUDA_KERNEL_NODE_PARAMS> params; // each node's launch, as captured
    std::vector<CapturedLaunch> launches;
  };

  void check(CUresult result, const char* call, const std::string& detail = {}) const;
  void makeCurrent() const;
  void refuseWhileCapturing(const char* what) const;
  Kernel& kernelOf(KernelHandle kernel);
  Graph& graphOf(GraphHandle graph);
  /// Opts the kernel in to `dynamicBytes` of dynamic shared memory when static + dynamic
  /// exceeds the default per-block limit; refuses more than the device allows.
  void allowDynamicShared(Kernel& kernel, size_t dynamicBytes);
  std::string describeLaunch(const Kernel& kernel, const LaunchConfig& config) const;
  /// The cluster size `config` can run with on this device: its own when the device holds
  /// every cluster of the grid at once (a cooperative grid must be resident), else 1 (stitched
  /// kernels read their cluster's size at run time, so either is correct).
  uint32_t clusterSizeFor(Kernel& kernel, const LaunchConfig& config);
  /// cuLaunchKernelEx with `clusterSize` blocks per cluster (and cooperative when asked).
  CUresult launchInClusters(Kernel& kernel, const LaunchConfig& config, uint32_t clusterSize,
                            void** params);
  std::vector<CUgraphNode> kernelNodesOf(CUgraph graph);
  /// The kernel node of each of `launches` among a captured graph's `nodes` (null for a library
  /// call), found by kernel function where library calls added nodes of their own.
  std::vector<CUgraphNode> launchNodes(const std::vector<CUgraphNode>& nodes,
                                       const std::vector<CapturedLaunch>& launches);

  std::shared_ptr<const DriverApi> api_;
  int ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceSpec spec_;
  std::string name_;
  int driverVersion_ = 0; // part of the cubin cache's key
  // Modules loaded in parts (loadThroughCubinCache): every part's CUmodule (the first is also
  // in modules_) and which part defines each kernel.
  std::map<ModuleHandle, std::vector<CUmodule>> partModules_;
  std::map<ModuleHandle, std::map<std::string, size_t>> kernelPart_;
  std::map<std::string, bool> cubinDirWritable_; // asked once per cubin cache directory
  bool cooperativeLaunch_ = false;
  CachingAllocator allocator_;
  std::vector<CUmodule> modules_;
  std::vector<Kernel> kernels_;
  std::vector<Graph> graphs_;
  std::optional<std::vector<CapturedLaunch>> capture_; // set while capturing
  CUevent timerStart_ = nullptr;
  CUevent timerStop_ = nullptr;
  bool timerRunning_ = false;
};

} // namespace weft::runtime::cuda
