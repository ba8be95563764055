#include "fusion/memory_planning.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace weft::fusion {
namespace {

/// For every buffer, the steps that write and read it.
std::vector<std::pair<int, int>> liveRanges(const FusionPlan& plan) {
  std::vector<std::pair<int, int>> range(plan.buffers.size(), {-1, -1});
  auto touch = [&](int b, int step) {
    if (b < 0) return;
    auto& r = range[static_cast<size_t>(b)];
    r.first = r.first < 0 ? step : std::min(r.first, step);
    r.second = std::max(r.second, step);
  };
  auto bufferOf = [&](ir::NodeId v) {
    return v >= 0 && static_cast<size_t>(v) < plan.bufferOfValue.size()
               ? plan.bufferOfValue[static_cast<size_t>(v)]
               : -1;
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    int step = static_cast<int>(s);
    if (auto* k = std::get_if<KernelPlan>(&plan.steps[s])) {
      for (ir::NodeId v : k->inputs)
        touch(bufferOf(v), step);
      for (ir::NodeId v : k->outputs)
        touch(bufferOf(v), step);
      for (auto& [v, p] : k->placement) {
        touch(p.buffer, step);
        touch(p.partialsBuffer, step);
      }
    } else {
      const auto& call = std::get<LibraryCall>(plan.steps[s]);
      touch(bufferOf(call.result()), step);
      for (ir::NodeId o : call.reads(plan.graph))
        touch(bufferOf(o), step);
    }
  }
  return range;
}

bool planned(const Buffer& b) {
  return b.kind == Buffer::Kind::Intermediate || b.kind == Buffer::Kind::Scratch;
}

} // namespace

std::pair<int, int> liveRange(const FusionPlan& plan, int b) {
  if (!planned(plan.buffers[static_cast<size_t>(b)])) return {-1, -1};
  return liveRanges(plan)[static_cast<size_t>(b)];
}

MemoryReport planMemory(FusionPlan& plan, const ir::Binding& binding) {
  MemoryReport report;
  auto ranges = liveRanges(plan);
  std::vector<int64_t> bytes(plan.buffers.size(), 0);
  std::vector<size_t> order;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    Buffer& buf = plan.buffers[b];
    buf.slot = -1;
    if (!planned(buf)) continue;
    bytes[b] = buf.elements.evaluate(binding) * ir::dtypeBytes(buf.dtype);
    report.unsharedBytes += bytes[b];
    if (ranges[b].first < 0) ranges[b] = {0, 0}; // never touched: give it a range anyway
    order.push_back(b);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranges[a].first != ranges[b].first ? ranges[a].first < ranges[b].first : a < b;
  });

  struct Slot {
    int64_t bytes = 0;
    int freeAfter = -1; // last step of its current occupant
  };
  std::vector<Slot> slots;
  for (size_t b : order) {
    int best = -1;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (slots[s].freeAfter >= ranges[b].first) continue; // still live when b is written
      auto fit = [&](size_t i) { return std::llabs(slots[i].bytes - bytes[b]); };
      if (best < 0 || fit(s) < fit(static_cast<size_t>(best))) best = static_cast<int>(s);
    }
    if (best < 0) {
      best = static_cast<int>(slots.size());
      slots.push_back({});
    }
    Slot& slot = slots[static_cast<size_t>(best)];
    slot.bytes = std::max(slot.bytes, bytes[b]);
    slot.freeAfter = ranges[b].second;
    plan.buffers[b].slot = best;
  }
  report.slots = static_cast<int>(slots.size());
  for (const Slot& s : slots)
    report.slotBytes += s.bytes;
  // Bytes live at each step, as a sweep over the ranges' ends (summing every buffer at every
  // step was quadratic: a tenth of planning a 10,000-node graph under the none policy).
  int steps = static_cast<int>(plan.steps.size());
  std::vector<int64_t> change(static_cast<size_t>(steps) + 1, 0);
  for (size_t b : order) {
    if (ranges[b].first >= steps || ranges[b].second < ranges[b].first) continue;
    change[static_cast<size_t>(ranges[b].first)] += bytes[b];
    change[static_cast<size_t>(std::min(ranges[b].second, steps - 1)) + 1] -= bytes[b];
  }
  int64_t live = 0;
  for (int t = 0; t < steps; ++t) {
    live += change[static_cast<size_t>(t)];
    report.peakBytes = std::max(report.peakBytes, live);
  }
  return report;
}

} // namespace weft::fusion
