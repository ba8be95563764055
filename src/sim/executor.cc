#include "sim/executor.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "sim/float_convert.h"
#include "weft/error.h"

// This file is compiled with -frounding-math: the .rz/.rm/.rp variants of float
// instructions switch the host's rounding mode around the operation.

namespace weft::sim {

namespace {

template <class T> inline T as(uint64_t v) {
  if constexpr (sizeof(T) > 8) {
    return T(v);
  } else {
    T t;
    std::memcpy(&t, &v, sizeof(T));
    return t;
  }
}
template <class T> inline uint64_t bitsOf(T v) {
  if constexpr (sizeof(T) > 8) {
    return uint64_t(v);
  } else {
    uint64_t r = 0;
    std::memcpy(&r, &v, sizeof(T));
    return r;
  }
}
inline float f32(uint64_t v) {
  return as<float>(v);
}
inline double f64(uint64_t v) {
  return as<double>(v);
}

template <class F> inline void forLanes(uint32_t m, F&& f) {
  if (m == 0xffffffffu) {
    for (int l = 0; l < 32; ++l)
      f(l);
    return;
  }
  while (m) {
    int l = __builtin_ctz(m);
    m &= m - 1;
    f(l);
  }
}

struct Src {
  const uint64_t* p;
  uint64_t imm;
  inline uint64_t operator[](int l) const { return p ? p[l] : imm; }
};

struct RoundingScope {
  int old = 0;
  bool active = false;
  explicit RoundingScope(Round r) {
    int mode = r == Round::Rz   ? FE_TOWARDZERO
               : r == Round::Rm ? FE_DOWNWARD
               : r == Round::Rp ? FE_UPWARD
                                : -1;
    if (mode < 0) return;
    active = true;
    old = std::fegetround();
    std::fesetround(mode);
  }
  ~RoundingScope() {
    if (active) std::fesetround(old);
  }
};

inline float ftz32(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
inline uint64_t canon32(float r) {
  return r != r ? 0x7fffffffu : bitsOf(r);
}

// ---------------------------------------------------------------- model state

enum LaneState : uint8_t { Ready, AtBarrier, WarpWait, Exited };

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
  uint32_t gridBarrierCalls = 0;
  uint32_t backEdges = 0; // taken back edges while other lanes of the warp wait
  bool done = false;
};

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

struct Block {
  uint32_t id[3] = {0, 0, 0};
  uint64_t linear = 0;
  std::vector<Warp> warps;
  std::vector<uint8_t> shared, written;
  uint32_t liveThreads = 0;
  uint32_t barArrived[16] = {};
  uint32_t barExpected[16] = {};
  uint32_t doneWarps = 0;
};

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

  // setup
  void initBlock(Block& b, uint64_t linear);
  void ensureRegs(Warp& w, uint32_t slotsPerLane);
  void ensureLocal(Warp& w, int l, uint64_t bytes);

  // scheduling
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

