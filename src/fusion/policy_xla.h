#pragma once
// The `xla` policy, for comparison (AStitch §2.3.1): XLA-style loop and input fusion built from
// the planner's own steps. Fusion roots are reduces, expensive elementwise ops whose result is
// broadcast, and values read outside the memory-intensive world (graph outputs, dot operands);
// every other op is fused into each kernel that reads it, recomputed there. A reduce absorbs its
// producers (input fusion) but never its consumers, and an expensive op is never fused into a
// broadcast. Each kernel is one group dominated by its root, mapped by the same adaptive thread
// mapping as astitch (so comparisons isolate the fusion decisions), in one stage.
#include "fusion/fusion_plan.h"

namespace weft::fusion {

FusionPlan planXla(const ir::Graph& g, const DeviceSpec& spec,
                   const ir::SymbolRanges& ranges = {});

} // namespace weft::fusion
