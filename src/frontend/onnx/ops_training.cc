// The optimizers of ONNX's ai.onnx.preview.training domain (its opset 1): Momentum, Adam and
// Adagrad. Each computes one update step of any number of tensors from the learning rate R,
// the update count T (both scalars, known at run time) and per tensor its value X, gradient G
// and running statistics, expanded into elementwise IR ops exactly as the operators' pseudo
// code reads. The operators are registered under their domain-qualified names
// ("ai.onnx.preview.training.Adam"): a default-domain node of the same type is no optimizer.
#include <fmt/format.h>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::NodeId;
using ir::OpKind;
using ir::Shape;

constexpr const char* kDomain = "ai.onnx.preview.training";

/// The operands of one optimizer node: the scalars in the tensors' dtype and, for each
/// optimized tensor j, its inputs (X, G, then the running statistics), in input order.
struct OptimizerOperands {
  ir::DType dtype = ir::DType::f32;
  NodeId rate = -1;    // R
  NodeId count = -1;   // T, converted to dtype
  NodeId counted = -1; // T > 0 (bool)
  size_t tensors = 0;
  /// inputs[g][j]: group g (0 X, 1 G, 2 and on the statistics) of tensor j, broadcast to
  /// tensor j's shape.
  std::vector<std::vector<NodeId>> inputs;
};

/// Input i (R or T, `what`) as a rank-0 value: ONNX requires a scalar; a one-element tensor is
/// taken as one.
NodeId scalarOperand(NodeContext& c, size_t i, const std::string& what) {
  if (!c.has(i)) c.fail(fmt::format("input {} ({}) is missing", i, what));
  const Shape s = c.type(i).shape;
  bool one = true;
  for (const ir::Dim& d : s)
    one = one && d.isStatic() && d.size() == 1;
  if (!one) c.fail(fmt::format("{} has shape {}; it must be a scalar", what, ir::shapeStr(s)));
  return c.reshapeTo(c.in(i), {});
}

/// The names of group g's inputs in errors ("the gradient of X_2").
std::string groupName(const std::vector<std::string>& groups, size_t g, size_t j) {
  std::string x = fmt::format("X_{}", j + 1);
  return g == 0 ? x : fmt::format("the {} of {}", groups[g], x);
}

/// Reads and checks the node's operands: R (float or double), T (int64), then `groups.size()`
/// groups of as many tensors each (groups[0] the optimized tensors), and at most
/// `outputGroups` outputs per tensor. Every tensor of group g > 0 has its X's dtype; the
/// statistics (groups 2 and on) have X's shape, which a gradient must broadcast to, so that
/// the new values keep their inputs' shapes as ONNX's shape inference has them.
OptimizerOperands optimizerOperands(NodeContext& c, const std::vector<std::string>& groups,
                                    size_t outputGroups) {
  const size_t n = c.numInputs();
  if (n < 2 + groups.size() || (n - 2) % groups.size() != 0)
    c.fail(fmt::format("has {} inputs; {} takes R, T and then, for each optimized tensor, its "
                       "{} ({} inputs per tensor, at least one tensor)",
                       n, c.node.op_type(), fmt::join(groups, ", "), groups.size()));
  OptimizerOperands o;
  o.tensors = (n - 2) / groups.size();
  if (c.numOutputs() > outputGroups * o.tensors)
    c.fail(fmt::format("has {} outputs but optimizes {} tensor{}; {} gives {} per tensor",
                       c.numOutputs(), o.tensors, o.tensors == 1 ? "" : "s", c.node.op_type(),
                       outputGroups));
  for (size_t i = 2; i < n; ++i)
    if (!c.has(i)) c.fail(fmt::format("input {} is missing; every tensor operand is required", i));
  o.dtype = c.type(2).dtype;
  if (o.dtype != ir::DType::f32 && o.dtype != ir::DType::f64)
    c.fail(fmt::format("X_1 has dtype {}; {} takes float or double tensors", ir::dtypeName(o.dtype),
                       c.node.op_type()));
  ir::DType rateType = c.type(0).dtype;
  if (rateType != ir::DType::f32 && rateType != ir::DType::f64)
    c.fail(fmt::format("R has dtype {}; it must be a float or double scalar",
                       ir::dtypeName(rateType)));
  int countType = c.onnxType(1);
  if (c.type(1).dtype != ir::DType::i64 ||
      (countType != 0 && countType != ::onnx::TensorProto::INT64))
    c.fail(fmt::format("T is {}; it must be an int64 scalar",
                       countType ? onnxTypeName(countType) : ir::dtypeName(c.type(1).dtype)));
  o.rate = c.convertTo(scalarOperand(c, 0, "R"), o.dtype);
  NodeId t = scalarOperand(c, 1, "T");
  o.counted = c.g.compare(ir::CompareDir::GT, t, c.splatLike(t, 0));
  o.count = c.g.convert(t, o.dtype);
  o.inputs.assign(groups.size(), std::vector<NodeId>(o.tensors));
  for (size_t j = 0; j < o.tensors; ++j) {
    const ir::TensorType x = c.type(2 + j);
    for (size_t g = 0; g < groups.size(); ++g) {
      size_t i = 2 + g * o.tensors + j;
      ir::TensorType ti = c.type(i);
      if (ti.dtype != x.dtype)
        c.fail(fmt::format("{} has dtype {} but X_{} has dtype {}", groupName(groups, g, j),
                           ir::dtypeName(ti.dtype), j + 1, ir::dtypeName(x.dtype)));
      bool fits =
          g == 1 ? frontend::broadcastShape({ti.shape, x.shape}) == x.shape : ti.shape == x.shape;
      if (!fits)
        c.fail(fmt::format("{} has shape {}, which {} X_{}'s {}", groupName(groups, g, j),
                           ir::shapeStr(ti.shape), g == 1 ? "does not broadcast to" : "is not",
                           j + 1, ir::shapeStr(x.shape)));
      o.inputs[g][j] = c.broadcastTo(c.in(i), x.shape);
    }
  }
  return o;
}

