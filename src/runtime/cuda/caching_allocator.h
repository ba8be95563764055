#pragma once
// A caching allocator for device memory: freed blocks go to a free list per size class and
// are handed out again instead of asking the driver (cuMemAlloc and cuMemFree synchronise
// the device and cost tens of microseconds). trim() gives the cached blocks back. The raw
// allocator is injected, so the policy is tested without a GPU.
#include <cstddef>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "weft/device.h"

namespace weft::runtime::cuda {

class CachingAllocator {
public:
  /// Returns a new block of exactly `bytes`, or 0 when the device is out of memory (any other
  /// failure throws).
  using RawAllocate = std::function<DevicePtr(size_t bytes)>;
  using RawFree = std::function<void(DevicePtr)>;

  CachingAllocator(RawAllocate rawAllocate, RawFree rawFree);
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least `bytes` (a block of the smallest class for 0). On out-of-memory the
  /// cache is trimmed and the allocation retried once; then DeviceError, saying how much is
  /// live and was cached.
  DevicePtr allocate(size_t bytes);
  /// Returns `p` to its size class's free list. Throws DeviceError when `p` is not the start
  /// of a live block; 0 is ignored.
  void free(DevicePtr p);
  /// Gives every cached (free) block back to the driver; returns the bytes released.
  size_t trim();
  /// Gives every block back, live ones included (the device is going away).
  void releaseAll();

  struct Stats {
    size_t liveBytes = 0;         // handed out and not yet freed (size-class bytes)
    size_t cachedBytes = 0;       // on the free lists
    size_t driverAllocations = 0; // calls to the raw allocator that succeeded
    size_t cacheHits = 0;         // allocations served from a free list
  };
  const Stats& stats() const { return stats_; }

  /// The block size `bytes` is rounded up to: powers of two from 512 B up to 1 MiB, then
  /// multiples of 2 MiB (the driver's own large-allocation granularity).
  static size_t sizeClassOf(size_t bytes);

private:
  RawAllocate rawAllocate_;
  RawFree rawFree_;
  std::map<size_t, std::vector<DevicePtr>> freeLists_; // size class → cached blocks
  std::unordered_map<DevicePtr, size_t> live_;         // block → size class
  Stats stats_;
};

} // namespace weft::runtime::cuda
