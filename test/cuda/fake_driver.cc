#include "fake_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace weft::runtime::cuda::testing {
namespace {

FakeDriver state;

// The cuda device keeps cubins under $XDG_CACHE_HOME or $HOME by default. test_cuda's tests
// check what the device asks of the driver's JIT and write nothing there: the cache is off
// for the whole binary, and the tests of the cubin cache set WEFT_CUBIN_CACHE (or unset it
// and point XDG_CACHE_HOME at a folder of their own) themselves.
[[maybe_unused]] const bool kCubinCacheOff = ::setenv("WEFT_CUBIN_CACHE", "off", 1) == 0;

std::mutex& fakeMutex() { // the cubin cache links a module's parts on several threads
  static std::mutex m;
  return m;
}

CUresult record(const char* call) {
  std::lock_guard lock(fakeMutex());
  if (std::strcmp(call, "cuCtxSetCurrent") != 0) state.calls.push_back(call);
  auto it = state.failures.find(call);
  return it == state.failures.end() ? CUDA_SUCCESS : it->second;
}

template <class Handle> Handle handleOf(uint64_t value) {
  return reinterpret_cast<Handle>(uintptr_t(value));
}
template <class Handle> uint64_t valueOf(Handle h) {
  return uint64_t(reinterpret_cast<uintptr_t>(h));
}

const std::string& kernelName(CUfunction f) {
  return state.functionNames.at(valueOf(f) - 1);
}

FakeLaunch launchOf(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, unsigned shared, bool cooperative, void** params) {
  FakeLaunch l{kernelName(f), {gx, gy, gz}, {bx, by, bz}, shared, cooperative, {}};
  const std::vector<size_t>& sizes = state.paramSizes[l.kernel];
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto* bytes = static_cast<const uint8_t*>(params[i]);
    l.args.emplace_back(bytes, bytes + sizes[i]);
  }
  return l;
}

CUresult runOrCapture(const char* call, FakeLaunch launch) {
  CUresult r = record(call);
  if (r != CUDA_SUCCESS) return r;
  if (state.capturing)
    state.graphs.back().push_back({std::move(launch)});
  else
    state.launches.push_back(std::move(launch));
  return CUDA_SUCCESS;
}

// CUgraphNode: graph number in the high bits, node number + 1 in the low 16.
CUgraphNode nodeHandle(size_t graph, size_t node) {
  return handleOf<CUgraphNode>(((graph + 1) << 16) | (node + 1));
}
size_t nodeIndex(CUgraphNode n) {
  return (valueOf(n) & 0xffff) - 1;
}
size_t graphIndexOfNode(CUgraphNode n) {
  return (valueOf(n) >> 16) - 1;
}

