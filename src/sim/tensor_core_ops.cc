// Tensor-core and asynchronous-copy instructions: mma.sync m16n8k16 (f16/bf16 inputs, f32
// accumulation) and m16n8k8 (tf32 inputs), ldmatrix m8n8 (x1/x2/x4, .trans), Hopper's
// wgmma.mma_async m64nNk16 (f16/bf16, f32 accumulation, operands from shared-memory
// descriptors) and cp.async with its groups.
//
// Fragment layouts are the PTX ISA's ("Matrix Fragments for mma.m16n8k16 with floating point
// type", "Warp-level matrix load instruction: ldmatrix"), with groupID = lane >> 2 and
// threadID_in_group (tig) = lane % 4, element i of a fragment in the low half of register
// i / 2 when i is even and the high half when odd:
//   A (16 x 16, a0..a7): row = groupID for i in {0, 1, 4, 5}, groupID + 8 otherwise;
//                        col = tig * 2 + (i & 1), + 8 for i >= 4
//   B (16 x 8, b0..b3):  row = tig * 2 + (i & 1), + 8 for i >= 2; col = groupID
//   C, D (16 x 8, f32 c0..c3): row = groupID, + 8 for i >= 2; col = tig * 2 + (i & 1)
//   ldmatrix: lanes 8j..8j+7 give the row addresses of matrix j (16 bytes each); register j of
//   lane l gets row l >> 2, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix j (.trans: column
//   l >> 2, rows 2 (l % 4) and 2 (l % 4) + 1).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "sim/float_convert.h"
#include "sim/lane_semantics.h"
#include "sim/lane_values.h"
#include "sim/simt_executor.h"

namespace weft::sim {
namespace {

uint16_t half(uint64_t reg, int i) {
  return uint16_t(reg >> (16 * (i & 1)));
}

double element(uint16_t bits, Ty t) {
  return t == Ty::BF16 ? fromBF16(bits) : fromHalf(bits);
}

uint32_t f32Bits(double v) {
  if (std::isnan(v)) return 0x7fffffffu; // canonical, as every f32 NaN of the simulator
  float f = float(v);
  uint32_t r;
  std::memcpy(&r, &f, 4);
  return r;
}

double f32Value(uint64_t bits) {
  float f;
  uint32_t b = uint32_t(bits);
  std::memcpy(&f, &b, 4);
  return f;
}

} // namespace

namespace {

/// mma.sync.m16n8k8 with tf32 inputs (PTX ISA, "Matrix Fragments for mma.m16n8k8" for .tf32):
///   A (16 x 8, a0..a3, one .b32 each): row = groupID (+ 8 for a1, a3), col = tig (+ 4 for a2, a3)
///   B (8 x 8, b0, b1): row = tig (+ 4 for b1), col = groupID
///   C, D as m16n8k16's.
/// A tf32 is an f32 whose 13 low significand bits the tensor core ignores; its products are
/// exact in double (11-bit significands) and so are sums of 8 of them and an f32 unless their
/// exponents span more than double's precision: each result is rounded once, to f32.
/// D = A B + C for A [16][K] and B [K][8] already gathered: C read from, and D written to, the
/// m16n8 accumulator fragments (lane g*4+t holds rows g and g+8, columns 2t and 2t+1), each
/// element summed in double and rounded once to f32.
template <int K>
void accumulate(const Instr& I, uint64_t* R, const double (&A)[16][K], const double (&B)[K][8]) {
  double C[16][8];
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i)
      C[(l >> 2) + (i >= 2 ? 8 : 0)][(l & 3) * 2 + (i & 1)] = f32Value(src(I.s[6 + i], R)[l]);
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i) {
      int row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
      double sum = C[row][col];
      for (int k = 0; k < K; ++k)
        sum += A[row][k] * B[k][col];
      if (I.d[i].kind == Operand::Reg) R[size_t(I.d[i].reg) * 32 + l] = f32Bits(sum);
    }
  }
}

