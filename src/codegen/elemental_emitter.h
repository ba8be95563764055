#pragma once
// Element generators (XLA's elemental IR emitter): emit(value, index) produces the code for one
// element of a value at a multi-index (LLVM values of the kernel's index type), composing the
// generators of its operands. A value the plan placed in memory (an input buffer, shared
// memory, global scratch, an output already written) gets a generator that loads it instead:
// the kernel emitter installs those with setGenerator, and so do reduction emitters for a
// reduce's result in registers.
//
// Generated values are cached per (value, index) until clearCache(): callers clear it at the
// start of every element they emit, so shared subexpressions (x * x) are emitted once. Every
// cached value keeps the scope (loop or if body) it was emitted in and is handed out only while
// that scope is open, so a cache never reuses a value that does not dominate its use.
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "codegen/emitter_context.h"

namespace weft::codegen {

class ElementalEmitter {
public:
  using Generator = std::function<llvm::Value*(const Index&)>;
  explicit ElementalEmitter(KernelContext& k) : k_(k) {}

  /// The element of `value` at `index` (rank of the value's shape), in its compute type.
  llvm::Value* emit(ir::NodeId value, const Index& index);
  void setGenerator(ir::NodeId value, Generator g) { overrides_[value] = std::move(g); }
  void clearGenerator(ir::NodeId value) { overrides_.erase(value); }
  bool hasGenerator(ir::NodeId value) const { return overrides_.count(value) > 0; }
  /// The generator installed for `value`, or null.
  const Generator* generatorOf(ir::NodeId value) const {
    auto it = overrides_.find(value);
    return it == overrides_.end() ? nullptr : &it->second;
  }
  void clearCache() { cache_.clear(); }

  /// Operator-level reuse (AStitch §3.2.1): from here to endReuse(), elements of `reused`
  /// generated at the builder's current depth (KernelContext::depth) are kept per (value,
  /// index) and handed out again for the same index values, by clearCache() untouched.
  void beginReuse(std::set<ir::NodeId> reused);
  void endReuse();
  /// Keeps `v` as the element of `value` (one of `reused`) at `index`: a value this thread
  /// just computed and stored there, so later stages need not load it back.
  void remember(ir::NodeId value, const Index& index, llvm::Value* v);

private:
  llvm::Value* compute(const ir::Node& n, const Index& index);
  llvm::Value* unary(const ir::Node& n, const Index& index);
  llvm::Value* binary(const ir::Node& n, const Index& index);
  llvm::Value* constant(const ir::Node& n, const Index& index);
  llvm::Value* concatenate(const ir::Node& n, const Index& index);
  llvm::Value* pad(const ir::Node& n, const Index& index);
  llvm::Value* gather(const ir::Node& n, const Index& index);
  llvm::Value* reduceInline(const ir::Node& n, const Index& index);
  /// The operand's index for an elementwise op: the same index, or none for a scalar operand.
  Index operandIndex(const ir::Node& operand, const Index& index) const;

  /// A generated element and the scope it was emitted in: handed out again only while that
  /// scope is open (KernelContext::isOpen), where it dominates what is emitted.
  struct Generated {
    llvm::Value* value;
    Scope scope;
  };
  KernelContext& k_;
  std::map<ir::NodeId, Generator> overrides_;
  std::map<std::pair<ir::NodeId, std::vector<llvm::Value*>>, Generated> cache_;
  std::set<ir::NodeId> reused_;
  int reuseDepth_ = -1; // -1: no reuse region open
  std::map<std::pair<ir::NodeId, std::vector<llvm::Value*>>, Generated> kept_;
};

/// NaN-propagating max/min of the reference interpreter, integer max/min, bool or/and.
llvm::Value* emitMax(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, ir::DType t);
llvm::Value* emitMin(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, ir::DType t);

} // namespace weft::codegen
