#pragma once
// What every emitter of one kernel shares: the LLVM builder and function, the plan being
// emitted, the kernel's parameters (buffer pointers, symbol sizes, barrier state), the index
// type, and small IR helpers (thread ids, barriers, loops, element loads and stores).
//
// Conventions: element values are held in their compute type (f16/bf16/f32 → float, f64 →
// double, integers as themselves, bool → i1); memory holds the storage type (bool as i8,
// f16 as half, bf16 as bfloat). Indices are `indexTy`: i32 when every size of the kernel is
// static and below 2^31, i64 otherwise.
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/compile.h"
#include "fusion/fusion_plan.h"
#include "ir/graph.h"

namespace weft::codegen {

using Index = std::vector<llvm::Value*>; // a multi-index, one indexTy value per dim

/// Where a value was emitted: a loop() or ifThen() body (or the kernel's entry, id 0) at a
/// nesting depth (KernelContext::scope).
struct Scope {
  int depth = 0;
  int id = 0;
};

struct KernelContext {
  llvm::Module* module = nullptr;
  llvm::IRBuilder<>* b = nullptr;
  llvm::Function* fn = nullptr;
  const fusion::FusionPlan* plan = nullptr;
  const fusion::KernelPlan* kernel = nullptr; // null for library kernels
  std::string kernelName;
  const ir::Graph* graph = nullptr;
  bool useLibdevice = false;
  llvm::IntegerType* indexTy = nullptr;
  int blockSize = 256;
  std::map<int, llvm::Value*> bufferArg;         // FusionPlan buffer → ptr addrspace(1)
  std::map<std::string, llvm::Value*> symbolArg; // symbol → i64 size
  llvm::Value* barrierState = nullptr;           // ptr addrspace(1), when the kernel needs one
  // After a last-block handoff (fusion::Barrier::LastBlock) the one block left runs the rest of
  // the kernel as block 0 of a grid of 1: blockId() and gridSize() say so.
  bool aloneInGrid = false;
  llvm::GlobalVariable* dynamicShared = nullptr; // extern shared [0 x i8]
  llvm::GlobalVariable* reduceScratch = nullptr; // static shared, for cross-warp combines
  /// Multi-indices made by delinearize, with the shape and flat index they came from, so that
  /// linearizing them again over the same shape is free (and loads stay provably contiguous,
  /// which lets LLVM's load/store vectoriser form ld.global.v4).
  /// Only indices with a coordinate that is not a constant are kept (a single-element
  /// tensor's all-zero index is the same in every phase), each with the scope it was made in.
  struct FlatIndex {
    ir::Shape shape;
    llvm::Value* flat;
    Scope scope;
  };
  std::map<std::vector<llvm::Value*>, FlatIndex> flatOfIndex;
  /// Records that `idx` over `s` is flat index `flat` (see flatOfIndex), made in the current
  /// scope.
  void noteFlatIndex(const std::vector<llvm::Value*>& idx, const ir::Shape& s, llvm::Value* flat);

  /// Structured nesting of the code being emitted: loop() and ifThen() bodies are one level
  /// deeper than the code around them. A value created at depth d dominates everything emitted
  /// after it at depth >= d until the construct that encloses it (at depth d - 1) ends, so a
  /// cache filled only at the depth of its region never hands out a non-dominating value.
  int depth = 0;
  /// The body being emitted into at depth d is scope (d, scopeIds[d]); every loop() and
  /// ifThen() body gets a fresh id. A value made in a scope dominates everything emitted after
  /// it while that scope is open (isOpen), and nothing once it has closed: every cache of
  /// generated values keeps the scope of each entry and hands it out only while it is open.
  std::vector<int> scopeIds = {0};
  int nextScopeId = 1;
  Scope scope() const { return {depth, scopeIds[size_t(depth)]}; }
  bool isOpen(const Scope& s) const {
    return s.depth <= depth && scopeIds[size_t(s.depth)] == s.id;
  }

  /// Vector groups: `width` consecutive elements (flat f0 .. f0 + width - 1, f0 a multiple of
  /// width) that one thread emits together. Their multi-indices share every coordinate but the
  /// innermost, which is base + lane (base a multiple of width). A tensor in global memory
  /// whose innermost dim is a static multiple of width is read at such a coordinate with one
  /// vector load per 16 bytes, made once per group and shared by the lanes.
  struct VectorLane {
    llvm::Value* base; // the innermost coordinate of lane 0, a multiple of width
    int lane;
  };
  int vectorWidth = 0;  // of the open group; 0 when none is open
  int vectorDepth = -1; // depth of the open group's main path
  std::map<llvm::Value*, VectorLane> vectorLanes;
  /// (buffer, lane-0 index, first lane of the chunk) → the chunk's elements (compute type),
  /// all extracted right after its vector load: should LLVM split the load into scalar loads,
  /// they stay adjacent, and the NVPTX load/store vectoriser merges them back.
  std::map<std::tuple<llvm::Value*, Index, int>, std::vector<llvm::Value*>> vectorLoads;

