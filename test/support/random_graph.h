#pragma once
// A seeded generator of random memory-intensive graphs for differential testing: elementwise
// chains, broadcasts, row and column reductions, reshapes, transposes, slices,
// concatenations, gathers, several dominants and several outputs, with odd sizes (1, 7, 33, 1000).
// Every op keeps values finite (log, sqrt, div and exp only see safe operands), so results
// compare meaningfully with the reference interpreter.
#include <cstdint>

#include "ir/graph.h"

namespace weft::testing {

struct RandomGraphOptions {
  int minOps = 3;
  int maxOps = 14;
  int64_t maxElements = 16384; // per value, keeps simulation fast
  bool allowHalf = true;       // some graphs in f16/bf16
  /// Gathers by integer inputs (from a stream of their own). Off by default: every seed's
  /// graph stays the one the differential tests and their regression seeds were written for.
  bool allowGather = false;
};

ir::Graph randomGraph(uint64_t seed, const RandomGraphOptions& options = {});

} // namespace weft::testing
