#include "sim/reconvergence.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace weft::sim {
namespace {

constexpr uint32_t kNone = ~0u;

bool endsBlock(const Instr& in) {
  return in.op == Op::Bra || in.op == Op::Ret || in.op == Op::Exit || in.op == Op::Trap;
}

/// The basic blocks of one function. Blocks are numbered in code order; node exit() is the
/// virtual exit that every ret, exit, trap and the fall off the function's end lead to.
struct ControlFlowGraph {
  std::vector<uint32_t> start; // first instruction of each block, as an offset from fn.entry
  std::vector<std::vector<uint32_t>> succ;
  /// Blocks whose guarded last instruction may end the thread (a guarded exit, or a guarded
  /// branch to, or falling into, a block that starts with exit, or with ret in a kernel), one
  /// entry per such edge to the exit. Where the rest of the function can still end without
  /// them, they are predicated exits that leave the threads' region, not a way around it
  /// (dropEarlyExits).
  std::vector<uint32_t> earlyExits;

  uint32_t exit() const { return uint32_t(start.size()); }
  uint32_t lastInstr(uint32_t b, uint32_t n) const {
    return (b + 1 < start.size() ? start[b + 1] : n) - 1;
  }
};

ControlFlowGraph buildCfg(const Instr* code, uint32_t n, const Function& fn) {
  // a branch to a label after the last instruction leaves the function
  auto targetOf = [&](const Instr& in) { return in.target - fn.entry; };
  std::vector<bool> leader(n, false);
  leader[0] = true;
  for (uint32_t i = 0; i < n; ++i) {
    if (code[i].op == Op::Bra && targetOf(code[i]) < n) leader[targetOf(code[i])] = true;
    if (endsBlock(code[i]) && i + 1 < n) leader[i + 1] = true;
  }
  ControlFlowGraph g;
  std::vector<uint32_t> blockOf(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (leader[i]) g.start.push_back(i);
    blockOf[i] = uint32_t(g.start.size() - 1);
  }
  const uint32_t exit = g.exit();
  auto endsThread = [&](const Instr& in) {
    return in.op == Op::Exit || in.op == Op::Trap || (in.op == Op::Ret && fn.isKernel);
  };
  // whether a thread that goes on at instruction i ends there (falling off the end of a
  // kernel ends it; of a .func, returns)
  auto endsThreadAt = [&](uint32_t i) {
    if (i >= n) return fn.isKernel;
    return endsThread(code[i]) && !(code[i].flags & kHasGuard);
  };
  // the node an edge to instruction i leads to: the exit for a block that ends the thread
  auto nodeAt = [&](uint32_t i) { return i >= n || endsThreadAt(i) ? exit : blockOf[i]; };
  g.succ.resize(exit + 1);
  for (uint32_t b = 0; b < exit; ++b) {
    const uint32_t last = g.lastInstr(b, n);
    const Instr& in = code[last];
    const bool conditional = endsBlock(in) && (in.flags & kHasGuard);
    auto add = [&](uint32_t to, bool threadEnds) {
      g.succ[b].push_back(to);
      if (conditional && threadEnds) g.earlyExits.push_back(b);
    };
    if (in.op == Op::Bra)
      add(nodeAt(targetOf(in)), endsThreadAt(targetOf(in)));
    else if (endsBlock(in))
      add(exit, endsThread(in));
    if (!endsBlock(in) || conditional) add(nodeAt(last + 1), endsThreadAt(last + 1));
  }
  return g;
}

/// Each node's predecessors (the exit's included).
std::vector<std::vector<uint32_t>> predecessors(const ControlFlowGraph& g) {
  const uint32_t exit = g.exit();
  std::vector<std::vector<uint32_t>> pred(exit + 1);
  for (uint32_t b = 0; b < exit; ++b)
    for (uint32_t s : g.succ[b])
      pred[s].push_back(b);
  return pred;
}

/// Which nodes reach the exit.
std::vector<bool> reachesExit(const ControlFlowGraph& g) {
  const uint32_t exit = g.exit();
  std::vector<std::vector<uint32_t>> pred = predecessors(g);
  std::vector<bool> reach(exit + 1, false);
  std::vector<uint32_t> work = {exit};
  reach[exit] = true;
  while (!work.empty()) {
    const uint32_t v = work.back();
    work.pop_back();
    for (uint32_t p : pred[v])
      if (!reach[p]) {
        reach[p] = true;
        work.push_back(p);
      }
  }
  return reach;
}

/// Blocks with an edge back to a block on the depth-first path from the entry (loop latches).
std::vector<bool> latches(const ControlFlowGraph& g) {
  const uint32_t exit = g.exit();
  std::vector<uint8_t> state(exit + 1, 0); // 0 unvisited, 1 on the path, 2 done
  std::vector<bool> latch(exit + 1, false);
  std::vector<std::pair<uint32_t, size_t>> stack = {{0, 0}};
  state[0] = 1;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next == g.succ[node].size()) {
      state[node] = 2;
      stack.pop_back();
      continue;
    }
    const uint32_t s = g.succ[node][next++];
    if (state[s] == 1) latch[node] = true;
    if (state[s] == 0) {
      state[s] = 1;
      stack.push_back({s, 0});
    }
  }
  return latch;
}

