#pragma once
// A step of the AStitch planner after the stitch scopes (stitch_scope.h): values one scope
// computes and a later one reads (across a library call: the forward's layer norm and GELU
// read by the backward after the dot) are recomputed by the reader from what is in memory
// anyway, as xla's fusion duplicates cheap producers, when that reads fewer bytes than storing
// the value and loading it again. What is recomputed: the value's chain of elementwise ops,
// reshapes and broadcasts of its own element count in the producing scope, down to leaves —
// graph inputs, library results, reductions and broadcast operands (the [B] statistics, a
// [512] parameter) — that the reading scope then loads. A leaf the producer does not store yet
// is stored (its bytes count). The values one scope reads from another are first decided
// together (each alone may not pay: the first loads what the rest share), then one by one.
// The reading scope gets the chain's ops as well (an op in two scopes is computed by both;
// only its home scope stores it). One plan line per decision says what and why.
#include <string>
#include <vector>

#include "fusion/graph_queries.h"
#include "fusion/stitch_scope.h"
#include "ir/symbol_ranges.h"

namespace weft::fusion {

/// The longest chain a reading scope recomputes for one value (longer ones are stored).
inline constexpr size_t kMaxRecomputedOps = 48;

struct ScopeRecomputation {
  /// Per op: the scope that stores it when it is read after its scope (-1: in no scope).
  std::vector<int> home;
  /// Per op: every scope that computes it (its home first among them or not).
  std::vector<std::vector<int>> scopesOf;
  std::vector<std::string> notes;
};

/// Adds recomputed chains to `scopes` (each scope's ops stay sorted) and returns each op's
/// home scope. Scope i is the plan's kernel i ("stitch<i>").
ScopeRecomputation recomputeAcrossScopes(const ir::Graph& g, const Users& users,
                                         std::vector<StitchScope>& scopes,
                                         const ir::SymbolRanges& ranges);

} // namespace weft::fusion
