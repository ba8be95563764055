#pragma once
// Seeded random inputs for a graph, the same on every machine for a given seed (no std::
// distributions, whose results differ between standard libraries): floats uniform in
// [-1, 1), integers uniform in [-8, 8], bools true with probability 1/2.
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::frontend {

/// splitmix64: small, fast and fully specified, so a seed means the same numbers everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; } // [0, 1)
};

/// One tensor of `dtype` and `shape`; tensor k of a seed uses the stream (seed, k).
HostTensor randomTensor(DType dtype, const std::vector<int64_t>& shape, uint64_t seed,
                        uint64_t stream = 0);
/// One tensor per graph input (in g.inputs() order), shapes evaluated under `binding`
/// (InputError naming the input when a symbol is unbound).
std::vector<HostTensor> randomInputs(const ir::Graph& g, const ir::Binding& binding, uint64_t seed);

} // namespace weft::frontend
