// The warp scheduler and the warp loop (simt_executor.h). Every lane has its own pc; a warp
// runs its ready lanes with the lowest pc (and call frame) together as one group until they
// branch apart, reach another group's pc or their reconvergence point, wait or exit. The loop
// issues one instruction at a time for the group: it counts it, applies the guard, and
// dispatches it to lane semantics (lane_semantics.h), memory access (memory_access.cc), or
// handles it here when it changes who runs: barriers, warp-synchronous instructions,
// branches, calls and returns, exits. The rules are in executor.h and src/sim/README.md.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "sim/lane_semantics.h"
#include "sim/simt_executor.h"

namespace weft::sim {

namespace {

constexpr uint32_t kYieldBackEdges = 1u << 16;
/// Nested divergence (or recursion) deeper than this reconverges only where paths meet.
constexpr size_t kMaxReconvergenceDepth = 1024;

uint32_t stopPcOf(const Warp& w) {
  return std::min(w.mergePc, w.rpc > w.gpc ? w.rpc : ~0u);
}

/// Makes the lanes of `mask` wait at `pc` (in frame `regBase`) for each other.
void reconvergeAt(Warp& w, uint32_t pc, uint32_t regBase, uint32_t mask) {
  auto& stack = w.reconvergence;
  if (!stack.empty() && stack.back().pc == pc && stack.back().regBase == regBase) {
    stack.back().mask |= mask; // e.g. the lanes leaving a loop one iteration after another
    return;
  }
  if (stack.size() < kMaxReconvergenceDepth) stack.push_back({pc, regBase, mask});
}

} // namespace

// ---------------------------------------------------------------- scheduling

bool Executor::schedule(Warp& w, uint32_t exclude) {
  uint32_t ready = 0, live = 0;
  for (int l = 0; l < 32; ++l) {
    ready |= uint32_t(w.state[l] == Ready) << l;
    live |= uint32_t(w.state[l] != Exited) << l;
  }
  // Only the lanes that have yet to reach the innermost reconvergence point may run.
  uint32_t runnable = ready, rpc = kNoReconvergence, rpcBase = 0;
  while (!w.reconvergence.empty()) {
    const Reconvergence& top = w.reconvergence.back();
    uint32_t arrived = 0;
    forLanes(top.mask & ready, [&](int l) {
      arrived |= uint32_t(w.pc[l] == top.pc && w.regBase[l] == top.regBase) << l;
    });
    const uint32_t pending = top.mask & live & ~arrived;
    if (pending & ready & ~exclude) {
      runnable = pending & ready;
      rpc = top.pc;
      rpcBase = top.regBase;
      break;
    }
    // the pending lanes wait at a barrier or a warp-synchronous instruction
    if (pending && !exclude) return false;
    // All arrived (or exited): they run on together. Or the only lanes left to arrive are
    // spinning ones that yield, maybe to a lane that waits here: give this point up.
    w.reconvergence.pop_back();
    w.backEdges = 0;
  }
  const uint32_t pick = (runnable & ~exclude) ? runnable & ~exclude : runnable;
  if (!pick) return false;
  uint32_t best = ~0u, base = 0, mask = 0;
  forLanes(pick, [&](int l) {
    if (w.pc[l] < best) {
      best = w.pc[l];
      base = w.regBase[l];
      mask = 1u << l;
    } else if (w.pc[l] == best && w.regBase[l] == base) {
      mask |= 1u << l;
    }
  });
  uint32_t merge = ~0u;
  forLanes(runnable & ~mask, [&](int l) { merge = std::min(merge, w.pc[l]); });
  w.mask = mask;
  w.gpc = best;
  w.gbase = base;
  w.mergePc = merge;
  w.rpc = base == rpcBase ? rpc : kNoReconvergence;
  w.stopPc = stopPcOf(w);
  w.othersReady = (ready & ~mask) != 0;
  return true;
}

bool Executor::abandonReconvergence(Block& b) {
  bool any = false;
  for (auto& w : b.warps) {
    if (w.done || w.reconvergence.empty()) continue;
    w.reconvergence.pop_back();
    any = true;
  }
  return any;
}

WarpStatus Executor::statusOf(const Warp& w) const {
  bool blocked = false;
  for (int l = 0; l < 32; ++l) {
    if (w.state[l] == Ready) return WarpStatus::Budget;
    if (w.state[l] != Exited) blocked = true;
  }
  return blocked ? WarpStatus::Blocked : WarpStatus::Finished;
}

void Executor::releaseIfComplete(Block& b, uint32_t id, bool sync) {
  uint32_t expected = b.barExpected[id] ? b.barExpected[id] : b.liveThreads;
  if (b.barArrived[id] == 0 || b.barArrived[id] < expected) return;
  b.barArrived[id] = 0;
  b.barExpected[id] = 0;
  for (auto& w : b.warps)
    for (int l = 0; l < 32; ++l)
      if (w.state[l] == AtBarrier && w.barId[l] == id) w.state[l] = Ready;
  if (!sync) ++counters_.blockBarriers;
}

void Executor::arriveBarrier(Block& b, Warp& w, uint32_t m, uint32_t id, uint32_t expected,
                             bool sync) {
  forLanes(m, [&](int l) {
    w.state[l] = AtBarrier;
    w.barId[l] = uint8_t(id);
  });
  b.barArrived[id] += __builtin_popcount(m);
  if (expected) b.barExpected[id] = expected;
  ++progress_;
  releaseIfComplete(b, id, sync);
}

void Executor::exitLanes(Block& b, Warp& w, uint32_t m) {
  forLanes(m, [&](int l) { w.state[l] = Exited; });
  b.liveThreads -= __builtin_popcount(m);
  exitClusterLanes(b, w, m); // exited threads count as arrived at barrier.cluster
  // lanes parked at a warp-synchronous instruction re-check their member mask
  for (int l = 0; l < 32; ++l)
    if (w.state[l] == WarpWait) w.state[l] = Ready;
  ++progress_;
  for (uint32_t id = 0; id < 16; ++id)
    if (b.barArrived[id]) releaseIfComplete(b, id, false);
}

// ---------------------------------------------------------------- the warp loop

WarpStatus Executor::runWarp(Block& b, Warp& w, uint64_t budget) {
  if (!w.mask && !schedule(w)) return statusOf(w);
  uint64_t executedWarp = 0, executedThread = 0, executedSync = 0;
  const uint64_t startProgress = progress_;
  WarpStatus result = WarpStatus::Budget;
  for (;;) {
    if (budget-- == 0) break;
    const Instr& I = code_[w.gpc];
    uint64_t* R = w.regs.data() + size_t(w.gbase) * 32;
    uint32_t m = w.mask;
    ++issued_;
    if (I.flags & kSync)
      ++executedSync;
    else {
      ++executedWarp;
      executedThread += __builtin_popcount(m);
    }
    if (I.flags & kHasGuard) {
      const uint64_t* g = R + size_t(I.guard) * 32;
      const uint64_t want = (I.flags & kNegGuard) ? 0 : 1;
      uint32_t gm = 0;
      forLanes(m, [&](int l) { gm |= uint32_t((g[l] & 1) == want) << l; });
      m = gm;
    }
    bool resched = false;
    switch (I.op) {
    case Op::Mov:
    case Op::Pack:
    case Op::Unpack:
    case Op::Cvta:
    case Op::Cvt:
      if (m) execMove(I, m, R);
      break;
    case Op::MovSreg: {
      uint64_t* d = R + size_t(I.d[0].reg) * 32;
      forLanes(m, [&](int l) { d[l] = sreg(I, b, w, l); });
      break;
    }
    case Op::MovDynShared: {
      uint64_t* d = R + size_t(I.d[0].reg) * 32;
      forLanes(m, [&](int l) { d[l] = fn_.dynamicSharedOffset + I.s[0].imm; });
      break;
    }
    case Op::MovDepot: {
      uint64_t* d = R + size_t(I.d[0].reg) * 32;
      forLanes(m, [&](int l) { d[l] = w.localBase[l] + I.s[0].imm; });
      break;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Min:
    case Op::Max:
    case Op::Abs:
    case Op::Neg:
    case Op::Div:
      if (!m) break;
      if (tyIsFloat(I.ty))
        execFloat(I, m, R);
      else
        execAlu(I, m, R, prog_.functions[I.func].ccReg);
      break;
    case Op::Mul:
    case Op::Fma:
    case Op::Rcp:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Ex2:
    case Op::Lg2:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Copysign:
    case Op::Testp:
      if (m) execFloat(I, m, R);
      break;
    case Op::AddCC:
    case Op::AddC:
    case Op::SubCC:
    case Op::SubC:
    case Op::MulLo:
    case Op::MulHi:
    case Op::MulWide:
    case Op::MadLo:
    case Op::MadHi:
    case Op::MadWide:
    case Op::MadCLo:
    case Op::MadCHi:
    case Op::Rem:
    case Op::And:
    case Op::Or:
    case Op::Xor:
    case Op::Not:
    case Op::CNot:
    case Op::Shl:
    case Op::Shr:
    case Op::Popc:
    case Op::Clz:
    case Op::Brev:
    case Op::Bfe:
    case Op::Bfi:
    case Op::Prmt:
    case Op::Shf:
    case Op::Bfind:
    case Op::Selp:
    case Op::Slct:
      if (m) execAlu(I, m, R, prog_.functions[I.func].ccReg);
      break;
    case Op::Setp:
    case Op::Set:
      if (m) execSetp(I, m, R);
      break;
    case Op::Ld:
    case Op::St:
      if (m) execMem(I, b, w, m, R);
      break;
    case Op::Atom:
    case Op::Red:
      if (m) execAtom(I, b, w, m, R);
      break;
    case Op::Fence:
    case Op::Nop:
    case Op::Mad:
      break;
    case Op::Activemask: {
      uint64_t* d = R + size_t(I.d[0].reg) * 32;
      forLanes(m, [&](int l) { d[l] = w.mask; });
      break;
    }
    case Op::CpAsync:
      if (m) execCpAsync(I, b, w, m, R);
      break;
    case Op::CpAsyncCommit:
    case Op::CpAsyncWait:
      break; // every cp.async completes at issue (tensor_core_ops.cc)
    case Op::WgmmaFence:
    case Op::WgmmaCommit:
    case Op::WgmmaWait:
      break; // a wgmma.mma_async is done when its warpgroup leaves it (tensor_core_ops.cc)
    case Op::Shfl:
    case Op::Vote:
    case Op::BarWarp:
    case Op::Ldmatrix:
    case Op::Mma:
    case Op::Wgmma: {
      // every non-exited member named by the mask must execute this instruction together
      uint32_t member = 0xffffffffu;
      const Operand& mo = I.op == Op::Shfl ? I.s[3] : I.op == Op::Vote ? I.s[1] : I.s[0];
      if (I.op == Op::Shfl || I.op == Op::Vote || (I.op == Op::BarWarp && I.ns == 1))
        member = uint32_t(src(mo, R)[__builtin_ctz(w.mask)]);
      uint32_t live = 0;
      for (int l = 0; l < 32; ++l)
        live |= uint32_t(w.state[l] != Exited) << l;
      uint32_t need = member & live;
      if ((need & ~w.mask) != 0) {
        // pull in members already parked here
        for (int l = 0; l < 32; ++l)
          if ((need >> l & 1) && w.state[l] == WarpWait && w.pc[l] == w.gpc &&
              w.regBase[l] == w.gbase) {
            w.state[l] = Ready;
            w.mask |= 1u << l;
          }
        if ((need & ~w.mask) != 0) {
          const uint32_t missing = need & ~w.mask;
          forLanes(w.mask, [&](int l) {
            w.state[l] = WarpWait;
            w.pc[l] = w.gpc;
          });
          w.mask = 0;
          // members may never come: if no lane is runnable, report it
          bool anyReady = false;
          for (int l = 0; l < 32; ++l)
            anyReady |= w.state[l] == Ready;
          if (!anyReady) {
            bool anyBarrier = false;
            for (int l = 0; l < 32; ++l)
              anyBarrier |= w.state[l] == AtBarrier || w.state[l] == AtClusterBarrier;
            if (!anyBarrier)
              fault(
                  b, w, __builtin_ctz(need), I,
                  fmt::format(
                      "warp-synchronous instruction with member mask 0x{:08x}, but lanes 0x{:08x} "
                      "never reach it",
                      member, missing));
          }
          resched = true;
          break;
        }
        m = w.mask;
        if (I.flags & kHasGuard) {
          const uint64_t* g = R + size_t(I.guard) * 32;
          const uint64_t want = (I.flags & kNegGuard) ? 0 : 1;
          uint32_t gm = 0;
          forLanes(m, [&](int l) { gm |= uint32_t((g[l] & 1) == want) << l; });
          m = gm;
        }
      }
      if (I.op == Op::Wgmma) {
        // the warp waits there for the rest of its warpgroup, as at a barrier
        if (!m) break;
        arriveWarpgroupMma(I, b, w, m);
        resched = true;
      } else if (m && (I.op == Op::Ldmatrix || I.op == Op::Mma))
        execTensorCore(I, b, w, m, R);
      else if (m && I.op != Op::BarWarp)
        execWarpCollective(I, m, R);
      break;
    }
    case Op::Bar: {
      if (!m) break;
      uint32_t id = uint32_t(src(I.s[0], R)[__builtin_ctz(m)]) & 15;
      uint32_t count = I.ns > 1 ? uint32_t(src(I.s[1], R)[__builtin_ctz(m)]) : 0;
      if (I.aux) {
        // bar.arrive: count the arrival and go on; the waiting threads may now be released
        b.barArrived[id] += __builtin_popcount(m);
        b.barExpected[id] = count;
        ++progress_;
        releaseIfComplete(b, id, I.flags & kSync);
        break;
      }
      forLanes(w.mask, [&](int l) { w.pc[l] = w.gpc + 1; });
      w.mask = 0;
      arriveBarrier(b, w, m, id, count, I.flags & kSync);
      resched = true;
      break;
    }
    case Op::Mapa:
      if (m) execMapa(I, b, w, m, R);
      break;
    case Op::BarCluster:
      if (!m) break;
      if (I.mode == 1)
        arriveCluster(I, b, w, m);
      else
        resched = waitCluster(I, b, w, m);
      break;
    case Op::Bra: {
      const uint32_t target = I.target;
      if (m == w.mask) {
        // A group that keeps looping while other lanes of its warp wait may be spinning on
        // them (independent thread scheduling guarantees those lanes progress): after many
        // back edges, let the waiting lanes run.
        if (target <= w.gpc && w.othersReady && ++w.backEdges > kYieldBackEdges) {
          w.backEdges = 0;
          w.gpc = target;
          const uint32_t spinning = w.mask;
          flush(w);
          schedule(w, spinning);
          w.mergePc = ~0u; // run the others until they branch, wait or leave
          w.stopPc = stopPcOf(w);
          continue;
        }
        // a spin-wait inside the grid barrier: let the other blocks run now; without a
        // cooperative launch the blocks it waits for cannot run until it finishes
        if ((I.flags & kSync) && target <= w.gpc) {
          if (!cooperative_ && rq_.config.grid.count() > 1)
            fault(b, w, __builtin_ctz(m), I,
                  "waits in a grid barrier (weft_grid_barrier) for blocks that cannot run: the "
                  "launch is not cooperative, so blocks run one after another");
          budget = 0;
        }
        w.gpc = target;
        if (target >= w.mergePc || target == w.rpc)
          resched = true;
        else
          w.stopPc = stopPcOf(w);
        goto next; // pc already set
      }
      if (!m) break; // no lane takes it
      forLanes(w.mask, [&](int l) { w.pc[l] = (m >> l & 1) ? target : w.gpc + 1; });
      if (I.reconvergePc != kNoReconvergence) reconvergeAt(w, I.reconvergePc, w.gbase, w.mask);
      w.mask = 0;
      resched = true;
      break;
    }
    case Op::Call: {
      const Function& callee = prog_.functions[I.target];
      const Function& caller = prog_.functions[I.func];
      if (!m) break;
      if (callee.isGridBarrier) ++w.gridBarrierCalls;
      // the callers go on together once they all returned
      reconvergeAt(w, w.gpc + 1, w.gbase, w.mask);
      const uint32_t newBase = w.gbase + I.aux;
      ensureRegs(w, newBase + callee.numRegs);
      R = w.regs.data() + size_t(w.gbase) * 32;
      forLanes(w.mask, [&](int l) {
        if (!(m >> l & 1)) {
          w.pc[l] = w.gpc + 1;
          return;
        }
        const uint32_t callerBase = w.localBase[l];
        const uint32_t calleeBase = (callerBase + I.aux2 + 15) / 16 * 16;
        ensureLocal(w, l, uint64_t(calleeBase) + callee.frameSize);
        uint8_t* lm = w.local[l].data();
        for (uint32_t i = 0; i < callee.params.size(); ++i) {
          const CallArg& arg = caller.callArgs[I.callArgBase + I.nd + i];
          std::memcpy(lm + calleeBase + callee.params[i].offset, lm + callerBase + arg.callerOffset,
                      std::min(arg.size, callee.params[i].size));
        }
        if (w.frames[l].size() > 10000) fault(b, w, l, I, "call stack deeper than 10000 frames");
        w.frames[l].push_back({w.gpc + 1, w.gbase, callerBase, w.gpc});
        w.localBase[l] = calleeBase;
        w.regBase[l] = newBase;
        w.pc[l] = callee.entry;
      });
      // lanes' pcs and frames are written above: pick the next group from scratch
      w.mask = 0;
      resched = true;
      break;
    }
    case Op::Ret:
    case Op::Exit: {
      if (!m) break;
      uint32_t exiting = 0;
      forLanes(w.mask, [&](int l) {
        if (!(m >> l & 1)) {
          w.pc[l] = w.gpc + 1;
          return;
        }
        if (I.op == Op::Exit || w.frames[l].empty()) {
          exiting |= 1u << l;
          w.pc[l] = w.gpc;
          return;
        }
        Frame f = w.frames[l].back();
        w.frames[l].pop_back();
        const Function& callee = prog_.functions[I.func];
        const Instr& call = code_[f.callPc];
        const Function& caller = prog_.functions[call.func];
        uint8_t* lm = w.local[l].data();
        for (uint32_t i = 0; i < callee.returns.size(); ++i) {
          const CallArg& arg = caller.callArgs[call.callArgBase + i];
          std::memcpy(lm + f.localBase + arg.callerOffset,
                      lm + w.localBase[l] + callee.returns[i].offset,
                      std::min(arg.size, callee.returns[i].size));
        }
        w.localBase[l] = f.localBase;
        w.regBase[l] = f.regBase;
        w.pc[l] = f.retPc;
      });
      w.mask = 0;
      if (exiting) exitLanes(b, w, exiting);
      resched = true;
      break;
    }
    case Op::Trap:
      if (m) fault(b, w, __builtin_ctz(m), I, "trap executed");
      break;
    }
    if (!resched) {
      ++w.gpc;
      if (w.gpc >= w.stopPc) resched = true;
    }
  next:
    if (resched) {
      if (w.mask) flush(w);
      if (!schedule(w)) {
        result = statusOf(w);
        break;
      }
    }
  }
  counters_.warpInstructions += executedWarp;
  counters_.threadInstructions += executedThread;
  counters_.syncInstructions += executedSync;
  (void)startProgress;
  return result;
}

} // namespace weft::sim
