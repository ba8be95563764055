#pragma once
// The table `weft run --counters` prints: what the simulator counted per kernel launch, the
// totals, and the global data traffic against the compulsory bytes (inputs read once,
// outputs written once).
#include <cstdint>
#include <string>
#include <vector>

#include "weft/device.h"

namespace weft::tools {

std::string formatCountersTable(const std::vector<LaunchCounters>& launches,
                                uint64_t compulsoryBytes);

} // namespace weft::tools
