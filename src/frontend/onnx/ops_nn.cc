// Neural-network ONNX operators expanded into IR primitives: Softmax, LogSoftmax,
// LayerNormalization, BatchNormalization, InstanceNormalization, GroupNormalization,
// MeanVarianceNormalization, GlobalAveragePool, GlobalMaxPool, Mish, and MatMul / Gemm as the
// IR's dot. Softmax, the norms and
// their statistics are the shared composite ops (frontend/composite_ops.h), so an ONNX model
// reaches the planner as the same graph as the JSON file of the same model.
#include <algorithm>
#include <fmt/format.h>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// Softmax's reduced axes: before opset 13 the input is coerced to 2-D at `axis` (default 1),
/// so every axis from it on is reduced; from 13 only `axis` (default -1).
std::vector<int64_t> softmaxAxes(NodeContext& c, size_t rank) {
  if (rank == 0) c.fail("needs an input of rank 1 or more");
  if (c.opset >= 13) return {c.axis(c.attrInt("axis", -1), rank, "axis")};
  std::vector<int64_t> axes;
  for (int64_t a = c.axis(c.attrInt("axis", 1), rank, "axis"); a < static_cast<int64_t>(rank); ++a)
    axes.push_back(a);
  return axes;
}

Lowering softmax(bool logarithmic) {
  return [logarithmic](NodeContext& c) {
    NodeId x = c.in(0);
    std::vector<int64_t> axes = softmaxAxes(c, c.typeOf(x).shape.size());
    c.setOutput(0, frontend::softmax(c.site(), x, axes, logarithmic, c.name()));
  };
}

/// Fails (unsupported) unless the normalized (or averaged: `doing`) `axes` of `s` have static
/// sizes: a mean divides by their product.
void requireStaticCount(NodeContext& c, const Shape& s, const std::vector<int64_t>& axes,
                        const char* doing = "normalizing") {
  if (auto a = frontend::reducedCount(s, axes).symbolicAxis)
    c.unsupported(fmt::format("{} over axis {} of symbolic size {} is not supported (the mean "
                              "divides by a size known only at run time)",
                              doing, *a, s[static_cast<size_t>(*a)].str()));
}

/// Fails unless input i is floating point, the only types these ONNX operators take (an integer
/// mean would truncate).
void requireFloatInput(NodeContext& c, size_t i, const std::string& what) {
  ir::DType t = c.type(i).dtype;
  if (!ir::isFloat(t))
    c.fail(fmt::format("{} has dtype {}; {} takes floating-point tensors", what, ir::dtypeName(t),
                       c.node.op_type()));
}

/// The spatial axes of an (N, C, D1, ..., Dn) tensor of rank `rank`: every axis after the
/// first two.
std::vector<int64_t> spatialAxes(size_t rank) {
  std::vector<int64_t> axes;
  for (size_t a = 2; a < rank; ++a)
    axes.push_back(static_cast<int64_t>(a));
  return axes;
}

/// LayerNormalization (opset 17): over every axis from `axis` on, statistics in `stash_type`;
/// the optional outputs Mean and InvStdDev keep the normalized axes as size 1.
void lowerLayerNorm(NodeContext& c) {
  NodeId x = c.in(0);
  const Shape s = c.typeOf(x).shape;
  frontend::NormOptions o;
  for (int64_t a = c.axis(c.attrInt("axis", -1), s.size(), "axis");
       a < static_cast<int64_t>(s.size()); ++a)
    o.axes.push_back(a);
  o.epsilon = c.attrFloat("epsilon", 1e-5f);
  o.compute = c.attrInt("stash_type", 1) == 1 ? ir::DType::f32 : c.typeOf(x).dtype;
  requireStaticCount(c, s, o.axes);
  o.gamma = c.in(1);
  if (c.has(2)) o.beta = c.in(2);
  frontend::LayerNorm ln = frontend::layerNorm(c.site(), x, o, c.name());
  c.setOutput(0, ln.y);
  Shape kept = frontend::reducedShape(s, o.axes, /*keepdims=*/true);
  if (c.wantsOutput(1)) c.setOutput(1, c.g.reshape(ln.mean, kept, c.name(1)));
  if (c.wantsOutput(2)) c.setOutput(2, c.g.reshape(ln.rstd, kept, c.name(2)));
}

