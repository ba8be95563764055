#pragma once
// Composite ops: the operations both frontends expand into IR primitives — numpy
// broadcasting, mean and variance, softmax and log-softmax, layer norm, RMS norm, GELU (erf
// and tanh forms) and SiLU. There is one lowering of each, so a model reaches the planner as
// the same graph whether it was read from a JSON file or imported from ONNX (issue 14: layer
// norm used to be rsqrt and a multiply from JSON and reciprocal(sqrt) and a divide from ONNX).
// The JSON reader's lowering is the one kept: its graphs, and so its PTX, are unchanged.
//
// Division of work: a frontend reads and checks its own operands and attributes (its errors
// name its node and its field), normalizes axes (normalizeAxis) and checks that the axes a
// mean divides by are static (reducedCount), then calls these builders. What a builder finds
// wrong anyway goes through Site::fail, which the frontend words as its own error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::frontend {

/// Where a composite is built: the graph, the names of its intermediate values and how a
/// problem is reported. A frontend makes one for each node it lowers.
struct Site {
  ir::Graph& g;
  /// The name of the intermediate value `suffix` ("max", "mean_sum", ...): "y.max" for the
  /// JSON op "y"; "" in ONNX models, whose intermediates take the graph's fresh names.
  std::function<std::string(const std::string& suffix)> namer;
  /// Throws the frontend's error for `what`, located at its node; must not return.
  std::function<void(const std::string& what)> failer;
  /// Broadcast a value made by a reshape that only adds size-1 dims (ONNX's keepdims) from
  /// the reshape's operand, the form the planner propagates schedules through. The JSON
  /// reader keeps a file's reshapes as written.
  bool lookThroughUnitReshapes = false;

  std::string name(const std::string& suffix) const { return namer ? namer(suffix) : ""; }
  [[noreturn]] void fail(const std::string& what) const;
  const ir::TensorType& type(ir::NodeId id) const { return g.node(id).type; }
};

// --- axes and counts ---

/// A Python-style axis (negative counts from the end) for `rank`; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank);
/// The elements `axes` of `shape` span, or the first of them with a symbolic size.
struct ReducedCount {
  int64_t count = 1;
  std::optional<int64_t> symbolicAxis; // set when a reduced axis has no static size
};
ReducedCount reducedCount(const ir::Shape& shape, const std::vector<int64_t>& axes);
/// `shape` with the reduced `axes` (sorted) dropped, or kept as size 1 (ONNX keepdims).
ir::Shape reducedShape(const ir::Shape& shape, const std::vector<int64_t>& axes, bool keepdims);

// --- numpy broadcasting ---

/// The numpy broadcast of `shapes`: right-aligned, each size equal to the others or 1.
/// Nullopt when they do not broadcast, with *offending the index of the first shape that does
/// not fit the ones before it.
std::optional<ir::Shape> broadcastShape(const std::vector<ir::Shape>& shapes,
                                        size_t* offending = nullptr);
/// x broadcast to `shape` by numpy's rules (x's dims aligned with the trailing ones) with one
/// broadcast_in_dim named `name`; x itself when it has that shape already. Fails through the
/// site when x does not broadcast to `shape`.
ir::NodeId broadcastTo(const Site& s, ir::NodeId x, const ir::Shape& shape,
                       const std::string& name);
/// A value reduced over `axes` (sorted) broadcast back to `shape`, the reduce's operand's.
ir::NodeId broadcastBack(const Site& s, ir::NodeId reduced, const ir::Shape& shape,
                         const std::vector<int64_t>& axes, const std::string& name);
/// A constant `v` with x's dtype and shape (one value, splat; symbolic shapes too).
ir::NodeId splatLike(const Site& s, ir::NodeId x, double v, const std::string& name);

// --- reductions ---