  // instruction families
  void execAlu(const Instr& I, Warp& w, uint32_t m, uint64_t* R);
  void execFloat(const Instr& I, uint32_t m, uint64_t* R);
  void execCvt(const Instr& I, uint32_t m, uint64_t* R);
  void execSetp(const Instr& I, uint32_t m, uint64_t* R);
  void execMem(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  void execAtom(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R);
  bool execWarpSync(const Instr& I, Warp& w, uint32_t m, uint64_t* R);
  uint64_t sreg(const Instr& I, const Block& b, const Warp& w, int l) const;

  // memory
  enum MemClass : uint8_t { MGlobal, MShared, MLocal, MConst, MParam };
  uint8_t* resolve(Block& b, Warp& w, int l, const Instr& I, Space sp, uint64_t addr, uint32_t size,
                   bool write, MemClass& cls);
  [[noreturn]] void fault(const Block& b, const Warp& w, int lane, const Instr& I,
                          const std::string& what) const;
  std::string where(const Block& b, const Warp& w, int lane, const Instr& I) const;

  Src src(const Operand& o, uint64_t* R) const {
    return o.kind == Operand::Reg ? Src{R + size_t(o.reg) * 32, 0} : Src{nullptr, o.imm};
  }

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
};

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
  b.id[0] = uint32_t(linear % g.x);
  b.id[1] = uint32_t((linear / g.x) % g.y);
  b.id[2] = uint32_t(linear / (uint64_t(g.x) * g.y));
  b.shared.assign(sharedBytes_, 0);
  b.written.assign(rq_.options.checkUninitialisedShared ? sharedBytes_ : 0, 0);
  b.liveThreads = threadsPerBlock_;
  std::fill(std::begin(b.barArrived), std::end(b.barArrived), 0);
  std::fill(std::begin(b.barExpected), std::end(b.barExpected), 0);
  b.doneWarps = 0;
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
  // lanes parked at a warp-synchronous instruction re-check their member mask
  for (int l = 0; l < 32; ++l)
    if (w.state[l] == WarpWait) w.state[l] = Ready;
  ++progress_;
  for (uint32_t id = 0; id < 16; ++id)
    if (b.barArrived[id]) releaseIfComplete(b, id, false);
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

// ---------------------------------------------------------------- memory

uint8_t* Executor::resolve(Block& b, Warp& w, int l, const Instr& I, Space sp, uint64_t addr,
                           uint32_t size, bool write, MemClass& cls) {
  const char* verb = write ? "store" : "load";
  if (addr % size != 0)
    fault(b, w, l, I, fmt::format("misaligned {}-byte {} at address 0x{:x}", size, verb, addr));
  if (sp == Space::Generic) {
    if (addr - kSharedWindow < kWindowSize)
      sp = Space::Shared, addr -= kSharedWindow;
    else if (addr - kLocalWindow < kWindowSize)
      sp = Space::Local, addr -= kLocalWindow;
    else if (addr - kConstWindow < kWindowSize)
      sp = Space::Const, addr -= kConstWindow;
    else if (addr - kParamWindow < kWindowSize)
      sp = Space::Param, addr -= kParamWindow;
    else
      sp = Space::Global;
  }
  switch (sp) {
  case Space::Global: {
    cls = MGlobal;
    uint8_t* p = mem_.translate(addr, size);
    if (!p)
      fault(b, w, l, I,
            fmt::format("out-of-bounds global {} of {} bytes at address 0x{:x} ({})", verb, size,
                        addr, mem_.describe(addr)));
    return p;
  }
  case Space::Shared:
    cls = MShared;
    if (addr + size > b.shared.size() || addr >= b.shared.size())
      fault(
          b, w, l, I,
          fmt::format("out-of-bounds shared {} of {} bytes at shared address 0x{:x} (the block has "
                      "{} bytes of shared memory)",
                      verb, size, addr, b.shared.size()));
    return b.shared.data() + addr;
  case Space::Local: {
    cls = MLocal;
    uint64_t top =
        w.localBase[l] + (w.frames[l].empty() ? fn_.frameSize : prog_.functions[I.func].frameSize);
    if (addr + size > top || addr >= top)
      fault(b, w, l, I,
            fmt::format("out-of-bounds local {} of {} bytes at local address 0x{:x} (the thread's "
                        "stack ends at 0x{:x})",
                        verb, size, addr, top));
    return w.local[l].data() + addr;
  }
  case Space::Const:
    cls = MConst;
    if (write) fault(b, w, l, I, "store to constant memory");
    if (addr + size > prog_.constData.size() || addr >= prog_.constData.size())
      fault(b, w, l, I,
            fmt::format("out-of-bounds constant load of {} bytes at 0x{:x}", size, addr));
    return const_cast<uint8_t*>(prog_.constData.data()) + addr;
  case Space::Param:
    cls = MParam;
    if (write) fault(b, w, l, I, "store to kernel parameter memory");
    if (addr + size > rq_.params.size() || addr >= rq_.params.size())
      fault(b, w, l, I,
            fmt::format("out-of-bounds parameter load of {} bytes at offset {}", size, addr));
    return const_cast<uint8_t*>(rq_.params.data()) + addr;
  case Space::Generic:
    break;
  }
  return nullptr;
}

uint32_t distinctSectors(uint64_t* s, int n) {
  if (n == 0) return 0;
  bool sorted = true;
  for (int i = 1; i < n; ++i)
    if (s[i] < s[i - 1]) {
      sorted = false;
      break;
    }
  if (!sorted) std::sort(s, s + n);
  uint32_t d = 1;
  for (int i = 1; i < n; ++i)
    d += s[i] != s[i - 1];
  return d;
}

inline uint64_t readBytes(const uint8_t* p, uint32_t n) {
  switch (n) {
  case 1:
    return *p;
  case 2: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case 4: {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  default: {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  }
}
inline void writeBytes(uint8_t* p, uint64_t v, uint32_t n) {
  switch (n) {
  case 1:
    *p = uint8_t(v);
    break;
  case 2: {
    uint16_t x = uint16_t(v);
    std::memcpy(p, &x, 2);
    break;
  }
  case 4: {
    uint32_t x = uint32_t(v);
    std::memcpy(p, &x, 4);
    break;
  }
  default:
    std::memcpy(p, &v, 8);
    break;
  }
}

void Executor::execMem(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R) {
  const bool isLd = I.op == Op::Ld;
  const uint32_t elem = uint32_t(tyBytes(I.ty));
  const uint32_t nvec = isLd ? I.nd : I.ns;
  const uint32_t size = elem * nvec;
  const bool sync = I.flags & kSync;
  const uint64_t* base = (I.flags & kAddrReg) ? R + size_t(I.addr.reg) * 32 : nullptr;
  const uint64_t immOff = I.addr.imm + ((I.flags & kDynShared) ? fn_.dynamicSharedOffset : 0);
  uint64_t sectors[32];
  int nGlobal = 0;
  bool anyShared = false;
  Src vals[4];
  if (!isLd)
    for (uint32_t i = 0; i < nvec; ++i)
      vals[i] = src(I.s[i], R);
  // signed loads sign-extend into the 64-bit slot
  const uint32_t extShift = tyIsSigned(I.ty) ? 64 - 8 * elem : 0;
  const bool maybeGlobal = I.space == Space::Global || I.space == Space::Generic;
  const bool frameRel = I.flags & kFrameRel;
  forLanes(m, [&](int l) {
    uint64_t addr = (base ? base[l] : 0) + immOff;
    if (frameRel) addr += w.localBase[l];
    MemClass cls = MGlobal;
    uint8_t* p = nullptr;
    // fast path: an aligned access inside the last allocation hit (sizes are powers of two)
    if (maybeGlobal && addr < kSharedWindow && (addr & (size - 1)) == 0)
      p = mem_.translate(addr, size);
    if (!p) p = resolve(b, w, l, I, I.space, addr, size, !isLd, cls);
    if (cls == MGlobal) sectors[nGlobal++] = addr >> 5;
    if (cls == MShared) {
      anyShared = true;
      if (!b.written.empty()) {
        uint8_t* wb = b.written.data() + (p - b.shared.data());
        if (isLd) {
          for (uint32_t i = 0; i < size; ++i)
            if (!wb[i])
              fault(b, w, l, I,
                    fmt::format("read of uninitialised shared memory at shared address 0x{:x}: no "
                                "thread of the block has written it (missing bar.sync?)",
                                (p - b.shared.data()) + i));
        } else {
          std::memset(wb, 1, size);
        }
      }
    }
    if (isLd) {
      for (uint32_t i = 0; i < nvec; ++i) {
        if (I.d[i].kind != Operand::Reg) continue;
        uint64_t v = readBytes(p + i * elem, elem);
        if (extShift) v = uint64_t(int64_t(v << extShift) >> extShift);
        R[size_t(I.d[i].reg) * 32 + l] = v;
      }
    } else {
      for (uint32_t i = 0; i < nvec; ++i)
        writeBytes(p + i * elem, vals[i][l], elem);
    }
  });
  if (!isLd && m) ++progress_;
  if (nGlobal) {
    uint32_t n = distinctSectors(sectors, nGlobal);
    if (sync)
      counters_.syncSectors += n;
    else if (isLd)
      ++counters_.globalLoadRequests, counters_.globalSectorsRead += n;
    else
      ++counters_.globalStoreRequests, counters_.globalSectorsWritten += n;
  }
  if (anyShared && !sync) {
    if (isLd)
      ++counters_.sharedLoads;
    else
      ++counters_.sharedStores;
  }
}

template <class T> T atomApply(AtomOp op, T old, T a, T b) {
  switch (op) {
  case AtomOp::Add:
    return T(old + a);
  case AtomOp::Min:
    return std::min(old, a);
  case AtomOp::Max:
    return std::max(old, a);
  case AtomOp::Exch:
    return a;
  case AtomOp::Cas:
    return old == a ? b : old;
  case AtomOp::And:
    if constexpr (std::is_integral_v<T>)
      return old & a;
    else
      return old;
  case AtomOp::Or:
    if constexpr (std::is_integral_v<T>)
      return old | a;
    else
      return old;
  case AtomOp::Xor:
    if constexpr (std::is_integral_v<T>)
      return old ^ a;
    else
      return old;
  case AtomOp::Inc:
    return old >= a ? T(0) : T(old + 1);
  case AtomOp::Dec:
    return (old == T(0) || old > a) ? a : T(old - 1);
  }
  return old;
}

void Executor::execAtom(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R) {
  const uint32_t size = uint32_t(tyBytes(I.ty));
  const bool sync = I.flags & kSync;
  const uint64_t* base = (I.flags & kAddrReg) ? R + size_t(I.addr.reg) * 32 : nullptr;
  const uint64_t immOff = I.addr.imm + ((I.flags & kDynShared) ? fn_.dynamicSharedOffset : 0);
  const AtomOp op = AtomOp(I.mode);
  Src a = src(I.s[0], R), bsrc = I.ns > 1 ? src(I.s[1], R) : Src{nullptr, 0};
  uint64_t sectors[32];
  int nGlobal = 0;
  forLanes(m, [&](int l) {
    uint64_t addr = (base ? base[l] : 0) + immOff;
    MemClass cls;
    uint8_t* p = resolve(b, w, l, I, I.space, addr, size, true, cls);
    if (cls != MGlobal && cls != MShared)
      fault(b, w, l, I, "atomic on a state space other than global or shared");
    if (cls == MGlobal) sectors[nGlobal++] = addr >> 5;
    if (cls == MShared && !b.written.empty()) {
      uint8_t* wb = b.written.data() + (p - b.shared.data());
      if (op != AtomOp::Exch)
        for (uint32_t i = 0; i < size; ++i)
          if (!wb[i])
            fault(b, w, l, I, fmt::format("atomic on uninitialised shared memory at 0x{:x}", addr));
      std::memset(wb, 1, size);
    }
    uint64_t old = 0;
    std::memcpy(&old, p, size);
    uint64_t nv = old;
    switch (I.ty) {
    case Ty::F32: {
      float r = atomApply<float>(op, f32(old), f32(a[l]), f32(bsrc[l]));
      if (op == AtomOp::Add) r = ftz32(r);
      nv = bitsOf(r);
      break;
    }
    case Ty::F64:
      nv = bitsOf(atomApply<double>(op, f64(old), f64(a[l]), f64(bsrc[l])));
      break;
    case Ty::S32:
      nv =
          bitsOf(atomApply<int32_t>(op, as<int32_t>(old), as<int32_t>(a[l]), as<int32_t>(bsrc[l])));
      break;
    case Ty::S64:
      nv =
          bitsOf(atomApply<int64_t>(op, as<int64_t>(old), as<int64_t>(a[l]), as<int64_t>(bsrc[l])));
      break;
    case Ty::U64:
    case Ty::B64:
      nv = atomApply<uint64_t>(op, old, a[l], bsrc[l]);
      break;
    default:
      if (size != 4)
        fault(b, w, l, I, fmt::format("atomic of type .{} is not supported", tyName(I.ty)));
      nv = atomApply<uint32_t>(op, uint32_t(old), uint32_t(a[l]), uint32_t(bsrc[l]));
    }
    std::memcpy(p, &nv, size);
    if (I.op == Op::Atom) R[size_t(I.d[0].reg) * 32 + l] = old;
  });
  if (m) ++progress_;
  if (sync) {
    counters_.syncSectors += distinctSectors(sectors, nGlobal);
  } else if (m) {
    ++counters_.atomics;
    counters_.globalSectorsWritten += distinctSectors(sectors, nGlobal);
  }
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
  }
  return 0;
}

// ---------------------------------------------------------------- integer ALU

template <class F> inline void byWidth(Ty t, F&& f) {
  switch (tyBytes(t)) {
  case 1:
    f(uint8_t{});
    break;
  case 2:
    f(uint16_t{});
    break;
  case 4:
    f(uint32_t{});
    break;
  default:
    f(uint64_t{});
    break;
  }
}
template <class F> inline void byInt(Ty t, F&& f) {
  switch (t) {
  case Ty::S8:
    f(int8_t{});
    break;
  case Ty::S16:
    f(int16_t{});
    break;
  case Ty::S32:
    f(int32_t{});
    break;
  case Ty::S64:
    f(int64_t{});
    break;
  default:
    byWidth(t, f);
  }
}
template <class T> struct Wider;
template <> struct Wider<int8_t> { using type = int16_t; };
template <> struct Wider<uint8_t> { using type = uint16_t; };
template <> struct Wider<int16_t> { using type = int32_t; };
template <> struct Wider<uint16_t> { using type = uint32_t; };
template <> struct Wider<int32_t> { using type = int64_t; };
template <> struct Wider<uint32_t> { using type = uint64_t; };
template <> struct Wider<int64_t> { using type = __int128; };
template <> struct Wider<uint64_t> { using type = unsigned __int128; };

template <class T> inline T mulHi(T a, T b) {
  using W = typename Wider<T>::type;
  return T((W(a) * W(b)) >> (8 * sizeof(T)));
}

/// add/sub/min/max{.relu} on .s16x2 / .u16x2: each 16-bit half on its own, add and sub
/// wrapping, .relu (s16x2 min/max) turning negative halves into 0.
inline void packedInt16(const Instr& I, uint32_t m, uint64_t* d, Src a, Src b) {
  const bool sgn = I.ty == Ty::S16x2, relu = I.flags & kRelu;
  forLanes(m, [&](int l) {
    uint32_t out = 0;
    for (int h = 0; h < 2; ++h) {
      const int sh = 16 * h;
      const uint16_t x = uint16_t(a[l] >> sh), y = uint16_t(b[l] >> sh);
      uint16_t r;
      switch (I.op) {
      case Op::Add:
        r = uint16_t(x + y);
        break;
      case Op::Sub:
        r = uint16_t(x - y);
        break;
      default: {
        const bool mn = I.op == Op::Min;
        if (sgn) {
          int16_t v = mn ? std::min(int16_t(x), int16_t(y)) : std::max(int16_t(x), int16_t(y));
          if (relu && v < 0) v = 0;
          r = uint16_t(v);
        } else {
          r = mn ? std::min(x, y) : std::max(x, y);
        }
      }
      }
      out |= uint32_t(r) << sh;
    }
    d[l] = out;
  });
}

void Executor::execAlu(const Instr& I, Warp& w, uint32_t m, uint64_t* R) {
  (void)w;
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  Src a = src(I.s[0], R);
  Src b = I.ns > 1 ? src(I.s[1], R) : Src{nullptr, 0};
  Src c = I.ns > 2 ? src(I.s[2], R) : Src{nullptr, 0};
  uint64_t* cc = R + size_t(prog_.functions[I.func].ccReg) * 32;
  const bool pred = I.ty == Ty::Pred;
  if (tyIsPackedInt(I.ty)) { // the parser allows add, sub, min and max only
    packedInt16(I, m, d, a, b);
    return;
  }
  switch (I.op) {
  case Op::Add:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      if (I.flags & kSat) {
        forLanes(m, [&](int l) {
          int64_t r = int64_t(as<int32_t>(a[l])) + as<int32_t>(b[l]);
          d[l] = uint32_t(int32_t(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
        });
        return;
      }
      forLanes(m, [&](int l) { d[l] = U(U(a[l]) + U(b[l])); });
    });
    return;
  case Op::Sub:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      if (I.flags & kSat) {
        forLanes(m, [&](int l) {
          int64_t r = int64_t(as<int32_t>(a[l])) - as<int32_t>(b[l]);
          d[l] = uint32_t(int32_t(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
        });
        return;
      }
      forLanes(m, [&](int l) { d[l] = U(U(a[l]) - U(b[l])); });
    });
    return;
  case Op::AddCC:
  case Op::AddC:
  case Op::SubCC:
  case Op::SubC:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      using W = typename Wider<U>::type;
      const bool sub = I.op == Op::SubCC || I.op == Op::SubC;
      const bool carryIn = I.op == Op::AddC || I.op == Op::SubC;
      const bool carryOut = I.op == Op::AddCC || I.op == Op::SubCC || I.aux;
      forLanes(m, [&](int l) {
        W x = W(U(a[l])), y = W(U(b[l])), ci = carryIn ? W(cc[l] & 1) : W(0);
        W r = sub ? W(x - y - ci) : W(x + y + ci);
        d[l] = U(r);
        if (carryOut) cc[l] = (r >> (8 * sizeof(U))) & 1;
      });
    });
    return;
  case Op::MulLo:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      forLanes(m, [&](int l) { d[l] = U(typename Wider<U>::type(U(a[l])) * U(b[l])); });
    });
    return;
  case Op::MulHi:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      forLanes(m, [&](int l) { d[l] = bitsOf(mulHi<T>(as<T>(a[l]), as<T>(b[l]))); });
    });
    return;
  case Op::MulWide:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using W = typename Wider<T>::type;
      forLanes(m, [&](int l) { d[l] = bitsOf(W(W(as<T>(a[l])) * W(as<T>(b[l])))); });
    });
    return;
  case Op::MadLo:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      using W = typename Wider<U>::type;
      forLanes(m, [&](int l) { d[l] = U(W(U(a[l])) * U(b[l]) + U(c[l])); });
    });
    return;
  case Op::MadHi:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      forLanes(m, [&](int l) { d[l] = U(U(mulHi<T>(as<T>(a[l]), as<T>(b[l]))) + U(c[l])); });
    });
    return;
  case Op::MadWide:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using W = typename Wider<T>::type;
      using UW = std::make_unsigned_t<W>;
      forLanes(m, [&](int l) {
        UW prod = UW(W(as<T>(a[l])) * W(as<T>(b[l])));
        d[l] = bitsOf(W(prod + as<UW>(c[l])));
      });
    });
    return;
  case Op::MadCLo:
  case Op::MadCHi:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      using UW = std::make_unsigned_t<typename Wider<T>::type>;
      const bool carryIn = I.aux2 == 0;
      forLanes(m, [&](int l) {
        U prod = I.op == Op::MadCHi ? U(mulHi<T>(as<T>(a[l]), as<T>(b[l]))) : U(U(a[l]) * U(b[l]));
        UW r = UW(prod) + UW(U(c[l])) + (carryIn ? UW(cc[l] & 1) : UW(0));
        d[l] = U(r);
        if (I.aux) cc[l] = uint64_t(r >> (8 * sizeof(U))) & 1;
      });
    });
    return;
  case Op::Div:
  case Op::Rem:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      const bool div = I.op == Op::Div;
      forLanes(m, [&](int l) {
        T x = as<T>(a[l]), y = as<T>(b[l]);
        T r;
        if (y == 0)
          r = div ? T(~T(0)) : x;
        else if constexpr (std::is_signed_v<T>) {
          if (x == std::numeric_limits<T>::min() && y == T(-1))
            r = div ? x : T(0);
          else
            r = div ? T(x / y) : T(x % y);
        } else
          r = div ? T(x / y) : T(x % y);
        d[l] = bitsOf(r);
      });
    });
    return;
  case Op::Abs:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      forLanes(m, [&](int l) {
        T x = as<T>(a[l]);
        d[l] = bitsOf(x < 0 ? T(U(0) - U(x)) : x);
      });
    });
    return;
  case Op::Neg:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      forLanes(m, [&](int l) { d[l] = U(U(0) - U(a[l])); });
    });
    return;
  case Op::Min:
  case Op::Max:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      const bool mn = I.op == Op::Min;
      const bool relu = I.flags & kRelu; // .s32 only (parser)
      forLanes(m, [&](int l) {
        T x = as<T>(a[l]), y = as<T>(b[l]);
        T r = mn ? std::min(x, y) : std::max(x, y);
        if constexpr (std::is_signed_v<T>)
          if (relu && r < T(0)) r = T(0);
        d[l] = bitsOf(r);
      });
    });
    return;
  case Op::And:
    forLanes(m, [&](int l) { d[l] = a[l] & b[l]; });
    return;
  case Op::Or:
    forLanes(m, [&](int l) { d[l] = a[l] | b[l]; });
    return;
  case Op::Xor:
    forLanes(m, [&](int l) { d[l] = a[l] ^ b[l]; });
    return;
  case Op::Not:
    if (pred)
      forLanes(m, [&](int l) { d[l] = (a[l] & 1) ^ 1; });
    else
      forLanes(m, [&](int l) { d[l] = ~a[l]; });
    return;
  case Op::CNot:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      forLanes(m, [&](int l) { d[l] = U(a[l]) == 0 ? 1 : 0; });
    });
    return;
  case Op::Shl:
  case Op::Shr:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      constexpr uint32_t bits = 8 * sizeof(T);
      const bool left = I.op == Op::Shl;
      forLanes(m, [&](int l) {
        uint32_t s = uint32_t(b[l]);
        T x = as<T>(a[l]);
        T r;
        if (left)
          r = s >= bits ? T(0) : T(U(U(x) << s));
        else if constexpr (std::is_signed_v<T>)
          r = s >= bits ? T(x < 0 ? -1 : 0) : T(x >> s);
        else
          r = s >= bits ? T(0) : T(x >> s);
        d[l] = bitsOf(r);
      });
    });
    return;
  case Op::Popc:
    if (tyBytes(I.ty) == 8)
      forLanes(m, [&](int l) { d[l] = uint32_t(__builtin_popcountll(a[l])); });
    else
      forLanes(m, [&](int l) { d[l] = uint32_t(__builtin_popcount(uint32_t(a[l]))); });
    return;
  case Op::Clz:
    if (tyBytes(I.ty) == 8)
      forLanes(m, [&](int l) { d[l] = a[l] ? uint32_t(__builtin_clzll(a[l])) : 64u; });
    else
      forLanes(m, [&](int l) {
        uint32_t x = uint32_t(a[l]);
        d[l] = x ? uint32_t(__builtin_clz(x)) : 32u;
      });
    return;
  case Op::Brev:
    forLanes(m, [&](int l) {
      uint64_t x = a[l], r = 0;
      int n = tyBytes(I.ty) * 8;
      for (int i = 0; i < n; ++i)
        r |= ((x >> i) & 1) << (n - 1 - i);
      d[l] = r;
    });
    return;
  case Op::Bfe:
    forLanes(m, [&](int l) {
      const int msb = tyBytes(I.ty) * 8 - 1;
      uint64_t x = a[l];
      uint32_t pos = uint32_t(b[l]) & 0xff, len = uint32_t(c[l]) & 0xff;
      uint64_t sbit = 0;
      if (tyIsSigned(I.ty) && len > 0) sbit = (x >> std::min<uint32_t>(pos + len - 1, msb)) & 1;
      uint64_t r = 0;
      for (int i = 0; i <= msb; ++i) {
        uint64_t bit =
            (uint32_t(i) < len && pos + i <= uint32_t(msb)) ? (x >> (pos + i)) & 1 : sbit;
        r |= bit << i;
      }
      d[l] = r;
    });
    return;
  case Op::Bfi: {
    Src e = src(I.s[3], R);
    forLanes(m, [&](int l) {
      const int msb = tyBytes(I.ty) * 8 - 1;
      uint64_t f = a[l], r = b[l];
      uint32_t pos = uint32_t(c[l]) & 0xff, len = uint32_t(e[l]) & 0xff;
      for (uint32_t i = 0; i < len && pos + i <= uint32_t(msb); ++i)
        r = (r & ~(1ull << (pos + i))) | (((f >> i) & 1) << (pos + i));
      d[l] = r;
    });
    return;
  }
  case Op::Shf: {
    const bool right = I.mode & 1, clamp = I.mode & 2;
    forLanes(m, [&](int l) {
      uint64_t pair = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
      uint32_t n = uint32_t(c[l]);
      n = clamp ? std::min(n, 32u) : (n & 31);
      d[l] = right ? uint32_t(pair >> n) : uint32_t((pair << n) >> 32);
    });
    return;
  }
  case Op::Bfind:
    // position of the most significant non-sign bit; 0xffffffff when none
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      constexpr int bits = 8 * sizeof(T);
      forLanes(m, [&](int l) {
        U x = U(a[l]);
        if (std::is_signed_v<T> && (x >> (bits - 1))) x = U(~x);
        uint32_t r = 0xffffffffu;
        for (int i = bits - 1; i >= 0; --i)
          if ((x >> i) & 1) {
            r = uint32_t(i);
            break;
          }
        if (I.aux && r != 0xffffffffu) r = uint32_t(bits - 1) - r;
        d[l] = r;
      });
    });
    return;
  case Op::Prmt:
    forLanes(m, [&](int l) {
      uint64_t tmp = uint64_t(uint32_t(a[l])) | (uint64_t(uint32_t(b[l])) << 32);
      uint32_t sel = uint32_t(c[l]), r = 0;
      for (int i = 0; i < 4; ++i) {
        uint32_t s = (sel >> (4 * i)) & 0xf;
        uint32_t byte = uint32_t(tmp >> ((s & 7) * 8)) & 0xff;
        if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
        r |= byte << (8 * i);
      }
      d[l] = r;
    });
    return;
  case Op::Selp:
    forLanes(m, [&](int l) { d[l] = (c[l] & 1) ? a[l] : b[l]; });
    return;
  case Op::Slct:
    if (I.ty2 == Ty::F32)
      forLanes(m, [&](int l) { d[l] = f32(c[l]) >= 0.0f ? a[l] : b[l]; });
    else
      forLanes(m, [&](int l) { d[l] = as<int32_t>(c[l]) >= 0 ? a[l] : b[l]; });
    return;
  default:
    return;
  }
}

