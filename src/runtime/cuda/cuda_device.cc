#include "runtime/cuda/cuda_device.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "runtime/cache_base_dir.h"
#include "runtime/cuda/cuda_device_impl.h"
#include "runtime/cuda/ptx_split.h"
#include "ir/fnv1a64.h"
#include "weft/error.h"

namespace weft::runtime::cuda {
namespace {

/// A JIT log buffer as text: up to the first NUL, without trailing blank lines.
std::string logText(const std::vector<char>& buffer, size_t written) {
  std::string text(buffer.data(), std::min(written, buffer.size()));
  text = text.substr(0, text.find('\0'));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

/// The JIT's error and info log buffers, as the four options cuModuleLoadDataEx and
/// cuLinkCreate take. The size options are passed by value in the pointer and come back as the
/// bytes written (where the call writes them back).
struct JitLogs {
  static constexpr size_t kBytes = 64 * 1024;
  std::vector<char> error = std::vector<char>(kBytes, '\0'), info = std::vector<char>(kBytes, '\0');
  CUjit_option options[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                             CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[4] = {error.data(), reinterpret_cast<void*>(uintptr_t(kBytes)), info.data(),
                     reinterpret_cast<void*>(uintptr_t(kBytes))};
  std::string errorText() const { return logText(error, reinterpret_cast<uintptr_t>(values[1])); }
  std::string infoText() const { return logText(info, reinterpret_cast<uintptr_t>(values[3])); }
  /// The error log, else the info log, else a line saying there was none.
  std::string failureText() const {
    std::string e = errorText(), i = infoText();
    return !e.empty() ? e : !i.empty() ? i : "the PTX JIT left no log";
  }
};

std::string dim3Text(const Dim3& d) {
  return fmt::format("({}, {}, {})", d.x, d.y, d.z);
}

} // namespace

// --- the DeviceSpec from the device's attributes ---

DeviceSpec readDeviceSpec(const DriverApi& api, CUdevice device) {
  auto attribute = [&](CUdevice_attribute a, const char* what) {
    int value = 0;
    check(api, api.cuDeviceGetAttribute(&value, a, device), "cuDeviceGetAttribute", what);
    return value;
  };
  char name[256] = {};
  check(api, api.cuDeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName");

  DeviceSpec s;
  s.name = name;
  s.computeCapability =
      attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR") * 10 +
      attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR");
  s.smCount = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT");
  s.warpSize = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE");
  s.maxThreadsPerBlock =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  s.maxThreadsPerSM = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                                "MAX_THREADS_PER_MULTIPROCESSOR");
  s.maxBlocksPerSM =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "MAX_BLOCKS_PER_MULTIPROCESSOR");
  s.registersPerSM = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                               "MAX_REGISTERS_PER_MULTIPROCESSOR");
  // No attribute says this; it has been 255 since compute capability 3.5.
  s.maxRegistersPerThread = 255;
  s.sharedMemoryPerSM = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                                  "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR");
  s.sharedMemoryPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                     "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  s.sharedMemoryPerBlockDefault =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK");
  s.sharedMemoryReservedPerBlock = attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                                             "RESERVED_SHARED_MEMORY_PER_BLOCK");
  int clockKHz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "CLOCK_RATE");
  if (clockKHz > 0) s.clockGHz = clockKHz / 1e6;
  int busBits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "GLOBAL_MEMORY_BUS_WIDTH");
  int memoryKHz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "MEMORY_CLOCK_RATE");
  // bytes per transfer × transfers per second (two per clock: double data rate)
  if (busBits > 0 && memoryKHz > 0)
    s.memoryBandwidthGBs = busBits / 8.0 * memoryKHz * 1e3 * 2 / 1e9;
  // Four warp schedulers per SM on every architecture since Volta (compute capability 7.0).
  s.warpSchedulersPerSM = 4;
  return s;
}

// --- setup and teardown ---

