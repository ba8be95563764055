#pragma once
// The reference interpreter: runs any verified graph on the host, op by op, and is the oracle
// every execution test compares with. It favours being obviously right over being fast.
//
// Semantics (what codegen must match, or what tests must avoid):
//  - Every op computes in double and rounds its result to the op's dtype on store, exactly as
//    HostTensor::set would (f16/bf16 round to nearest even through f32; integer results
//    truncate toward zero and saturate; NaN stores as 0 in an integer).
//    So integer overflow saturates here where a GPU wraps: tests should not overflow.
//    Values are held as double, so i64 is exact only up to 2^53 (as in ConstantAttrs).
//  - Floats follow IEEE (x/0 = ±inf, 0/0 = NaN, rem = C fmod). max, min, clamp and reduce
//    max/min propagate NaN. sign(±0) = 0, sign(NaN) = NaN. Compare with a NaN is false except NE.
//  - Integer div and rem truncate toward zero like C (rem takes the dividend's sign).
//    Integer division or remainder by zero has no defined result on a GPU, so the interpreter
//    refuses it: InputError naming the op and the element.
//  - not/and/or are logical on bool and bitwise on integers.
//  - clamp(lo, x, hi) = min(max(x, lo), hi). Reductions over an empty axis give the identity
//    (0, -inf, +inf, 1, false, true; saturated in integer dtypes).
//  - dot accumulates in double and rounds once.
// Ops that no output depends on are not run. Symbolic dims are evaluated under `binding`; each
// input must have exactly the parameter's dtype and evaluated shape.
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::ir {

/// Runs `g` on `inputs` (in g.inputs() order) and returns its outputs (in g.outputs() order).
/// Throws InputError on a wrong input count, dtype or shape (naming the input), an unbound
/// symbol (naming it and the op), or an integer division by zero (naming the op).
std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs,
                                  const Binding& binding = {});

} // namespace weft::ir
