#include "frontend/onnx/load_graph.h"

#include <filesystem>

#include "frontend/onnx/onnx_import.h"

namespace weft::frontend {

ParsedGraph loadGraphAnyFormat(const std::string& path) {
  if (!onnx::looksLikeOnnx(path)) return readGraphFile(path);
  return {std::filesystem::path(path).stem().string(), onnx::importOnnx(path)};
}

} // namespace weft::frontend
