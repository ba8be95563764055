#include "runtime/shape_binding.h"

#include <algorithm>
#include <fmt/format.h>

#include "compile.h"

namespace weft {

BoundShapes bindShapes(const CompiledProgram& program, const Binding& binding) {
  const fusion::FusionPlan& plan = program.plan;
  BoundShapes s;
  s.binding = binding;
  s.bufferBytes.reserve(plan.buffers.size());
  for (const fusion::Buffer& b : plan.buffers)
    s.bufferBytes.push_back(std::max<size_t>(
        static_cast<size_t>(b.elements.evaluate(binding)) * ir::dtypeBytes(b.dtype), 1));
  for (const codegen::CompiledKernel& k : program.module.kernels) {
    // `tiles` may be an upper bound for symbolic rows (fusion/launch_config.cc): blocks loop
    // over the real tiles, so extra blocks find none.
    int64_t tiles = k.launch.tiles.evaluate(binding);
    int64_t grid = k.launch.maxBlocks > 0 ? std::min(tiles, k.launch.maxBlocks) : tiles;
    grid = std::max<int64_t>(grid, 1);
    if (grid > int64_t(0x7fffffff))
      throw Error(
          fmt::format("kernel {}: grid of {} blocks exceeds the 2^31-1 limit", k.name, grid));
    LaunchConfig c;
    c.grid.x = static_cast<uint32_t>(grid);
    c.block.x = static_cast<uint32_t>(k.launch.blockSize);
    c.dynamicSharedBytes = k.dynamicSharedBytes;
    c.cooperative = k.launch.cooperative;
    s.launches.push_back(c);
  }
  return s;
}

} // namespace weft
