// Moving and converting values: lane semantics (lane_semantics.h) of mov, mov to and from
// vectors ({a, b} packs, unpacks), cvta (generic <-> state-space addresses, the windows of
// program.h) and cvt. cvt between integers chops to the destination and sign- or
// zero-extends by its signedness; float -> integer saturates (NaN gives 0); integer and float
// -> f16/bf16 round once, through a double rounded to odd. Compiled with -frounding-math:
// int -> f32/f64 rounds under the host rounding mode.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/lane_semantics.h"
#include "sim/lane_values.h"

namespace weft::sim {

namespace {

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

void execCvt(const Instr& I, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  Src a = src(I.s[0], R);
  if (I.round == Round::Rna) {
    // cvt.rna.tf32.f32 (the decoder takes .rna for nothing else): the 13 low significand bits
    // dropped, to nearest with ties away from zero (on the magnitude, which the bits hold apart
    // from the sign: an integer add); past the largest tf32, infinity; a NaN stays a NaN.
    forLanes(m, [&](int l) {
      const uint32_t b = uint32_t(a[l]);
      const bool nan = (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0;
      d[l] = nan ? 0x7fffffffu : (b + 0x1000u) & 0xffffe000u;
    });
    return;
  }
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

} // namespace

void execMove(const Instr& I, uint32_t m, uint64_t* R) {
  switch (I.op) {
  case Op::Mov: {
    uint64_t* d = R + size_t(I.d[0].reg) * 32;
    Src a = src(I.s[0], R);
    forLanes(m, [&](int l) { d[l] = a[l]; });
    return;
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
    return;
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
    return;
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
    return;
  }
  case Op::Cvt:
    execCvt(I, m, R);
    return;
  default:
    return;
  }
}

} // namespace weft::sim
