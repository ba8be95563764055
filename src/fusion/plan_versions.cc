#include "fusion/plan_versions.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "fusion/plan.h"
#include "fusion/plan_printer.h"

namespace weft::fusion {
namespace {

/// The symbols of the innermost dim of some value with rows (rank 2 or more): the ones vector
/// widths along rows depend on. (A rank-1 [B] of per-row statistics is too small to pay for
/// versions of its own.)
std::set<std::string> innermostSymbols(const ir::Graph& g) {
  std::set<std::string> out;
  for (const ir::Node& n : g.nodes())
    if (n.type.shape.size() >= 2)
      for (const std::string& s : n.type.shape.back().symbols())
        out.insert(s);
  return out;
}

/// The divisors of the divisibility versions, largest first: kVectorDivisor, and twice it where
/// a graph input or output of 2 bytes or fewer has a symbolic innermost dim (`inner`): 16-byte
/// vectors of f16 and bf16 take 8 elements (fusion/thread_mapping.h, vectorWidthFor). None when
/// no innermost dim is symbolic.
std::vector<int64_t> vectorDivisors(const ir::Graph& g, const std::set<std::string>& inner) {
  if (inner.empty()) return {};
  for (const auto* list : {&g.inputs(), &g.outputs()})
    for (ir::NodeId v : *list) {
      const ir::TensorType& t = g.node(v).type;
      if (ir::dtypeBytes(t.dtype) <= 2 && t.shape.size() >= 2 && !t.shape.back().isStatic())
        return {2 * kVectorDivisor, kVectorDivisor};
    }
  return {kVectorDivisor};
}

/// What a version decides, without the ranges it was planned for: two classes whose plans
/// print alike (every kernel, group, mapping, storage, phase and buffer) are one version.
std::string decisions(FusionPlan plan) {
  plan.symbolRanges.clear();
  return printFusionPlan(plan);
}

/// Merges boxes that differ in one symbol's range only and touch there, until none do: a
/// version over B in [1, 2] and B in [3, 16] reads "B in [1, 16]".
void mergeBoxes(ir::ShapeGuard& boxes) {
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < boxes.size() && !merged; ++i)
      for (size_t j = 0; j < boxes.size() && !merged; ++j) {
        if (i == j) continue;
        std::string differing;
        int differences = 0;
        for (const auto& [name, r] : boxes[i]) {
          const ir::SymbolRange& o = boxes[j].at(name);
          if (r.divisor != o.divisor) differences = 2;
          if (r.lo != o.lo || r.hi != o.hi) {
            differing = name;
            ++differences;
          }
        }
        if (differences != 1 || boxes[i].at(differing).hi == ir::SymbolRange::kUnbounded ||
            boxes[i].at(differing).hi + 1 != boxes[j].at(differing).lo)
          continue;
        boxes[i][differing].hi = boxes[j].at(differing).hi;
        boxes.erase(boxes.begin() + long(j));
        merged = true;
      }
  }
}

/// `symbol`'s size classes within its declared range (all of ir::sizeClasses without one), or
/// only the last of them for graphs too big to version. A declared range that holds no class
/// (0..0: only the empty size, which a generic program never serves: weft::compile gives it a
/// specialised one) constrains nothing.
std::vector<ir::SymbolRange> classesOf(const std::string& symbol, const ir::SymbolRanges& declared,
                                       bool onlyLast) {
  std::vector<ir::SymbolRange> out;
  auto d = declared.find(symbol);
  for (ir::SymbolRange c : ir::sizeClasses()) {
    if (d != declared.end()) {
      c.lo = std::max(c.lo, d->second.lo);
      c.hi = std::min(c.hi, d->second.hi);
    }
    if (c.lo <= c.hi) out.push_back(c);
  }
  if (out.empty()) return classesOf(symbol, {}, onlyLast);
  if (onlyLast && out.size() > 1) out.erase(out.begin(), out.end() - 1);
  return out;
}

