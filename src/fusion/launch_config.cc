#include "fusion/launch_config.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "fusion/graph_queries.h"

namespace weft::fusion {
namespace {

int warpsOf(const DeviceSpec& spec, int blockSize) {
  return (blockSize + spec.warpSize - 1) / spec.warpSize;
}
// RegisterEstimate's constants, fitted to what ptxas 13 allocates without spilling for every
// kernel of examples/graphs and bench/workloads (three policies, sm_80 and sm_90, symbolic and
// bound shapes; test/codegen/ptxas_test.cc holds the kernels to it).
constexpr int kBaseRegisters = 16;
/// A row loop of at most this many static steps per thread is unrolled whole (every step's loads
/// in flight); a longer or symbolic one runs about two steps at a time, or its chunks of
/// RowReduceMapping::streamLoads.
constexpr int64_t kUnrolledSteps = 6;
constexpr int64_t kRolledSteps = 2;
/// A column reduce's thread walks its column with loads in flight for a few rows at once.
constexpr int kColumnRegistersPerWord = 3;
/// ptxas keeps at most this many registers of a split combine's loads in flight (measured: 88 in
/// all for 216 to 528 parts with symbolic sizes).
constexpr int kMaxCombineRegisters = 64;

int roundUp(int x, int m) {
  return (x + m - 1) / m * m;
}

int wordsOf(const ir::Graph& g, ir::NodeId v) {
  return (ir::dtypeBytes(g.node(v).type.dtype) + 3) / 4;
}

bool symbolicSizes(const ir::Graph& g, const KernelPlan& kernel) {
  for (const auto& [v, p] : kernel.placement)
    for (const ir::Dim& d : g.node(v).type.shape)
      if (!d.isStatic()) return true;
  return false;
}

/// The values `group`'s ops read from memory, each once: operands produced outside the group
/// that some buffer or shared memory holds, reached through the register values the group
/// regenerates inline (other groups' local ops).
std::set<ir::NodeId> loadedBy(const ir::Graph& g, const KernelPlan& kernel, const Group& group) {
  std::set<ir::NodeId> own(group.ops.begin(), group.ops.end()), loaded, seen;
  std::vector<ir::NodeId> work;
  for (ir::NodeId op : group.ops)
    work.insert(work.end(), g.node(op).operands.begin(), g.node(op).operands.end());
  while (!work.empty()) {
    ir::NodeId v = work.back();
    work.pop_back();
    if (own.count(v) || !seen.insert(v).second) continue;
    auto p = kernel.placement.find(v);
    if (p != kernel.placement.end() && p->second.storage == Storage::Register) {
      work.insert(work.end(), g.node(v).operands.begin(), g.node(v).operands.end());
      continue;
    }
    if (!g.node(v).operands.empty() || g.node(v).kind == ir::OpKind::Parameter) loaded.insert(v);
  }
  return loaded;
}

} // namespace

RegisterEstimate estimateRegisters(const ir::Graph& g, const KernelPlan& kernel) {
  RegisterEstimate e;
  e.base = kBaseRegisters;
  const bool wide = symbolicSizes(g, kernel);
  for (const auto& [v, p] : kernel.placement)
    if (p.storage == Storage::Input || p.storage == Storage::Output || p.storage == Storage::Global)
      ++e.pointers;
  for (const Group& group : kernel.groups) {
    int words = 0;
    for (ir::NodeId v : loadedBy(g, kernel, group))
      words += wordsOf(g, v);
    int64_t stream = 0;
    if (const auto* m = std::get_if<RowReduceMapping>(&group.mapping)) {
      int64_t vector = std::max(1, m->vectorWidth);
      int64_t lanes = m->kind == RowReduceMapping::Kind::WarpPerRow ? m->threadsPerRow
                                                                    : kernel.launch.blockSize;
      int64_t steps = group.rowLength.isStatic()
                          ? (group.rowLength.size() + lanes * vector - 1) / (lanes * vector)
                          : kRolledSteps;
      // A longer row streams its steps in chunks of streamLoads (all loaded, then used).
      const int64_t rolled = std::max<int64_t>(kRolledSteps, m->streamLoads);
      stream = words * vector * (steps <= kUnrolledSteps ? steps : rolled) / 2;
    } else if (const auto* m = std::get_if<ElementwiseMapping>(&group.mapping)) {
      stream = words * std::max(1, m->vectorWidth) / 2;
    } else {
      stream = kColumnRegistersPerWord * words;
    }
    e.stream = std::max<int>(e.stream, int(stream));
    bool atomics = std::holds_alternative<ColumnReduceMapping>(group.mapping) &&
                   std::get<ColumnReduceMapping>(group.mapping).useAtomics;
    int split = splitFactor(group.mapping);
    if (split > 1 && !atomics)
      e.combine = std::max(e.combine, std::min(kMaxCombineRegisters,
                                               wide ? (3 * split + 7) / 8 : (split + 7) / 8));
  }
  e.slots = slotRegisters(g, kernel);
  return e;
}

int slotRegisters(const ir::Graph& g, const KernelPlan& kernel) {
  int most = 0;
  for (size_t gi = 0; gi < kernel.groups.size(); ++gi) {
    const Group& group = kernel.groups[gi];
    const auto* m = std::get_if<RowReduceMapping>(&group.mapping);
    if (!m || m->splitFactor > 1 || group.acrossTiles || !group.rowLength.isStatic()) continue;
    // Whole steps of vectors per thread (a ragged row's last step is held in full).
    int64_t perThread = m->slotSteps(group.rowLength.size(), kernel.launch.blockSize) *
                        std::max(1, m->vectorWidth);
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

/// Bytes an SM keeps in flight where it streams rows. Measured on an H100 (2026-11-27, the
/// sweep, docs/performance.md): rows of 16,384 in 1024-thread blocks, one block an SM, streamed
/// at 96-97% of a copy's speed with 64 KB in flight per SM (f32, 4 steps of 16 bytes a thread)
/// and at 62-89% with 32 KB (bf16, 2 steps).
constexpr int64_t kStreamBytesPerSM = 64 * 1024;
/// Registers a streamed chunk's loaded words may take, at most: half of what a thread of a
/// 1024-thread block has (a chunk of layer norm's four inputs stays one step: ptxas spilled a
/// loss kernel's chunk of three steps at a bound of 48).
constexpr int64_t kStreamRegisters = 32;
constexpr int kMaxStreamLoads = 8;
/// RowReduceMapping::streamLoads for `group`: the vector steps a thread loads at once so that
/// the SM's threads (as many as its blocks have, at most as many as kRegisterHeavy registers
/// each leaves room for) keep kStreamBytesPerSM of the row's per-element inputs in flight,
/// within kStreamRegisters and the steps a thread takes of its part of a static row.
static int streamLoadsFor(const ir::Graph& g, const KernelPlan& kernel, const Group& group,
                   const DeviceSpec& spec) {
  const auto* m = std::get_if<RowReduceMapping>(&group.mapping);
  if (!m || m->kind != RowReduceMapping::Kind::BlockPerRow) return 1;
  const int blockSize = kernel.launch.blockSize;
  const int64_t vector = std::max(1, m->vectorWidth);
  int64_t words = 0; // loaded per element of the row (a row's own values are loaded once)
  for (ir::NodeId v : loadedBy(g, kernel, group))
    if (g.node(v).type.shape == group.loopShape) words += wordsOf(g, v);
  if (words == 0) return 1;
  const int64_t threadsPerSM =
      std::min<int64_t>(int64_t(spec.maxThreadsPerSM) / blockSize * blockSize,
                        std::max<int64_t>(blockSize, spec.registersPerSM / kRegisterHeavy));
  const int64_t stepBytes = words * 4 * vector;
  int64_t loads = (kStreamBytesPerSM + threadsPerSM * stepBytes - 1) / (threadsPerSM * stepBytes);
  loads = std::min(loads, kStreamRegisters / (words * vector));
  if (group.rowLength.isStatic()) { // at most the steps a thread takes of its part of the row
    const int64_t parts = int64_t(m->splitFactor) * std::max(1, m->clusterBlocks);
    const int64_t part = (group.rowLength.size() + parts - 1) / parts;
    loads = std::min(loads, (part + blockSize * vector - 1) / (blockSize * vector));
  }
  return int(std::clamp<int64_t>(loads, 1, kMaxStreamLoads));
}

int assumedRegisters(const ir::Graph& g, const KernelPlan& kernel) {
  // What the kernel's code keeps live, from its plan: the bound codegen gives ptxas (.maxnreg)
  // and, for a cooperative kernel, what sizes its grid, so it must cover it.
  int estimated = std::max(kAssumedRegisters, roundUp(estimateRegisters(g, kernel).total(), 8));
  bool reuse = std::any_of(kernel.placement.begin(), kernel.placement.end(),
                           [](const auto& p) { return p.second.registerReuse; });
  bool acrossTiles = std::any_of(kernel.groups.begin(), kernel.groups.end(),
                                 [](const Group& g) { return g.acrossTiles; });
  if (!reuse && !acrossTiles) return estimated;
  // Kernels that keep values in registers across stages get every register their block allows
  // (codegen drops .maxnreg; .maxntid bounds them), planned as kRegisterHeavy.
  if (!isCooperative(kernel)) return kRegisterHeavy;
  // A cooperative one keeps within its bound: room for the across-tiles combine loops beside
  // what slots keep (layer norm backward spilled 132-164 bytes with 32 + slotRegisters;
  // Figure 7's across-tiles kernel needs 40-56 registers).
  int slots = slotRegisters(g, kernel);
  return std::max(estimated, slots > 0 ? roundUp(kRegisterHeavy + slots, 8) : kRegisterHeavy);
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
  // At most what one thread of a resident block can have: a kernel whose estimate exceeds it is
  // remapped with smaller blocks when it is cooperative (kernel_builder.cc); otherwise ptxas
  // gets the most its block allows.
  int perBlock = std::min<int64_t>(spec.maxRegistersPerThread,
                                   spec.registersPerSM / (warpsOf(spec, launch.blockSize) *
                                                          int64_t(spec.warpSize)));
  for (Group& group : kernel.groups) // before the registers, which count the chunks
    if (auto* m = std::get_if<RowReduceMapping>(&group.mapping))
      m->streamLoads = streamLoadsFor(g, kernel, group, spec);
  int assumed = std::min(assumedRegisters(g, kernel), std::max(kAssumedRegisters, perBlock / 8 * 8));
  RegisterBound bound = relaxRegisterBound(spec, launch.blockSize, launch.sharedBytes, assumed);
  launch.maxRegisters = bound.maxRegisters;
  launch.maxBlocks = int64_t(spec.smCount) * bound.blocksPerSM;
  launch.cooperative = isCooperative(kernel);

  if (kernel.stages.empty()) return;
  const Group& first = kernel.groups[static_cast<size_t>(kernel.stages.front().group)];
  // Rows shared by a thread-block cluster: a tile per block of the cluster, a grid of whole
  // clusters (the blocks of a cluster then take the parts of the same rows).
  int cluster = 1;
  for (const Group& g : kernel.groups)
    cluster = std::max(cluster, clusterBlocks(g.mapping));
  launch.clusterSize = cluster;
  launch.clusterRequired = cluster > 1;
  launch.maxBlocks = launch.maxBlocks / cluster * cluster;
  int64_t split1 = splitFactor(first.mapping) * clusterBlocks(first.mapping);
  if (first.rows.isStatic()) {
    launch.tiles = ((first.rows.size() + first.rowsPerTile - 1) / first.rowsPerTile) * split1;
  } else {
    // Symbolic rows: rows / rowsPerTile when exact, otherwise rows (an upper bound).
    auto exact = first.rows.dividedBy(ir::Dim(first.rowsPerTile));
    launch.tiles = (exact ? *exact : first.rows) * ir::Dim(split1);
  }
}

} // namespace weft::fusion
