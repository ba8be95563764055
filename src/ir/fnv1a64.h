#pragma once
// FNV-1a over 64 bits: the file names and checksums of weft's disk caches (the compile cache's
// entry names and payload checksum, the cubin cache's names, a serialised plan's checksum).
// Header only and at the bottom layer, so that the planner (fusion/plan_serialization.cc), the
// runtime and the cuda device (weft_cuda, below weft_runtime) share one function. Never a
// content key on its own: each cache also checks what it loads (the whole key, or the PTX's
// size, SM and driver).
#include <cstdint>
#include <string_view>

namespace weft::ir {

inline uint64_t fnv1a64(std::string_view text) {
  // A digit short of FNV's published offset basis (14695981039346656037) since the compile
  // cache's first entries; kept, so that the caches' file names stay what they were.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace weft::ir
