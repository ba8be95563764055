#pragma once
// What the planner and the launch configuration need to know about a GPU. Profiles for the
// V100, A100 and H100 come from NVIDIA's published specifications; the cuda device reads a
// DeviceSpec from the real device's attributes instead.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft {

struct DeviceSpec {
  std::string name;             // "h100"
  int computeCapability = 90;   // 70, 80, 90: sm_XX
  int smCount = 132;
  int warpSize = 32;
  int maxThreadsPerBlock = 1024;
  int maxThreadsPerSM = 2048;
  int maxBlocksPerSM = 32;
  int registersPerSM = 65536;
  int maxRegistersPerThread = 255;
  int64_t sharedMemoryPerSM = 228 * 1024;
  int64_t sharedMemoryPerBlock = 227 * 1024; // opt-in maximum for dynamic shared memory
  int64_t sharedMemoryPerBlockDefault = 48 * 1024; // without the opt-in attribute
  int64_t sharedMemoryReservedPerBlock = 1024; // the driver's, from the SM's (sm_80+; 0 before)
  double memoryBandwidthGBs = 3350;   // DRAM bandwidth, GB/s
  double clockGHz = 1.755;            // boost clock, for modeled instruction time
  int warpSchedulersPerSM = 4;        // warp instructions issued per cycle per SM
  // The device runs plain GEMM steps on a vendor library where that is faster (cuBLASLt on the
  // cuda device, chosen by timing at run time: runtime/cuda/cublaslt_steps.h). astitch then
  // keeps dots plain (no epilogue, prologue or store layout fused into them), so that the
  // library can run them: on an H200, weft's GEMM ran the BERT-base layer's FFN GEMMs with
  // their bias and GELU fused 2.5-10x slower than cuBLASLt ran them plain (docs/performance.md).
  // False in the profiles; `weft run --device cuda` sets it for a graph with dots when cuBLASLt
  // loads (runtime::cuda::gemmLibraryAvailable).
  bool gemmLibrary = false;

  std::string smName() const { return "sm_" + std::to_string(computeCapability); }
  /// Threads that can be resident on the whole device at once (one "wave" of thread slots).
  int64_t threadSlots() const { return int64_t(smCount) * maxThreadsPerSM; }
};

/// The occupancy rule, one for the planner and the simulator: how many blocks of `blockSize`
/// threads, each thread holding `registersPerThread` registers (rounded up to 8, allocated per
/// warp in units of 256) and each block `sharedBytes` of shared memory, fit on one SM at once.
/// Threads are allocated in whole warps, and each block also takes the driver's reserved shared
/// memory from the SM's. 0 when one block does not fit (too many threads or too much shared
/// memory for a block, or too many registers for the SM).
inline int blocksPerSM(const DeviceSpec& spec, int blockSize, int registersPerThread,
                       int64_t sharedBytes) {
  if (blockSize <= 0 || blockSize > spec.maxThreadsPerBlock ||
      sharedBytes > spec.sharedMemoryPerBlock)
    return 0;
  auto roundUp = [](int x, int m) { return (x + m - 1) / m * m; };
  int warps = (blockSize + spec.warpSize - 1) / spec.warpSize;
  int byThreads = spec.maxThreadsPerSM / (warps * spec.warpSize);
  int regsPerWarp = roundUp(roundUp(registersPerThread < 1 ? 1 : registersPerThread, 8) * spec.warpSize, 256);
  int byRegisters = spec.registersPerSM / (regsPerWarp * warps);
  int64_t perBlock = sharedBytes + spec.sharedMemoryReservedPerBlock;
  int64_t bySmem = perBlock > 0 ? spec.sharedMemoryPerSM / perBlock : spec.maxBlocksPerSM;
  int64_t n = spec.maxBlocksPerSM;
  for (int64_t limit : {int64_t(byThreads), int64_t(byRegisters), bySmem})
    n = limit < n ? limit : n;
  return n < 0 ? 0 : int(n);
}

/// "v100", "a100", "h100". Nullopt for an unknown name.
std::optional<DeviceSpec> deviceSpecProfile(const std::string& name);
std::vector<std::string> deviceSpecProfileNames();

} // namespace weft
