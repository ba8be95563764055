#pragma once
// The one interface to hardware. Two implementations: `sim` (weft's PTX simulator, src/sim)
// and `cuda` (the CUDA Driver API, src/runtime/cuda). Every failure is thrown as a
// weft::DeviceError carrying the device's own message.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/device_spec.h"

namespace weft {

using DevicePtr = uint64_t; // a device address; 0 is null
using ModuleHandle = int;   // returned by loadModule, valid until the device is destroyed
using KernelHandle = int;   // returned by getKernel
using GraphHandle = int;    // returned by endCapture

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

/// One kernel parameter as the raw bytes the kernel's .param declares (a pointer is 8 bytes).
struct KernelArg {
  std::vector<uint8_t> bytes;
  static KernelArg pointer(DevicePtr p) { return of(p); }
  template <class T> static KernelArg of(const T& v) {
    KernelArg a;
    a.bytes.resize(sizeof(T));
    __builtin_memcpy(a.bytes.data(), &v, sizeof(T));
    return a;
  }
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t dynamicSharedBytes = 0;
  bool cooperative = false; // all blocks resident at once; required by grid barriers
  // Thread-block clusters (sm_90+): consecutive blocks along x, clusterSize of them, run at
  // once on one GPC and read each other's shared memory (ld.shared::cluster, barrier.cluster).
  // 1: no clusters (each block is a cluster of one). Must divide grid.x.
  uint32_t clusterSize = 1;
  // The kernel is correct only in clusters of clusterSize: a device that cannot launch them
  // refuses the launch (otherwise it may launch in clusters of one).
  bool clusterRequired = false;
};

/// What one launch did, as counted by the simulator (the cuda device leaves these zero).
/// Data traffic and synchronisation traffic (grid-barrier counters, spin-waits) are apart.
struct LaunchCounters {
  std::string kernel;
  uint64_t warpInstructions = 0;
  uint64_t threadInstructions = 0;
  uint64_t globalLoadRequests = 0;  // warp-level requests
  uint64_t globalStoreRequests = 0;
  uint64_t globalSectorsRead = 0;   // distinct 32-byte sectors per warp request, summed
  uint64_t globalSectorsWritten = 0;
  uint64_t sharedLoads = 0;         // warp-level requests
  uint64_t sharedStores = 0;
  uint64_t blockBarriers = 0;       // bar.sync executed, per block
  uint64_t gridBarriers = 0;        // grid-wide barriers completed
  uint64_t atomics = 0;             // warp-level atomic requests on data
  uint64_t syncInstructions = 0;    // warp instructions spent on grid-barrier synchronisation
  uint64_t syncSectors = 0;         // sectors touched by synchronisation (barrier counters)
  uint64_t clusterBarriers = 0;     // barrier.cluster waits completed, per cluster
  uint64_t clusterSharedLoads = 0;  // warp-level ld.shared::cluster requests to another block
  // Block sampling (sim ExecOptions::sampleBlocks): blocks in the grid and blocks actually
  // simulated. When simulatedBlocks < blocks, every counter above is extrapolated: the
  // blocks not simulated are counted as copies of sampled blocks that did identical work.
  uint64_t blocks = 0;
  uint64_t simulatedBlocks = 0;
  bool sampled() const { return simulatedBlocks < blocks; }
  uint64_t globalBytes() const { return (globalSectorsRead + globalSectorsWritten) * 32; }
  LaunchCounters& operator+=(const LaunchCounters& o) {
    warpInstructions += o.warpInstructions;
    threadInstructions += o.threadInstructions;
    globalLoadRequests += o.globalLoadRequests;
    globalStoreRequests += o.globalStoreRequests;
    globalSectorsRead += o.globalSectorsRead;
    globalSectorsWritten += o.globalSectorsWritten;
    sharedLoads += o.sharedLoads;
    sharedStores += o.sharedStores;
    blockBarriers += o.blockBarriers;
    gridBarriers += o.gridBarriers;
    clusterBarriers += o.clusterBarriers;
    clusterSharedLoads += o.clusterSharedLoads;
    atomics += o.atomics;
    syncInstructions += o.syncInstructions;
    syncSectors += o.syncSectors;
    blocks += o.blocks;
    simulatedBlocks += o.simulatedBlocks;
    return *this;
  }
};

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0; // "sim" or "cuda:0 (NVIDIA H100 ...)"
  virtual const DeviceSpec& spec() const = 0;

  virtual DevicePtr allocate(size_t bytes) = 0;
  virtual void free(DevicePtr p) = 0;
  virtual void copyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual void copyToHost(void* dst, DevicePtr src, size_t bytes) = 0;
  virtual void memset(DevicePtr dst, uint8_t value, size_t bytes) = 0;

  /// Loads a PTX module; throws DeviceError with the loader's log (naming line and
  /// instruction) on failure.
  virtual ModuleHandle loadModule(const std::string& ptx) = 0;
  virtual KernelHandle getKernel(ModuleHandle module, const std::string& name) = 0;
  virtual void launch(KernelHandle kernel, const LaunchConfig& config, const std::vector<KernelArg>& args) = 0;
  virtual void synchronize() = 0;
  /// Blocks of this kernel that fit on one SM at once with this block size and shared memory.
  virtual int maxActiveBlocksPerSM(KernelHandle kernel, int blockSize, size_t dynamicSharedBytes) = 0;
  /// Clusters of `clusterSize` blocks of this kernel that the device keeps resident at once
  /// (a cluster's blocks share one GPC, so fewer than the SMs' blocks over the cluster size can
  /// fit: 15 clusters of 8 on an H100's 132 SMs). 0 where the device cannot tell; the default
  /// assumes every SM's blocks can form clusters.
  virtual int maxActiveClusters(KernelHandle kernel, int blockSize, size_t dynamicSharedBytes,
                                int clusterSize) {
    if (clusterSize < 1) return 0;
    return spec().smCount * maxActiveBlocksPerSM(kernel, blockSize, dynamicSharedBytes) /
           clusterSize;
  }

  // --- CUDA-graph style capture: launches between begin and end are recorded, not run. ---
  virtual void beginCapture() = 0;
  virtual GraphHandle endCapture() = 0;
  virtual void replay(GraphHandle graph) = 0;
  /// Replaces the arguments of the node-th launch of a captured graph (in capture order).
  virtual void updateGraphKernelArgs(GraphHandle graph, size_t node, const std::vector<KernelArg>& args) = 0;
  /// Replaces the node-th launch's grid, block and dynamic shared memory as well as its
  /// arguments: one captured graph serves a generic program at every binding of its shapes.
  /// The kernel and whether the launch is cooperative stay as captured (DeviceError otherwise).
  virtual void updateGraphKernelLaunch(GraphHandle graph, size_t node, const LaunchConfig& config,
                                       const std::vector<KernelArg>& args) = 0;

  // --- Device-side timing of a region of work (events on the device's stream). ---
  /// startTimer(); launches or a replay; stopTimer() waits for that work and returns the
  /// milliseconds the device spent between the two marks. nullopt where the device has no
  /// clock of its own (sim): time on the host instead.
  virtual void startTimer() {}
  virtual std::optional<double> stopTimer() { return std::nullopt; }

  /// Counters of launches since the last call to takeCounters(), one entry per launch.
  virtual std::vector<LaunchCounters> takeCounters() { return {}; }
};

/// "sim", "cuda", or "auto" (cuda when a driver and a GPU are present, else sim with a notice
/// on stderr). `spec` picks the profile the sim device models (ignored by cuda).
std::unique_ptr<Device> makeDevice(const std::string& kind, const DeviceSpec& spec);

} // namespace weft
