#pragma once
// A step of the AStitch planner after launch configuration: values kept on chip across grid
// barriers (the resident storage level, ValuePlacement::resident).
//
// Global stitching stores a value that later phases read in global scratch and loads it back
// behind the grid barrier. When every later reader reads it at its own rows, in tiles like the
// producer's (ValuePlacement::readAtOwnRows), and every phase involved cuts the same index space
// into the same tiles, tile t of each of those phases runs on the same block as that block's
// i-th tile. The block can then keep the value's elements of its tiles in shared memory from
// the phase that writes them to the last phase that reads them: no store, no loads. An input
// read that way by several phases is loaded once, by the first, into the block's slots.
//
// The room is what shared memory allows without fewer blocks per SM than the cooperative launch
// planned (its grid is one wave), after the phases' own staging. Values are chosen by global
// bytes saved per byte of shared memory, and laid out by their live phases (first-fit: values
// whose phases do not overlap share room). Kernels whose tiles per block have no static bound
// keep global scratch.
#include "fusion/kernel_plan.h"
#include "ir/symbol_ranges.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// Turns the kernel's qualifying Global values into resident Shared values, and marks qualifying
/// inputs resident (their placement,
/// KernelPlan::residentTiles, launch.sharedBytes) when it saves global traffic. Run on a kernel
/// whose stitching and launch are planned (buildKernel does); leaves kernel.phases empty for
/// planPhases to fill again.
void planResidentValues(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                        const ir::SymbolRanges& ranges = {});

} // namespace weft::fusion
