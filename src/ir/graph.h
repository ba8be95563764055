#pragma once
// The weft graph: SSA values, each produced by exactly one node, in topological order.
// Every node is type-checked when it is added (shape and dtype inference with the rules of
// shape_inference.h), so a Graph is well-formed by construction; verify() re-checks a whole
// graph for code that edits nodes directly (passes).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/shape.h"
#include "ir/symbol_unification.h"

namespace weft::ir {

using NodeId = int32_t;

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string str() const; // "f32[B, 768]"
};

struct Node {
  NodeId id = -1;
  std::string name;
  OpKind kind = OpKind::Parameter;
  std::vector<NodeId> operands;
  TensorType type;
  Attrs attrs;

  template <class A> const A& attr() const { return std::get<A>(attrs); }
};

class Graph {
public:
  // --- building (each call type-checks and throws InputError naming the op on failure) ---
  NodeId parameter(std::string name, TensorType type);
  NodeId constant(DType dtype, Shape shape, std::vector<double> values, std::string name = "");
  NodeId scalar(DType dtype, double value, std::string name = "") {
    return constant(dtype, {}, {value}, std::move(name));
  }
  NodeId iota(DType dtype, Shape shape, int64_t axis, std::string name = "");
  NodeId unary(OpKind kind, NodeId x, std::string name = "");
  NodeId convert(NodeId x, DType to, std::string name = "");
  NodeId binary(OpKind kind, NodeId a, NodeId b, std::string name = "");
  NodeId compare(CompareDir dir, NodeId a, NodeId b, std::string name = "");
  NodeId select(NodeId pred, NodeId onTrue, NodeId onFalse, std::string name = "");
  NodeId clamp(NodeId lo, NodeId x, NodeId hi, std::string name = "");
  NodeId broadcastInDim(NodeId x, Shape shape, std::vector<int64_t> dims, std::string name = "");
  NodeId reshape(NodeId x, Shape shape, std::string name = "");
  NodeId transpose(NodeId x, std::vector<int64_t> perm, std::string name = "");
  /// limits[i] == -1 means "to the end of axis i" (the only way to slice a symbolic axis whole).
  NodeId slice(NodeId x, std::vector<int64_t> starts, std::vector<int64_t> limits,
               std::vector<int64_t> strides, std::string name = "");
  NodeId concatenate(std::vector<NodeId> xs, int64_t axis, std::string name = "");
  NodeId pad(NodeId x, std::vector<int64_t> low, std::vector<int64_t> high, double value,
             std::string name = "");
  /// operand's elements at the positions `indices` hold along `axes` (GatherAttrs, op.h).
  NodeId gather(NodeId operand, std::vector<NodeId> indices, std::vector<int64_t> axes,
                std::vector<int64_t> dims, std::string name = "");
  NodeId reduce(ReduceKind kind, NodeId x, std::vector<int64_t> axes, std::string name = "");
  NodeId dot(NodeId a, NodeId b, std::string name = "");

  /// The general form behind all of the above. `declared` is required for ops whose result
  /// cannot be inferred from operands (parameter, constant, iota, convert, reshape,
  /// broadcast_in_dim) and checked against the inferred type for the rest when given.
  NodeId add(OpKind kind, std::vector<NodeId> operands, Attrs attrs,
             std::optional<TensorType> declared = std::nullopt, std::string name = "");

  void addOutput(NodeId id);
  void setOutputs(std::vector<NodeId> ids);

  // --- reading ---
  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }
  const std::vector<NodeId>& inputs() const { return inputs_; }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  bool isOutput(NodeId id) const;
  std::optional<NodeId> find(const std::string& name) const;
  /// users()[v] lists the nodes that take v as an operand (each once, in order).
  std::vector<std::vector<NodeId>> users() const;
  /// Every symbol used by any value's shape, sorted.
  std::vector<std::string> symbols() const;
  /// The symbols an op unified away (ir/symbol_unification.h), in the order they were; none
  /// of them appears in any shape of the graph any more.
  const std::vector<SymbolEquality>& symbolEqualities() const { return equalities_; }
  /// Takes `from`'s equalities (a pass's result graph keeps its source's).
  void inheritSymbolEqualities(const Graph& from) { equalities_ = from.equalities_; }
  /// The next fresh name's number per op kind (freshName): with the nodes and equalities, all
  /// a serialised graph needs to be rebuilt exactly (fusion/plan_serialization.h).
  const std::vector<int>& nameCounters() const { return nameCounters_; }
  /// Restores the equalities and fresh-name counters of a graph whose nodes were rebuilt from
  /// its serialised form; throws std::invalid_argument unless there is one counter per op kind.
  void restoreBuildState(std::vector<SymbolEquality> equalities, std::vector<int> nameCounters);

private:
  std::string freshName(OpKind kind);
  /// Replaces `symbol` by `value` in every shape built so far and records why.
  void unify(const std::string& symbol, const Dim& value, std::string where);
  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> byName_; // find() in O(1): passes rebuild graphs
  std::vector<NodeId> inputs_;
  std::vector<NodeId> outputs_;
  std::vector<int> nameCounters_ = std::vector<int>(kNumOpKinds, 0);
  std::vector<SymbolEquality> equalities_;
};

/// Re-checks every rule: operands defined before use, unique names, each node's type equal
/// to the inferred one, at least one output. Throws InputError naming the node and rule.
void verify(const Graph& g);

/// live[v]: v is an output of `g` or, transitively, an operand of one.
std::vector<bool> liveNodes(const Graph& g);

/// A copy of `g` with every symbolic dim replaced by its size under `binding`.
/// Throws InputError naming the first unbound symbol (and the value that uses it).
Graph bindSymbols(const Graph& g, const Binding& binding);

/// "op \"name\" (kind)" — the prefix every node-related error message starts with.
std::string describe(const Node& n);

} // namespace weft::ir