/// BatchNormalization: inference uses the given statistics; training mode (opset 14+) the
/// batch's, and also returns the updated running statistics.
void lowerBatchNorm(NodeContext& c) {
  NodeId x = c.in(0);
  const Shape s = c.typeOf(x).shape;
  if (s.size() < 2)
    c.fail(fmt::format("input {} needs rank 2 or more (N, C, ...)", ir::shapeStr(s)));
  if (c.opset < 9 && c.attrInt("spatial", 1) == 0)
    c.unsupported("BatchNormalization with spatial=0 is not supported");
  bool training = c.opset >= 14 ? c.attrInt("training_mode", 0) != 0
                                : (c.opset < 7 ? c.attrInt("is_test", 0) == 0 && c.numOutputs() > 1
                                               : c.numOutputs() > 1);
  if (training && c.opset < 14)
    c.unsupported(
        "BatchNormalization in training mode before opset 14 (saved mean and variance outputs) "
        "is not supported");
  double eps = c.attrFloat("epsilon", 1e-5f);
  double momentum = c.attrFloat("momentum", 0.9f);
  auto perChannel = [&](NodeId p) { return c.g.broadcastInDim(p, s, {1}); };
  NodeId mean = c.in(3), var = c.in(4);
  frontend::Variance batch; // the batch's statistics over every axis but the channels
  if (training) {
    std::vector<int64_t> axes;
    for (size_t a = 0; a < s.size(); ++a)
      if (a != 1) axes.push_back(static_cast<int64_t>(a));
    requireStaticCount(c, s, axes);
    batch = frontend::variance(c.site(), x, axes, "");
  }
  NodeId useVar = training ? batch.variance : var;
  NodeId centered = training ? batch.centered : c.g.binary(OpKind::Sub, x, perChannel(mean));
  NodeId stddev =
      c.g.unary(OpKind::Sqrt, c.g.binary(OpKind::Add, useVar, c.splatLike(useVar, eps)));
  NodeId normalized = c.g.binary(OpKind::Div, centered, perChannel(stddev));
  NodeId scaled = c.g.binary(OpKind::Mul, normalized, perChannel(c.in(1)));
  c.setOutput(0, c.g.binary(OpKind::Add, scaled, perChannel(c.in(2)), c.name()));
  if (!training) return;
  auto running = [&](NodeId given, NodeId batch, size_t out) {
    NodeId kept = c.g.binary(OpKind::Mul, given, c.splatLike(given, momentum));
    NodeId fresh = c.g.binary(OpKind::Mul, batch, c.splatLike(batch, 1.0 - momentum));
    c.setOutput(out, c.g.binary(OpKind::Add, kept, fresh, c.name(out)));
  };
  if (c.wantsOutput(1)) running(mean, batch.mean, 1);
  if (c.wantsOutput(2)) running(var, batch.variance, 2);
}

/// Input i, one value per channel (shape [C], C = dim 1 of `s`, x's), broadcast to `s`.
NodeId perChannel(NodeContext& c, size_t i, const std::string& what, const ir::TensorType& x) {
  if (!c.has(i)) c.fail(fmt::format("needs input {} ({}, one value per channel)", i, what));
  ir::TensorType t = c.type(i);
  if (t.dtype != x.dtype)
    c.fail(fmt::format("{} has dtype {} but the input has dtype {}", what, ir::dtypeName(t.dtype),
                       ir::dtypeName(x.dtype)));
  if (t.shape != Shape{x.shape[1]})
    c.fail(fmt::format("{} has shape {} but needs {} (the channels, dim 1 of the input {})", what,
                       ir::shapeStr(t.shape), ir::shapeStr(Shape{x.shape[1]}),
                       ir::shapeStr(x.shape)));
  return c.g.broadcastInDim(c.in(i), x.shape, {1});
}