/// Drops the early exits that the function can end without: each one whose removal leaves
/// every block that reached the exit still reaching it. A loop's own exit edge is kept when
/// the loop has no other way out, so breaks and returns from the loop body are tried first
/// (latches last).
void dropEarlyExits(ControlFlowGraph& g) {
  const std::vector<bool> latch = latches(g);
  std::vector<uint32_t> order = g.earlyExits;
  std::stable_partition(order.begin(), order.end(), [&](uint32_t b) { return !latch[b]; });
  const std::vector<bool> reach = reachesExit(g);
  for (uint32_t b : order) {
    auto& succ = g.succ[b];
    succ.erase(std::find(succ.begin(), succ.end(), g.exit()));
    if (succ.empty() || reachesExit(g) != reach) succ.push_back(g.exit());
  }
}

/// Immediate post-dominators: dominators of the reversed graph rooted at the exit (Cooper,
/// Harvey and Kennedy, "A Simple, Fast Dominance Algorithm"). Blocks that cannot reach the
/// exit (endless loops) get kNone.
std::vector<uint32_t> immediatePostDominators(const ControlFlowGraph& g) {
  const uint32_t exit = g.exit();
  std::vector<std::vector<uint32_t>> pred = predecessors(g);
  // postorder of the reversed graph, by an iterative depth-first walk from the exit
  std::vector<uint32_t> postorder(exit + 1, kNone), order;
  std::vector<bool> seen(exit + 1, false);
  std::vector<std::pair<uint32_t, size_t>> stack = {{exit, 0}};
  seen[exit] = true;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < pred[node].size()) {
      const uint32_t p = pred[node][next++];
      if (!seen[p]) {
        seen[p] = true;
        stack.push_back({p, 0});
      }
      continue;
    }
    postorder[node] = uint32_t(order.size());
    order.push_back(node);
    stack.pop_back();
  }
  std::vector<uint32_t> ipdom(exit + 1, kNone);
  ipdom[exit] = exit;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (postorder[a] < postorder[b])
        a = ipdom[a];
      while (postorder[b] < postorder[a])
        b = ipdom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = order.size() - 1; k-- > 0;) { // reverse postorder, the exit excluded
      const uint32_t b = order[k];
      uint32_t next = kNone;
      for (uint32_t s : g.succ[b])
        if (ipdom[s] != kNone) next = next == kNone ? s : intersect(s, next);
      if (next != ipdom[b]) {
        ipdom[b] = next;
        changed = true;
      }
    }
  }
  return ipdom;
}

} // namespace

void computeReconvergencePoints(Program& prog, const Function& fn) {
  const uint32_t n = fn.end - fn.entry;
  if (n == 0) return;
  Instr* code = prog.code.data() + fn.entry;
  ControlFlowGraph g = buildCfg(code, n, fn);
  dropEarlyExits(g);
  const std::vector<uint32_t> ipdom = immediatePostDominators(g);
  for (uint32_t b = 0; b < g.exit(); ++b) {
    Instr& in = code[g.lastInstr(b, n)];
    if (in.op != Op::Bra || !(in.flags & kHasGuard)) continue;
    in.reconvergePc = kNoReconvergence;
    bool sidesReachExit = true;
    for (uint32_t s : g.succ[b])
      sidesReachExit &= ipdom[s] != kNone;
    if (!sidesReachExit || ipdom[b] == kNone || ipdom[b] == g.exit()) continue;
    in.reconvergePc = fn.entry + g.start[ipdom[b]];
  }
}

} // namespace weft::sim
