#include "fusion/kernel_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace weft::fusion {

bool KernelPlan::hasGridBarrier() const {
  return std::any_of(stages.begin(), stages.end(),
                     [](const Stage& s) { return s.barrierBefore == Barrier::Grid; });
}

bool KernelPlan::handsOffToLastBlock() const {
  return std::any_of(stages.begin(), stages.end(),
                     [](const Stage& s) { return s.barrierBefore == Barrier::LastBlock; });
}

int64_t KernelPlan::sharedValuesEnd() const {
  int64_t end = 0;
  for (const auto& [v, p] : placement)
    if (p.storage == Storage::Shared || p.resident)
      end = std::max(end, p.sharedOffset + p.sharedBytes);
  return end;
}

const Group& KernelPlan::groupOf(ir::NodeId op) const {
  for (const Group& g : groups)
    if (std::find(g.ops.begin(), g.ops.end(), op) != g.ops.end()) return g;
  throw std::out_of_range("kernel " + name + ": value " + std::to_string(op) +
                          " is in none of its groups");
}

int splitFactor(const ThreadMapping& m) {
  if (auto* r = std::get_if<RowReduceMapping>(&m)) return r->splitFactor;
  if (auto* c = std::get_if<ColumnReduceMapping>(&m)) return c->splitFactor;
  return 1;
}

int clusterBlocks(const ThreadMapping& m) {
  if (auto* r = std::get_if<RowReduceMapping>(&m)) return std::max(1, r->clusterBlocks);
  return 1;
}

} // namespace weft::fusion
