// gpu_replay: times weft's kernels on a real GPU without weft. It reads the PTX and the launch
// manifest that `weft compile G.json --bind ... --emit ptx|launch` write, allocates every buffer
// (filled with 0.5 in every 32-bit word), then launches the plan's kernels in order: a few
// warm-up runs, then --runs timed runs, each timed with CUDA events. Prints the median time of
// a whole run and of each kernel, in microseconds.
//
//   gpu_replay PLAN.ptx PLAN.launch [--runs N] [--copy BYTES]
//
// --copy BYTES: also times, in the same run and on the same stream, the copy baseline of a
// workload whose compulsory bytes are BYTES (issue 16): weft's copy kernel (bench/copy_kernel.h,
// half the bytes read, half written) and cuMemcpyDtoD of the same half, and prints the plan's
// time as a fraction of each copy's speed.
//
// Only the CUDA Driver API (cuda.h, libcuda) is used, so it builds on any machine with a
// toolkit and runs on any machine with a driver; scripts/gpu-time drives it.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "copy_kernel.h"

namespace {

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  throw std::runtime_error(std::string(what) + ": " + (name ? name : "unknown CUDA error"));
}

struct Kernel {
  std::string name;
  unsigned grid = 1, block = 1, shared = 0;
  bool cooperative = false;
  unsigned cluster = 1;         // thread-block cluster size along x (1: none)
  bool clusterRequired = false; // correct only in clusters of `cluster`
  bool fillSMs = false;          // the grid rises to the blocks the SMs keep resident
  unsigned long long tiles = 1;
  std::vector<std::string> params; // b<i> or barrier
  CUfunction fn = nullptr;
  std::vector<CUdeviceptr> args;
  std::vector<void*> argPtrs;
};

struct Manifest {
  std::vector<size_t> bufferBytes;
  std::vector<Kernel> kernels;
};

Manifest readManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  Manifest m;
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != "weft-launch" || version != 3)
    throw std::runtime_error(path + ": not a weft launch manifest (weft-launch 3)");
  size_t count = 0;
  in >> word >> count; // buffers N
  m.bufferBytes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    size_t index = 0, bytes = 0;
    in >> word >> index >> bytes;
    if (word != "buffer" || index >= count) throw std::runtime_error(path + ": bad buffer line");
    m.bufferBytes[index] = bytes;
  }
  in >> word >> count; // kernels N
  for (size_t i = 0; i < count; ++i) {
    Kernel k;
    int cooperative = 0, required = 0, fill = 0;
    size_t params = 0;
    in >> word >> k.name >> k.grid >> k.block >> k.shared >> cooperative >> k.cluster >>
        required >> fill >> k.tiles >> params;
    k.fillSMs = fill != 0;
    if (word != "kernel" || !in || k.cluster == 0 || k.grid % k.cluster != 0)
      throw std::runtime_error(path + ": bad kernel line");
    k.cooperative = cooperative != 0;
    k.clusterRequired = required != 0;
    k.params.resize(params);
    for (std::string& p : k.params)
      in >> p;
    m.kernels.push_back(std::move(k));
  }
  return m;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// cuLaunchKernelEx's configuration of kernel `k`: in clusters of k.cluster blocks along x,
