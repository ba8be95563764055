// ONNX reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum and ReduceLogSumExp, with keepdims and noop_with_empty_axes. The
// axes are an attribute, and an input from opset 13 (ReduceSum) or 18 (the others).
#include <algorithm>
#include <fmt/format.h>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::NodeId;
using ir::OpKind;
using ir::ReduceKind;

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

struct ReduceSpec {
  std::vector<int64_t> axes; // normalized, sorted, unique; empty = the identity
  bool keepdims = true;
};

ReduceSpec reduceSpec(NodeContext& c, int axesInputOpset) {
  size_t r = c.rank(0);
  std::optional<std::vector<int64_t>> given;
  bool noop = false;
  if (c.opset < axesInputOpset) {
    given = c.attrInts("axes");
  } else {
    if (c.has(1)) given = c.constInts(1, "axes");
    noop = c.attrInt("noop_with_empty_axes", 0) != 0;
  }
  ReduceSpec spec;
  spec.keepdims = c.attrInt("keepdims", 1) != 0;
  if (given && !given->empty()) {
    for (int64_t a : *given)
      spec.axes.push_back(c.axis(a, r, "axis"));
    std::sort(spec.axes.begin(), spec.axes.end());
    if (std::adjacent_find(spec.axes.begin(), spec.axes.end()) != spec.axes.end())
      c.fail(fmt::format("axes [{}] repeat an axis", fmt::join(*given, ", ")));
  } else if (!noop) {
    for (size_t i = 0; i < r; ++i)
      spec.axes.push_back(static_cast<int64_t>(i));
  }
  return spec;
}

/// op(x) (sqrt or log), named `name`. An integer x goes through f64 and back, truncated and
/// saturated: numpy takes the root or logarithm of integers in float64, ONNX keeps the input's
/// type.
NodeId floatFunction(NodeContext& c, OpKind op, NodeId x, const std::string& name) {
  ir::DType t = c.typeOf(x).dtype;
  if (ir::isFloat(t)) return c.g.unary(op, x, name);
  NodeId y = c.g.unary(op, c.convertTo(x, ir::DType::f64));
  return c.g.convert(y, t, name);
}

/// ONNX's noop (empty axes with noop_with_empty_axes): each element reduced on its own, so the
/// reduction's elementwise parts still apply (the spec says so since onnx/onnx#7137): |x| for
/// L1 and L2 (sqrt(x^2)), x^2 for SumSquare, log(x) for LogSum; log(exp(x)) is x itself.
NodeId noopReduction(NodeContext& c, Reduction kind, NodeId x) {
  switch (kind) {
  case Reduction::L1:
  case Reduction::L2:
    return c.g.unary(OpKind::Abs, x, c.name());
  case Reduction::SumSquare:
    return c.g.binary(OpKind::Mul, x, x, c.name());
  case Reduction::LogSum:
    return floatFunction(c, OpKind::Log, x, c.name());
  default:
    return x;
  }
}

