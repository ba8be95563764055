// Store against recompute in stitched kernels (fusion/stitching_scheme.cc, ValuePlacement::stored):
// a local value that stages of several phases use is stored once and read back where
// regenerating it would load its whole cone again, and every output still matches the
// interpreter. Byte counts are the simulator's (32-byte sectors per warp request).
#include <catch2/catch.hpp>

#include "bench/synthetic_graphs.h"
#include "codegen/compile.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "device_profiles.h"
#include "sim_runner.h"
#include "two_phase_graph.h"

using namespace weft;
using ir::DType;
using ir::OpKind;

namespace {

using test::bytesOf;
using test::h100;
using test::onlyKernel;

/// Runs the plan's single kernel on the simulator, checks every output against the
/// interpreter and returns its counters.
LaunchCounters runOne(const fusion::FusionPlan& plan, double tolerance = 1e-4) {
  return test::checkOneKernelOnSim(plan, tolerance);
}

} // namespace

TEST_CASE("a value two phases use is stored once, not regenerated from its three inputs",
          "[codegen][traffic][sim]") {
  // v = tanh(x + y) * z and w = v - max(v) over each row are computed in the row reduce's
  // phase, which also sums w's columns; out = w * colsum(w) needs that sum, behind a grid
  // barrier. Regenerating w there loads x, y and z again (12 bytes an element); storing it
  // costs a store and a load (8).
  test::TwoPhase t(2048, 256);
  const ir::Graph& g = t.g;
  ir::NodeId x = t.x, y = t.y, z = t.z, w = t.w, out = t.out;
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  const fusion::ValuePlacement& p = k.placement.at(w);
  REQUIRE(p.stored);
  CHECK(p.stored->phases == 2);
  CHECK(!p.stored->tooManyOps);
  CHECK(p.stored->recomputeBytes > p.stored->storeBytes);
  CHECK(p.stored->storeBytes == 8.0);
  // The later phase reads w at its own rows in the same tiles: each block keeps its tiles of
  // w in shared memory across the grid barrier (resident_values_test.cc has the global path).
  CHECK(p.storage == fusion::Storage::Shared);
  CHECK(p.resident);
  LaunchCounters c = runOne(plan, 1e-3); // out scales by sums of 2048 rows, summed in any order
  // x, y and z once; out written once. The column sum's block partials, its result and its
  // copies staged per block are what is left (under a quarter of w; regenerating w would read
  // x, y and z again, three times w).
  int64_t reads = bytesOf(g, x) + bytesOf(g, y) + bytesOf(g, z);
  int64_t writes = bytesOf(g, out);
  CHECK(int64_t(c.globalSectorsRead) * 32 >= reads);
  CHECK(int64_t(c.globalSectorsRead) * 32 <= reads + bytesOf(g, w) / 4);
  CHECK(int64_t(c.globalSectorsWritten) * 32 >= writes);
  CHECK(int64_t(c.globalSectorsWritten) * 32 <= writes + bytesOf(g, w) / 4);
}

TEST_CASE("a cheap value is regenerated, not stored", "[codegen][traffic]") {
  // v = x + 1 costs 4 bytes an element to regenerate (x) against 8 to store and read back.
  ir::Graph g;
  ir::Shape shape = {2048, 256};
  auto x = g.parameter("x", {DType::f32, shape});
  auto v = g.binary(OpKind::Add, x, g.constant(DType::f32, shape, {1.0}), "v");
  auto col = g.reduce(ir::ReduceKind::Sum, v, {0}, "col");
  g.setOutputs({g.binary(OpKind::Mul, v, g.broadcastInDim(col, shape, {1}), "out")});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::ValuePlacement& p = onlyKernel(plan).placement.at(v);
  CHECK(!p.stored);
  CHECK(p.storage == fusion::Storage::Register);
}

