#pragma once
// Element types of weft tensors, with their names and sizes. The one definition: the IR
// (src/ir/dtype.h) takes these names as its own.
#include <cstdint>
#include <optional>
#include <string_view>

namespace weft {

enum class DType : uint8_t { f32, f16, bf16, f64, i8, i32, i64, boolean };

std::string_view dtypeName(DType t);                 // "f32", "f16", "bf16", "f64", "i8", "i32", "i64", "bool"
std::optional<DType> parseDType(std::string_view s); // accepts the names above
int dtypeBytes(DType t);
bool isFloat(DType t);   // f32, f16, bf16, f64
bool isInteger(DType t); // i8, i32, i64
inline bool isBool(DType t) { return t == DType::boolean; }

} // namespace weft
