// Neural-network ONNX operators expanded into IR primitives: Softmax, LogSoftmax,
// LayerNormalization, BatchNormalization, and MatMul / Gemm as the IR's dot. Softmax, the
// norms and their statistics are the shared composite ops (frontend/composite_ops.h), so an
// ONNX model reaches the planner as the same graph as the JSON file of the same model.
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

/// Fails (unsupported) unless the normalized `axes` of `s` have static sizes: a mean divides
/// by their product.
void requireStaticCount(NodeContext& c, const Shape& s, const std::vector<int64_t>& axes) {
  if (auto a = frontend::reducedCount(s, axes).symbolicAxis)
    c.unsupported(fmt::format("normalizing over axis {} of symbolic size {}", *a,
                              s[static_cast<size_t>(*a)].str()));
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
    c.unsupported("BatchNormalization with spatial=0");
  bool training = c.opset >= 14 ? c.attrInt("training_mode", 0) != 0
                                : (c.opset < 7 ? c.attrInt("is_test", 0) == 0 && c.numOutputs() > 1
                                               : c.numOutputs() > 1);
  if (training && c.opset < 14)
    c.unsupported(
        "BatchNormalization in training mode before opset 14 (saved mean and variance outputs)");
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

/// MatMul with numpy semantics: 1-D operands get a unit dim (removed again afterwards) and
/// batch dims broadcast, both made explicit around one batched dot.
void lowerMatMul(NodeContext& c) {
  NodeId a = c.in(0), b = c.in(1);
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
  if (c.typeOf(a).dtype != c.typeOf(b).dtype) c.fail("operands must have one dtype");
  bool reshapeAfter = vecA || vecB;
  NodeId y = c.g.dot(a, b, reshapeAfter ? "" : c.name());
  if (reshapeAfter) {
    Shape out = batch;
    if (!vecA) out.push_back(sa[sa.size() - 2]);
    if (!vecB) out.push_back(sb[sb.size() - 1]);
    y = c.g.reshape(y, out, c.name());
  }
  c.setOutput(0, y);
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

void addNNOps(OperatorTable& t) {
  t["Softmax"] = softmax(false);
  t["LogSoftmax"] = softmax(true);
  t["LayerNormalization"] = lowerLayerNorm;
  t["BatchNormalization"] = lowerBatchNorm;
  t["MatMul"] = lowerMatMul;
  t["Gemm"] = lowerGemm;
}

} // namespace weft::onnx
