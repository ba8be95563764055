#pragma once
// Compares what a device computed with what the reference interpreter computed. The rules
// (docs/graph-format.md, "Checking outputs"), per element, from that element alone:
//  - integers and bools match exactly (all 64 bits of an i64);
//  - a NaN reference is matched only by NaN (any payload); +inf and -inf only by themselves;
//    a finite reference is never matched by NaN or an infinity;
//  - a finite float passes when |actual - expected| <= atol + rtol * |expected| + spread,
//    where atol and rtol are the dtype's (toleranceFor) and spread is the conditioning guard
//    (runtime::conditioningSpread: how far the reference itself moves when every rounded
//    value moves by a few ulps). Never the tensor's largest element: a wrong small element
//    next to a large one fails.
//  - an element whose spread is infinite (the reference flips class under a few ulps of
//    rounding) accepts any value.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::runtime {

struct Tolerance {
  double atol = 0, rtol = 0;
};
Tolerance toleranceFor(ir::DType t);

/// What the compile allowed beyond exact arithmetic, which the check allows for too.
struct CheckOptions {
  /// CompileOptions::tf32: f32 dots may round their operands to tf32. Each f32 dot's result
  /// then also moves, in the conditioning guard, by (2^-10 + 2^-16) sum_k |a_k b_k| (both
  /// operands rounded to 10-bit significands: a relative error of at most 2^-11 each; f32 sums
  /// per k-step of 8), not just by ulps of its own result (runtime/conditioning.h).
  bool tf32Dots = false;
};

struct TensorCheck {
  std::string name;
  bool passed = true;
  int64_t mismatches = 0;
  int64_t worstIndex = -1; // flat index of the worst element (largest error / allowed error)
  double expected = 0, actual = 0, error = 0, allowed = 0;
  /// Float elements held to no bound: a 2-ulp perturbation of the graph's roundings changes
  /// their class (finite, ±inf, NaN), so any result is as right as the interpreter's. str()
  /// says how many; the worst element is the worst of the others.
  int64_t unchecked = 0;
  std::string str() const; // "y: ok" or "y: 3 mismatches; worst at [1, 7] ..."
  std::vector<int64_t> shape;
};

/// `spread`, when given, holds one allowance per element of `expected` (see above); without it
/// the check is the dtype's tolerance alone.
TensorCheck checkTensor(const std::string& name, const HostTensor& expected, const HostTensor& actual,
                        const std::vector<double>* spread = nullptr);

/// What `weft run --check` does: runs the interpreter on `inputs` under `binding`, measures its
/// conditioning, and checks each output of `actual` (graph output order). InputError from the
/// interpreter (an integer division by zero) propagates.
std::vector<TensorCheck> checkOutputs(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                      const ir::Binding& binding,
                                      const std::vector<HostTensor>& actual,
                                      const CheckOptions& options = {});

} // namespace weft::runtime
