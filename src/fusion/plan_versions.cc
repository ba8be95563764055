#include "fusion/plan_versions.h"

#include "fusion/plan.h"
#include "fusion/plan_printer.h"

namespace weft::fusion {
namespace {

ir::SymbolRanges everySymbolIn(const std::vector<std::string>& symbols, ir::SymbolRange r) {
  ir::SymbolRanges ranges;
  for (const std::string& s : symbols)
    ranges[s] = r;
  return ranges;
}

/// What a version decides, without the ranges it was planned for: two classes whose plans
/// print alike (every kernel, group, mapping, storage, phase and buffer) are one version.
std::string decisions(FusionPlan plan) {
  plan.symbolRanges.clear();
  return printFusionPlan(plan);
}

} // namespace

std::vector<FusionPlan> planVersions(const ir::Graph& g, const DeviceSpec& device, Policy policy) {
  std::vector<std::string> symbols = g.symbols();
  if (symbols.empty()) return {plan(g, device, policy)};
  std::vector<ir::SymbolRange> classes = ir::sizeClasses();
  if (g.size() > kMaxVersionedOps) classes = {classes.back()};
  std::vector<FusionPlan> versions;
  std::string previous;
  for (const ir::SymbolRange& c : classes) {
    FusionPlan p = plan(g, device, policy, everySymbolIn(symbols, c));
    std::string d = decisions(p);
    if (!versions.empty() && d == previous) { // the same plan: widen the version's guard
      for (auto& [name, range] : versions.back().symbolRanges)
        range.hi = c.hi;
      continue;
    }
    previous = std::move(d);
    versions.push_back(std::move(p));
  }
  return versions;
}

size_t versionFor(const std::vector<ir::SymbolRanges>& guards, const ir::Binding& binding) {
  for (size_t i = 0; i + 1 < guards.size(); ++i)
    if (ir::admits(guards[i], binding)) return i;
  return guards.empty() ? 0 : guards.size() - 1;
}

} // namespace weft::fusion
