#include "fusion/cluster_plan.h"

#include <algorithm>

#include "fusion/launch_config.h"
#include "fusion/phase_planner.h"

namespace weft::fusion {

namespace {

constexpr int kMaxPortableCluster = 8;

/// The global traffic a phase's blocks make per block that their cluster could share: staged
/// inputs read, and the across-tiles partials kept in shared memory (written, then read by the
/// combine).
int64_t perBlockBytes(const ir::Graph& g, const PhasePlan& p) {
  auto bytesOf = [&](ir::NodeId v) {
    const ir::Node& n = g.node(v);
    ir::Dim elements = ir::numElements(n.type.shape);
    return elements.isStatic() ? elements.size() * ir::dtypeBytes(n.type.dtype) : 0;
  };
  int64_t bytes = 0;
  for (const StagedInput& s : p.staged)
    if (!s.computed) bytes += bytesOf(s.input); // a computed one is read from nowhere
  for (const SharedPartials& s : p.sharedPartials)
    bytes += 2 * bytesOf(s.reduce);
  if (p.slots)
    for (ir::NodeId r : p.slots->across)
      bytes += 2 * bytesOf(r);
  return bytes;
}

} // namespace

int clusterSizeFor(const DeviceSpec& spec, int64_t grid, int64_t blocksPerSM) {
  if (spec.computeCapability < 90 || grid < 2) return 1;
  int64_t limit = std::min<int64_t>(kMaxPortableCluster, 2 * std::max<int64_t>(blocksPerSM, 1));
  for (int64_t c = limit; c >= 2; c /= 2)
    if ((c & (c - 1)) == 0 && grid % c == 0) return int(c);
  return 1;
}

void keepRowClustersWhereEmittable(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                                   const ir::SymbolRanges& ranges) {
  const LaunchPlan& launch = kernel.launch;
  if (!launch.clusterRequired) return;
  bool emittable = kernel.groups.size() == 1 && kernel.phases.size() == 1 &&
                   !launch.cooperative && kernel.phases[0].slots &&
                   kernel.phases[0].slots->group == 0 && kernel.phases[0].acrossStages.empty() &&
                   kernel.phases[0].space.clusterParts == launch.clusterSize;
  // A row the kernel reads once (its slots keep no value for a later stage) loses nothing to
  // a block per row: the cluster pays only where it puts more SMs on rows that all run in one
  // wave of clusters (64 rows of 30,000 in clusters of 2: 128 SMs instead of 64).
  const int64_t blocks = ir::assumedSize(launch.tiles, ranges);
  if (emittable && (!kernel.phases[0].slots->reused.empty() || blocks <= launch.maxBlocks)) return;
  for (Group& group : kernel.groups)
    if (auto* r = std::get_if<RowReduceMapping>(&group.mapping)) r->clusterBlocks = 1;
  configureLaunch(g, kernel, spec);
  kernel.phases.clear();
  planPhases(g, spec, kernel, ranges);
}

void planClusters(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                  int64_t minSavedBytes) {
  LaunchPlan& launch = kernel.launch;
  if (launch.clusterRequired) return; // rows shared by the cluster: planned with the mapping
  launch.clusterSize = 1;
  for (PhasePlan& p : kernel.phases)
    p.throughCluster = false;
  if (launch.maxBlocks <= 0 || spec.smCount <= 0) return;
  // Only a cooperative kernel shares its copies through clusters. Another kernel's blocks make
  // their copies once each and then loop over their tiles, and the copies' rows stay in L2:
  // measured on the H200 (2026-11-26, before and after in one run), clusters of 8 for the
  // weights of RMSNorm and layer norm and for GELU's bias made those kernels 1.2-1.6x slower
  // (RMSNorm [4096, 4096] 92% of a copy's speed without them, 71% with; gelu_bias 96% and 81%;
  // the sweep's layer norms of 2,048-8,192 84-96% and 47-67%), for the few bytes of L2 traffic
  // the simulator counts as saved.
  // The grid must be static, so that every binding launches the same clusters (the cuda device
  // checks that they fit at once).
  // Nor one that hands off to its last block: the blocks that leave early would never reach
  // the cluster barrier that keeps their shared memory for the cluster's reads.
  if (!launch.cooperative || !launch.tiles.isStatic() || kernel.handsOffToLastBlock()) return;
  int64_t grid = std::min(launch.tiles.size(), launch.maxBlocks);
  int size = clusterSizeFor(spec, grid, launch.maxBlocks / spec.smCount);
  if (size == 1) return;
  bool any = false;
  for (PhasePlan& p : kernel.phases) {
    // All but one block of each cluster no longer make these copies.
    int64_t saved = (grid - grid / size) * perBlockBytes(g, p);
    p.throughCluster = saved > 0 && saved >= minSavedBytes;
    any = any || p.throughCluster;
  }
  if (any) launch.clusterSize = size;
}

} // namespace weft::fusion
