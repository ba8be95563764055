#pragma once
// The one way passes build their result: a Rewriter walks a source graph and emits the
// result graph through ir::Graph's builder (so every emitted op is type-checked), keeping a
// map from each source value to the result value that stands for it.
//
// What every pass built on it guarantees:
//  - Parameters are kept, all of them (used or not), with their names and types, in order.
//  - Outputs are kept in number and order, each under its source name. When a pass replaces
//    an output value by another value r (x * 1 -> x, or CSE merging two outputs):
//      * r takes the output's name, if r is an op that no other output already names;
//      * otherwise (r is a parameter, or another output) the output becomes
//        `reshape(r)` to r's own shape under the output's name: the identity, so an output
//        is never a second name for a parameter or for another output.
//  - A value that a pass re-emits or replaces by a new op keeps its source name.
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::passes {

class Rewriter {
public:
  /// Starts the result with the source's parameters, in order.
  explicit Rewriter(const ir::Graph& source);

  const ir::Graph& source() const { return source_; }
  /// The graph being built; passes read it to look at mapped operands.
  const ir::Graph& result() const { return result_; }

  bool isMapped(ir::NodeId sourceId) const {
    return map_.at(static_cast<size_t>(sourceId)).has_value();
  }
  /// The result value that stands for source value `sourceId` (which must be mapped).
  ir::NodeId mapped(ir::NodeId sourceId) const;
  std::vector<ir::NodeId> mappedOperands(const ir::Node& n) const;
  /// The result node that stands for source value `sourceId`.
  const ir::Node& mappedNode(ir::NodeId sourceId) const { return result_.node(mapped(sourceId)); }

  /// Re-emits `n` unchanged but for its operands, which are mapped. Parameters are already mapped.
  ir::NodeId copy(const ir::Node& n);
  /// Emits a new op (operands are result values) that computes source value `n`, under n's
  /// name, and maps n to it. The type must be n's.
  ir::NodeId replaceWithNew(const ir::Node& n, ir::OpKind kind, std::vector<ir::NodeId> operands,
                            ir::Attrs attrs);
  /// Maps source value `n` to an existing result value of the same type; n is not emitted.
  void replaceWith(const ir::Node& n, ir::NodeId existing);
  /// The result graph, for a pass that emits ops no source value stands for (through its
  /// builder, which type-checks them), each named with freshName.
  ir::Graph& emitter() { return result_; }
  /// `base`, or `base.1`, `base.2`, ...: a name neither graph uses, so that no source value
  /// copied later finds its name taken.
  std::string freshName(const std::string& base) const;

  /// The result graph, its outputs set and named as the header comment says.
  ir::Graph finish() &&;

private:
  const ir::Graph& source_;
  ir::Graph result_;
  std::vector<std::optional<ir::NodeId>> map_;
};

/// Whether source and result are the same graph: same nodes (names, kinds, operands, types,
/// attributes) in the same order and the same outputs. Used to detect fixed points.
bool sameGraph(const ir::Graph& a, const ir::Graph& b);

} // namespace weft::passes
