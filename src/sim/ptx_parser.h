#pragma once
// PTX text → decoded Program (program.h). Accepts the PTX that LLVM's NVPTX backend emits
// (plus the hand-written forms the simulator's tests use). Anything outside that subset is
// rejected here, at load time, with a DeviceError naming the PTX line and the instruction.
#include <cstdint>
#include <functional>
#include <string>

#include "sim/program.h"

namespace weft::sim {

/// Allocates device memory for a module-scope .global variable and returns its address;
/// the parser writes the variable's initial bytes itself through the returned address later
/// (SimDevice copies Variable::init after parsing).
using GlobalAllocator = std::function<uint64_t(uint64_t bytes)>;

Program parsePtx(const std::string& ptx, const GlobalAllocator& allocateGlobal);

} // namespace weft::sim
