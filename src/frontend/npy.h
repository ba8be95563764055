#pragma once
// numpy's .npy files (format versions 1.0, 2.0 and 3.0): little-endian, C order, dtypes
// <f4 <f2 <f8 |i1 <i4 <i8 |b1. numpy has no bfloat16: weft writes bf16 as <u2 (the raw bits)
// and reads <u2 back as bf16 when the caller expects bf16.
#include <optional>
#include <string>

#include "weft/tensor.h"

namespace weft::frontend {

/// Decodes the bytes of a .npy file. `where` names it in messages (usually its path).
/// `expected`, when given, is the dtype the caller needs: a file of another dtype is an
/// InputError, and <u2 data is taken as bf16 bits only when bf16 is expected.
HostTensor decodeNpy(const std::string& bytes, const std::string& where,
                     std::optional<DType> expected = std::nullopt);
HostTensor readNpy(const std::string& path, std::optional<DType> expected = std::nullopt);

/// Encodes as format 1.0 (2.0 when the header needs it), header padded to 64 bytes.
std::string encodeNpy(const HostTensor& t);
void writeNpy(const std::string& path, const HostTensor& t);

} // namespace weft::frontend
