#pragma once
// The ONNX protobuf classes (namespace ::onnx) from Debian's libonnx-dev. ONNX_ML and
// ONNX_NAMESPACE come from the imported onnx_proto target; the fallbacks keep the header
// usable from a plain compiler invocation.
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>
