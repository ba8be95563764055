#pragma once
// Reads weft's JSON graph format (docs/graph-format.md) into a verified ir::Graph.
// Ops may appear in any order (they are sorted by their inputs); numpy-style implicit
// broadcasting of elementwise operands and the convenience ops (softmax, layer_norm, gelu, ...)
// are expanded here into IR primitives, so nothing after the frontend sees them.
// Every problem with the input is an InputError whose message starts with the file name and
// names the op and the field: `g.json: op "y" (add): field "inputs": ...`.
#include <string>

#include "ir/graph.h"
#include "ir/weights.h"

namespace weft::frontend {

struct ParsedGraph {
  std::string name; // the file's "name", or the file's stem when it has none
  ir::Graph graph;
  /// The graph's weights (its "weights"): inputs after the file's "inputs", whose values come
  /// from `weightsFile` rather than from the caller (ir/weights.h).
  std::vector<std::string> weightNames = {};
  /// "weights_file" as written (relative to the graph file's folder); "" when none.
  std::string weightsFile = {};
  /// The weights' values: loaded by readGraphFile (frontend/weights_file.h), or by whoever
  /// made the graph (the ONNX import); empty after readGraphJson.
  ir::Weights weights = {};
};

/// Parses `text`; `fileName` is only used in messages (and as the default graph name).
ParsedGraph readGraphJson(const std::string& text, const std::string& fileName);
/// Reads and parses the file at `path` (InputError when it cannot be read), and the weights
/// file it names, each weight checked against the graph (InputError naming file and tensor).
ParsedGraph readGraphFile(const std::string& path);

/// The names the reader accepts in "op", sorted: IR ops, their aliases and convenience ops.
std::vector<std::string> knownOpNames();

} // namespace weft::frontend
