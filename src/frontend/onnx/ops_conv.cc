// Conv and ConvTranspose: being written.
#include "frontend/onnx/importer.h"

namespace weft::onnx {

void addConvOps(OperatorTable&) {}

} // namespace weft::onnx
