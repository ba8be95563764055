// Thread-block clusters (simt_executor.h): mapa, shared::cluster addresses (distributed
// shared memory) and barrier.cluster. A cluster is LaunchConfig::clusterSize consecutive
// blocks along x; the launch (launch.cc) keeps its blocks resident and interleaved, so one
// block can read another's shared memory and wait for it at barrier.cluster.
//
// Addresses: a shared::cluster address below kClusterRankStride is a shared::cta address of
// the accessing block itself; (rank + 1) * kClusterRankStride + offset is `offset` in block
// `rank` of the same cluster (program.h). mapa builds the latter from either form.
//
// barrier.cluster: a phase completes when every live thread of every block of the cluster
// has arrived (exited threads count as arrived); barrier.cluster.wait parks a thread until the
// phase it arrived in has completed. Each completed phase counts once in clusterBarriers.
#include <fmt/format.h>

#include "sim/lane_semantics.h"
#include "sim/simt_executor.h"

namespace weft::sim {

namespace {

/// Ranks a shared::cluster address can name (the address is 32 bits wide).
constexpr uint64_t kMaxEncodedRank = 0xffffffffull / kClusterRankStride - 1;

} // namespace

// ---------------------------------------------------------------- mapa

void Executor::execMapa(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  const bool rankOf = I.mode == 1; // getctarank
  Src a = src(I.s[0], R), rank = rankOf ? a : src(I.s[1], R);
  const bool generic = I.space == Space::Generic;
  forLanes(m, [&](int l) {
    uint64_t addr = a[l];
    if (generic) {
      if (addr - kSharedWindow >= kWindowSize)
        fault(b, w, l, I,
              fmt::format("{} of generic address 0x{:x}, which is not shared memory",
                          rankOf ? "getctarank" : "mapa", addr));
      addr -= kSharedWindow;
    } else if (I.ty == Ty::U32) {
      addr = uint32_t(addr);
    }
    if (rankOf) {
      d[l] = addr >= kClusterRankStride ? addr / kClusterRankStride - 1 : b.rank;
      return;
    }
    const uint64_t r = uint32_t(rank[l]);
    if (r > kMaxEncodedRank)
      fault(b, w, l, I,
            fmt::format("mapa to block rank {}; the cluster has {} blocks", r, clusterSize_));
    const uint64_t mapped = (r + 1) * kClusterRankStride + addr % kClusterRankStride;
    d[l] = generic ? kSharedWindow + mapped : mapped;
  });
}

// ---------------------------------------------------------------- distributed shared memory

uint8_t* Executor::resolveCluster(Block& b, Warp& w, int l, const Instr& I, uint64_t addr,
                                  uint32_t size, bool write) {
  const char* verb = write ? "store" : "load";
  Block* target = &b;
  uint64_t offset = addr;
  if (addr >= kClusterRankStride) {
    const uint64_t rank = addr / kClusterRankStride - 1;
    if (rank >= clusterSize_)
      fault(b, w, l, I,
            fmt::format("shared::cluster {} at address 0x{:x} names block rank {} of a cluster of "
                        "{} blocks",
                        verb, addr, rank, clusterSize_));
    target = b.cluster + rank;
    offset = addr % kClusterRankStride;
  }
  if (target != &b && I.op != Op::Ld && I.op != Op::St && I.op != Op::Atom && I.op != Op::Red)
    fault(b, w, l, I,
          fmt::format("shared::cluster address 0x{:x} of another block: only ld, st, atom and "
                      "red may access another block's shared memory",
                      addr));
  if (target != &b && target->liveThreads == 0)
    fault(b, w, l, I,
          fmt::format("shared::cluster {} at address 0x{:x}: every thread of block ({},{},{}) "
                      "(cluster rank {}) has exited, and its shared memory with it (a "
                      "barrier.cluster before the exit keeps it)",
                      verb, addr, target->id[0], target->id[1], target->id[2], target->rank));
  if (offset + size > target->shared.size())
    fault(b, w, l, I,
          fmt::format("out-of-bounds shared::cluster {} of {} bytes at address 0x{:x} (block "
                      "({},{},{}), cluster rank {}, has {} bytes of shared memory)",
                      verb, size, addr, target->id[0], target->id[1], target->id[2], target->rank,
                      target->shared.size()));
  sharedBlock_ = target;
  return target->shared.data() + offset;
}

// ---------------------------------------------------------------- barrier.cluster

void Executor::arriveCluster(const Instr& I, Block& b, Warp& w, uint32_t m) {
  Block& lead = *b.cluster;
  forLanes(m, [&](int l) {
    if (w.clusterArrived >> l & 1)
      fault(b, w, l, I,
            "barrier.cluster.arrive twice without a barrier.cluster.wait in between");
    w.clusterArrived |= 1u << l;
    w.clusterPhase[l] = lead.clusterPhases;
  });
  lead.clusterArrivals += __builtin_popcount(m);
  ++progress_;
  releaseClusterIfComplete(lead);
}

bool Executor::waitCluster(const Instr& I, Block& b, Warp& w, uint32_t m) {
  const Block& lead = *b.cluster;
  uint32_t park = 0;
  forLanes(m, [&](int l) {
    if (!(w.clusterArrived >> l & 1))
      fault(b, w, l, I, "barrier.cluster.wait without a barrier.cluster.arrive before it");
    if (w.clusterPhase[l] < lead.clusterPhases)
      w.clusterArrived &= ~(1u << l); // its phase has completed: go on
    else
      park |= 1u << l;
  });
  if (!park) return false;
  // the parked lanes resume after the wait; the group's other lanes go on from there too
  forLanes(w.mask, [&](int l) {
    w.pc[l] = w.gpc + 1;
    if (park >> l & 1) w.state[l] = AtClusterBarrier;
  });
  w.mask = 0;
  return true;
}

void Executor::releaseClusterIfComplete(Block& lead) {
  if (lead.clusterArrivals == 0) return;
  uint64_t live = 0;
  for (uint32_t r = 0; r < clusterSize_; ++r)
    live += lead.cluster[r].liveThreads;
  if (lead.clusterArrivals < live) return;
  lead.clusterArrivals = 0;
  ++lead.clusterPhases;
  ++counters_.clusterBarriers;
  for (uint32_t r = 0; r < clusterSize_; ++r)
    for (Warp& w : lead.cluster[r].warps)
      for (int l = 0; l < 32; ++l)
        if (w.state[l] == AtClusterBarrier) {
          w.state[l] = Ready;
          w.clusterArrived &= ~(1u << l);
        }
}

void Executor::exitClusterLanes(Block& b, Warp& w, uint32_t m) {
  Block& lead = *b.cluster;
  const uint32_t counted = m & w.clusterArrived;
  forLanes(counted, [&](int l) {
    if (w.clusterPhase[l] == lead.clusterPhases) --lead.clusterArrivals;
  });
  w.clusterArrived &= ~m;
  releaseClusterIfComplete(lead);
}

std::string Executor::clusterDeadlock(Block& b) const {
  const Block* lead = b.cluster;
  const Block* waitBlock = nullptr;
  const Warp* waitWarp = nullptr;
  int waitLane = 0;
  const Block* missBlock = nullptr;
  const Warp* missWarp = nullptr;
  int missLane = 0;
  for (uint32_t r = 0; r < clusterSize_; ++r)
    for (const Warp& w : lead[r].warps)
      for (int l = 0; l < 32; ++l) {
        if (w.state[l] == AtClusterBarrier && !waitWarp)
          waitBlock = &lead[r], waitWarp = &w, waitLane = l;
        const bool arrived = (w.clusterArrived >> l & 1) && w.clusterPhase[l] == lead->clusterPhases;
        if (w.state[l] != Exited && w.state[l] != AtClusterBarrier && !arrived && !missWarp)
          missBlock = &lead[r], missWarp = &w, missLane = l;
      }
  if (!waitWarp) return "";
  std::string text = fmt::format(
      "kernel '{}': deadlock: threads wait at barrier.cluster.wait for threads of their cluster "
      "that never arrive, at {}",
      fn_.name, where(*waitBlock, *waitWarp, waitLane, code_[waitWarp->pc[waitLane] - 1]));
  if (missWarp) {
    const uint32_t pc = missWarp->pc[missLane] - (missWarp->state[missLane] == AtBarrier ? 1 : 0);
    text += fmt::format("; not arrived: {}", where(*missBlock, *missWarp, missLane, code_[pc]));
  }
  return text;
}

} // namespace weft::sim
