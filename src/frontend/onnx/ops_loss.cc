// Loss ONNX operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12 and
// 13), expanded into IR primitives. The IR has no gather: each target's class is picked from
// the class axis with a one-hot mask (iota over C compared with the target) and a sum over C,
// as Gather with run-time indices is lowered (ops_layout.cc). SoftmaxCrossEntropyLoss is the
// shared log-softmax composite (frontend/composite_ops.h) over the class axis followed by the
// same NLL, so the planner sees the log-softmax it knows.
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <optional>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

enum class LossReduction { None, Sum, Mean };

LossReduction lossReduction(const NodeContext& c) {
  std::string r = c.attrString("reduction", "mean");
  if (r == "none") return LossReduction::None;
  if (r == "sum") return LossReduction::Sum;
  if (r == "mean") return LossReduction::Mean;
  c.fail(fmt::format("reduction \"{}\" is not one of none, sum, mean", r));
}

/// What the operator calls its inputs, for error messages (NLL: input, target, weight; SCE:
/// scores, labels, weights).
struct OperandNames {
  const char* input;
  const char* target;
  const char* weight;
};

bool sameDim(const Dim& a, const Dim& b) {
  return a == b || ir::unifier(a, b).has_value();
}

/// Checks the operands against the spec: a float input [N, C, d1..dk] (k >= 0), an integer
/// target [N, d1..dk] and an optional weight [C] of the input's dtype. Both operators were
/// added in opset 12; bf16 is allowed from opset 13.
void checkOperands(const NodeContext& c, const OperandNames& names) {
  if (c.opset < 12) c.fail(fmt::format("{} is defined from opset 12", c.node.op_type()));
  ir::TensorType in = c.type(0), target = c.type(1);
  if (!ir::isFloat(in.dtype))
    c.fail(fmt::format("{} must be a float tensor, not {}", names.input, ir::dtypeName(in.dtype)));
  if (in.dtype == DType::bf16 && c.opset < 13)
    c.fail(fmt::format("{} of dtype bf16 needs opset 13", names.input));
  if (!ir::isInteger(target.dtype))
    c.fail(fmt::format("{} must hold integer class indices (int32 or int64), not {}", names.target,
                       ir::dtypeName(target.dtype)));
  const Shape& s = in.shape;
  const Shape& t = target.shape;
  if (s.size() < 2)
    c.fail(fmt::format("{} {} needs rank 2 or more (N, C, d1, ..., dk)", names.input,
                       ir::shapeStr(s)));
  bool matches = t.size() + 1 == s.size() && sameDim(t[0], s[0]);
  for (size_t i = 1; matches && i < t.size(); ++i)
    matches = sameDim(t[i], s[i + 1]);
  if (!matches)
    c.fail(fmt::format("{} {} does not match {} {}: it must be [N, d1, ..., dk] for {} [N, C, "
                       "d1, ..., dk]",
                       names.target, ir::shapeStr(t), names.input, ir::shapeStr(s), names.input));
  if (!c.has(2)) return;
  ir::TensorType w = c.type(2);
  if (w.dtype != in.dtype)
    c.fail(fmt::format("{} has dtype {}, {} has {}: they must be the same", names.weight,
                       ir::dtypeName(w.dtype), names.input, ir::dtypeName(in.dtype)));
  if (w.shape.size() != 1 || !sameDim(w.shape[0], s[1]))
    c.fail(fmt::format("{} {} must be [C] = [{}], one weight per class of {} {}", names.weight,
                       ir::shapeStr(w.shape), s[1].str(), names.input, ir::shapeStr(s)));
}

/// Whether the integer dtype `t` holds `v` (so a target of dtype t can equal it) and a graph
/// constant (a double) holds it exactly.
bool integerHolds(DType t, int64_t v) {
  switch (t) {
  case DType::i8:
    return v >= std::numeric_limits<int8_t>::min() && v <= std::numeric_limits<int8_t>::max();
  case DType::i32:
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  default:
    return ir::exactInDouble(v);
  }
}

/// The targets that count: target != ignore_index. Nullopt when every target counts (no
/// ignore_index, or one the target's dtype cannot hold).
std::optional<NodeId> countedTargets(NodeContext& c, NodeId target) {
  if (!c.hasAttr("ignore_index")) return std::nullopt;
  int64_t ignore = c.attrInt("ignore_index", 0);
  DType t = c.typeOf(target).dtype;
  if (!integerHolds(t, ignore)) {
    if (t == DType::i64)
      c.unsupported(fmt::format("ignore_index {} is not supported (an int64 past 2^53, which a "
                                "graph constant cannot hold exactly)",
                                ignore));
    return std::nullopt;
  }
  return c.g.compare(ir::CompareDir::NE, target, c.splatLike(target, static_cast<double>(ignore)));
}

