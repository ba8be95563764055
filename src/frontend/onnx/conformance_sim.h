#pragma once
// The conformance runner's device backend: weft::compile + Executable on the `sim` device,
// through the public API exactly as an embedding application would use it.
#include <string>

#include "frontend/onnx/conformance.h"
#include "weft/weft.h"

namespace weft::onnx {

/// Compiles each graph under `policy` for the `profile` DeviceSpec ("h100", ...) and runs it on
/// a sim device; reports the kernels of the compiled plan. The disk compile cache is off.
Backend simBackend(Policy policy = Policy::AStitch, const std::string& profile = "h100");

} // namespace weft::onnx