/// The class combinations planned: every combination for few symbols, the diagonal otherwise
/// (the i-th class of every symbol, or its last where it has fewer); the combination of every
/// symbol's last class last.
std::vector<ir::SymbolRanges> classCombinations(const std::vector<std::string>& symbols,
                                               const ir::SymbolRanges& declared, size_t ops) {
  std::map<std::string, std::vector<ir::SymbolRange>> classes;
  size_t most = 0;
  for (const std::string& s : symbols) {
    classes[s] = classesOf(s, declared, ops > kMaxVersionedOps);
    most = std::max(most, classes[s].size());
  }
  std::vector<ir::SymbolRanges> out;
  if (symbols.size() > kMaxIndependentSymbols) {
    for (size_t i = 0; i < most; ++i) {
      ir::SymbolRanges r;
      for (const std::string& s : symbols)
        r[s] = classes[s][std::min(i, classes[s].size() - 1)];
      out.push_back(std::move(r));
    }
    return out;
  }
  out.push_back({});
  for (const std::string& s : symbols) {
    std::vector<ir::SymbolRanges> next;
    for (const ir::SymbolRanges& partial : out)
      for (const ir::SymbolRange& c : classes[s]) {
        ir::SymbolRanges r = partial;
        r[s] = c;
        next.push_back(std::move(r));
      }
    out = std::move(next);
  }
  return out; // lexicographic: the combination of last classes is last
}

} // namespace

std::vector<PlanVersion> planVersions(const ir::Graph& g, const DeviceSpec& device, Policy policy,
                                      const ir::SymbolRanges& declared) {
  std::vector<std::string> symbols = g.symbols();
  if (symbols.empty()) return {{plan(g, device, policy), {}}};
  const std::set<std::string> inner = innermostSymbols(g);
  // Versions by their decisions: a combination planned alike joins that version's guard.
  // Divisible versions by divisor, the largest first: a binding takes the widest vectors whose
  // divisibility it has.
  const std::vector<int64_t> divisors = vectorDivisors(g, inner);
  std::vector<PlanVersion> plain;
  std::vector<std::vector<PlanVersion>> divisible(divisors.size());
  std::map<std::string, size_t> plainOf;
  std::vector<std::map<std::string, size_t>> divisibleOf(divisors.size());
  auto add = [](std::vector<PlanVersion>& list, std::map<std::string, size_t>& index,
                FusionPlan p, std::string d) {
    auto it = index.find(d);
    if (it != index.end()) {
      list[it->second].guard.push_back(p.symbolRanges);
      return;
    }
    index.emplace(std::move(d), list.size());
    ir::SymbolRanges box = p.symbolRanges;
    list.push_back({std::move(p), {std::move(box)}});
  };
  std::vector<ir::SymbolRanges> combinations = classCombinations(symbols, declared, g.size());
  std::optional<FusionPlan> unbounded;
  for (const ir::SymbolRanges& ranges : combinations) {
    FusionPlan p = plan(g, device, policy, ranges);
    std::string d = decisions(p);
    // From the smallest divisor up: a larger one's plan joins only where it decides otherwise
    // than the plain plan and the next smaller divisor's.
    std::string smaller = d;
    for (size_t i = divisors.size(); i-- > 0;) {
      ir::SymbolRanges r = ranges;
      for (const std::string& s : inner)
        r[s].divisor = divisors[i];
      FusionPlan pd = plan(g, device, policy, r);
      std::string dd = decisions(pd);
      if (dd != d && dd != smaller) add(divisible[i], divisibleOf[i], std::move(pd), dd);
      smaller = std::move(dd);
    }
    if (&ranges == &combinations.back()) unbounded = p;
    add(plain, plainOf, std::move(p), std::move(d));
  }
  // The version the unbounded combination (planned last) belongs to serves every binding no
  // other admits: last, unguarded, and its plan the unbounded one (which relies on no bound).
  size_t fallback = plainOf.at(decisions(*unbounded));
  PlanVersion last{std::move(*unbounded), {}};
  plain.erase(plain.begin() + long(fallback));
  std::vector<PlanVersion> versions;
  divisible.push_back(std::move(plain));
  for (std::vector<PlanVersion>& list : divisible)
    for (PlanVersion& v : list) {
      mergeBoxes(v.guard);
      versions.push_back(std::move(v));
    }
  versions.push_back(std::move(last));
  return versions;
}

size_t versionFor(const std::vector<ir::ShapeGuard>& guards, const ir::Binding& binding) {
  for (size_t i = 0; i + 1 < guards.size(); ++i)
    if (ir::admits(guards[i], binding)) return i;
  return guards.empty() ? 0 : guards.size() - 1;
}

} // namespace weft::fusion
