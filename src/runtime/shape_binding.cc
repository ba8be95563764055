#include "runtime/shape_binding.h"

#include <algorithm>
#include <fmt/format.h>

#include "compile.h"

namespace weft {
namespace {

/// The kernel's tiles under `binding`: ceil(rows / rowsPerTile) x split of its first phase's
/// group, what fusion/launch_config.cc computes for static rows, so that a generic program
/// launches the grid its specialised twin would. The plan's symbolic `tiles` is only exact
/// when rowsPerTile divides the rows' factor (otherwise it is the rows, an upper bound: correct,
/// since blocks loop over the real tiles, but a full wave of blocks for a handful of tiles).
int64_t tilesUnder(const fusion::FusionPlan& plan, const codegen::CompiledKernel& k,
                   const Binding& binding) {
  if (!k.launch.tiles.isStatic())
    for (const fusion::Step& step : plan.steps) {
      const auto* kp = std::get_if<fusion::KernelPlan>(&step);
      if (!kp || kp->name != k.name || kp->stages.empty()) continue;
      const fusion::Group& first = kp->groups[static_cast<size_t>(kp->stages.front().group)];
      int64_t rows = first.rows.evaluate(binding);
      return (rows + first.rowsPerTile - 1) / first.rowsPerTile * fusion::splitFactor(first.mapping);
    }
  return k.launch.tiles.evaluate(binding);
}

} // namespace

LaunchConfig launchConfigFor(const codegen::CompiledKernel& k, int64_t tiles,
                             int64_t residentBlocks) {
  int64_t cap = k.launch.maxBlocks;
  const int64_t cluster = std::max(1, k.launch.clusterSize);
  if (k.launch.clusterRequired && residentBlocks >= cluster) {
    // Whole clusters, no more than fit at once: the blocks loop over the tiles, and a cluster
    // past those would start only when a resident one has done all of its share (the H100
    // keeps 15 clusters of 8 of a 1024-thread kernel, not the 16 its 132 SMs would hold; the
    // 16th doubled the kernel's time).
    const int64_t fit = residentBlocks / cluster * cluster;
    cap = cap > 0 ? std::min(cap, fit) : fit;
  } else if (k.launch.fillSMs && cap > 0) {
    cap = std::max(cap, residentBlocks);
  }
  int64_t grid = cap > 0 ? std::min(tiles, cap) : tiles;
  grid = std::max<int64_t>(grid, 1);
  if (k.launch.clusterRequired) // whole clusters (blocks past the tiles have none to run)
    grid = (grid + cluster - 1) / cluster * cluster;
  if (grid > int64_t(0x7fffffff))
    throw Error(fmt::format("kernel {}: grid of {} blocks exceeds the 2^31-1 limit", k.name, grid));
  LaunchConfig c;
  c.grid.x = static_cast<uint32_t>(grid);
  c.block.x = static_cast<uint32_t>(k.launch.blockSize);
  c.dynamicSharedBytes = k.dynamicSharedBytes;
  c.cooperative = k.launch.cooperative;
  if (k.launch.clusterSize > 1 && grid % k.launch.clusterSize == 0)
    c.clusterSize = uint32_t(k.launch.clusterSize);
  c.clusterRequired = k.launch.clusterRequired;
  return c;
}

BoundShapes bindShapes(const CompiledProgram& program, const Binding& binding,
                       const std::vector<int64_t>& residentBlocks) {
  const fusion::FusionPlan& plan = program.plan;
  BoundShapes s;
  s.binding = binding;
  s.bufferBytes.reserve(plan.buffers.size());
  for (const fusion::Buffer& b : plan.buffers)
    s.bufferBytes.push_back(std::max<size_t>(
        static_cast<size_t>(b.elements.evaluate(binding)) * ir::dtypeBytes(b.dtype), 1));
  for (size_t i = 0; i < program.module.kernels.size(); ++i) {
    const codegen::CompiledKernel& k = program.module.kernels[i];
    int64_t tiles = tilesUnder(plan, k, binding);
    s.launches.push_back(
        launchConfigFor(k, tiles, i < residentBlocks.size() ? residentBlocks[i] : 0));
  }
  return s;
}

} // namespace weft
