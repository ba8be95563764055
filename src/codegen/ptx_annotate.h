#pragma once
// A comment line above each kernel's entry naming the graph ops it computes, so a kernel in a
// profiler or in `weft compile --emit ptx` can be traced back to the graph (issue 19): what
// `weft compile --emit map` gives as JSON, in the PTX itself. Comments only: the instructions
// are unchanged, and scripts/ptx-snapshot hashes the PTX without these lines.
#include <string>

#include "fusion/fusion_plan.h"

namespace weft::codegen {

/// The prefix of every line annotateKernels adds.
inline constexpr const char* kKernelCommentPrefix = "// weft: ";

/// `ptx` with "// weft: kernel NAME computes op1, op2, ..." above the `.entry` of every kernel
/// of `plan` (the first kMaxNamedOps ops by name, then how many more).
std::string annotateKernels(const std::string& ptx, const fusion::FusionPlan& plan);

} // namespace weft::codegen
