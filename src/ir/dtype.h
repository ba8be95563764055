#pragma once
// Element types of weft tensors: the public definition (weft/dtype.h) under the IR's names,
// plus what only the compiler needs.
#include <cstdint>

#include "weft/dtype.h"

namespace weft::ir {

using weft::DType;
using weft::dtypeBytes;
using weft::dtypeName;
using weft::isBool;
using weft::isFloat;
using weft::isInteger;
using weft::parseDType;

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64,
                                       DType::i8,  DType::i32, DType::i64,  DType::boolean};

/// Whether a double holds `v` exactly (every i8/i32 value; i64 up to 2^53 and some past it).
/// Graph constants are doubles (ConstantAttrs), so an integer that fails this cannot be one.
inline bool exactInDouble(int64_t v) {
  double d = static_cast<double>(v);
  return d < 9223372036854775808.0 && static_cast<int64_t>(d) == v;
}

} // namespace weft::ir
