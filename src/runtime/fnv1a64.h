#pragma once
// FNV-1a over 64 bits: the file names (and the compile cache's payload checksum) of weft's disk
// caches. Header only, so that the cuda device (weft_cuda, below weft_runtime) names its cubins
// with the same function as the compile cache names its entries. Never a content key on its
// own: each cache also checks what it loads (the whole key, or the PTX's size, SM and driver).
#include <cstdint>
#include <string_view>

namespace weft::runtime {

inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 1469598103934665603ull; // the compile cache's basis since its first entries
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace weft::runtime
