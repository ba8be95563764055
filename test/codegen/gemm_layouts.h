#pragma once
// Test support for the GEMM tests (gemm_test.cc, gemm_tf32_test.cc, gemm_wgmma_test.cc):
// operands fed the ways graphs feed dots (dense, transposed, attention's head split and K^T),
// and the plan's GEMM.
#include <catch2/catch.hpp>
#include <variant>
#include <vector>

#include "fusion/fusion_plan.h"
#include "ir/graph.h"

namespace weft::test {

/// The GEMM plan of the plan's (first) library call; fails the test when there is none.
inline const fusion::GemmPlan& gemmOf(const fusion::FusionPlan& p) {
  for (const auto& s : p.steps)
    if (const auto* call = std::get_if<fusion::LibraryCall>(&s)) return call->gemm;
  FAIL("no library call in the plan");
  throw 0;
}

/// How a test operand reaches the dot.
enum class Feed {
  Dense,      // a parameter of the operand's shape
  Transposed, // a parameter of the transposed shape, then a transpose of the last two dims
  Heads,      // attention's head split: [rows, batch * cols] → reshape → transpose (1, 0, 2)
  HeadsT,     // K^T: [cols, batch * rows] → reshape → transpose (1, 2, 0)
};

/// An operand of shape [batch, rows, cols] (or [rows, cols] with batch 0) fed as `f`.
inline ir::NodeId feed(ir::Graph& g, const char* name, ir::DType t, int64_t batch, int64_t rows,
                       int64_t cols, Feed f) {
  auto param = [&](ir::Shape s) { return g.parameter(name, {t, std::move(s)}); };
  ir::Shape lead = batch ? ir::Shape{batch} : ir::Shape{};
  switch (f) {
  case Feed::Dense: {
    lead.push_back(rows);
    lead.push_back(cols);
    return param(lead);
  }
  case Feed::Transposed: {
    ir::Shape s = lead;
    s.push_back(cols);
    s.push_back(rows);
    std::vector<int64_t> perm;
    for (size_t i = 0; i < lead.size(); ++i)
      perm.push_back(int64_t(i));
    perm.push_back(int64_t(lead.size()) + 1);
    perm.push_back(int64_t(lead.size()));
    return g.transpose(param(s), perm);
  }
  case Feed::Heads: {
    ir::NodeId x = g.reshape(param({rows, batch * cols}), {rows, batch, cols});
    return g.transpose(x, {1, 0, 2});
  }
  case Feed::HeadsT: {
    ir::NodeId x = g.reshape(param({cols, batch * rows}), {cols, batch, rows});
    return g.transpose(x, {1, 2, 0});
  }
  }
  return -1;
}

inline ir::Graph layoutGraph(ir::DType t, int64_t batch, int64_t m, int64_t k, int64_t n, Feed a,
                             Feed b) {
  ir::Graph g;
  ir::NodeId x = feed(g, "a", t, batch, m, k, a);
  ir::NodeId y = feed(g, "b", t, batch, k, n, b);
  g.addOutput(g.dot(x, y, "out"));
  return g;
}

inline const char* feedName(Feed f) {
  return f == Feed::Dense        ? "dense"
         : f == Feed::Transposed ? "transposed"
         : f == Feed::Heads      ? "heads"
                                 : "heads^T";
}

} // namespace weft::test
