#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "random_graph.h"

using namespace weft;
using namespace weft::ir;

// canonicalize on random graphs: the same inputs and outputs (names, order, types), and the
// same values from the reference interpreter (== on values: x + 0 -> x may turn a -0 into +0).

TEST_CASE("canonicalize preserves the interface and values of random graphs",
          "[passes][pipeline][random]") {
  for (uint64_t seed = 0; seed < 150; ++seed) {
    CAPTURE(seed);
    Graph g = testing::randomGraph(seed);
    Graph c = passes::canonicalize(g);
    REQUIRE_NOTHROW(verify(c));
    REQUIRE(c.inputs().size() == g.inputs().size());
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      CHECK(c.node(c.inputs()[i]).name == g.node(g.inputs()[i]).name);
      CHECK(c.node(c.inputs()[i]).type == g.node(g.inputs()[i]).type);
    }
    REQUIRE(c.outputs().size() == g.outputs().size());
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      CHECK(c.node(c.outputs()[i]).name == g.node(g.outputs()[i]).name);
      CHECK(c.node(c.outputs()[i]).type == g.node(g.outputs()[i]).type);
    }
    CHECK(c.size() <= g.size() + g.outputs().size()); // at most one identity per output added

    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> value(-2.0, 2.0);
    std::vector<HostTensor> inputs;
    for (NodeId id : g.inputs()) {
      HostTensor t(g.node(id).type.dtype, evaluate(g.node(id).type.shape, {}));
      for (int64_t i = 0; i < t.numElements(); ++i)
        t.set(i, value(rng));
      inputs.push_back(std::move(t));
    }
    auto expected = interpret(g, inputs);
    auto got = interpret(c, inputs);
    for (size_t o = 0; o < expected.size(); ++o) {
      int64_t mismatches = 0;
      for (int64_t i = 0; i < expected[o].numElements(); ++i) {
        double e = expected[o].get(i), v = got[o].get(i);
        if (!(e == v || (std::isnan(e) && std::isnan(v)))) ++mismatches;
      }
      CHECK(mismatches == 0);
    }
  }
}
