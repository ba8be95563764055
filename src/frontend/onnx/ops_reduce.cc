// ONNX reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL2 and
// ReduceLogSumExp, with keepdims and noop_with_empty_axes. The axes are an attribute, and an
// input from opset 13 (ReduceSum) or 18 (the others).
#include <algorithm>
#include <fmt/format.h>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::NodeId;
using ir::OpKind;
using ir::ReduceKind;

enum class Reduction { Sum, Mean, Max, Min, Prod, L2, LogSumExp };

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

Lowering reduction(Reduction kind) {
  return [kind](NodeContext& c) {
    ReduceSpec spec = reduceSpec(c, kind == Reduction::Sum ? 13 : 18);
    NodeId x = c.in(0);
    if (spec.axes.empty()) {
      // ONNX's noop: the input itself (L2 and LogSumExp still apply their elementwise part)
      if (kind == Reduction::L2) x = c.g.unary(OpKind::Abs, x, c.name());
      c.setOutput(0, x);
      return;
    }
    std::string name = c.name();
    switch (kind) {
    case Reduction::Sum:
      c.setOutput(0, c.reduceKeep(ReduceKind::Sum, x, spec.axes, spec.keepdims, name));
      return;
    case Reduction::Max:
      c.setOutput(0, c.reduceKeep(ReduceKind::Max, x, spec.axes, spec.keepdims, name));
      return;
    case Reduction::Min:
      c.setOutput(0, c.reduceKeep(ReduceKind::Min, x, spec.axes, spec.keepdims, name));
      return;
    case Reduction::Prod:
      c.setOutput(0, c.reduceKeep(ReduceKind::Prod, x, spec.axes, spec.keepdims, name));
      return;
    case Reduction::Mean: {
      ir::Shape shape = c.typeOf(x).shape;
      if (auto a = frontend::reducedCount(shape, spec.axes).symbolicAxis)
        c.unsupported(fmt::format("ReduceMean over axis {} of symbolic size {}", *a,
                                  shape[static_cast<size_t>(*a)].str()));
      NodeId mean = frontend::mean(c.site(), x, spec.axes, "mean", spec.keepdims ? "" : name);
      if (spec.keepdims)
        mean = c.g.reshape(mean, frontend::reducedShape(c.typeOf(x).shape, spec.axes, true), name);
      c.setOutput(0, mean);
      return;
    }
    case Reduction::L2: {
      NodeId sum =
          c.reduceKeep(ReduceKind::Sum, c.g.binary(OpKind::Mul, x, x), spec.axes, spec.keepdims);
      if (!ir::isFloat(c.typeOf(sum).dtype)) {
        NodeId root = c.g.unary(OpKind::Sqrt, c.convertTo(sum, ir::DType::f64));
        c.setOutput(0, c.g.convert(root, c.typeOf(sum).dtype, name));
        return;
      }
      c.setOutput(0, c.g.unary(OpKind::Sqrt, sum, name));
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
  t["ReduceL2"] = reduction(Reduction::L2);
  t["ReduceLogSumExp"] = reduction(Reduction::LogSumExp);
}

} // namespace weft::onnx
