#pragma once
// What one binding of a graph's symbols fixes in a compiled program, computed on the host with
// no planning and no LLVM: each plan buffer's bytes and each kernel's grid, from the plan's
// symbolic sizes. A specialised program has nothing symbolic left and yields the same numbers
// for its one binding; a generic program (ShapeMode::Generic) yields them for any binding.
// This is where a program with several versions of a kernel will pick each kernel's version by
// its guards on the binding (issue 15); today every kernel has one version.
#include <cstddef>
#include <vector>

#include "weft/device.h"
#include "weft/graph.h"

namespace weft {

struct CompiledProgram;
namespace codegen {
struct CompiledKernel;
}

struct BoundShapes {
  Binding binding;                    // the call's binding: the kernels' symbol arguments
  std::vector<size_t> bufferBytes;    // per plan buffer, at least 1
  std::vector<LaunchConfig> launches; // per compiled kernel, in launch order
};

/// The launch of kernel `k` over `tiles` tiles: its grid (at most launch.maxBlocks, or
/// `residentBlocks` where the kernel fills the SMs (LaunchPlan::fillSMs) and that is more: the
/// blocks the device keeps resident at once; where the kernel requires its clusters, at most the
/// whole clusters of `residentBlocks` (given as at least one cluster), and rounded up to whole
/// clusters; at least 1), block, dynamic shared bytes, cooperative flag and cluster size
/// (the planned size where it divides the grid, 1 otherwise: the kernel reads its cluster's size
/// at run time). The one rule every launcher uses: bindShapes, `weft compile --emit launch` (and
/// gpu_replay, which applies fillSMs itself), the tests' simulator runner. Throws Error when the
/// grid exceeds 2^31-1 blocks.
LaunchConfig launchConfigFor(const codegen::CompiledKernel& k, int64_t tiles,
                             int64_t residentBlocks = 0);

/// Evaluates `program` under `binding` (every symbol of its plan bound, or InputError naming
/// the first unbound one), with `residentBlocks` per compiled kernel where the device told them
/// (empty: the planned grids). Throws Error when a kernel's grid exceeds 2^31-1 blocks.
BoundShapes bindShapes(const CompiledProgram& program, const Binding& binding,
                       const std::vector<int64_t>& residentBlocks = {});

} // namespace weft
