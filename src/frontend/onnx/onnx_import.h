#pragma once
// The ONNX importer: an ONNX model (a protobuf ModelProto) becomes a verified ir::Graph built
// from IR primitives only. Initializers become constants, graph inputs that are not
// initializers become parameters (dim_param → symbolic Dim, dim_value → static), ONNX's
// implicit numpy broadcasting becomes explicit broadcast_in_dim, and every operator is
// lowered per the default-domain opset the model imports (docs/onnx.md lists them).
// Shape computations on values known at import time (Shape, Constant, Gather, Concat, ... of
// constants) are folded, so shape inputs such as Reshape's become static.
//
// Element types without an IR dtype are widened: uint8/uint16/int16 → i32, uint32/uint64 →
// i64 (values are exact; wrap-around of unsigned arithmetic is not modelled).
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "weft/error.h"
#include "weft/tensor.h"

namespace weft::onnx {

/// The model uses something weft cannot lower (an operator, a dtype, a mode of an operator).
/// `opType` is the ONNX operator (or "" for a non-operator feature such as a sequence input).
class UnsupportedError : public InputError {
public:
  UnsupportedError(const std::string& message, std::string opType)
      : InputError(message), opType_(std::move(opType)) {}
  const std::string& opType() const { return opType_; }

private:
  std::string opType_;
};

/// An operand that must be known at import time (a shape, axes, pads, ...) is a graph input
/// of the model. Freezing that input (ImportOptions::frozenInputs) makes it a constant.
class ImportTimeValueError : public UnsupportedError {
public:
  ImportTimeValueError(const std::string& message, std::string opType, std::string input)
      : UnsupportedError(message, std::move(opType)), input_(std::move(input)) {}
  const std::string& input() const { return input_; }

private:
  std::string input_;
};

struct ImportOptions {
  /// Graph inputs fixed to a value at import time: they become constants instead of
  /// parameters (as if the model stored them as initializers), so shape operands fold.
  std::map<std::string, HostTensor> frozenInputs;
};

/// Reads and imports the model at `path`. Throws InputError (file unreadable, not an ONNX
/// model, truncated protobuf, unsupported opset, undefined value, ...) or UnsupportedError
/// (listing every unsupported operator once, with a node name and the opset), each message
/// starting with `path`.
ir::Graph importOnnx(const std::string& path, const ImportOptions& options = {});

/// The same from the bytes of a model file; `source` names it in error messages.
ir::Graph importOnnxBytes(const std::string& bytes, const std::string& source = "<onnx bytes>",
                          const ImportOptions& options = {});

/// The model's graph inputs that are not initializers, in order (what a caller feeds it).
std::vector<std::string> onnxInputNames(const std::string& path);

/// The default-domain opsets the importer accepts, inclusive. Opsets 19 to 21 changed no
/// operator weft lowers except by adding types weft lacks (float8, int4, strings), Pad's
/// "wrap" mode (refused as an unsupported mode), Gelu (new in 20) and bool ReduceMax /
/// ReduceMin (20).
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 21;

/// The ONNX operators the importer lowers (default domain), sorted.
std::vector<std::string> supportedOperators();

/// Reads a serialized TensorProto (the input_N.pb / output_N.pb files of ONNX test cases)
/// into a HostTensor, widening element types the IR lacks as importOnnx does.
HostTensor readTensorProtoFile(const std::string& path);
HostTensor parseTensorProto(const std::string& bytes, const std::string& source);

/// True when the file at `path` looks like an ONNX model (extension .onnx, or a protobuf
/// whose first field is ModelProto's ir_version).
bool looksLikeOnnx(const std::string& path);

} // namespace weft::onnx