CudaDevice::CudaDevice(std::shared_ptr<const DriverApi> api, int ordinal)
    : api_(std::move(api)), ordinal_(ordinal),
      allocator_(
          [this](size_t bytes) -> DevicePtr {
            CUdeviceptr p = 0;
            CUresult r = api_->cuMemAlloc(&p, bytes);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
              // the allocator trims and retries: let cached blocks' pending work finish first
              if (!capture_) check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
              return 0;
            }
            check(r, "cuMemAlloc", fmt::format("{} bytes", bytes));
            return p;
          },
          [this](DevicePtr p) {
            check(api_->cuMemFree(p), "cuMemFree", fmt::format("0x{:x}", p));
          }) {
  check(api_->cuInit(0), "cuInit");
  int version = 0;
  check(api_->cuDriverGetVersion(&version), "cuDriverGetVersion");
  driverVersion_ = version;
  if (version < kDriverAbiVersion)
    throw DeviceError(fmt::format(
        "the CUDA driver supports CUDA {}.{}; weft needs a driver for CUDA {}.{} or newer",
        version / 1000, version % 1000 / 10, kDriverAbiVersion / 1000,
        kDriverAbiVersion % 1000 / 10));
  int count = 0;
  check(api_->cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw DeviceError(
        count == 0
            ? std::string("the CUDA driver sees no GPU")
            : fmt::format("there is no cuda:{}; this machine has {} GPU(s), cuda:0 to cuda:{}",
                          ordinal, count, count - 1));
  check(api_->cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  spec_ = readDeviceSpec(*api_, device_);
  int cooperative = 0;
  check(api_->cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device_),
        "cuDeviceGetAttribute", "COOPERATIVE_LAUNCH");
  cooperativeLaunch_ = cooperative != 0;
  check(api_->cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  try {
    makeCurrent();
    check(api_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  } catch (...) {
    api_->cuDevicePrimaryCtxRelease(device_);
    throw;
  }
  name_ =
      fmt::format("cuda:{} ({}, {}, {} SMs)", ordinal, spec_.name, spec_.smName(), spec_.smCount);
  spdlog::debug("{}: driver {}.{} from {}{}", name_, version / 1000, version % 1000 / 10,
                api_->library, api_->viaGetProcAddress ? " (cuGetProcAddress)" : " (dlsym)");
}

CudaDevice::~CudaDevice() {
  // Teardown never throws: each step is tried and its failure ignored, so one broken
  // resource does not leak the others.
  const DriverApi& a = *api_;
  a.cuCtxSetCurrent(context_);
  if (capture_) {
    CUgraph partial = nullptr;
    if (a.cuStreamEndCapture(stream_, &partial) == CUDA_SUCCESS && partial)
      a.cuGraphDestroy(partial);
  }
  a.cuStreamSynchronize(stream_);
  for (Graph& g : graphs_) {
    if (g.exec) a.cuGraphExecDestroy(g.exec);
    if (g.graph) a.cuGraphDestroy(g.graph);
  }
  if (timerStart_) a.cuEventDestroy(timerStart_);
  if (timerStop_) a.cuEventDestroy(timerStop_);
  for (CUmodule m : modules_)
    a.cuModuleUnload(m);
  for (const auto& [handle, parts] : partModules_)
    for (size_t p = 1; p < parts.size(); ++p) // the first is in modules_
      a.cuModuleUnload(parts[p]);
  try {
    allocator_.releaseAll();
  } catch (const std::exception& e) {
    spdlog::warn("{}: releasing device memory: {}", name_, e.what());
  }
  a.cuStreamDestroy(stream_);
  a.cuDevicePrimaryCtxRelease(device_);
}

void CudaDevice::check(CUresult result, const char* call, const std::string& detail) const {
  cuda::check(*api_, result, call, detail);
}

void CudaDevice::makeCurrent() const {
  // Cheap, and it lets a device created on one thread be used from another.
  check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

void CudaDevice::refuseWhileCapturing(const char* what) const {
  if (capture_)
    throw DeviceError(
        fmt::format("{} during a graph capture: only launches can be captured; call it before "
                    "beginCapture() or after endCapture()",
                    what));
}

// --- memory ---

DevicePtr CudaDevice::allocate(size_t bytes) {
  makeCurrent();
  return allocator_.allocate(bytes);
}

void CudaDevice::free(DevicePtr p) {
  allocator_.free(p);
}

size_t CudaDevice::trimMemoryCache() {
  refuseWhileCapturing("trimMemoryCache");
  makeCurrent();
  check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  return allocator_.trim();
}

void CudaDevice::copyToDevice(DevicePtr dst, const void* src, size_t bytes) {
  refuseWhileCapturing("copyToDevice");
  if (bytes == 0) return;
  makeCurrent();
  check(api_->cuMemcpyHtoDAsync(dst, src, bytes, stream_), "cuMemcpyHtoDAsync",
        fmt::format("{} bytes to 0x{:x}", bytes, dst));
  // the caller may reuse `src` as soon as we return
  check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaDevice::copyToHost(void* dst, DevicePtr src, size_t bytes) {
  refuseWhileCapturing("copyToHost");
  if (bytes == 0) return;
  makeCurrent();
  check(api_->cuMemcpyDtoHAsync(dst, src, bytes, stream_), "cuMemcpyDtoHAsync",
        fmt::format("{} bytes from 0x{:x}", bytes, src));
  check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaDevice::memset(DevicePtr dst, uint8_t value, size_t bytes) {
  refuseWhileCapturing("memset");
  if (bytes == 0) return;
  makeCurrent();
  check(api_->cuMemsetD8Async(dst, value, bytes, stream_), "cuMemsetD8Async",
        fmt::format("{} bytes at 0x{:x}", bytes, dst));
}

// --- modules and kernels ---

namespace {

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Best effort, atomically (a reader never sees half a cubin): a cache that cannot be written
/// is logged and skipped.
void writeFile(const std::string& path, const void* data, size_t bytes) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = fmt::format("{}.tmp{}", path, uintptr_t(&ec));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(static_cast<const char*>(data), std::streamsize(bytes));
    if (!out) {
      spdlog::warn("cubin cache: cannot write {}", tmp);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) spdlog::warn("cubin cache: cannot write {}: {}", path, ec.message());
}

/// A cache entry holds the PTX it was compiled from before the cubin, and a load compares it
/// byte for byte with the PTX asked for: the file name's 64-bit hash and size only find the
/// entry, so two PTX texts that collide on them can never load each other's code.
///   "weft-cubin 1\n" <PTX bytes, decimal> "\n" <PTX> <cubin>
constexpr std::string_view kEntryMagic = "weft-cubin 1\n";

std::string cacheEntry(const std::string& ptx, const void* cubin, size_t cubinBytes) {
  std::string entry = fmt::format("{}{}\n", kEntryMagic, ptx.size());
  entry += ptx;
  entry.append(static_cast<const char*>(cubin), cubinBytes);
  return entry;
}

/// Where the cubin starts in `entry` when the entry was compiled from exactly `ptx`; npos when
/// it is not a well-formed entry or holds other PTX.
size_t cubinOffset(const std::string& entry, const std::string& ptx) {
  if (entry.compare(0, kEntryMagic.size(), kEntryMagic) != 0) return std::string::npos;
  size_t sizeEnd = entry.find('\n', kEntryMagic.size());
  if (sizeEnd == std::string::npos) return std::string::npos;
  if (entry.substr(kEntryMagic.size(), sizeEnd - kEntryMagic.size()) != std::to_string(ptx.size()))
    return std::string::npos;
  size_t start = sizeEnd + 1;
  if (entry.size() <= start + ptx.size() || entry.compare(start, ptx.size(), ptx) != 0)
    return std::string::npos;
  return start + ptx.size();
}

} // namespace

CubinCache cubinCacheFor(const std::string& compileCacheDir) {
  // The cubin cache is the default because the driver's JIT is slow and serial: graph_10000
  // (398 kernels, 6.9 MB of PTX) on an H200 spent 13 s in it, against 2.4 s linked in parallel
  // into an empty cache and 0.1 s loading the cached cubins.
  if (const char* env = std::getenv("WEFT_CUBIN_CACHE"); env && *env) {
    if (std::string_view(env) == "off") return {true, ""};
    return {false, env};
  }
  if (compileCacheDir == "off") return {};
  std::string base = compileCacheDir.empty() ? defaultCacheBaseDir() : compileCacheDir;
  if (base.empty()) return {};
  return {false, base + "/cubins"};
}

std::string CudaDevice::cubinPath(const std::string& dir, const std::string& ptx) const {
  // The key: the PTX, the SM it runs on and the driver that compiled it.
  return fmt::format("{}/{:016x}-{}b-sm{}-driver{}.cubin", dir, ir::fnv1a64(ptx), ptx.size(),
                     spec_.computeCapability, driverVersion_);
}

bool CudaDevice::cubinCacheWritable(const std::string& dir) {
  auto known = cubinDirWritable_.find(dir);
  if (known != cubinDirWritable_.end()) return known->second;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string why = ec ? ec.message() : "";
  if (why.empty() && ::access(dir.c_str(), W_OK | X_OK) != 0) why = std::strerror(errno);
  if (!why.empty())
    spdlog::warn("{}: the cubin cache {} cannot be written ({}); linking the PTX without keeping "
                 "its cubins (WEFT_CUBIN_CACHE=DIR picks another directory, =off the driver's JIT)",
                 name_, dir, why);
  return cubinDirWritable_[dir] = why.empty();
}

ModuleHandle CudaDevice::loadModule(const std::string& ptx) {
  return loadModule(ptx, "");
}

ModuleHandle CudaDevice::loadModule(const std::string& ptx, const std::string& compileCacheDir) {
  makeCurrent();
  CubinCache cache = cubinCacheFor(compileCacheDir);
  if (!cache.driverJit) {
    bool store = !cache.dir.empty() && cubinCacheWritable(cache.dir);
    return loadThroughCubinCache(ptx, cache.dir, store);
  }
  JitLogs logs;
  CUmodule module = nullptr;
  CUresult r = api_->cuModuleLoadDataEx(&module, ptx.c_str(), 4, logs.options, logs.values);
  if (r != CUDA_SUCCESS) check(r, "cuModuleLoadDataEx", logs.failureText());
  if (std::string info = logs.infoText(); !info.empty())
    spdlog::debug("{}: PTX JIT: {}", name_, info);
  modules_.push_back(module);
  return ModuleHandle(modules_.size() - 1);
}

ModuleHandle CudaDevice::loadThroughCubinCache(const std::string& ptx, const std::string& dir,
                                               bool store) {
  // A big module is split so that its parts are compiled on all cores at once, each part
  // cached on its own (ptx_split.h).
  std::vector<PtxPart> parts = splitPtxModule(ptx, linkParts(ptx.size()));
  std::vector<CUmodule> modules(parts.size(), nullptr);
  std::vector<std::exception_ptr> errors(parts.size());
  auto link = [&](size_t p) {
    try {
      makeCurrent(); // on this thread
      std::string path = dir.empty() ? "" : cubinPath(dir, parts[p].ptx);
      modules[p] = cubinModule(parts[p].ptx, path, store);
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  if (parts.size() == 1) {
    link(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t p = 0; p < parts.size(); ++p)
      threads.emplace_back(link, p);
    for (std::thread& t : threads)
      t.join();
    makeCurrent();
  }
  for (size_t p = 0; p < parts.size(); ++p)
    if (errors[p]) {
      for (CUmodule m : modules)
        if (m) api_->cuModuleUnload(m);
      std::rethrow_exception(errors[p]);
    }
  modules_.push_back(modules[0]);
  ModuleHandle handle(modules_.size() - 1);
  if (parts.size() > 1) {
    partModules_[handle] = modules;
    for (size_t p = 0; p < parts.size(); ++p)
      for (const std::string& e : parts[p].entries)
        kernelPart_[handle][e] = p;
  }
  return handle;
}

size_t CudaDevice::linkParts(size_t ptxBytes) const {
  // Parts of about kLinkPartBytes or more, one per hardware thread at most (WEFT_LINK_THREADS).
  constexpr size_t kLinkPartBytes = size_t(1) << 20;
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  if (const char* env = std::getenv("WEFT_LINK_THREADS"); env && std::atoi(env) > 0)
    threads = size_t(std::atoi(env));
  return std::max<size_t>(1, std::min(threads, ptxBytes / kLinkPartBytes));
}

CUmodule CudaDevice::cubinModule(const std::string& ptx, const std::string& path, bool store) {
  CUmodule module = nullptr;
  if (std::optional<std::string> entry = path.empty() ? std::nullopt : readFile(path)) {
    size_t offset = cubinOffset(*entry, ptx);
    if (offset == std::string::npos) {
      spdlog::warn("{}: the cubin cache entry {} was not compiled from this PTX (another PTX "
                   "with the same hash, or a damaged file); compiling the PTX again",
                   name_, path);
    } else if (api_->cuModuleLoadData(&module, entry->data() + offset) == CUDA_SUCCESS) {
      spdlog::debug("{}: cubin from the cache ({})", name_, path);
      return module;
    } else {
      spdlog::warn("{}: the cached cubin {} does not load; compiling the PTX again", name_, path);
    }
  }
  JitLogs logs;
  CUlinkState link = nullptr;
  check(api_->cuLinkCreate(4, logs.options, logs.values, &link), "cuLinkCreate");
  const char* failed = "cuLinkAddData";
  CUresult r = api_->cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()),
                                   ptx.size() + 1, "weft.ptx", 0, nullptr, nullptr);
  void* cubin = nullptr;
  size_t cubinBytes = 0;
  if (r == CUDA_SUCCESS) failed = "cuLinkComplete", r = api_->cuLinkComplete(link, &cubin, &cubinBytes);
  if (r == CUDA_SUCCESS) {
    if (store) {
      std::string entry = cacheEntry(ptx, cubin, cubinBytes);
      writeFile(path, entry.data(), entry.size());
    }
    failed = "cuModuleLoadData", r = api_->cuModuleLoadData(&module, cubin);
  }
  // The logs end at their first NUL (the sizes written back are not relied on here).
  logs.values[1] = logs.values[3] = reinterpret_cast<void*>(uintptr_t(JitLogs::kBytes));
  std::string failure = logs.failureText(), info = logs.infoText();
  api_->cuLinkDestroy(link); // frees the cubin, which the module no longer needs
  if (r != CUDA_SUCCESS) check(r, failed, failure);
  if (!info.empty()) spdlog::debug("{}: PTX JIT: {}", name_, info);
  return module;
}

KernelHandle CudaDevice::getKernel(ModuleHandle module, const std::string& name) {
  if (module < 0 || size_t(module) >= modules_.size())
    throw DeviceError(fmt::format("getKernel: no module {}", module));
  makeCurrent();
  Kernel k;
  k.name = name;
  CUmodule where = modules_[size_t(module)];
  if (auto split = kernelPart_.find(module); split != kernelPart_.end())
    if (auto part = split->second.find(name); part != split->second.end())
      where = partModules_.at(module)[part->second];
  check(api_->cuModuleGetFunction(&k.function, where, name.c_str()),
        "cuModuleGetFunction", fmt::format("kernel '{}' in module {}", name, module));
  check(api_->cuFuncGetAttribute(&k.staticSharedBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                 k.function),
        "cuFuncGetAttribute", fmt::format("SHARED_SIZE_BYTES of kernel '{}'", name));
  kernels_.push_back(std::move(k));
  return KernelHandle(kernels_.size() - 1);
}

CudaDevice::Kernel& CudaDevice::kernelOf(KernelHandle kernel) {
  if (kernel < 0 || size_t(kernel) >= kernels_.size())
    throw DeviceError(fmt::format("no kernel handle {}", kernel));
  return kernels_[size_t(kernel)];
}

void CudaDevice::allowDynamicShared(Kernel& k, size_t dynamicBytes) {
  int64_t total = int64_t(k.staticSharedBytes) + int64_t(dynamicBytes);
  if (total > spec_.sharedMemoryPerBlock)
    throw DeviceError(fmt::format(
        "kernel '{}' needs {} bytes of shared memory per block ({} static + {} dynamic) "
        "but {} allows at most {}",
        k.name, total, k.staticSharedBytes, dynamicBytes, name_, spec_.sharedMemoryPerBlock));
  if (total <= spec_.sharedMemoryPerBlockDefault || dynamicBytes <= k.dynamicSharedOptIn) return;
  check(api_->cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 int(dynamicBytes)),
        "cuFuncSetAttribute",
        fmt::format("MAX_DYNAMIC_SHARED_SIZE_BYTES = {} for kernel '{}'", dynamicBytes, k.name));
  k.dynamicSharedOptIn = uint32_t(dynamicBytes);
}

std::string CudaDevice::describeLaunch(const Kernel& k, const LaunchConfig& c) const {
  return fmt::format("kernel '{}', grid {}, block {}, {} bytes dynamic shared memory{}{}", k.name,
                     dim3Text(c.grid), dim3Text(c.block), c.dynamicSharedBytes,
                     c.cooperative ? ", cooperative" : "",
                     c.clusterSize > 1 ? fmt::format(", clusters of {}", c.clusterSize) : "");
}

namespace {

/// cuLaunchKernelEx's configuration: the launch, in clusters of `clusterSize` blocks along x.
struct ClusterLaunch {
  CUlaunchConfig config{};
  CUlaunchAttribute attributes[2]{};
  ClusterLaunch(const LaunchConfig& c, uint32_t clusterSize, CUstream stream) {
    config.gridDimX = c.grid.x;
    config.gridDimY = c.grid.y;
    config.gridDimZ = c.grid.z;
    config.blockDimX = c.block.x;
    config.blockDimY = c.block.y;
    config.blockDimZ = c.block.z;
    config.sharedMemBytes = c.dynamicSharedBytes;
    config.hStream = stream;
    attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[0].value.clusterDim.x = clusterSize;
    attributes[0].value.clusterDim.y = 1;
    attributes[0].value.clusterDim.z = 1;
    config.attrs = attributes;
    config.numAttrs = 1;
    if (c.cooperative) {
      attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attributes[1].value.cooperative = 1;
      config.numAttrs = 2;
    }
  }
};

} // namespace

uint32_t CudaDevice::clusterSizeFor(Kernel& k, const LaunchConfig& c) {
  if (c.clusterSize <= 1) return 1;
  if (c.clusterRequired) {
    // Rows shared by the cluster: no other launch is correct; the launch reports its error.
    if (spec_.computeCapability < 90)
      throw DeviceError(fmt::format("{} needs thread-block clusters (sm_90+); {} is sm_{}",
                                    describeLaunch(k, c), name_, spec_.computeCapability));
    return c.clusterSize;
  }
  if (k.clustersRefused || spec_.computeCapability < 90) return 1;
  auto key = std::make_tuple(c.clusterSize, c.block.x, c.dynamicSharedBytes, c.grid.x);
  if (auto it = k.clusterSizes.find(key); it != k.clusterSizes.end()) return it->second;
  ClusterLaunch l(c, c.clusterSize, stream_);
  int clusters = 0;
  CUresult r = api_->cuOccupancyMaxActiveClusters(&clusters, k.function, &l.config);
  uint32_t size = c.clusterSize;
  if (r != CUDA_SUCCESS) {
    spdlog::info("kernel '{}': the driver cannot place clusters of {} ({}); launching without",
                 k.name, c.clusterSize, describeResult(*api_, r));
    size = 1;
  } else if (c.cooperative && uint64_t(clusters) * c.clusterSize < c.grid.count()) {
    spdlog::info("kernel '{}': {} clusters of {} fit at once, the cooperative grid needs {}; "
                 "launching without clusters",
                 k.name, clusters, c.clusterSize, c.grid.count() / c.clusterSize);
    size = 1;
  }
  k.clusterSizes[key] = size;
  return size;
}

CUresult CudaDevice::launchInClusters(Kernel& k, const LaunchConfig& c, uint32_t clusterSize,
                                      void** params) {
  ClusterLaunch l(c, clusterSize, stream_);
  return api_->cuLaunchKernelEx(&l.config, k.function, params, nullptr);
}

void CudaDevice::launch(KernelHandle kernel, const LaunchConfig& c,
                        const std::vector<KernelArg>& args) {
  makeCurrent();
  Kernel& k = kernelOf(kernel);
  allowDynamicShared(k, c.dynamicSharedBytes);
  // the driver copies the parameter values out of these pointers before returning
  std::vector<void*> params;
  params.reserve(args.size());
  for (const KernelArg& a : args)
    params.push_back(const_cast<uint8_t*>(a.bytes.data()));
  if (c.cooperative && !cooperativeLaunch_)
    throw DeviceError(
        fmt::format("{} does not support cooperative launches, which {} needs (grid barrier)",
                    name_, describeLaunch(k, c)));
  uint32_t cluster = clusterSizeFor(k, c);
  if (cluster > 1) {
    CUresult r = launchInClusters(k, c, cluster, params.data());
    if (r != CUDA_SUCCESS && !capture_ && !c.clusterRequired) {
      // A driver that refuses this kernel's clusters (cooperative with clusters, say) runs it
      // without: the kernel reads its cluster's size at run time.
      spdlog::info("kernel '{}': cuLaunchKernelEx with clusters of {} failed ({}); launching "
                   "without clusters from now on",
                   k.name, cluster, describeResult(*api_, r));
      k.clustersRefused = true;
      cluster = 1;
    } else {
      check(r, "cuLaunchKernelEx", describeLaunch(k, c));
    }
  }
  if (cluster > 1) {
    // launched above
  } else if (c.cooperative) {
    check(api_->cuLaunchCooperativeKernel(k.function, c.grid.x, c.grid.y, c.grid.z, c.block.x,
                                          c.block.y, c.block.z, c.dynamicSharedBytes, stream_,
                                          params.data()),
          "cuLaunchCooperativeKernel", describeLaunch(k, c));
  } else {
    check(api_->cuLaunchKernel(k.function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y,
                               c.block.z, c.dynamicSharedBytes, stream_, params.data(), nullptr),
          "cuLaunchKernel", describeLaunch(k, c));
  }
  if (capture_) {
    CapturedLaunch l{kernel, {}, c.cooperative, cluster, {}};
    for (const KernelArg& a : args)
      l.argSizes.push_back(a.bytes.size());
    capture_->push_back(std::move(l));
  }
}

void CudaDevice::synchronize() {
  refuseWhileCapturing("synchronize");
  makeCurrent();
  check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

int CudaDevice::maxActiveBlocksPerSM(KernelHandle kernel, int blockSize,
                                     size_t dynamicSharedBytes) {
  makeCurrent();
  Kernel& k = kernelOf(kernel);
  allowDynamicShared(k, dynamicSharedBytes); // occupancy counts only what the kernel may use
  int blocks = 0;
  check(api_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.function, blockSize,
                                                          dynamicSharedBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        fmt::format("kernel '{}', {} threads per block, {} bytes dynamic shared memory", k.name,
                    blockSize, dynamicSharedBytes));
  return blocks;
}

int CudaDevice::maxActiveClusters(KernelHandle kernel, int blockSize, size_t dynamicSharedBytes,
                                  int clusterSize) {
  if (clusterSize <= 1 || spec_.computeCapability < 90) return 0;
  makeCurrent();
  Kernel& k = kernelOf(kernel);
  allowDynamicShared(k, dynamicSharedBytes);
  LaunchConfig one; // one cluster: the query reads the block, shared memory and cluster shape
  one.grid.x = uint32_t(clusterSize);
  one.block.x = uint32_t(blockSize);
  one.dynamicSharedBytes = uint32_t(dynamicSharedBytes);
  ClusterLaunch l(one, uint32_t(clusterSize), stream_);
  int clusters = 0;
  if (api_->cuOccupancyMaxActiveClusters(&clusters, k.function, &l.config) != CUDA_SUCCESS)
    return 0;
  return clusters;
}

// --- CUDA graphs ---

void CudaDevice::beginCapture() {
  if (capture_) throw DeviceError("beginCapture: a capture is already in progress");
  makeCurrent();
  // thread-local: only this thread's unsafe calls (cuMemAlloc, a synchronisation) would
  // invalidate the capture; other threads may use the driver meanwhile
  check(api_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  capture_.emplace();
}

std::vector<CUgraphNode> CudaDevice::kernelNodesOf(CUgraph graph) {
  size_t count = 0;
  check(api_->cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes");
  std::vector<CUgraphNode> nodes(count);
  if (count) check(api_->cuGraphGetNodes(graph, nodes.data(), &count), "cuGraphGetNodes");
  nodes.resize(count);
  std::vector<CUgraphNode> kernels;
  for (CUgraphNode n : nodes) {
    CUgraphNodeType type{};
    check(api_->cuGraphNodeGetType(n, &type), "cuGraphNodeGetType");
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) kernels.push_back(n);
  }
  return kernels;
}

GraphHandle CudaDevice::endCapture() {
  if (!capture_) throw DeviceError("endCapture: no capture in progress");
  std::vector<CapturedLaunch> launches = std::move(*capture_);
  capture_.reset();
  makeCurrent();
  Graph g;
  check(api_->cuStreamEndCapture(stream_, &g.graph), "cuStreamEndCapture");
  try {
    g.kernelNodes = kernelNodesOf(g.graph);
    bool libraryCalls = std::any_of(launches.begin(), launches.end(),
                                    [](const CapturedLaunch& l) { return !l.library.empty(); });
    if (libraryCalls)
      g.kernelNodes = launchNodes(g.kernelNodes, launches);
    else if (g.kernelNodes.size() != launches.size())
      throw DeviceError(
          fmt::format("endCapture: the captured graph has {} kernel node(s) but {} launch(es) were "
                      "captured",
                      g.kernelNodes.size(), launches.size()));
    g.params.resize(g.kernelNodes.size());
    for (size_t i = 0; i < g.kernelNodes.size(); ++i) {
      if (!g.kernelNodes[i]) continue; // a library call's: its nodes are the library's
      check(api_->cuGraphKernelNodeGetParams(g.kernelNodes[i], &g.params[i]),
            "cuGraphKernelNodeGetParams");
      // updateGraphKernelArgs addresses nodes by capture order: make sure that is the order we hold
      const Kernel& k = kernels_[size_t(launches[i].kernel)];
      if (g.params[i].func && g.params[i].func != k.function)
        throw DeviceError(
            fmt::format("endCapture: kernel node {} of the captured graph is not launch {} (kernel "
                        "'{}'); the driver did not list the nodes in capture order",
                        i, i, k.name));
    }
    g.launches = std::move(launches);
    check(api_->cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), "cuGraphInstantiateWithFlags");
  } catch (...) {
    api_->cuGraphDestroy(g.graph);
    throw;
  }
  graphs_.push_back(std::move(g));
  return GraphHandle(graphs_.size() - 1);
}

std::vector<CUgraphNode> CudaDevice::launchNodes(const std::vector<CUgraphNode>& nodes,
                                                 const std::vector<CapturedLaunch>& launches) {
  std::vector<CUgraphNode> out(launches.size(), nullptr);
  size_t next = 0; // the launch the next node of weft's may be
  auto skipLibraryCalls = [&] {
    while (next < launches.size() && !launches[next].library.empty()) ++next;
  };
  skipLibraryCalls();
  for (CUgraphNode n : nodes) {
    if (next == launches.size()) break;
    CUDA_KERNEL_NODE_PARAMS p{};
    check(api_->cuGraphKernelNodeGetParams(n, &p), "cuGraphKernelNodeGetParams");
    if (p.func != kernels_[size_t(launches[next].kernel)].function) continue; // a library's
    out[next++] = n;
    skipLibraryCalls();
  }
  if (next != launches.size())
    throw DeviceError(fmt::format(
        "endCapture: no kernel node of the captured graph is launch {} (kernel '{}') after the "
        "library calls' nodes",
        next, kernels_[size_t(launches[next].kernel)].name));
  return out;
}

CudaDevice::Graph& CudaDevice::graphOf(GraphHandle graph) {
  if (graph < 0 || size_t(graph) >= graphs_.size())
    throw DeviceError(fmt::format("no captured graph {}", graph));
  return graphs_[size_t(graph)];
}

void CudaDevice::replay(GraphHandle graph) {
  Graph& g = graphOf(graph);
  makeCurrent();
  check(api_->cuGraphLaunch(g.exec, stream_), "cuGraphLaunch", fmt::format("graph {}", graph));
}

void CudaDevice::updateGraphKernelArgs(GraphHandle graph, size_t node,
                                       const std::vector<KernelArg>& args) {
  setGraphNode("updateGraphKernelArgs", graph, node, nullptr, args);
}

void CudaDevice::updateGraphKernelLaunch(GraphHandle graph, size_t node, const LaunchConfig& config,
                                         const std::vector<KernelArg>& args) {
  setGraphNode("updateGraphKernelLaunch", graph, node, &config, args);
}

void CudaDevice::setGraphNode(const char* what, GraphHandle graph, size_t node,
                              const LaunchConfig* config, const std::vector<KernelArg>& args) {
  Graph& g = graphOf(graph);
  if (node >= g.kernelNodes.size())
    throw DeviceError(fmt::format("{}: graph {} has {} nodes, no node {}", what, graph,
                                  g.kernelNodes.size(), node));
  const CapturedLaunch& captured = g.launches[node];
  if (!captured.library.empty())
    throw DeviceError(fmt::format("{}: node {} of graph {} is a library call ({}); capture the "
                                  "graph again to change it",
                                  what, node, graph, captured.library));
  std::vector<size_t> sizes;
  for (const KernelArg& a : args)
    sizes.push_back(a.bytes.size());
  if (sizes != captured.argSizes)
    throw DeviceError(
        fmt::format("{}: node {} of graph {} (kernel '{}') was captured with "
                    "argument sizes [{}], not [{}]",
                    what, node, graph, kernels_[size_t(captured.kernel)].name,
                    fmt::join(captured.argSizes, ", "), fmt::join(sizes, ", ")));
  if (config && config->cooperative != captured.cooperative)
    throw DeviceError(fmt::format("{}: node {} of graph {} (kernel '{}') was captured {}", what,
                                  node, graph, kernels_[size_t(captured.kernel)].name,
                                  captured.cooperative ? "cooperative" : "not cooperative"));
  if (config) {
    uint32_t cluster = clusterSizeFor(kernelOf(captured.kernel), *config);
    if (cluster != captured.clusterSize)
      throw DeviceError(fmt::format("{}: node {} of graph {} (kernel '{}') was captured in "
                                    "clusters of {}, this launch runs in clusters of {}; capture "
                                    "it again",
                                    what, node, graph, kernels_[size_t(captured.kernel)].name,
                                    captured.clusterSize, cluster));
  }
  makeCurrent();
  std::vector<void*> params;
  for (const KernelArg& a : args)
    params.push_back(const_cast<uint8_t*>(a.bytes.data()));
  CUDA_KERNEL_NODE_PARAMS p = g.params[node]; // the captured launch, with new argument values
  p.kernelParams = params.data();
  p.extra = nullptr;
  if (config) { // and a new shape: grid, block and dynamic shared memory
    p.gridDimX = config->grid.x;
    p.gridDimY = config->grid.y;
    p.gridDimZ = config->grid.z;
    p.blockDimX = config->block.x;
    p.blockDimY = config->block.y;
    p.blockDimZ = config->block.z;
    p.sharedMemBytes = config->dynamicSharedBytes;
  }
  check(api_->cuGraphExecKernelNodeSetParams(g.exec, g.kernelNodes[node], &p),
        "cuGraphExecKernelNodeSetParams",
        fmt::format("node {} of graph {} (kernel '{}')", node, graph,
                    kernels_[size_t(captured.kernel)].name));
  // Later argument-only updates start from this launch.
  if (config) {
    g.params[node].gridDimX = p.gridDimX;
    g.params[node].gridDimY = p.gridDimY;
    g.params[node].gridDimZ = p.gridDimZ;
    g.params[node].blockDimX = p.blockDimX;
    g.params[node].blockDimY = p.blockDimY;
    g.params[node].blockDimZ = p.blockDimZ;
    g.params[node].sharedMemBytes = p.sharedMemBytes;
  }
}

// --- library calls ---

void CudaDevice::runLibraryCall(const std::string& what,
                                const std::function<void(CUstream)>& call) {
  makeCurrent();
  call(stream_);
  if (capture_) capture_->push_back(CapturedLaunch{-1, {}, false, 1, what});
}

// --- timing ---

void CudaDevice::startTimer() {
  refuseWhileCapturing("startTimer");
  makeCurrent();
  if (!timerStart_) check(api_->cuEventCreate(&timerStart_, CU_EVENT_DEFAULT), "cuEventCreate");
  if (!timerStop_) check(api_->cuEventCreate(&timerStop_, CU_EVENT_DEFAULT), "cuEventCreate");
  check(api_->cuEventRecord(timerStart_, stream_), "cuEventRecord");
  timerRunning_ = true;
}

std::optional<double> CudaDevice::stopTimer() {
  refuseWhileCapturing("stopTimer");
  if (!timerRunning_) throw DeviceError("stopTimer: no timer running; call startTimer() first");
  timerRunning_ = false;
  makeCurrent();
  check(api_->cuEventRecord(timerStop_, stream_), "cuEventRecord");
  check(api_->cuEventSynchronize(timerStop_), "cuEventSynchronize");
  float ms = 0;
  check(api_->cuEventElapsedTime(&ms, timerStart_, timerStop_), "cuEventElapsedTime");
  return double(ms);
}

// --- the public entry points ---

std::unique_ptr<Device> makeCudaDevice(int ordinal, const std::string& driverLibrary) {
  return std::make_unique<CudaDevice>(loadDriverApi(driverLibrary), ordinal);
}

std::unique_ptr<Device> makeCudaDevice(int ordinal) {
  return makeCudaDevice(ordinal, kDriverLibrary);
}

bool cudaDriverAvailable(std::string* why, const std::string& driverLibrary) {
  try {
    auto api = loadDriverApi(driverLibrary);
    check(*api, api->cuInit(0), "cuInit");
    int count = 0;
    check(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count > 0) return true;
    if (why) *why = "the CUDA driver sees no GPU";
  } catch (const std::exception& e) {
    if (why) *why = e.what();
  }
  return false;
}

bool cudaDriverAvailable(std::string* why) {
  return cudaDriverAvailable(why, kDriverLibrary);
}

ModuleHandle loadModule(Device& device, const std::string& ptx,
                        const std::string& compileCacheDir) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  return cuda ? cuda->loadModule(ptx, compileCacheDir) : device.loadModule(ptx);
}

size_t trimDeviceMemoryCache(Device& device) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  return cuda ? cuda->trimMemoryCache() : 0;
}

} // namespace weft::runtime::cuda
