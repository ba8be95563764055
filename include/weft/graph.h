#pragma once
// Building a weft graph: a value-handle builder over weft's closed op list, one method per op,
// each with the semantics docs/graph-format.md states for the JSON op of the same name.
//
//   weft::Graph g("scale");
//   weft::Value x = g.parameter("x", weft::DType::f32, {"B", 768}); // B: a symbolic dim
//   weft::Value two = g.broadcastInDim(g.scalar(weft::DType::f32, 2.0), {"B", 768}, {});
//   g.addOutput(g.mul(x, two, "y"));
//
// Every method type-checks its op when it is called and throws weft::InputError naming the op
// and the rule it broke, so a Graph is well-formed by construction. Shapes are exact: a dim is
// a static size or a factor times named symbols ("B", "2*B", "B*S"), bound to sizes when the
// graph runs (a Binding, or the shapes of the inputs).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "weft/dtype.h"

namespace weft {

namespace detail {
struct Access; // the library's own way through the handles to its types (src/compile.h)
}

/// A size for every symbol of a graph: {{"B", 64}}.
using Binding = std::map<std::string, int64_t>;

/// One dimension: a static size, or a positive factor times named symbols.
class Dim {
public:
  Dim() = default; // the static size 1
  template <class Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
  Dim(Int size) : factor_(static_cast<int64_t>(size)) {} // NOLINT: implicit on purpose
  /// "768", "B", "B*S", "2*B"; throws InputError on anything else.
  Dim(const char* text);        // NOLINT: implicit on purpose, so {"B", 768} is a shape
  Dim(const std::string& text); // NOLINT

  bool isStatic() const { return symbols_.empty(); }
  int64_t size() const { return factor_; } // the static size; only valid when isStatic()
  int64_t factor() const { return factor_; }
  const std::vector<std::string>& symbols() const { return symbols_; } // sorted
  bool operator==(const Dim& o) const { return factor_ == o.factor_ && symbols_ == o.symbols_; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string str() const; // "768", "B", "2*B*S"
  /// The size under `binding`; InputError when one of its symbols is unbound or bound to a
  /// negative size, or when the product does not fit in int64.
  int64_t evaluate(const Binding& binding) const;

private:
  friend struct detail::Access;
  int64_t factor_ = 1;
  std::vector<std::string> symbols_;
};

using Shape = std::vector<Dim>;

/// A value of a Graph (the result of one op). Only meaningful with the graph that made it.
class Value {
public:
  Value() = default; // no value; passing it to a Graph is an InputError
  int32_t id() const { return id_; } // its position in the graph, in the order ops were added
  bool valid() const { return id_ >= 0; }
  bool operator==(const Value& o) const { return id_ == o.id_ && graph_ == o.graph_; }
  bool operator!=(const Value& o) const { return !(*this == o); }

private:
  friend class Graph;
  Value(int32_t id, uint64_t graph) : id_(id), graph_(graph) {}
  int32_t id_ = -1;
  uint64_t graph_ = 0; // the graph that made it (a Graph refuses another graph's values)
};

class Graph {
public:
  explicit Graph(std::string name = "main");
  Graph(const Graph& other);
  Graph(Graph&& other) noexcept;
  Graph& operator=(const Graph& other);
  Graph& operator=(Graph&& other) noexcept;
  ~Graph();

  // --- sources. `name` names the value; "" picks a fresh one ("exp.3"). ---
  Value parameter(std::string name, DType dtype, Shape shape);
  /// One value is a splat over `shape`; otherwise one value per element, row-major.
  Value constant(DType dtype, Shape shape, std::vector<double> values, std::string name = "");
  Value scalar(DType dtype, double value, std::string name = "");
  Value iota(DType dtype, Shape shape, int64_t axis, std::string name = "");

  // --- elementwise, one operand ---
  Value neg(Value x, std::string name = "");
  Value abs(Value x, std::string name = "");
  Value exp(Value x, std::string name = "");
  Value log(Value x, std::string name = "");
  Value tanh(Value x, std::string name = "");
  Value sqrt(Value x, std::string name = "");
  Value rsqrt(Value x, std::string name = "");
  Value erf(Value x, std::string name = "");
  Value sigmoid(Value x, std::string name = "");
  Value sin(Value x, std::string name = "");
  Value cos(Value x, std::string name = "");
  Value floor(Value x, std::string name = "");
  Value ceil(Value x, std::string name = "");
  Value sign(Value x, std::string name = "");
  Value logicalNot(Value x, std::string name = ""); // "not"
  Value reciprocal(Value x, std::string name = "");
  Value convert(Value x, DType to, std::string name = "");

