#pragma once
// The executor's state for one launch and the class that runs it (executor.h is its public
// face). Like LLVM's interpreter, the execution engine is apart from the per-instruction
// semantics: lane semantics (lane_semantics.h) are pure functions of instruction, mask and
// registers, and the Executor's member functions, which own the blocks, warps, memory and
// counters, are defined by concern in three files:
//   warp_scheduler.cc  picking each warp's running group, reconvergence, barriers, exits,
//                      and the warp loop that issues, counts and dispatches instructions;
//   memory_access.cc   ld / st / atom: address resolution, bounds and alignment checks,
//                      uninitialised-shared checks, global sectors and shared accesses;
//   launch.cc          launch checks, block setup, special registers, the block loops
//                      (plain, sampled, cooperative), deadlock reports, occupancy.
// Only those files include this header (all compiled with -frounding-math, lane_values.h).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/device_memory.h"
#include "sim/executor.h"
#include "sim/lane_values.h"
#include "sim/program.h"
#include "weft/device.h"

namespace weft::sim {

// ---------------------------------------------------------------- model state

/// A lane may run (Ready), waits at bar.sync for barrier Warp::barId (AtBarrier), waits at a
/// warp-synchronous instruction for the other lanes of its member mask (WarpWait), or is done.
/// AtClusterBarrier: it waits at barrier.cluster.wait for its cluster's phase to complete.
enum LaneState : uint8_t { Ready, AtBarrier, WarpWait, Exited, AtClusterBarrier };

/// A call in progress: where the caller goes on, its register and local-frame bases, and the
/// call instruction (whose argument list says where the return values go).
struct Frame {
  uint32_t retPc, regBase, localBase, callPc;
};

/// Where the lanes of `mask` meet again after they diverged: the immediate post-dominator of
/// a divergent branch, or the instruction after a call, in the call frame `regBase`. A lane
/// that reaches it waits there until every other lane of `mask` has arrived or exited.
struct Reconvergence {
  uint32_t pc, regBase, mask;
};

struct Warp {
  uint32_t index = 0;       // within the block
  uint32_t firstThread = 0; // linear thread index of lane 0
  uint32_t pc[32], regBase[32], localBase[32];
  uint8_t state[32];
  uint8_t barId[32];
  std::vector<Frame> frames[32];
  std::vector<uint8_t> local[32];
  std::vector<uint64_t> regs; // slot s of lane l at regs[s * 32 + l]
  // the running group: its lanes, pc and frame
  uint32_t mask = 0, gpc = 0, gbase = 0;
  // The group runs until its pc reaches stopPc: mergePc, the lowest pc of the other lanes it
  // may run with (their paths meet there), or rpc, its reconvergence point, when ahead of it.
  uint32_t mergePc = ~0u, rpc = kNoReconvergence, stopPc = ~0u;
  bool othersReady = false;                 // ready lanes outside the group, waiting ones included
  std::vector<Reconvergence> reconvergence; // innermost last
  // barrier.cluster: lanes that arrived and have yet to wait, and the phase each arrived in
  uint32_t clusterArrived = 0;
  uint64_t clusterPhase[32] = {};
  uint32_t gridBarrierCalls = 0;
  uint32_t backEdges = 0; // taken back edges while other lanes of the warp wait
  bool done = false;
};

/// The warps of one warpgroup (4 consecutive warps, the first a multiple of 4) that wait at a
/// wgmma.mma_async for the others: bit r for warp 4g + r, with each one's register base.
struct WarpgroupArrival {
  uint32_t arrived = 0, pc = 0;
  uint32_t regBase[4] = {};
};

/// Warp::barId of lanes parked at a wgmma.mma_async (bar.sync's ids are 0-15).
constexpr uint8_t kWarpgroupBarrier = 16;

struct Block {
  uint32_t id[3] = {0, 0, 0};
  uint64_t linear = 0;
  // Its thread-block cluster: the cluster's blocks lie at cluster[0 .. clusterSize), this one
  // at cluster[rank]. The barrier.cluster state lives in cluster[0]: threads that arrived in
  // the current phase (exited ones no longer count) and the phases completed.
  Block* cluster = this;
  uint32_t rank = 0;
  uint32_t clusterArrivals = 0;
  uint64_t clusterPhases = 0;
  std::vector<Warp> warps;
  std::vector<uint8_t> shared, written;
  uint32_t liveThreads = 0;
  uint32_t barArrived[16] = {};
  uint32_t barExpected[16] = {};
  uint32_t doneWarps = 0;
  std::vector<WarpgroupArrival> warpgroups;
};

/// Why Executor::runWarp returned: every lane exited; every live lane waits (at a barrier or
/// for warp members); or it used its instruction budget (or yields) with lanes still ready.
enum class WarpStatus { Finished, Blocked, Budget };

class Executor {
public:
  explicit Executor(const LaunchRequest& rq)
      : rq_(rq), prog_(*rq.program), fn_(prog_.functions[rq.function]), code_(prog_.code.data()),
        mem_(*rq.memory) {
    const Dim3& bd = rq.config.block;
    threadsPerBlock_ = uint32_t(bd.count());
    warpsPerBlock_ = (threadsPerBlock_ + 31) / 32;
    sharedBytes_ = rq.config.dynamicSharedBytes
                       ? fn_.dynamicSharedOffset + rq.config.dynamicSharedBytes
                       : fn_.staticSharedBytes;
    counters_.kernel = fn_.name;
  }

