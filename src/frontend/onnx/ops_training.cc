// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addTrainingOps(OperatorTable&) {}

} // namespace weft::onnx
