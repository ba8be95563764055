#pragma once
// The PTX decoder: one parsed instruction (ptx_syntax.h) → one Instr (program.h), its
// opcode's modifiers turned into type, rounding, space and flags and its operands resolved to
// register slots, immediates (symbol addresses included) and frame offsets. A table maps each
// opcode family (the opcode before its first '.') to its decode function; an instruction or a
// form the executor cannot run is rejected here with a DeviceError naming the PTX line.
// Branch targets and callees stay unresolved: the linker (program_linker.h) fills them in.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "sim/program.h"
#include "sim/ptx_syntax.h"

namespace weft::sim::ptx {

/// What decoding an instruction of one function needs to know. Shared variables must be laid
/// out already (their addresses become immediates).
struct DecodeContext {
  const Program& program; // the module's variables
  const std::unordered_map<std::string, size_t>& varIndex;
  const ParsedBody& body; // registers, depot and outgoing-parameter base of the function
  Function& function;     // the function decoded; each call appends its Function::callArgs
  uint32_t functionIndex;
};

/// Decodes p. A Bra's target and a Call's target are left 0 for the linker; a Call's aux and
/// aux2 (the caller's registers and frame size) are provisional until registers are compacted.
Instr decodeInstruction(const DecodeContext& context, const PInstr& p);

/// Whether `base` (an opcode up to its first '.', "ld" of "ld.global.f32") names an
/// instruction family the decoder knows; the parser rejects any other at once.
bool isKnownOpcode(const std::string& base);

} // namespace weft::sim::ptx
