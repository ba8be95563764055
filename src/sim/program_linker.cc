// The program linker (program_linker.h).
#include "sim/program_linker.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/ptx_decoder.h"
#include "sim/reconvergence.h"
#include "sim/register_allocation.h"

namespace weft::sim::ptx {

namespace {

/// pc of an instruction → the name it refers to (a label or a callee), resolved once known.
using Fixups = std::vector<std::pair<uint32_t, std::string>>;

/// Places the module's static shared variables (first fit, in declaration order): a variable
/// never overlaps one that a kernel using it also uses through its call graph, so variables no
/// kernel uses together may share addresses. Sets each kernel's static shared bytes and where
/// its dynamic shared memory starts.
void layoutShared(ParsedModule& module) {
  Program& prog = module.program;
  const auto& varIndex = module.varIndex;
  // which functions each function calls, and which shared variables it names
  const size_t nf = prog.functions.size(), nv = prog.variables.size();
  std::vector<std::vector<uint32_t>> callees(nf), uses(nf);
  for (const ParsedBody& b : module.bodies)
    for (const PInstr& p : b.pending) {
      if (!p.callee.empty()) {
        auto it = prog.functionIndex.find(p.callee);
        if (it != prog.functionIndex.end()) callees[b.fidx].push_back(it->second);
      }
      std::function<void(const POperand&)> visit = [&](const POperand& o) {
        for (auto& e : o.elems)
          visit(e);
        if ((o.kind != POperand::Sym && o.kind != POperand::Addr) || o.baseIsReg) return;
        auto it = varIndex.find(o.name);
        if (it != varIndex.end() && prog.variables[it->second].space == Space::Shared)
          uses[b.fidx].push_back(uint32_t(it->second));
      };
      for (auto& o : p.ops)
        visit(o);
    }
  // kernels using each variable, through the call graph
  std::vector<std::vector<uint32_t>> kernelsOf(nv);
  std::vector<std::vector<uint32_t>> varsOf(nf);
  for (uint32_t k = 0; k < nf; ++k) {
    if (!prog.functions[k].isKernel) continue;
    std::vector<bool> seen(nf, false), vseen(nv, false);
    std::vector<uint32_t> stack = {k};
    seen[k] = true;
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      for (uint32_t v : uses[f])
        if (!vseen[v]) {
          vseen[v] = true;
          kernelsOf[v].push_back(k);
          varsOf[k].push_back(v);
        }
      for (uint32_t c : callees[f])
        if (!seen[c]) seen[c] = true, stack.push_back(c);
    }
  }
  auto shareKernel = [&](uint32_t a, uint32_t b) {
    for (uint32_t x : kernelsOf[a])
      if (std::find(kernelsOf[b].begin(), kernelsOf[b].end(), x) != kernelsOf[b].end()) return true;
    return false;
  };
  // first fit: a variable never overlaps one that a common kernel also uses
  std::vector<uint32_t> placed;
  for (uint32_t v = 0; v < nv; ++v) {
    Variable& var = prog.variables[v];
    if (var.space != Space::Shared || var.external) continue;
    const uint64_t a = std::max<uint32_t>(var.align, 1);
    uint64_t off = 0;
    for (bool moved = true; moved;) {
      moved = false;
      off = (off + a - 1) / a * a;
      for (uint32_t u : placed) {
        const Variable& o = prog.variables[u];
        if (off < o.address + o.size && o.address < off + var.size && shareKernel(u, v)) {
          off = o.address + o.size;
          moved = true;
        }
      }
    }
    var.address = off;
    placed.push_back(v);
  }
  for (uint32_t k = 0; k < nf; ++k) {
    Function& f = prog.functions[k];
    if (!f.isKernel) continue;
    uint64_t extent = 0;
    uint32_t dynAlign = 16;
    for (uint32_t v : varsOf[k]) {
      const Variable& var = prog.variables[v];
      if (var.external)
        dynAlign = std::max(dynAlign, var.align);
      else
        extent = std::max(extent, var.address + var.size);
    }
    f.staticSharedBytes = extent;
    f.dynamicSharedOffset = (extent + dynAlign - 1) / dynAlign * dynAlign;
    prog.staticSharedBytes = std::max(prog.staticSharedBytes, extent);
  }
}

/// Decodes one body into program.code, resolves its branch labels, ends it with a `ret` where
/// control could run off its end, compacts its registers and computes its reconvergence points. Its calls are added to
/// callFixups: a callee may be defined after its caller.
void linkBody(ParsedModule& module, ParsedBody& body, Fixups& callFixups) {
  Program& prog = module.program;
  Function& f = prog.functions[body.fidx];
  const DecodeContext context{prog, module.varIndex, body, f, body.fidx};
  Fixups branchFixups;
  f.entry = uint32_t(prog.code.size());
  for (auto& p : body.pending) {
    Instr in = decodeInstruction(context, p);
    const uint32_t pc = uint32_t(prog.code.size());
    if (in.op == Op::Bra) branchFixups.push_back({pc, p.ops[0].name});
    if (in.op == Op::Call) callFixups.push_back({pc, p.callee});
    prog.code.push_back(in);
  }
  // Control that reaches the end of a body returns, as ptxas makes it: an empty body, one whose
  // last instruction may fall through, or a label after the last instruction (a branch there)
  // gets an explicit `ret`, so every branch target and fall-through is an instruction.
  const uint32_t count = uint32_t(prog.code.size()) - f.entry;
  bool labelAtEnd = std::any_of(body.labels.begin(), body.labels.end(),
                                [&](const auto& l) { return l.second >= count; });
  bool fallsOff = count == 0;
  if (count > 0) {
    const Instr& last = prog.code.back();
    bool stops = last.op == Op::Bra || last.op == Op::Ret || last.op == Op::Exit ||
                 last.op == Op::Trap;
    fallsOff = !stops || (last.flags & kHasGuard);
  }
  if (fallsOff || labelAtEnd) {
    Instr r;
    r.op = Op::Ret;
    r.func = body.fidx;
    r.line = count > 0 ? prog.code.back().line : r.line;
    prog.code.push_back(r);
  }
  f.end = uint32_t(prog.code.size());
  for (auto& [pc, label] : branchFixups) {
    auto it = body.labels.find(label);
    if (it == body.labels.end())
      fail(prog.code[pc].line, fmt::format("unknown label '{}'", label));
    prog.code[pc].target = f.entry + it->second;
  }
  std::vector<uint8_t> widths(f.numRegs, 0);
  for (auto& [name, info] : body.regs)
    widths[info.slot] = info.ty == Ty::Pred ? 0 : tyBytes(info.ty) > 4 ? 2 : 1;
  compactRegisters(prog, f, widths);
  computeReconvergencePoints(prog, f);
}

/// Points each call at its callee, which must be a .func defined in the module whose
/// parameters and returns match the call's.
void resolveCalls(Program& prog, const Fixups& callFixups) {
  for (auto& [pc, callee] : callFixups) {
    Instr& in = prog.code[pc];
    auto it = prog.functionIndex.find(callee);
    if (it == prog.functionIndex.end())
      fail(in.line, fmt::format("call to unknown function '{}'", callee));
    const Function& cf = prog.functions[it->second];
    if (!cf.defined)
      fail(in.line, fmt::format("call to '{}', which is declared but not defined in this module "
                                "(external functions such as vprintf are not supported)",
                                callee));
    if (cf.isKernel) fail(in.line, fmt::format("call to kernel '{}'", callee));
    if (in.nd != cf.returns.size() || in.ns != cf.params.size())
      fail(in.line,
           fmt::format(
               "call to '{}' passes {} arguments and {} return values; it declares {} and {}",
               callee, in.ns, in.nd, cf.params.size(), cf.returns.size()));
    in.target = it->second;
  }
}

/// A kernel needs at least the registers of every function it calls (occupancy); one that calls
/// weft_last_block hands off (Function::handsOff).
void kernelRegisterPressure(Program& prog) {
  for (auto& k : prog.functions) {
    if (!k.isKernel || !k.defined) continue;
    std::vector<bool> seen(prog.functions.size(), false);
    std::vector<uint32_t> stack = {prog.functionIndex[k.name]};
    uint32_t pressure = 0;
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      if (seen[f]) continue;
      seen[f] = true;
      const Function& fn = prog.functions[f];
      pressure = std::max(pressure, fn.maxLive32);
      k.handsOff = k.handsOff || fn.isLastBlock;
      for (uint32_t pc = fn.entry; pc < fn.end; ++pc)
        if (prog.code[pc].op == Op::Call) stack.push_back(prog.code[pc].target);
    }
    k.maxLive32 = pressure;
  }
}

/// The caller's register count and frame size recorded in Call instructions at decode were
/// provisional (registers are compacted after decoding); refresh them.
void refreshCallFrames(Program& prog) {
  for (auto& in : prog.code)
    if (in.op == Op::Call) {
      const Function& caller = prog.functions[in.func];
      in.aux = caller.numRegs;
      in.aux2 = caller.frameSize;
    }
}

} // namespace

Program linkProgram(ParsedModule module) {
  layoutShared(module);
  Fixups callFixups;
  for (ParsedBody& body : module.bodies)
    linkBody(module, body, callFixups);
  resolveCalls(module.program, callFixups);
  kernelRegisterPressure(module.program);
  refreshCallFrames(module.program);
  return std::move(module.program);
}

} // namespace weft::sim::ptx
