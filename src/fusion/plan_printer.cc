#include "fusion/plan_printer.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <sstream>

#include "fusion/launch_config.h"
#include "ir/op.h"

namespace weft::fusion {
namespace {

std::string valueName(const ir::Graph& g, ir::NodeId id) {
  if (id < 0 || size_t(id) >= g.size()) return fmt::format("%<{}>", id);
  return "%" + g.node(id).name;
}

std::string valueList(const ir::Graph& g, const std::vector<ir::NodeId>& ids) {
  if (ids.empty()) return "-";
  std::string s;
  for (ir::NodeId id : ids)
    s += (s.empty() ? "" : ", ") + valueName(g, id);
  return s;
}

std::string bufferKindName(Buffer::Kind k) {
  switch (k) {
  case Buffer::Kind::Input:
    return "input";
  case Buffer::Kind::Output:
    return "output";
  case Buffer::Kind::Intermediate:
    return "intermediate";
  case Buffer::Kind::Scratch:
    return "scratch";
  }
  return "?";
}

/// `s` as a DOT string's content: quotes and backslashes escaped, a line break as DOT's \n.
std::string dotEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string dotId(const std::string& s) { return "\"" + dotEscaped(s) + "\""; }

/// A label of several lines (Graphviz breaks them at each \n).
std::string dotLabel(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i)
    out += (i ? "\\n" : "") + dotEscaped(lines[i]);
  return out + "\"";
}

const char* storageColour(Storage s) {
  switch (s) {
  case Storage::Register:
    return "white";
  case Storage::Shared:
    return "lightblue";
  case Storage::Global:
    return "orange";
  case Storage::Output:
    return "palegreen";
  case Storage::Input:
    return "lightgrey";
  }
  return "white";
}

void kernelDotBody(std::ostringstream& os, const KernelPlan& k, const ir::Graph& g,
                   const std::string& prefix) {
  os << "  subgraph " << dotId("cluster_" + prefix + k.name)
     << " {\n    label=" << dotId(k.name + (k.hasGridBarrier() ? " (cooperative)" : "")) << ";\n";
  for (size_t gi = 0; gi < k.groups.size(); ++gi) {
    const Group& grp = k.groups[gi];
    os << "    subgraph " << dotId(fmt::format("cluster_{}{}_g{}", prefix, k.name, gi)) << " {\n";
    os << "      label=" << dotId(fmt::format("group {}: {}", gi, mappingStr(grp.mapping)))
       << "; style=dashed;\n";
    for (ir::NodeId op : grp.ops) {
      auto it = k.placement.find(op);
      Storage s = it == k.placement.end() ? Storage::Register : it->second.storage;
      const ir::Node& n = g.node(op);
      os << "      " << dotId(prefix + n.name) << " [label="
         << dotLabel({n.name, fmt::format("{} {}", ir::opName(n.kind), n.type.str()),
                      storageName(s)})
         << ", style=" << dotId(op == grp.dominant ? "filled,bold" : "filled")
         << ", fillcolor=" << storageColour(s) << "];\n";
    }
    os << "    }\n";
  }
  for (ir::NodeId in : k.inputs)
    os << "    " << dotId(prefix + k.name + "/" + g.node(in).name)
       << " [label=" << dotLabel({g.node(in).name, "input"})
       << ", shape=box, style=filled, fillcolor=lightgrey];\n";
  os << "  }\n";
  std::set<ir::NodeId> inKernel(k.ops.begin(), k.ops.end());
  for (ir::NodeId op : k.ops)
    for (ir::NodeId o : g.node(op).operands) {
      std::string from =
          inKernel.count(o) ? prefix + g.node(o).name : prefix + k.name + "/" + g.node(o).name;
      os << "  " << dotId(from) << " -> " << dotId(prefix + g.node(op).name) << ";\n";
    }
}

/// One line for a library call's epilogue: what it computes, stores and reads.
std::string epilogueStr(const GemmEpilogue& e, const ir::Graph& g) {
  std::string reads;
  for (const EpilogueRead& r : e.reads)
    reads += fmt::format("{}{} {}", reads.empty() ? "" : ", ", valueName(g, r.value),
                         r.kind == EpilogueRead::Kind::Element ? "per element" : "broadcast");
  std::string s = fmt::format("epilogue: {} per result element, stores {}, reads {}",
                              valueList(g, e.ops), valueName(g, e.result),
                              reads.empty() ? "nothing" : reads);
  if (e.savedBytes > 0)
    s += fmt::format("; saves {} B of passes over the dot's result", e.savedBytes);
  return s;
}

/// One line for an operand's prologue: the layout ops the GEMM reads through, and from where.
std::string prologueStr(const char* operand, const GemmPrologue& p, const GemmOperand& layout,
                        const ir::Graph& g) {
  return fmt::format("prologue {}: {} read in place from {}, {}", operand, valueList(g, p.ops),
                     valueName(g, p.source), layout.str());
}

} // namespace