  LaunchCounters run();

private:
  /// ExecOptions::sampleBlocks: runs the sampled blocks (and, when they differ, all others)
  /// through `runBlock` and adds the extrapolated counts of the blocks it skipped.
  template <class RunBlock>
  void runSampledBlocks(uint64_t nBlocks, uint64_t samples, RunBlock&& runBlock);

  // setup (launch.cc)
  void initBlock(Block& b, uint64_t linear);
  void ensureRegs(Warp& w, uint32_t slotsPerLane);
  void ensureLocal(Warp& w, int l, uint64_t bytes);

  // scheduling and the warp loop (warp_scheduler.cc)
  /// Picks the next group: the ready lanes with the lowest pc (and the same frame) among
  /// those that have yet to reach the innermost reconvergence point, never from `exclude`
  /// unless no other lane is ready. False when no lane may run now.
  bool schedule(Warp& w, uint32_t exclude = 0);
  /// Gives up the innermost reconvergence point of every warp of the block that waits at
  /// one; for when no lane of the block can run otherwise. Returns whether there was any.
  bool abandonReconvergence(Block& b);
  void flush(Warp& w) {
    forLanes(w.mask, [&](int l) { w.pc[l] = w.gpc; });
    w.mask = 0;
  }
  WarpStatus runWarp(Block& b, Warp& w, uint64_t budget);
  WarpStatus statusOf(const Warp& w) const;
  void arriveBarrier(Block& b, Warp& w, uint32_t m, uint32_t id, uint32_t expected, bool sync);
  void releaseIfComplete(Block& b, uint32_t id, bool sync);
  void exitLanes(Block& b, Warp& w, uint32_t m);

  // thread-block clusters (cluster_ops.cc)
  /// mapa: each lane's shared address mapped into block `rank` of its cluster.
  void execMapa(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  /// barrier.cluster.arrive of the lanes of m.
  void arriveCluster(const Instr& I, Block& b, Warp& w, uint32_t m);
  /// barrier.cluster.wait of the lanes of m: lanes whose phase has completed go on; the others
  /// park (AtClusterBarrier) and the group is flushed. Returns whether any lane parked.
  bool waitCluster(const Instr& I, Block& b, Warp& w, uint32_t m);
  /// Completes the cluster's barrier phase when every live thread of it has arrived.
  void releaseClusterIfComplete(Block& lead);
  /// A thread of the cluster exits: an arrival it made in the current phase no longer counts.
  void exitClusterLanes(Block& b, Warp& w, uint32_t m);
  /// The host address of `size` bytes at shared::cluster address `addr` (program.h's layout);
  /// sets sharedBlock_ to the block whose shared memory it is.
  uint8_t* resolveCluster(Block& b, Warp& w, int l, const Instr& I, uint64_t addr, uint32_t size,
                          bool write);
  /// The deadlock report when threads wait at barrier.cluster.wait; "" when none does.
  std::string clusterDeadlock(Block& b) const;

  // memory access and sector counting (memory_access.cc)
  /// ld / st of the lanes of m: every access resolved and checked, global sectors and
  /// shared accesses counted.
  void execMem(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  /// atom / red of the lanes of m, one lane after another in lane order.
  void execAtom(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  /// ldmatrix and mma.sync once every lane of the warp has arrived (tensor_core_ops.cc).
  void execTensorCore(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  /// wgmma.mma_async by the whole warp w (m): its lanes wait until the other three warps of
  /// its warpgroup arrive at the same instruction; the last one's arrival computes the four
  /// warps' accumulators and releases them (tensor_core_ops.cc).
  void arriveWarpgroupMma(const Instr& I, Block& b, Warp& w, uint32_t m);
  void execWarpgroupMma(const Instr& I, Block& b, uint32_t group);
  /// cp.async of the lanes of m: the copy happens at issue (tensor_core_ops.cc).
  void execCpAsync(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  enum MemClass : uint8_t { MGlobal, MShared, MLocal, MConst, MParam };
  /// The host address of `size` bytes at `addr` in space `sp` (a generic address is first
  /// mapped to its window's space) for lane l; faults when misaligned or out of bounds.
  uint8_t* resolve(Block& b, Warp& w, int l, const Instr& I, Space sp, uint64_t addr, uint32_t size,
                   bool write, MemClass& cls);

  // the launch (launch.cc)
  /// The value of special register I.mode (%tid, %ctaid, %clock, ...) for lane l.
  uint64_t sreg(const Instr& I, const Block& b, const Warp& w, int l) const;
  [[noreturn]] void fault(const Block& b, const Warp& w, int lane, const Instr& I,
                          const std::string& what) const;
  /// "PTX line N `text`, block (x,y,z), thread (x,y,z)" for error messages.
  std::string where(const Block& b, const Warp& w, int lane, const Instr& I) const;

  const LaunchRequest& rq_;
  const Program& prog_;
  const Function& fn_;
  const Instr* code_;
  DeviceMemory& mem_;
  uint32_t threadsPerBlock_, warpsPerBlock_;
  uint64_t sharedBytes_;
  LaunchCounters counters_;
  uint64_t progress_ = 0; // bumped by any store, atomic, barrier arrival or exit
  uint64_t issued_ = 0;   // warp instructions issued (all kinds), for %clock
  uint64_t minGridBarriers_ = ~0ull;
  bool cooperative_ = false;
  uint32_t clusterSize_ = 1;
  Block* sharedBlock_ = nullptr; // whose shared memory the last shared access resolved to
};

} // namespace weft::sim
