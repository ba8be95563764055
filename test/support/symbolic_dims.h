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
///
/// With `perParameterSymbols`, parameter k's dims get the symbol `symbol` + k instead ("B0",
/// "B1", ...), as an ONNX export that names every input's axes on its own: the graph builder
/// must unify them where ops meet (ir/symbol_unification.h), and more than one symbol may
/// survive where nothing ties them together. The check binds every surviving symbol to `size`.
std::optional<ir::Graph> withSymbolicDim(const ir::Graph& g, int64_t size,
                                         const std::string& symbol = "B",
                                         bool perParameterSymbols = false);

/// Every symbol of `g` bound to `size`, and every symbol it unified away to the size its
/// equality gives (a binding that names them all, consistently).
ir::Binding bindEverySymbol(const ir::Graph& g, int64_t size);

} // namespace weft::testing