/// cooperative where the kernel is.
struct ClusterLaunch {
  CUlaunchConfig config{};
  CUlaunchAttribute attributes[2]{};
  explicit ClusterLaunch(const Kernel& k) {
    config.gridDimX = k.grid;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = k.block;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = k.shared;
    attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[0].value.clusterDim.x = k.cluster;
    attributes[0].value.clusterDim.y = attributes[0].value.clusterDim.z = 1;
    attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attributes[1].value.cooperative = 1;
    config.attrs = attributes;
    config.numAttrs = k.cooperative ? 2 : 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete; // config.attrs points into this object
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

int run(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: gpu_replay PLAN.ptx PLAN.launch [--runs N] [--copy BYTES] [--as-planned]\n";
    return 2;
  }
  int runs = 50;
  unsigned long long copyBytes = 0;
  bool asPlanned = false; // the manifest's grids even where more clusters than fit (before/after)
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--as-planned") asPlanned = true;
    if (arg == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    if (arg == "--copy" && i + 1 < argc) copyBytes = std::strtoull(argv[++i], nullptr, 10);
  }
  Manifest m = readManifest(argv[2]);
  std::string ptx = readFile(argv[1]);

  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule module;
  check(cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData");

  std::vector<CUdeviceptr> buffers;
  for (size_t bytes : m.bufferBytes) {
    CUdeviceptr p;
    size_t padded = (bytes + 3) / 4 * 4;
    check(cuMemAlloc(&p, padded), "cuMemAlloc");
    check(cuMemsetD32(p, 0x3f000000u, padded / 4), "cuMemsetD32"); // 0.5f
    buffers.push_back(p);
  }
  std::vector<CUdeviceptr> barriers;
  for (Kernel& k : m.kernels) {
    check(cuModuleGetFunction(&k.fn, module, k.name.c_str()), k.name.c_str());
    if (k.shared > 48 * 1024)
      check(cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               int(k.shared)),
            "cuFuncSetAttribute");
    for (const std::string& p : k.params) {
      if (p == "barrier") {
        CUdeviceptr b;
        check(cuMemAlloc(&b, 256), "cuMemAlloc");
        check(cuMemsetD8(b, 0, 256), "cuMemsetD8");
        barriers.push_back(b);
        k.args.push_back(b);
      } else {
        size_t i = std::stoul(p.substr(1));
        if (p[0] != 'b' || i >= buffers.size()) throw std::runtime_error("bad parameter " + p);
        k.args.push_back(buffers[i]);
      }
    }
    for (CUdeviceptr& a : k.args)
      k.argPtrs.push_back(&a);
    if (k.fillSMs) { // as weft's Executable: the blocks the SMs keep resident, where more
      int perSM = 0, sms = 0;
      check(cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, k.fn, int(k.block), k.shared),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      check(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
            "cuDeviceGetAttribute");
      unsigned long long resident = static_cast<unsigned long long>(perSM) * unsigned(sms);
      k.grid = unsigned(std::max<unsigned long long>(k.grid, std::min(k.tiles, resident)));
    }
  }

  // In clusters as the manifest says (cuLaunchKernelEx), as weft's cuda device launches them; a
  // kernel whose clusters the driver refuses and that does not require them runs without, as
  // weft's device falls back, and says so once.
  auto launchInClusters = [](Kernel& k) {
    ClusterLaunch l(k);
    return cuLaunchKernelEx(&l.config, k.fn, k.argPtrs.data(), nullptr);
  };
  auto launch = [&](Kernel& k) {
    if (k.cluster > 1) {
      CUresult r = launchInClusters(k);
      if (r == CUDA_SUCCESS) return;
      if (k.clusterRequired) check(r, (k.name + " (in clusters)").c_str());
      const char* name = nullptr;
      cuGetErrorName(r, &name);
      std::printf("cluster_refused %s %u %s\n", k.name.c_str(), k.cluster, name ? name : "?");
      k.cluster = 1;
    }
    if (k.cooperative)
      check(cuLaunchCooperativeKernel(k.fn, k.grid, 1, 1, k.block, 1, 1, k.shared, nullptr,
                                      k.argPtrs.data()),
            k.name.c_str());
    else
      check(cuLaunchKernel(k.fn, k.grid, 1, 1, k.block, 1, 1, k.shared, nullptr,
                           k.argPtrs.data(), nullptr),
            k.name.c_str());
  };
  // How many of each kernel's clusters the GPU keeps resident at once: a grid of more clusters
  // runs the rest as they finish (a second wave), so a kernel whose rows are shared by its
  // clusters launches no more than fit, as weft's Executable does (launchConfigFor).
  for (Kernel& k : m.kernels) {
    if (k.cluster <= 1) continue;
    ClusterLaunch l(k);
    l.config.numAttrs = 1; // the clusters alone: the occupancy query takes no cooperative flag
    int clusters = 0;
    if (cuOccupancyMaxActiveClusters(&clusters, k.fn, &l.config) != CUDA_SUCCESS) continue;
    std::printf("clusters_resident %s %d of %u (clusters of %u)\n", k.name.c_str(), clusters,
                k.grid / k.cluster, k.cluster);
    if (!asPlanned && k.clusterRequired && clusters > 0 && unsigned(clusters) < k.grid / k.cluster)
      k.grid = unsigned(clusters) * k.cluster;
  }
  std::vector<CUevent> marks(m.kernels.size() + 1);
  for (CUevent& e : marks)
    check(cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int i = 0; i < 3; ++i)
    for (Kernel& k : m.kernels)
      launch(k);
  check(cuCtxSynchronize(), "warm-up");
  std::vector<float> total;
  std::vector<std::vector<float>> perKernel(m.kernels.size());
  for (int r = 0; r < runs; ++r) {
    check(cuEventRecord(marks[0], nullptr), "cuEventRecord");
    for (size_t k = 0; k < m.kernels.size(); ++k) {
      launch(m.kernels[k]);
      check(cuEventRecord(marks[k + 1], nullptr), "cuEventRecord");
    }
    check(cuEventSynchronize(marks.back()), "cuEventSynchronize");
    float ms = 0;
    check(cuEventElapsedTime(&ms, marks[0], marks.back()), "cuEventElapsedTime");
    total.push_back(ms * 1000);
    for (size_t k = 0; k < m.kernels.size(); ++k) {
      check(cuEventElapsedTime(&ms, marks[k], marks[k + 1]), "cuEventElapsedTime");
      perKernel[k].push_back(ms * 1000);
    }
  }
  std::printf("total_us %.2f kernels %zu runs %d\n", median(total), m.kernels.size(), runs);
  for (size_t k = 0; k < m.kernels.size(); ++k)
    std::printf("kernel %s grid %u block %u cluster %u us %.2f\n", m.kernels[k].name.c_str(),
                m.kernels[k].grid, m.kernels[k].block, m.kernels[k].cluster,
                median(perKernel[k]));
  if (copyBytes > 0) {
    // The copy baseline, timed the same way: median of `runs` after 3 warm-up runs.
    int sms = 0, major = 0, minor = 0;
    check(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "sm count");
    check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cc");
    check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cc");
    const weft::bench::CopyLaunch c = weft::bench::copyLaunch(copyBytes, sms);
    CUmodule copyModule;
    check(cuModuleLoadData(&copyModule, weft::bench::copyKernelPtx(major * 10 + minor).c_str()),
          "cuModuleLoadData (copy kernel)");
    CUfunction copyFn;
    check(cuModuleGetFunction(&copyFn, copyModule, weft::bench::kCopyKernelName), "copy kernel");
    CUdeviceptr src, dst;
    check(cuMemAlloc(&src, c.bufferBytes), "cuMemAlloc");
    check(cuMemAlloc(&dst, c.bufferBytes), "cuMemAlloc");
    check(cuMemsetD8(src, 1, c.bufferBytes), "cuMemsetD8");
    unsigned long long vectors = c.vectors;
    void* copyArgs[] = {&src, &dst, &vectors};
    const size_t copied = size_t(c.vectors) * weft::bench::kCopyVectorBytes;
    auto timeIt = [&](auto&& launchOnce) {
      for (int i = 0; i < 3; ++i)
        launchOnce();
      check(cuCtxSynchronize(), "copy warm-up");
      std::vector<float> us;
      for (int r = 0; r < runs; ++r) {
        check(cuEventRecord(marks[0], nullptr), "cuEventRecord");
        launchOnce();
        check(cuEventRecord(marks[1], nullptr), "cuEventRecord");
        check(cuEventSynchronize(marks[1]), "cuEventSynchronize");
        float ms = 0;
        check(cuEventElapsedTime(&ms, marks[0], marks[1]), "cuEventElapsedTime");
        us.push_back(ms * 1000);
      }
      return median(us);
    };
    const float kernelUs = timeIt([&] {
      check(cuLaunchKernel(copyFn, c.grid, 1, 1, c.block, 1, 1, 0, nullptr, copyArgs, nullptr),
            "copy kernel");
    });
    const float dtodUs = timeIt([&] { check(cuMemcpyDtoD(dst, src, copied), "cuMemcpyDtoD"); });
    const float planUs = median(total);
    std::printf("copy_kernel_us %.2f bytes %zu gbs %.1f plan_at %.3f\n", kernelUs, 2 * copied,
                2.0 * copied / (kernelUs * 1e3), kernelUs / planUs);
    std::printf("copy_dtod_us %.2f bytes %zu gbs %.1f plan_at %.3f\n", dtodUs, 2 * copied,
                2.0 * copied / (dtodUs * 1e3), dtodUs / planUs);
    cuMemFree(src);
    cuMemFree(dst);
    cuModuleUnload(copyModule);
  }
  for (CUdeviceptr p : buffers)
    cuMemFree(p);
  for (CUdeviceptr p : barriers)
    cuMemFree(p);
  cuModuleUnload(module);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpu_replay: " << e.what() << "\n";
    return 1;
  }
}
