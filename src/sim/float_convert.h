#pragma once
// Bit-exact conversions between double and the narrow float formats PTX uses (f32, f16,
// bf16) under each IEEE rounding mode of cvt (rn, rz, rm, rp).
#include <cstdint>

#include "sim/program.h"

namespace weft::sim {

/// Rounds x to a binary format with `expBits` exponent and `mantBits` fraction bits and
/// returns its bit pattern. NaN becomes the canonical NaN (all exponent and fraction bits set).
uint64_t encodeFloat(double x, int expBits, int mantBits, Round mode);
double decodeFloat(uint64_t bits, int expBits, int mantBits);

inline uint16_t toHalf(double x, Round r = Round::Rn) {
  return uint16_t(encodeFloat(x, 5, 10, r));
}
inline uint16_t toBF16(double x, Round r = Round::Rn) {
  return uint16_t(encodeFloat(x, 8, 7, r));
}
inline double fromHalf(uint16_t b) {
  return decodeFloat(b, 5, 10);
}
inline double fromBF16(uint16_t b) {
  // bf16 is the top half of an f32
  uint32_t w = uint32_t(b) << 16;
  float f;
  __builtin_memcpy(&f, &w, 4);
  return f;
}

} // namespace weft::sim