  llvm::LLVMContext& ctx() const { return module->getContext(); }
  /// "kernel \"k\": op \"x\" (add)" — the prefix of every error about one op of this kernel.
  std::string where(ir::NodeId op) const;
  [[noreturn]] void fail(ir::NodeId op, const std::string& what) const;

  llvm::Value* index(int64_t v) const { return llvm::ConstantInt::get(indexTy, v, true); }
  llvm::Value* dim(const ir::Dim& d) const;        // a size in indexTy
  llvm::Value* elements(const ir::Shape& s) const; // product of dims, indexTy
  llvm::Value* toIndex(llvm::Value* v) const;      // sext/trunc an integer to indexTy

  // thread geometry
  llvm::Value* threadId();
  llvm::Value* blockId();
  llvm::Value* gridSize();
  llvm::Value* laneId() { return b->CreateAnd(threadId(), 31); } // i32
  void blockBarrier();
  /// bar.warp.sync over all 32 lanes: orders the warp's shared-memory accesses.
  void warpBarrier();

  // control flow
  llvm::AllocaInst* entryAlloca(llvm::Type* t, const std::string& name);
  /// for (iv = start; iv < end; iv += step) body(iv)   (signed compare, indexTy or i32).
  /// unrollCount > 1 asks LLVM to unroll it that many times (llvm.loop.unroll.count; a runtime
  /// trip count gets a remainder loop, after LICM has hoisted what the iterations share).
  void loop(const std::string& name, llvm::Value* start, llvm::Value* end, llvm::Value* step,
            const std::function<void(llvm::Value*)>& body, int unrollCount = 0);
  void ifThen(llvm::Value* cond, const std::function<void()>& then);

  // memory
  llvm::Value* bufferPointer(int buffer, ir::NodeId forValue) const;
  llvm::Value* sharedPointer(int64_t byteOffset);
  llvm::Value* loadElement(llvm::Value* base, ir::DType t, llvm::Value* flat, unsigned align = 0);
  void storeElement(llvm::Value* base, ir::DType t, llvm::Value* flat, llvm::Value* value,
                    unsigned align = 0);

  // vector groups (see VectorLane)
  void beginVectorGroup(int width);
  void endVectorGroup();
  /// The multi-indices over `s` of the open group's lanes whose lane 0 is at flat index `flat0`
  /// (a multiple of the width): lanes of one base when s's innermost dim is a static multiple
  /// of the width, else each lane delinearized on its own. `index0`, when given, is flat0's
  /// multi-index (built by the caller so that it shares values with other indices).
  std::vector<Index> vectorLaneIndices(const ir::Shape& s, llvm::Value* flat0,
                                       const Index* index0 = nullptr);
  /// Element `idx` of the tensor of shape `s` at `base` in global memory: extracted from the
  /// open group's vector load when idx's innermost coordinate is a lane of it (the load is
  /// made on the group's main path only), a scalar load otherwise.
  llvm::Value* loadTensorElement(llvm::Value* base, ir::DType t, const ir::Shape& s,
                                 const Index& idx);
  /// Stores lanes[j] at flat0 + j with vector stores of at most 16 bytes; flat0 must be a
  /// multiple of lanes.size() (a power of two).
  void storeVector(llvm::Value* base, ir::DType t, llvm::Value* flat0,
                   const std::vector<llvm::Value*>& lanes);
};

/// Elements of dtype t that one vector access of at most 16 bytes holds, at most `width`.
int vectorChunk(ir::DType t, int width);

llvm::Type* computeType(llvm::LLVMContext& c, ir::DType t);
llvm::Type* memoryType(llvm::LLVMContext& c, ir::DType t);
/// A value read from memory (storage type) → its compute type, and back.
llvm::Value* fromMemory(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType t);
llvm::Value* toMemory(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType t);
/// Compute value → the dtype's precision and back (f16/bf16 round to nearest even).
llvm::Value* roundToDType(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType t);
/// Converts a compute value of dtype `from` to a compute value of dtype `to`, as the
/// reference interpreter does (float→int truncates toward zero and saturates, NaN → 0;
/// anything→bool is != 0).
llvm::Value* convertValue(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType from, ir::DType to);
llvm::Constant* constantOf(llvm::LLVMContext& c, ir::DType t, double v); // compute type

Index delinearize(KernelContext& k, const ir::Shape& s, llvm::Value* flat);
/// The multi-index over `s` of element `column` of row `row` (rows: s's leading rowDims dims)
/// whose flat index is `flat`, built from the row's multi-index `rowIndex` so that every
/// element of one row shares its row coordinates (a broadcast along the row then reads one
/// address, which LLVM loads once).
Index rowColumnIndex(KernelContext& k, const ir::Shape& s, const Index& rowIndex,
                     llvm::Value* column, llvm::Value* flat);
llvm::Value* linearize(KernelContext& k, const ir::Shape& s, const Index& idx);

} // namespace weft::codegen
