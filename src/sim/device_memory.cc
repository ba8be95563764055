#include "sim/device_memory.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace weft::sim {

uint64_t DeviceMemory::allocate(uint64_t bytes) {
  Alloc a;
  a.base = next_;
  a.size = bytes;
  a.data.reset(new uint8_t[std::max<uint64_t>(bytes, 1)]);
  std::memset(a.data.get(), 0, std::max<uint64_t>(bytes, 1));
  // a gap of at least 256 unmapped bytes after each allocation
  next_ += (std::max<uint64_t>(bytes, 1) + 255) / 256 * 256 + 256;
  allocs_.push_back(std::move(a));
  return allocs_.back().base;
}

bool DeviceMemory::free(uint64_t p) {
  auto it = std::lower_bound(allocs_.begin(), allocs_.end(), p,
                             [](const Alloc& a, uint64_t v) { return a.base < v; });
  if (it == allocs_.end() || it->base != p) return false;
  if (hitData_ == it->data.get()) hitBase_ = hitSize_ = 0, hitData_ = nullptr;
  allocs_.erase(it);
  return true;
}

const DeviceMemory::Alloc* DeviceMemory::find(uint64_t addr) const {
  auto it = std::upper_bound(allocs_.begin(), allocs_.end(), addr,
                             [](uint64_t v, const Alloc& a) { return v < a.base; });
  if (it == allocs_.begin()) return nullptr;
  return &*(it - 1);
}

uint8_t* DeviceMemory::translateSlow(uint64_t addr, uint64_t size) {
  const Alloc* a = find(addr);
  if (!a || addr - a->base >= a->size || addr + size - a->base > a->size) return nullptr;
  hitBase_ = a->base;
  hitSize_ = a->size;
  hitData_ = a->data.get();
  return a->data.get() + (addr - a->base);
}

std::string DeviceMemory::describe(uint64_t addr) const {
  const Alloc* a = find(addr);
  if (!a) return "below every live allocation";
  if (addr - a->base < a->size)
    return fmt::format("at offset {} of the {}-byte allocation at 0x{:x}", addr - a->base, a->size,
                       a->base);
  return fmt::format("{} bytes past the end of the {}-byte allocation at 0x{:x}",
                     addr - a->base - a->size, a->size, a->base);
}

uint64_t DeviceMemory::liveBytes() const {
  uint64_t n = 0;
  for (auto& a : allocs_)
    n += a.size;
  return n;
}

} // namespace weft::sim
