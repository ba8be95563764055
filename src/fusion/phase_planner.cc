#include "fusion/phase_planner.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <map>

#include "fusion/graph_queries.h"
#include "fusion/launch_config.h"
#include "fusion/stitching_scheme.h"
#include "ir/reduce_geometry.h"
#include "weft/error.h"

namespace weft::fusion {
namespace {

constexpr int64_t kMaxStaticShared = 48 * 1024;
constexpr int64_t kMaxStagedBytes = 48 * 1024;         // staged inputs, bounded by the room too
constexpr int64_t kMaxSliceBytes = 16 * 1024;          // tile slices
constexpr int64_t kMaxSharedPartialsBytes = 16 * 1024; // an across-tiles reduce's partials
constexpr int kMaxCombineRounds = 64; // rows per block tile, combined one after another
constexpr int64_t kMaxSideBySideReduces = 4; // sibling block-per-row reduces combined at once

int64_t align16(int64_t bytes) {
  return (bytes + 15) / 16 * 16;
}

/// Bytes of shared memory for one partial of each of a reduce's results, 16-byte aligned.
int64_t partialBytes(const ir::Node& reduce) {
  return align16(ir::numElements(reduce.type.shape).size() *
                 std::max(4, ir::dtypeBytes(sharedPartialDType(reduce.type.dtype))));
}

using Phase = std::vector<size_t>; // indices into KernelPlan::stages

class PhasePlanner {
public:
  PhasePlanner(const ir::Graph& g, const DeviceSpec& d, KernelPlan& k,
               const ir::SymbolRanges& ranges)
      : g_(g), d_(d), k_(k), ranges_(ranges) {}

  void run() {
    k_.phases.clear();
    int64_t dynamicShared = k_.sharedValuesEnd(); // resident inputs' slots included
    k_.reduceScratchBytes = 0;
    for (size_t gi = 0; gi < k_.groups.size(); ++gi) {
      const Group& group = k_.groups[gi];
      int64_t bytes = reduceEmitterScratchBytes(group.mapping, k_.launch.blockSize);
      // Block-per-row sibling reduces of a stage combine side by side, each in its own scratch
      // (codegen's emitRowReduces), up to kMaxSideBySideReduces at once.
      const auto* rows = std::get_if<RowReduceMapping>(&group.mapping);
      if (rows && rows->kind == RowReduceMapping::Kind::BlockPerRow && rows->clusterBlocks <= 1) {
        int64_t siblings = 1;
        for (const Stage& st : k_.stages) {
          if (st.group != int(gi)) continue;
          int64_t reduces = 0;
          for (ir::NodeId v : st.materialized)
            reduces += g_.node(v).kind == ir::OpKind::Reduce;
          siblings = std::max(siblings, std::min(reduces, kMaxSideBySideReduces));
        }
        bytes *= siblings;
      }
      k_.reduceScratchBytes = std::max(k_.reduceScratchBytes, bytes);
    }
    sharedUsed_ = dynamicShared + k_.reduceScratchBytes;
    k_.stagingBytes = 0;
    Phase phase;
    for (size_t i = 0; i < k_.stages.size(); ++i) {
      const Barrier before = k_.stages[i].barrierBefore;
      if ((before == Barrier::Grid || before == Barrier::LastBlock) && !phase.empty()) {
        planPhase(phase);
        phase.clear();
      }
      phase.push_back(i);
    }
    if (!phase.empty()) planPhase(phase);
    // A kernel that keeps values in registers across stages gets every register a thread of
    // its block can have (no .maxnreg; .maxntid bounds it): ptxas spilled a few bytes at an
    // explicit .maxnreg of that same bound. Cooperative kernels keep within the bound that
    // sized their grid (slotPlanOf's budget).
    k_.registerLimit =
        slotRegisters_ > 0 && !k_.launch.cooperative ? 0 : k_.launch.maxRegisters;
    // Without .maxnreg, ptxas picks the occupancy itself: it aimed 512-thread blocks of a row
    // shared by a cluster at three per SM (40 registers) and spilled, where the plan counts on
    // two at its register bound. Such a kernel states the blocks per SM it was planned for.
    k_.minBlocksPerSM = 0;
    if (k_.registerLimit == 0) {
      const int perSM = blocksPerSM(d_, k_.launch.blockSize, k_.launch.maxRegisters,
                                    sharedUsed_ + k_.stagingBytes);
      if (perSM >= 2) k_.minBlocksPerSM = perSM;
    }
    k_.launch.fillSMs = fillsSMs();
  }

