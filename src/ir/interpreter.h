#pragma once
// The reference interpreter: runs any verified graph on the host, op by op, and is the oracle
// every execution test compares with. It favours being obviously right over being fast.
//
// Semantics (what codegen and the simulator must match; docs/graph-format.md states them for
// users):
//  - Floats compute in double and round to the op's dtype on store, exactly as HostTensor::set
//    would (f16/bf16 round to nearest even through f32).
//  - Integers (i8, i32, i64) are exact two's-complement values: add, sub, mul, neg, abs, sum and
//    prod wrap around at the dtype's width, as numpy and GPUs do (i8 127 + 1 = -128;
//    abs(MIN) = MIN; MIN / -1 = MIN). Integer div and rem truncate toward zero like C (rem
//    takes the dividend's sign). Integer division or remainder by zero has no defined result on
//    a GPU, so the interpreter refuses it: InputError naming the op and the element.
//  - convert: float -> integer truncates toward zero and saturates, NaN gives 0; integer ->
//    narrower integer wraps (i32 300 -> i8 44); integer -> f32/f16/bf16 rounds once to f32,
//    then to the dtype; anything -> bool is x != 0 (NaN gives true).
//  - Floats follow IEEE (x/0 = ±inf, 0/0 = NaN, rem = C fmod). max, min, clamp and reduce
//    max/min are IEEE 754-2019 maximum/minimum: NaN if any operand is NaN, and -0 < +0.
//    sign(±0) = 0, sign(NaN) = NaN. Compare with a NaN is false except NE.
//  - not/and/or are logical on bool and bitwise on integers.
//  - clamp(lo, x, hi) = min(max(x, lo), hi). Reductions over an empty axis give the identity
//    (0, -inf, +inf, 1, false, true; MIN and MAX of the dtype for integer max and min).
//  - gather reads the operand at the positions its index operands hold; an index outside
//    [0, size of its axis) gives 0 (false for bool) for that element, as on the GPU, where
//    nothing is read out of bounds.
//  - dot accumulates in double (floats, rounded once) or wrapping int64 (integers).
// Ops that no output depends on are not run. Symbolic dims are evaluated under `binding`; each
// input must have exactly the parameter's dtype and evaluated shape.
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::ir {

/// Runs `g` on `inputs` (in g.inputs() order) and returns its outputs (in g.outputs() order).
/// Throws InputError on a wrong input count, dtype or shape (naming the input), an unbound
/// symbol (naming it and the op), an integer division by zero (naming the op), or a value past
/// the interpreter's memory (kMaxInterpretedElements elements in one value, or an allocation
/// that fails; naming the op).
inline constexpr int64_t kMaxInterpretedElements = int64_t(1) << 30; // 8 GiB of doubles
std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs,
                                  const Binding& binding = {});

} // namespace weft::ir
