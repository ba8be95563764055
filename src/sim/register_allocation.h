#pragma once
// Renumbers a decoded function's registers so that registers never live at the same time
// share a 64-bit slot. NVPTX emits virtual registers (hundreds once libdevice is inlined);
// after this pass a thread holds only as many slots as its function has values live at once,
// which keeps the simulator's memory per thread small. Liveness is computed on the
// instruction-level control-flow graph; a predicated definition keeps the old value live.
#include <cstdint>
#include <vector>

#include "sim/program.h"

namespace weft::sim {

/// Rewrites the register operands of fn's instructions in prog.code and fn.numRegs/ccReg,
/// and sets fn.maxLive32: the most 32-bit registers live at once, counting each register
/// as widths32[slot] (1 for 8..32-bit values, 2 for 64-bit ones, 0 for predicates).
void compactRegisters(Program& prog, Function& fn, const std::vector<uint8_t>& widths32);

} // namespace weft::sim
