#pragma once
// Reductions: identities and combiners per ReduceKind and dtype, warp butterflies with
// shfl.sync, and the thread-mapped reduce emitters — row reduce (warp-per-row with horizontal
// packing, block-per-row with warp shuffles and shared memory across warps) and column reduce
// (tiled through shared memory). Accumulation happens in the compute type (f16/bf16 in f32,
// bool as i1, shuffled as i32).
#include <functional>
#include <vector>

#include "codegen/elemental_emitter.h"
#include "fusion/kernel_plan.h"

namespace weft::codegen {

llvm::Value* reductionIdentity(llvm::LLVMContext& c, ir::ReduceKind kind, ir::DType t);
llvm::Value* reductionCombine(llvm::IRBuilder<>& b, ir::ReduceKind kind, ir::DType t,
                              llvm::Value* x, llvm::Value* y);
/// Butterfly over lanes xor width/2 ... 1 (width a power of two <= 32): afterwards every lane
/// of each aligned group of `width` lanes holds the group's combined value.
llvm::Value* warpReduce(KernelContext& k, ir::ReduceKind kind, ir::DType t, llvm::Value* v,
                        int width);

/// A reduce's operand seen as [kept, reduced] (kept = the result's elements).
struct ReduceGeometry {
  std::vector<int64_t> keptAxes, reducedAxes;
  ir::Shape keptShape, reducedShape;
  ir::Dim kept = 1, reduced = 1;
};
ReduceGeometry reduceGeometry(const ir::Graph& g, const ir::Node& reduce);
/// The operand multi-index of element (keptFlat, reducedFlat).
Index reduceOperandIndex(KernelContext& k, const ReduceGeometry& geo, llvm::Value* keptFlat,
                         llvm::Value* reducedFlat);

/// Called once per result, by one thread, with the result's flat index (indexTy) and value.
using ReduceResult = std::function<void(llvm::Value* keptFlat, llvm::Value* value)>;

/// Row reduce of results [begin, end) over reduced elements [reducedBegin, reducedEnd)
/// (reducedBegin a multiple of the mapping's vector width). With coalesceResults, a warp-per-row
/// mapping hands each pass's results to consecutive threads through shared memory (for results
/// stored to global memory: one store request per 32 rows instead of one per row).
void emitRowReduce(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                   const fusion::RowReduceMapping& m, llvm::Value* begin, llvm::Value* end,
                   llvm::Value* reducedBegin, llvm::Value* reducedEnd, const ReduceResult& onResult,
                   bool coalesceResults = false);
/// Column reduce of results [begin, end) (at most tileColumns of them) over reduced elements
/// [reducedBegin, reducedEnd).
void emitColumnReduce(KernelContext& k, ElementalEmitter& gen, const ir::Node& reduce,
                      const fusion::ColumnReduceMapping& m, llvm::Value* begin, llvm::Value* end,
                      llvm::Value* reducedBegin, llvm::Value* reducedEnd,
                      const ReduceResult& onResult);
/// The static shared bytes a reduce emitter needs for `mapping` in blocks of blockSize threads
/// (0 for none).
int64_t reduceScratchBytes(const fusion::ThreadMapping& mapping, int blockSize);

} // namespace weft::codegen
