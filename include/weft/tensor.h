#pragma once
// A tensor in host memory: dtype, static shape and the raw little-endian bytes, laid out
// row-major exactly as a device buffer or a .npy file holds them. get()/set() convert
// through double (f16/bf16 round to nearest even on set).
#include <cstdint>
#include <string>
#include <vector>

#include "weft/dtype.h"

namespace weft {

struct HostTensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType t, std::vector<int64_t> s); // zero-filled
  int64_t numElements() const;
  size_t byteSize() const { return bytes.size(); }
  double get(int64_t i) const;
  void set(int64_t i, double v);
  /// Integer dtypes exactly (i64 included; get() rounds past 2^53); bool as 0/1; floats
  /// truncate toward zero and saturate, NaN gives 0. setInt wraps to the dtype's width.
  int64_t getInt(int64_t i) const;
  void setInt(int64_t i, int64_t v);
  std::string typeStr() const; // "f32[16, 768]"
};

// IEEE binary16 and bfloat16 conversions, round to nearest even, NaN and infinities kept.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(uint16_t b);
/// Rounds a double to the nearest value representable in `t` (what a store of `t` keeps).
/// Integer dtypes truncate toward zero and saturate (NaN gives 0), as a float-to-integer
/// convert does.
double roundToDType(double v, DType t);
/// Two's-complement wrap of `v` to the width of integer dtype `t` (i8: 300 -> 44); bool: v != 0.
int64_t wrapToDType(int64_t v, DType t);

} // namespace weft
