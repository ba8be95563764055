#include "fusion/stitching_scheme.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "fusion/cost_model.h"
#include "fusion/graph_queries.h"
#include "fusion/launch_config.h"
#include "fusion/schedule.h"

namespace weft::fusion {
namespace {

constexpr int64_t kNotShareable = int64_t(1) << 50;
constexpr int64_t kSharedAlign = 16;
constexpr int64_t kMaxReusedPerThread = 64; // registers one reused value may take per thread

bool tileCompatible(const Group& a, const Group& b) {
  if (&a == &b) return true;
  // A row-reduce tile and a column-reduce tile of equal size cover the same rows, but one
  // tile loop cannot serve both kinds of reduction (codegen's emitters need one kind a phase).
  bool aReduce = !std::holds_alternative<ElementwiseMapping>(a.mapping);
  bool bReduce = !std::holds_alternative<ElementwiseMapping>(b.mapping);
  if (aReduce && bReduce && a.mapping.index() != b.mapping.index()) return false;
  return splitFactor(a.mapping) == 1 && splitFactor(b.mapping) == 1 &&
         a.rowsPerTile == b.rowsPerTile &&
         rowShapeOf(a.loopShape, a.tileDims) == rowShapeOf(b.loopShape, b.tileDims);
}

/// A materialised value read by a stage, and whether the reader asks for it at its own loop
/// rows (aligned) and in which space of the reader's group.
struct Read {
  ir::NodeId value;
  OpSpace frame;
  bool aligned;
  bool local = false; // block-local (Planner::local), computed once after the walk
};
/// A local op or input a stage generates or loads.
struct Touch {
  ir::NodeId value;
  OpSpace frame;
  bool aligned;
};

class Planner {
  struct StageInfo {
    int group;
    int level;
    std::vector<ir::NodeId> values;
  };

public:
  Planner(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& k,
          const ir::SymbolRanges& ranges)
      : g_(g), spec_(spec), k_(k), ranges_(ranges),
        instructionBytes_(dramBytesPerThreadInstruction(costModel(spec))) {
    for (ir::NodeId op : k.ops) {
      inKernel_.insert(op);
      local_.emplace(op, local_.size());
    }
    for (size_t gi = 0; gi < k.groups.size(); ++gi) {
      for (ir::NodeId op : k.groups[gi].ops)
        groupOf_[op] = static_cast<int>(gi);
      materialised_.insert(k.groups[gi].dominant);
      for (ir::NodeId s : k.groups[gi].subDominants)
        materialised_.insert(s);
    }
    for (ir::NodeId o : k.outputs)
      materialised_.insert(o);
    // A candidate nothing reads (dead code the passes did not remove) is not computed at all.
    std::set<ir::NodeId> read;
    for (ir::NodeId op : k.ops)
      for (ir::NodeId o : g.node(op).operands)
        read.insert(o);
    for (auto it = materialised_.begin(); it != materialised_.end();)
      it = read.count(*it) || k.outputs.end() != std::find(k.outputs.begin(), k.outputs.end(), *it)
               ? std::next(it)
               : materialised_.erase(it);
    outputs_.insert(k.outputs.begin(), k.outputs.end());
  }

  void run() {
    // A local op that stages of several phases regenerate is computed again behind every
    // grid barrier, from its producers down to the nearest materialised values: a chain of
    // split softmaxes (one phase per reduce) regenerated the whole chain from x in each phase,
    // code quadratic in its length. An op whose regenerated producers would exceed
    // kMaxRegeneratedOps is materialised instead (read back from global memory), and the
    // kernel planned again.
    for (;;) {
      planOnce();
      if (!materialiseRegenerated()) break;
    }
    for (const auto& [v, d] : decisions_)
      k_.placement[v].stored = d;
  }

private:
  static constexpr size_t kMaxRegeneratedOps = 32;

  /// Local ops (not sources) that `v` is computed from, up to materialised values and inputs,
  /// counted up to kMaxRegeneratedOps + 1.
  size_t regeneratedOps(ir::NodeId v) const {
    std::set<ir::NodeId> seen{v};
    std::vector<ir::NodeId> work{v};
    while (!work.empty() && seen.size() <= kMaxRegeneratedOps) {
      ir::NodeId x = work.back();
      work.pop_back();
      for (ir::NodeId o : g_.node(x).operands)
        if (inKernel_.count(o) && !materialised_.count(o) && !isSource(g_.node(o)) &&
            seen.insert(o).second)
          work.push_back(o);
    }
    return seen.size();
  }

  /// Materialises, in topological order, every local op that stages of two or more phases
  /// regenerate and whose regenerated producers exceed kMaxRegeneratedOps (counting the ops
  /// materialised before it as boundaries); when none does, the local ops that are cheaper to
  /// store once and read back than to regenerate in every phase that uses them (storeCheaper).
  /// Whether it added any.
  bool materialiseRegenerated() {
    std::map<ir::NodeId, std::set<int>> phasesOf;
    for (size_t s = 0; s < stages_.size(); ++s)
      for (ir::NodeId v : stages_[s].values)
        for (const Touch& t : touches_.at(v))
          if (inKernel_.count(t.value) && !materialised_.count(t.value))
            phasesOf[t.value].insert(phaseOfStage_[s]);
    bool added = false;
    for (const auto& [v, phases] : phasesOf)
      if (phases.size() > 1 && !isSource(g_.node(v)) && groupOf_.count(v) &&
          regeneratedOps(v) > kMaxRegeneratedOps) {
        materialised_.insert(v);
        decisions_[v].phases = static_cast<int>(phases.size());
        decisions_[v].tooManyOps = true;
        added = true;
      }
    if (added) return true;
    // A split reduce's stage is alone in its phase: a value it reads, once stored, would take a
    // pass and a grid barrier of its own, which its reloads do not pay for here.
    std::set<ir::NodeId> readBySplit;
    for (size_t s = 0; s < stages_.size(); ++s)
      if (splitStage(s))
        for (ir::NodeId v : stages_[s].values)
          for (const Touch& t : touches_.at(v))
            readBySplit.insert(t.value);
    for (ir::NodeId v : readBySplit)
      phasesOf.erase(v);
    return storeCheaper(phasesOf);
  }

