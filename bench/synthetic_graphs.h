#pragma once
// Generated workloads, deterministic for a given size and seed (a fixed LCG, no std::
// distributions): they are built here at bench time rather than checked in as JSON because
// their size is a parameter (the compile-time scaling runs 100, 1,000 and 10,000 nodes of the
// same family) and a 10,000-node JSON file is megabytes of noise in every diff.
#include <cstdint>

#include "ir/graph.h"

namespace weft::bench {

/// One memory-intensive cluster of `ops` ops on x: f32[rows, cols] plus [cols] parameters:
/// elementwise chains, bias adds, LayerNorm- and softmax-like row-reduce diamonds and
/// column reduces broadcast back, mixed at random. `ops` counts every node after x (the
/// bias parameters and constants included).
ir::Graph elementwiseCluster(int ops, int64_t rows, int64_t cols, uint64_t seed = 1);

/// A graph of exactly `nodes` nodes (parameters included): memory-intensive clusters of about
/// `clusterOps` ops on f32[rows, cols], each separated from the next by a matmul with a
/// [cols, cols] weight, the way a model's layers alternate.
ir::Graph clusteredGraph(int nodes, int64_t rows, int64_t cols, int clusterOps = 48,
                         uint64_t seed = 1);

/// `n` chained softmaxes over axis 1 of x: f32[rows, cols] (s_0 = x, s_{i+1} = softmax(s_i),
/// output s_n), each as max, broadcast, sub, exp, sum, broadcast, div: the graph
/// bench/gen_chain_softmax.py writes as JSON. A compiler that regenerates a softmax's input
/// instead of reading it where an earlier stage left it grows quadratically with n.
ir::Graph chainedSoftmaxes(int n, int64_t rows, int64_t cols);

} // namespace weft::bench
