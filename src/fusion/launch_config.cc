#include "fusion/launch_config.h"

#include <algorithm>
#include <cassert>

#include "fusion/graph_queries.h"

namespace weft::fusion {
namespace {

int warpsOf(const DeviceSpec& spec, int blockSize) {
  return (blockSize + spec.warpSize - 1) / spec.warpSize;
}
int roundUp(int x, int m) {
  return (x + m - 1) / m * m;
}

} // namespace

int slotRegisters(const ir::Graph& g, const KernelPlan& kernel) {
  int most = 0;
  for (size_t gi = 0; gi < kernel.groups.size(); ++gi) {
    const Group& group = kernel.groups[gi];
    const auto* m = std::get_if<RowReduceMapping>(&group.mapping);
    if (!m || m->splitFactor > 1 || group.acrossTiles || !group.rowLength.isStatic()) continue;
    int threadsPerRow =
        m->kind == RowReduceMapping::Kind::WarpPerRow ? m->threadsPerRow : kernel.launch.blockSize;
    // Whole steps of vectors per thread (a ragged row's last step is held in full).
    int64_t vector = std::max(1, m->vectorWidth), perStep = threadsPerRow * vector;
    int64_t perThread = (group.rowLength.size() + perStep - 1) / perStep * vector;
    auto words = [&](ir::NodeId v) { return (ir::dtypeBytes(g.node(v).type.dtype) + 3) / 4; };
    int64_t perElement = 0;
    for (const auto& [v, p] : kernel.placement)
      if (p.registerReuse && p.storage == Storage::Input && g.node(v).type.shape == group.loopShape)
        perElement += words(v);
    for (const Group& other : kernel.groups)
      if (other.acrossTiles && other.follows == static_cast<int>(gi) &&
          other.loopShape == group.loopShape)
        for (ir::NodeId op : other.ops)
          if (g.node(op).kind == ir::OpKind::Reduce &&
              g.node(g.node(op).operands[0]).type.shape == group.loopShape)
            perElement += words(op);
    most = std::max<int64_t>(most, perThread * perElement);
  }
  return most;
}

int assumedRegisters(const ir::Graph& g, const KernelPlan& kernel) {
  bool reuse = std::any_of(kernel.placement.begin(), kernel.placement.end(),
                           [](const auto& p) { return p.second.registerReuse; });
  bool acrossTiles = std::any_of(kernel.groups.begin(), kernel.groups.end(),
                                 [](const Group& g) { return g.acrossTiles; });
  if (!reuse && !acrossTiles) return kAssumedRegisters;
  // A cooperative kernel's grid is sized by this bound, so it must hold what the kernel keeps in
  // registers; other kernels get every register their block allows (codegen drops .maxnreg).
  if (!isCooperative(kernel)) return kRegisterHeavy;
  // Addresses, indices and the recomputed values of a thread's row elements need room beside
  // what slots keep: layer norm backward spilled 132-164 bytes with 32 + slotRegisters.
  int slots = slotRegisters(g, kernel);
  return slots > 0 ? roundUp(kRegisterHeavy + slots, 8) : kRegisterHeavy;
}

bool isCooperative(const KernelPlan& kernel) {
  bool gridBarrier = std::any_of(kernel.stages.begin(), kernel.stages.end(),
                                 [](const Stage& s) { return s.barrierBefore == Barrier::Grid; });
  bool split = std::any_of(kernel.groups.begin(), kernel.groups.end(), [](const Group& g) {
    return splitFactor(g.mapping) > 1 || g.acrossTiles;
  });
  return gridBarrier || split;
}

int64_t blocksPerWave(const DeviceSpec& spec, int blockSize, int registersPerThread,
                      int64_t sharedBytes) {
  return int64_t(spec.smCount) * blocksPerSM(spec, blockSize, registersPerThread, sharedBytes);
}

RegisterBound relaxRegisterBound(const DeviceSpec& spec, int blockSize, int64_t sharedBytes,
                                 int assumed) {
  RegisterBound r;
  r.blocksPerSM = blocksPerSM(spec, blockSize, assumed, sharedBytes);
  if (r.blocksPerSM == 0) return r;
  int64_t perThread =
      spec.registersPerSM / (int64_t(r.blocksPerSM) * warpsOf(spec, blockSize) * spec.warpSize);
  int relaxed = static_cast<int>(std::min<int64_t>(perThread, spec.maxRegistersPerThread)) / 8 * 8;
  r.maxRegisters = std::max(relaxed, assumed);
  assert(blocksPerSM(spec, blockSize, r.maxRegisters, sharedBytes) == r.blocksPerSM &&
         "relaxing the register bound must keep the planned blocks per SM");
  return r;
}

void configureLaunch(const ir::Graph& g, KernelPlan& kernel, const DeviceSpec& spec) {
  LaunchPlan& launch = kernel.launch;
  assert(launch.blockSize > 0 &&
         "the thread mapping sets the block size before launch configuration");
  int assumed = std::min(assumedRegisters(g, kernel), spec.maxRegistersPerThread / 8 * 8);
  RegisterBound bound = relaxRegisterBound(spec, launch.blockSize, launch.sharedBytes, assumed);
  launch.maxRegisters = bound.maxRegisters;
  launch.maxBlocks = int64_t(spec.smCount) * bound.blocksPerSM;
  launch.cooperative = isCooperative(kernel);

  if (kernel.stages.empty()) return;
  const Group& first = kernel.groups[static_cast<size_t>(kernel.stages.front().group)];
  int64_t split1 = splitFactor(first.mapping);
  if (first.rows.isStatic()) {
    launch.tiles = ((first.rows.size() + first.rowsPerTile - 1) / first.rowsPerTile) * split1;
  } else {
    // Symbolic rows: rows / rowsPerTile when exact, otherwise rows (an upper bound).
    auto exact = first.rows.dividedBy(ir::Dim(first.rowsPerTile));
    launch.tiles = (exact ? *exact : first.rows) * ir::Dim(split1);
  }
}

} // namespace weft::fusion
