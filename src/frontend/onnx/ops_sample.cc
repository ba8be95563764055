// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addSampleOps(OperatorTable&) {}

} // namespace weft::onnx
