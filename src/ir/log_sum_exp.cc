#include "ir/log_sum_exp.h"

namespace weft::ir {

NodeId logSumBelowMax(Graph& g, NodeId x, NodeId max, const std::vector<int64_t>& axes,
                      const std::function<std::string(const std::string&)>& name) {
  const DType t = g.node(x).type.dtype;
  if (dtypeBytes(t) >= 4) {
    NodeId lse = g.reduce(ReduceKind::LogSumExp, x, axes, name("logsumexp"));
    return g.binary(OpKind::Sub, lse, max, name("log_sum"));
  }
  NodeId lse = g.reduce(ReduceKind::LogSumExp, g.convert(x, DType::f32, name("x_f32")), axes,
                        name("logsumexp"));
  NodeId logSum = g.binary(OpKind::Sub, lse, g.convert(max, DType::f32, name("max_f32")),
                           name("log_sum_f32"));
  return g.convert(logSum, t, name("log_sum"));
}

} // namespace weft::ir