  /// What regenerating a local value costs per element, in DRAM-byte equivalents (the device's
  /// cost model: one thread instruction is dramBytesPerThreadInstruction bytes, 0.088 on the
  /// H100): its cone's loads (inputs and materialised values it is computed from: a value with
  /// the element count of `v` costs its bytes per element, a broadcast one (row values, staged
  /// row vectors) a fraction) and its ops' instructions; and the local ops of the cone.
  struct Cone {
    double bytes = 0;
    std::set<ir::NodeId> ops;
  };
  static constexpr double kBroadcastShare = 0.25; // of a broadcast source's bytes per element
  static constexpr double kSimpleInstructions = 1;          // per simple op and element
  static constexpr double kTranscendentalInstructions = 17; // exp, tanh, erf, ... (libdevice)

  Cone coneOf(ir::NodeId v) const {
    Cone c;
    const ir::Dim elements = ir::numElements(g_.node(v).type.shape);
    std::set<ir::NodeId> leaves;
    std::vector<ir::NodeId> work{v};
    c.ops.insert(v);
    while (!work.empty()) {
      ir::NodeId x = work.back();
      work.pop_back();
      const ir::Node& n = g_.node(x);
      c.bytes += instructionBytes_ * (ir::opClass(n.kind) == ir::OpClass::ExpensiveElementwise
                                           ? kTranscendentalInstructions
                                           : kSimpleInstructions);
      for (ir::NodeId o : n.operands) {
        const ir::Node& on = g_.node(o);
        if (on.kind == ir::OpKind::Constant || on.kind == ir::OpKind::Iota) continue;
        if (!inKernel_.count(o) || materialised_.count(o)) {
          if (!leaves.insert(o).second) continue;
          double bytes = ir::dtypeBytes(on.type.dtype);
          c.bytes += ir::numElements(on.type.shape) == elements ? bytes : kBroadcastShare * bytes;
          continue;
        }
        if (c.ops.insert(o).second) work.push_back(o);
      }
    }
    return c;
  }

  /// Store against recompute: a local op (Loop or Row of its group) that stages of several phases
  /// regenerate is materialised when regenerating it in every further phase costs more than one
  /// store and a reload per further phase (its reads in its own phase keep registers). Latest
  /// first: a value nearer its readers saves its whole cone, and the ops of a chosen cone wait for
  /// the next round (their uses change). Whether it chose any.
  bool storeCheaper(const std::map<ir::NodeId, std::set<int>>& phasesOf) {
    bool added = false;
    std::set<ir::NodeId> chosenCones;
    for (auto it = phasesOf.rbegin(); it != phasesOf.rend(); ++it) {
      const auto& [v, phases] = *it;
      const ir::Node& n = g_.node(v);
      if (phases.size() < 2 || isSource(n) || n.kind == ir::OpKind::Reduce ||
          !groupOf_.count(v) || chosenCones.count(v) ||
          spaceOf(g_, groupOfValue(v), v) == OpSpace::Other)
        continue;
      Cone c = coneOf(v);
      double further = static_cast<double>(phases.size() - 1);
      double store = ir::dtypeBytes(n.type.dtype) * static_cast<double>(phases.size());
      if (further * c.bytes <= store) continue;
      materialised_.insert(v);
      ValuePlacement::StoreDecision& d = decisions_[v];
      d.phases = static_cast<int>(phases.size());
      d.recomputeBytes = c.bytes;
      d.storeBytes = store;
      chosenCones.insert(c.ops.begin(), c.ops.end());
      joinFollowedGroup(v);
      added = true;
    }
    return added;
  }

  /// A value of a group that runs in the tiles of another over the same loop (an acrossTiles
  /// column sum following a row reduce) is stored by that group instead: its stage then computes
  /// it at the row-reduce group's slots, from the values kept there, instead of loading its cone
  /// again in the follower's own thread mapping.
  void joinFollowedGroup(ir::NodeId v) {
    int from = groupOf_.at(v);
    Group& follower = k_.groups[static_cast<size_t>(from)];
    if (follower.follows < 0 || follower.dominant == v) return;
    Group& to = k_.groups[static_cast<size_t>(follower.follows)];
    if (to.loopShape != follower.loopShape || to.tileDims != follower.tileDims ||
        splitFactor(to.mapping) != 1 || spaceOf(g_, to, v) != spaceOf(g_, follower, v))
      return;
    std::erase(follower.ops, v);
    follower.space.erase(v);
    std::erase(follower.subDominants, v);
    to.ops.insert(std::lower_bound(to.ops.begin(), to.ops.end(), v), v);
    to.space[v] = spaceOf(g_, to, v);
    groupOf_[v] = follower.follows;
  }