  // --- elementwise, two operands of one shape (broadcast explicitly with broadcastInDim) ---
  Value add(Value a, Value b, std::string name = "");
  Value sub(Value a, Value b, std::string name = "");
  Value mul(Value a, Value b, std::string name = "");
  Value div(Value a, Value b, std::string name = "");
  Value pow(Value a, Value b, std::string name = "");
  Value max(Value a, Value b, std::string name = "");
  Value min(Value a, Value b, std::string name = "");
  Value rem(Value a, Value b, std::string name = "");
  Value logicalAnd(Value a, Value b, std::string name = ""); // "and"
  Value logicalOr(Value a, Value b, std::string name = "");  // "or"
  // compare, with the directions eq ne lt le gt ge; the result is bool
  Value equal(Value a, Value b, std::string name = "");
  Value notEqual(Value a, Value b, std::string name = "");
  Value less(Value a, Value b, std::string name = "");
  Value lessEqual(Value a, Value b, std::string name = "");
  Value greater(Value a, Value b, std::string name = "");
  Value greaterEqual(Value a, Value b, std::string name = "");

  // --- elementwise, three operands ---
  Value select(Value pred, Value onTrue, Value onFalse, std::string name = "");
  Value clamp(Value lo, Value x, Value hi, std::string name = "");

  // --- broadcast and layout ---
  /// Operand dim i becomes result dim dims[i] (increasing); operand dims of size 1 stretch.
  Value broadcastInDim(Value x, Shape shape, std::vector<int64_t> dims, std::string name = "");
  Value reshape(Value x, Shape shape, std::string name = "");
  Value transpose(Value x, std::vector<int64_t> perm, std::string name = "");
  /// limits[i] == -1 means "to the end of axis i" (the only way to slice a symbolic axis whole).
  Value slice(Value x, std::vector<int64_t> starts, std::vector<int64_t> limits,
              std::vector<int64_t> strides, std::string name = "");
  Value concatenate(std::vector<Value> xs, int64_t axis, std::string name = "");
  Value pad(Value x, std::vector<int64_t> low, std::vector<int64_t> high, double value = 0,
            std::string name = "");

  // --- indexing: elements at positions that integer values hold. An index outside [0, size of
  // its axis) gives 0 (false for bool) and is never read. `axes`/`axis` may be negative.
  // take and takeAlongAxis expand into a gather and the values it reads, named
  // "<name>.<suffix>" (docs/graph-format.md, "Indexing"). ---
  /// The gather op: result[o] = operand[p], where p's coordinate along axes[j] is indices[j] at
  /// o and along the operand's other axes (in increasing order) the result's coordinate
  /// dims[i]. Every index value is an integer tensor of the result's shape; the result has the
  /// operand's dtype. Indices are used as they are (no wrapping of negative ones).
  Value gather(Value operand, std::vector<Value> indices, std::vector<int64_t> axes,
               std::vector<int64_t> dims, std::string name = "");
  /// numpy's take: x's elements at `indices` (any integer dtype and shape) along `axis`; the
  /// result has x's shape with that axis replaced by the indices' shape. A negative index counts
  /// from the end, once (-size is the first element; below that it is out of range). The axis
  /// needs a static size.
  Value take(Value x, Value indices, int64_t axis = 0, std::string name = "");
  /// numpy's take_along_axis (torch.gather, ONNX GatherElements): one index per result element,
  /// read along `axis`. indices has x's rank and along every other axis x's size, or less (the
  /// result reads x's leading part there); the result has the indices' shape. Negative indices
  /// wrap as in take. No broadcasting: broadcast indices to x's sizes first.
  Value takeAlongAxis(Value x, Value indices, int64_t axis, std::string name = "");

  // --- reductions over `axes`, which the result drops ---
  Value reduceSum(Value x, std::vector<int64_t> axes, std::string name = "");
  Value reduceMax(Value x, std::vector<int64_t> axes, std::string name = "");
  Value reduceMin(Value x, std::vector<int64_t> axes, std::string name = "");
  Value reduceProd(Value x, std::vector<int64_t> axes, std::string name = "");
  Value reduceAny(Value x, std::vector<int64_t> axes, std::string name = "");
  Value reduceAll(Value x, std::vector<int64_t> axes, std::string name = "");
  /// log(sum(exp(x))) over `axes`, without overflow (floats only).
  Value reduceLogSumExp(Value x, std::vector<int64_t> axes, std::string name = "");

  /// Batched matmul [..., M, K] x [..., K, N] -> [..., M, N] (a library kernel, never fused).
  Value dot(Value a, Value b, std::string name = "");

  /// Outputs, in the order the graph returns them; a value at most once.
  void addOutput(Value v);
  void setOutputs(std::vector<Value> vs);

  // --- reading ---
  const std::string& name() const;
  std::vector<Value> inputs() const;  // the parameters, in the order they were added
  std::vector<Value> outputs() const;
  size_t size() const;                // number of values
  std::optional<Value> find(const std::string& valueName) const;
  std::string valueName(Value v) const;
  DType dtype(Value v) const;
  Shape shape(Value v) const;
  std::vector<std::string> symbols() const; // every symbol of any shape, sorted
  /// The IR as text, one value per line (what `weft check` prints).
  std::string str() const;

private:
  friend struct detail::Access;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A graph in weft's JSON format (docs/graph-format.md); `sourceName` names it in errors and
/// is the graph's name when the JSON has none. Throws InputError naming the op and field.
Graph parseGraphJson(const std::string& json, const std::string& sourceName = "graph.json");
/// The same, read from a file.
Graph loadGraphJson(const std::string& path);

} // namespace weft
