#pragma once
// Weights files (docs/graph-format.md, "Weights"): the values of a graph's weights, beside the
// graph rather than in it, in the safetensors layout: an 8-byte little-endian header length
// N, N bytes of JSON ({"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
// ..., optional "__metadata__"}), then the data, each tensor little-endian in C order at
// [b, e) of the data section. dtypes: F32 F16 BF16 F64 I8 I32 I64 BOOL.
// Every problem is one InputError that names the file and, where it is about one, the tensor.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/weights.h"

namespace weft::frontend {

/// Every tensor of the file at `path`.
ir::Weights readWeightsFile(const std::string& path);
/// The same from the file's bytes; `where` names it in messages.
ir::Weights decodeWeights(const std::string& bytes, const std::string& where);

/// Writes `weights` to `path` (tensors in name order, data 8-byte aligned).
std::string encodeWeights(const ir::Weights& weights);
void writeWeightsFile(const std::string& path, const ir::Weights& weights);

/// The weights graph `g` declares (`names`, each an input of g) read from the file at `path`,
/// each checked against its input's dtype and shape: a missing tensor, a tensor the graph does
/// not declare, another dtype or shape are errors naming the file and the tensor.
ir::Weights loadWeightsFor(const ir::Graph& g, const std::vector<std::string>& names,
                           const std::string& path);

} // namespace weft::frontend
