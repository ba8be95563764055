#pragma once
// Internals of the ONNX importer shared by the operator lowerings (ops_*.cc): the values the
// importer tracks, the per-node context a lowering works through, and the operator table.
// Not a public header: it exposes the ONNX protobuf types.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/composite_ops.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_proto.h"
#include "ir/graph.h"

namespace weft::onnx {

/// A tensor whose elements are known at import time (initializers, Constant, folded shape
/// computations). Integer and bool elements are kept exactly as int64 (`exact`): a double
/// rounds int64 values past 2^53, and INT64_MAX (PyTorch's "to the end" in Slice) would become
/// 2^63. Float elements are doubles (`reals`), as in ir::ConstantAttrs. One of the two vectors
/// holds numElements(shape) values, row-major; the other is empty.
struct Literal {
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;
  std::vector<double> reals;  // float dtypes
  std::vector<int64_t> exact; // integer and bool dtypes

  /// An integer or bool literal (values kept exactly).
  static Literal ofInts(ir::DType dtype, std::vector<int64_t> shape, std::vector<int64_t> values);
  /// A float literal; for an integer or bool dtype each value must be integral and fit int64.
  static Literal ofReals(ir::DType dtype, std::vector<int64_t> shape, std::vector<double> values);

  bool integral() const { return !ir::isFloat(dtype); }
  size_t size() const { return integral() ? exact.size() : reals.size(); }
  /// Element i as a double (integers past 2^53 rounded).
  double value(size_t i) const { return integral() ? static_cast<double>(exact[i]) : reals[i]; }
  /// Every element as a double (for an IR constant).
  std::vector<double> doubles() const;
  /// The first integer element a double cannot hold exactly (past 2^53 in magnitude), which an
  /// IR constant would silently round; nullopt when there is none.
  std::optional<size_t> firstInexact() const;
  int64_t numElements() const;
  ir::TensorType type() const;
  /// Values of an integer literal (shape operands), exactly; InputError (without a location:
  /// callers add theirs) for a float or bool literal.
  std::vector<int64_t> ints() const;
};

HostTensor toHostTensor(const Literal& lit);
Literal toLiteral(const HostTensor& h);

/// An ONNX value as the importer knows it: a node of the graph being built, a literal, or
/// both once the literal was materialized as a constant node.
struct Value {
  std::string name; // the ONNX value name (names a materialized literal)
  ir::NodeId node = -1;
  std::optional<Literal> literal;
  bool graphInput = false; // a parameter of the model (a frozen one too)
  /// The ONNX element type where the importer knows it (graph inputs, initializers, Cast
  /// outputs), 0 elsewhere: the IR dtype alone does not tell UINT8 from INT32 (irDTypeOf).
  int onnxType = 0;
};

/// ONNX element type (TensorProto.DataType) → IR dtype, widening those the IR lacks.
/// Nullopt for string, complex and unknown types.
std::optional<ir::DType> irDTypeOf(int onnxType);
std::string onnxTypeName(int onnxType);
/// "[1, 2, 3]": an attribute's or shape operand's values in an error message.
std::string listStr(const std::vector<int64_t>& v);
Literal literalFromTensorProto(const ::onnx::TensorProto& t, const std::string& where);

class NodeContext;
/// Lowers one ONNX node into IR primitives through the context.
using Lowering = std::function<void(NodeContext&)>;
using OperatorTable = std::map<std::string, Lowering>;
/// Operator table: op type → lowering, filled once by the ops_*.cc files' functions below
/// (explicit calls rather than static registrars, which a static library would drop).
const OperatorTable& operatorTable();
void addElementwiseOps(OperatorTable& table); // ops_elementwise.cc
void addLayoutOps(OperatorTable& table);      // ops_layout.cc
void addReduceOps(OperatorTable& table);      // ops_reduce.cc
void addNNOps(OperatorTable& table);          // ops_nn.cc
void addMathOps(OperatorTable& table);        // ops_math.cc
void addIndexOps(OperatorTable& table);       // ops_index.cc
void addLossOps(OperatorTable& table);        // ops_loss.cc
void addPoolOps(OperatorTable& table);        // ops_pool.cc
void addConvOps(OperatorTable& table);        // ops_conv.cc
void addScatterOps(OperatorTable& table);     // ops_scatter.cc
void addResizeOps(OperatorTable& table);      // ops_resize.cc
void addQuantizeOps(OperatorTable& table);    // ops_quantize.cc
void addEinsumOps(OperatorTable& table);      // ops_einsum.cc
void addSignalOps(OperatorTable& table);      // ops_signal.cc
void addRnnOps(OperatorTable& table);         // ops_rnn.cc
void addTrainingOps(OperatorTable& table);    // ops_training.cc
void addSampleOps(OperatorTable& table);      // ops_sample.cc

class NodeContext;
/// The dtype a float `t`'s sums, statistics and composed functions are computed in: f32 for
/// f16 and bf16 (sums of many elements would overflow or drop the small ones), `t` itself
/// otherwise (ops_nn.cc).
ir::DType computeDType(ir::DType t);
/// ops_elementwise.cc: a binary op's operands broadcast to one shape (ONNX's legacy
/// broadcast/axis attributes before opset 7), and the check that both have one dtype.
std::pair<ir::NodeId, ir::NodeId> binaryOperands(NodeContext& c);
void requireSameDType(NodeContext& c, ir::NodeId a, ir::NodeId b);
/// ops_elementwise.cc: x cast to the ONNX element type `to` (Cast's values, also for the
/// types weft holds in a wider integer: see there); `to` must have an IR dtype.
/// `from` is x's ONNX type where known (UINT64 converts to floats as unsigned).
ir::NodeId castTo(NodeContext& c, ir::NodeId x, int to, const std::string& name, int from = 0);
/// ops_elementwise.cc: the width of an ONNX integer type weft holds in a wider IR integer
/// (irDTypeOf: UINT8, UINT16 and INT16 in i32, UINT32 in i64), else 0.
int heldNarrowBits(int onnxType);

/// The lowest value of dtype t, below every element a max starts from: -inf for floats, the
/// type's minimum for integers (exact as a double).
double lowestValue(ir::DType t);
/// ops_math.cc: x (a float) rounded to the nearest integer, halves to the even one, in x's
/// dtype (Round's values but for the sign of a zero result; QuantizeLinear's rounding).
ir::NodeId roundHalfToEven(NodeContext& c, ir::NodeId x);

/// ops_nn.cc: a x b with numpy's matmul semantics (MatMul's): a 1-D operand gets a unit dim,
/// removed again from the result, and the batch dims broadcast, around one batched dot.
ir::NodeId numpyMatmul(NodeContext& c, ir::NodeId a, ir::NodeId b, const std::string& name);

/// `shape` with `d` inserted before position `at`.
ir::Shape inserted(ir::Shape shape, size_t at, const ir::Dim& d);
/// The broadcast_in_dim dims that place an operand of rank `rank` into a shape with one more
/// axis at position `at` (the operand's axes keep their order around it).
std::vector<int64_t> skipping(size_t rank, size_t at);

/// ops_conv.cc: Conv of x [N, C, D1..Dn] by w [M, C/group, k1..kn] with the node's attributes
/// (auto_pad, dilations, group, kernel_shape, pads, strides, read and checked as Conv reads
/// them), in `accumulate`: both operands are converted to it and the one dot sums in it (an
/// integer dtype wraps). The padding is zeros of that dtype, so an integer convolution passes
/// its operands less their zero points (where ONNX's reference pads them). `bias` [M], of
/// dtype `accumulate`, is added per output channel. The last op is named `name`. ConvInteger
/// and QLinearConv (ops_quantize.cc) use it.
ir::NodeId convolution(NodeContext& c, ir::NodeId x, ir::NodeId w, ir::DType accumulate,
                       std::optional<ir::NodeId> bias, const std::string& name);

// unsigned64.cc: ONNX's UINT64, which weft holds in an i64 with the same bits.
bool isUnsigned64(int onnxType);
/// a / b as UINT64 (b = 0 gives all ones, as the IR's integer division by 0 gives -1).
ir::NodeId unsignedDivide(NodeContext& c, ir::NodeId a, ir::NodeId b, const std::string& name);
/// The UINT64 x as a float of dtype t, rounded once.
ir::NodeId unsignedToFloat(NodeContext& c, ir::NodeId x, ir::DType t,
                           const std::string& name = "");
/// A float x as UINT64 (truncated; from 2^63 to 2^64 the i64 with those bits).
ir::NodeId floatToUnsigned64(NodeContext& c, ir::NodeId x, const std::string& name = "");
/// Runs the node's lowering so that UINT64 operands keep their meaning: an order-sensitive
/// operator (Less, Max, ArgMax, ReduceMin, TopK...) compares them as unsigned; an operator
/// whose int64 result would differ and that does not handle UINT64 itself is refused.
void lowerWithOnnxTypes(NodeContext& c, const Lowering& lowering);

/// What a lowering sees: the node, its inputs (materialized on demand into `graph`), its
/// attributes, and where its outputs go. Errors name the model file, the node and the opset.
class NodeContext {
public:
  NodeContext(ir::Graph& graph, const ::onnx::NodeProto& node, int opset, std::string source,
              std::vector<Value*> inputs);

