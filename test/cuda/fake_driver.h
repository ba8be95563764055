#pragma once
// A fake CUDA driver: a DriverApi whose entry points record what they were asked and answer
// like a small GPU, so the cuda device's logic is tested without one. The fakes are plain
// functions (the table holds C function pointers), so their state is one global.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/driver_api.h"

namespace weft::runtime::cuda::testing {

struct FakeLaunch {
  std::string kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t sharedBytes;
  bool cooperative;
  std::vector<std::vector<uint8_t>> args; // copied out of kernelParams with the declared sizes
  uint32_t clusterSize = 1;               // cuLaunchKernelEx's cluster dimension along x
};

struct FakeNode {
  FakeLaunch launch;
};

struct FakeLink {
  std::string cubin;         // alive until cuLinkDestroy
  void* errorLog = nullptr;  // cuLinkCreate's log buffer
  void* errorLogBytes = nullptr;
};

struct FakeDriver {
  std::vector<std::string> calls; // every entry point called, in order (cuCtxSetCurrent left out)
  std::map<std::string, CUresult> failures; // entry point → what it returns instead of success
  std::string jitErrorLog;                  // written by a failing cuModuleLoadDataEx
  std::string jitInfoLog;
  int driverVersion = 13000;
  int deviceCount = 1;
  std::map<CUdevice_attribute, int> attributes; // answers of cuDeviceGetAttribute (default 0)
  std::map<std::string, std::vector<size_t>> paramSizes; // kernel → its parameters' sizes
  std::map<std::string, int> staticSharedBytes;          // kernel → static shared memory
  bool listNodesReversed = false; // cuGraphGetNodes answers in reverse capture order
  int maxActiveClusters = 1 << 20; // cuOccupancyMaxActiveClusters' answer

  // what happened
  std::vector<FakeLaunch> launches;              // launches that ran (not captured)
  std::vector<std::vector<FakeNode>> graphs;     // captured graphs, by CUgraph handle - 1
  std::vector<FakeLaunch> graphLaunches;         // kernels run by cuGraphLaunch, as updated
  std::map<std::string, int> dynamicSharedOptIn; // kernel → MAX_DYNAMIC_SHARED_SIZE_BYTES
  std::map<CUdeviceptr, size_t> allocations;     // live cuMemAlloc blocks
  size_t memAllocCalls = 0, memFreeCalls = 0;
  bool capturing = false;
  std::map<uint64_t, std::vector<FakeNode>> execs; // instantiated graphs: exec handle → nodes
  uint64_t nextHandle = 1;
  CUdeviceptr nextPointer = 0x10000;
  std::vector<std::string> functionNames; // CUfunction handle - 1 → kernel name
  // the cubin cache's link path: cuLinkComplete's cubin is "cubin of " + the PTX added
  std::map<uint64_t, FakeLink> links;    // live link states
  std::vector<std::string> loadedImages; // what cuModuleLoadData loaded
};

/// The fake's state; reset by fakeDriverApi().
FakeDriver& fakeDriver();

/// A fresh fake driver, looking like one H100-ish GPU (132 SMs, cc 9.0, 227 KiB opt-in shared).
std::shared_ptr<const DriverApi> fakeDriverApi();

/// The recorded calls from the first call named `from` on (all calls when empty).
std::vector<std::string> callsSince(const std::string& from);

} // namespace weft::runtime::cuda::testing
