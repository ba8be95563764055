// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addSignalOps(OperatorTable&) {}

} // namespace weft::onnx
