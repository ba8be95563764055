// ONNX's UINT64 in weft's i64. The IR has no unsigned dtype: a UINT64 value is held in an i64
// with the same bits. Addition, subtraction, multiplication, equality and data movement give
// UINT64's results on those bits as they are; order, division, absolute value, sign and
// conversion to and from floats do not (2^63 reads as -2^63). This file gives those their
// unsigned meaning, and refuses the operators it does not cover rather than give int64's
// answer for a UINT64 value at or past 2^63.
//
// Order: x + (-2^63) (wrapping: it flips the top bit) maps UINT64 order onto int64 order, so an
// order-sensitive operator runs on flipped operands and its value results are flipped back.
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

#include "frontend/onnx/importer.h"

namespace weft::onnx {

using ir::CompareDir;
using ir::DType;
using ir::NodeId;
using ir::OpKind;

bool isUnsigned64(int onnxType) {
  return onnxType == ::onnx::TensorProto::UINT64;
}

namespace {

constexpr double kTopBit = -9223372036854775808.0; // -2^63: exact in a double and in an i64

/// x with its top bit flipped: UINT64 order becomes int64 order (and back).
NodeId flipTopBit(NodeContext& c, NodeId x) {
  return c.g.binary(OpKind::Add, x, c.splatLike(x, kTopBit));
}

NodeId unsignedCompare(NodeContext& c, CompareDir dir, NodeId a, NodeId b) {
  return c.g.compare(dir, flipTopBit(c, a), flipTopBit(c, b));
}

/// x >> 1 as UINT64 (a logical shift): x / 2 for x < 2^63; else x with its top bit cleared,
/// halved, plus half of 2^63.
NodeId halve(NodeContext& c, NodeId x) {
  NodeId two = c.splatLike(x, 2);
  NodeId low = c.g.binary(OpKind::Div, x, two);
  NodeId high = c.g.binary(OpKind::Add, c.g.binary(OpKind::Div, flipTopBit(c, x), two),
                           c.splatLike(x, 4611686018427387904.0)); // 2^62
  return c.g.select(c.g.compare(CompareDir::LT, x, c.splatLike(x, 0)), high, low);
}

/// Where an operator's UINT64 values are: the inputs an order-sensitive operator compares,
/// and the outputs that are one of them (flipped back), not indices or bools.
struct OrderOperands {
  std::vector<size_t> inputs; // empty: every input
  std::vector<size_t> outputs;
};

/// The node's order-sensitive operands, or nullopt when its results do not depend on order.
/// A scatter is only with reduction max or min (flipped operands would not add or multiply).
std::optional<OrderOperands> orderOperands(const NodeContext& c) {
  static const std::map<std::string, OrderOperands> ops = {
      {"Less", {{0, 1}, {}}},    {"LessOrEqual", {{0, 1}, {}}}, {"Greater", {{0, 1}, {}}},
      {"GreaterOrEqual", {{0, 1}, {}}}, {"Max", {{}, {0}}}, {"Min", {{}, {0}}},
      {"Clip", {{0, 1, 2}, {0}}}, {"ArgMax", {{0}, {}}}, {"ArgMin", {{0}, {}}},
      {"ReduceMax", {{0}, {0}}}, {"ReduceMin", {{0}, {0}}}, {"TopK", {{0}, {0}}}};
  const std::string& op = c.node.op_type();
  if (op == "ScatterElements" || op == "ScatterND") {
    std::string reduction = c.attrString("reduction", "none");
    if (reduction == "max" || reduction == "min") return OrderOperands{{0, 2}, {0}};
    return std::nullopt;
  }
  auto it = ops.find(op);
  if (it == ops.end()) return std::nullopt;
  return it->second;
}

/// The operators that give UINT64's results on its bits as they are (wrapping arithmetic,
/// equality, data movement, operands that are only indices or shapes), and those whose
/// lowering treats a UINT64 operand as one itself (Div, Mod, Abs, Sign, Pow's exponent, Cast,
/// CastLike, BitShift: see isUnsigned64's callers).
const std::set<std::string>& exactOnUnsigned64() {
  static const std::set<std::string> ops = {
      "Abs",          "Add",          "BitShift",       "Cast",      "CastLike",
      "Concat",       "CumSum",       "DepthToSpace",   "Div",       "Dropout",
      "Equal",        "Expand",       "Flatten",        "Gather",    "GatherElements",
      "GatherND",     "Identity",     "MatMul",         "Mod",       "Mul",
      "Neg",          "Pad",          "Pow",            "ReduceProd", "ReduceSum",
      "ReduceSumSquare", "Reshape",   "Scatter",        "ScatterElements", "ScatterND",
      "Shape",        "Sign",         "Size",           "Slice",     "SpaceToDepth",
      "Split",        "Squeeze",      "Sub",            "Sum",       "Tile",
      "Transpose",    "Trilu",        "Unsqueeze",      "Where",     "Einsum",
      "ReverseSequence", "BitwiseAnd",   "BitwiseNot",     "BitwiseOr", "BitwiseXor",
      "CenterCropPad", "Col2Im"};
  return ops;
}

/// Runs `lowering` on the node's operands with their top bits flipped, and flips its value
/// outputs back.
void lowerFlipped(NodeContext& c, const Lowering& lowering, const OrderOperands& where) {
  std::vector<size_t> inputs = where.inputs;
  if (inputs.empty())
    for (size_t i = 0; i < c.numInputs(); ++i) inputs.push_back(i);
  std::vector<Value> flipped;
  flipped.reserve(inputs.size());
  for (size_t i : inputs) {
    if (!c.has(i)) continue;
    flipped.push_back(Value{"", flipTopBit(c, c.in(i)), std::nullopt, false, 0});
    c.substituteInput(i, &flipped.back());
  }
  lowering(c);
  for (size_t i : where.outputs)
    if (i < c.outputs().size() && c.outputs()[i].node >= 0 && !c.outputs()[i].literal)
      c.setOutput(i, flipTopBit(c, c.outputs()[i].node));
}

/// Whether one of `inputs` is UINT64 (and for `runTimeOnly`, known only at run time: literals
/// are below 2^63, literalFromTensorProto refuses larger ones).
bool anyUnsigned64(const NodeContext& c, const std::vector<size_t>& inputs, bool runTimeOnly) {
  for (size_t i : inputs)
    if (c.has(i) && isUnsigned64(c.onnxType(i)) && !(runTimeOnly && c.literal(i))) return true;
  return false;
}

std::vector<size_t> allInputs(const NodeContext& c) {
  std::vector<size_t> all;
  for (size_t i = 0; i < c.numInputs(); ++i) all.push_back(i);
  return all;
}

} // namespace

NodeId unsignedDivide(NodeContext& c, NodeId a, NodeId b, const std::string& name) {
  // b ≥ 2^63: the quotient is 1 where a ≥ b, else 0.
  NodeId bLarge = c.g.compare(CompareDir::LT, b, c.splatLike(b, 0));
  NodeId qLarge = c.g.convert(unsignedCompare(c, CompareDir::GE, a, b), DType::i64);
  // b < 2^63: q = 2 (a/2 / b) is the quotient or one less (a - q b < 2b).
  NodeId bSmall = c.g.select(bLarge, c.splatLike(b, 1), b);
  NodeId q = c.g.binary(OpKind::Mul, c.g.binary(OpKind::Div, halve(c, a), bSmall), c.splatLike(b, 2));
  NodeId r = c.g.binary(OpKind::Sub, a, c.g.binary(OpKind::Mul, q, bSmall));
  NodeId one = c.g.convert(unsignedCompare(c, CompareDir::GE, r, bSmall), DType::i64);
  NodeId qSmall = c.g.binary(OpKind::Add, q, one);
  return c.g.select(bLarge, qLarge, qSmall, name);
}

NodeId unsignedToFloat(NodeContext& c, NodeId x, DType t, const std::string& name) {
  // x ≥ 2^63: half of x, with its lowest bit kept as a sticky bit so that the one rounding to
  // t is the right one, converted and doubled (exact).
  NodeId sticky = c.g.binary(OpKind::And, x, c.splatLike(x, 1));
  NodeId half = c.g.binary(OpKind::Or, halve(c, x), sticky);
  NodeId large = c.g.binary(OpKind::Mul, c.g.convert(half, t), c.splat(t, c.typeOf(x).shape, 2));
  NodeId negative = c.g.compare(CompareDir::LT, x, c.splatLike(x, 0));
  return c.g.select(negative, large, c.g.convert(x, t), name);
}

NodeId floatToUnsigned64(NodeContext& c, NodeId x, const std::string& name) {
  // Truncated as an i64 below 2^63; from there, 2^64 less (exact: Sterbenz) has those bits.
  NodeId wide = c.convertTo(x, DType::f64);
  NodeId large = c.g.compare(CompareDir::GE, wide, c.splatLike(wide, 9223372036854775808.0));
  NodeId wrapped = c.g.binary(OpKind::Sub, wide, c.splatLike(wide, 18446744073709551616.0));
  return c.g.select(large, c.g.convert(wrapped, DType::i64), c.g.convert(wide, DType::i64),
                    name);
}

void lowerWithOnnxTypes(NodeContext& c, const Lowering& lowering) {
  const std::string& op = c.node.op_type();
  if (std::optional<OrderOperands> order = orderOperands(c)) {
    const std::vector<size_t> inputs = order->inputs.empty() ? allInputs(c) : order->inputs;
    // Literal operands are flipped too: the other operands' order is UINT64's.
    if (anyUnsigned64(c, inputs, /*runTimeOnly=*/false)) return lowerFlipped(c, lowering, *order);
    return lowering(c);
  }
  if (!anyUnsigned64(c, allInputs(c), /*runTimeOnly=*/true) || exactOnUnsigned64().count(op))
    return lowering(c);
  c.unsupported(fmt::format("{} on UINT64 values is not supported: weft holds UINT64 in int64, "
                            "which gives a different result from 2^63 on",
                            op));
}

} // namespace weft::onnx