  void planOnce() {
    reads_.clear();
    touches_.clear();
    for (ir::NodeId v : materialised_)
      readsOf(v, reads_[v], touches_[v]);
    // Locality depends on the groups' tiles only, not on storage or phases: asked once per
    // read here, not again in every round of demotion below.
    demoted_.assign(local_.size(), false);
    readers_.assign(local_.size(), {});
    for (auto& [v, reads] : reads_)
      for (Read& r : reads) {
        r.local = local(r, v);
        readers_[at(r.value)].push_back({v, &r});
      }
    for (ir::NodeId u : materialised_)
      if (sharedBytesOf(u) >= kNotShareable) demoted_[at(u)] = true;
    int64_t emitterScratch = 0; // codegen's reduce scratch, beside the shared values
    for (const Group& gr : k_.groups)
      emitterScratch =
          std::max(emitterScratch, reduceEmitterScratchBytes(gr.mapping, k_.launch.blockSize));
    for (;;) {
      formStages();
      assignPhases();
      assignStorage();
      int64_t bytes = layoutShared();
      if (bytes <= spec_.sharedMemoryPerBlock &&
          k_.sharedValuesEnd() + emitterScratch <= spec_.sharedMemoryPerBlock)
        break;
      ir::NodeId largest = -1;
      for (auto& [v, p] : k_.placement)
        if (p.storage == Storage::Shared &&
            (largest < 0 || p.sharedBytes > k_.placement[largest].sharedBytes))
          largest = v;
      if (largest < 0) break; // only the reductions' own scratch is left: nothing to demote
      demoted_[at(largest)] = true;
    }
    markRegisterReuse();
    warpLocalBarriers();
    emitStages();
  }

  const Group& groupOfValue(ir::NodeId v) const {
    return k_.groups[static_cast<size_t>(groupOf_.at(v))];
  }

  /// Walks from `node` (read in `frame` of group `gc`) down to materialised values and inputs,
  /// depth first, operands in order. With a stack of its own: a chain of 60,000 ops inlined
  /// into one reader overflowed the thread's stack when it recursed.
  void walk(ir::NodeId node, OpSpace frame, bool aligned, const Group& gc, std::vector<Read>& reads,
            std::vector<Touch>& touches, std::set<std::tuple<ir::NodeId, int, bool>>& seen) const {
    std::vector<Touch> work = {{node, frame, aligned}};
    while (!work.empty()) {
      const Touch t = work.back();
      work.pop_back();
      if (!seen.insert({t.value, static_cast<int>(t.frame), t.aligned}).second) continue;
      if (inKernel_.count(t.value) && materialised_.count(t.value)) {
        reads.push_back({t.value, t.frame, t.aligned});
        continue;
      }
      touches.push_back(t);
      if (!inKernel_.count(t.value)) continue; // an input
      const ir::Node& n = g_.node(t.value);
      for (auto o = n.operands.rbegin(); o != n.operands.rend(); ++o) { // first on top
        auto [f, a] = operandFrame(n, *o, t.frame, t.aligned, gc);
        work.push_back({*o, f, a});
      }
    }
  }

