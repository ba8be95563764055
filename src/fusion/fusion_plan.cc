#include "fusion/fusion_plan.h"

#include <algorithm>

namespace weft {

// The public policy names (weft/compile_options.h).
std::string_view policyName(Policy p) {
  switch (p) {
  case Policy::None:
    return "none";
  case Policy::Xla:
    return "xla";
  case Policy::AStitch:
    return "astitch";
  }
  return "?";
}

std::optional<Policy> parsePolicy(std::string_view s) {
  if (s == "none") return Policy::None;
  if (s == "xla") return Policy::Xla;
  if (s == "astitch") return Policy::AStitch;
  return std::nullopt;
}

} // namespace weft

namespace weft::fusion {

int FusionPlan::kernelCount() const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const Step& s) {
    return std::holds_alternative<KernelPlan>(s);
  }));
}

} // namespace weft::fusion
