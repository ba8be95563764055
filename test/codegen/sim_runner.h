#pragma once
// Test support: runs a compiled FusionPlan on the simulator device, the way the runtime does
// (one buffer per plan buffer, kernels in order, barrier state zeroed, grid = min(tiles,
// maxBlocks), the planned cluster size where it divides the grid), and returns the graph's
// outputs.
#include <vector>

#include "codegen/compile.h"
#include "fusion/fusion_plan.h"
#include "weft/device.h"
#include "weft/tensor.h"

namespace weft::test {

std::vector<HostTensor> runOnSim(const fusion::FusionPlan& plan,
                                 const codegen::CompiledModule& module,
                                 const std::vector<HostTensor>& inputs,
                                 const ir::Binding& binding = {},
                                 std::vector<LaunchCounters>* counters = nullptr);

/// Deterministic inputs for every parameter of `g` under `binding` (floats in [-2, 2], ints in
/// [-5, 5], bools alternating).
std::vector<HostTensor> makeInputs(const ir::Graph& g, const ir::Binding& binding = {},
                                   unsigned seed = 1);

/// The largest difference between `got` and `want`, relative to max(1, |want|) for floats;
/// NaN where one is NaN and the other is not.
double maxError(const HostTensor& got, const HostTensor& want);

/// Runs `module` (compiled from `plan`) on the simulator with makeInputs(plan.graph) and CHECKs
/// every output against ir::interpret within `tolerance` (maxError); the launches' counters go
/// to `counters` when given.
void checkOnSim(const fusion::FusionPlan& plan, const codegen::CompiledModule& module,
                double tolerance = 1e-4, std::vector<LaunchCounters>* counters = nullptr);

/// Compiles `plan`, which must make one kernel, runs it with checkOnSim and returns its
/// launch's counters; the compiled module goes to `module` when given.
LaunchCounters checkOneKernelOnSim(const fusion::FusionPlan& plan, double tolerance = 1e-4,
                                   codegen::CompiledModule* module = nullptr);

} // namespace weft::test
