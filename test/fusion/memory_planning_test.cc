#include <catch2/catch.hpp>

#include "fusion/memory_planning.h"
#include "fusion/plan.h"
#include "plan_queries.h"
#include "test_graphs.h"

using namespace weft;
using namespace weft::fusion;
using namespace weft::fusion::testing;

namespace {
/// A plan with three intermediates: a (steps 0–1), b (1–2), c (2–3), plus one scratch in step 1.
FusionPlan chain() {
  FusionPlan p;
  ir::Graph& g = p.graph;
  ir::NodeId x = g.parameter("x", {ir::DType::f32, {256}});
  ir::NodeId a = g.unary(ir::OpKind::Exp, x, "a");
  ir::NodeId b = g.unary(ir::OpKind::Exp, a, "b");
  ir::NodeId c = g.unary(ir::OpKind::Exp, b, "c");
  ir::NodeId d = g.unary(ir::OpKind::Exp, c, "d");
  g.addOutput(d);
  p.bufferOfValue.assign(g.size(), -1);
  auto buffer = [&](Buffer::Kind kind, ir::NodeId v, int64_t n) {
    p.buffers.push_back(Buffer{kind, v, ir::DType::f32, ir::Dim(n), -1});
    return static_cast<int>(p.buffers.size()) - 1;
  };
  p.bufferOfValue[static_cast<size_t>(x)] = buffer(Buffer::Kind::Input, x, 256);
  p.bufferOfValue[static_cast<size_t>(a)] = buffer(Buffer::Kind::Intermediate, a, 256);
  p.bufferOfValue[static_cast<size_t>(b)] = buffer(Buffer::Kind::Intermediate, b, 128);
  p.bufferOfValue[static_cast<size_t>(c)] = buffer(Buffer::Kind::Intermediate, c, 256);
  p.bufferOfValue[static_cast<size_t>(d)] = buffer(Buffer::Kind::Output, d, 256);
  int scratch = buffer(Buffer::Kind::Scratch, b, 64);
  auto kernel = [&](ir::NodeId in, ir::NodeId out) {
    KernelPlan k;
    k.ops = {out};
    k.inputs = {in};
    k.outputs = {out};
    return k;
  };
  KernelPlan k1 = kernel(a, b);
  k1.placement[b].partialsBuffer = scratch;
  p.steps = {kernel(x, a), k1, kernel(b, c), kernel(c, d)};
  return p;
}
} // namespace

TEST_CASE("memory planning: live ranges over the step sequence", "[planner][memory]") {
  FusionPlan p = chain();
  CHECK(liveRange(p, 0) == std::pair{-1, -1}); // inputs are the caller's
  CHECK(liveRange(p, 1) == std::pair{0, 1});
  CHECK(liveRange(p, 2) == std::pair{1, 2});
  CHECK(liveRange(p, 3) == std::pair{2, 3});
  CHECK(liveRange(p, 5) == std::pair{1, 1});
}

TEST_CASE("memory planning: dead buffers are reused, overlapping ones never share",
          "[planner][memory]") {
  FusionPlan p = chain();
  MemoryReport r = planMemory(p);
  auto slot = [&](int b) { return p.buffers[static_cast<size_t>(b)].slot; };
  CHECK(slot(0) == -1);
  CHECK(slot(4) == -1);
  CHECK(slot(1) != slot(2)); // a and b overlap in step 1
  CHECK(slot(1) != slot(5)); // scratch of step 1 overlaps a and b
  CHECK(slot(2) != slot(5));
  CHECK(slot(2) != slot(3)); // b and c overlap in step 2
  CHECK(slot(3) == slot(1)); // c reuses a's storage (a is dead after step 1), same size
  CHECK(r.slots == 3);
  // step 1 holds a (1024 B) + b (512 B) + scratch (256 B)
  CHECK(r.peakBytes == 1024 + 512 + 256);
  CHECK(r.unsharedBytes == 1024 + 512 + 1024 + 256);
  CHECK(r.slotBytes == 1024 + 512 + 256);
}

TEST_CASE("memory planning: every planned plan keeps overlapping buffers apart",
          "[planner][memory]") {
  for (Policy policy : {Policy::Xla, Policy::AStitch}) {
    FusionPlan p = plan(layerNormDotGelu(), *deviceSpecProfile("a100"), policy);
    for (size_t a = 0; a < p.buffers.size(); ++a)
      for (size_t b = a + 1; b < p.buffers.size(); ++b) {
        if (p.buffers[a].slot < 0 || p.buffers[a].slot != p.buffers[b].slot) continue;
        auto ra = liveRange(p, static_cast<int>(a)), rb = liveRange(p, static_cast<int>(b));
        CHECK((ra.second < rb.first || rb.second < ra.first));
      }
  }
  // xla's chain of kernels frees its intermediates as it goes
  FusionPlan xla = plan(layerNorm(), *deviceSpecProfile("a100"), Policy::Xla);
  FusionPlan copy = xla;
  MemoryReport r = planMemory(copy);
  CHECK(r.slotBytes < r.unsharedBytes);
}
