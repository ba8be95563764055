#pragma once
// The closed list of op kinds, their attributes and their class for the planner.
// Each attribute struct holds exactly what its op needs; the result's dtype and shape live in
// the node's TensorType, not in attributes (so reshape, broadcast_in_dim, convert and iota
// carry their target there).
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

namespace weft::ir {

enum class OpKind : uint8_t {
  // sources
  Parameter, Constant, Iota,
  // elementwise unary
  Neg, Abs, Exp, Log, Tanh, Sqrt, Rsqrt, Erf, Sigmoid, Sin, Cos, Floor, Ceil, Sign, Not,
  Reciprocal, Convert,
  // elementwise binary
  Add, Sub, Mul, Div, Pow, Max, Min, Rem, And, Or, Compare,
  // elementwise ternary
  Select, Clamp,
  // broadcast and layout
  BroadcastInDim, Reshape, Transpose, Slice, Concatenate, Pad,
  // data-dependent indexing: elements of an operand at positions other tensors hold
  Gather,
  // reduction
  Reduce,
  // compute-intensive: batched matmul [..., M, K] x [..., K, N] -> [..., M, N]
  Dot,
};
inline constexpr int kNumOpKinds = static_cast<int>(OpKind::Dot) + 1;

/// How the planner treats an op (AStitch §3.1 and docs/planner.md).
enum class OpClass : uint8_t {
  Input,                // parameters
  LightElementwise,     // cheap one-to-one ops, constants and iota
  ExpensiveElementwise, // exp, log, tanh, pow, erf, div, sqrt, ...
  Broadcast,
  Layout,               // reshape, transpose, slice, concatenate, pad
  Reduce,
  ComputeIntensive,     // dot: never stitched
};

enum class CompareDir : uint8_t { EQ, NE, LT, LE, GT, GE };
/// LogSumExp is log(sum(exp(x))) over the reduced axes, computed without overflow (a running
/// maximum and the sum of exponentials below it); it is associative, so partial results
/// combine like any other kind's: lse(a, b) = max(a, b) + log(1 + exp(min(a, b) - max(a, b))).
enum class ReduceKind : uint8_t { Sum, Max, Min, Prod, Any, All, LogSumExp };

struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};
struct ParameterAttrs {
  int index = 0; // position among the graph's inputs
  bool operator==(const ParameterAttrs&) const = default;
};
/// One value is a splat over the result shape; otherwise one value per element, row-major.
/// Values are held as double: exact for every f32/f16/bf16/i8/i32 value and for i64 up to 2^53.
struct ConstantAttrs {
  std::vector<double> values;
  bool operator==(const ConstantAttrs&) const = default;
};
struct IotaAttrs {
  int64_t axis = 0;
  bool operator==(const IotaAttrs&) const = default;
};
struct CompareAttrs {
  CompareDir dir = CompareDir::EQ;
  bool operator==(const CompareAttrs&) const = default;
};
/// Operand dimension i becomes result dimension dims[i] (strictly increasing); operand
/// dims of size 1 are stretched, others must equal the result dim.
struct BroadcastAttrs {
  std::vector<int64_t> dims;
  bool operator==(const BroadcastAttrs&) const = default;
};
/// Result dimension i is operand dimension perm[i].
struct TransposeAttrs {
  std::vector<int64_t> perm;
  bool operator==(const TransposeAttrs&) const = default;
};
struct SliceAttrs {
  std::vector<int64_t> starts, limits, strides;
  bool operator==(const SliceAttrs&) const = default;
};
struct ConcatAttrs {
  int64_t axis = 0;
  bool operator==(const ConcatAttrs&) const = default;
};
/// Constant padding; low/high are non-negative element counts per axis.
struct PadAttrs {
  std::vector<int64_t> low, high;
  double value = 0.0;
  bool operator==(const PadAttrs&) const = default;
};
/// gather(operand, index_0, ..., index_{k-1}): result[o] = operand[p], where p's coordinate
/// along axes[j] is index_j[o] and along the operand's other axes (in increasing order) the
/// result's coordinate dims[i]. Every index operand has the result's shape (a frontend
/// broadcasts them); the result has the operand's dtype. An index outside [0, size of its
/// axis) gives 0 (false for bool) for that element: nothing is read out of bounds.
struct GatherAttrs {
  std::vector<int64_t> axes; // operand axes read from the index operands, one each (k >= 1)
  std::vector<int64_t> dims; // for each other operand axis, in order: its result dimension
  bool operator==(const GatherAttrs&) const = default;
};
/// For each of a rank-`rank` gather operand's axes, the result dimension whose coordinate it
/// takes (the axes not in `axes`, in increasing order, paired with `dims`), or -1 where an
/// index operand gives it (or `dims` has no entry left for it).
std::vector<int64_t> gatherResultDims(const GatherAttrs& a, size_t rank);
/// Reduces over `axes` (sorted, unique); the result drops those axes.
struct ReduceAttrs {
  ReduceKind kind = ReduceKind::Sum;
  std::vector<int64_t> axes;
  bool operator==(const ReduceAttrs&) const = default;
};

using Attrs = std::variant<NoAttrs, ParameterAttrs, ConstantAttrs, IotaAttrs, CompareAttrs,
                           BroadcastAttrs, TransposeAttrs, SliceAttrs, ConcatAttrs, PadAttrs,
                           GatherAttrs, ReduceAttrs>;

std::string_view opName(OpKind k); // the name used in JSON and in the printer, e.g. "broadcast_in_dim"
std::optional<OpKind> parseOpKind(std::string_view s);
OpClass opClass(OpKind k);
std::string_view opClassName(OpClass c);
std::string_view compareDirName(CompareDir d);
std::optional<CompareDir> parseCompareDir(std::string_view s);
std::string_view reduceKindName(ReduceKind k);
std::optional<ReduceKind> parseReduceKind(std::string_view s);

/// Number of operands the kind takes; -1 for variadic (concatenate: at least one; gather: at least two).
int operandCount(OpKind k);
bool isElementwise(OpKind k); // unary, binary, ternary and convert (not constant/iota)
bool isUnary(OpKind k);
bool isBinary(OpKind k);
/// Ops that are memory-intensive (everything but parameters and compute-intensive ops).
bool isMemoryIntensive(OpKind k);

} // namespace weft::ir
