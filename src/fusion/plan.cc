#include "fusion/plan.h"

#include <string>

#include "fusion/policy_astitch.h"
#include "fusion/policy_none.h"
#include "fusion/policy_xla.h"
#include "weft/error.h"

namespace weft::fusion {

namespace {

FusionPlan planUnder(const ir::Graph& graph, const DeviceSpec& device, Policy policy,
                     const ir::SymbolRanges& ranges) {
  switch (policy) {
  case Policy::None:
    return planNone(graph, device, ranges);
  case Policy::Xla:
    return planXla(graph, device, ranges);
  case Policy::AStitch:
    // Dots that a library may run stay plain (DeviceSpec::gemmLibrary).
    return planAStitch(graph, device, ranges, /*gemmEpilogues=*/!device.gemmLibrary);
  }
  throw Error("unknown fusion policy " + std::to_string(static_cast<int>(policy)));
}

} // namespace

FusionPlan plan(const ir::Graph& graph, const DeviceSpec& device, Policy policy,
                const ir::SymbolRanges& ranges) {
  FusionPlan p = planUnder(graph, device, policy, ranges);
  p.symbolRanges = ranges;
  return p;
}

} // namespace weft::fusion
