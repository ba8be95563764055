#pragma once
// One entry point for every graph file weft reads: ONNX models (by the .onnx extension or
// ModelProto's first byte) through the ONNX importer, anything else as a weft JSON graph.
// The CLI's commands call this so that an ONNX model is accepted wherever a graph is.
#include <string>

#include "frontend/json_reader.h"

namespace weft::frontend {

/// Reads `path` as ONNX or JSON (see above); the name is the JSON's "name" or the file stem.
/// Throws InputError naming the file on any problem.
ParsedGraph loadGraphAnyFormat(const std::string& path);

} // namespace weft::frontend