// ---------------------------------------------------------------- floating point

/// a * b + c for half-precision operands, rounded to odd at double precision: the product is
/// exact in double, and rounding the sum to odd first makes the later rounding to f16/bf16
/// correct under every rounding mode (rounding to nearest twice could land on a false tie, or
/// onto a representable value that .rz/.rm/.rp must not reach). add and sub go through it
/// too: bf16 operands far apart do not sum exactly in double.
inline double fmaRoundToOdd(double a, double b, double c) {
  const double p = a * b, s = p + c;
  if (!std::isfinite(s)) return s;
  const double bb = s - p, err = (p - (s - bb)) + (c - bb); // s + err == p + c exactly
  if (err != 0 && (bitsOf(s) & 1) == 0)
    return std::nextafter(s, err > 0 ? HUGE_VAL : -HUGE_VAL);
  return s;
}

template <class F>
inline void floatUnaryOrBinary(const Instr& I, uint32_t m, uint64_t* d, Src a, Src b, Src c,
                               F&& f) {
  const bool ftz = I.flags & kFtz, sat = I.flags & kSat, relu = I.flags & kRelu;
  switch (I.ty) {
  case Ty::F32: {
    RoundingScope rs(I.round);
    forLanes(m, [&](int l) {
      float x = f32(a[l]), y = f32(b[l]), z = f32(c[l]);
      if (ftz) x = ftz32(x), y = ftz32(y), z = ftz32(z);
      float r = f(x, y, z);
      if (sat) r = r != r ? 0.0f : std::clamp(r, 0.0f, 1.0f);
      if (ftz) r = ftz32(r);
      d[l] = canon32(r);
    });
    return;
  }
  case Ty::F64: {
    RoundingScope rs(I.round);
    forLanes(m, [&](int l) {
      double r = f(f64(a[l]), f64(b[l]), f64(c[l]));
      if (sat) r = r != r ? 0.0 : std::clamp(r, 0.0, 1.0);
      d[l] = bitsOf(r);
    });
    return;
  }
  case Ty::F16:
  case Ty::BF16:
  case Ty::F16x2:
  case Ty::BF16x2: {
    const bool bf = I.ty == Ty::BF16 || I.ty == Ty::BF16x2;
    const int halves = (I.ty == Ty::F16x2 || I.ty == Ty::BF16x2) ? 2 : 1;
    auto dec = [&](uint64_t v) { return bf ? fromBF16(uint16_t(v)) : fromHalf(uint16_t(v)); };
    forLanes(m, [&](int l) {
      uint64_t out = 0;
      for (int h = 0; h < halves; ++h) {
        int sh = 16 * h;
        const double x = dec(a[l] >> sh), y = dec(b[l] >> sh), z = dec(c[l] >> sh);
        double r = I.op == Op::Fma   ? fmaRoundToOdd(x, y, z)
                   : I.op == Op::Add ? fmaRoundToOdd(x, 1.0, y)
                   : I.op == Op::Sub ? fmaRoundToOdd(x, 1.0, -y)
                                     : f(x, y, z);
        if (sat) r = r != r ? 0.0 : std::clamp(r, 0.0, 1.0);
        if (relu && r < 0.0) r = 0.0; // fma .relu (parser: half types only)
        Round rm = I.round == Round::None ? Round::Rn : I.round;
        uint64_t bits = bf ? toBF16(r, rm) : toHalf(r, rm);
        out |= bits << sh;
      }
      d[l] = out;
    });
    return;
  }
  default:
    return;
  }
}