/// Attribute `name` (FLOAT), which the operator requires.
double requireAttrFloat(NodeContext& c, const std::string& name) {
  if (!c.hasAttr(name))
    c.fail(fmt::format("the required attribute \"{}\" (FLOAT) is missing", name));
  return c.attrFloat(name, 0.0f);
}

/// scalar * x, the rank-0 scalar broadcast to x's shape.
NodeId scaled(NodeContext& c, NodeId scalar, NodeId x, const std::string& name = "") {
  return c.g.binary(OpKind::Mul, c.broadcastTo(scalar, c.typeOf(x).shape), x, name);
}

/// v * x for a constant v.
NodeId times(NodeContext& c, double v, NodeId x) {
  return c.g.binary(OpKind::Mul, c.splatLike(x, v), x);
}

/// The gradient of the loss plus 0.5 * norm_coefficient * ||X||^2: norm_coefficient * X + G.
NodeId regularized(NodeContext& c, double normCoefficient, NodeId x, NodeId g) {
  return c.g.binary(OpKind::Add, times(c, normCoefficient, x), g);
}

/// Momentum: G' = norm_coefficient * X + G; V_new = alpha * V + beta' * G' with beta' = beta
/// once T > 0 and 1 before; X_new = X - R * V_new ("standard") or X - R * (G' + alpha * V_new)
/// ("nesterov"). Outputs: every X_new, then every V_new.
void lowerMomentum(NodeContext& c) {
  double alpha = requireAttrFloat(c, "alpha"), beta = requireAttrFloat(c, "beta");
  double norm = requireAttrFloat(c, "norm_coefficient");
  if (!c.hasAttr("mode")) c.fail("the required attribute \"mode\" (STRING) is missing");
  std::string mode = c.attrString("mode", "");
  if (mode != "standard" && mode != "nesterov")
    c.fail(fmt::format("mode \"{}\" is not one of standard, nesterov", mode));
  OptimizerOperands o = optimizerOperands(c, {"value", "gradient", "momentum"}, 2);
  NodeId betaAdjusted = c.g.select(o.counted, c.splatLike(o.rate, beta), c.splatLike(o.rate, 1));
  for (size_t j = 0; j < o.tensors; ++j) {
    NodeId x = o.inputs[0][j], g = regularized(c, norm, x, o.inputs[1][j]), v = o.inputs[2][j];
    NodeId vNew = c.g.binary(OpKind::Add, times(c, alpha, v), scaled(c, betaAdjusted, g),
                             c.name(o.tensors + j));
    NodeId step = mode == "standard" ? vNew : c.g.binary(OpKind::Add, g, times(c, alpha, vNew));
    c.setOutput(j, c.g.binary(OpKind::Sub, x, scaled(c, o.rate, step), c.name(j)));
    c.setOutput(o.tensors + j, vNew);
  }
}