std::string storageName(Storage s) {
  switch (s) {
  case Storage::Register:
    return "register";
  case Storage::Shared:
    return "shared";
  case Storage::Global:
    return "global";
  case Storage::Output:
    return "output";
  case Storage::Input:
    return "input";
  }
  return "?";
}

std::string barrierName(Barrier b) {
  switch (b) {
  case Barrier::None:
    return "none";
  case Barrier::Warp:
    return "warp";
  case Barrier::Block:
    return "block";
  case Barrier::Grid:
    return "grid";
  case Barrier::LastBlock:
    return "last block";
  }
  return "?";
}

std::string mappingStr(const ThreadMapping& m) {
  if (const auto* e = std::get_if<ElementwiseMapping>(&m))
    return fmt::format("elementwise(vector={}, elements_per_thread={})", e->vectorWidth,
                       e->elementsPerThread);
  if (const auto* r = std::get_if<RowReduceMapping>(&m))
    return fmt::format(
        "row_reduce({}, threads_per_row={}, rows_per_block={}, split={}, vector={}{})",
        r->kind == RowReduceMapping::Kind::WarpPerRow ? "warp_per_row" : "block_per_row",
        r->threadsPerRow, r->rowsPerBlock, r->splitFactor, r->vectorWidth,
        r->clusterBlocks > 1 ? fmt::format(", cluster_per_row={}", r->clusterBlocks) : "");
  const auto& c = std::get<ColumnReduceMapping>(m);
  return fmt::format("column_reduce(tile_columns={}, tile_rows={}, split={}, atomics={})",
                     c.tileColumns, c.tileRows, c.splitFactor, c.useAtomics ? "yes" : "no");
}

namespace {

std::string tileSpaceStr(const TileSpace& s, const ir::Graph& g) {
  const char* kind = s.kind == TileSpace::Kind::Rows      ? "rows"
                     : s.kind == TileSpace::Kind::Columns ? "columns"
                                                          : "elements";
  std::string str = fmt::format("{} {} ({} per tile", s.units.str(), kind, s.unitsPerTile);
  if (s.split > 1) str += fmt::format(", split {}", s.split);
  if (s.clusterParts > 1) str += fmt::format(", in {} parts, one per block of a cluster", s.clusterParts);
  return str + ") of " + valueName(g, s.anchor);
}

/// The groups whose reduces in phase `p` stream their rows (no row slots for them there), with
/// the vector steps a thread loads at once (RowReduceMapping::streamLoads), where more than one.
std::string streamedRows(const PhasePlan& p, const KernelPlan& k, const ir::Graph& g) {
  std::set<int> groups;
  for (size_t i = p.firstStage; i < p.firstStage + p.stageCount && i < k.stages.size(); ++i) {
    const Stage& st = k.stages[i];
    for (ir::NodeId v : st.materialized)
      if (g.node(v).kind == ir::OpKind::Reduce && !(p.slots && p.slots->group == st.group))
        groups.insert(st.group);
  }
  std::string list;
  for (int gi : groups)
    if (const auto* r = std::get_if<RowReduceMapping>(&k.groups[size_t(gi)].mapping);
        r && r->streamLoads > 1)
      list += fmt::format("{}group {} ({} steps of {} a thread at once)", list.empty() ? "" : ", ",
                          gi, r->streamLoads, std::max(1, r->vectorWidth));
  return list;
}

std::string printPhasePlan(const PhasePlan& p, size_t index, const KernelPlan& k,
                           const ir::Graph& g) {
  std::ostringstream os;
  size_t last = p.firstStage + std::max<size_t>(p.stageCount, 1) - 1;
  std::string stages = p.stageCount > 1 ? fmt::format("stages {}-{}", p.firstStage, last)
                                        : fmt::format("stage {}", p.firstStage);
  os << fmt::format("  phase {}: {}, tiles over {}\n", index, stages, tileSpaceStr(p.space, g));
  if (std::string streamed = streamedRows(p, k, g); !streamed.empty())
    os << "    rows streamed: " << streamed << "\n";
  if (!p.acrossStages.empty()) {
    std::string stages;
    for (size_t s : p.acrossStages)
      stages += (stages.empty() ? "" : ", ") + std::to_string(s);
    os << "    across tiles: stage " << stages << ", combined behind a grid barrier\n";
  }
  if (p.slots) {
    const SlotPlan& sp = *p.slots;
    std::vector<ir::NodeId> reused(sp.reused.begin(), sp.reused.end());
    os << fmt::format("    slots: group {}, {} step(s) of {} per thread, {} registers, reused {}\n",
                      sp.group, sp.steps, std::max(1, sp.mapping.vectorWidth), sp.registers,
                      valueList(g, reused));
    if (!sp.across.empty()) {
      os << fmt::format("    slot accumulators: {}, combined in shared memory at {} ({} B)\n",
                        valueList(g, sp.across), sp.combineOffset, sp.combineBytes);
    }
  }
  for (const SharedPartials& s : p.sharedPartials)
    os << fmt::format("    shared partials: {} at {}\n", valueName(g, s.reduce), s.offset);
  bool clusterPartials = !p.sharedPartials.empty() || (p.slots && !p.slots->across.empty());
  if (p.throughCluster && clusterPartials)
    os << "    block partials combined across the cluster in shared memory: one row per cluster\n";
  if (!p.staged.empty()) {
    std::string list;
    for (const StagedInput& s : p.staged)
      list += fmt::format("{}{} +{}{}", list.empty() ? "" : ", ", valueName(g, s.input), s.offset,
                          s.computed     ? " (computed)"
                          : s.vector > 1 ? fmt::format(" (x{})", s.vector)
                                         : "");
    os << fmt::format("    staged in shared memory once per {}, at {}: {}\n",
                      p.throughCluster ? "cluster (each block loads its share, copies the rest "
                                         "from its cluster's blocks)"
                                       : "block",
                      p.stagedOffset, list);
  }
  if (!p.slices.empty()) {
    std::string list;
    for (const TileSlice& s : p.slices)
      list += fmt::format("{}{} {} +{}", list.empty() ? "" : ", ", valueName(g, s.input),
                          ir::shapeStr(s.shape), s.offset);
    os << fmt::format("    tile slices in shared memory {}, at {}: {}\n",
                      p.contiguousTiles
                          ? "where the tile's differ from the previous tile's (contiguous tiles "
                            "per block)"
                          : "per tile",
                      p.slicesOffset, list);
  }
  return os.str();
}

} // namespace

