#include "runtime/cuda/caching_allocator.h"

#include <bit>
#include <utility>

#include <fmt/format.h>

#include "weft/error.h"

namespace weft::runtime::cuda {

namespace {
constexpr size_t kMinBlock = 512;
constexpr size_t kLargestPowerOfTwoClass = size_t(1) << 20;
constexpr size_t kLargeGranularity = size_t(2) << 20;
} // namespace

CachingAllocator::CachingAllocator(RawAllocate rawAllocate, RawFree rawFree)
    : rawAllocate_(std::move(rawAllocate)), rawFree_(std::move(rawFree)) {}

size_t CachingAllocator::sizeClassOf(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes <= kLargestPowerOfTwoClass) return std::bit_ceil(bytes);
  return (bytes + kLargeGranularity - 1) / kLargeGranularity * kLargeGranularity;
}

DevicePtr CachingAllocator::allocate(size_t bytes) {
  size_t size = sizeClassOf(bytes);
  auto& cached = freeLists_[size];
  DevicePtr p = 0;
  if (!cached.empty()) {
    p = cached.back();
    cached.pop_back();
    stats_.cachedBytes -= size;
    ++stats_.cacheHits;
  } else {
    p = rawAllocate_(size);
    if (!p && trim() > 0) p = rawAllocate_(size);
    if (!p)
      throw DeviceError(fmt::format(
          "out of device memory allocating {} bytes ({} bytes live in weft's allocator, "
          "cache trimmed)",
          bytes, stats_.liveBytes));
    ++stats_.driverAllocations;
  }
  live_.emplace(p, size);
  stats_.liveBytes += size;
  return p;
}

void CachingAllocator::free(DevicePtr p) {
  if (p == 0) return;
  auto it = live_.find(p);
  if (it == live_.end())
    throw DeviceError(fmt::format("free(0x{:x}): not the start of a live allocation", p));
  size_t size = it->second;
  live_.erase(it);
  stats_.liveBytes -= size;
  freeLists_[size].push_back(p);
  stats_.cachedBytes += size;
}

size_t CachingAllocator::trim() {
  // Detach the lists first: if the driver fails part-way, the cache is still consistent.
  auto lists = std::exchange(freeLists_, {});
  stats_.cachedBytes = 0;
  size_t released = 0;
  for (auto& [size, blocks] : lists) {
    for (DevicePtr p : blocks)
      rawFree_(p);
    released += size * blocks.size();
  }
  return released;
}

void CachingAllocator::releaseAll() {
  trim();
  auto live = std::exchange(live_, {});
  stats_.liveBytes = 0;
  for (auto& [p, size] : live)
    rawFree_(p);
}

} // namespace weft::runtime::cuda