/// InstanceNormalization: scale * (x - mean) / sqrt(var + epsilon) + B, with the mean and the
/// variance of each instance and channel over the spatial axes (the layer norm's statistics
/// over those axes), in f32 for f16 inputs. Opset 1's consumed_inputs is a legacy hint, ignored.
void lowerInstanceNorm(NodeContext& c) {
  NodeId x = c.in(0);
  const ir::TensorType t = c.typeOf(x);
  requireFloatInput(c, 0, "input");
  if (t.shape.size() < 3)
    c.fail(fmt::format("input {} needs rank 3 or more (N, C, D1, ...)", ir::shapeStr(t.shape)));
  frontend::NormOptions o;
  o.axes = spatialAxes(t.shape.size());
  o.epsilon = c.attrFloat("epsilon", 1e-5f);
  o.compute = computeDType(t.dtype);
  requireStaticCount(c, t.shape, o.axes);
  NodeId scale = perChannel(c, 1, "scale", t);
  NodeId bias = perChannel(c, 2, "B", t);
  NodeId normalized = frontend::layerNorm(c.site(), x, o, "").y;
  NodeId scaled = c.g.binary(OpKind::Mul, normalized, scale);
  c.setOutput(0, c.g.binary(OpKind::Add, scaled, bias, c.name()));
}

/// GroupNormalization's scale or bias (input i, `what`): one value per group (`per`, the
/// number of groups) in opset 18, one per channel from 21, in X's dtype.
NodeId groupNormParameter(NodeContext& c, size_t i, const std::string& what, int64_t per,
                          const ir::TensorType& x) {
  ir::TensorType t = c.type(i);
  if (t.dtype != x.dtype)
    c.fail(fmt::format("{} has dtype {} but X has dtype {}", what, ir::dtypeName(t.dtype),
                       ir::dtypeName(x.dtype)));
  if (t.shape != Shape{Dim(per)})
    c.fail(fmt::format("{} has shape {} but needs [{}] (one value per {} in GroupNormalization-{})",
                       what, ir::shapeStr(t.shape), per, c.opset >= 21 ? "channel" : "group",
                       c.opset >= 21 ? 21 : 18));
  return c.in(i);
}

/// The dtype GroupNormalization-21 computes its statistics in (stash_type, an ONNX float type).
ir::DType stashDType(NodeContext& c) {
  int64_t stash = c.attrInt("stash_type", ::onnx::TensorProto::FLOAT);
  switch (stash) {
  case ::onnx::TensorProto::FLOAT:
    return ir::DType::f32;
  case ::onnx::TensorProto::FLOAT16:
    return ir::DType::f16;
  case ::onnx::TensorProto::BFLOAT16:
    return ir::DType::bf16;
  case ::onnx::TensorProto::DOUBLE:
    return ir::DType::f64;
  default:
    c.fail(fmt::format("stash_type {} is not a floating-point type (FLOAT 1, FLOAT16 10, "
                       "DOUBLE 11 or BFLOAT16 16)",
                       stash));
  }
}

