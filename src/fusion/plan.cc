#include "fusion/plan.h"

#include <string>

#include "fusion/policy_astitch.h"
#include "fusion/policy_none.h"
#include "fusion/policy_xla.h"
#include "weft/error.h"

namespace weft::fusion {

FusionPlan plan(const ir::Graph& graph, const DeviceSpec& device, Policy policy) {
  switch (policy) {
  case Policy::None:
    return planNone(graph, device);
  case Policy::Xla:
    return planXla(graph, device);
  case Policy::AStitch:
    return planAStitch(graph, device);
  }
  throw Error("unknown fusion policy " + std::to_string(static_cast<int>(policy)));
}

} // namespace weft::fusion
