#pragma once
// Shape-generic testing: a static graph with one size turned into a symbol, so that one
// generic compile can be run, and checked, at many bindings (issue 15).
#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace weft::testing {

/// `g` with every dim of size `size` (> 1) replaced by `symbol`, rebuilt through the graph
/// builder so that shape inference re-derives every other dim (a reshape's dim that is `k *
/// size` becomes `k * symbol`). nullopt when the graph cannot be written that way (a constant
/// with one value per element along such a dim, a slice or split of it) — or when the result,
/// bound back at `size`, is not exactly `g` (ir::fingerprint): the check that makes the
/// rewrite sound at the one binding where it can be compared.
std::optional<ir::Graph> withSymbolicDim(const ir::Graph& g, int64_t size,
                                         const std::string& symbol = "B");

} // namespace weft::testing
