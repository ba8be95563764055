#pragma once
// Automatic mixed precision as a graph pass (RAF §5): the graph's f32 arithmetic runs in a low
// precision (f16 or bf16) except where that loses what matters, and casts are placed where they
// fuse. Runs before canonicalize (CompileOptions::amp, `--amp` on weft compile, grad, bench).
//
// What stays f32 (the numerically sensitive ops):
//  - every reduction: its operand is converted up and it accumulates and stores in f32;
//  - exp and log (softmax, log-softmax, losses): they compute and store in f32;
//  - statistics: elementwise and layout ops whose operands are all such f32 values (a norm's
//    mean, variance, rstd; a softmax's sum and log of the sum; the loss), up to the broadcast
//    where a statistic meets the full-size tensor (that broadcast is low precision, except
//    where it feeds a compare);
//  - compares of values that exist in f32 (inputs, statistics, their broadcasts): rounded, two
//    close values would tie, and the adjoints of max, min, reduce max/min and clamp pick their
//    elements with such compares; a compare of values computed low compares them as computed.
// Everything else computed from f32 values (elementwise ops, broadcasts, layout) runs in the
// low precision, except dots and their operands: a dot is a library kernel, where a cast
// cannot fuse, so it reads f32 values made in f32 by their producers' kernels. Sources (parameters, constants, iota, converts into f32) keep their
// dtype, and so does the graph's interface: inputs and outputs keep their names and dtypes
// (an output computed in low precision is converted back under its own name), so a caller's
// tensors and the reference interpreter's comparison are unchanged. Values of other dtypes
// (f64, f16, integers) are left alone.
//
// Casts: every use that needs another precision gets its own convert, named after its consumer,
// so that each fuses into its consumer's kernel instead of one shared cast becoming a value
// (or a kernel) of its own.
#include "ir/graph.h"

namespace weft::passes {

/// `g` in mixed precision with `low` (f16 or bf16) as the low precision; InputError for any
/// other dtype.
ir::Graph autoMixedPrecision(const ir::Graph& g, DType low);

} // namespace weft::passes
