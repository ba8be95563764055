#pragma once
// FusionPlan: a whole graph as a sequence of steps — stitched kernels (KernelPlan) and
// library calls for compute-intensive ops — plus the buffers between them.
// Every field is serialised by fusion/plan_serialization.cc: add new ones there.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fusion/gemm_epilogue.h"
#include "fusion/gemm_plan.h"
#include "fusion/kernel_plan.h"
#include "ir/graph.h"
#include "ir/symbol_ranges.h"
#include "weft/compile_options.h"
#include "weft/device_spec.h"

namespace weft::fusion {

// The policy is public (weft/compile_options.h); the planner names it as its own.
using weft::parsePolicy;
using weft::Policy;
using weft::policyName;

struct Buffer {
  enum class Kind : uint8_t {
    Input,        // a graph input, provided by the caller
    Output,       // a graph output, returned to the caller
    Intermediate, // between steps (written by one step, read by later ones)
    Scratch,      // inside one kernel (global stitching), dead after it
  };
  Kind kind = Kind::Intermediate;
  ir::NodeId value = -1; // the value it holds
  ir::DType dtype = ir::DType::f32;
  ir::Dim elements = 1;  // element count (may be symbolic)
  int slot = -1;         // memory planning: buffers with the same slot share storage (-1: own)
};

/// A compute-intensive op executed by a generated (non-stitched) kernel or a library.
struct LibraryCall {
  ir::NodeId op = -1;
  GemmPlan gemm;         // how a dot runs (fusion/gemm_planner.h)
  GemmEpilogue epilogue; // the dot's consumers fused into its kernel (astitch; empty: none)

  /// The value the step writes: the epilogue's (or its store layout's) result, or the op's own.
  ir::NodeId result() const { return epilogue.stored(op); }
  /// The values the step reads from buffers: the op's operands (a prologue's source where one
  /// absorbs the operand's layout ops), then the epilogue's reads.
  std::vector<ir::NodeId> reads(const ir::Graph& g) const {
    std::vector<ir::NodeId> r = epilogue.operands(g.node(op).operands);
    for (const EpilogueRead& e : epilogue.reads)
      r.push_back(e.value);
    return r;
  }
};

using Step = std::variant<KernelPlan, LibraryCall>;

struct FusionPlan {
  Policy policy = Policy::AStitch;
  DeviceSpec device;
  ir::Graph graph;                  // the graph the plan refers to (after passes)
  std::vector<Step> steps;          // in execution order
  std::vector<Buffer> buffers;
  std::vector<int> bufferOfValue;   // value id → buffer index, -1 when the value has none
  ir::SymbolRanges symbolRanges;    // what the heuristics assumed of the symbols ({}: nothing)
  // The planner's changes to the graph it was given (astitch: reduction_split.h,
  // scope_recompute.h), one line each saying what and why; `weft plan` prints them first.
  std::vector<std::string> notes;

  int kernelCount() const;
};

} // namespace weft::fusion
