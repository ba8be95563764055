// Memory access and sector counting (simt_executor.h): ld, st, atom and red. Each lane's
// address is resolved to its state space (generic addresses by their window, program.h) and
// checked: alignment, the bounds of the live global allocation, the block's shared memory,
// the thread's stack, the module's constants and the kernel's parameters, and (optionally)
// loads of shared bytes no thread of the block wrote. A warp-level access that touches global
// memory counts one request and the distinct 32-byte sectors its lanes touch; inside the grid
// barrier they count as synchronisation instead (executor.h has the rules).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "sim/simt_executor.h"

namespace weft::sim {

namespace {

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

} // namespace

uint8_t* Executor::resolve(Block& b, Warp& w, int l, const Instr& I, Space sp, uint64_t addr,
                           uint32_t size, bool write, MemClass& cls) {
  const char* verb = write ? "store" : "load";
  if (addr % size != 0)
    fault(b, w, l, I, fmt::format("misaligned {}-byte {} at address 0x{:x}", size, verb, addr));
  if (sp == Space::SharedCluster) {
    cls = MShared;
    return resolveCluster(b, w, l, I, addr, size, write);
  }
  if (sp == Space::Generic) {
    if (addr - kSharedWindow < kWindowSize) {
      cls = MShared;
      // a generic address of another block's shared memory (generic mapa)
      if (addr - kSharedWindow >= kClusterRankStride)
        return resolveCluster(b, w, l, I, addr - kSharedWindow, size, write);
      sp = Space::Shared, addr -= kSharedWindow;
    } else if (addr - kLocalWindow < kWindowSize)
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
    sharedBlock_ = &b;
    if (addr + size > b.shared.size() || addr >= b.shared.size())
      fault(
          b, w, l, I,
          fmt::format("out-of-bounds shared {} of {} bytes at shared address 0x{:x} (the block has "
                      "{} bytes of shared memory){}",
                      verb, size, addr, b.shared.size(),
                      addr >= kClusterRankStride && addr < (kMaxClusterSize + 1) * kClusterRankStride
                          ? "; a shared::cluster address (mapa's) needs ld/st.shared::cluster"
                          : ""));
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
  case Space::SharedCluster:
    break;
  }
  return nullptr;
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
  bool anyShared = false, anyRemote = false; // own block's / other blocks' shared memory
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
      const Block& tb = *sharedBlock_; // this block, or another of its cluster
      (&tb == &b ? anyShared : anyRemote) = true;
      if (!tb.written.empty()) {
        uint8_t* wb = sharedBlock_->written.data() + (p - tb.shared.data());
        if (isLd) {
          for (uint32_t i = 0; i < size; ++i)
            if (!wb[i] && &tb == &b)
              fault(b, w, l, I,
                    fmt::format("read of uninitialised shared memory at shared address 0x{:x}: no "
                                "thread of the block has written it (missing bar.sync?)",
                                (p - b.shared.data()) + i));
            else if (!wb[i])
              fault(b, w, l, I,
                    fmt::format("read of uninitialised shared memory of block ({},{},{}) (cluster "
                                "rank {}) at shared::cluster address 0x{:x}: no thread of that "
                                "block has written it (missing barrier.cluster?)",
                                tb.id[0], tb.id[1], tb.id[2], tb.rank,
                                (tb.rank + 1) * kClusterRankStride + (p - tb.shared.data()) + i));
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
  // distributed shared memory: loads from other blocks of the cluster (stores to them count
  // in no counter)
  if (anyRemote && isLd && !sync) ++counters_.clusterSharedLoads;
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
    if (cls == MShared && !sharedBlock_->written.empty()) {
      uint8_t* wb = sharedBlock_->written.data() + (p - sharedBlock_->shared.data());
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

} // namespace weft::sim
