#include "fusion/resident_values.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "fusion/launch_config.h"
#include "fusion/phase_planner.h"

namespace weft::fusion {
namespace {

constexpr int64_t kAlign = 16;

int64_t align16(int64_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/// A Global value or an input that could stay on chip: the phase that writes it (an input's
/// first reader, which loads it), the last that reads it, and what it would take and save.
struct Candidate {
  ir::NodeId value = -1;
  int firstPhase = 0, lastPhase = 0;
  int64_t bytes = 0; // per block: residentTiles tiles, 16-byte aligned
  int64_t saved = 0; // global bytes: its store and one load per later phase that reads it
  int64_t offset = 0;
};

/// The phase of each stage, as the phase planner cut them.
std::vector<int> phaseOfStages(const KernelPlan& k) {
  std::vector<int> phase(k.stages.size(), 0);
  for (size_t p = 0; p < k.phases.size(); ++p)
    for (size_t i = 0; i < k.phases[p].stageCount; ++i)
      phase[k.phases[p].firstStage + i] = static_cast<int>(p);
  return phase;
}

/// Per phase, the values in memory (not registers) its stages read: from each stage's
/// materialised values down through the ops it computes in registers.
std::vector<std::set<ir::NodeId>> memoryReadsByPhase(const ir::Graph& g, const KernelPlan& k,
                                                     const std::vector<int>& phaseOf) {
  int phases = phaseOf.empty() ? 0 : phaseOf.back() + 1;
  std::vector<std::set<ir::NodeId>> reads(static_cast<size_t>(phases));
  for (size_t i = 0; i < k.stages.size(); ++i) {
    std::set<ir::NodeId>& out = reads[static_cast<size_t>(phaseOf[i])];
    std::set<ir::NodeId> seen;
    std::vector<ir::NodeId> work;
    for (ir::NodeId v : k.stages[i].materialized)
      work.insert(work.end(), g.node(v).operands.begin(), g.node(v).operands.end());
    while (!work.empty()) {
      ir::NodeId x = work.back();
      work.pop_back();
      if (!seen.insert(x).second) continue;
      auto p = k.placement.find(x);
      if (p == k.placement.end()) continue; // a constant folded where it is read
      if (p->second.storage != Storage::Register) {
        out.insert(x);
        continue;
      }
      work.insert(work.end(), g.node(x).operands.begin(), g.node(x).operands.end());
    }
  }
  return reads;
}

/// First fit: the lowest offset from `base` where `c` overlaps no placed value that is live in
/// one of its phases.
int64_t firstFit(const Candidate& c, const std::vector<Candidate>& placed, int64_t base) {
  std::vector<std::pair<int64_t, int64_t>> busy; // [offset, end) of values live with c
  for (const Candidate& p : placed)
    if (p.firstPhase <= c.lastPhase && c.firstPhase <= p.lastPhase)
      busy.push_back({p.offset, p.offset + p.bytes});
  std::sort(busy.begin(), busy.end());
  int64_t at = base;
  for (const auto& [from, to] : busy) {
    if (at + c.bytes <= from) break;
    at = std::max(at, to);
  }
  return at;
}

} // namespace

void planResidentValues(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& k,
                        const ir::SymbolRanges& ranges) {
  LaunchPlan& launch = k.launch;
  bool any = std::any_of(k.placement.begin(), k.placement.end(), [](const auto& p) {
    return p.second.readAtOwnRows &&
           (p.second.storage == Storage::Global || p.second.storage == Storage::Input);
  });
  // A phase handed to the last block (Barrier::LastBlock) runs in whichever block counts out
  // last, which holds its own tiles' values, not the ones the phase would read.
  if (!any || !launch.cooperative || launch.maxBlocks <= 0 || k.handsOffToLastBlock()) return;

  // The phases as codegen will cut them, and the staging they would take without resident values.
  planPhases(g, spec, k, ranges);
  std::vector<int> phaseOf = phaseOfStages(k);
  std::vector<std::set<ir::NodeId>> reads = memoryReadsByPhase(g, k, phaseOf);
  std::vector<int> producer(g.size(), -1);
  for (size_t i = 0; i < k.stages.size(); ++i)
    for (ir::NodeId v : k.stages[i].materialized)
      producer[static_cast<size_t>(v)] = phaseOf[i];

  // Candidates in the tile space of the value that saves the most, each block's tiles bounded.
  // The grid is min(launch.tiles, maxBlocks) (runtime/shape_binding.cc): launch.tiles counts the
  // first stage's group only, which may have fewer tiles than the resident space (random graph
  // 411: 1 block for 7 tiles). Symbolic, it may be as small as one block.
  constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();
  int64_t grid =
      launch.tiles.isStatic() ? std::clamp<int64_t>(launch.tiles.size(), 1, launch.maxBlocks) : 1;
  std::vector<Candidate> candidates;
  TileSpace space;
  int64_t tilesPerBlock = 0;
  for (const auto& [v, p] : k.placement) {
    // A stored value from the phase that writes it; an input from the first phase that reads it
    // (which loads it once for the later ones).
    bool input = p.storage == Storage::Input;
    if (!p.readAtOwnRows || p.partialsBuffer >= 0 || (p.storage != Storage::Global && !input))
      continue;
    int first = producer[static_cast<size_t>(v)];
    if (input)
      for (size_t q = 0; q < reads.size() && first < 0; ++q)
        if (reads[q].count(v)) first = static_cast<int>(q);
    if (first < 0) continue;
    const TileSpace& s = k.phases[static_cast<size_t>(first)].space;
    Candidate c;
    c.value = v, c.firstPhase = c.lastPhase = first;
    int readers = 0; // phases after the first that read it
    bool sameTiles = s.split == 1 && s.kind != TileSpace::Kind::Columns;
    for (size_t q = static_cast<size_t>(first) + 1; q < reads.size(); ++q) {
      if (!reads[q].count(v)) continue;
      sameTiles = sameTiles && k.phases[q].space.sameTiles(s);
      c.lastPhase = static_cast<int>(q);
      ++readers;
    }
    ir::Dim elements = ir::numElements(g.node(v).type.shape);
    std::optional<ir::Dim> perUnit = elements.dividedBy(s.units);
    int64_t units = ir::upperBoundOr(s.units, ranges, kUnknown);
    if (!sameTiles || readers == 0 || !perUnit || !perUnit->isStatic() || units == kUnknown ||
        !elements.isStatic())
      continue;
    int64_t tiles = (units + s.unitsPerTile - 1) / s.unitsPerTile;
    int64_t perBlock = (tiles + grid - 1) / grid;
    int64_t dtype = ir::dtypeBytes(g.node(v).type.dtype);
    c.bytes = align16(perBlock * s.unitsPerTile * perUnit->size() * dtype);
    c.saved = elements.size() * dtype * (input ? readers : 1 + readers);
    if (candidates.empty() || c.saved > candidates.front().saved) {
      // The kernel's resident space is the best value's: keep candidates in it only.
      std::erase_if(candidates, [&](const Candidate& o) {
        return !k.phases[static_cast<size_t>(o.firstPhase)].space.sameTiles(s);
      });
      space = s, tilesPerBlock = perBlock;
      candidates.insert(candidates.begin(), c);
    } else if (s.sameTiles(space)) {
      candidates.push_back(c);
    }
  }
  if (candidates.empty()) {
    k.phases.clear();
    return;
  }

  // The room: shared memory per block that still holds the planned blocks per SM.
  int64_t need = (launch.maxBlocks + spec.smCount - 1) / spec.smCount;
  int64_t base = align16(k.sharedValuesEnd()); // where resident values may start
  int64_t inUse = base + k.reduceScratchBytes + k.stagingBytes;
  int64_t cap = std::min(spec.sharedMemoryPerBlock, spec.sharedMemoryPerSM / need);
  while (cap > inUse && blocksPerSM(spec, launch.blockSize, launch.maxRegisters, cap) < need)
    cap -= kAlign;
  int64_t room = cap - inUse;

  // Most bytes saved per byte of shared memory first; first fit over their live phases.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return double(a.saved) / double(a.bytes) > double(b.saved) / double(b.bytes);
  });
  std::vector<Candidate> chosen;
  int64_t end = base;
  for (Candidate c : candidates) {
    c.offset = firstFit(c, chosen, base);
    if (c.offset + c.bytes - base > room) continue;
    end = std::max(end, c.offset + c.bytes);
    chosen.push_back(c);
  }
  k.phases.clear(); // planPhases plans them again with the resident values' room taken
  if (chosen.empty()) return;
  for (const Candidate& c : chosen) {
    ValuePlacement& p = k.placement[c.value];
    if (p.storage == Storage::Global) { // an input keeps its buffer: its first phase loads it
      p.storage = Storage::Shared;
      p.buffer = -1;
    }
    p.sharedOffset = c.offset;
    p.sharedBytes = c.bytes;
    p.resident = ValuePlacement::ResidentDecision{c.firstPhase, c.lastPhase, c.saved};
  }
  k.residentTiles = tilesPerBlock;
  k.residentSpace = space;
  launch.sharedBytes = std::max(launch.sharedBytes, end);
}

} // namespace weft::fusion
