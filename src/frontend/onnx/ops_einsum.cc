// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addEinsumOps(OperatorTable&) {}

} // namespace weft::onnx
