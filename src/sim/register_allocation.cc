#include "sim/register_allocation.h"

#include <algorithm>
#include <vector>

namespace weft::sim {
namespace {

// A fixed-size bit set over register slots.
class Bits {
public:
  explicit Bits(size_t n = 0) : w_((n + 63) / 64, 0) {}
  void set(uint32_t i) { w_[i >> 6] |= 1ull << (i & 63); }
  void reset(uint32_t i) { w_[i >> 6] &= ~(1ull << (i & 63)); }
  bool test(uint32_t i) const { return (w_[i >> 6] >> (i & 63)) & 1; }
  bool orWith(const Bits& o) {
    bool changed = false;
    for (size_t k = 0; k < w_.size(); ++k) {
      uint64_t v = w_[k] | o.w_[k];
      changed |= v != w_[k];
      w_[k] = v;
    }
    return changed;
  }
  template <class F> void forEach(F&& f) const {
    for (size_t k = 0; k < w_.size(); ++k)
      for (uint64_t v = w_[k]; v; v &= v - 1)
        f(uint32_t(k * 64 + __builtin_ctzll(v)));
  }

private:
  std::vector<uint64_t> w_;
};

/// The registers of an instruction's operand list (Function::operandLists): wgmma's
/// accumulators, each read (scale-d) and written.
template <class F> void forList(const Function& fn, const Instr& in, F&& f) {
  if (in.op != Op::Wgmma) return;
  for (uint32_t i = in.aux; i < in.aux + in.aux2; ++i)
    if (fn.operandLists[i].kind == Operand::Reg) f(fn.operandLists[i].reg);
}

template <class F> void forUses(const Function& fn, const Instr& in, F&& f) {
  for (const Operand& o : in.s)
    if (o.kind == Operand::Reg) f(o.reg);
  forList(fn, in, f);
  if (in.flags & kAddrReg) f(in.addr.reg);
  if (in.flags & kHasGuard) {
    f(in.guard);
    // lanes whose guard is false keep the destination's old value
    for (const Operand& o : in.d)
      if (o.kind == Operand::Reg) f(o.reg);
  }
}
template <class F> void forDefs(const Function& fn, const Instr& in, F&& f) {
  for (const Operand& o : in.d)
    if (o.kind == Operand::Reg) f(o.reg);
  forList(fn, in, f);
}

} // namespace

void compactRegisters(Program& prog, Function& fn, const std::vector<uint8_t>& widths32) {
  const uint32_t n = fn.end - fn.entry, nregs = fn.numRegs;
  if (n == 0 || nregs == 0) return;
  Instr* code = prog.code.data() + fn.entry;
  const uint32_t cc = fn.ccReg; // the carry flag keeps a slot of its own

  // successors in the instruction-level CFG
  auto successors = [&](uint32_t i, uint32_t out[2]) {
    const Instr& in = code[i];
    const bool guarded = in.flags & kHasGuard;
    int k = 0;
    if (in.op == Op::Bra) out[k++] = in.target - fn.entry;
    const bool stops =
        in.op == Op::Bra || in.op == Op::Ret || in.op == Op::Exit || in.op == Op::Trap;
    if ((!stops || guarded) && i + 1 < n) out[k++] = i + 1;
    return k;
  };

  // backward liveness to a fixed point
  std::vector<Bits> liveIn(n, Bits(nregs)), liveOut(n, Bits(nregs));
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = n; i-- > 0;) {
      uint32_t succ[2];
      int ns = successors(i, succ);
      for (int k = 0; k < ns; ++k)
        liveOut[i].orWith(liveIn[succ[k]]);
      Bits in = liveOut[i];
      forDefs(fn, code[i], [&](uint32_t r) { in.reset(r); });
      forUses(fn, code[i], [&](uint32_t r) { in.set(r); });
      changed |= liveIn[i].orWith(in);
    }
  }

  // register pressure, for the occupancy estimate
  uint32_t maxLive = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t live = 0;
    liveIn[i].forEach([&](uint32_t r) { live += r < widths32.size() ? widths32[r] : 1; });
    maxLive = std::max(maxLive, live);
  }
  fn.maxLive32 = maxLive;

  // interference: a definition conflicts with everything live after it (and with the other
  // definitions of the same instruction); values live at entry conflict with each other
  std::vector<Bits> adj(nregs, Bits(nregs));
  auto edge = [&](uint32_t a, uint32_t b) {
    if (a == b) return;
    adj[a].set(b);
    adj[b].set(a);
  };
  for (uint32_t i = 0; i < n; ++i)
    forDefs(fn, code[i], [&](uint32_t d) {
      liveOut[i].forEach([&](uint32_t r) { edge(d, r); });
      forDefs(fn, code[i], [&](uint32_t d2) { edge(d, d2); });
    });
  std::vector<uint32_t> entryLive;
  liveIn[0].forEach([&](uint32_t r) { entryLive.push_back(r); });
  for (size_t a = 0; a < entryLive.size(); ++a)
    for (size_t b = a + 1; b < entryLive.size(); ++b)
      edge(entryLive[a], entryLive[b]);

  // greedy colouring in register order
  std::vector<uint32_t> color(nregs, ~0u);
  uint32_t ncolors = 0;
  std::vector<uint8_t> taken;
  for (uint32_t r = 0; r < nregs; ++r) {
    if (r == cc) continue;
    taken.assign(ncolors + 1, 0);
    adj[r].forEach([&](uint32_t o) {
      if (color[o] != ~0u) taken[color[o]] = 1;
    });
    uint32_t c = 0;
    while (taken[c])
      ++c;
    color[r] = c;
    ncolors = std::max(ncolors, c + 1);
  }
  color[cc] = ncolors;

  auto rename = [&](Operand& o) {
    if (o.kind == Operand::Reg) o.reg = color[o.reg];
  };
  for (uint32_t i = 0; i < n; ++i) {
    Instr& in = code[i];
    for (Operand& o : in.s)
      rename(o);
    for (Operand& o : in.d)
      rename(o);
    if (in.flags & kAddrReg) in.addr.reg = color[in.addr.reg];
    if (in.flags & kHasGuard) in.guard = color[in.guard];
  }
  for (Operand& o : fn.operandLists)
    rename(o);
  fn.ccReg = ncolors;
  fn.numRegs = ncolors + 1;
}

} // namespace weft::sim
