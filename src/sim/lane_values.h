#pragma once
// How the executor holds a warp's values, and the helpers every part of it reads them with.
// A register is one 64-bit slot per lane: slot s of lane l is R[s * 32 + l], where R is the
// running group's frame (Warp::regs from its register base); a value narrower than 64 bits
// sits in the low bits. Lane semantics (lane_semantics.h), memory access and the warp loop
// all read operands through Src and write lanes through forLanes.
//
// Only the executor's files include this header, and all of them are compiled with
// -frounding-math (src/sim/CMakeLists.txt): RoundingScope switches the host rounding mode
// around float operations, and these inline functions must be compiled the same way in
// every file that uses them.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "sim/float_convert.h"
#include "sim/program.h"

namespace weft::sim {

/// A slot's low bits as a T (a 128-bit T: the slot's value, widened).
template <class T> inline T as(uint64_t v) {
  if constexpr (sizeof(T) > 8) {
    return T(v);
  } else {
    T t;
    std::memcpy(&t, &v, sizeof(T));
    return t;
  }
}
/// T's bits in a slot, zero-extended (a 128-bit T: its low 64 bits).
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

/// Calls f(l) for each lane l of the mask m, lowest first (a full warp without bit scanning).
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

/// An operand's value per lane: a register's lanes, or one immediate for all of them.
struct Src {
  const uint64_t* p;
  uint64_t imm;
  inline uint64_t operator[](int l) const { return p ? p[l] : imm; }
};
inline Src src(const Operand& o, uint64_t* R) {
  return o.kind == Operand::Reg ? Src{R + size_t(o.reg) * 32, 0} : Src{nullptr, o.imm};
}

/// Switches the host rounding mode to .rz/.rm/.rp for its lifetime (rn and none: no change).
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

/// .ftz: a subnormal f32 becomes a zero of its sign.
inline float ftz32(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
/// An f32 result's bits, NaN made canonical (0x7fffffff) as the GPU does.
inline uint64_t canon32(float r) {
  return r != r ? 0x7fffffffu : bitsOf(r);
}

/// Calls f with a value of the unsigned integer type as wide as t (1, 2, 4 or 8 bytes).
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
/// Calls f with a value of t's integer type: signed for .s8-.s64, else unsigned by width.
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

/// A register's bits read as a float of type t (f16, bf16, f32; anything else as f64).
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

} // namespace weft::sim
