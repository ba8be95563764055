#include "fusion/plan.h"

#include <string>

#include "fusion/policy_none.h"
#include "weft/error.h"

namespace weft::fusion {

FusionPlan plan(const ir::Graph& graph, const DeviceSpec& device, Policy policy) {
  switch (policy) {
  case Policy::None:
    return planNone(graph, device);
  case Policy::Xla:
  case Policy::AStitch:
    break;
  }
  throw Error("fusion policy \"" + std::string(policyName(policy)) +
              "\" is not implemented yet; use --policy none");
}

} // namespace weft::fusion