  ir::Graph& g;
  const ::onnx::NodeProto& node;
  const int opset;

  // --- inputs ---
  size_t numInputs() const { return inputs_.size(); }
  /// Input i is given (ONNX marks an omitted optional input with an empty name).
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// Input i as a node of g (a literal becomes a constant node the first time).
  ir::NodeId in(size_t i);
  /// Input i's literal, or nullptr when it is only known at run time.
  const Literal* literal(size_t i) const;
  /// Input i's literal; throws ImportTimeValueError (naming the graph input when input i is
  /// one) or UnsupportedError when it is computed at run time. `what` names the operand.
  const Literal& requireLiteral(size_t i, const std::string& what) const;
  /// Input i's literal as integers (exact int64); fails naming `what` when it is not known at
  /// import time or is not an integer tensor (ONNX's shape operands are int64 or int32).
  std::vector<int64_t> constInts(size_t i, const std::string& what) const;
  double constScalar(size_t i, const std::string& what) const;
  ir::TensorType type(size_t i) const;
  /// Input i's ONNX element type where known (Value::onnxType), else 0.
  int onnxType(size_t i) const { return has(i) ? inputs_[i]->onnxType : 0; }
  size_t rank(size_t i) const { return type(i).shape.size(); }
  /// Input i reads `v` from here on (which must outlive the lowering): a UINT64 operand seen
  /// through an order-preserving map (unsigned64.cc).
  void substituteInput(size_t i, Value* v) { inputs_.at(i) = v; }