  /// A register-heavy kernel (no .maxnreg: ptxas takes up to the planned bound) is planned at
  /// the blocks per SM that bound allows, but ptxas often needs fewer registers and the SM
  /// could keep more blocks. More blocks pay where each thread's slot loads move few bytes:
  /// 2-byte values kept in the slots (8-byte vectors) or a row of one slot step (one load per
  /// row and thread).
  /// Measured on an H200 (docs/performance.md): softmax [49152, 128] 75% -> 84% of the copy,
  /// RMSNorm bf16 [4096, 4096] 81% -> 88%, the sweep's bf16 rows of 256-4,096 up to +13%; f32
  /// rows of two or more steps per thread gained nothing and lost up to 7%. (Measured while
  /// 2-byte rows moved 8-byte vectors; they move 16-byte ones since, like f32's, and whether
  /// filling the SMs still pays for them is for the next GPU run to say.)
  bool fillsSMs() const {
    if (k_.launch.cooperative || k_.launch.clusterSize > 1 || k_.registerLimit != 0) return false;
    for (const PhasePlan& p : k_.phases) {
      // A phase handed to the last block runs in one block, whatever the grid.
      if (!p.slots || k_.handedOff(p)) continue;
      if (p.slots->steps == 1) return true;
      for (ir::NodeId v : p.slots->reused)
        if (node(v).kind != ir::OpKind::Constant && ir::dtypeBytes(node(v).type.dtype) == 2)
          return true;
    }
    return false;
  }

private:
  const ir::Node& node(ir::NodeId id) const { return g_.node(id); }
  const Stage& stage(size_t i) const { return k_.stages[i]; }
  const Group& groupOf(size_t stageIndex) const {
    return k_.groups.at(size_t(stage(stageIndex).group));
  }
  const ValuePlacement& placement(ir::NodeId id) const {
    auto it = k_.placement.find(id);
    if (it == k_.placement.end()) fail(id, "has no placement in the kernel plan");
    return it->second;
  }
  [[noreturn]] void fail(ir::NodeId op, const std::string& what) const {
    throw Error(fmt::format("kernel \"{}\": {}: {}", k_.name, ir::describe(node(op)), what));
  }

  void planPhase(const Phase& phase);
  void widenWarpBarriers(const Phase& phase, const std::optional<SlotPlan>& slots);
  TileSpace spaceOf(const Phase& phase) const;
  std::optional<SlotPlan> slotPlanOf(const TileSpace& s, const Phase& phase) const;
  int keptRegisters(const Phase& phase, SlotPlan& sp, const std::vector<ir::NodeId>& candidates,
                    const std::function<int(ir::NodeId)>& cost, int budget) const;
  bool accumulatesInSlots(ir::NodeId reduce, const SlotPlan& sp) const;
  bool isAcrossTiles(const Group& g, const Stage& st) const;
  /// The ops the phase's stages compute, down to inputs and values earlier phases stored (what
  /// its staging may serve: a broadcast no stage of the phase reads is not staged).
  std::set<ir::NodeId> reachedBy(const Phase& phase) const {
    std::set<ir::NodeId> seen;
    std::vector<ir::NodeId> work;
    for (size_t i : phase)
      work.insert(work.end(), stage(i).materialized.begin(), stage(i).materialized.end());
    while (!work.empty()) {
      ir::NodeId v = work.back();
      work.pop_back();
      if (!seen.insert(v).second || written_.count(v)) continue;
      auto p = k_.placement.find(v);
      if (p == k_.placement.end() || p->second.storage == Storage::Input) continue;
      work.insert(work.end(), node(v).operands.begin(), node(v).operands.end());
    }
    return seen;
  }
  /// The groups of the phase's stages, in stage order, each once.
  std::vector<int> phaseGroups(const Phase& phase) const {
    std::vector<int> groups;
    for (size_t i : phase)
      if (std::find(groups.begin(), groups.end(), stage(i).group) == groups.end())
        groups.push_back(stage(i).group);
    return groups;
  }
  std::vector<ir::NodeId> acrossReduces(const Stage& st) const;
  std::vector<StagedInput> stageBroadcasts(const TileSpace& s, const std::vector<int>& groups,
                                           int64_t maxElements, bool outerOnly,
                                           int64_t* arrayOffset);
  void planTileSlices(const TileSpace& s, const SlotPlan& sp, PhasePlan& plan);

