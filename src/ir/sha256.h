#pragma once
// SHA-256 (FIPS 180-4), for content keys that must never collide by accident: the compile
// cache's graph fingerprint hashes large constants with it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::ir {

class Sha256 {
public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view text) { update(text.data(), text.size()); }
  /// The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string hexDigest();

private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0; // bytes hashed so far
};

std::string sha256Hex(std::string_view text);

} // namespace weft::ir
