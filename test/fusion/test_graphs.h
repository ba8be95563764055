#pragma once
// Graphs the planner tests assert plans for, built with the IR builder. Names follow the
// papers' figures where there is one (AStitch Figure 7).
#include <cstdint>

#include "ir/graph.h"

namespace weft::fusion::testing {

/// AStitch Figure 7(a) with the paper's op names, the same graph as
/// examples/graphs/astitch_fig7.json (B = batch):
///   reduce.1 = row-sum(parameter.1[B,128,32]);  add.1 = reduce.1 + bcast(parameter.2[128])
///   divide.1 = parameter.2 / 32;  power.1 = divide.1 ^ 2;  broadcast.2 = bcast(power.1)
///   add.2 = add.1 + broadcast.2;  reduce.2 = column-sum(add.2)  (over B)
///   multiply.1 = bcast(reduce.2) * broadcast.2   (the output)
/// `columns` replaces the 128: at 128, power.1 is small enough for every block to compute it
/// (fusion/graph_queries.h, blockComputable); past 4,096 it is the paper's sub-dominant.
ir::Graph astitchFig7(int64_t batch = 4096, int64_t columns = 128);

ir::Graph layerNorm(int64_t rows = 16384, int64_t hidden = 768);
ir::Graph softmax(int64_t rows = 4096, int64_t length = 1024);
ir::Graph residualLayerNorm(int64_t rows = 16384, int64_t hidden = 768);
ir::Graph geluBias(int64_t rows = 16384, int64_t hidden = 3072);
ir::Graph rmsNorm(int64_t rows = 16384, int64_t hidden = 4096);
ir::Graph columnReduce(int64_t rows = 65536, int64_t cols = 256);
/// Outputs dx, dgamma, dbeta from dy, x, mean, rstd, gamma (saved statistics).
ir::Graph layerNormBackward(int64_t rows = 16384, int64_t hidden = 768);
/// One row reduce of a [rows, length] parameter.
ir::Graph rowReduce(int64_t rows, int64_t length);
/// One dot: a [batch..., M, K] · b [batch..., K, N] → c.
ir::Graph dotGraph(DType t, const ir::Shape& batch, ir::Dim m, ir::Dim k, ir::Dim n);
/// What follows a dot in dotEpilogueGraph: + bias[N] (broadcast over the rows); + bias then
/// tanh-GELU; + a residual of the result's shape (a graph input); + bias then a cast to f16;
/// + bias then layer norm over the rows (a reduce: only the bias add can fuse).
enum class DotConsumers { Bias, BiasGelu, Residual, BiasCast, BiasLayerNorm };
/// a [batch..., M, K] · b [batch..., K, N], then `consumers`; the last value is the output.
ir::Graph dotEpilogueGraph(DType t, const ir::Shape& batch, int64_t m, int64_t k, int64_t n,
                           DotConsumers consumers);
/// layer norm → dot → gelu: two stitched regions around a compute-intensive op.
ir::Graph layerNormDotGelu(int64_t rows = 1024, int64_t hidden = 768);

} // namespace weft::fusion::testing
