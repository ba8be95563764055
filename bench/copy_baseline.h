#pragma once
// Runs and times the copy baseline (copy_kernel.h) on any weft Device: the sim device counts
// it (tests check it moves exactly the compulsory bytes), the cuda device times it with events.
#include <cstdint>
#include <optional>

#include "copy_kernel.h"
#include "weft/device.h"

namespace weft::bench {

struct CopyRun {
  CopyLaunch launch;
  double ms = 0;            // median of the timed runs (0 when none were asked for)
  bool deviceClock = false; // false: host wall-clock (the simulator has no GPU clock)
  std::optional<LaunchCounters> counters; // the first launch's, where the device counts
};

/// Copies half of `compulsoryBytes` into a second buffer on `device` once (warm-up, counted),
/// then `runs` more times, each timed alone; the source holds a byte pattern so a test can
/// check the copy. Buffers are freed before it returns.
CopyRun runCopyBaseline(Device& device, uint64_t compulsoryBytes, int runs);

} // namespace weft::bench
