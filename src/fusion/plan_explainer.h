#pragma once
// Why the plan is what it is: for every op, the kernel it runs in, its group and dominant, and
// why its value lives where it lives (recomputed in registers, shared memory for the tile, global
// scratch behind a grid barrier, an output buffer); for every value that crosses from one step
// to another, why the two sides were not stitched into one kernel (a library call between them,
// the policy's fusion rules). Computed from the plan and its graph alone: the planner's
// decisions are all in the plan (docs/architecture.md), so explaining them needs no hooks in it.
#include <string>

#include "fusion/fusion_plan.h"

namespace weft::fusion {

/// `weft plan --explain`: one section per step, then the boundaries between steps.
std::string explainPlan(const FusionPlan& plan);

/// `weft compile --emit map`: every step as JSON, each kernel with the ops it owns and those it
/// recomputes (an op several kernels compute — a source regenerated inline, an op xla fuses into
/// each root that reads it — is owned by the first), each library call with its op. Every op of
/// the graph but its parameters is owned by exactly one step.
std::string kernelMapJson(const FusionPlan& plan);

} // namespace weft::fusion
