// (being written)
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addRnnOps(OperatorTable&) {}

} // namespace weft::onnx
