#pragma once
// The parsed, not yet decoded, form of a PTX module: what the parser (ptx_parser.cc) reads
// from the text, the decoder (ptx_decoder.h) turns into Instrs one instruction at a time, and
// the linker (program_linker.h) lays out and links into a Program. Instructions stay as text
// (opcode, operands by name) until every declaration of the module is known, because shared
// memory is laid out per kernel over the call graph and callees may follow their callers.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/program.h"

namespace weft::sim::ptx {

/// An operand as written: a register, an integer or float immediate, a symbol (+ offset), an
/// address [base + offset], a vector {a, b, ...} or the sink `_`.
struct POperand {
  enum Kind { Reg, Imm, FImm, Sym, Addr, Vec, Sink } kind = Imm;
  std::string name; // Reg / Sym / Addr base (register or symbol)
  bool baseIsReg = false;
  int64_t value = 0; // Imm, Addr offset, Sym offset
  double fvalue = 0; // FImm when decimal
  bool fhex = false; // FImm written as 0f/0d bits: value holds the bits
  bool fdouble = false;
  bool negated = false;        // !%p
  std::vector<POperand> elems; // Vec
  std::string pipe;            // "%p1|%p2": name of the second destination
};

inline POperand regNamed(const std::string& name) {
  POperand o;
  o.kind = POperand::Reg;
  o.name = name;
  return o;
}

/// One instruction as written. Outgoing call parameters (and addresses of them) are already
/// resolved to "@out:<offset>:<size>" names: their scope closes before decoding.
struct PInstr {
  std::string guard;
  bool guardNeg = false;
  std::string opcode;
  std::vector<POperand> ops;
  // call
  std::vector<std::string> callRets, callArgs;
  std::string callee;
  uint32_t line;
};

/// A declared register: its slot in the function's frame (before compaction) and its type.
struct RegInfo {
  uint32_t slot;
  Ty ty;
};

/// A function body waiting to be decoded.
struct ParsedBody {
  uint32_t fidx;
  std::unordered_map<std::string, RegInfo> regs;
  std::unordered_map<std::string, uint32_t> labels; // label → index in pending
  std::string depotName;                            // the function's .local array, if any
  uint32_t outgoingBase;                            // where outgoing call params start
  std::vector<PInstr> pending;
};

/// The whole module as parsed: `program` holds the functions (declarations, params, frame
/// layout, register counts), the variables (global and const placed, shared not yet), the
/// const image and the source lines, but no code.
struct ParsedModule {
  Program program;
  std::vector<ParsedBody> bodies;
  std::unordered_map<std::string, size_t> varIndex; // variable name → index in variables
};

/// Throws the DeviceError "PTX line <line>: <what>".
[[noreturn]] void fail(uint32_t line, const std::string& what);
/// The type a suffix names ("f32" → F32), or none.
std::optional<Ty> tyFromName(const std::string& s);

} // namespace weft::sim::ptx
