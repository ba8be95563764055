#pragma once
// The program linker: a parsed module (ptx_syntax.h) → the Program the executor runs
// (program.h). It lays out shared memory per kernel over the call graph, decodes every body
// (ptx_decoder.h) into the flat code array, resolves branch labels and calls (a callee may
// follow its caller), compacts each function's registers (register_allocation.h), computes
// its reconvergence points (reconvergence.h) and each kernel's register pressure, and fixes
// the frame sizes that calls record.
#include "sim/program.h"
#include "sim/ptx_syntax.h"

namespace weft::sim::ptx {

/// Links `module`; throws DeviceError naming the PTX line on any error (an unknown label or
/// callee, a call that does not match its callee, an instruction the decoder rejects).
Program linkProgram(ParsedModule module);

} // namespace weft::sim::ptx