/// Adam: G' = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * G';
/// H_new = beta * H + (1 - beta) * G' * G'; R' = R * sqrt(1 - beta^T) / (1 - alpha^T) once
/// T > 0, R before; X_new = (1 - norm_coefficient_post) * (X - R' * (V_new / (sqrt(H_new) +
/// epsilon))). Outputs: every X_new, then every V_new, then every H_new.
void lowerAdam(NodeContext& c) {
  double alpha = c.attrFloat("alpha", 0.9f), beta = c.attrFloat("beta", 0.999f);
  double norm = c.attrFloat("norm_coefficient", 0.0f);
  double normPost = c.attrFloat("norm_coefficient_post", 0.0f);
  double epsilon = c.attrFloat("epsilon", 1e-6f);
  OptimizerOperands o = optimizerOperands(
      c, {"value", "gradient", "accumulated gradient", "accumulated squared gradient"}, 3);
  NodeId t = o.count;
  auto oneMinusPower = [&](double base) { // 1 - base^T
    NodeId power = c.g.binary(OpKind::Pow, c.splatLike(t, base), t);
    return c.g.binary(OpKind::Sub, c.splatLike(t, 1), power);
  };
  NodeId correction =
      c.g.binary(OpKind::Div, c.g.unary(OpKind::Sqrt, oneMinusPower(beta)), oneMinusPower(alpha));
  NodeId rate = c.g.select(o.counted, c.g.binary(OpKind::Mul, o.rate, correction), o.rate);
  for (size_t j = 0; j < o.tensors; ++j) {
    NodeId x = o.inputs[0][j], g = regularized(c, norm, x, o.inputs[1][j]);
    NodeId vNew = c.g.binary(OpKind::Add, times(c, alpha, o.inputs[2][j]), times(c, 1 - alpha, g),
                             c.name(o.tensors + j));
    NodeId squared = c.g.binary(OpKind::Mul, g, g);
    NodeId hNew = c.g.binary(OpKind::Add, times(c, beta, o.inputs[3][j]),
                             times(c, 1 - beta, squared), c.name(2 * o.tensors + j));
    NodeId root =
        c.g.binary(OpKind::Add, c.g.unary(OpKind::Sqrt, hNew), c.splatLike(hNew, epsilon));
    NodeId direction = c.g.binary(OpKind::Div, vNew, root);
    NodeId xNew =
        c.g.binary(OpKind::Sub, x, scaled(c, rate, direction), normPost == 0 ? c.name(j) : "");
    if (normPost != 0) // (1 - 0) * X_new is X_new itself
      xNew = c.g.binary(OpKind::Mul, c.splatLike(xNew, 1 - normPost), xNew, c.name(j));
    c.setOutput(j, xNew);
    c.setOutput(o.tensors + j, vNew);
    c.setOutput(2 * o.tensors + j, hNew);
  }
}

/// Adagrad: r = R / (1 + T * decay_factor); G' = norm_coefficient * X + G; H_new = H + G' * G';
/// X_new = X - r * G' / (sqrt(H_new) + epsilon). Outputs: every X_new, then every H_new.
void lowerAdagrad(NodeContext& c) {
  double epsilon = c.attrFloat("epsilon", 1e-6f), decay = c.attrFloat("decay_factor", 0.0f);
  double norm = c.attrFloat("norm_coefficient", 0.0f);
  OptimizerOperands o =
      optimizerOperands(c, {"value", "gradient", "accumulated squared gradient"}, 2);
  NodeId decayed = c.g.binary(OpKind::Add, c.splatLike(o.count, 1), times(c, decay, o.count));
  NodeId rate = c.g.binary(OpKind::Div, o.rate, decayed);
  for (size_t j = 0; j < o.tensors; ++j) {
    NodeId x = o.inputs[0][j], g = regularized(c, norm, x, o.inputs[1][j]);
    NodeId hNew = c.g.binary(OpKind::Add, o.inputs[2][j], c.g.binary(OpKind::Mul, g, g),
                             c.name(o.tensors + j));
    NodeId root =
        c.g.binary(OpKind::Add, c.g.unary(OpKind::Sqrt, hNew), c.splatLike(hNew, epsilon));
    NodeId step = c.g.binary(OpKind::Div, scaled(c, rate, g), root);
    c.setOutput(j, c.g.binary(OpKind::Sub, x, step, c.name(j)));
    c.setOutput(o.tensors + j, hNew);
  }
}

} // namespace

void addTrainingOps(OperatorTable& t) {
  t[fmt::format("{}.Momentum", kDomain)] = lowerMomentum;
  t[fmt::format("{}.Adam", kDomain)] = lowerAdam;
  t[fmt::format("{}.Adagrad", kDomain)] = lowerAdagrad;
}

} // namespace weft::onnx
