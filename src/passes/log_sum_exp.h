#pragma once
// Log-sum-exp, recognized. Exporters and hand-written models spell a log-softmax's
// normalizer out as
//
//   m = max over A of x;   log(sum over A of exp(x - broadcast(m)))
//
// (JAX's and TensorFlow's decompositions, ONNX graphs with ReduceMax, Sub, Exp, ReduceSum and
// Log), which reads each row twice: the sum waits for the max. This pass rewrites
//
//   log(sum over A of exp(x - broadcast(m)))  -> (logsumexp over A of x) - m
//   logsumexp over A of (x - broadcast(m))    -> (logsumexp over A of x) - m
//
// where m is the max of x over the same axes A, broadcast back along A (also through a reshape
// that only adds 1s, ONNX's keepdims, and a log of that reshape), and every axis of A is static
// and holds elements. The logsumexp of x is then a sibling of its max, and the row is read once
// (docs/planner.md). Float types only. The first rewrite applies only where the sum has no
// other reader (a softmax that divides by it keeps it).
// Guarantees: results equal the source's up to rounding. log(sum(exp(z))) of any other z is
// left alone: there exp(z) can overflow (+inf) or every term underflow (-inf, an f16 row below
// -17), where a logsumexp would be finite. Rows holding infinities or NaN give what the source
// gives (x - m is NaN where both are infinite, and so is lse(x) - m); over an empty A the source
// gives log(0) = -inf and lse(x) - m would be NaN, hence static, non-empty axes only. Parameters
// and outputs are kept (rewriter.h); values no longer used are left for dce.
#include "ir/graph.h"

namespace weft::passes {

ir::Graph recognizeLogSumExp(const ir::Graph& g);

} // namespace weft::passes