std::string printKernelPlan(const KernelPlan& k, const ir::Graph& g) {
  std::ostringstream os;
  os << "kernel " << k.name << "\n";
  os << "  ops: " << valueList(g, k.ops) << "\n";
  os << "  inputs: " << valueList(g, k.inputs) << "\n";
  os << "  outputs: " << valueList(g, k.outputs) << "\n";
  for (size_t i = 0; i < k.groups.size(); ++i) {
    const Group& grp = k.groups[i];
    os << fmt::format("  group {}: dominant {}, sub-dominants {}, mapping {}\n", i,
                      valueName(g, grp.dominant), valueList(g, grp.subDominants),
                      mappingStr(grp.mapping));
    os << "    ops: " << valueList(g, grp.ops) << "\n";
  }
  os << "  storage:\n";
  for (const auto& [id, p] : k.placement) {
    os << "    " << valueName(g, id) << ": " << storageName(p.storage);
    if (p.storage == Storage::Shared || p.resident)
      os << fmt::format(" [offset {}, {} B]", p.sharedOffset, p.sharedBytes);
    if (p.resident)
      os << fmt::format(", resident across grid barriers: {} tile(s) per block, phases {}-{}, "
                        "saves {} B of global traffic",
                        k.residentTiles, p.resident->firstPhase, p.resident->lastPhase,
                        p.resident->savedBytes);
    if (p.buffer >= 0) os << " b" << p.buffer;
    if (p.registerReuse) os << ", reused in registers";
    if (p.stored && p.stored->tooManyOps)
      os << fmt::format(", stored: regenerated in {} phases from too many ops", p.stored->phases);
    else if (p.stored)
      os << fmt::format(", stored: used in {} phases, recompute {:.1f} B/element per further "
                        "phase > store + reloads {:.1f} B/element",
                        p.stored->phases, p.stored->recomputeBytes, p.stored->storeBytes);
    os << "\n";
  }
  for (size_t i = 0; i < k.stages.size(); ++i) {
    const Stage& s = k.stages[i];
    os << fmt::format("  stage {}: group {}, barrier before {}, materialize {}\n", i, s.group,
                      barrierName(s.barrierBefore), valueList(g, s.materialized));
  }
  for (size_t i = 0; i < k.phases.size(); ++i)
    os << printPhasePlan(k.phases[i], i, k, g);
  const LaunchPlan& l = k.launch;
  os << fmt::format("  launch: block {}, tiles {}, max blocks {}{}, shared {} B, max registers {}, "
                    "cooperative {}{}\n",
                    l.blockSize, l.tiles.str(), l.maxBlocks,
                    l.fillSMs ? " (more where the compiled kernel fits more per SM)" : "",
                    l.sharedBytes, l.maxRegisters, l.cooperative ? "yes" : "no",
                    l.clusterSize > 1 ? fmt::format(", cluster {}{}", l.clusterSize,
                                                    l.clusterRequired ? " (rows shared)" : "")
                                      : "");
  const RegisterEstimate r = estimateRegisters(g, k);
  os << fmt::format("  registers: estimated {} = base {} + {} buffer(s) + max(loop {}, combine {}) "
                    "+ slots {}\n",
                    r.total(), r.base, r.pointers, r.stream, r.combine, r.slots);
  os << fmt::format("  emission: reduce scratch {} B, staging arena {} B, .maxnreg {}{}\n",
                    k.reduceScratchBytes, k.stagingBytes,
                    k.registerLimit > 0 ? std::to_string(k.registerLimit) : "none",
                    k.minBlocksPerSM > 0 ? fmt::format(", .minnctapersm {}", k.minBlocksPerSM)
                                         : "");
  return os.str();
}

