#pragma once
// Device memory of the simulator: live allocations in a fake 64-bit address space
// (256-byte aligned, never reused, separated by unmapped gaps so that an access just past
// the end of one allocation never lands in the next). Lookups go through a sorted vector
// and a last-hit cache; allocation and free are rare next to accesses.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::sim {

class DeviceMemory {
public:
  uint64_t allocate(uint64_t bytes);
  /// False when p is not the base of a live allocation.
  bool free(uint64_t p);
  /// Host pointer to [addr, addr+size) when it lies inside one live allocation, else null.
  uint8_t* translate(uint64_t addr, uint64_t size) {
    if (addr - hitBase_ < hitSize_ && addr + size - hitBase_ <= hitSize_)
      return hitData_ + (addr - hitBase_);
    return translateSlow(addr, size);
  }
  /// "inside allocation [0x..., +N)" / "N bytes past the end of ..." / "in no allocation".
  std::string describe(uint64_t addr) const;
  uint64_t liveBytes() const;

private:
  struct Alloc {
    uint64_t base, size;
    std::unique_ptr<uint8_t[]> data;
  };
  uint8_t* translateSlow(uint64_t addr, uint64_t size);
  const Alloc* find(uint64_t addr) const; // allocation with the greatest base <= addr
  std::vector<Alloc> allocs_;             // sorted by base (bases only grow)
  uint64_t next_ = 0x0000'0001'0000'0000ull;
  uint64_t hitBase_ = 0, hitSize_ = 0;
  uint8_t* hitData_ = nullptr;
};

} // namespace weft::sim