template <class T> inline T pmin(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}
template <class T> inline T pmax(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

void Executor::execFloat(const Instr& I, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  Src a = src(I.s[0], R);
  Src b = I.ns > 1 ? src(I.s[1], R) : Src{nullptr, 0};
  Src c = I.ns > 2 ? src(I.s[2], R) : Src{nullptr, 0};
  auto run = [&](auto f) { floatUnaryOrBinary(I, m, d, a, b, c, f); };
  switch (I.op) {
  case Op::Add:
    run([](auto x, auto y, auto) { return x + y; });
    return;
  case Op::Sub:
    run([](auto x, auto y, auto) { return x - y; });
    return;
  case Op::Mul:
    run([](auto x, auto y, auto) { return x * y; });
    return;
  case Op::Fma:
    run([](auto x, auto y, auto z) { return std::fma(x, y, z); });
    return;
  case Op::Div:
    run([](auto x, auto y, auto) { return x / y; });
    return;
  case Op::Min:
    if (I.flags & kNaN)
      run([](auto x, auto y, auto) { return x != x ? x : y != y ? y : pmin(x, y); });
    else
      run([](auto x, auto y, auto) { return pmin(x, y); });
    return;
  case Op::Max:
    if (I.flags & kNaN)
      run([](auto x, auto y, auto) { return x != x ? x : y != y ? y : pmax(x, y); });
    else
      run([](auto x, auto y, auto) { return pmax(x, y); });
    return;
  case Op::Abs:
    if (I.ty == Ty::F32 || I.ty == Ty::F64) {
      // sign-bit operations, NaN payloads preserved
      const uint64_t sign = I.ty == Ty::F32 ? 0x80000000ull : 0x8000000000000000ull;
      const bool ftz = I.flags & kFtz;
      forLanes(m, [&](int l) {
        uint64_t v = a[l] & ~sign;
        if (ftz && I.ty == Ty::F32) v = bitsOf(ftz32(f32(v)));
        d[l] = v;
      });
      return;
    }
    if (I.ty == Ty::F16x2 || I.ty == Ty::BF16x2)
      forLanes(m, [&](int l) { d[l] = a[l] & 0x7fff7fffu; });
    else
      forLanes(m, [&](int l) { d[l] = a[l] & 0x7fffu; });
    return;
  case Op::Neg:
    if (I.ty == Ty::F32 || I.ty == Ty::F64) {
      const uint64_t sign = I.ty == Ty::F32 ? 0x80000000ull : 0x8000000000000000ull;
      const bool ftz = I.flags & kFtz;
      forLanes(m, [&](int l) {
        uint64_t v = a[l] ^ sign;
        if (ftz && I.ty == Ty::F32) v = bitsOf(ftz32(f32(v)));
        d[l] = v;
      });
      return;
    }
    if (I.ty == Ty::F16x2 || I.ty == Ty::BF16x2)
      forLanes(m, [&](int l) { d[l] = a[l] ^ 0x80008000u; });
    else
      forLanes(m, [&](int l) { d[l] = a[l] ^ 0x8000u; });
    return;
  case Op::Rcp:
    run([](auto x, auto, auto) { return decltype(x)(1) / x; });
    return;
  case Op::Sqrt:
    run([](auto x, auto, auto) { return std::sqrt(x); });
    return;
  case Op::Rsqrt:
    run([](auto x, auto, auto) { return decltype(x)(1) / std::sqrt(x); });
    return;
  case Op::Ex2:
    run([](auto x, auto, auto) { return std::exp2(x); });
    return;
  case Op::Lg2:
    run([](auto x, auto, auto) { return std::log2(x); });
    return;
  case Op::Sin:
    run([](auto x, auto, auto) { return std::sin(x); });
    return;
  case Op::Cos:
    run([](auto x, auto, auto) { return std::cos(x); });
    return;
  case Op::Tanh:
    run([](auto x, auto, auto) { return std::tanh(x); });
    return;
  case Op::Copysign:
    // copysign d, a, b: the value of b with the sign of a
    if (I.ty == Ty::F32)
      forLanes(m, [&](int l) { d[l] = (b[l] & 0x7fffffffu) | (a[l] & 0x80000000u); });
    else
      forLanes(m, [&](int l) { d[l] = (b[l] & ~(1ull << 63)) | (a[l] & (1ull << 63)); });
    return;
  case Op::Testp:
    forLanes(m, [&](int l) {
      double x = I.ty == Ty::F32 ? double(f32(a[l])) : f64(a[l]);
      int cls = I.ty == Ty::F32 ? std::fpclassify(f32(a[l])) : std::fpclassify(x);
      bool r = false;
      switch (I.mode) {
      case 0:
        r = std::isfinite(x);
        break;
      case 1:
        r = std::isinf(x);
        break;
      case 2:
        r = !std::isnan(x);
        break;
      case 3:
        r = std::isnan(x);
        break;
      case 4:
        r = cls == FP_NORMAL;
        break;
      case 5:
        r = cls == FP_SUBNORMAL;
        break;
      }
      d[l] = r;
    });
    return;
  default:
    return;
  }
}

// ---------------------------------------------------------------- cvt

inline double readFloat(uint64_t v, Ty t) {
  switch (t) {
  case Ty::F16:
    return fromHalf(uint16_t(v));
  case Ty::BF16:
    return fromBF16(uint16_t(v));
  case Ty::F32:
    return f32(v);
  default:
    return f64(v);
  }
}

inline uint64_t writeFloat(double x, Ty t, Round r, bool ftz) {
  switch (t) {
  case Ty::F16:
    return toHalf(x, r);
  case Ty::BF16:
    return toBF16(x, r);
  case Ty::F32: {
    float f;
    if (r == Round::Rn || r == Round::None)
      f = float(x);
    else {
      uint32_t b = uint32_t(encodeFloat(x, 8, 23, r));
      std::memcpy(&f, &b, 4);
    }
    if (ftz) f = ftz32(f);
    return canon32(f);
  }
  default:
    return bitsOf(x);
  }
}

inline double roundIntegral(double x, Round r) {
  switch (r) {
  case Round::Rni:
    return std::nearbyint(x);
  case Round::Rzi:
    return std::trunc(x);
  case Round::Rmi:
    return std::floor(x);
  case Round::Rpi:
    return std::ceil(x);
  default:
    return x;
  }
}

/// v as a double, rounded to odd: exact up to 2^53, and above it still rounds correctly to
/// f16/bf16 under any mode (a 64-bit integer rounded to nearest double could land on a tie).
inline double intToDoubleRoundToOdd(__int128 v) {
  const double d = double(v);
  const __int128 err = v - __int128(d);
  if (err != 0 && (bitsOf(d) & 1) == 0) return std::nextafter(d, err > 0 ? HUGE_VAL : -HUGE_VAL);
  return d;
}

void Executor::execCvt(const Instr& I, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  Src a = src(I.s[0], R);
  const Ty dt = I.ty, st = I.ty2;
  const bool sat = I.flags & kSat, ftz = I.flags & kFtz;
  const bool dF = tyIsFloat(dt), sF = tyIsFloat(st);
  if (dt == Ty::F16x2 || dt == Ty::BF16x2) {
    Src b = src(I.s[1], R);
    const Round r = I.round == Round::None ? Round::Rn : I.round;
    auto one = [&](uint64_t v) -> uint64_t {
      double x = f32(v);
      return dt == Ty::F16x2 ? toHalf(x, r) : toBF16(x, r);
    };
    forLanes(m, [&](int l) { d[l] = (one(a[l]) << 16) | one(b[l]); });
    return;
  }
  auto readInt = [&](uint64_t v) -> __int128 {
    switch (st) {
    case Ty::S8:
      return int8_t(v);
    case Ty::S16:
      return int16_t(v);
    case Ty::S32:
      return int32_t(v);
    case Ty::S64:
      return int64_t(v);
    case Ty::U8:
    case Ty::B8:
      return uint8_t(v);
    case Ty::U16:
    case Ty::B16:
      return uint16_t(v);
    case Ty::U32:
    case Ty::B32:
      return uint32_t(v);
    case Ty::Pred:
      return v & 1;
    default:
      return uint64_t(v);
    }
  };
  auto intRange = [&](__int128& lo, __int128& hi) {
    int bits = tyBytes(dt) * 8;
    if (tyIsSigned(dt)) {
      lo = -(__int128(1) << (bits - 1));
      hi = (__int128(1) << (bits - 1)) - 1;
    } else {
      lo = 0;
      hi = (__int128(1) << bits) - 1;
    }
  };
  if (!dF && !sF) {
    __int128 lo, hi;
    intRange(lo, hi);
    // The value is chopped to the destination type, then sign- (signed destination) or
    // zero-extended to the register: cvt.s8.s32 of 255 is -1, cvt.u8.s32 of -1 is 255.
    const int shift = 64 - tyBytes(dt) * 8;
    const bool signedDst = tyIsSigned(dt);
    forLanes(m, [&](int l) {
      __int128 v = readInt(a[l]);
      if (sat) v = std::clamp(v, lo, hi);
      const uint64_t bits = uint64_t(v) << shift;
      d[l] = signedDst ? uint64_t(int64_t(bits) >> shift) : bits >> shift;
    });
    return;
  }
  if (dF && sF) {
    const bool integral = I.round == Round::Rni || I.round == Round::Rzi || I.round == Round::Rmi ||
                          I.round == Round::Rpi;
    forLanes(m, [&](int l) {
      double x = readFloat(a[l], st);
      if (ftz && st == Ty::F32) x = ftz32(float(x));
      if (integral) x = roundIntegral(x, I.round);
      if (sat) x = x != x ? 0.0 : std::clamp(x, 0.0, 1.0);
      d[l] = writeFloat(x, dt, integral ? Round::Rn : I.round, ftz);
    });
    return;
  }
  if (!dF && sF) {
    __int128 lo, hi;
    intRange(lo, hi);
    Round r = I.round == Round::None ? Round::Rzi : I.round;
    forLanes(m, [&](int l) {
      double x = readFloat(a[l], st);
      if (ftz && st == Ty::F32) x = ftz32(float(x));
      if (x != x) {
        d[l] = 0;
        return;
      }
      x = roundIntegral(x, r == Round::Rn   ? Round::Rni
                           : r == Round::Rz ? Round::Rzi
                           : r == Round::Rm ? Round::Rmi
                           : r == Round::Rp ? Round::Rpi
                                            : r);
      __int128 v;
      if (x <= double(lo))
        v = lo;
      else if (x >= double(hi))
        v = hi;
      else
        v = __int128(x);
      d[l] = uint64_t(v);
    });
    return;
  }
  // int → float
  forLanes(m, [&](int l) {
    __int128 v = readInt(a[l]);
    Round r = I.round == Round::None ? Round::Rn : I.round;
    uint64_t out;
    if (dt == Ty::F64 || dt == Ty::F32) {
      RoundingScope rs(r);
      if (dt == Ty::F64)
        out = tyIsSigned(st) ? bitsOf(double(int64_t(v))) : bitsOf(double(uint64_t(v)));
      else
        out = tyIsSigned(st) ? bitsOf(float(int64_t(v))) : bitsOf(float(uint64_t(v)));
    } else {
      out = writeFloat(intToDoubleRoundToOdd(v), dt, r, false);
    }
    if (sat && dt == Ty::F32) out = bitsOf(std::clamp(f32(out), 0.0f, 1.0f));
    d[l] = out;
  });
}

// ---------------------------------------------------------------- setp

template <class T> inline bool compareOrdered(Cmp c, T x, T y) {
  switch (c) {
  case Cmp::Eq:
    return x == y;
  case Cmp::Ne:
    return x != y;
  case Cmp::Lt:
  case Cmp::Lo:
    return x < y;
  case Cmp::Le:
  case Cmp::Ls:
    return x <= y;
  case Cmp::Gt:
  case Cmp::Hi:
    return x > y;
  case Cmp::Ge:
  case Cmp::Hs:
    return x >= y;
  default:
    return false;
  }
}

template <class T> inline bool compareFloat(Cmp c, T x, T y) {
  const bool nan = x != x || y != y;
  switch (c) {
  case Cmp::Eq:
  case Cmp::Lt:
  case Cmp::Le:
  case Cmp::Gt:
  case Cmp::Ge:
    return !nan && compareOrdered(c, x, y);
  case Cmp::Ne:
    return !nan && x != y;
  case Cmp::Equ:
    return nan || x == y;
  case Cmp::Neu:
    return nan || x != y;
  case Cmp::Ltu:
    return nan || x < y;
  case Cmp::Leu:
    return nan || x <= y;
  case Cmp::Gtu:
    return nan || x > y;
  case Cmp::Geu:
    return nan || x >= y;
  case Cmp::Num:
    return !nan;
  case Cmp::Nan:
    return nan;
  default:
    return false;
  }
}

void Executor::execSetp(const Instr& I, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  uint64_t* q = (I.flags & kHasPredOut) ? R + size_t(I.d[1].reg) * 32 : nullptr;
  Src a = src(I.s[0], R), b = src(I.s[1], R);
  Src p = I.ns > 2 ? src(I.s[2], R) : Src{nullptr, 0};
  const Cmp c = Cmp(I.mode);
  const BoolOp bop = I.boolOp;
  const uint64_t pneg = I.aux ? 1 : 0;
  auto finish = [&](int l, bool r) {
    if (bop == BoolOp::None) {
      d[l] = r;
      if (q) q[l] = !r;
      return;
    }
    bool pv = ((p[l] & 1) ^ pneg) != 0;
    auto comb = [&](bool x) {
      return bop == BoolOp::And ? (x && pv) : bop == BoolOp::Or ? (x || pv) : (x != pv);
    };
    d[l] = comb(r);
    if (q) q[l] = comb(!r);
  };
  switch (I.ty) {
  case Ty::F32: {
    const bool ftz = I.flags & kFtz;
    forLanes(m, [&](int l) {
      float x = f32(a[l]), y = f32(b[l]);
      if (ftz) x = ftz32(x), y = ftz32(y);
      finish(l, compareFloat(c, x, y));
    });
    return;
  }
  case Ty::F64:
    forLanes(m, [&](int l) { finish(l, compareFloat(c, f64(a[l]), f64(b[l]))); });
    return;
  case Ty::F16:
  case Ty::BF16:
    forLanes(m, [&](int l) {
      finish(l, compareFloat(c, readFloat(a[l], I.ty), readFloat(b[l], I.ty)));
    });
    return;
  case Ty::F16x2:
  case Ty::BF16x2: {
    // p|q: p compares the low halves, q the high halves, each combined with c on its own
    // (every source is read before a destination is written: they may share a register)
    const Ty half = I.ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
    forLanes(m, [&](int l) {
      const bool pv = ((p[l] & 1) ^ pneg) != 0;
      bool t[2];
      for (int h = 0; h < 2; ++h) {
        t[h] = compareFloat(c, readFloat(a[l] >> (16 * h), half),
                            readFloat(b[l] >> (16 * h), half));
        if (bop != BoolOp::None)
          t[h] = bop == BoolOp::And ? (t[h] && pv) : bop == BoolOp::Or ? (t[h] || pv) : (t[h] != pv);
      }
      d[l] = t[0];
      if (q) q[l] = t[1];
    });
    return;
  }
  case Ty::Pred:
    forLanes(m, [&](int l) { finish(l, compareOrdered(c, a[l] & 1, b[l] & 1)); });
    return;
  default: {
    // b-types compare unsigned (only eq/ne are legal for them anyway)
    Ty t = I.ty;
    if (t == Ty::B8) t = Ty::U8;
    if (t == Ty::B16) t = Ty::U16;
    if (t == Ty::B32) t = Ty::U32;
    if (t == Ty::B64) t = Ty::U64;
    byInt(t, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      const bool unsignedCmp = c == Cmp::Lo || c == Cmp::Ls || c == Cmp::Hi || c == Cmp::Hs;
      forLanes(m, [&](int l) {
        bool r = unsignedCmp ? compareOrdered(c, as<U>(a[l]), as<U>(b[l]))
                             : compareOrdered(c, as<T>(a[l]), as<T>(b[l]));
        finish(l, r);
      });
    });
  }
  }
}