Lowering reduction(Reduction kind) {
  return [kind](NodeContext& c) {
    ReduceSpec spec = reduceSpec(c, kind == Reduction::Sum ? 13 : 18);
    NodeId x = c.in(0);
    if (spec.axes.empty()) {
      c.setOutput(0, noopReduction(c, kind, x));
      return;
    }
    std::string name = c.name();
    const bool bools = ir::isBool(c.typeOf(x).dtype);
    if (bools && !((kind == Reduction::Max || kind == Reduction::Min) && c.opset >= 20))
      c.fail(fmt::format("input is bool; {} takes numbers{}", c.node.op_type(),
                         kind == Reduction::Max || kind == Reduction::Min
                             ? " (bools from opset 20)"
                             : ""));
    switch (kind) {
    case Reduction::Sum:
      c.setOutput(0, c.reduceKeep(ReduceKind::Sum, x, spec.axes, spec.keepdims, name));
      return;
    case Reduction::Max: // of bools (opset 20): any
      c.setOutput(0, c.reduceKeep(bools ? ReduceKind::Any : ReduceKind::Max, x, spec.axes,
                                  spec.keepdims, name));
      return;
    case Reduction::Min: // of bools (opset 20): all
      c.setOutput(0, c.reduceKeep(bools ? ReduceKind::All : ReduceKind::Min, x, spec.axes,
                                  spec.keepdims, name));
      return;
    case Reduction::Prod:
      c.setOutput(0, c.reduceKeep(ReduceKind::Prod, x, spec.axes, spec.keepdims, name));
      return;
    case Reduction::Mean: {
      ir::Shape shape = c.typeOf(x).shape;
      if (auto a = frontend::reducedCount(shape, spec.axes).symbolicAxis)
        c.unsupported(fmt::format("ReduceMean over axis {} of symbolic size {} is not supported "
                                  "(the mean divides by a size known only at run time)",
                                  *a, shape[static_cast<size_t>(*a)].str()));
      NodeId mean = frontend::mean(c.site(), x, spec.axes, "mean", spec.keepdims ? "" : name);
      if (spec.keepdims)
        mean = c.g.reshape(mean, frontend::reducedShape(c.typeOf(x).shape, spec.axes, true), name);
      c.setOutput(0, mean);
      return;
    }
    case Reduction::L1: // sum(|x|); integers too, in their own type as numpy does
      c.setOutput(0, c.reduceKeep(ReduceKind::Sum, c.g.unary(OpKind::Abs, x), spec.axes,
                                  spec.keepdims, name));
      return;
    case Reduction::L2: {
      NodeId sum =
          c.reduceKeep(ReduceKind::Sum, c.g.binary(OpKind::Mul, x, x), spec.axes, spec.keepdims);
      c.setOutput(0, floatFunction(c, OpKind::Sqrt, sum, name));
      return;
    }
    case Reduction::SumSquare:
      c.setOutput(0, c.reduceKeep(ReduceKind::Sum, c.g.binary(OpKind::Mul, x, x), spec.axes,
                                  spec.keepdims, name));
      return;
    case Reduction::LogSum: {
      // log(sum(x)): an empty reduction (a size-0 axis) sums to 0, so -inf, as ONNX specifies.
      NodeId sum = c.reduceKeep(ReduceKind::Sum, x, spec.axes, spec.keepdims);
      c.setOutput(0, floatFunction(c, OpKind::Log, sum, name));
      return;
    }
    case Reduction::LogSumExp: {
      // Floats: weft's logsumexp reduce, ONNX's log(sum(exp(x))) without its overflow (x above
      // 88 in f32). Integers: the definition as written.
      if (ir::isFloat(c.typeOf(x).dtype)) {
        c.setOutput(0, c.reduceKeep(ReduceKind::LogSumExp, x, spec.axes, spec.keepdims, name));
        return;
      }
      NodeId sum =
          c.reduceKeep(ReduceKind::Sum, c.g.unary(OpKind::Exp, x), spec.axes, spec.keepdims);
      c.setOutput(0, c.g.unary(OpKind::Log, sum, name));
      return;
    }
    }
  };
}

} // namespace

void addReduceOps(OperatorTable& t) {
  t["ReduceSum"] = reduction(Reduction::Sum);
  t["ReduceMean"] = reduction(Reduction::Mean);
  t["ReduceMax"] = reduction(Reduction::Max);
  t["ReduceMin"] = reduction(Reduction::Min);
  t["ReduceProd"] = reduction(Reduction::Prod);
  t["ReduceL1"] = reduction(Reduction::L1);
  t["ReduceL2"] = reduction(Reduction::L2);
  t["ReduceSumSquare"] = reduction(Reduction::SumSquare);
  t["ReduceLogSum"] = reduction(Reduction::LogSum);
  t["ReduceLogSumExp"] = reduction(Reduction::LogSumExp);
}

} // namespace weft::onnx
