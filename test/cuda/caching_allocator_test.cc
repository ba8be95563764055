// The caching allocator's policy on an injected raw allocator: size classes, reuse of freed
// blocks, trim, and the out-of-memory retry.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <set>

#include "runtime/cuda/caching_allocator.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::runtime::cuda;

namespace {
struct RawHeap {
  std::set<DevicePtr> live;
  DevicePtr next = 0x1000;
  size_t capacity = SIZE_MAX; // bytes the "device" can hand out
  size_t used = 0;
  std::map<DevicePtr, size_t> sizes;

  CachingAllocator allocator() {
    return CachingAllocator(
        [this](size_t bytes) -> DevicePtr {
          if (used + bytes > capacity) return 0;
          DevicePtr p = next;
          next += bytes;
          live.insert(p);
          sizes[p] = bytes;
          used += bytes;
          return p;
        },
        [this](DevicePtr p) {
          REQUIRE(live.erase(p) == 1);
          used -= sizes[p];
        });
  }
};
} // namespace

TEST_CASE("sizes round up to powers of two up to 1 MiB, then to multiples of 2 MiB",
          "[cuda][allocator]") {
  CHECK(CachingAllocator::sizeClassOf(0) == 512);
  CHECK(CachingAllocator::sizeClassOf(1) == 512);
  CHECK(CachingAllocator::sizeClassOf(512) == 512);
  CHECK(CachingAllocator::sizeClassOf(513) == 1024);
  CHECK(CachingAllocator::sizeClassOf(3000) == 4096);
  CHECK(CachingAllocator::sizeClassOf(1 << 20) == 1 << 20);
  CHECK(CachingAllocator::sizeClassOf((1 << 20) + 1) == 2 << 20);
  CHECK(CachingAllocator::sizeClassOf(5 << 20) == 6 << 20);
}

TEST_CASE("a freed block is handed out again for its size class only", "[cuda][allocator]") {
  RawHeap heap;
  CachingAllocator a = heap.allocator();
  DevicePtr x = a.allocate(3000);
  a.free(x);
  CHECK(a.stats().cachedBytes == 4096);
  CHECK(a.stats().liveBytes == 0);
  DevicePtr y = a.allocate(2100); // also 4 KiB
  CHECK(y == x);
  CHECK(a.stats().cacheHits == 1);
  DevicePtr z = a.allocate(100); // another class: a new block
  CHECK(z != x);
  CHECK(a.stats().driverAllocations == 2);
  CHECK(a.stats().liveBytes == 4096 + 512);
  CHECK(heap.live.size() == 2);
}

TEST_CASE("trim gives back the cached blocks and keeps the live ones", "[cuda][allocator]") {
  RawHeap heap;
  CachingAllocator a = heap.allocator();
  DevicePtr keep = a.allocate(10);
  a.free(a.allocate(1000));
  a.free(a.allocate(70000));
  CHECK(a.trim() == 1024 + 131072);
  CHECK(heap.live == std::set<DevicePtr>{keep});
  CHECK(a.stats().cachedBytes == 0);
  CHECK(a.trim() == 0);
  a.releaseAll();
  CHECK(heap.live.empty());
}

TEST_CASE("out of memory trims the cache and retries before failing", "[cuda][allocator]") {
  RawHeap heap;
  heap.capacity = 8192;
  CachingAllocator a = heap.allocator();
  a.free(a.allocate(4096));
  DevicePtr big = a.allocate(8000); // needs the cached 4 KiB back to fit
  CHECK(big != 0);
  CHECK(a.stats().cachedBytes == 0);
  CHECK_THROWS_WITH(a.allocate(100),
                    "out of device memory allocating 100 bytes (8192 bytes live in weft's "
                    "allocator, cache trimmed)");
}

TEST_CASE("freeing what was not allocated is an error, freeing 0 is not", "[cuda][allocator]") {
  RawHeap heap;
  CachingAllocator a = heap.allocator();
  DevicePtr p = a.allocate(64);
  CHECK_NOTHROW(a.free(0));
  CHECK_THROWS_WITH(a.free(p + 8), "free(0x1008): not the start of a live allocation");
  a.free(p);
  CHECK_THROWS_WITH(a.free(p), "free(0x1000): not the start of a live allocation");
}
