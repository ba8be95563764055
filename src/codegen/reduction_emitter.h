#pragma once
// Reductions: identities and combiners per ReduceKind and dtype, warp butterflies with
// shfl.sync, and the thread-mapped reduce emitters — row reduce (warp-per-row with horizontal
// packing, block-per-row with warp shuffles and shared memory across warps) and column reduce
// (tiled through shared memory). Accumulation happens in the compute type (f16/bf16 in f32,
// bool as i1, shuffled as i32).
#include <functional>
#include <map>
#include <vector>

#include "codegen/elemental_emitter.h"
#include "fusion/kernel_plan.h"
#include "ir/reduce_geometry.h"

namespace weft::codegen {

llvm::Value* reductionIdentity(llvm::LLVMContext& c, ir::ReduceKind kind, ir::DType t);
/// x ⊕ y for two partial results (logsumexp: max + log(1 + exp(min - max)), an exponential and
/// a logarithm; a thread accumulating elements uses ThreadAccumulator instead).
llvm::Value* reductionCombine(KernelContext& k, ir::ReduceKind kind, ir::DType t, llvm::Value* x,
                              llvm::Value* y);

/// A partial reduction as it passes between threads: one compute value, except for logsumexp,
/// the pair of a maximum m and the sum s of exp(x - m) over what it holds (its value is
/// m + log(s)). Pairs combine with one fast exponential each and no logarithm, where
/// reductionCombine's logsumexp takes libdevice's exponential and logarithm, some sixty
/// dependent instructions a shuffle step: ten steps at the end of every row of a block-per-row
/// log-softmax, its whole block waiting.
struct ReducePartial {
  llvm::Value* value = nullptr; // logsumexp: the maximum m
  llvm::Value* sum = nullptr;   // logsumexp: s; null for every other kind
};
ReducePartial identityPartial(llvm::LLVMContext& c, ir::ReduceKind kind, ir::DType t);
ReducePartial combinePartials(KernelContext& k, ir::ReduceKind kind, ir::DType t,
                              const ReducePartial& x, const ReducePartial& y);
/// The partial's reduction as a compute value (logsumexp: m + log(s)).
llvm::Value* partialValue(KernelContext& k, const ReducePartial& p);

/// One thread's running reduction of elements, in registers (allocas at the function's entry).
/// Every kind keeps one value combined with reductionCombine, except logsumexp, which keeps its
/// partial pair (m, s): one exponential per element (and per group of elements) where the
/// pairwise combine takes an exponential and a logarithm.
class ThreadAccumulator {
public:
  ThreadAccumulator(KernelContext& k, ir::ReduceKind kind, ir::DType t, const std::string& name);
  void reset(); // to the identity
  /// Combines element x (a compute value) in; only where `when` (an i1) holds, if given.
  void add(llvm::Value* x, llvm::Value* when = nullptr);
  /// add for a group of elements (a vector's lanes): a logsumexp takes their maximum first.
  void addGroup(const std::vector<llvm::Value*>& xs, llvm::Value* when = nullptr);
  ReducePartial partial();                             // what was added, to combine across threads
  llvm::Value* value() { return partialValue(k_, partial()); } // its reduction, a compute value

private:
  KernelContext& k_;
  ir::ReduceKind kind_;
  ir::DType t_;
  llvm::AllocaInst* acc_;            // the value (logsumexp: the running maximum m)
  llvm::AllocaInst* sum_ = nullptr;  // logsumexp: s, the sum of exp(x - m)
};
/// Butterfly over lanes xor width/2 ... 1 (width a power of two <= 32): afterwards every lane
/// of each aligned group of `width` lanes holds the group's combined partial.
ReducePartial warpReduce(KernelContext& k, ir::ReduceKind kind, ir::DType t, ReducePartial p,
                         int width);

/// A reduce's operand seen as [kept, reduced] (kept = the result's elements).
using ir::ReduceGeometry;
using ir::reduceGeometry;
/// The operand multi-index of element (keptFlat, reducedFlat).
Index reduceOperandIndex(KernelContext& k, const ReduceGeometry& geo, llvm::Value* keptFlat,
                         llvm::Value* reducedFlat);

/// One thread's share of a row-reduce tile as fixed slots (operator-level reuse, AStitch
/// §3.2.1): the thread's row of the tile and, step by step in accumulation order, the
/// multi-indices over the group's loop shape of its `width` consecutive elements. The reduce
/// accumulates exactly these elements and the group's elementwise stages visit them in the
/// same threads, so a value read by several stages can stay in registers.
struct RowSlots {
  llvm::Value* row = nullptr;   // the thread's row (may lie past the tile: see valid)
  llvm::Value* valid = nullptr; // i1: row is inside the tile
  int width = 1;
  struct Step {
    llvm::Value* flat0 = nullptr; // flat index over the loop shape of lane 0 (of row, clamped)
    // i1: the step's elements lie inside the row (a ragged row's last steps run past it on
    // some threads, whose indices are clamped to the row's last vector); null when always.
    llvm::Value* inRow = nullptr;
    std::vector<Index> lanes;     // one multi-index per lane
    std::map<llvm::Value*, KernelContext::VectorLane> vectorLanes; // reopens its vector group
  };
  std::vector<Step> steps;
};
/// Emits `value` at each of the slots' elements, step by step: each step's lanes inside the
/// step's vector group (so inputs load as vectors, and reused ones are kept), then
/// `onStep(step, lanes' values)` once the group is closed.
void emitAtSlots(KernelContext& k, ElementalEmitter& gen, const RowSlots& slots, ir::NodeId value,
                 const std::function<void(const RowSlots::Step&,
                                          const std::vector<llvm::Value*>&)>& onStep);
/// `value` where `step` lies in its row, else `otherwise`.
llvm::Value* inRowOr(llvm::IRBuilder<>& b, const RowSlots::Step& step, llvm::Value* value,
                     llvm::Value* otherwise);
/// The calling thread's slots of the tile starting at row u0 (rows [u0, u1)); rows past the
/// tile read row u0 so that every load stays in bounds. A row shared by a cluster
/// (m.clusterBlocks > 1) gives the thread slots in part `clusterPart` of the row only: columns
/// [part * partLength, (part + 1) * partLength), partLength a whole number of steps.
RowSlots makeRowSlots(KernelContext& k, const ir::Shape& loop, size_t rowDims,
                      const fusion::RowReduceMapping& m, llvm::Value* u0, llvm::Value* u1,
                      llvm::Value* clusterPart = nullptr);

/// Called once per result, by one thread, with the result's flat index (indexTy) and value.
using ReduceResult = std::function<void(llvm::Value* keptFlat, llvm::Value* value)>;

/// Row reduce of results [begin, end) over reduced elements [reducedBegin, reducedEnd)
/// (reducedBegin a multiple of the mapping's vector width). With coalesceResults, a warp-per-row
/// mapping hands each pass's results to consecutive threads through shared memory (for results
/// stored to global memory: one store request per 32 rows instead of one per row). With slots
/// (the reduce's operand is the slots' loop shape, reduced over its row length, [begin, end)
/// the slots' tile): accumulates the slots' elements, without a loop.
void emitRowReduce(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                   const fusion::RowReduceMapping& m, llvm::Value* begin, llvm::Value* end,
                   llvm::Value* reducedBegin, llvm::Value* reducedEnd, const ReduceResult& onResult,
                   bool coalesceResults = false, const RowSlots* slots = nullptr);
/// emitRowReduce for several reduces of one operand shape and axes (sibling reduces of a stage,
/// log-softmax's logsumexp next to its one-hot pick): one pass over each row accumulates them
/// all, each element generated once for all of them, then each is combined across the row's
/// threads and handed to its onResults entry.
void emitRowReduces(KernelContext& k, ElementalEmitter& gen,
                    const std::vector<const ir::Node*>& reduces, const fusion::RowReduceMapping& m,
                    llvm::Value* begin, llvm::Value* end, llvm::Value* reducedBegin,
                    llvm::Value* reducedEnd, const std::vector<ReduceResult>& onResults,
                    bool coalesceResults = false, const RowSlots* slots = nullptr);
/// Called with each operand element a reduce adds up, once per element: its index and value.
using OperandSink = std::function<void(const Index& index, llvm::Value* value)>;

/// Column reduce of results [begin, end) (at most tileColumns of them) over reduced elements
/// [reducedBegin, reducedEnd). `onOperand`, when set, sees every operand element it adds.
void emitColumnReduce(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                      const fusion::ColumnReduceMapping& m, llvm::Value* begin, llvm::Value* end,
                      llvm::Value* reducedBegin, llvm::Value* reducedEnd,
                      const ReduceResult& onResult, const OperandSink& onOperand = {});

} // namespace weft::codegen