  /// The offset in the staging arena of `bytes` more of the current phase, 16-byte aligned.
  int64_t allocate(int64_t bytes) {
    int64_t offset = align16(phaseStaged_);
    phaseStaged_ = offset + bytes;
    k_.stagingBytes = std::max(k_.stagingBytes, phaseStaged_);
    return offset;
  }
  /// Shared bytes per block in use now: the plan's, reduce scratch, this phase's staging.
  int64_t sharedInUse() const { return sharedUsed_ + phaseStaged_; }
  /// Bytes the current phase may still stage: within static shared memory's 48 KB (with the
  /// reduce scratch) and the device's per-block limit.
  int64_t stagingRoom() const {
    return std::min(kMaxStaticShared - k_.reduceScratchBytes - phaseStaged_,
                    d_.sharedMemoryPerBlock - sharedInUse());
  }
  /// Whether `moreShared` bytes per block beyond what is used so far keep a cooperative
  /// launch's planned blocks resident in one wave (always true otherwise).
  bool keepsGridResident(int64_t moreShared) const {
    const LaunchPlan& l = k_.launch;
    if (!l.cooperative || l.maxBlocks <= 0) return true;
    int64_t perSM = blocksPerSM(d_, l.blockSize, l.maxRegisters, sharedInUse() + moreShared);
    return perSM * d_.smCount >= l.maxBlocks;
  }
  /// The most registers a thread of a full block can have.
  int registersPerThreadCap() const {
    return std::min(d_.maxRegistersPerThread, d_.registersPerSM / k_.launch.blockSize) / 8 * 8;
  }
  /// Elements of a value of `shape` (spread evenly over the phase's units) one block visits.
  /// At most, for every binding the plan's ranges admit (a static size's own).
  int64_t upperBound(const ir::Dim& d) const {
    return ir::upperBoundOr(d, ranges_, std::numeric_limits<int64_t>::max());
  }
  int64_t elementsPerBlock(const TileSpace& s, const ir::Shape& shape) const {
    ir::Dim n = ir::numElements(shape);
    int64_t maxBlocks = k_.launch.maxBlocks;
    constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();
    int64_t units = upperBound(s.units);
    if (units == kUnknown || maxBlocks <= 0 || units == 0) return kUnknown;
    // Per unit: exact when both are static, else the elements' bound over one unit (a value
    // per row is one element per unit; a symbolic loop's elements per row are its static part).
    std::optional<ir::Dim> perUnit = n.dividedBy(s.units);
    int64_t elementsPerUnit = perUnit ? upperBound(*perUnit)
                              : n.isStatic() && s.units.isStatic()
                                  ? std::max<int64_t>(1, n.size() / s.units.size())
                                  : kUnknown;
    if (elementsPerUnit == kUnknown) return kUnknown;
    int64_t tiles = (units + s.unitsPerTile - 1) / s.unitsPerTile;
    int64_t tilesPerBlock = (tiles + maxBlocks - 1) / maxBlocks;
    return tilesPerBlock * s.unitsPerTile * std::max<int64_t>(1, elementsPerUnit);
  }
  /// Whether each block of the kernel handles at least two tiles of phase `s`.
  bool manyTilesPerBlock(const TileSpace& s) const {
    if (!s.units.isStatic() || k_.launch.maxBlocks <= 0) return false;
    int64_t tiles = (s.units.size() + s.unitsPerTile - 1) / s.unitsPerTile;
    return tiles >= 2 * k_.launch.maxBlocks;
  }

