// Properties every plan must have, checked on seeded random graphs under both policies and all
// device profiles: they catch a planner step that breaks the contract of kernel_plan.h.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "fusion/launch_config.h"
#include "fusion/memory_planning.h"
#include "fusion/plan.h"
#include "plan_queries.h"
#include "random_graph.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;

namespace {

void checkKernel(const FusionPlan& p, const KernelPlan& k, const std::set<ir::NodeId>& available) {
  const ir::Graph& g = p.graph;
  std::set<ir::NodeId> ops(k.ops.begin(), k.ops.end());
  for (ir::NodeId in : k.inputs) {
    CHECK(available.count(in));
    CHECK(k.placement.at(in).storage == Storage::Input);
    CHECK(k.placement.at(in).buffer >= 0);
  }
  std::map<ir::NodeId, int> groupOf;
  for (size_t gi = 0; gi < k.groups.size(); ++gi)
    for (ir::NodeId op : k.groups[gi].ops) {
      CHECK(ops.count(op));
      CHECK(groupOf.emplace(op, static_cast<int>(gi)).second); // in one group only
      CHECK(k.groups[gi].space.count(op));
    }
  CHECK(groupOf.size() == ops.size());
  for (ir::NodeId op : k.ops)
    CHECK(k.placement.count(op));

  std::map<ir::NodeId, size_t> stageOf;
  std::vector<int> phase;
  int current = 0;
  for (size_t s = 0; s < k.stages.size(); ++s) {
    const Stage& st = k.stages[s];
    if (st.barrierBefore == Barrier::Grid) ++current;
    phase.push_back(current);
    for (ir::NodeId v : st.materialized) {
      CHECK(groupOf.at(v) == st.group);
      CHECK(stageOf.emplace(v, s).second);
      CHECK(k.placement.at(v).storage != Storage::Register);
    }
  }
  for (ir::NodeId out : k.outputs) {
    CHECK(stageOf.count(out));
    CHECK(k.placement.at(out).storage == Storage::Output);
    CHECK(k.placement.at(out).buffer >= 0);
  }
  // A Shared value is read only in its own phase (a resident one up to its last phase, in the
  // same tiles); a Global one has a scratch buffer.
  for (auto& [v, pl] : k.placement) {
    if (pl.storage == Storage::Global)
      CHECK(p.buffers.at(static_cast<size_t>(pl.buffer)).kind == Buffer::Kind::Scratch);
    if (pl.storage != Storage::Shared) continue;
    CHECK(pl.sharedOffset + pl.sharedBytes <= k.launch.sharedBytes);
  }
  // every op that reads a Shared value directly sits in a stage of the same phase: check via the
  // stages whose materialised values depend on it
  for (size_t s = 0; s < k.stages.size(); ++s) {
    std::set<ir::NodeId> seen;
    std::vector<ir::NodeId> work(k.stages[s].materialized.begin(), k.stages[s].materialized.end());
    for (ir::NodeId v : work)
      seen.insert(v);
    while (!work.empty()) {
      ir::NodeId v = work.back();
      work.pop_back();
      for (ir::NodeId o : g.node(v).operands) {
        if (!ops.count(o) || !seen.insert(o).second) continue;
        if (stageOf.count(o)) {
          CHECK(stageOf.at(o) < s);
          const ValuePlacement& po = k.placement.at(o);
          if (po.storage == Storage::Shared && !po.resident)
            CHECK(phase[stageOf.at(o)] == phase[s]);
          if (po.resident) { // kept across grid barriers: every phase of it cuts the same tiles
            CHECK(phase[stageOf.at(o)] <= phase[s]);
            CHECK(phase[s] <= po.resident->lastPhase);
            CHECK(k.residentTiles > 0);
            CHECK(k.phases.at(size_t(phase[s])).space.sameTiles(k.residentSpace));
            CHECK(k.phases.at(size_t(phase[stageOf.at(o)])).space.sameTiles(k.residentSpace));
          }
          continue;
        }
        work.push_back(o);
      }
    }
  }
  CHECK(k.launch.blockSize > 0);
  CHECK(k.launch.sharedBytes <= p.device.sharedMemoryPerBlock);
  CHECK(k.launch.maxBlocks ==
        blocksPerWave(p.device, k.launch.blockSize, k.launch.maxRegisters, k.launch.sharedBytes));
  CHECK(k.launch.maxBlocks > 0);
  if (k.hasGridBarrier()) CHECK(k.launch.cooperative);
}

void checkPlan(const FusionPlan& p) {
  const ir::Graph& g = p.graph;
  std::set<ir::NodeId> available(g.inputs().begin(), g.inputs().end());
  std::set<ir::NodeId> computed;
  for (const Step& step : p.steps) {
    if (auto* k = std::get_if<KernelPlan>(&step)) {
      checkKernel(p, *k, available);
      computed.insert(k->ops.begin(), k->ops.end());
      available.insert(k->outputs.begin(), k->outputs.end());
    } else {
      const LibraryCall& call = std::get<LibraryCall>(step);
      for (ir::NodeId o : call.reads(g))
        CHECK(available.count(o));
      computed.insert(call.epilogue.ops.begin(), call.epilogue.ops.end());
      available.insert(call.result());
    }
  }
  for (ir::NodeId out : g.outputs())
    CHECK(available.count(out));
  // every live op is computed somewhere (dead ones need not be)
  std::set<ir::NodeId> live(g.outputs().begin(), g.outputs().end());
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it)
    if (live.count(it->id)) live.insert(it->operands.begin(), it->operands.end());
  for (const ir::Node& n : g.nodes())
    if (live.count(n.id) && ir::isMemoryIntensive(n.kind) && n.kind != ir::OpKind::Constant &&
        n.kind != ir::OpKind::Iota)
      CHECK(computed.count(n.id));
  for (size_t a = 0; a < p.buffers.size(); ++a)
    for (size_t b = a + 1; b < p.buffers.size(); ++b) {
      if (p.buffers[a].slot < 0 || p.buffers[a].slot != p.buffers[b].slot) continue;
      auto ra = liveRange(p, static_cast<int>(a)), rb = liveRange(p, static_cast<int>(b));
      CHECK((ra.second < rb.first || rb.second < ra.first));
    }
}

} // namespace