/// mean(x) over `axes` (sorted, unique, static: see reducedCount), the axes dropped: a sum
/// divided by the count. Intermediates are named `<tag>_sum` and `<tag>_count`.
ir::NodeId mean(const Site& s, ir::NodeId x, const std::vector<int64_t>& axes,
                const std::string& tag, const std::string& name);

/// Population variance mean((x - mean(x))^2) over `axes`, the axes dropped, with the parts a
/// normalization reuses.
struct Variance {
  ir::NodeId variance = -1;
  ir::NodeId mean = -1;     // the axes dropped
  ir::NodeId centered = -1; // x - mean(x), x's shape
};
Variance variance(const Site& s, ir::NodeId x, const std::vector<int64_t>& axes,
                  const std::string& name);

/// softmax(x) over `axes`, shifted by the max for range; with `logarithm`,
/// (x - max) - (logsumexp(x) - max).
ir::NodeId softmax(const Site& s, ir::NodeId x, const std::vector<int64_t>& axes,
                   bool logarithm, const std::string& name);

// --- normalizations ---

struct NormOptions {
  std::vector<int64_t> axes; // normalized over (sorted, unique, static)
  double epsilon = 0;        // added to the variance (mean square) inside the square root
  /// Scale and shift: any shape that broadcasts to x's (numpy rules), multiplied and added
  /// in x's dtype.
  std::optional<ir::NodeId> gamma, beta;
  /// The dtype the statistics are computed in (ONNX's stash_type); the normalized value is
  /// converted back to x's dtype before gamma and beta. Unset: x's dtype.
  std::optional<ir::DType> compute;
};

struct LayerNorm {
  ir::NodeId y = -1;
  ir::NodeId mean = -1; // over the axes, dropped; in the compute dtype
  ir::NodeId rstd = -1; // rsqrt(var + epsilon), likewise
};
/// (x - mean) * rsqrt(var + epsilon) * gamma + beta; the last node is named `name`.
LayerNorm layerNorm(const Site& s, ir::NodeId x, const NormOptions& o, const std::string& name);
/// x * rsqrt(mean(x * x) + epsilon) * gamma (o.beta must be unset).
ir::NodeId rmsNorm(const Site& s, ir::NodeId x, const NormOptions& o, const std::string& name);

// --- indexing ---

/// Integer indices into an axis of static size `n` with a negative one moved up by n (counted
/// from the end, once), in a dtype that holds index + n (i8 becomes i32). Fails through the
/// site for non-integer indices or a symbolic n, naming `what`.
ir::NodeId wrapNegativeIndices(const Site& s, ir::NodeId indices, const ir::Dim& n,
                               const std::string& what);
/// numpy's take (ONNX Gather): x's elements at `indices` (any integer dtype and shape) along
/// `axis` (normalized); the result's shape is x's with that axis replaced by the indices'
/// shape. A negative index counts from the end (once: below -n it stays out of range); an
/// index out of range gives 0 (false), as the gather op does. Needs a static size along
/// `axis` (the wrap adds it); the last node is named `name`.
ir::NodeId take(const Site& s, ir::NodeId x, ir::NodeId indices, int64_t axis,
                const std::string& name);
/// x's elements at `indices` along `axis` (normalized), an index for each result element
/// (indices has x's rank, and along every other axis its size is x's): numpy's
/// take_along_axis and ONNX GatherElements (whose indices may be smaller than x elsewhere:
/// the result has the indices' shape). Negative indices wrap as in take.
ir::NodeId takeAlongAxis(const Site& s, ir::NodeId x, ir::NodeId indices, int64_t axis,
                         const std::string& name);

// --- activations ---

/// 0.5 * x * (1 + erf(x / sqrt(2)))
ir::NodeId gelu(const Site& s, ir::NodeId x, const std::string& name);
/// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
ir::NodeId geluTanh(const Site& s, ir::NodeId x, const std::string& name);
/// x * sigmoid(x)
ir::NodeId silu(const Site& s, ir::NodeId x, const std::string& name);

} // namespace weft::frontend
