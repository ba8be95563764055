// Seeded random inputs: the same numbers for a seed, in the documented ranges.
#include <catch2/catch.hpp>

#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "weft/error.h"

using namespace weft;
using weft::frontend::randomTensor;

TEST_CASE("random tensors are deterministic per seed and stream and stay in range") {
  HostTensor a = randomTensor(DType::f32, {1000}, 7), b = randomTensor(DType::f32, {1000}, 7);
  CHECK(a.bytes == b.bytes);
  CHECK(randomTensor(DType::f32, {1000}, 8).bytes != a.bytes);
  CHECK(randomTensor(DType::f32, {1000}, 7, 1).bytes != a.bytes);
  double lo = 1, hi = -1;
  for (int i = 0; i < 1000; ++i) {
    lo = std::min(lo, a.get(i));
    hi = std::max(hi, a.get(i));
  }
  CHECK(lo >= -1.0);
  CHECK(lo < -0.9);
  CHECK(hi < 1.0);
  CHECK(hi > 0.9);
  HostTensor ints = randomTensor(DType::i32, {1000}, 1);
  HostTensor bools = randomTensor(DType::boolean, {1000}, 1);
  int trues = 0;
  for (int i = 0; i < 1000; ++i) {
    CHECK(std::abs(ints.get(i)) <= 8);
    trues += bools.get(i) != 0;
  }
  CHECK(trues > 400);
  CHECK(trues < 600);
}

TEST_CASE("random inputs follow the graph's inputs under the binding") {
  auto g = frontend::readGraphJson(R"({"inputs": [{"name": "x", "dtype": "f16", "shape": ["B", 3]},
      {"name": "m", "dtype": "bool", "shape": ["B"]}],
    "ops": [{"name": "y", "op": "neg", "inputs": ["x"]}], "outputs": ["y"]})",
                                   "r.json");
  auto ins = frontend::randomInputs(g.graph, {{"B", 4}}, 3);
  REQUIRE(ins.size() == 2);
  CHECK(ins[0].typeStr() == "f16[4, 3]");
  CHECK(ins[1].typeStr() == "bool[4]");
  CHECK_THROWS_WITH(
      frontend::randomInputs(g.graph, {}, 3),
      "input \"x\" f16[B, 3]: symbol \"B\" is not bound; give it a size, e.g. --bind B=16");
}
