#pragma once
// A step of the AStitch planner after phase planning: thread-block clusters (sm_90+) for the
// per-block copies of a stitched kernel.
//
// Every block of a kernel stages the rows its phase reads whole (a bias, an RMSNorm's weight, the
// column sums an earlier phase left behind), and every block of a cooperative one writes one row
// of partials per across-tiles reduce. With
// a grid of hundreds of blocks, those per-block copies can outweigh the data the kernel must move
// (cluster_200: 13 bias rows and 9 column sums per block and phase). Blocks of one cluster share
// their shared memory (distributed shared memory), so a phase can load each staged row once per
// cluster, each block its share, and combine its blocks' partials in shared memory before one
// row per cluster goes to global memory.
//
// Only cooperative kernels share these copies through clusters: the H200 ran RMSNorm, layer norm
// and GELU's bias 1.2-1.6x slower with the copies of their non-cooperative kernels shared by
// clusters of 8 than with each block making its own (planClusters).
//
// The cluster size is the largest power of two up to 8 (the portable limit) and up to two SMs'
// worth of blocks (a TPC: GPCs are made of whole TPCs, so clusters that fit in one never leave
// an SM of the one-wave grid idle) that divides the cooperative kernel's static grid
// (cluster_plan.cc). A launch whose grid it does not divide, or a device that cannot hold the
// clusters, runs without clusters: the kernel reads its cluster's size at run time.
#include "fusion/kernel_plan.h"
#include "ir/symbol_ranges.h"
#include "weft/device_spec.h"

namespace weft::fusion {

/// The global traffic a phase's clusters must save, over the grid, before it is worth two
/// cluster barriers and the copies' code (graph_10000's kernels of 4 blocks would save 2 KiB).
inline constexpr int64_t kMinClusterSavedBytes = 64 * 1024;

/// Sets kernel.launch.clusterSize and each phase's throughCluster (phases whose clusters save
/// at least `minSavedBytes` of global traffic over the grid). Run after planPhases.
void planClusters(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                  int64_t minSavedBytes = kMinClusterSavedBytes);

/// The cluster size for a grid of `grid` blocks with `blocksPerSM` resident per SM (1: none).
int clusterSizeFor(const DeviceSpec& spec, int64_t grid, int64_t blocksPerSM);

/// Rows shared by a cluster (RowReduceMapping::clusterBlocks, chosen by the thread mapping for
/// rows too long for one block's registers) are emitted only where each block keeps its part
/// of the row in registers from the first reduce to the last store: a kernel of one group whose
/// one phase runs as slots. And they are kept only where they pay: the slots keep a value for
/// a later stage (without the cluster the row would be read again), or the clustered grid fits
/// one wave (the cluster puts more SMs on rows that all run at once). A row read once by one of
/// many blocks gains nothing from a cluster and pays two cluster barriers per reduce, and every
/// per-row value its warps read is read by twice the warps (log-softmax's xla kernels over rows
/// of 30,000). Otherwise the kernel is planned again with a block per row: its launch configured
/// and its phases planned anew. Run after planPhases, before planClusters.
void keepRowClustersWhereEmittable(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                                   const ir::SymbolRanges& ranges = {});

} // namespace weft::fusion