/// sum(loss), or with `mean` sum(loss) / sum(targetWeight) (without target weights, the count
/// of loss's elements). f16 and bf16 are summed and divided in f32 and the result converted
/// back: a batch's sum or count passes f16's 65504 long before its mean does.
NodeId reduceLoss(NodeContext& c, NodeId loss, std::optional<NodeId> targetWeight, bool mean,
                  const std::string& name) {
  const DType t = c.typeOf(loss).dtype;
  const DType acc = computeDType(t);
  const bool widen = acc != t;
  const std::string last = widen ? "" : name;
  const Shape shape = c.typeOf(loss).shape;
  std::vector<int64_t> all;
  for (size_t i = 0; i < shape.size(); ++i)
    all.push_back(static_cast<int64_t>(i));
  NodeId summed = c.convertTo(loss, acc);
  NodeId result;
  if (!mean) {
    result = c.g.reduce(ir::ReduceKind::Sum, summed, all, last);
  } else if (!targetWeight && !frontend::reducedCount(shape, all).symbolicAxis) {
    result = frontend::mean(c.site(), summed, all, "mean", last);
  } else {
    // the weights of the counted targets; with symbolic dims and no weights, ones counted at
    // run time
    NodeId weights = targetWeight ? c.convertTo(*targetWeight, acc) : c.splat(acc, shape, 1);
    result = c.g.binary(OpKind::Div, c.g.reduce(ir::ReduceKind::Sum, summed, all),
                        c.g.reduce(ir::ReduceKind::Sum, weights, all), last);
  }
  return widen ? c.g.convert(result, t, name) : result;
}

/// The negative log-likelihood of log-probabilities x [N, C, d1..dk] at the classes `target`
/// [N, d1..dk], weighted by `weight` [C] and reduced as the ONNX operator does:
///   loss[n, d] = -x[n, target[n, d], d] * weight[target[n, d]], and 0 where target[n, d] is
///   ignore_index;
///   none: loss; sum: sum(loss); mean: sum(loss) / sum of the weights of the counted targets
///   (without weights, their count).
/// A target outside [0, C) that is not ignore_index (undefined in ONNX) picks no class: its
/// loss and its weight are 0.
NodeId negativeLogLikelihood(NodeContext& c, NodeId x, NodeId target, std::optional<NodeId> weight,
                             LossReduction reduction, const std::string& name) {
  const Shape wide = c.typeOf(x).shape;
  const size_t r = wide.size();
  std::vector<int64_t> targetDims{0};
  for (size_t i = 2; i < r; ++i)
    targetDims.push_back(static_cast<int64_t>(i));
  // one-hot[n, c, d] = (target[n, d] == c); picking sums a value over c under it (exact: every
  // other term is zero, and select keeps an infinite log-probability of another class out)
  NodeId hot = c.g.compare(ir::CompareDir::EQ, c.g.broadcastInDim(target, wide, targetDims),
                           c.g.iota(c.typeOf(target).dtype, wide, 1));
  NodeId wideZero = c.splatLike(x, 0); // the weight, broadcast, has x's dtype and shape
  auto pick = [&](NodeId v) {
    return c.g.reduce(ir::ReduceKind::Sum, c.g.select(hot, v, wideZero), {1});
  };
  std::optional<NodeId> counted = countedTargets(c, target);
  const bool elementwiseLast = reduction == LossReduction::None;
  NodeId loss = c.g.unary(OpKind::Neg, pick(x), elementwiseLast && !weight && !counted ? name : "");
  // the weight of each target: weight[target], or 1; 0 where ignored (the mean's denominator)
  std::optional<NodeId> targetWeight;
  if (weight) {
    targetWeight = pick(c.g.broadcastInDim(*weight, wide, {1}));
    loss = c.g.binary(OpKind::Mul, loss, *targetWeight, elementwiseLast && !counted ? name : "");
  }
  if (counted) {
    NodeId zero = c.splatLike(loss, 0);
    loss = c.g.select(*counted, loss, zero, elementwiseLast ? name : "");
    targetWeight = targetWeight ? c.g.select(*counted, *targetWeight, zero)
                                : c.g.convert(*counted, c.typeOf(loss).dtype);
  }
  if (reduction == LossReduction::None) return loss;
  return reduceLoss(c, loss, targetWeight, reduction == LossReduction::Mean, name);
}

/// NegativeLogLikelihoodLoss(input, target, weight?): input holds log-probabilities.
void lowerNegativeLogLikelihoodLoss(NodeContext& c) {
  checkOperands(c, {"input", "target", "weight"});
  LossReduction reduction = lossReduction(c);
  std::optional<NodeId> weight;
  if (c.has(2)) weight = c.in(2);
  c.setOutput(0, negativeLogLikelihood(c, c.in(0), c.in(1), weight, reduction, c.name()));
}

/// SoftmaxCrossEntropyLoss(scores, labels, weights?) -> (output, log_prob?): the NLL of
/// log_softmax(scores) over the class axis 1; log_prob is that log-softmax, scores' shape.
void lowerSoftmaxCrossEntropyLoss(NodeContext& c) {
  checkOperands(c, {"scores", "labels", "weights"});
  LossReduction reduction = lossReduction(c);
  NodeId logProb = frontend::softmax(c.site(), c.in(0), {1}, /*logarithm=*/true,
                                     c.wantsOutput(1) ? c.name(1) : "");
  std::optional<NodeId> weight;
  if (c.has(2)) weight = c.in(2);
  c.setOutput(0, negativeLogLikelihood(c, logProb, c.in(1), weight, reduction, c.name()));
  if (c.wantsOutput(1)) c.setOutput(1, logProb);
}

} // namespace

void addLossOps(OperatorTable& t) {
  t["NegativeLogLikelihoodLoss"] = lowerNegativeLogLikelihoodLoss;
  t["SoftmaxCrossEntropyLoss"] = lowerSoftmaxCrossEntropyLoss;
}

} // namespace weft::onnx
