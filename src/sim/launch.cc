// One launch (simt_executor.h): the launch's checks (kernel, block size, .reqntid/.maxntid,
// shared memory, parameters), block and warp setup, special registers, the error messages
// that name a thread, and the block loops: plain launches run block after block (or a sample
// of them, ExecOptions::sampleBlocks), cluster launches run cluster after cluster with each
// cluster's blocks interleaved (cluster_ops.cc), cooperative launches keep every block resident
// and interleave warps; all report a deadlock when no thread makes progress. Also the occupancy
// estimate (blocksPerSM) the cooperative check and the sim Device use.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "sim/simt_executor.h"
#include "weft/error.h"

namespace weft::sim {

// ---------------------------------------------------------------- setup

void Executor::ensureRegs(Warp& w, uint32_t slotsPerLane) {
  if (w.regs.size() >= size_t(slotsPerLane) * 32) return;
  w.regs.resize(std::max<size_t>(size_t(slotsPerLane) * 32, w.regs.size() * 2), 0);
}

void Executor::ensureLocal(Warp& w, int l, uint64_t bytes) {
  if (w.local[l].size() < bytes)
    w.local[l].resize(std::max<uint64_t>(bytes, w.local[l].size() * 2), 0);
}

void Executor::initBlock(Block& b, uint64_t linear) {
  const Dim3& g = rq_.config.grid;
  b.linear = linear;
  // Callers keep a cluster's blocks side by side in rank order (the whole grid, or one cluster).
  b.rank = uint32_t(linear % g.x % clusterSize_);
  b.cluster = &b - b.rank;
  b.clusterArrivals = 0;
  b.clusterPhases = 0;
  b.id[0] = uint32_t(linear % g.x);
  b.id[1] = uint32_t((linear / g.x) % g.y);
  b.id[2] = uint32_t(linear / (uint64_t(g.x) * g.y));
  b.shared.assign(sharedBytes_, 0);
  b.written.assign(rq_.options.checkUninitialisedShared ? sharedBytes_ : 0, 0);
  b.liveThreads = threadsPerBlock_;
  std::fill(std::begin(b.barArrived), std::end(b.barArrived), 0);
  std::fill(std::begin(b.barExpected), std::end(b.barExpected), 0);
  b.doneWarps = 0;
  b.warpgroups.assign((warpsPerBlock_ + 3) / 4, WarpgroupArrival{});
  b.warps.resize(warpsPerBlock_);
  for (uint32_t wi = 0; wi < warpsPerBlock_; ++wi) {
    Warp& w = b.warps[wi];
    w.index = wi;
    w.firstThread = wi * 32;
    w.mask = 0;
    w.mergePc = w.stopPc = ~0u;
    w.rpc = kNoReconvergence;
    w.reconvergence.clear();
    w.gridBarrierCalls = 0;
    w.backEdges = 0;
    w.clusterArrived = 0;
    w.done = false;
    ensureRegs(w, fn_.numRegs);
    for (int l = 0; l < 32; ++l) {
      w.pc[l] = fn_.entry;
      w.regBase[l] = 0;
      w.localBase[l] = 0;
      w.frames[l].clear();
      w.state[l] = w.firstThread + l < threadsPerBlock_ ? Ready : Exited;
      if (w.state[l] == Ready) ensureLocal(w, l, fn_.frameSize);
    }
  }
}

// ---------------------------------------------------------------- errors

std::string Executor::where(const Block& b, const Warp& w, int lane, const Instr& I) const {
  const Dim3& bd = rq_.config.block;
  uint32_t t = w.firstThread + uint32_t(lane);
  std::string text =
      I.line && I.line <= prog_.sourceLines.size() ? prog_.sourceLines[I.line - 1] : "";
  auto first = text.find_first_not_of(" \t");
  text = first == std::string::npos ? "" : text.substr(first);
  return fmt::format("PTX line {} `{}`, block ({},{},{}), thread ({},{},{})", I.line, text, b.id[0],
                     b.id[1], b.id[2], t % bd.x, (t / bd.x) % bd.y, t / (bd.x * bd.y));
}

void Executor::fault(const Block& b, const Warp& w, int lane, const Instr& I,
                     const std::string& what) const {
  throw DeviceError(fmt::format("kernel '{}': {} at {}", fn_.name, what, where(b, w, lane, I)));
}

// ---------------------------------------------------------------- special registers

uint64_t Executor::sreg(const Instr& I, const Block& b, const Warp& w, int l) const {
  const Dim3& bd = rq_.config.block;
  const Dim3& g = rq_.config.grid;
  uint32_t t = w.firstThread + uint32_t(l);
  switch (Sreg(I.mode)) {
  case Sreg::TidX:
    return t % bd.x;
  case Sreg::TidY:
    return (t / bd.x) % bd.y;
  case Sreg::TidZ:
    return t / (bd.x * bd.y);
  case Sreg::NtidX:
    return bd.x;
  case Sreg::NtidY:
    return bd.y;
  case Sreg::NtidZ:
    return bd.z;
  case Sreg::CtaidX:
    return b.id[0];
  case Sreg::CtaidY:
    return b.id[1];
  case Sreg::CtaidZ:
    return b.id[2];
  case Sreg::NctaidX:
    return g.x;
  case Sreg::NctaidY:
    return g.y;
  case Sreg::NctaidZ:
    return g.z;
  case Sreg::LaneId:
    return uint32_t(l);
  case Sreg::WarpId:
    return w.index;
  case Sreg::NWarpId:
    return uint32_t(rq_.spec->maxThreadsPerSM / 32);
  case Sreg::SmId:
    return uint32_t(b.linear % uint64_t(rq_.spec->smCount));
  case Sreg::NSmId:
    return uint32_t(rq_.spec->smCount);
  case Sreg::GridId:
    return 1;
  case Sreg::Clock:
  case Sreg::Clock64:
    return issued_;
  case Sreg::GlobalTimer:
    return issued_ * 4;
  case Sreg::DynSmemSize:
    return rq_.config.dynamicSharedBytes;
  case Sreg::TotalSmemSize:
    return sharedBytes_;
  case Sreg::LanemaskEq:
    return 1u << l;
  case Sreg::LanemaskLt:
    return (1u << l) - 1;
  case Sreg::LanemaskLe:
    return uint32_t((2ull << l) - 1);
  case Sreg::LanemaskGt:
    return ~uint32_t((2ull << l) - 1);
  case Sreg::LanemaskGe:
    return ~((1u << l) - 1);
  case Sreg::EnvReg:
    return 0;
  case Sreg::ClusterCtarank:
  case Sreg::ClusterCtaidX:
    return b.rank;
  case Sreg::ClusterNctarank:
  case Sreg::ClusterNctaidX:
    return clusterSize_;
  case Sreg::ClusterCtaidY:
  case Sreg::ClusterCtaidZ:
    return 0;
  case Sreg::ClusterNctaidY:
  case Sreg::ClusterNctaidZ:
    return 1;
  case Sreg::ClusteridX:
    return b.id[0] / clusterSize_;
  case Sreg::ClusteridY:
    return b.id[1];
  case Sreg::ClusteridZ:
    return b.id[2];
  case Sreg::NclusteridX:
    return g.x / clusterSize_;
  case Sreg::NclusteridY:
    return g.y;
  case Sreg::NclusteridZ:
    return g.z;
  case Sreg::IsExplicitCluster:
    return clusterSize_ > 1 ? 1 : 0;
  }
  return 0;
}

namespace {

// ---------------------------------------------------------------- block sampling

// The per-block work counters, everything LaunchCounters counts per block (not the kernel
// name, the grid-barrier minimum nor the block counts themselves).
constexpr uint64_t LaunchCounters::*kBlockWorkCounters[] = {
    &LaunchCounters::warpInstructions,   &LaunchCounters::threadInstructions,
    &LaunchCounters::globalLoadRequests, &LaunchCounters::globalStoreRequests,
    &LaunchCounters::globalSectorsRead,  &LaunchCounters::globalSectorsWritten,
    &LaunchCounters::sharedLoads,        &LaunchCounters::sharedStores,
    &LaunchCounters::blockBarriers,      &LaunchCounters::atomics,
    &LaunchCounters::syncInstructions,   &LaunchCounters::syncSectors,
    &LaunchCounters::clusterBarriers,    &LaunchCounters::clusterSharedLoads};

std::vector<uint64_t> blockWork(const LaunchCounters& after, const LaunchCounters& before) {
  std::vector<uint64_t> work;
  for (auto field : kBlockWorkCounters)
    work.push_back(after.*field - before.*field);
  return work;
}

} // namespace

template <class RunBlock>
void Executor::runSampledBlocks(uint64_t nBlocks, uint64_t samples, RunBlock&& runBlock) {
  // Sample i of `samples` is block i * (nBlocks - 1) / samples: spread over blocks
  // 0 .. nBlocks - 2, block 0 first. The last block often covers a partial tile and is
  // always simulated on its own.
  std::vector<uint64_t> sampled;
  for (uint64_t i = 0; i < samples; ++i)
    sampled.push_back(i * (nBlocks - 1) / samples);
  std::vector<uint64_t> firstWork;
  bool uniform = true;
  for (uint64_t bi : sampled) {
    LaunchCounters before = counters_;
    runBlock(bi);
    std::vector<uint64_t> work = blockWork(counters_, before);
    if (firstWork.empty())
      firstWork = std::move(work);
    else if (work != firstWork)
      uniform = false;
  }
  runBlock(nBlocks - 1);
  const uint64_t skipped = nBlocks - 1 - samples;
  if (uniform) {
    for (size_t f = 0; f < firstWork.size(); ++f)
      counters_.*kBlockWorkCounters[f] += firstWork[f] * skipped;
    return;
  }
  // The samples differ: simulate every block not sampled yet, so the counts stay exact.
  size_t next = 0;
  for (uint64_t bi = 0; bi + 1 < nBlocks; ++bi) {
    if (next < sampled.size() && sampled[next] == bi) {
      ++next;
      continue;
    }
    runBlock(bi);
  }
}

// ---------------------------------------------------------------- launch

namespace {

/// Thread-block clusters, LaunchConfig::clusterSize consecutive blocks along x: sm_90 or
/// later, a divisor of grid.x, at most 16 blocks (8 is the portable maximum; 16 needs the
/// non-portable size the H100 allows), all resident on one GPC at once. A GPC is taken as 16
/// SMs: a cluster may not exceed 16 x the blocks one SM holds. The kernel's .reqnctapercluster
/// and .maxclusterrank, when it declares them, must admit it.
void checkClusters(const Function& fn, const LaunchConfig& cfg, const DeviceSpec& spec,
                   int perSM) {
  const uint32_t n = cfg.clusterSize;
  constexpr int kSMsPerGpc = 16;
  auto fail = [&](const std::string& why) {
    throw DeviceError(fmt::format("kernel '{}': cluster size {}: {}", fn.name, n, why));
  };
  if (n == 0) fail("a cluster has at least one block (1: no clusters)");
  const int* req = fn.reqnctapercluster;
  if (req[0] && (uint32_t(req[0]) != n || req[1] != 1 || req[2] != 1))
    fail(fmt::format("the kernel requires .reqnctapercluster {}, {}, {} (clusters here are "
                     "clusterSize blocks along x)",
                     req[0], req[1], req[2]));
  if (n == 1) return;
  if (spec.computeCapability < 90)
    fail(fmt::format("thread-block clusters need sm_90 or later; the device ({}) is {}", spec.name,
                     spec.smName()));
  if (cfg.grid.x % n != 0)
    fail(fmt::format("it does not divide grid.x = {}", cfg.grid.x));
  if (n > kMaxClusterSize) fail("the largest cluster is 16 blocks (8 portably)");
  if (fn.maxclusterrank && n > uint32_t(fn.maxclusterrank))
    fail(fmt::format("the kernel allows .maxclusterrank {}", fn.maxclusterrank));
  if (int64_t(n) > int64_t(perSM) * kSMsPerGpc)
    fail(fmt::format("a cluster's blocks cannot all be resident on one GPC ({} blocks per SM x {} "
                     "SMs)",
                     perSM, kSMsPerGpc));
}

} // namespace

LaunchCounters Executor::run() {
  const LaunchConfig& cfg = rq_.config;
  const DeviceSpec& spec = *rq_.spec;
  const uint64_t nBlocks = cfg.grid.count();
  if (!fn_.isKernel)
    throw DeviceError(fmt::format("'{}' is a .func, not a kernel (.entry)", fn_.name));
  if (nBlocks == 0 || threadsPerBlock_ == 0)
    throw DeviceError(fmt::format("kernel '{}': empty grid or block ({} blocks of {} threads)",
                                  fn_.name, nBlocks, threadsPerBlock_));
  if (threadsPerBlock_ > uint32_t(spec.maxThreadsPerBlock))
    throw DeviceError(
        fmt::format("kernel '{}': {} threads per block exceeds the device's maximum of {}",
                    fn_.name, threadsPerBlock_, spec.maxThreadsPerBlock));
  if (fn_.reqntid && uint32_t(fn_.reqntid) != threadsPerBlock_)
    throw DeviceError(
        fmt::format("kernel '{}' requires .reqntid {} threads per block; launched with {}",
                    fn_.name, fn_.reqntid, threadsPerBlock_));
  if (fn_.maxntid && uint32_t(fn_.maxntid) < threadsPerBlock_)
    throw DeviceError(
        fmt::format("kernel '{}' allows at most .maxntid {} threads per block; launched with {}",
                    fn_.name, fn_.maxntid, threadsPerBlock_));
  if (int64_t(sharedBytes_) > spec.sharedMemoryPerBlock)
    throw DeviceError(fmt::format(
        "kernel '{}': {} bytes of static and {} bytes of dynamic shared memory exceed "
        "the {} bytes a block may use",
        fn_.name, fn_.staticSharedBytes, cfg.dynamicSharedBytes, spec.sharedMemoryPerBlock));
  if (rq_.params.size() < fn_.paramsSize)
    throw DeviceError(
        fmt::format("kernel '{}': parameter buffer of {} bytes, the kernel declares {}", fn_.name,
                    rq_.params.size(), fn_.paramsSize));
  cooperative_ = cfg.cooperative;
  clusterSize_ = cfg.clusterSize;
  const int perSM = blocksPerSM(prog_, fn_, spec, int(threadsPerBlock_), cfg.dynamicSharedBytes);
  // A block the simulator's register estimate does not fit still launches (ptxas fits a kernel's
  // registers to its .maxntid), so a cluster is checked against at least one block per SM.
  checkClusters(fn_, cfg, spec, std::max(perSM, 1));
  counters_.blocks = nBlocks;
  const uint64_t deadlock = rq_.options.deadlockInstructions;
  auto deadlockError = [&](Block& b, Warp& w) {
    int lane = 0;
    for (int l = 0; l < 32; ++l)
      if (w.state[l] == Ready) {
        lane = l;
        break;
      }
    uint32_t pc = w.mask ? w.gpc : w.pc[lane];
    throw DeviceError(fmt::format(
        "kernel '{}': no thread made progress (no store, atomic, barrier or exit) in {} warp "
        "instructions; it "
        "spins at {}{}",
        fn_.name, deadlock, where(b, w, lane, code_[pc]),
        cooperative_
            ? ""
            : " (a grid-wide barrier needs a cooperative launch with every block resident)"));
  };
  auto barrierDeadlock = [&](Block& b) {
    std::string cluster = clusterDeadlock(b);
    if (!cluster.empty()) throw DeviceError(cluster);
    for (auto& w : b.warps)
      for (int l = 0; l < 32; ++l)
        if (w.state[l] == AtBarrier || w.state[l] == WarpWait) {
          const Instr& I = code_[w.pc[l] - (w.state[l] == AtBarrier ? 1 : 0)];
          throw DeviceError(fmt::format("kernel '{}': deadlock: threads wait at a barrier that the "
                                        "other threads of the block never reach, "
                                        "at {}",
                                        fn_.name, where(b, w, l, I)));
        }
    throw DeviceError(fmt::format("kernel '{}': deadlock", fn_.name));
  };
  auto finishBlock = [&](Block& b) {
    uint32_t calls = 0;
    for (auto& w : b.warps)
      calls = std::max(calls, w.gridBarrierCalls);
    minGridBarriers_ = std::min<uint64_t>(minGridBarriers_, calls);
  };
  // Blocks that are resident together (a cooperative grid, or one cluster): their warps are
  // interleaved, 512 warp instructions at a time, until every block has finished.
  auto runResident = [&](Block* blocks, uint64_t n) {
    uint64_t doneBlocks = 0, lastProgress = progress_, spun = 0;
    while (doneBlocks < n) {
      bool ran = false;
      for (uint64_t bi = 0; bi < n; ++bi) {
        Block& b = blocks[bi];
        if (b.doneWarps == warpsPerBlock_) continue;
        for (auto& w : b.warps) {
          if (w.done) continue;
          uint64_t before = counters_.warpInstructions + counters_.syncInstructions;
          WarpStatus s = runWarp(b, w, 512);
          uint64_t ran1 = counters_.warpInstructions + counters_.syncInstructions - before;
          if (ran1) ran = true;
          if (s == WarpStatus::Finished) {
            w.done = true;
            if (++b.doneWarps == warpsPerBlock_) {
              ++doneBlocks;
              ++counters_.simulatedBlocks;
              finishBlock(b);
            }
          }
          if (progress_ != lastProgress)
            lastProgress = progress_, spun = 0;
          else if ((spun += ran1) > deadlock)
            deadlockError(b, w);
        }
      }
      if (!ran && doneBlocks < n) {
        bool abandoned = false;
        for (uint64_t bi = 0; bi < n; ++bi)
          abandoned |= abandonReconvergence(blocks[bi]);
        if (abandoned) continue;
        for (uint64_t bi = 0; bi < n; ++bi)
          if (blocks[bi].doneWarps < warpsPerBlock_) barrierDeadlock(blocks[bi]);
      }
    }
  };

  if (!cooperative_) {
    // Block after block; with clusters, cluster after cluster, each one's blocks resident
    // together. Sampling (ExecOptions::sampleBlocks) samples whole clusters.
    std::vector<Block> resident(clusterSize_);
    auto runBlock = [&](uint64_t bi) {
      Block& b = resident[0];
      initBlock(b, bi);
      uint64_t lastProgress = progress_, spun = 0;
      while (b.doneWarps < warpsPerBlock_) {
        bool ran = false;
        for (auto& w : b.warps) {
          if (w.done) continue;
          uint64_t before = counters_.warpInstructions + counters_.syncInstructions;
          WarpStatus s = runWarp(b, w, 1u << 16);
          uint64_t n = counters_.warpInstructions + counters_.syncInstructions - before;
          if (n) ran = true;
          if (s == WarpStatus::Finished) {
            w.done = true;
            ++b.doneWarps;
          }
          if (progress_ != lastProgress)
            lastProgress = progress_, spun = 0;
          else if ((spun += n) > deadlock)
            deadlockError(b, w);
        }
        if (!ran && b.doneWarps < warpsPerBlock_ && !abandonReconvergence(b)) barrierDeadlock(b);
      }
      finishBlock(b);
      ++counters_.simulatedBlocks;
    };
    auto runUnit = [&](uint64_t unit) {
      if (clusterSize_ == 1) return runBlock(unit);
      for (uint32_t r = 0; r < clusterSize_; ++r)
        initBlock(resident[r], unit * clusterSize_ + r);
      runResident(resident.data(), clusterSize_);
    };
    const uint64_t units = nBlocks / clusterSize_;
    const uint64_t samples = rq_.options.sampleBlocks;
    if (samples == 0 || units <= samples + 1 || fn_.handsOff) {
      for (uint64_t u = 0; u < units; ++u)
        runUnit(u);
    } else {
      runSampledBlocks(units, samples, runUnit);
    }
  } else {
    uint64_t resident = uint64_t(perSM) * uint64_t(spec.smCount);
    if (nBlocks > resident)
      throw DeviceError(fmt::format(
          "kernel '{}': cooperative launch of {} blocks, but only {} can be resident at once ({} "
          "per SM x {} SMs "
          "with {} threads per block, {} registers per thread, {} bytes of shared memory)",
          fn_.name, nBlocks, resident, perSM, spec.smCount, threadsPerBlock_,
          estimatedRegisters(fn_), sharedBytes_));
    std::vector<Block> blocks(nBlocks);
    for (uint64_t bi = 0; bi < nBlocks; ++bi)
      initBlock(blocks[bi], bi);
    runResident(blocks.data(), nBlocks);
  }
  counters_.gridBarriers = minGridBarriers_ == ~0ull ? 0 : minGridBarriers_;
  return counters_;
}

int estimatedRegisters(const Function& fn) {
  // what ptxas would allocate is close to the register pressure; a few more for addressing
  int regs = std::clamp(int(fn.maxLive32) + 8, 16, 255);
  if (fn.maxnreg > 0) regs = std::min(regs, fn.maxnreg);
  return (regs + 7) / 8 * 8;
}

int blocksPerSM(const Program& program, const Function& fn, const DeviceSpec& spec, int blockSize,
                uint64_t dynamicSharedBytes) {
  (void)program;
  const uint64_t smem =
      dynamicSharedBytes ? fn.dynamicSharedOffset + dynamicSharedBytes : fn.staticSharedBytes;
  return weft::blocksPerSM(spec, blockSize, estimatedRegisters(fn), int64_t(smem));
}

LaunchCounters executeLaunch(const LaunchRequest& request) {
  Executor ex(request);
  return ex.run();
}

} // namespace weft::sim
