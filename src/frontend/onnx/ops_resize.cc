// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addResizeOps(OperatorTable&) {}

} // namespace weft::onnx
