// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addQuantizeOps(OperatorTable&) {}

} // namespace weft::onnx