void execTf32MatrixMultiply(const Instr& I, uint64_t* R) {
  auto tf32 = [](uint64_t reg) { return f32Value(reg & 0xffffe000u); };
  double A[16][8], B[8][8];
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i)
      A[g + (i & 1) * 8][t + (i >> 1) * 4] = tf32(src(I.s[i], R)[l]);
    for (int i = 0; i < 2; ++i)
      B[t + i * 4][g] = tf32(src(I.s[4 + i], R)[l]);
  }
  accumulate(I, R, A, B);
}

} // namespace

void execMatrixMultiply(const Instr& I, uint32_t, uint64_t* R) {
  if (I.ty2 == Ty::F32) {
    execTf32MatrixMultiply(I, R);
    return;
  }
  double A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < 8; ++i) {
      uint64_t reg = src(I.s[i / 2], R)[l];
      int row = g + ((i & 2) ? 8 : 0);
      int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      A[row][col] = element(half(reg, i), I.ty2);
    }
    for (int i = 0; i < 4; ++i) {
      uint64_t reg = src(I.s[4 + i / 2], R)[l];
      B[t * 2 + (i & 1) + (i >= 2 ? 8 : 0)][g] = element(half(reg, i), I.ty2);
    }
  }
  // Products of two f16 or bf16 values are exact in double, and so are sums of 16 of them
  // and an f32 unless their exponents span more than double's precision: each result is
  // rounded once, to f32, at least as accurate as the hardware's accumulation.
  accumulate(I, R, A, B);
}

void Executor::execTensorCore(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R) {
  if (m != 0xffffffffu)
    fault(b, w, __builtin_ctz(m), I,
          fmt::format("{} needs all 32 lanes of the warp (.sync.aligned), but only 0x{:08x} "
                      "execute it",
                      I.op == Op::Mma ? "mma.sync" : "ldmatrix", m));
  if (I.op == Op::Mma) {
    execMatrixMultiply(I, m, R);
    return;
  }
  // ldmatrix: the rows of matrix j come from the addresses of lanes 8j .. 8j + 7
  const uint64_t* base = (I.flags & kAddrReg) ? R + size_t(I.addr.reg) * 32 : nullptr;
  const uint64_t off = I.addr.imm + ((I.flags & kDynShared) ? fn_.dynamicSharedOffset : 0);
  uint16_t rows[4][8][8];
  for (int j = 0; j < I.nd; ++j)
    for (int r = 0; r < 8; ++r) {
      int lane = 8 * j + r;
      uint64_t addr = (base ? base[lane] : 0) + off;
      MemClass cls = MShared;
      uint8_t* p = resolve(b, w, lane, I, I.space, addr, 16, false, cls);
      if (cls != MShared)
        fault(b, w, lane, I, fmt::format("ldmatrix row address 0x{:x} is not shared memory", addr));
      if (!b.written.empty()) {
        const uint8_t* wb = b.written.data() + (p - b.shared.data());
        for (int k = 0; k < 16; ++k)
          if (!wb[k])
            fault(b, w, lane, I,
                  fmt::format("read of uninitialised shared memory at shared address 0x{:x}: no "
                              "thread of the block has written it (missing bar.sync?)",
                              (p - b.shared.data()) + k));
      }
      std::memcpy(rows[j][r], p, 16);
    }
  const bool trans = I.mode == 1;
  for (int j = 0; j < I.nd; ++j) {
    if (I.d[j].kind != Operand::Reg) continue;
    for (int l = 0; l < 32; ++l) {
      int q = l >> 2, c = 2 * (l & 3);
      uint16_t lo = trans ? rows[j][c][q] : rows[j][q][c];
      uint16_t hi = trans ? rows[j][c + 1][q] : rows[j][q][c + 1];
      R[size_t(I.d[j].reg) * 32 + l] = uint64_t(lo) | uint64_t(hi) << 16;
    }
  }
  if (!(I.flags & kSync)) ++counters_.sharedLoads;
}

