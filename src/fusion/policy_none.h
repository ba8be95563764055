#pragma once
// The `none` policy: no stitching at all, one kernel per memory-intensive op — the baseline the
// other policies are measured against.
//
// planNone(graph, device) returns a FusionPlan in which
//  - every memory-intensive op is its own KernelPlan with one group and one stage (its
//    dominant is the op itself), except constants and iotas: they are cheap to recompute, so a
//    constant or iota whose users are all memory-intensive ops is inlined (Register storage)
//    into each user's kernel and gets no kernel or buffer of its own; one that is a graph
//    output or feeds a dot gets its own kernel;
//  - every dot is a LibraryCall;
//  - parameters produce no kernel; every value that crosses steps has a buffer (Input for
//    parameters, Output for graph outputs, Intermediate otherwise);
//  - the thread mapping comes from the op's shape and the DeviceSpec (noneThreadMapping).
#include "fusion/fusion_plan.h"
#include "ir/graph.h"
#include "weft/device_spec.h"

namespace weft::fusion {

FusionPlan planNone(const ir::Graph& graph, const DeviceSpec& device);

/// The mapping and block size the none policy gives `op` alone in a kernel:
///  - elementwise (and layout, broadcast, sources): vectorised 1-D, vector width 4 (2 for
///    8-byte types) when the innermost dim and the element count allow, one vector per thread
///    per tile, 256 threads;
///  - reduce whose innermost axis is reduced (row reduce over [rows, rowLength]): rows of at
///    most 512 elements go warp-per-row with ceil(rowLength / vector) lanes rounded up to a
///    power of two (<= 32), several rows per 256-thread block (horizontal packing); longer or
///    symbolic rows go block-per-row, threads = rowLength / (8 * vector) rounded up to a power of
///    two within [128, 1024];
///  - any other reduce (column reduce over [reducedLength, columns]): 32 columns x 8 rows tiles.
struct NoneMapping {
  ThreadMapping mapping;
  int blockSize = 256;
  ir::Dim tiles = 1;
  int64_t maxBlocks = 0; // set when `tiles` is symbolic and not an exact quotient
};
NoneMapping noneThreadMapping(const ir::Graph& graph, ir::NodeId op, const DeviceSpec& device);

} // namespace weft::fusion