std::string printFusionPlan(const FusionPlan& plan) {
  std::ostringstream os;
  const ir::Graph& g = plan.graph;
  os << fmt::format("fusion plan: policy {}, device {} ({}), {} step(s), {} kernel(s)\n",
                    policyName(plan.policy), plan.device.name, plan.device.smName(),
                    plan.steps.size(), plan.kernelCount());
  if (!plan.symbolRanges.empty())
    os << "planned for " << ir::rangesStr(plan.symbolRanges) << "\n";
  for (const std::string& note : plan.notes)
    os << "graph: " << note << "\n";
  os << "buffers:\n";
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    os << fmt::format("  b{}: {} {} {}[{}]", i, bufferKindName(b.kind), valueName(g, b.value),
                      ir::dtypeName(b.dtype), b.elements.str());
    if (b.slot >= 0) os << " slot " << b.slot;
    os << "\n";
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    os << "step " << i << ": ";
    if (const auto* call = std::get_if<LibraryCall>(&plan.steps[i])) {
      os << "library call " << valueName(g, call->op) << " (" << ir::opName(g.node(call->op).kind)
         << ")\n";
      if (g.node(call->op).kind == ir::OpKind::Dot) os << "  " << call->gemm.str() << "\n";
      if (!call->epilogue.a.empty())
        os << "  " << prologueStr("a", call->epilogue.a, call->gemm.a, g) << "\n";
      if (!call->epilogue.b.empty())
        os << "  " << prologueStr("b", call->epilogue.b, call->gemm.b, g) << "\n";
      if (!call->epilogue.empty()) os << "  " << epilogueStr(call->epilogue, g) << "\n";
      if (!call->epilogue.store.empty())
        os << "  store: through " << valueList(g, call->epilogue.store) << " into "
           << valueName(g, call->result()) << ", " << call->gemm.c.str() << "\n";
      continue;
    }
    os << printKernelPlan(std::get<KernelPlan>(plan.steps[i]), g);
  }
  return os.str();
}

std::string kernelPlanDot(const KernelPlan& k, const ir::Graph& g) {
  std::ostringstream os;
  os << "digraph " << dotId(k.name) << " {\n  node [shape=ellipse, fontsize=10];\n";
  kernelDotBody(os, k, g, "");
  os << "}\n";
  return os.str();
}

std::string fusionPlanDot(const FusionPlan& plan) {
  std::ostringstream os;
  const ir::Graph& g = plan.graph;
  os << "digraph plan {\n  compound=true;\n  node [shape=ellipse, fontsize=10];\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (const auto* call = std::get_if<LibraryCall>(&plan.steps[i])) {
      const ir::Node& n = g.node(call->op);
      std::vector<std::string> label = {n.name, "library " + std::string(ir::opName(n.kind))};
      for (const GemmPrologue* p : {&call->epilogue.a, &call->epilogue.b})
        if (!p->empty())
          label.push_back(fmt::format("+ prologue of {} op(s) on {}", p->ops.size(),
                                      g.node(p->source).name));
      if (!call->epilogue.empty())
        label.push_back(fmt::format("+ epilogue of {} op(s), stores {}",
                                    call->epilogue.ops.size(), g.node(call->epilogue.result).name));
      if (!call->epilogue.store.empty())
        label.push_back(fmt::format("+ stored through {} layout op(s) as {}",
                                    call->epilogue.store.size(), g.node(call->result()).name));
      os << "  " << dotId("s" + std::to_string(i) + "/" + n.name) << " [label=" << dotLabel(label)
         << ", shape=box3d];\n";
      continue;
    }
    kernelDotBody(os, std::get<KernelPlan>(plan.steps[i]), g, "s" + std::to_string(i) + "/");
  }
  os << "}\n";
  return os.str();
}

} // namespace weft::fusion