// ---------------------------------------------------------------- wgmma

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} (PTX ISA, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate"), both operands K-major in shared memory:
//   descriptor (64 bits): start address >> 4 in bits 0-13, leading-dimension byte offset
//     (LBO) >> 4 in bits 16-29, stride-dimension byte offset (SBO) >> 4 in bits 32-45, base
//     offset in bits 49-51, swizzle mode in bits 62-63 (0: none, 1: 128B, 2: 64B, 3: 32B).
//   No swizzle (the ISA's canonical layouts, T = 8 16-bit elements in 16 bytes): the operand
//     (A 64 x 16, B N x 16, rows along M or N) is made of core matrices of 8 x 8 elements,
//     each 8 rows of 16 contiguous bytes:
//     K-major (imm-trans 0, ((8,m),(T,2k)):((1T,SBO),(1,LBO))): element (row, k) at
//       start + (row / 8) * SBO + (k / 8) * LBO + (row % 8) * 16 + (k % 8) * 2;
//     MN-major (imm-trans 1, ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))): element (row, k) at
//       start + (row / 8) * SBO + (k / 8) * LBO + (k % 8) * 16 + (row % 8) * 2.
//   D (f32, N / 2 registers per thread): warp r of the warpgroup (warp index % 4) holds rows
//     16 r .. 16 r + 15; register i of lane 4 g + t is row 16 r + g + 8 ((i / 2) % 2),
//     column 8 (i / 4) + 2 t + i % 2: mma.m16n8's C fragment repeated along N.
//   D = A B + (scale-d ? D : 0), A and B negated by imm-scale-a/b = -1.
// The instruction is asynchronous on the GPU (its results are there after wgmma.wait_group);
// here it completes when the last warp of the warpgroup arrives, reading shared memory then.

void Executor::arriveWarpgroupMma(const Instr& I, Block& b, Warp& w, uint32_t m) {
  if (m != 0xffffffffu)
    fault(b, w, __builtin_ctz(m), I,
          fmt::format("wgmma.mma_async needs all 32 lanes of each warp of the warpgroup "
                      "(.sync.aligned), but only 0x{:08x} execute it",
                      m));
  if (threadsPerBlock_ % 128 != 0)
    fault(b, w, 0, I,
          fmt::format("wgmma.mma_async needs whole warpgroups (128 threads), but the block has {} "
                      "threads",
                      threadsPerBlock_));
  const uint32_t group = w.index / 4, rank = w.index % 4;
  WarpgroupArrival& wg = b.warpgroups[group];
  if (wg.arrived && wg.pc != w.gpc)
    fault(b, w, 0, I,
          fmt::format("the warps of warpgroup {} execute different wgmma.mma_async instructions "
                      "(PTX lines {} and {}): .aligned needs all four at the same one",
                      group, code_[wg.pc].line, I.line));
  wg.pc = w.gpc;
  wg.regBase[rank] = w.gbase;
  wg.arrived |= 1u << rank;
  forLanes(w.mask, [&](int l) {
    w.pc[l] = w.gpc + 1;
    w.state[l] = AtBarrier;
    w.barId[l] = kWarpgroupBarrier;
  });
  w.mask = 0;
  ++progress_;
  if (!(I.flags & kSync)) ++counters_.sharedLoads;
  if (wg.arrived != 0xfu) return;
  wg.arrived = 0;
  execWarpgroupMma(I, b, group);
  for (uint32_t r = 0; r < 4; ++r)
    for (int l = 0; l < 32; ++l)
      b.warps[4 * group + r].state[l] = Ready;
}

void Executor::execWarpgroupMma(const Instr& I, Block& b, uint32_t group) {
  const WarpgroupArrival& wg = b.warpgroups[group];
  Warp& w0 = b.warps[4 * group];
  auto regs = [&](uint32_t r) {
    return b.warps[4 * group + r].regs.data() + size_t(wg.regBase[r]) * 32;
  };
  // descriptors and scale-d: one value for the whole warpgroup
  uint64_t value[3];
  for (int i = 0; i < 3; ++i) {
    value[i] = src(I.s[i], regs(0))[0];
    if (i == 2) value[i] &= 1;
    for (uint32_t r = 0; r < 4; ++r)
      for (int l = 0; l < 32; ++l) {
        uint64_t v = src(I.s[i], regs(r))[l];
        if (i == 2) v &= 1;
        if (v != value[i])
          fault(b, b.warps[4 * group + r], l, I,
                fmt::format("wgmma.mma_async: the {} differs across the warpgroup (0x{:x} in "
                            "thread {} of the warpgroup, 0x{:x} in thread 0)",
                            i == 0 ? "A descriptor" : i == 1 ? "B descriptor" : "scale-d", v,
                            32 * r + uint32_t(l), value[i]));
      }
  }
  const int n = int(I.aux2) * 2;
  // One operand of `rows` x 16 elements, read through its descriptor, K-major or (mnMajor)
  // MN-major: 16 contiguous bytes are 8 elements of K of one row, or of 8 rows at one k.
  auto gather = [&](uint64_t desc, int rows, const char* name, bool negate, bool mnMajor,
                    double* out) {
    const uint64_t start = (desc & 0x3fff) << 4, lbo = ((desc >> 16) & 0x3fff) << 4,
                   sbo = ((desc >> 32) & 0x3fff) << 4;
    const unsigned baseOffset = unsigned(desc >> 49) & 7, swizzle = unsigned(desc >> 62);
    if (swizzle != 0)
      fault(b, w0, 0, I,
            fmt::format("wgmma.mma_async: the {} descriptor asks for the {} swizzle mode; only "
                        "no-swizzle (interleaved core matrices, mode 0) is supported",
                        name, swizzle == 1 ? "128-byte" : swizzle == 2 ? "64-byte" : "32-byte"));
    if (baseOffset != 0)
      fault(b, w0, 0, I,
            fmt::format("wgmma.mma_async: the {} descriptor has base offset {}; only 0 is "
                        "supported",
                        name, baseOffset));
    // unit (u, v): K-major, row u and k 8 v .. 8 v + 7; MN-major, rows 8 v .. 8 v + 7 at k u
    const int units = mnMajor ? 16 : rows, perUnit = mnMajor ? rows / 8 : 2;
    for (int u = 0; u < units; ++u)
      for (int v = 0; v < perUnit; ++v) {
        const uint64_t addr =
            mnMajor ? start + uint64_t(v) * sbo + uint64_t(u / 8) * lbo + uint64_t(u % 8) * 16
                    : start + uint64_t(u / 8) * sbo + uint64_t(v) * lbo + uint64_t(u % 8) * 16;
        auto what = [&] {
          return mnMajor ? fmt::format("rows {}-{} of {} at k {}", 8 * v, 8 * v + 7, name, u)
                         : fmt::format("row {} of {} (k {}-{})", u, name, 8 * v, 8 * v + 7);
        };
        if (addr + 16 > sharedBytes_)
          fault(b, w0, 0, I,
                fmt::format("wgmma.mma_async: {} at shared address 0x{:x} is past the block's {} "
                            "bytes of shared memory (descriptor 0x{:016x})",
                            what(), addr, sharedBytes_, desc));
        if (!b.written.empty())
          for (int x = 0; x < 16; ++x)
            if (!b.written[addr + uint64_t(x)])
              fault(b, w0, 0, I,
                    fmt::format("wgmma.mma_async: read of uninitialised shared memory at shared "
                                "address 0x{:x} ({}): no thread of the block has written it "
                                "(missing bar.sync?)",
                                addr + uint64_t(x), what()));
        for (int j = 0; j < 8; ++j) {
          uint16_t bits;
          std::memcpy(&bits, b.shared.data() + addr + 2 * j, 2);
          double e = element(bits, I.ty2);
          const int row = mnMajor ? 8 * v + j : u, k = mnMajor ? u : 8 * v + j;
          out[row * 16 + k] = negate ? -e : e;
        }
      }
  };
  std::vector<double> A(64 * 16), B(size_t(n) * 16);
  gather(value[0], 64, "A", I.mode & 1, I.mode & 4, A.data());
  gather(value[1], n, "B", I.mode & 2, I.mode & 8, B.data());
  const bool scaleD = value[2] != 0;
  // Each result the exact sum of its 16 products (exact in double) and D, rounded once to f32.
  const std::vector<Operand>& list = prog_.functions[I.func].operandLists;
  for (uint32_t r = 0; r < 4; ++r) {
    uint64_t* R = regs(r);
    for (int l = 0; l < 32; ++l) {
      const int g = l >> 2, t = l & 3;
      for (int i = 0; i < n / 2; ++i) {
        const Operand& d = list[I.aux + uint32_t(i)];
        const int row = int(r) * 16 + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
        uint64_t& reg = R[size_t(d.reg) * 32 + size_t(l)];
        double sum = scaleD ? f32Value(reg) : 0.0;
        for (int k = 0; k < 16; ++k)
          sum += A[size_t(row * 16 + k)] * B[size_t(col * 16 + k)];
        reg = f32Bits(sum);
      }
    }
  }
}

// cp.async copies at issue: the data a later wait_group guarantees is there at once, and what
// the global memory held at issue is what lands in shared memory, as on the GPU (whose copy
// may land any time before the wait). commit_group and wait_group have nothing left to do.
void Executor::execCpAsync(const Instr& I, Block& b, Warp& w, uint32_t m, uint64_t* R) {
  const uint32_t size = I.aux;
  const uint64_t* dstBase = (I.flags & kAddrReg) ? R + size_t(I.addr.reg) * 32 : nullptr;
  const uint64_t dstOff = I.addr.imm + ((I.flags & kDynShared) ? fn_.dynamicSharedOffset : 0);
  const uint64_t* srcBase = R + size_t(I.s[0].reg) * 32;
  const Src srcSize = I.ns > 1 ? src(I.s[1], R) : Src{nullptr, size};
  uint64_t sectors[32];
  int nGlobal = 0;
  forLanes(m, [&](int l) {
    uint32_t n = uint32_t(std::min<uint64_t>(srcSize[l], size));
    MemClass cls = MShared;
    uint8_t* d =
        resolve(b, w, l, I, Space::Shared, (dstBase ? dstBase[l] : 0) + dstOff, size, true, cls);
    if (n > 0) {
      uint64_t from = srcBase[l] + I.s[0].imm;
      MemClass scls = MGlobal;
      // the whole cp-size is aligned and in bounds, as PTX requires of the source address
      const uint8_t* p = resolve(b, w, l, I, Space::Global, from, size, false, scls);
      std::memcpy(d, p, n);
      for (uint64_t s = from >> 5; s <= (from + n - 1) >> 5; ++s)
        sectors[nGlobal++] = s;
    }
    std::memset(d + n, 0, size - n); // bytes past src-size are zero-filled
    if (!b.written.empty()) std::memset(b.written.data() + (d - b.shared.data()), 1, size);
  });
  ++progress_;
  if (I.flags & kSync) return;
  ++counters_.sharedStores;
  if (nGlobal) {
    std::sort(sectors, sectors + nGlobal);
    ++counters_.globalLoadRequests;
    counters_.globalSectorsRead += uint64_t(std::unique(sectors, sectors + nGlobal) - sectors);
  }
}

} // namespace weft::sim
