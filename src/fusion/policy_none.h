#pragma once
// The `none` policy: no stitching at all, one kernel per memory-intensive op — the baseline the
// other policies are measured against. Built from the planner's own steps, as `xla` is: each op
// is its own scope, whose one group it dominates, mapped and launched by the same adaptive
// thread mapping and launch configuration as astitch (so comparisons isolate the fusion
// decisions), in one stage.
//
// planNone(graph, device) returns a FusionPlan in which
//  - every memory-intensive op is its own KernelPlan, except constants and iotas: they are
//    cheap to recompute, so a constant or iota whose users are all memory-intensive ops is
//    regenerated (Register storage) inside each user's kernel and gets no kernel or buffer of
//    its own; one that is a graph output or feeds a dot gets its own kernel;
//  - every dot is a LibraryCall;
//  - buffers and memory planning are the shared ones (plan_assembly.h).
#include "fusion/fusion_plan.h"

namespace weft::fusion {

FusionPlan planNone(const ir::Graph& g, const DeviceSpec& spec,
                    const ir::SymbolRanges& ranges = {});

} // namespace weft::fusion
