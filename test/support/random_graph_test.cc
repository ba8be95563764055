#include <catch2/catch.hpp>

#include <set>

#include "ir/printer.h"
#include "random_graph.h"

using namespace weft;

TEST_CASE("random graphs are valid, deterministic per seed and varied", "[support]") {
  std::set<ir::OpKind> kinds;
  size_t multiOutput = 0;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    testing::RandomGraphOptions o;
    o.allowGather = seed % 2 == 1;
    ir::Graph g = testing::randomGraph(seed, o);
    REQUIRE_NOTHROW(ir::verify(g));
    CHECK(ir::printGraph(g) == ir::printGraph(testing::randomGraph(seed, o)));
    for (const ir::Node& n : g.nodes()) {
      kinds.insert(n.kind);
      CHECK(ir::checkedProduct(ir::evaluate(n.type.shape, {})) <= 16384 * 32);
    }
    multiOutput += g.outputs().size() > 1;
  }
  for (ir::OpKind k : {ir::OpKind::Reduce, ir::OpKind::BroadcastInDim, ir::OpKind::Reshape, ir::OpKind::Transpose,
                       ir::OpKind::Slice, ir::OpKind::Concatenate, ir::OpKind::Exp, ir::OpKind::Div,
                       ir::OpKind::Gather})
    CHECK(kinds.count(k) == 1);
  CHECK(multiOutput > 50);
}
