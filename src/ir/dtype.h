#pragma once
// Element types of weft tensors, with their names, sizes and categories.
#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::ir {

enum class DType : uint8_t { f32, f16, bf16, f64, i8, i32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64,
                                       DType::i8,  DType::i32, DType::i64,  DType::boolean};

std::string_view dtypeName(DType t);               // "f32", ..., "bool"
std::optional<DType> parseDType(std::string_view s); // accepts the names above
int dtypeBytes(DType t);
bool isFloat(DType t);   // f32, f16, bf16, f64
bool isInteger(DType t); // i8, i32, i64
inline bool isBool(DType t) { return t == DType::boolean; }

/// Whether a double holds `v` exactly (every i8/i32 value; i64 up to 2^53 and some past it).
/// Graph constants are doubles (ConstantAttrs), so an integer that fails this cannot be one.
inline bool exactInDouble(int64_t v) {
  double d = static_cast<double>(v);
  return d < 9223372036854775808.0 && static_cast<int64_t>(d) == v;
}

} // namespace weft::ir