  const ir::Graph& g_;
  const DeviceSpec& d_;
  KernelPlan& k_;
  const ir::SymbolRanges& ranges_; // a version's guard: upper bounds on the symbols
  std::set<ir::NodeId> written_; // values materialised by an earlier phase
  std::set<ir::NodeId> phaseReach_; // the current phase's reachedBy
  int64_t sharedUsed_ = 0;       // the plan's shared values and the reduce scratch
  int64_t phaseStaged_ = 0;      // bytes of the arena the current phase uses
  int slotRegisters_ = 0;        // most registers any phase keeps reused values in
};

/// The stitching scheme narrowed barriers to the warp where a row value's readers run in its
/// row's lanes, counting the group's values over its loop and its warp-local row values among
/// them: they do, in the group's row slots. Where the phase has no slots for that group, or a
/// stage of it computes a value neither a reduce, nor over the slots' loop, nor warp-local, the
/// phase's warp barriers widen back to the block's and its values are no longer warp-local.
void PhasePlanner::widenWarpBarriers(const Phase& phase, const std::optional<SlotPlan>& slots) {
  std::set<int> groups; // groups with warp-local values in this phase
  for (size_t i : phase)
    for (ir::NodeId v : stage(i).materialized)
      if (k_.placement.at(v).warpLocal) groups.insert(stage(i).group);
  bool inLanes = true;
  for (size_t i : phase) {
    if (!groups.count(stage(i).group) && stage(i).barrierBefore != Barrier::Warp) continue;
    inLanes = inLanes && slots && slots->group == stage(i).group;
    for (ir::NodeId v : stage(i).materialized)
      inLanes = inLanes && (node(v).kind == ir::OpKind::Reduce || node(v).type.shape == slots->loop ||
                            k_.placement.at(v).warpLocal);
  }
  if (inLanes) return;
  for (size_t i : phase) {
    if (k_.stages[i].barrierBefore == Barrier::Warp) k_.stages[i].barrierBefore = Barrier::Block;
    for (ir::NodeId v : k_.stages[i].materialized) k_.placement.at(v).warpLocal = false;
  }
}

void PhasePlanner::planPhase(const Phase& phase) {
  PhasePlan plan;
  plan.firstStage = phase.front();
  plan.stageCount = phase.size();
  phaseStaged_ = 0; // the previous phase's staging is dead behind the grid barrier
  phaseReach_ = reachedBy(phase);
  plan.space = spaceOf(phase);
  const TileSpace& s = plan.space;
  for (size_t i : phase)
    if (isAcrossTiles(groupOf(i), stage(i))) plan.acrossStages.push_back(i);
  plan.slots = slotPlanOf(s, phase);
  widenWarpBarriers(phase, plan.slots);
  if (plan.slots) {
    SlotPlan& sp = *plan.slots;
    slotRegisters_ = std::max(slotRegisters_, sp.registers);
    // Allocated before any staging, which must leave the combine its room.
    if (!sp.across.empty()) sp.combineOffset = allocate(sp.combineBytes);
  }
  auto inSlots = [&](ir::NodeId r) {
    return plan.slots &&
           std::find(plan.slots->across.begin(), plan.slots->across.end(), r) !=
               plan.slots->across.end();
  };
  for (size_t i : plan.acrossStages)
    for (ir::NodeId r : acrossReduces(stage(i))) {
      if (inSlots(r)) continue;
      ir::Dim kept = ir::reduceGeometry(g_, node(r)).kept;
      if (!kept.isStatic()) continue;
      int64_t bytes = partialBytes(node(r));
      if (bytes <= std::min(kMaxSharedPartialsBytes, stagingRoom()) && keepsGridResident(bytes))
        plan.sharedPartials.push_back({r, allocate(bytes)});
    }
  const Group& first = groupOf(phase.front());
  if (plan.slots) {
    const SlotPlan& sp = *plan.slots;
    int64_t rowLength = 1; // a row's elements: what one broadcast over the rows can hold
    for (size_t d = sp.rowDims; d < sp.loop.size(); ++d)
      rowLength *= sp.loop[d].size();
    // Every group of the phase: an across-tiles stage over the slots' loop broadcasts the
    // column sums of earlier phases too (cluster_200 read each from global memory per element).
    std::vector<int> groups = phaseGroups(phase);
    std::erase(groups, sp.group);
    groups.insert(groups.begin(), sp.group);
    plan.staged = stageBroadcasts(s, groups, rowLength, false, &plan.stagedOffset);
  } else if (std::holds_alternative<ElementwiseMapping>(first.mapping) &&
             s.kind != TileSpace::Kind::Columns && manyTilesPerBlock(s)) {
    // A flat elementwise phase whose blocks handle several tiles (bias + GELU over [16384,
    // 3072]): its small broadcast inputs are read once per block, not once per element.
    plan.staged = stageBroadcasts(s, {stage(phase.front()).group},
                                  std::numeric_limits<int64_t>::max(), false, &plan.stagedOffset);
  } else if (s.kind == TileSpace::Kind::Rows) {
    // Any other phase over rows: row vectors every row reads, where a block reads each twice.
    plan.staged = stageBroadcasts(s, phaseGroups(phase), std::numeric_limits<int64_t>::max(), true,
                                  &plan.stagedOffset);
  }
  if (plan.slots) planTileSlices(s, *plan.slots, plan);
  plan.stagingBytes = phaseStaged_;
  for (size_t i : phase)
    written_.insert(stage(i).materialized.begin(), stage(i).materialized.end());
  k_.phases.push_back(std::move(plan));
}

TileSpace PhasePlanner::spaceOf(const Phase& phase) const {
  TileSpace s;
  for (size_t i : phase) {
    const Group& g = groupOf(i);
    if (const auto* r = std::get_if<RowReduceMapping>(&g.mapping)) {
      if (node(g.dominant).kind != ir::OpKind::Reduce)
        fail(g.dominant, "has a row-reduce mapping but is not a reduce");
      s.kind = TileSpace::Kind::Rows;
      s.units = ir::reduceGeometry(g_, node(g.dominant)).kept;
      s.unitsPerTile = std::max(1, r->rowsPerBlock);
      s.split = std::max(1, r->splitFactor);
      s.clusterParts = std::max(1, r->clusterBlocks);
      s.anchor = g.dominant;
      break;
    }
    if (const auto* c = std::get_if<ColumnReduceMapping>(&g.mapping)) {
      if (node(g.dominant).kind != ir::OpKind::Reduce)
        fail(g.dominant, "has a column-reduce mapping but is not a reduce");
      s.kind = TileSpace::Kind::Columns;
      s.units = ir::reduceGeometry(g_, node(g.dominant)).kept;
      s.unitsPerTile = c->tileColumns;
      s.split = std::max(1, c->splitFactor);
      s.anchor = g.dominant;
      break;
    }
  }
  const Group& first = groupOf(phase.front());
  if (s.anchor < 0) {
    const auto& e = std::get<ElementwiseMapping>(first.mapping);
    s.kind = TileSpace::Kind::Flat;
    s.units = ir::numElements(node(first.dominant).type.shape);
    s.unitsPerTile = int64_t(k_.launch.blockSize) * std::max(1, e.elementsPerThread);
    s.anchor = first.dominant;
  }
  // A planner schedule (Group::rows / rowsPerTile) fixes the phase's tiles: its first group's.
  if (!first.loopShape.empty()) {
    s.units = first.rows;
    s.unitsPerTile = std::max<int64_t>(1, first.rowsPerTile);
    if (s.kind == TileSpace::Kind::Flat) s.kind = TileSpace::Kind::Rows;
  }
  const auto& m0 = stage(phase.front()).materialized;
  bool splitHere = first.dominant == s.anchor &&
                   std::find(m0.begin(), m0.end(), s.anchor) != m0.end() &&
                   !written_.count(s.anchor);
  if (!splitHere) s.split = 1;
  if (s.split > 1 && phase.size() > 1)
    fail(s.anchor, "a split reduce must be the only stage of its phase");
  return s;
}

bool PhasePlanner::isAcrossTiles(const Group& g, const Stage& st) const {
  if (!g.acrossTiles) return false;
  for (ir::NodeId r : acrossReduces(st))
    if (!written_.count(r)) return true;
  return false;
}

std::vector<ir::NodeId> PhasePlanner::acrossReduces(const Stage& st) const {
  std::vector<ir::NodeId> out;
  for (ir::NodeId v : st.materialized)
    if (node(v).kind == ir::OpKind::Reduce && placement(v).partialsBuffer >= 0) out.push_back(v);
  return out;
}

bool PhasePlanner::accumulatesInSlots(ir::NodeId reduce, const SlotPlan& sp) const {
  // The reduce sums the slots' rows away, keeping the row's elements: a thread's slots are the
  // same row elements (columns) in every tile, so its accumulators are per slot.
  const ir::Node& r = node(reduce);
  if (node(r.operands[0]).type.shape != sp.loop) return false;
  ir::ReduceGeometry geo = ir::reduceGeometry(g_, r);
  if (geo.reducedAxes.size() != sp.rowDims) return false;
  for (size_t i = 0; i < geo.reducedAxes.size(); ++i)
    if (geo.reducedAxes[i] != int64_t(i)) return false;
  bool warpPerRow = sp.mapping.kind == RowReduceMapping::Kind::WarpPerRow;
  int rounds = warpPerRow ? k_.launch.blockSize / std::max(1, sp.mapping.threadsPerRow) : 1;
  return rounds <= kMaxCombineRounds && geo.kept.isStatic();
}

int PhasePlanner::keptRegisters(const Phase& phase, SlotPlan& sp,
                                const std::vector<ir::NodeId>& candidates,
                                const std::function<int(ir::NodeId)>& cost, int budget) const {
  // A kept value holds its registers from the stage that first generates it to the last stage
  // that reads it: a chain of softmaxes keeps each softmax's values for two or three stages,
  // not for the whole phase. The stages' reads follow the emitter: each slot stage generates
  // its loop values and its reduces' operands at the slots, reading kept values and memory
  // and regenerating everything else down to them. A candidate that does not fit where it is
  // live is recomputed instead, which makes its operands live where it is read: the choice is
  // then made again with it recomputed.
  std::vector<std::vector<ir::NodeId>> roots(phase.size());
  for (size_t i = 0; i < phase.size(); ++i) {
    const Stage& st = stage(phase[i]);
    bool slotGroup = st.group == sp.group;
    for (ir::NodeId m : st.materialized) {
      const ir::Node& n = node(m);
      bool across = std::find(sp.across.begin(), sp.across.end(), m) != sp.across.end();
      if (n.kind == ir::OpKind::Reduce && (slotGroup || across) &&
          node(n.operands[0]).type.shape == sp.loop)
        roots[i].push_back(n.operands[0]);
      else if (slotGroup && n.type.shape == sp.loop)
        roots[i].push_back(m);
    }
  }
  const std::set<ir::NodeId> candidateSet(candidates.begin(), candidates.end());
  std::set<ir::NodeId> rejected;
  for (;;) {
    std::map<ir::NodeId, std::pair<int, int>> live; // candidate → first and last stage
    std::set<ir::NodeId> generated;
    auto isCandidate = [&](ir::NodeId v) { return candidateSet.count(v) && !rejected.count(v); };
    for (size_t i = 0; i < phase.size(); ++i) {
      int at = int(i);
      std::set<ir::NodeId> seen;
      std::vector<ir::NodeId> work(roots[i].rbegin(), roots[i].rend());
      while (!work.empty()) {
        ir::NodeId v = work.back();
        work.pop_back();
        if (!seen.insert(v).second) continue;
        auto p = k_.placement.find(v);
        // Read from memory: inputs, and values earlier stages stored (a candidate stored by
        // this phase's group is computed where it is first generated).
        bool loaded = p == k_.placement.end() || p->second.storage == Storage::Input ||
                      (p->second.storage != Storage::Register && written_.count(v));
        if (isCandidate(v)) {
          live.try_emplace(v, at, at).first->second.second = at;
          if (!generated.insert(v).second || loaded) continue; // kept: read, not regenerated
        } else if (loaded || p->second.storage != Storage::Register ||
                   node(v).kind == ir::OpKind::Reduce) {
          continue;
        }
        for (ir::NodeId o : node(v).operands)
          work.push_back(o);
      }
    }
    std::vector<int> load(phase.size(), 0);
    ir::NodeId misfit = -1;
    std::vector<ir::NodeId> kept;
    for (ir::NodeId v : candidates) {
      if (rejected.count(v)) continue;
      // A candidate these reads do not reach is not read by the phase's slot stages: kept, it
      // would only take registers from those that are (cluster_200's later phases held x).
      auto it = live.find(v);
      if (it == live.end()) continue;
      auto [first, last] = it->second;
      int most = *std::max_element(load.begin() + first, load.begin() + last + 1);
      if (most + cost(v) > budget) {
        misfit = v;
        break;
      }
      for (int i = first; i <= last; ++i)
        load[size_t(i)] += cost(v);
      kept.push_back(v);
    }
    if (misfit < 0) {
      sp.reused.insert(kept.begin(), kept.end());
      return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
    }
    rejected.insert(misfit);
  }
}

std::optional<SlotPlan> PhasePlanner::slotPlanOf(const TileSpace& s, const Phase& phase) const {
  if (s.kind != TileSpace::Kind::Rows || s.split != 1) return std::nullopt;
  // The slot pass accumulates a reduce of a row group over its loop's rows: only in a phase
  // that materialises one (a phase may run in the group's tiles before its reduces can be
  // computed, e.g. while they wait behind a grid barrier for a value another group produces).
  // The group's tiles must be the phase's.
  auto slotReduce = [&](const Group& g, ir::NodeId v) {
    const ir::Node& r = node(v);
    return r.kind == ir::OpKind::Reduce && !written_.count(v) &&
           node(r.operands[0]).type.shape == g.loopShape &&
           ir::reduceGeometry(g_, r).keptAxes == g.tileDims;
  };
  int gi = -1;
  for (size_t i : phase) {
    const Group& g = groupOf(i);
    if (gi >= 0 || !std::holds_alternative<RowReduceMapping>(g.mapping) || g.acrossTiles ||
        g.loopShape.empty() || !(g.rows == s.units) || g.rowsPerTile != s.unitsPerTile)
      continue;
    for (ir::NodeId v : stage(i).materialized)
      if (slotReduce(g, v)) gi = stage(i).group;
  }
  if (gi < 0) return std::nullopt;
  const Group& g = k_.groups.at(size_t(gi));
  const auto& m = std::get<RowReduceMapping>(g.mapping);
  for (size_t i = 0; i < g.tileDims.size(); ++i)
    if (g.tileDims[i] != int64_t(i)) return std::nullopt; // rows must lead the loop
  // Every row of a tile runs the slots, those past the rows too (each loads the clamped last
  // row again; streamed, they load nothing): where most of a tile's rows are past them (a sum
  // of 512 row values in a tile of 32 warp-per-row rows: 31 rows loaded again to save one
  // re-read), the slots cost more loads than they save.
  if (g.rows.isStatic() && 2 * g.rows.size() < g.rowsPerTile) return std::nullopt;
  int steps = rowSlotSteps(g.loopShape, g.tileDims.size(), m, k_.launch.blockSize,
                           s.unitsPerTile);
  if (steps == 0) return std::nullopt;

  SlotPlan sp;
  sp.group = gi;
  sp.loop = g.loopShape;
  sp.rowDims = g.tileDims.size();
  sp.mapping = m;
  sp.steps = steps;
  // Registers for reused values and across accumulators: what the launch allows beyond
  // kAssumedRegisters. A cooperative launch sized its grid by the plan's bound (which counted
  // them: slotRegisters); otherwise the most one thread of a block can have.
  int cap = k_.launch.cooperative ? k_.launch.maxRegisters : registersPerThreadCap();
  int budget = cap - kAssumedRegisters;
  if (k_.launch.cooperative) budget = std::min(budget, slotRegisters(g_, k_));
  int64_t elements = int64_t(steps) * std::max(1, m.vectorWidth);
  auto cost = [&](ir::NodeId v) {
    return int(elements * ((ir::dtypeBytes(node(v).type.dtype) + 3) / 4));
  };
  for (size_t i : phase) {
    const Group& other = groupOf(i);
    if (!other.acrossTiles || other.follows != gi || !isAcrossTiles(other, stage(i))) continue;
    for (ir::NodeId r : acrossReduces(stage(i))) {
      if (!accumulatesInSlots(r, sp) || cost(r) > budget) continue;
      int64_t bytes = sp.combineBytes + partialBytes(node(r));
      // The block's combine area must not cost the grid its planned blocks per SM.
      if (!keepsGridResident(bytes) || bytes > stagingRoom()) continue;
      sp.across.push_back(r);
      sp.combineOffsets.push_back(sp.combineBytes);
      sp.combineBytes = bytes;
      budget -= cost(r);
      sp.registers += cost(r);
    }
  }
  // Candidates for registers, in priority order: memory reads first (inputs read by several
  // stages of the group, then values the group stores over its loop and reads back in a later
  // stage), then recomputed ops. Constants are folded by LLVM: no registers.
  std::vector<ir::NodeId> candidates;
  auto take = [&](ir::NodeId v) {
    if (node(v).kind == ir::OpKind::Constant) {
      sp.reused.insert(v);
      return;
    }
    if (cost(v) > budget ||
        std::find(candidates.begin(), candidates.end(), v) != candidates.end())
      return;
    candidates.push_back(v);
  };
  std::set<ir::NodeId> groupOps(g.ops.begin(), g.ops.end());
  for (const auto& [v, p] : k_.placement)
    if (p.registerReuse && p.storage == Storage::Input && node(v).type.shape == sp.loop) take(v);
  Phase groupStages;
  for (size_t i : phase)
    if (stage(i).group == gi) groupStages.push_back(i);
  for (size_t i = 0; i + 1 < groupStages.size(); ++i)
    for (ir::NodeId v : stage(groupStages[i]).materialized)
      if (node(v).type.shape == sp.loop) take(v);
  // Values earlier phases stored over the loop (kept in registers when several stages read
  // them: a value stored against recompute is read back by every stage that uses it), in
  // memory or resident in shared memory.
  for (const auto& [v, p] : k_.placement)
    if ((p.storage == Storage::Global || p.storage == Storage::Output || p.resident) &&
        written_.count(v) && p.partialsBuffer < 0 && node(v).type.shape == sp.loop)
      take(v);
  for (const auto& [v, p] : k_.placement)
    if (p.registerReuse && p.storage == Storage::Register && groupOps.count(v) &&
        node(v).type.shape == sp.loop)
      take(v);
  int peak = keptRegisters(phase, sp, candidates, cost, budget);
  if (peak > 0) sp.registers += peak;
  bool any = std::any_of(sp.reused.begin(), sp.reused.end(),
                         [&](ir::NodeId v) { return node(v).kind != ir::OpKind::Constant; });
  // A row shared by a cluster runs as slots even with nothing to keep: each block reduces its
  // part (codegen combines the parts only there).
  if (!any && sp.across.empty() && m.clusterBlocks <= 1) return std::nullopt;
  return sp;
}

std::vector<StagedInput> PhasePlanner::stageBroadcasts(const TileSpace& s,
                                                       const std::vector<int>& groups,
                                                       int64_t maxElements, bool outerOnly,
                                                       int64_t* arrayOffset) {
  // A small input the phase's groups broadcast over their rows (gamma, beta) is read by every
  // row's threads: when a block handles several rows (in one tile or over several tiles), it
  // copies the input into shared memory once, before its tiles, and the phase reads it there.
  // Values an earlier phase left in global scratch (Figure 7's power.1 and reduce.2) are staged
  // the same way. In cooperative kernels only what keeps their grid's blocks per SM (the plan
  // sized it). With outerOnly, only sources that the broadcast repeats along its result's
  // outermost dim (a row vector over many rows, not a per-row value); so are those of every
  // group after the first.
  const LaunchPlan& l = k_.launch;
  // One row per tile and at most one tile per block: every read is already the only one.
  bool oneRowPerBlock = s.unitsPerTile < 2 && l.maxBlocks > 0 && upperBound(l.tiles) <= l.maxBlocks;
  if (oneRowPerBlock) return {};
  // The inputs the groups broadcast, also through converts and reshapes (an f16 gamma is
  // converted to f32 before its broadcast).
  std::map<ir::NodeId, int64_t> broadcast; // source → its elements' reads per block (most)
  for (int group : groups)
    for (ir::NodeId op : k_.groups.at(size_t(group)).ops) {
      const ir::Node& bc = node(op);
      if (bc.kind != ir::OpKind::BroadcastInDim || !phaseReach_.count(op)) continue;
      const auto& dims = bc.attr<ir::BroadcastAttrs>().dims;
      bool outer = group != groups.front() || outerOnly; // others' row vectors only
      if (outer && (bc.type.shape.size() < 2 ||
                    std::find(dims.begin(), dims.end(), 0) != dims.end()))
        continue;
      ir::NodeId source = bc.operands[0];
      while (node(source).kind == ir::OpKind::Convert || node(source).kind == ir::OpKind::Reshape)
        source = node(source).operands[0];
      int64_t& reads = broadcast[source];
      reads = std::max(reads, elementsPerBlock(s, bc.type.shape));
    }
  // Small values the kernel computes from its inputs alone (Figure 7's power.1: no dominant,
  // fusion/graph_queries.h) are staged the same way, computed by each block instead of copied.
  // Only row vectors (fusion/graph_queries.h, isBroadcastAlongOuterDim): a per-row value is
  // computed where its rows are.
  std::vector<bool> inKernel(g_.size(), false);
  std::set<ir::NodeId> perRow;
  for (ir::NodeId op : k_.ops) {
    inKernel[size_t(op)] = true;
    const ir::Node& bc = node(op);
    if (bc.kind != ir::OpKind::BroadcastInDim || !variesAlongOuterDim(g_, bc)) continue;
    for (ir::NodeId v = bc.operands[0];; v = node(v).operands[0]) {
      perRow.insert(v);
      if (node(v).kind != ir::OpKind::Reshape && node(v).kind != ir::OpKind::BroadcastInDim) break;
    }
  }
  int64_t room = std::min(kMaxStagedBytes, stagingRoom());
  std::vector<StagedInput> chosen;
  int64_t bytes = 0;
  for (const auto& [v, p] : k_.placement) {
    ir::Dim n = ir::numElements(node(v).type.shape);
    bool computed = p.storage == Storage::Register && broadcast.count(v) && !perRow.count(v) &&
                    blockComputable(g_, inKernel, v) == BlockComputable::PerBlock;
    bool readable = computed || p.storage == Storage::Input ||
                    (p.storage == Storage::Global && written_.count(v));
    if (!readable || !broadcast.count(v) || !n.isStatic() || n.size() > maxElements) continue;
    if (outerOnly && 2 * n.size() > broadcast[v]) continue; // a block reads it less than twice
    int64_t size = align16(n.size() * ir::dtypeBytes(node(v).type.dtype));
    if (bytes + size > room || !keepsGridResident(bytes + size)) continue;
    StagedInput in{v, bytes, stagedCopyVector(node(v).type.dtype, n.size(), k_.launch.blockSize)};
    if (computed) in.vector = 1, in.computed = true;
    chosen.push_back(in);
    bytes += size;
  }
  if (!chosen.empty()) *arrayOffset = allocate(bytes);
  return chosen;
}

void PhasePlanner::planTileSlices(const TileSpace& s, const SlotPlan& sp, PhasePlan& plan) {
  if (s.unitsPerTile < 2) return;
  const Group& g = k_.groups.at(size_t(sp.group));
  int64_t room = std::min(kMaxSliceBytes, stagingRoom());
  int64_t bytes = 0;
  std::vector<TileSlice> chosen;
  for (ir::NodeId op : g.ops) {
    const ir::Node& bc = node(op);
    if (bc.kind != ir::OpKind::BroadcastInDim || bc.type.shape != sp.loop) continue;
    ir::NodeId v = bc.operands[0];
    auto p = k_.placement.find(v);
    if (p == k_.placement.end() || p->second.storage != Storage::Input) continue;
    if (std::any_of(chosen.begin(), chosen.end(), [&](const TileSlice& t) { return t.input == v; }))
      continue;
    // A slice holds the tile's rows only; a gather reads its operand anywhere.
    if (std::any_of(k_.ops.begin(), k_.ops.end(),
                    [&](ir::NodeId u) { return readsAtDataPositions(node(u), v); }))
      continue;
    const ir::Shape& in = node(v).type.shape;
    const auto& dims = bc.attr<ir::BroadcastAttrs>().dims;
    TileSlice t;
    t.input = v;
    bool rowDependent = false, ok = true;
    for (size_t i = 0; i < in.size(); ++i) {
      bool stretched = in[i].isOne();
      size_t d = size_t(dims[i]);
      t.rowDimOf.push_back(!stretched && d < sp.rowDims ? int64_t(d) : -1);
      if (stretched) continue;
      if (d >= sp.rowDims) {
        t.sliceDims.push_back(i);
        t.shape.push_back(in[i]);
        ok = ok && in[i].isStatic();
        continue;
      }
      // Row dim d is constant over an aligned tile when the rows after it span whole tiles.
      rowDependent = true;
      int64_t span = 1;
      for (size_t e = d + 1; e < sp.rowDims; ++e)
        span = sp.loop[e].isStatic() ? span * sp.loop[e].size() : -1;
      ok = ok && span > 0 && span % s.unitsPerTile == 0;
    }
    if (!ok || !rowDependent || t.shape.empty()) continue;
    int64_t size = align16(ir::numElements(t.shape).size() * ir::dtypeBytes(node(v).type.dtype));
    if (bytes + size > room || !keepsGridResident(bytes + size)) continue;
    t.offset = bytes;
    chosen.push_back(t);
    bytes += size;
  }
  if (chosen.empty()) return;
  plan.slicesOffset = allocate(bytes);
  plan.slices = std::move(chosen);
  // Contiguous runs of tiles keep a block on one slice for many tiles. The tile order is free
  // where nothing else reads it: split rows and cluster parts are found from the tile's index
  // modulo the grid, resident values from its ordinal, and across-tiles partials would change
  // their summation order.
  plan.contiguousTiles = s.split == 1 && s.clusterParts == 1 && k_.residentTiles == 0 &&
                         plan.acrossStages.empty() && plan.sharedPartials.empty() &&
                         sp.across.empty();
}

} // namespace

void planPhases(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                const ir::SymbolRanges& ranges) {
  PhasePlanner(g, spec, kernel, ranges).run();
}

void planPhases(FusionPlan& plan) {
  for (Step& step : plan.steps)
    if (auto* k = std::get_if<KernelPlan>(&step))
      planPhases(plan.graph, plan.device, *k, plan.symbolRanges);
}

int rowSlotSteps(const ir::Shape& loop, size_t rowDims, const RowReduceMapping& m, int blockSize,
                 int64_t rowsPerTile) {
  if (m.splitFactor > 1 || rowDims >= loop.size()) return 0;
  int tpr = m.rowThreads(blockSize);
  int vector = std::max(1, m.vectorWidth);
  if (tpr < 1 || blockSize % tpr != 0 || (vector & (vector - 1)) != 0) return 0;
  if (rowsPerTile > blockSize / tpr) return 0; // more than one pass per tile
  int64_t length = 1;
  for (size_t d = rowDims; d < loop.size(); ++d) {
    if (!loop[d].isStatic()) return 0;
    length *= loop[d].size();
  }
  int64_t steps = m.slotSteps(length, blockSize);
  if (length % vector != 0 || steps > kMaxRowSlotSteps) return 0;
  return int(steps);
}

int stagedCopyVector(ir::DType t, int64_t elements, int blockSize) {
  constexpr int kCopyBytes = 16;
  const int vector = std::max(1, kCopyBytes / int(ir::dtypeBytes(t)));
  const double saved = double(elements) * (1.0 - 1.0 / vector) / 32; // per warp of 32 copies
  return vector > 1 && saved > double(blockSize) / 32 ? vector : 1;
}

} // namespace weft::fusion