// ---------------------------------------------------------------- warp-synchronous

// Returns false when the members named by the mask have not all arrived: the caller then
// parks the group (WarpWait) until they do.
bool Executor::execWarpSync(const Instr& I, Warp& w, uint32_t m, uint64_t* R) {
  switch (I.op) {
  case Op::Shfl: {
    uint64_t* d = R + size_t(I.d[0].reg) * 32;
    uint64_t* pd = (I.flags & kHasPredOut) ? R + size_t(I.d[1].reg) * 32 : nullptr;
    Src a = src(I.s[0], R), b = src(I.s[1], R), c = src(I.s[2], R);
    uint32_t vals[32];
    for (int l = 0; l < 32; ++l)
      vals[l] = uint32_t(R[size_t(I.s[0].reg) * 32 + l]);
    if (I.s[0].kind != Operand::Reg)
      for (int l = 0; l < 32; ++l)
        vals[l] = uint32_t(a[l]);
    const ShflMode mode = ShflMode(I.mode);
    forLanes(m, [&](int l) {
      int lane = l;
      int bval = int(b[l] & 31);
      uint32_t cv = uint32_t(c[l]);
      int segmask = int((cv >> 8) & 31), cval = int(cv & 31);
      int maxLane = (lane & segmask) | (cval & ~segmask);
      int minLane = lane & segmask;
      int j = lane;
      bool pval;
      switch (mode) {
      case ShflMode::Up:
        j = lane - bval;
        pval = j >= maxLane;
        break;
      case ShflMode::Down:
        j = lane + bval;
        pval = j <= maxLane;
        break;
      case ShflMode::Bfly:
        j = lane ^ bval;
        pval = j <= maxLane;
        break;
      default:
        j = minLane | (bval & ~segmask);
        pval = j <= maxLane;
        break;
      }
      if (!pval) j = lane;
      d[l] = vals[j & 31];
      if (pd) pd[l] = pval;
    });
    return true;
  }
  case Op::Vote: {
    uint64_t* d = R + size_t(I.d[0].reg) * 32;
    Src p = src(I.s[0], R);
    const uint64_t neg = I.aux ? 1 : 0;
    uint32_t ballot = 0;
    forLanes(m, [&](int l) { ballot |= uint32_t(((p[l] & 1) ^ neg) & 1) << l; });
    const VoteMode mode = VoteMode(I.mode);
    forLanes(m, [&](int l) {
      switch (mode) {
      case VoteMode::All:
        d[l] = ballot == m;
        break;
      case VoteMode::Any:
        d[l] = ballot != 0;
        break;
      case VoteMode::Uni:
        d[l] = ballot == 0 || ballot == m;
        break;
      case VoteMode::Ballot:
        d[l] = ballot;
        break;
      }
    });
    return true;
  }
  default:
    (void)w;
    return true;
  }
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
      if (m) {
        uint64_t* d = R + size_t(I.d[0].reg) * 32;
        Src a = src(I.s[0], R);
        forLanes(m, [&](int l) { d[l] = a[l]; });
      }
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
    case Op::Pack: {
      uint64_t* d = R + size_t(I.d[0].reg) * 32;
      const int width = tyBytes(I.ty) * 8 / I.ns;
      const uint64_t emask = width == 64 ? ~0ull : (1ull << width) - 1;
      Src s[4];
      for (int i = 0; i < I.ns; ++i)
        s[i] = src(I.s[i], R);
      forLanes(m, [&](int l) {
        uint64_t v = 0;
        for (int i = 0; i < I.ns; ++i)
          v |= (s[i][l] & emask) << (i * width);
        d[l] = v;
      });
      break;
    }
    case Op::Unpack: {
      const int width = tyBytes(I.ty) * 8 / I.nd;
      const uint64_t emask = width == 64 ? ~0ull : (1ull << width) - 1;
      Src s = src(I.s[0], R);
      forLanes(m, [&](int l) {
        uint64_t v = s[l];
        for (int i = 0; i < I.nd; ++i)
          if (I.d[i].kind == Operand::Reg)
            R[size_t(I.d[i].reg) * 32 + l] = (v >> (i * width)) & emask;
      });
      break;
    }
    case Op::Cvta: {
      uint64_t* d = R + size_t(I.d[0].reg) * 32;
      Src a = src(I.s[0], R);
      uint64_t win = I.space == Space::Shared  ? kSharedWindow
                     : I.space == Space::Local ? kLocalWindow
                     : I.space == Space::Const ? kConstWindow
                                               : 0;
      const bool to = I.flags & kToSpace;
      const bool narrow = tyBytes(I.ty) == 4;
      forLanes(m, [&](int l) {
        uint64_t v = narrow ? uint32_t(a[l]) : a[l];
        uint64_t r = to ? v - win : v + win;
        d[l] = narrow ? uint32_t(r) : r;
      });
      break;
    }
    case Op::Cvt:
      if (m) execCvt(I, m, R);
      break;
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
        execAlu(I, w, m, R);
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
      if (m) execAlu(I, w, m, R);
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
    case Op::Shfl:
    case Op::Vote:
    case Op::BarWarp: {
      // every non-exited member named by the mask must execute this instruction together
      uint32_t member = 0xffffffffu;
      const Operand& mo = I.op == Op::Shfl ? I.s[3] : I.op == Op::Vote ? I.s[1] : I.s[0];
      if (I.op != Op::BarWarp || I.ns == 1) member = uint32_t(src(mo, R)[__builtin_ctz(w.mask)]);
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
              anyBarrier |= w.state[l] == AtBarrier;
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
      if (m && I.op != Op::BarWarp) execWarpSync(I, w, m, R);
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

// ---------------------------------------------------------------- block sampling

// The per-block work counters, everything LaunchCounters counts per block (not the kernel
// name, the grid-barrier minimum nor the block counts themselves).
constexpr uint64_t LaunchCounters::*kBlockWorkCounters[] = {
    &LaunchCounters::warpInstructions,   &LaunchCounters::threadInstructions,
    &LaunchCounters::globalLoadRequests, &LaunchCounters::globalStoreRequests,
    &LaunchCounters::globalSectorsRead,  &LaunchCounters::globalSectorsWritten,
    &LaunchCounters::sharedLoads,        &LaunchCounters::sharedStores,
    &LaunchCounters::blockBarriers,      &LaunchCounters::atomics,
    &LaunchCounters::syncInstructions,   &LaunchCounters::syncSectors};

std::vector<uint64_t> blockWork(const LaunchCounters& after, const LaunchCounters& before) {
  std::vector<uint64_t> work;
  for (auto field : kBlockWorkCounters)
    work.push_back(after.*field - before.*field);
  return work;
}

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

  if (!cooperative_) {
    std::vector<Block> one(1);
    Block& b = one[0];
    auto runBlock = [&](uint64_t bi) {
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
    const uint64_t samples = rq_.options.sampleBlocks;
    if (samples == 0 || nBlocks <= samples + 1) {
      for (uint64_t bi = 0; bi < nBlocks; ++bi)
        runBlock(bi);
    } else {
      runSampledBlocks(nBlocks, samples, runBlock);
    }
  } else {
    int perSM = blocksPerSM(prog_, fn_, spec, int(threadsPerBlock_), cfg.dynamicSharedBytes);
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
    uint64_t doneBlocks = 0, lastProgress = progress_, spun = 0;
    while (doneBlocks < nBlocks) {
      bool ran = false;
      for (auto& b : blocks) {
        if (b.doneWarps == warpsPerBlock_) continue;
        for (auto& w : b.warps) {
          if (w.done) continue;
          uint64_t before = counters_.warpInstructions + counters_.syncInstructions;
          WarpStatus s = runWarp(b, w, 512);
          uint64_t n = counters_.warpInstructions + counters_.syncInstructions - before;
          if (n) ran = true;
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
          else if ((spun += n) > deadlock)
            deadlockError(b, w);
        }
      }
      if (!ran && doneBlocks < nBlocks) {
        bool abandoned = false;
        for (auto& b : blocks)
          abandoned |= abandonReconvergence(b);
        if (abandoned) continue;
        for (auto& b : blocks)
          if (b.doneWarps < warpsPerBlock_) barrierDeadlock(b);
      }
    }
  }
  counters_.gridBarriers = minGridBarriers_ == ~0ull ? 0 : minGridBarriers_;
  return counters_;
}

} // namespace

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