/// GroupNormalization (opsets 18 and 21): X (N, C, D1, ...) seen as (N, G, C / G, D1, ...) is
/// normalized over every axis after G, (x - mean) / sqrt(var + epsilon), and then scaled and
/// shifted: per group in opset 18 (scale and bias of shape [G], in X's dtype, as the operator's
/// function computes everything), per channel from 21 (shape [C]) after the normalized value is
/// converted back from stash_type's dtype to X's. Opset 18's statistics of f16 and bf16 inputs
/// are computed in f32 (computeDType), which its function leaves to X's precision.
void lowerGroupNorm(NodeContext& c) {
  if (c.opset < 18) c.fail("GroupNormalization is defined from opset 18");
  NodeId x = c.in(0);
  const ir::TensorType t = c.typeOf(x);
  requireFloatInput(c, 0, "X");
  if (t.shape.size() < 2)
    c.fail(fmt::format("X {} needs rank 2 or more (N, C, D1, ...)", ir::shapeStr(t.shape)));
  int64_t groups = c.requireAttrInt("num_groups");
  const Dim& channels = t.shape[1];
  if (!channels.isStatic())
    c.unsupported(fmt::format("GroupNormalization of X {} with a symbolic channel count {} is "
                              "not supported (the groups split it)",
                              ir::shapeStr(t.shape), channels.str()));
  int64_t cs = channels.size();
  if (groups <= 0 || cs % groups != 0)
    c.fail(fmt::format("num_groups {} does not divide the {} channels of X {}", groups, cs,
                       ir::shapeStr(t.shape)));
  bool perChannelAffine = c.opset >= 21;
  NodeId scale = groupNormParameter(c, 1, "scale", perChannelAffine ? cs : groups, t);
  NodeId bias = groupNormParameter(c, 2, "bias", perChannelAffine ? cs : groups, t);
  Shape grouped = {t.shape[0], Dim(groups), Dim(cs / groups)};
  grouped.insert(grouped.end(), t.shape.begin() + 2, t.shape.end());
  frontend::NormOptions o;
  for (size_t a = 2; a < grouped.size(); ++a)
    o.axes.push_back(static_cast<int64_t>(a));
  o.epsilon = c.attrFloat("epsilon", 1e-5f);
  o.compute = perChannelAffine ? stashDType(c) : computeDType(t.dtype);
  requireStaticCount(c, grouped, o.axes);
  NodeId normalized = frontend::layerNorm(c.site(), c.g.reshape(x, grouped), o, "").y;
  if (perChannelAffine) normalized = c.g.reshape(normalized, t.shape);
  const Shape& s = c.typeOf(normalized).shape;
  NodeId scaled = c.g.binary(OpKind::Mul, normalized, c.g.broadcastInDim(scale, s, {1}));
  NodeId y = c.g.binary(OpKind::Add, scaled, c.g.broadcastInDim(bias, s, {1}),
                        perChannelAffine ? c.name() : "");
  c.setOutput(0, perChannelAffine ? y : c.g.reshape(y, t.shape, c.name()));
}

/// MeanVarianceNormalization's axes: the attribute (default [0, 2, 3]), normalized and sorted.
/// An empty list is every axis, as the operator's ONNX function (ReduceMean over `axes`) reads
/// it.
std::vector<int64_t> mvnAxes(NodeContext& c, size_t rank) {
  if (rank == 0) c.fail("input is a scalar; there is no axis to normalize over");
  std::optional<std::vector<int64_t>> given = c.attrInts("axes");
  std::vector<int64_t> axes;
  if (!given) {
    if (rank < 4)
      c.fail(fmt::format("the default axes [0, 2, 3] need an input of rank 4 or more, not {}; "
                         "give axes",
                         rank));
    axes = {0, 2, 3};
  } else if (given->empty()) {
    for (size_t a = 0; a < rank; ++a)
      axes.push_back(static_cast<int64_t>(a));
  } else {
    for (int64_t a : *given)
      axes.push_back(c.axis(a, rank, "axis"));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      c.fail(fmt::format("axes [{}] repeat an axis", fmt::join(*given, ", ")));
  }
  return axes;
}

/// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes`, the population
/// variance; the 1e-9 is the operator's ONNX function's, which keeps a constant slice at 0.
/// Computed in f32 for f16 and bf16 inputs (1e-9 is 0 in f16).
void lowerMeanVarianceNorm(NodeContext& c) {
  NodeId x0 = c.in(0);
  const ir::TensorType t = c.typeOf(x0);
  requireFloatInput(c, 0, "X");
  std::vector<int64_t> axes = mvnAxes(c, t.shape.size());
  requireStaticCount(c, t.shape, axes);
  NodeId x = c.convertTo(x0, computeDType(t.dtype));
  bool converted = x != x0;
  frontend::Variance v = frontend::variance(c.site(), x, axes, "");
  NodeId stddev = c.g.unary(OpKind::Sqrt, v.variance);
  NodeId denominator = c.g.binary(OpKind::Add, stddev, c.splatLike(stddev, 1e-9));
  NodeId y = c.g.binary(OpKind::Div, v.centered,
                        frontend::broadcastBack(c.site(), denominator, t.shape, axes, ""),
                        converted ? "" : c.name());
  if (converted) y = c.g.convert(y, t.dtype, c.name());
  c.setOutput(0, y);
}

/// GlobalAveragePool and GlobalMaxPool: the mean (in f32 for f16 and bf16 inputs) or the max
/// over every axis after the first two, kept as size 1. An (N, C) input has no spatial axis:
/// it is its own result.
Lowering globalPool(bool average) {
  return [average](NodeContext& c) {
    NodeId x = c.in(0);
    const ir::TensorType t = c.typeOf(x);
    requireFloatInput(c, 0, "X");
    if (t.shape.size() < 2)
      c.fail(fmt::format("input {} needs rank 2 or more (N, C, D1, ...)", ir::shapeStr(t.shape)));
    std::vector<int64_t> axes = spatialAxes(t.shape.size());
    if (axes.empty()) {
      c.setOutput(0, x);
      return;
    }
    if (!average) {
      c.setOutput(0, c.reduceKeep(ir::ReduceKind::Max, x, axes, /*keepdims=*/true, c.name()));
      return;
    }
    requireStaticCount(c, t.shape, axes, "averaging");
    NodeId mean =
        frontend::mean(c.site(), c.convertTo(x, computeDType(t.dtype)), axes, "mean", "");
    mean = c.convertTo(mean, t.dtype);
    c.setOutput(0, c.g.reshape(mean, frontend::reducedShape(t.shape, axes, true), c.name()));
  };
}

/// Mish (opset 18): x * tanh(softplus(x)), computed as x * n / (n + 2) with n = e^x (e^x + 2),
/// the same value (tanh(log(1 + e^x)) = ((1 + e^x)^2 - 1) / ((1 + e^x)^2 + 1)) without the
/// rounding of log(1 + e^x) for very negative x; from x > 20 the factor is 1 to double precision
/// (and e^2x would overflow), so the result is x. In f32 for f16 and bf16 inputs.
void lowerMish(NodeContext& c) {
  if (c.opset < 18) c.fail("Mish is defined from opset 18");
  requireFloatInput(c, 0, "X");
  NodeId x0 = c.in(0);
  const ir::DType t = c.typeOf(x0).dtype;
  NodeId x = c.convertTo(x0, computeDType(t));
  NodeId e = c.g.unary(OpKind::Exp, x);
  NodeId n = c.g.binary(OpKind::Mul, e, c.g.binary(OpKind::Add, e, c.splatLike(e, 2.0)));
  NodeId factor = c.g.binary(OpKind::Div, n, c.g.binary(OpKind::Add, n, c.splatLike(n, 2.0)));
  NodeId large = c.g.compare(ir::CompareDir::GT, x, c.splatLike(x, 20.0));
  bool converted = x != x0;
  NodeId y = c.g.select(large, x, c.g.binary(OpKind::Mul, x, factor), converted ? "" : c.name());
  if (converted) y = c.g.convert(y, t, c.name());
  c.setOutput(0, y);
}