TEST_CASE("plan invariants hold on random graphs under every policy", "[planner][invariants]") {
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    ir::Graph g = weft::testing::randomGraph(seed);
    for (std::string dev : {"v100", "h100"})
      for (Policy policy : {Policy::AStitch, Policy::Xla, Policy::None}) {
        INFO("seed " << seed << " on " << dev << " under " << policyName(policy));
        FusionPlan p = plan(g, *deviceSpecProfile(dev), policy);
        checkPlan(p);
        if (policy == Policy::AStitch) {
          FusionPlan xla = plan(g, *deviceSpecProfile(dev), Policy::Xla);
          CHECK(p.kernelCount() <= xla.kernelCount());
        }
      }
  }
}

TEST_CASE("plan invariants hold on the workload graphs", "[planner][invariants]") {
  using namespace weft::fusion::testing;
  for (std::string dev : {"v100", "a100", "h100"})
    for (Policy policy : {Policy::AStitch, Policy::Xla, Policy::None})
      for (const ir::Graph& g : {astitchFig7(), layerNorm(), softmax(), residualLayerNorm(),
                                 geluBias(), rmsNorm(), columnReduce(), layerNormBackward(),
                                 layerNormDotGelu(), rowReduce(64, 30000), rowReduce(750000, 32)}) {
        INFO(dev << " " << policyName(policy));
        checkPlan(plan(g, *deviceSpecProfile(dev), policy));
      }
}

TEST_CASE("a split reduce's stage is the only stage of its phase", "[planner][invariants]") {
  // codegen combines a split reduce's partials inside its stage, so it needs the phase alone
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    ir::Graph g = weft::testing::randomGraph(seed);
    FusionPlan p = plan(g, *deviceSpecProfile("h100"), Policy::AStitch);
    for (const KernelPlan* k : weft::fusion::testing::kernelsOf(p)) {
      for (size_t s = 0; s < k->stages.size(); ++s) {
        const Group& gr = k->groups[static_cast<size_t>(k->stages[s].group)];
        int split = 1;
        if (auto* r = std::get_if<RowReduceMapping>(&gr.mapping)) split = r->splitFactor;
        if (auto* c = std::get_if<ColumnReduceMapping>(&gr.mapping)) split = c->splitFactor;
        if (split <= 1) continue;
        INFO("seed " << seed << " kernel " << k->name << " stage " << s);
        if (s > 0) CHECK(k->stages[s].barrierBefore == Barrier::Grid);
        if (s + 1 < k->stages.size()) CHECK(k->stages[s + 1].barrierBefore == Barrier::Grid);
      }
    }
  }
}

TEST_CASE("resident values have a slot for every tile each launched block takes, apart from "
          "every other shared value live with them",
          "[planner][invariants]") {
  // The grid is min(launch.tiles, maxBlocks) (runtime/shape_binding.cc); each block of it takes
  // ceil(tiles / grid) tiles of the resident space (random graph 411 had one block for 7 tiles
  // and one slot). Resident slots overlap neither the phases' own shared values nor a resident
  // value live in one of the same phases.
  int kernels = 0, several = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    ir::Graph g = weft::testing::randomGraph(seed);
    for (std::string dev : {"v100", "h100"}) {
      FusionPlan p = plan(g, *deviceSpecProfile(dev), Policy::AStitch);
      for (const KernelPlan* k : weft::fusion::testing::kernelsOf(p)) {
        if (k->residentTiles == 0) continue;
        INFO("seed " << seed << " on " << dev << ", kernel " << k->name);
        ++kernels;
        several += k->residentTiles > 1;
        const TileSpace& s = k->residentSpace;
        REQUIRE(s.units.isStatic());
        int64_t tiles = (s.units.size() + s.unitsPerTile - 1) / s.unitsPerTile;
        int64_t grid = k->launch.tiles.isStatic()
                           ? std::min(k->launch.tiles.size(), k->launch.maxBlocks)
                           : 1;
        CHECK(k->residentTiles * grid >= tiles);
        for (const auto& [v, a] : k->placement) {
          if (!a.resident) continue;
          CHECK(a.sharedOffset % 16 == 0);
          CHECK(k->launch.sharedBytes >= a.sharedOffset + a.sharedBytes);
          for (const auto& [u, b] : k->placement) {
            if (u == v || (b.storage != Storage::Shared && !b.resident)) continue;
            bool apart = a.sharedOffset + a.sharedBytes <= b.sharedOffset ||
                         b.sharedOffset + b.sharedBytes <= a.sharedOffset;
            bool live = !b.resident || (a.resident->firstPhase <= b.resident->lastPhase &&
                                        b.resident->firstPhase <= a.resident->lastPhase);
            if (live) CHECK(apart);
          }
        }
      }
    }
  }
  INFO(kernels << " kernels with resident values, " << several << " with several tiles a block");
  CHECK(kernels >= 100);
  CHECK(several >= 1);
}
