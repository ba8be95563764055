#include "fusion/last_block_handoff.h"

#include <algorithm>
#include <set>

namespace weft::fusion {

void handOffLastPhase(KernelPlan& kernel) {
  std::vector<Stage>& stages = kernel.stages;
  auto last = std::find_if(stages.rbegin(), stages.rend(),
                           [](const Stage& s) { return s.barrierBefore == Barrier::Grid; });
  if (last == stages.rend()) return;
  for (const Group& g : kernel.groups)
    if (splitFactor(g.mapping) > 1 || g.acrossTiles) return;
  // The handed-off phase's groups: no rows shared by clusters, and no stage before the handoff
  // (values kept in registers for later stages stay within one group's stages).
  std::set<int> handedOff;
  for (auto s = stages.rbegin(); s != last + 1; ++s) {
    if (clusterBlocks(kernel.groups.at(size_t(s->group)).mapping) > 1) return;
    handedOff.insert(s->group);
  }
  for (auto s = last + 1; s != stages.rend(); ++s)
    if (handedOff.count(s->group)) return;
  // Resident values are planned later, and never for a kernel that hands off
  // (planResidentValues).
  // The phase's tiles are those of its first stage's group (phases share one tile loop).
  const Group& opening = kernel.groups.at(size_t(last->group));
  if (!opening.rows.isStatic() || opening.rowsPerTile < opening.rows.size()) return;
  last->barrierBefore = Barrier::LastBlock;
}

} // namespace weft::fusion