/// MatMul with numpy semantics: 1-D operands get a unit dim (removed again afterwards) and
/// batch dims broadcast, both made explicit around one batched dot.
void lowerMatMul(NodeContext& c) {
  NodeId a = c.in(0), b = c.in(1);
  if (c.typeOf(a).dtype != c.typeOf(b).dtype) c.fail("operands must have one dtype");
  c.setOutput(0, numpyMatmul(c, a, b, c.name()));
}

/// Gemm: alpha * A' B' + beta * C, with A' and B' optionally transposed and C broadcast.
void lowerGemm(NodeContext& c) {
  NodeId a = c.in(0), b = c.in(1);
  if (c.typeOf(a).shape.size() != 2 || c.typeOf(b).shape.size() != 2)
    c.fail(fmt::format("A {} and B {} must be matrices", ir::shapeStr(c.typeOf(a).shape),
                       ir::shapeStr(c.typeOf(b).shape)));
  if (c.attrInt("transA", 0)) a = c.g.transpose(a, {1, 0});
  if (c.attrInt("transB", 0)) b = c.g.transpose(b, {1, 0});
  double alpha = c.attrFloat("alpha", 1.0f), beta = c.attrFloat("beta", 1.0f);
  bool withC = c.has(2) && beta != 0.0;
  bool last = !withC && alpha == 1.0;
  NodeId y = c.g.dot(a, b, last ? c.name() : "");
  if (alpha != 1.0) y = c.g.binary(OpKind::Mul, y, c.splatLike(y, alpha), withC ? "" : c.name());
  if (withC) {
    NodeId bias = c.broadcastTo(c.in(2), c.typeOf(y).shape);
    if (beta != 1.0) bias = c.g.binary(OpKind::Mul, bias, c.splatLike(bias, beta));
    y = c.g.binary(OpKind::Add, y, bias, c.name());
  }
  c.setOutput(0, y);
}

} // namespace

ir::DType computeDType(ir::DType t) {
  return t == ir::DType::f16 || t == ir::DType::bf16 ? ir::DType::f32 : t;
}

NodeId numpyMatmul(NodeContext& c, NodeId a, NodeId b, const std::string& name) {
  Shape sa = c.typeOf(a).shape, sb = c.typeOf(b).shape;
  if (sa.empty() || sb.empty()) c.fail("operands must have rank 1 or more");
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA) a = c.g.reshape(a, sa = {Dim(1), sa[0]});
  if (vecB) b = c.g.reshape(b, sb = {sb[0], Dim(1)});
  Shape batch = c.broadcastShape(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  auto full = [&](const Shape& s) {
    Shape f = batch;
    f.insert(f.end(), s.end() - 2, s.end());
    return f;
  };
  a = c.broadcastTo(a, full(sa));
  b = c.broadcastTo(b, full(sb));
  bool reshapeAfter = vecA || vecB;
  NodeId y = c.g.dot(a, b, reshapeAfter ? "" : name);
  if (!reshapeAfter) return y;
  Shape out = batch;
  if (!vecA) out.push_back(sa[sa.size() - 2]);
  if (!vecB) out.push_back(sb[sb.size() - 1]);
  return c.g.reshape(y, out, name);
}

void addNNOps(OperatorTable& t) {
  t["Softmax"] = softmax(false);
  t["LogSoftmax"] = softmax(true);
  t["LayerNormalization"] = lowerLayerNorm;
  t["BatchNormalization"] = lowerBatchNorm;
  t["InstanceNormalization"] = lowerInstanceNorm;
  t["GroupNormalization"] = lowerGroupNorm;
  t["MeanVarianceNormalization"] = lowerMeanVarianceNorm;
  t["GlobalAveragePool"] = globalPool(/*average=*/true);
  t["GlobalMaxPool"] = globalPool(/*average=*/false);
  t["Mish"] = lowerMish;
  t["MatMul"] = lowerMatMul;
  t["Gemm"] = lowerGemm;
}

} // namespace weft::onnx
