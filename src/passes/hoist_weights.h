#pragma once
// Hoisting weights out of the code: every constant with more than one distinct value and more
// than ir::kMaxEmbeddedConstantBytes of data becomes a graph input (a weight) of its own name,
// dtype and shape, and its values move into an ir::Weights beside the graph. The ONNX import
// (`weft import`, initializers) and the compiler (what canonicalization leaves) both run it,
// so no kernel embeds a table of values or copies one at run time: a weight is read where it
// lies, like any input.
#include "ir/graph.h"
#include "ir/weights.h"

namespace weft::passes {

struct HoistedWeights {
  ir::Graph graph;    // the source's inputs, then one input per hoisted constant, in node order
  ir::Weights values; // the hoisted constants' values, by their (input) names
};

/// ir::kMaxEmbeddedConstantBytes, or $WEFT_MAX_EMBEDDED_CONSTANT_BYTES where set: a larger
/// limit embeds tables as before weights were parameters, for comparison (docs/performance.md).
size_t maxEmbeddedConstantBytes();

/// The rewrite above. First, an op computed from constants alone, one of them large, whose
/// result is no larger than its largest operand (a transpose or reshape of a weight, a dot of
/// two) is computed here, once, by the interpreter, and its result is the weight, under the
/// op's name; constants nothing reads any more are dropped. Constants that are graph outputs
/// stay (an output is never a second name for an input); everything else is copied unchanged,
/// names included.
HoistedWeights hoistWeights(const ir::Graph& g, size_t maxBytes = maxEmbeddedConstantBytes());

/// The values of constant `n` as a host tensor of its dtype and (static) shape.
HostTensor constantTensor(const ir::Node& n);

} // namespace weft::passes
