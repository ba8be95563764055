#include "frontend/random_inputs.h"

#include <fmt/format.h>

#include "weft/error.h"

namespace weft::frontend {

HostTensor randomTensor(DType dtype, const std::vector<int64_t>& shape, uint64_t seed,
                        uint64_t stream) {
  SplitMix64 rng{seed * 0x632be59bd9b4e019ull + stream * 0x9e3779b97f4a7c15ull + 1};
  HostTensor t(dtype, shape);
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (ir::isFloat(dtype))
      t.set(i, rng.unit() * 2.0 - 1.0);
    else if (ir::isInteger(dtype))
      t.set(i, static_cast<double>(static_cast<int64_t>(rng.next() % 17) - 8));
    else
      t.set(i, (rng.next() >> 63) ? 1.0 : 0.0);
  }
  return t;
}

std::vector<HostTensor> randomInputs(const ir::Graph& g, const ir::Binding& binding,
                                     uint64_t seed) {
  std::vector<HostTensor> out;
  for (size_t k = 0; k < g.inputs().size(); ++k) {
    const ir::Node& n = g.node(g.inputs()[k]);
    std::vector<int64_t> shape;
    try {
      shape = ir::evaluate(n.type.shape, binding);
    } catch (const InputError& e) {
      throw InputError(fmt::format("input \"{}\" {}: {}", n.name, n.type.str(), e.what()));
    }
    out.push_back(randomTensor(n.type.dtype, shape, seed, k));
  }
  return out;
}

} // namespace weft::frontend
