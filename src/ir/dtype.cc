#include "ir/dtype.h"

// The public dtype functions (weft/dtype.h).
namespace weft {

std::string_view dtypeName(DType t) {
  switch (t) {
  case DType::f32: return "f32";
  case DType::f16: return "f16";
  case DType::bf16: return "bf16";
  case DType::f64: return "f64";
  case DType::i8: return "i8";
  case DType::i32: return "i32";
  case DType::i64: return "i64";
  case DType::boolean: return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view s) {
  for (DType t : ir::kAllDTypes)
    if (dtypeName(t) == s) return t;
  return std::nullopt;
}

int dtypeBytes(DType t) {
  switch (t) {
  case DType::f64:
  case DType::i64: return 8;
  case DType::f32:
  case DType::i32: return 4;
  case DType::f16:
  case DType::bf16: return 2;
  case DType::i8:
  case DType::boolean: return 1;
  }
  return 0;
}

bool isFloat(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}
bool isInteger(DType t) { return t == DType::i8 || t == DType::i32 || t == DType::i64; }

} // namespace weft
