#include "weft/tensor.h"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "weft/error.h"

namespace weft {

HostTensor::HostTensor(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
  for (int64_t d : shape)
    if (d < 0) throw InputError(fmt::format("tensor {}: negative size {}", typeStr(), d));
  int64_t byteCount;
  if (__builtin_mul_overflow(ir::checkedProduct(shape), ir::dtypeBytes(t), &byteCount))
    throw InputError(fmt::format("tensor {}: its byte size does not fit in int64", typeStr()));
  bytes.assign(static_cast<size_t>(byteCount), 0);
}

int64_t HostTensor::numElements() const { return ir::checkedProduct(shape); }

std::string HostTensor::typeStr() const {
  return fmt::format("{}[{}]", ir::dtypeName(dtype), fmt::join(shape, ", "));
}

namespace {
template <class T> T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T> void store(uint8_t* p, T v) { std::memcpy(p, &v, sizeof(T)); }

template <class I> I saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(std::trunc(v));
}
} // namespace

double HostTensor::get(int64_t i) const {
  const uint8_t* p = bytes.data() + static_cast<size_t>(i) * static_cast<size_t>(ir::dtypeBytes(dtype));
  switch (dtype) {
  case DType::f32: return load<float>(p);
  case DType::f64: return load<double>(p);
  case DType::f16: return halfToFloat(load<uint16_t>(p));
  case DType::bf16: return bfloat16ToFloat(load<uint16_t>(p));
  case DType::i8: return load<int8_t>(p);
  case DType::i32: return load<int32_t>(p);
  case DType::i64: return static_cast<double>(load<int64_t>(p));
  case DType::boolean: return load<uint8_t>(p) ? 1.0 : 0.0;
  }
  return 0;
}

int64_t HostTensor::getInt(int64_t i) const {
  const uint8_t* p = bytes.data() + i * ir::dtypeBytes(dtype);
  switch (dtype) {
  case DType::i8: return load<int8_t>(p);
  case DType::i32: return load<int32_t>(p);
  case DType::i64: return load<int64_t>(p);
  case DType::boolean: return load<uint8_t>(p) ? 1 : 0;
  default: return saturatingCast<int64_t>(get(i));
  }
}

void HostTensor::setInt(int64_t i, int64_t v) {
  uint8_t* p = bytes.data() + i * ir::dtypeBytes(dtype);
  switch (dtype) {
  case DType::i8: store<int8_t>(p, static_cast<int8_t>(wrapToDType(v, dtype))); return;
  case DType::i32: store<int32_t>(p, static_cast<int32_t>(wrapToDType(v, dtype))); return;
  case DType::i64: store<int64_t>(p, v); return;
  case DType::boolean: store<uint8_t>(p, v != 0 ? 1 : 0); return;
  default: set(i, static_cast<double>(v)); return;
  }
}

void HostTensor::set(int64_t i, double v) {
  uint8_t* p = bytes.data() + static_cast<size_t>(i) * static_cast<size_t>(ir::dtypeBytes(dtype));
  switch (dtype) {
  case DType::f32: store<float>(p, static_cast<float>(v)); return;
  case DType::f64: store<double>(p, v); return;
  case DType::f16: store<uint16_t>(p, floatToHalf(static_cast<float>(v))); return;
  case DType::bf16: store<uint16_t>(p, floatToBFloat16(static_cast<float>(v))); return;
  case DType::i8: store<int8_t>(p, saturatingCast<int8_t>(v)); return;
  case DType::i32: store<int32_t>(p, saturatingCast<int32_t>(v)); return;
  case DType::i64: store<int64_t>(p, saturatingCast<int64_t>(v)); return;
  case DType::boolean: store<uint8_t>(p, v != 0.0 ? 1 : 0); return;
  }
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u); // overflow to infinity
  if (e <= 0) {                                                 // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half; // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else { // subnormal: normalise
      int e = -1;
      do {
        mant <<= 1;
        ++e;
      } while (!(mant & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double roundToDType(double v, DType t) {
  switch (t) {
  case DType::f32: return static_cast<float>(v);
  case DType::f16: return halfToFloat(floatToHalf(static_cast<float>(v)));
  case DType::bf16: return bfloat16ToFloat(floatToBFloat16(static_cast<float>(v)));
  case DType::f64: return v;
  case DType::i8: return saturatingCast<int8_t>(v);
  case DType::i32: return saturatingCast<int32_t>(v);
  case DType::i64: return static_cast<double>(saturatingCast<int64_t>(v));
  case DType::boolean: return v != 0.0 ? 1.0 : 0.0;
  }
  return v;
}

int64_t wrapToDType(int64_t v, DType t) {
  switch (t) {
  case DType::i8: return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v)));
  case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
  case DType::boolean: return v != 0 ? 1 : 0;
  default: return v;
  }
}

} // namespace weft
