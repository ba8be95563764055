#pragma once
// Step 8 of the planner (AStitch §4.4 "reuses previous allocated memory"): memory planning.
// Takes a FusionPlan whose steps and buffers are set; assigns Buffer::slot to every
// Intermediate and Scratch buffer from a liveness analysis over the step sequence (a buffer is
// live from the step that writes it to the last step that reads it; Scratch only in its
// kernel). Guarantees: two buffers whose live ranges overlap never share a slot; a slot is
// reused by the buffer whose size is closest to it. Inputs and outputs belong to the caller
// and keep slot -1.
#include <cstdint>

#include "fusion/fusion_plan.h"

namespace weft::fusion {

struct MemoryReport {
  int64_t peakBytes = 0;     // most bytes of intermediate and scratch buffers live at one step
  int64_t slotBytes = 0;     // bytes allocated: each slot sized for its largest buffer
  int64_t unsharedBytes = 0; // what one allocation per buffer would take
  int slots = 0;
};

/// Symbolic buffer sizes are evaluated under `binding` (throws InputError when unbound).
MemoryReport planMemory(FusionPlan& plan, const ir::Binding& binding = {});

/// [first, last] step indices during which buffer `b` is live (-1, -1 for inputs/outputs).
std::pair<int, int> liveRange(const FusionPlan& plan, int b);

} // namespace weft::fusion