TEST_CASE("cluster_200 stores what its phases share instead of regenerating it",
          "[codegen][traffic][sim]") {
  // The suite's generated cluster of 200 ops on [2048, 768] (bench/synthetic_graphs.h): one
  // kernel of ten phases. It moved 42.3x its compulsory bytes when every phase regenerated its
  // values from x with all their loads; stored values, staging of the column sums later phases
  // broadcast, and registers for what several stages of a phase read left 12.6x (each phase
  // read one [2048, 768] value and stored the one the next phase needs). The values phases
  // hand on, and x, now stay in shared memory across the grid barriers (resident): about 3.6x.
  // What is left is each block's copy of the 13 bias rows and 9 column sums (264 blocks x 3 KB
  // each) and the column sums' block partials.
  ir::Graph g = bench::elementwiseCluster(200, 2048, 768);
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  int stored = 0, resident = 0;
  for (const auto& [id, p] : k.placement) {
    stored += p.stored && !p.stored->tooManyOps ? 1 : 0;
    resident += p.resident ? 1 : 0;
  }
  CHECK(stored >= 4);
  CHECK(resident >= 9);
  LaunchCounters c = runOne(plan);
  int64_t compulsory = bytesOf(g, g.inputs().at(0)) + bytesOf(g, g.outputs().at(0));
  for (size_t i = 1; i < g.inputs().size(); ++i)
    compulsory += bytesOf(g, g.inputs()[i]);
  double ratio = double(c.globalSectorsRead + c.globalSectorsWritten) * 32 / double(compulsory);
  INFO("moved / compulsory = " << ratio);
  CHECK(ratio <= 3.8);
}

TEST_CASE("bias + GELU backward: grad_x is stored by the pass that sums its columns",
          "[codegen][traffic][sim]") {
  // The backward weft grad writes for bias + GELU (docs/training.md): grad_x = d_h and
  // grad_bias = its column sum, split across blocks. The split sum's pass stores each d_h it
  // adds (one pass over x and dy), where a pass of its own stored grad_x and the sum recomputed
  // d_h from x and dy again (1.67x the compulsory bytes at B = 4096).
  constexpr int64_t kRows = 4096, kCols = 768;
  ir::Graph g;
  ir::Shape shape = {kRows, kCols};
  auto x = g.parameter("x", {DType::f32, shape});
  auto bias = g.parameter("bias", {DType::f32, {kCols}});
  auto dy = g.parameter("dy", {DType::f32, shape});
  // d_h = dy * gelu'(h), h = x + bias; gelu'(h) = 0.5 (1 + erf(h / sqrt 2)) + h exp(-h^2 / 2) / sqrt(2 pi)
  auto h = g.binary(OpKind::Add, x, g.broadcastInDim(bias, shape, {1}), "h");
  auto c = [&](double v) { return g.constant(DType::f32, shape, {v}); };
  auto cdf = g.binary(OpKind::Mul, c(0.5),
                      g.binary(OpKind::Add, c(1.0),
                               g.unary(OpKind::Erf, g.binary(OpKind::Mul, h, c(0.7071067811865476)))));
  auto pdf = g.binary(OpKind::Mul, c(0.3989422804014327),
                      g.unary(OpKind::Exp, g.binary(OpKind::Mul, c(-0.5), g.binary(OpKind::Mul, h, h))));
  auto dh = g.binary(OpKind::Mul, dy, g.binary(OpKind::Add, cdf, g.binary(OpKind::Mul, h, pdf)),
                     "grad_x");
  auto db = g.reduce(ir::ReduceKind::Sum, dh, {0}, "grad_bias");
  g.setOutputs({dh, db});
  fusion::FusionPlan plan = fusion::plan(g, h100(), fusion::Policy::AStitch);
  const fusion::KernelPlan& k = onlyKernel(plan);
  const auto* m = std::get_if<fusion::ColumnReduceMapping>(&k.groups.at(0).mapping);
  REQUIRE(m);
  REQUIRE(m->splitFactor > 1);
  // One stage stores both: the sum and its operand.
  REQUIRE(k.stages.size() == 1);
  CHECK(k.stages[0].materialized == std::vector<ir::NodeId>{db, dh});
  LaunchCounters counters = runOne(plan, 1e-3);
  int64_t compulsory = bytesOf(g, x) + bytesOf(g, bias) + bytesOf(g, dy) + bytesOf(g, dh) +
                       bytesOf(g, db);
  double ratio =
      double(counters.globalSectorsRead + counters.globalSectorsWritten) * 32 / double(compulsory);
  INFO("moved / compulsory = " << ratio);
  CHECK(ratio <= 1.10);
}
