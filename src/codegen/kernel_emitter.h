#pragma once
// The kernel emitter: one KernelPlan → one `.entry` function in an LLVM module.
//
// Walks the plan's phases (KernelPlan::phases, fixed by fusion::planPhases: codegen takes no
// decision of its own), separated by grid barriers (calls of weft_grid_barrier), each phase a
// tile loop (tile = blockIdx.x; tile < tiles; tile += gridDim.x) over the phase's TileSpace.
// Inside a tile the stages run in order, separated by the plan's block barriers (one is added
// where a stage follows a stage that wrote shared memory and the plan has none), each emitting
// its group with the emitter of its thread mapping and storing the values it materialises to
// their storage. A reduce with splitFactor > 1 combines its partials with atomics into its
// Global/Output buffer, initialised to the identity before a grid barrier of its own (so the
// kernel must be cooperative); with a partials buffer (ValuePlacement::partialsBuffer) the
// partials go there and are combined after a grid barrier. An acrossTiles group's reduces
// accumulate the tiles each block handles into per-block partials (the thread owning a result
// visits exactly its elements of the tile; in shared memory where the phase plan says so) and
// are combined behind a grid barrier at the end of the phase (across_tiles_emitter.cc). A value
// outside the phase's index space that lives in global memory is computed by a grid-stride loop
// of its own.
//
// Memory traffic: elements a thread handles as a vector group (vectorWidth) are loaded and
// stored as vectors of up to 16 bytes. A phase with a SlotPlan runs as slots: every stage of the
// group has each thread visit the same elements, so the plan's reused values stay in registers;
// the phase's staged inputs are copied to shared memory once per block and its tile slices once
// per tile.
//
// Library steps (dot) become simple generated kernels: one output element per thread.
#include <cstdint>
#include <vector>

#include <llvm/IR/Module.h>

#include "codegen/compile.h"
#include "fusion/fusion_plan.h"

namespace weft::codegen {

struct EmittedKernel {
  llvm::Function* function = nullptr;
  CompiledKernel info; // name, params, launch, dynamic shared bytes, plan step
};

/// Throws weft::Error naming the kernel and op for plans it cannot emit.
EmittedKernel emitKernel(llvm::Module& module, const fusion::FusionPlan& plan, int step,
                         bool useLibdevice);
EmittedKernel emitLibraryKernel(llvm::Module& module, const fusion::FusionPlan& plan, int step,
                                bool useLibdevice);

} // namespace weft::codegen