  /// How the index of operand `o` of `n` relates to the reader group's loop (schedule.h rules).
  std::pair<OpSpace, bool> operandFrame(const ir::Node& n, ir::NodeId o, OpSpace frame,
                                        bool aligned, const Group& gc) const {
    const ir::Shape& os = g_.node(o).type.shape;
    if (!aligned || frame == OpSpace::Other) return {OpSpace::Other, false};
    if (ir::isElementwise(n.kind) && os == n.type.shape) return {frame, true};
    // A gather's index operands are read at its own index; its operand at run-time positions
    // (Other: never block-local, never a register or a tile's slice).
    if (n.kind == ir::OpKind::Gather && !readsAtDataPositions(n, o) && os == n.type.shape)
      return {frame, true};
    if (n.kind == ir::OpKind::BroadcastInDim) {
      const auto& dims = n.attr<ir::BroadcastAttrs>().dims;
      if (frame == OpSpace::Loop && os == rowShapeOf(gc.loopShape, gc.tileDims) &&
          dims == gc.tileDims)
        return {OpSpace::Row, true};
      if (os == n.type.shape) return {frame, true};
      return {OpSpace::Other, false};
    }
    if (n.kind == ir::OpKind::Reduce && frame == OpSpace::Row && os == gc.loopShape) {
      // The group's own reduce: its row r reads row r of the loop.
      std::vector<int64_t> kept;
      const auto& axes = n.attr<ir::ReduceAttrs>().axes;
      for (int64_t d = 0; d < static_cast<int64_t>(os.size()); ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
      if (kept == gc.tileDims) return {OpSpace::Loop, true};
    }
    if (n.kind == ir::OpKind::Reshape && os == n.type.shape) return {frame, true};
    return {OpSpace::Other, false};
  }

  void readsOf(ir::NodeId v, std::vector<Read>& reads, std::vector<Touch>& touches) const {
    const Group& gc = groupOfValue(v);
    const ir::Node& n = g_.node(v);
    OpSpace frame = spaceOf(g_, gc, v);
    std::set<std::tuple<ir::NodeId, int, bool>> seen;
    for (ir::NodeId o : n.operands) {
      auto [f, a] = operandFrame(n, o, frame, frame != OpSpace::Other, gc);
      // A reduce of the group reads its operand over the group's loop, whatever its own
      // result's space (an acrossTiles reduce's result is in none of the group's spaces).
      if (n.kind == ir::OpKind::Reduce && g_.node(o).type.shape == gc.loopShape)
        f = OpSpace::Loop, a = true;
      walk(o, f, a, gc, reads, touches, seen);
    }
  }

  static bool contiguousTiles(const Group& group) {
    for (size_t i = 0; i < group.tileDims.size(); ++i)
      if (group.tileDims[i] != static_cast<int64_t>(i))
        return std::holds_alternative<ColumnReduceMapping>(group.mapping);
    return true;
  }

  /// Dims of a value's index that hold its row coordinate when it lives in `space` of `group`.
  static std::vector<int64_t> rowPositions(const Group& group, OpSpace space, size_t rank) {
    if (space == OpSpace::Loop) return group.tileDims;
    std::vector<int64_t> all(rank);
    for (size_t i = 0; i < rank; ++i)
      all[i] = static_cast<int64_t>(i);
    return all;
  }

  /// Block-local: the reader reads the value at its own rows, the producer wrote those rows in
  /// the same tile (same row shape and tile size, no split), and both agree on which index
  /// dims are the row.
  bool local(const Read& r, ir::NodeId readerValue) const {
    const Group& reader = groupOfValue(readerValue);
    // The reading stage walks its tile's loop (a loop value, or a reduce across the tiles
    // whose result lies outside the group's spaces): with tile dims that neither lead nor
    // trail, those elements are not one contiguous run of the loop, so, to be safe, nothing it
    // reads is block-local (random graph 7388: a middle-axis reduce's row values in shared
    // memory were read past their tile).
    if (spaceOf(g_, reader, readerValue) != OpSpace::Row && !contiguousTiles(reader)) return false;
    const Group& producer = groupOfValue(r.value);
    if (producer.acrossTiles && g_.node(r.value).kind == ir::OpKind::Reduce) return false;
    OpSpace produced = spaceOf(g_, producer, r.value);
    if (!r.aligned || produced == OpSpace::Other || !tileCompatible(producer, reader) ||
        splitFactor(producer.mapping) != 1)
      return false;
    // A tile's loop elements are one contiguous run of the loop only when the tile dims lead
    // (or trail, for column tiles); otherwise, to be safe, loop values are not block-local.
    if ((r.frame == OpSpace::Loop && !contiguousTiles(reader)) ||
        (produced == OpSpace::Loop && !contiguousTiles(producer)))
      return false;
    size_t rank = g_.node(r.value).type.shape.size();
    return rowPositions(reader, r.frame, rank) == rowPositions(producer, produced, rank);
  }

  bool localOk(const Read& r) const { return r.local && !demoted(r.value); }
  bool demoted(ir::NodeId v) const { return demoted_[at(v)]; }
  /// The kernel-local number of one of the kernel's ops: per-kernel arrays are as long as the
  /// kernel, not the graph (planning a graph's kernels was quadratic in the graph).
  size_t at(ir::NodeId v) const { return local_.at(v); }
  /// The stage that materialises `v` (formStages fills every materialised value's).
  int stageOf(ir::NodeId v) const {
    assert(stageOf_[at(v)] >= 0 && "a read of a value with no stage");
    return stageOf_[at(v)];
  }

  /// Phase levels: a value sits one level after every value it reads non-locally and at the
  /// level of the values it reads locally (as soon as possible), then values whose readers all
  /// read them locally move down to their earliest reader (as late as possible), so that
  /// regional values share a phase with their consumers (Figure 7's power.1 runs first, then
  /// reduce.1 with the column reduce that consumes it in the same tiles).
  /// Levels by local number (0 for values that are not materialised). The demotion loop of run()
  /// asks this once per demoted value, so it works on dense vectors.
  std::vector<int> levels() const {
    std::vector<int> level(local_.size(), 0);
    for (ir::NodeId v : materialised_) {
      int l = 0;
      for (const Read& r : reads_.at(v))
        l = std::max(l, level[at(r.value)] + (localOk(r) ? 0 : 1));
      level[at(v)] = l;
    }
    for (auto it = materialised_.rbegin(); it != materialised_.rend(); ++it) {
      const std::vector<std::pair<ir::NodeId, const Read*>>& rs =
          readers_[at(*it)];
      if (rs.empty()) continue;
      bool allLocal = std::all_of(rs.begin(), rs.end(), [&](const auto& p) {
        return localOk(*p.second);
      });
      if (!allLocal) continue;
      int earliest = level[at(rs.front().first)];
      for (const auto& [w, r] : rs)
        earliest = std::min(earliest, level[at(w)]);
      int& l = level[at(*it)];
      l = std::max(l, earliest);
    }
    return level;
  }

  void formStages() {
    stages_.clear();
    stageOf_.assign(local_.size(), -1);
    std::vector<int> level = levels();
    auto levelOf = [&](ir::NodeId v) { return level[at(v)]; };
    std::vector<ir::NodeId> values(materialised_.begin(), materialised_.end());
    std::stable_sort(values.begin(), values.end(),
                     [&](ir::NodeId a, ir::NodeId b) { return levelOf(a) < levelOf(b); });
    std::map<std::pair<int, int>, std::vector<int>> stagesOf; // (group, level) → stages
    for (ir::NodeId v : values) {
      // The earliest stage of v's group and level after every stage v reads from: sibling
      // reduces of one loop then share a pass over it.
      int group = groupOf_.at(v);
      int after = -1;
      for (const Read& r : reads_.at(v))
        after = std::max(after, stageOf(r.value));
      if (int st = operandStage(v, after); st >= 0) { // the split column sum of its operand
        stages_[static_cast<size_t>(st)].values.push_back(v);
        stageOf_[at(v)] = st;
        std::erase(stagesOf[{group, stages_[static_cast<size_t>(st)].level}], st);
        continue;
      }
      int last = -1;
      std::vector<int>& same = stagesOf[{group, levelOf(v)}]; // increasing
      for (auto st = std::upper_bound(same.begin(), same.end(), after); st != same.end(); ++st)
        if (sameStageKind(stages_[static_cast<size_t>(*st)], v)) {
          last = *st;
          break;
        }
      if (last < 0) {
        stages_.push_back({group, levelOf(v), {}});
        last = static_cast<int>(stages_.size()) - 1;
        same.push_back(last);
      }
      stages_[static_cast<size_t>(last)].values.push_back(v);
      stageOf_[at(v)] = last;
    }
  }

  /// The stage `v` stores its operand in, when `v` is the dominant of a split column-reduce group
  /// (partials, no atomics) that reads nothing but that operand, a value of its loop that the
  /// last stage so far stores alone: the reduce then runs in that stage, and its pass over its
  /// split tiles stores the operand's elements as it adds them up (bias + GELU backward: grad_x
  /// and its column sum grad_bias in one pass over x and dy, not one pass each). -1 otherwise.
  int operandStage(ir::NodeId v, int after) const {
    const ir::Node& n = g_.node(v);
    const Group& gr = groupOfValue(v);
    const auto* c = std::get_if<ColumnReduceMapping>(&gr.mapping);
    if (n.kind != ir::OpKind::Reduce || gr.dominant != v || !c || c->splitFactor <= 1 ||
        c->useAtomics || after < 0 || after + 1 != static_cast<int>(stages_.size()))
      return -1;
    ir::NodeId operand = n.operands[0];
    const StageInfo& st = stages_[static_cast<size_t>(after)];
    bool onlyOperand = st.values.size() == 1 && st.values[0] == operand &&
                       st.group == groupOf_.at(v) && g_.node(operand).type.shape == gr.loopShape;
    bool readsOperand = std::all_of(reads_.at(v).begin(), reads_.at(v).end(),
                                    [&](const Read& r) { return r.value == operand; });
    return onlyOperand && readsOperand ? after : -1;
  }

  /// Whether `v` may join `stage`. In a split group the reduces' stage combines partials
  /// across blocks: other values of the group get stages of their own. In an acrossTiles group the
  /// reduces' stage computes its values once per result after the cross-block combine: values in
  /// the tiles' loop space (not one per result of the dominant) get stages of their own.
  bool sameStageKind(const StageInfo& stage, ir::NodeId v) const {
    const Group& gr = k_.groups[static_cast<size_t>(stage.group)];
    if (gr.acrossTiles) {
      // By space and element count: a loop of one row has as many elements as results
      // (random graph 58159: a [1, 2] loop value joined the [2] sums' stage, which computes
      // only per-result values after the combine, and was never stored), and a value off the
      // loop need not be one per result (random graph 200809: an identity transpose of a
      // [2, 2] loop value, outside the group's spaces, joined the [2] sums' stage).
      // Only what is computed from the combined reduces: a value of as many elements that does
      // not read them (random graph 100155 with 60 ops: neg(log(|x| + 1)) over [64] beside a
      // [64] column max) gets a stage of its own (it was never stored by the combine).
      ir::Dim results = ir::numElements(g_.node(gr.dominant).type.shape);
      std::map<ir::NodeId, bool> known;
      std::function<bool(ir::NodeId)> fromCombine = [&](ir::NodeId x) {
        auto k = known.find(x);
        if (k != known.end()) return k->second;
        const ir::Node& n = g_.node(x);
        bool from = false;
        if (groupOf_.count(x) && groupOf_.at(x) == stage.group)
          from = (n.kind == ir::OpKind::Reduce &&
                  g_.node(n.operands[0]).type.shape == gr.loopShape) ||
                 std::any_of(n.operands.begin(), n.operands.end(), fromCombine);
        return known[x] = from;
      };
      auto perResult = [&](ir::NodeId x) {
        auto it = gr.space.find(x);
        bool offLoop = it == gr.space.end() || it->second == OpSpace::Other;
        return offLoop && ir::numElements(g_.node(x).type.shape) == results && fromCombine(x);
      };
      return perResult(stage.values.front()) == perResult(v);
    }
    if (splitFactor(gr.mapping) <= 1) return true;
    auto isReduce = [&](ir::NodeId x) { return g_.node(x).kind == ir::OpKind::Reduce; };
    return isReduce(stage.values.front()) == isReduce(v);
  }

  bool splitStage(size_t s) const {
    const Group& gr = k_.groups[static_cast<size_t>(stages_[s].group)];
    if (splitFactor(gr.mapping) <= 1) return false;
    return std::any_of(stages_[s].values.begin(), stages_[s].values.end(),
                       [&](ir::NodeId v) { return g_.node(v).kind == ir::OpKind::Reduce; });
  }

  void assignPhases() {
    phaseOfStage_.assign(stages_.size(), 0);
    barriers_.assign(stages_.size(), Barrier::None);
    int phase = 0;
    int phaseGroup = stages_.empty() ? 0 : stages_.front().group;
    for (size_t s = 0; s < stages_.size(); ++s) {
      const Group& gc = k_.groups[static_cast<size_t>(stages_[s].group)];
      if (s == 0) continue;
      // A split reduce combines its partials across blocks inside its stage: it gets a
      // phase of its own (codegen's emitters rely on it).
      bool grid = stages_[s].level != stages_[s - 1].level ||
                  !tileCompatible(k_.groups[static_cast<size_t>(phaseGroup)], gc) ||
                  splitStage(s) || splitStage(s - 1);
      bool readsPhase = false;
      for (ir::NodeId v : stages_[s].values)
        for (const Read& r : reads_.at(v)) {
          if (phaseOfStage_[static_cast<size_t>(stageOf(r.value))] != phase) continue;
          readsPhase = true;
          if (!localOk(r)) grid = true;
        }
      if (grid) {
        ++phase;
        phaseGroup = stages_[s].group;
        barriers_[s] = Barrier::Grid;
      } else if (readsPhase) {
        barriers_[s] = Barrier::Block;
      }
      phaseOfStage_[s] = phase;
    }
  }

  int64_t sharedBytesOf(ir::NodeId v) const {
    const Group& gp = groupOfValue(v);
    int64_t bytes = ir::dtypeBytes(g_.node(v).type.dtype);
    // A tile holds rowsPerTile rows, or all of them when there are fewer (softmax over [4, 8]
    // in tiles of 512 rows: 16 bytes per row value, not 2 KB).
    int64_t rows = std::max<int64_t>(1, std::min<int64_t>(gp.rowsPerTile, staticOr(gp.rows, gp.rowsPerTile)));
    switch (spaceOf(g_, gp, v)) {
    case OpSpace::Row:
      return rows * bytes;
    case OpSpace::Loop:
      return gp.rowLength.isStatic() ? rows * gp.rowLength.size() * bytes : kNotShareable;
    case OpSpace::Other:
      return kNotShareable;
    }
    return kNotShareable;
  }

  void assignStorage() {
    k_.placement.clear();
    for (ir::NodeId in : k_.inputs)
      k_.placement[in].storage = Storage::Input;
    markInputsReadAtOwnRows();
    for (ir::NodeId op : k_.ops)
      k_.placement[op].storage = Storage::Register;
    std::map<ir::NodeId, bool> allLocalSamePhase, allLocal;
    for (ir::NodeId u : materialised_)
      allLocalSamePhase[u] = allLocal[u] = true;
    for (size_t s = 0; s < stages_.size(); ++s) {
      for (ir::NodeId v : stages_[s].values)
        for (const Read& r : reads_.at(v)) {
          if (!r.local) allLocal[r.value] = false;
          if (!r.local ||
              phaseOfStage_[static_cast<size_t>(stageOf(r.value))] != phaseOfStage_[s])
            allLocalSamePhase[r.value] = false;
        }
    }
    for (ir::NodeId u : materialised_) {
      ValuePlacement& p = k_.placement[u];
      if (outputs_.count(u)) {
        p.storage = Storage::Output;
      } else if (allLocalSamePhase[u] && !demoted(u)) {
        p.storage = Storage::Shared, p.sharedBytes = sharedBytesOf(u);
      } else {
        p.storage = Storage::Global;
        p.readAtOwnRows = allLocal[u] && sharedBytesOf(u) < kNotShareable;
      }
    }
  }

  /// An input every stage reads at its own loop element, in tiles like every other reader's
  /// (ValuePlacement::readAtOwnRows): it could be loaded once and kept on chip for later phases.
  void markInputsReadAtOwnRows() {
    std::map<ir::NodeId, const Group*> firstReader;
    std::set<ir::NodeId> elsewhere;
    for (const auto& [v, touches] : touches_) {
      const Group& reader = groupOfValue(v);
      for (const Touch& t : touches) {
        auto p = k_.placement.find(t.value);
        if (p == k_.placement.end() || p->second.storage != Storage::Input) continue;
        const Group*& first = firstReader.try_emplace(t.value, &reader).first->second;
        bool own = t.aligned && t.frame == OpSpace::Loop &&
                   g_.node(t.value).type.shape == reader.loopShape && contiguousTiles(reader) &&
                   splitFactor(reader.mapping) == 1 && tileCompatible(*first, reader);
        if (!own) elsewhere.insert(t.value);
      }
    }
    for (const auto& [in, reader] : firstReader)
      k_.placement[in].readAtOwnRows = !elsewhere.count(in) && reader->rowLength.isStatic();
  }

  /// Offsets per phase after the reductions' own scratch; returns the kernel's shared bytes.
  int64_t layoutShared() {
    int64_t reserve = 0;
    for (const Group& gr : k_.groups)
      reserve = std::max(reserve, reductionScratchBytes(g_, gr, spec_, k_.launch.blockSize));
    reserve = (reserve + kSharedAlign - 1) / kSharedAlign * kSharedAlign;
    std::map<int, int64_t> top;
    int64_t total = reserve;
    for (ir::NodeId u : materialised_) {
      ValuePlacement& p = k_.placement[u];
      if (p.storage != Storage::Shared) continue;
      int phase = phaseOfStage_[static_cast<size_t>(stageOf(u))];
      int64_t& at = top.try_emplace(phase, reserve).first->second;
      p.sharedOffset = at;
      at += (p.sharedBytes + kSharedAlign - 1) / kSharedAlign * kSharedAlign;
      total = std::max(total, at);
    }
    k_.launch.sharedBytes = total;
    return total;
  }

  void markRegisterReuse() {
    std::map<ir::NodeId, std::set<size_t>> stagesTouching;
    for (size_t s = 0; s < stages_.size(); ++s)
      for (ir::NodeId v : stages_[s].values)
        for (const Touch& t : touches_.at(v))
          if (t.aligned && t.frame != OpSpace::Other) stagesTouching[t.value].insert(s);
    for (auto& [value, stages] : stagesTouching) {
      if (stages.size() < 2) continue;
      // An acrossTiles group runs in the thread mapping of the group it follows (codegen
      // accumulates its reduces in that group's row slots): one family for reuse.
      auto family = [&](size_t s) {
        const Group& gr = k_.groups[static_cast<size_t>(stages_[s].group)];
        return gr.acrossTiles && gr.follows >= 0 ? gr.follows : stages_[s].group;
      };
      size_t first = *stages.begin();
      bool sameFamily = std::all_of(stages.begin(), stages.end(),
                                    [&](size_t s) { return family(s) == family(first); });
      bool samePhase = std::all_of(stages.begin(), stages.end(), [&](size_t s) {
        return phaseOfStage_[s] == phaseOfStage_[first];
      });
      if (!sameFamily) continue;
      const Group& gr = k_.groups[static_cast<size_t>(family(first))];
      int64_t split = splitFactor(gr.mapping);
      int64_t parts = split * clusterBlocks(gr.mapping); // a block's share of each row
      int64_t perTile =
          spaceOf(g_, gr, value) == OpSpace::Loop
              ? gr.rowsPerTile * ((staticOr(gr.rowLength, kNotShareable) + parts - 1) / parts)
              : gr.rowsPerTile;
      // Across a grid barrier a thread must hold its elements of every tile it handles: only
      // possible when one wave covers all tiles (one tile per block), for every binding the
      // plan's ranges admit.
      int64_t tiles = (ir::upperBoundOr(gr.rows, ranges_, kNotShareable) + gr.rowsPerTile - 1) /
                      gr.rowsPerTile * split;
      if (!samePhase &&
          tiles > blocksPerWave(spec_, k_.launch.blockSize, kRegisterHeavy, k_.launch.sharedBytes))
        continue;
      if ((perTile + k_.launch.blockSize - 1) / k_.launch.blockSize > kMaxReusedPerThread) continue;
      k_.placement[value].registerReuse = true;
    }
  }

  /// The plan's stages: each stage's group, the barrier before it, its values (the dominant
  /// first).
  void emitStages() {
    k_.stages.clear();
    for (size_t s = 0; s < stages_.size(); ++s) {
      Stage st;
      st.group = stages_[s].group;
      st.barrierBefore = barriers_[s];
      st.materialized = stages_[s].values;
      ir::NodeId dom = k_.groups[static_cast<size_t>(st.group)].dominant;
      std::stable_partition(st.materialized.begin(), st.materialized.end(),
                            [&](ir::NodeId v) { return v == dom; });
      k_.stages.push_back(std::move(st));
    }
  }

  /// Shared values written and read by one warp, and the barriers that then narrow to it.
  /// In a warp-per-row group, a row reduce (the dominant or a sub-dominant) is combined by its
  /// row's lanes with shuffles and stored by the row's first lane; the elements a row reduce
  /// reads, and the group's values over its loop in the row slots, are evaluated by the row's
  /// lanes; and a warp-local value one per row (layer norm's mean and rstd) is computed by every
  /// lane of its row and stored by the first (codegen: emitInRowLanes). So a row value whose
  /// every reader is such a value of the same group is written and read by one warp only
  /// (ValuePlacement::warpLocal). Not a row value another group reads, nor one read by a row
  /// value that is not warp-local itself (it is computed with the tile's rows spread over the
  /// block's threads). Not when the value's stage also stores a value to global memory: the
  /// reduce emitter then hands each row's result to consecutive threads of the block
  /// (coalesced stores), lanes of other warps.
  /// A block barrier before a stage whose reads from its own phase are all warp-local narrows
  /// to bar.warp.sync (Barrier::Warp): softmax's sum of exp(x - max) waits for its row's max
  /// only. Values over the loop run in the row's lanes only in the row slots, which the phase
  /// planner decides later: where a phase gets none, it widens these back
  /// (fusion/phase_planner.cc, widenWarpBarriers). Only where every tile is whole, for every
  /// binding the plan's ranges admit: the slots of rows past the last clamp to the tile's first
  /// row (codegen's makeRowSlots), whose values another warp wrote.
  void warpLocalBarriers() {
    auto warpPerRow = [&](const Group& gr) {
      const auto* m = std::get_if<RowReduceMapping>(&gr.mapping);
      return m && m->kind == RowReduceMapping::Kind::WarpPerRow && !gr.acrossTiles &&
             splitFactor(gr.mapping) == 1 && gr.rowsPerTile > 0 &&
             ir::knownDivisor(gr.rows, ranges_) % gr.rowsPerTile == 0;
    };
    auto rowReduceOf = [&](const Group& gr, ir::NodeId v) {
      return g_.node(v).kind == ir::OpKind::Reduce && spaceOf(g_, gr, v) == OpSpace::Row &&
             (v == gr.dominant ||
              std::find(gr.subDominants.begin(), gr.subDominants.end(), v) != gr.subDominants.end());
    };
    auto storesGlobally = [&](size_t s) {
      return std::any_of(stages_[s].values.begin(), stages_[s].values.end(), [&](ir::NodeId v) {
        Storage st = k_.placement.at(v).storage;
        return st == Storage::Global || st == Storage::Output;
      });
    };
    // Candidates: the row values (row reduces, and one-per-row values computed from them) a
    // warp-per-row group keeps in shared memory, from stages that store nothing globally.
    std::vector<ir::NodeId> candidates;
    for (size_t p = 0; p < stages_.size(); ++p) {
      const Group& gr = k_.groups[static_cast<size_t>(stages_[p].group)];
      if (!warpPerRow(gr) || storesGlobally(p)) continue;
      for (ir::NodeId v : stages_[p].values)
        if (k_.placement.at(v).storage == Storage::Shared && spaceOf(g_, gr, v) == OpSpace::Row)
          k_.placement.at(v).warpLocal = true, candidates.push_back(v);
    }
    // A reader runs in the row's lanes when it is of the same group and is a row reduce, a value
    // over the group's loop, or a row value computed in the row's lanes itself (warp-local): the
    // largest such set, by removing candidates with a reader elsewhere until none changes.
    auto inRowLanes = [&](int group, ir::NodeId v) {
      const Group& gr = k_.groups[static_cast<size_t>(group)];
      return rowReduceOf(gr, v) || spaceOf(g_, gr, v) == OpSpace::Loop ||
             k_.placement.at(v).warpLocal;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (ir::NodeId v : candidates) {
        ValuePlacement& pl = k_.placement.at(v);
        if (!pl.warpLocal) continue;
        const int group = stages_[static_cast<size_t>(stageOf(v))].group;
        const auto& readers = readers_[at(v)];
        pl.warpLocal = std::all_of(readers.begin(), readers.end(), [&](const auto& reader) {
          return stages_[static_cast<size_t>(stageOf(reader.first))].group == group &&
                 inRowLanes(group, reader.first);
        });
        changed = changed || !pl.warpLocal;
      }
    }
    for (size_t s = 0; s < stages_.size(); ++s) {
      if (barriers_[s] != Barrier::Block) continue;
      bool warpLocal = true;
      for (ir::NodeId v : stages_[s].values)
        for (const Read& r : reads_.at(v))
          if (phaseOfStage_[static_cast<size_t>(stageOf(r.value))] == phaseOfStage_[s])
            warpLocal = warpLocal && k_.placement.at(r.value).warpLocal;
      if (warpLocal) barriers_[s] = Barrier::Warp;
    }
  }

  const ir::Graph& g_;
  const DeviceSpec& spec_;
  KernelPlan& k_;
  const ir::SymbolRanges& ranges_; // a version's guard: upper bounds on the symbols
  const double instructionBytes_;  // DRAM bytes one thread instruction costs (cost_model.h)
  std::set<ir::NodeId> inKernel_, materialised_, outputs_;
  std::unordered_map<ir::NodeId, size_t> local_; // kernel-local numbers of the kernel's ops
  std::vector<bool> demoted_; // by local number: never kept in shared memory
  std::map<ir::NodeId, int> groupOf_;
  // local ops materialised because several phases regenerate them (materialiseRegenerated)
  std::map<ir::NodeId, ValuePlacement::StoreDecision> decisions_;
  std::vector<int> stageOf_; // by local number; -1 for values that are not materialised
  // by local number: the materialised values that read it, with their reads of it
  std::vector<std::vector<std::pair<ir::NodeId, const Read*>>> readers_;
  std::map<ir::NodeId, std::vector<Read>> reads_;
  std::map<ir::NodeId, std::vector<Touch>> touches_;
  std::vector<StageInfo> stages_;
  std::vector<int> phaseOfStage_;
  std::vector<Barrier> barriers_;
};

} // namespace

int64_t reductionScratchBytes(const ir::Graph& g, const Group& group, const DeviceSpec& spec,
                              int blockSize) {
  int64_t bytes = 0, reduces = 0;
  for (ir::NodeId op : group.ops)
    if (g.node(op).kind == ir::OpKind::Reduce)
      bytes = std::max<int64_t>(bytes, ir::dtypeBytes(g.node(op).type.dtype)), ++reduces;
  if (reduces == 0) return 0;
  if (auto* r = std::get_if<RowReduceMapping>(&group.mapping))
    return r->kind == RowReduceMapping::Kind::BlockPerRow ? (blockSize / spec.warpSize) * bytes : 0;
  if (auto* c = std::get_if<ColumnReduceMapping>(&group.mapping))
    return int64_t(c->tileRows) * (c->tileColumns + 1) * bytes;
  return 0;
}

int64_t reduceEmitterScratchBytes(const ThreadMapping& mapping, int blockSize) {
  if (const auto* r = std::get_if<RowReduceMapping>(&mapping)) {
    if (r->kind == RowReduceMapping::Kind::BlockPerRow) return 32 * 8;
    int rowsPerPass = blockSize / std::max(1, r->threadsPerRow);
    return rowsPerPass > 1 ? int64_t(rowsPerPass) * 8 : 0;
  }
  if (const auto* c = std::get_if<ColumnReduceMapping>(&mapping))
    return int64_t(c->tileColumns) * c->tileRows * 8;
  return 0;
}

void planStitching(const ir::Graph& g, const DeviceSpec& spec, KernelPlan& kernel,
                   const ir::SymbolRanges& ranges) {
  Planner(g, spec, kernel, ranges).run();
}

} // namespace weft::fusion
