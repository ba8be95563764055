#pragma once
// Small questions the planner's steps ask of a graph: which ops are sources that every kernel
// may regenerate inline, which expensive ops feed a broadcast, the row shape of a loop space.
// Pure functions of the graph; no planner state.
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft::fusion {

using Users = std::vector<std::vector<ir::NodeId>>;

/// Constants and iotas: free to regenerate inline in every kernel that uses them.
bool isSource(const ir::Node& n);

/// Whether `user` reads `operand` at positions only the data knows (a gather's operand 0, the
/// values gathered). Such a read is of memory: the operand is an input of the reading kernel
/// (a parameter, or a value an earlier kernel stored) or a source it regenerates at any index,
/// never an op the same kernel computes, whose elements live in other threads' registers or
/// other blocks' tiles. The stitch scopes, xla's fusions and recomputation across scopes keep
/// to that; tile slices never hold such an input.
bool readsAtDataPositions(const ir::Node& user, ir::NodeId operand);
/// Whether some user of `v` reads it that way and `v` is neither a parameter nor a source.
bool gatheredFromMemory(const ir::Graph& g, const Users& users, ir::NodeId v);

/// An expensive elementwise op whose result is broadcast (one-to-many), directly or through
/// reshapes: AStitch's second kind of dominant candidate (Observation-B).
bool isExpensiveBroadcastSource(const ir::Graph& g, const Users& users, ir::NodeId op);

/// Values of at most this many elements (and kMaxBlockComputedBytes) that every block may
/// compute for itself (blockComputable).
inline constexpr int64_t kMaxBlockComputedElements = 4096;
inline constexpr int64_t kMaxBlockComputedBytes = 16 * 1024;
/// Ops at most in such a value's cone: what each block computes per element.
inline constexpr int kMaxBlockComputedOps = 32;

/// Whether every block of a kernel can compute a small value for itself, and whether that pays.
enum class BlockComputable : uint8_t {
  No,       // too large, or a reduce, a library call or too many ops in its cone
  Inline,   // light ops over constants and iotas only (a mask): cheaper regenerated where read
  PerBlock, // reads an input or computes an expensive op: worth computing once per block
};

/// A small value that every block of its kernel can compute for itself: its size is static and
/// small (kMaxBlockComputed*), and it is computed, through at most kMaxBlockComputedOps
/// elementwise, broadcast and layout ops of the scope, from values read before the scope
/// (inputs, parameters) and sources only: no reduce, no library call, nothing another group
/// of the kernel computes first. An expensive op of that kind whose result is broadcast
/// (Figure 7's power.1 = (parameter.2 / 32)^2 over 128 elements) is then no dominant
/// candidate: rather than one stage materializing it behind a grid barrier, each phase that
/// reads it computes it into shared memory once per block (StagedInput::computed).
BlockComputable blockComputable(const ir::Graph& g, const std::vector<bool>& inScope,
                                ir::NodeId op);

/// Whether every one-to-many use of `op` (a broadcast that expands it, directly or through
/// reshapes and broadcasts) repeats it along its result's outermost dim: a row vector that
/// every row of a loop reads whole (power.1 over Figure 7's rows), not a per-row value (a layer
/// norm backward's rstd / n, which its row's block materializes without a grid barrier).
bool isBroadcastAlongOuterDim(const ir::Graph& g, const Users& users, ir::NodeId op);

/// Whether broadcast `n`'s operand varies along its result's outermost dim: an operand dim
/// maps there and is not a stretched 1 ([1, C] → [N, C] is still a row vector).
bool variesAlongOuterDim(const ir::Graph& g, const ir::Node& n);

/// loopShape restricted to tileDims (in order).
ir::Shape rowShapeOf(const ir::Shape& loopShape, const std::vector<int64_t>& tileDims);

/// Product of the dims' static sizes, or `fallback` when any dim is symbolic.
int64_t staticElementsOr(const ir::Shape& s, int64_t fallback);
int64_t staticOr(const ir::Dim& d, int64_t fallback);

/// A valid PTX identifier made from `text` (letters, digits and '_' kept, others → '_').
std::string ptxIdentifier(const std::string& text);

} // namespace weft::fusion