CUresult errorName(CUresult r, const char** name, bool text) {
  static const std::map<CUresult, std::pair<const char*, const char*>> known = {
      {CUDA_ERROR_INVALID_VALUE, {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
      {CUDA_ERROR_OUT_OF_MEMORY, {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
      {CUDA_ERROR_NO_DEVICE, {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"}},
      {CUDA_ERROR_INVALID_PTX, {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"}},
      {CUDA_ERROR_NOT_FOUND, {"CUDA_ERROR_NOT_FOUND", "named symbol not found"}},
      {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
       {"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"}},
      {CUDA_ERROR_LAUNCH_FAILED, {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"}},
  };
  auto it = known.find(r);
  if (it == known.end())
    return CUDA_ERROR_INVALID_VALUE; // as the real driver does for unknown codes
  *name = text ? it->second.second : it->second.first;
  return CUDA_SUCCESS;
}

void writeLog(const std::string& log, void* buffer, void*& size) {
  size_t capacity = reinterpret_cast<uintptr_t>(size);
  size_t n = std::min(log.size(), capacity ? capacity - 1 : 0);
  std::memcpy(buffer, log.data(), n);
  static_cast<char*>(buffer)[n] = '\0';
  size = reinterpret_cast<void*>(uintptr_t(n + 1));
}

} // namespace

FakeDriver& fakeDriver() {
  return state;
}

std::vector<std::string> callsSince(const std::string& from) {
  auto it =
      from.empty() ? state.calls.begin() : std::find(state.calls.begin(), state.calls.end(), from);
  return {it, state.calls.end()};
}

std::shared_ptr<const DriverApi> fakeDriverApi() {
  state = FakeDriver{};
  state.attributes = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 228 * 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
  };

  auto api = std::make_shared<DriverApi>();
  api->library = "fake";
  api->cuGetErrorName = [](CUresult r, const char** name) { return errorName(r, name, false); };
  api->cuGetErrorString = [](CUresult r, const char** text) { return errorName(r, text, true); };
  api->cuInit = [](unsigned int) { return record("cuInit"); };
  api->cuDriverGetVersion = [](int* v) {
    *v = state.driverVersion;
    return record("cuDriverGetVersion");
  };
  api->cuDeviceGetCount = [](int* n) {
    *n = state.deviceCount;
    return record("cuDeviceGetCount");
  };
  api->cuDeviceGet = [](CUdevice* d, int ordinal) {
    *d = ordinal;
    return record("cuDeviceGet");
  };
  api->cuDeviceGetName = [](char* name, int length, CUdevice) {
    std::snprintf(name, size_t(length), "%s", "Fake H100");
    return record("cuDeviceGetName");
  };
  api->cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice) {
    *v = state.attributes.count(a) ? state.attributes[a] : 0;
    return record("cuDeviceGetAttribute");
  };
  api->cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice) {
    *c = handleOf<CUcontext>(0xc0);
    return record("cuDevicePrimaryCtxRetain");
  };
  api->cuDevicePrimaryCtxRelease = [](CUdevice) { return record("cuDevicePrimaryCtxRelease"); };
  api->cuCtxSetCurrent = [](CUcontext) { return record("cuCtxSetCurrent"); };
  api->cuStreamCreate = [](CUstream* s, unsigned int) {
    *s = handleOf<CUstream>(0x5);
    return record("cuStreamCreate");
  };
  api->cuStreamDestroy = [](CUstream) { return record("cuStreamDestroy"); };
  api->cuStreamSynchronize = [](CUstream) { return record("cuStreamSynchronize"); };
  api->cuMemAlloc = [](CUdeviceptr* p, size_t bytes) {
    CUresult r = record("cuMemAlloc");
    if (r != CUDA_SUCCESS) return r;
    *p = state.nextPointer;
    state.nextPointer += (bytes + 0xfff) & ~size_t(0xfff);
    state.allocations[*p] = bytes;
    ++state.memAllocCalls;
    return CUDA_SUCCESS;
  };
  api->cuMemFree = [](CUdeviceptr p) {
    ++state.memFreeCalls;
    if (!state.allocations.erase(p)) return CUDA_ERROR_INVALID_VALUE;
    return record("cuMemFree");
  };
  api->cuMemcpyHtoDAsync = [](CUdeviceptr, const void*, size_t, CUstream) {
    return record("cuMemcpyHtoDAsync");
  };
  api->cuMemcpyDtoHAsync = [](void*, CUdeviceptr, size_t, CUstream) {
    return record("cuMemcpyDtoHAsync");
  };
  api->cuMemsetD8Async = [](CUdeviceptr, unsigned char, size_t, CUstream) {
    return record("cuMemsetD8Async");
  };
  api->cuModuleLoadDataEx = [](CUmodule* m, const void*, unsigned int n, CUjit_option* options,
                               void** values) {
    CUresult r = record("cuModuleLoadDataEx");
    void* errorBuffer = nullptr;
    void* infoBuffer = nullptr;
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) errorBuffer = values[i];
      if (options[i] == CU_JIT_INFO_LOG_BUFFER) infoBuffer = values[i];
    }
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES && errorBuffer)
        writeLog(r == CUDA_SUCCESS ? "" : state.jitErrorLog, errorBuffer, values[i]);
      if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES && infoBuffer)
        writeLog(state.jitInfoLog, infoBuffer, values[i]);
    }
    if (r == CUDA_SUCCESS) *m = handleOf<CUmodule>(state.nextHandle++);
    return r;
  };
  api->cuModuleLoadData = [](CUmodule* m, const void* image) {
    CUresult r = record("cuModuleLoadData");
    std::lock_guard lock(fakeMutex());
    state.loadedImages.push_back(static_cast<const char*>(image));
    if (r == CUDA_SUCCESS) *m = handleOf<CUmodule>(state.nextHandle++);
    return r;
  };
  api->cuLinkCreate = [](unsigned int n, CUjit_option* options, void** values, CUlinkState* l) {
    CUresult r = record("cuLinkCreate");
    std::lock_guard lock(fakeMutex());
    *l = handleOf<CUlinkState>(state.nextHandle++);
    FakeLink& link = state.links[valueOf(*l)];
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) link.errorLog = values[i];
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) link.errorLogBytes = values[i];
    }
    return r;
  };
  api->cuLinkAddData = [](CUlinkState l, CUjitInputType type, void* data, size_t, const char*,
                          unsigned int, CUjit_option*, void**) {
    CUresult r = record("cuLinkAddData");
    std::lock_guard lock(fakeMutex());
    if (type != CU_JIT_INPUT_PTX) return CUDA_ERROR_INVALID_VALUE;
    FakeLink& link = state.links.at(valueOf(l));
    if (r != CUDA_SUCCESS && link.errorLog)
      writeLog(state.jitErrorLog, link.errorLog, link.errorLogBytes);
    link.cubin = std::string("cubin of ") + static_cast<const char*>(data);
    return r;
  };
  api->cuLinkComplete = [](CUlinkState l, void** cubin, size_t* bytes) {
    CUresult r = record("cuLinkComplete");
    std::lock_guard lock(fakeMutex());
    std::string& c = state.links.at(valueOf(l)).cubin;
    *cubin = c.data();
    *bytes = c.size() + 1;
    return r;
  };
  api->cuLinkDestroy = [](CUlinkState l) {
    CUresult r = record("cuLinkDestroy");
    std::lock_guard lock(fakeMutex());
    state.links.erase(valueOf(l));
    return r;
  };
  api->cuModuleUnload = [](CUmodule) { return record("cuModuleUnload"); };
  api->cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) {
    CUresult r = record("cuModuleGetFunction");
    if (r != CUDA_SUCCESS) return r;
    state.functionNames.push_back(name);
    *f = handleOf<CUfunction>(state.functionNames.size());
    return CUDA_SUCCESS;
  };
  api->cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction f) {
    *v = a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES ? state.staticSharedBytes[kernelName(f)] : 0;
    return record("cuFuncGetAttribute");
  };
  api->cuFuncSetAttribute = [](CUfunction f, CUfunction_attribute a, int v) {
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
      state.dynamicSharedOptIn[kernelName(f)] = v;
    return record("cuFuncSetAttribute");
  };
  api->cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared, CUstream, void** params,
                           void** extra) {
    if (extra) return CUDA_ERROR_INVALID_VALUE;
    return runOrCapture("cuLaunchKernel",
                        launchOf(f, gx, gy, gz, bx, by, bz, shared, false, params));
  };
  api->cuLaunchCooperativeKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                      unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                      CUstream, void** params) {
    return runOrCapture("cuLaunchCooperativeKernel",
                        launchOf(f, gx, gy, gz, bx, by, bz, shared, true, params));
  };
  api->cuLaunchKernelEx = [](const CUlaunchConfig* c, CUfunction f, void** params,
                             void** extra) {
    if (extra) return CUDA_ERROR_INVALID_VALUE;
    bool cooperative = false;
    uint32_t cluster = 1;
    for (unsigned i = 0; i < c->numAttrs; ++i) {
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        cooperative = c->attrs[i].value.cooperative != 0;
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        cluster = c->attrs[i].value.clusterDim.x;
    }
    if (cluster == 0 || c->gridDimX % cluster != 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    FakeLaunch l = launchOf(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                            c->blockDimZ, c->sharedMemBytes, cooperative, params);
    l.clusterSize = cluster;
    return runOrCapture("cuLaunchKernelEx", std::move(l));
  };
  api->cuOccupancyMaxActiveClusters = [](int* clusters, CUfunction, const CUlaunchConfig*) {
    *clusters = state.maxActiveClusters;
    return record("cuOccupancyMaxActiveClusters");
  };
  api->cuOccupancyMaxActiveBlocksPerMultiprocessor = [](int* blocks, CUfunction, int blockSize,
                                                        size_t) {
    *blocks = std::min(32, 2048 / std::max(blockSize, 1));
    return record("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  };
  api->cuEventCreate = [](CUevent* e, unsigned int) {
    *e = handleOf<CUevent>(state.nextHandle++);
    return record("cuEventCreate");
  };
  api->cuEventDestroy = [](CUevent) { return record("cuEventDestroy"); };
  api->cuEventRecord = [](CUevent, CUstream) { return record("cuEventRecord"); };
  api->cuEventSynchronize = [](CUevent) { return record("cuEventSynchronize"); };
  api->cuEventElapsedTime = [](float* ms, CUevent, CUevent) {
    *ms = 1.5f;
    return record("cuEventElapsedTime");
  };
  api->cuStreamBeginCapture = [](CUstream, CUstreamCaptureMode) {
    CUresult r = record("cuStreamBeginCapture");
    if (r != CUDA_SUCCESS) return r;
    state.capturing = true;
    state.graphs.emplace_back();
    return CUDA_SUCCESS;
  };
  api->cuStreamEndCapture = [](CUstream, CUgraph* g) {
    state.capturing = false;
    *g = handleOf<CUgraph>(state.graphs.size());
    return record("cuStreamEndCapture");
  };
  api->cuGraphInstantiateWithFlags = [](CUgraphExec* e, CUgraph g, unsigned long long) {
    CUresult r = record("cuGraphInstantiateWithFlags");
    if (r != CUDA_SUCCESS) return r;
    uint64_t h = state.nextHandle++;
    state.execs[h] = state.graphs.at(valueOf(g) - 1);
    *e = handleOf<CUgraphExec>(h);
    return CUDA_SUCCESS;
  };
  api->cuGraphLaunch = [](CUgraphExec e, CUstream) {
    for (const FakeNode& n : state.execs.at(valueOf(e)))
      state.graphLaunches.push_back(n.launch);
    return record("cuGraphLaunch");
  };
  api->cuGraphGetNodes = [](CUgraph g, CUgraphNode* nodes, size_t* count) {
    size_t graph = valueOf(g) - 1;
    size_t n = state.graphs.at(graph).size();
    if (nodes) {
      for (size_t i = 0; i < std::min(n, *count); ++i)
        nodes[i] = nodeHandle(graph, state.listNodesReversed ? n - 1 - i : i);
    }
    *count = n;
    return record("cuGraphGetNodes");
  };
  api->cuGraphNodeGetType = [](CUgraphNode, CUgraphNodeType* type) {
    *type = CU_GRAPH_NODE_TYPE_KERNEL;
    return record("cuGraphNodeGetType");
  };
  api->cuGraphKernelNodeGetParams = [](CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
    const FakeLaunch& l = state.graphs.at(graphIndexOfNode(node)).at(nodeIndex(node)).launch;
    *p = CUDA_KERNEL_NODE_PARAMS{};
    auto it = std::find(state.functionNames.begin(), state.functionNames.end(), l.kernel);
    p->func = handleOf<CUfunction>(uint64_t(it - state.functionNames.begin()) + 1);
    p->gridDimX = l.grid[0], p->gridDimY = l.grid[1], p->gridDimZ = l.grid[2];
    p->blockDimX = l.block[0], p->blockDimY = l.block[1], p->blockDimZ = l.block[2];
    p->sharedMemBytes = l.sharedBytes;
    return record("cuGraphKernelNodeGetParams");
  };
  api->cuGraphExecKernelNodeSetParams = [](CUgraphExec e, CUgraphNode node,
                                           const CUDA_KERNEL_NODE_PARAMS* p) {
    CUresult r = record("cuGraphExecKernelNodeSetParams");
    if (r != CUDA_SUCCESS) return r;
    FakeNode& n = state.execs.at(valueOf(e)).at(nodeIndex(node));
    if (kernelName(p->func) != n.launch.kernel) return CUDA_ERROR_INVALID_VALUE;
    uint32_t cluster = n.launch.clusterSize; // a node's attributes stay as captured
    n.launch = launchOf(p->func, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                        p->blockDimZ, p->sharedMemBytes, n.launch.cooperative, p->kernelParams);
    n.launch.clusterSize = cluster;
    return CUDA_SUCCESS;
  };
  api->cuGraphExecDestroy = [](CUgraphExec) { return record("cuGraphExecDestroy"); };
  api->cuGraphDestroy = [](CUgraph) { return record("cuGraphDestroy"); };
  return api;
}

} // namespace weft::runtime::cuda::testing