  // --- attributes ---
  // Each reader checks the AttributeProto's type (an attribute of another type, or one given
  // twice, fails naming the node, the attribute and both types); absent: the default.
  bool hasAttr(const std::string& name) const;
  /// Fails unless every attribute of the node holds exactly the value its type declares (an
  /// INT with no `i`, or with an `f` beside it, is malformed; a list may be empty).
  void checkAttributeValues() const;
  /// Fails when the node has an attribute, or more inputs, than ONNX defines for its operator
  /// at the node's opset ("ReduceSum-13 takes axes as input 1, not as an attribute").
  void checkSignature() const;
  int64_t attrInt(const std::string& name, int64_t dflt) const;
  /// A required INT attribute: fails when absent.
  int64_t requireAttrInt(const std::string& name) const;
  float attrFloat(const std::string& name, float dflt) const;
  std::string attrString(const std::string& name, const std::string& dflt) const;
  std::optional<std::vector<int64_t>> attrInts(const std::string& name) const;
  /// A required INTS attribute: fails when absent.
  std::vector<int64_t> requireAttrInts(const std::string& name) const;
  std::optional<std::vector<float>> attrFloats(const std::string& name) const;
  const ::onnx::TensorProto* attrTensor(const std::string& name) const;

  // --- outputs ---
  size_t numOutputs() const { return static_cast<size_t>(node.output_size()); }
  bool wantsOutput(size_t i) const {
    return i < numOutputs() && !node.output(static_cast<int>(i)).empty();
  }
  /// A fresh graph name for output i (the ONNX value name, made unique), for its last op.
  std::string name(size_t i = 0) const;
  void setOutput(size_t i, ir::NodeId id);
  void setOutput(size_t i, Literal lit);
  /// Records output i's ONNX element type (Value::onnxType); call after setOutput.
  void setOutputOnnxType(size_t i, int onnxType);
  const std::vector<Value>& outputs() const { return outputs_; }

  // --- building helpers ---
  /// Where the shared composite ops (frontend/composite_ops.h) build this node's expansion:
  /// intermediates take the graph's fresh names, problems are reported at this node, and a
  /// keepdims reshape is broadcast from the reduce it reshapes.
  frontend::Site site() const;
  /// A constant of x's dtype and shape (a splat; works for symbolic shapes).
  ir::NodeId splatLike(ir::NodeId x, double v);
  ir::NodeId splat(ir::DType t, const ir::Shape& shape, double v);
  ir::NodeId constant(const Literal& lit, const std::string& name = "");
  /// Numpy (multidirectional) broadcast of shapes (frontend::broadcastShape); fails naming
  /// both when incompatible.
  ir::Shape broadcastShape(const ir::Shape& a, const ir::Shape& b) const;
  /// x broadcast (numpy rules: trailing alignment) to `shape`; x itself when already there
  /// (frontend::broadcastTo, looking through keepdims reshapes).
  ir::NodeId broadcastTo(ir::NodeId x, const ir::Shape& shape, const std::string& name = "");
  /// Both operands broadcast to their common shape.
  std::pair<ir::NodeId, ir::NodeId> broadcastPair(ir::NodeId a, ir::NodeId b);
  /// x with dtype `t` (x itself when it has it already).
  ir::NodeId convertTo(ir::NodeId x, ir::DType t, const std::string& name = "");
  /// Reshape that is skipped when the shape already matches.
  ir::NodeId reshapeTo(ir::NodeId x, const ir::Shape& shape, const std::string& name = "");
  /// Reduce with ONNX keepdims: axes must be normalized, sorted, unique and non-empty.
  ir::NodeId reduceKeep(ir::ReduceKind kind, ir::NodeId x, const std::vector<int64_t>& axes,
                        bool keepdims, const std::string& name = "");
  /// Normalizes a possibly negative axis for rank r; fails naming `what` when out of range.
  int64_t axis(int64_t a, size_t r, const std::string& what) const;
  ir::TensorType typeOf(ir::NodeId id) const {
    return g.node(id).type;
  } // a copy: adding nodes moves them

  // --- errors ---
  /// "model.onnx: node "name" (OpType, opset N): " — the prefix of every error.
  std::string where() const;
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void unsupported(const std::string& what) const;

private:
  /// The attribute `name`, checked to be of AttributeProto type `type`; nullptr when absent.
  const ::onnx::AttributeProto* attr(const std::string& name, int type) const;

  std::string source_;
  std::vector<Value*> inputs_;
  std::vector<Value> outputs_;
};

} // namespace weft::onnx
