#pragma once
// An exact, canonical text of a graph for content keys (the compile cache): every node's name,
// kind, operands, dtype, shape and attributes, every floating-point number by its bits. Two
// graphs get the same fingerprint only if they are the same graph; ir::printGraph, which
// rounds numbers for people, must never serve as a key.
#include <string>

#include "ir/graph.h"

namespace weft::ir {

/// Constants of up to kInlineConstantValues values appear bit-exactly in the text; larger ones
/// by their element count and the SHA-256 of their bits.
inline constexpr size_t kInlineConstantValues = 16;

std::string fingerprint(const Graph& g);

} // namespace weft::ir
