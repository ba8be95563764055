#pragma once
// Graphs and helpers the stitched-kernel traffic tests share (resident_values_test.cc,
// store_recompute_test.cc).
#include <catch2/catch.hpp>

#include "fusion/fusion_plan.h"
#include "ir/graph.h"

namespace weft::test {

inline int64_t bytesOf(const ir::Graph& g, ir::NodeId v) {
  const ir::Node& n = g.node(v);
  return ir::numElements(n.type.shape).size() * ir::dtypeBytes(n.type.dtype);
}

/// w = tanh(x + y) * z - max over its row, read by a later phase at its own rows:
/// out = w * colsum(w) (the column sum needs every row first, behind a grid barrier).
struct TwoPhase {
  ir::Graph g;
  ir::NodeId x, y, z, w, out;
  explicit TwoPhase(int64_t rows, int64_t cols, ir::DType dtype = ir::DType::f32) {
    ir::Shape shape = {rows, cols};
    x = g.parameter("x", {dtype, shape});
    y = g.parameter("y", {dtype, shape});
    z = g.parameter("z", {dtype, shape});
    auto sum = g.binary(ir::OpKind::Add, x, y);
    auto v = g.binary(ir::OpKind::Mul, g.unary(ir::OpKind::Tanh, sum), z, "v");
    auto row = g.reduce(ir::ReduceKind::Max, v, {1}, "row");
    w = g.binary(ir::OpKind::Sub, v, g.broadcastInDim(row, shape, {0}), "w");
    auto col = g.reduce(ir::ReduceKind::Sum, w, {0}, "col");
    out = g.binary(ir::OpKind::Mul, w, g.broadcastInDim(col, shape, {1}), "out");
    g.setOutputs({out});
  }
};

inline const fusion::KernelPlan& onlyKernel(const fusion::FusionPlan& plan) {
  REQUIRE(plan.steps.size() == 1);
  return std::get<fusion::KernelPlan>(plan.steps[0]);
}

} // namespace weft::test
