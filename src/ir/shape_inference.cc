#include "ir/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>

#include "weft/error.h"

namespace weft::ir {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw InputError(fmt::format("{}: {}", where, what));
}

std::string listStr(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

const TensorType& requireDeclared(const std::string& where, OpKind kind,
                                  const std::optional<TensorType>& declared) {
  if (!declared) fail(where, fmt::format("{} needs its result type (dtype and shape)", opName(kind)));
  return *declared;
}

void checkOperandCount(const std::string& where, OpKind kind, size_t n) {
  int expected = operandCount(kind);
  if (expected < 0) {
    if (n == 0) fail(where, fmt::format("{} takes at least one operand, got none", opName(kind)));
    return;
  }
  if (n != static_cast<size_t>(expected))
    fail(where, fmt::format("{} takes {} operand(s), got {}", opName(kind), expected, n));
}

template <class A> const A& attrsOf(const std::string& where, OpKind kind, const Attrs& attrs) {
  if (auto* a = std::get_if<A>(&attrs)) return *a;
  fail(where, fmt::format("{} is missing its attributes", opName(kind)));
}

/// Integer and bool constants (and pad values) must hold a value of their dtype exactly: an
/// integer in range (or 0/1 for bool), never NaN, inf or a fraction. `field` names the
/// attribute for the message.
void checkValueFits(const std::string& where, const std::string& field, DType t, double v,
                    std::optional<size_t> element = std::nullopt) {
  if (isFloat(t)) return;
  std::string which = element ? fmt::format("element {} ({})", *element, v) : fmt::format("{}", v);
  auto bad = [&](const std::string& why) {
    fail(where, fmt::format("field \"{}\": {} {}", field, which, why));
  };
  if (!std::isfinite(v) || v != std::trunc(v)) bad(fmt::format("is not a {} value", dtypeName(t)));
  // [lo, end): end is exclusive so that i64's 2^63, the double nearest INT64_MAX, is out.
  struct Range {
    double lo, end;
    const char *loText, *hiText;
  };
  Range r = t == DType::i8    ? Range{-128.0, 128.0, "-128", "127"}
            : t == DType::i32 ? Range{-2147483648.0, 2147483648.0, "-2147483648", "2147483647"}
            : t == DType::i64 ? Range{-9223372036854775808.0, 9223372036854775808.0, "-2^63", "2^63-1"}
                              : Range{0.0, 2.0, "0", "1"}; // bool
  if (v < r.lo || v >= r.end)
    bad(fmt::format("does not fit {} ({} to {})", dtypeName(t), r.loText, r.hiText));
}

/// numElements, with an int64 overflow reported as this op's error (at `where`).
Dim elementsOf(const std::string& where, const Shape& shape) {
  try {
    return numElements(shape);
  } catch (const InputError& e) { // "size overflow: A * B does not fit in int64"
    fail(where, e.what());
  }
}

void checkAxis(const std::string& where, const std::string& what, int64_t axis, size_t rank) {
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    fail(where, fmt::format("{} {} is out of range for rank {}", what, axis, rank));
}

bool floatOnly(OpKind k) {
  switch (k) {
  case OpKind::Exp: case OpKind::Log: case OpKind::Tanh: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Sin: case OpKind::Cos: case OpKind::Floor:
  case OpKind::Ceil: case OpKind::Reciprocal: case OpKind::Pow:
    return true;
  default:
    return false;
  }
}

void checkElementDType(const std::string& where, OpKind kind, DType t, int operand) {
  auto bad = [&](const char* allowed) {
    fail(where, fmt::format("operand {} has dtype {} but {} takes {}", operand, dtypeName(t),
                            opName(kind), allowed));
  };
  if (kind == OpKind::Not || kind == OpKind::And || kind == OpKind::Or) {
    if (!isBool(t) && !isInteger(t)) bad("bool or integer operands");
    return;
  }
  if (floatOnly(kind)) {
    if (!isFloat(t)) bad("floating-point operands (convert first)");
    return;
  }
  if (kind == OpKind::Compare) return;
  if (isBool(t)) bad("numeric operands");
}

TensorType inferElementwise(const std::string& where, OpKind kind,
                            const std::vector<const TensorType*>& ops, const Attrs& attrs) {
  const TensorType& first = *ops[0];
  if (kind == OpKind::Select) {
    if (ops[0]->dtype != DType::boolean)
      fail(where, fmt::format("operand 0 (predicate) has dtype {} but select needs bool", dtypeName(ops[0]->dtype)));
    if (ops[1]->dtype != ops[2]->dtype)
      fail(where, fmt::format("operand 2 has dtype {} but operand 1 has dtype {}; both branches need one dtype",
                              dtypeName(ops[2]->dtype), dtypeName(ops[1]->dtype)));
  } else {
    for (size_t i = 1; i < ops.size(); ++i)
      if (ops[i]->dtype != first.dtype)
        fail(where, fmt::format("operand {} has dtype {} but operand 0 has dtype {}; convert one explicitly",
                                i, dtypeName(ops[i]->dtype), dtypeName(first.dtype)));
    if (kind != OpKind::Convert)
      for (size_t i = 0; i < ops.size(); ++i) checkElementDType(where, kind, ops[i]->dtype, static_cast<int>(i));
  }
  for (size_t i = 1; i < ops.size(); ++i)
    if (ops[i]->shape != first.shape)
      fail(where, fmt::format("operand {} has shape {} but operand 0 has shape {}; broadcast it explicitly "
                              "(broadcast_in_dim) or use matching shapes",
                              i, shapeStr(ops[i]->shape), shapeStr(first.shape)));
  if (kind == OpKind::Compare) {
    attrsOf<CompareAttrs>(where, kind, attrs);
    return {DType::boolean, first.shape};
  }
  if (kind == OpKind::Select) return *ops[1];
  return first;
}

TensorType inferBroadcast(const std::string& where, const TensorType& x, const BroadcastAttrs& a,
                          const TensorType& declared) {
  if (declared.dtype != x.dtype)
    fail(where, fmt::format("result dtype {} differs from operand dtype {}", dtypeName(declared.dtype), dtypeName(x.dtype)));
  if (a.dims.size() != x.shape.size())
    fail(where, fmt::format("broadcast_dimensions {} has {} entries but the operand has rank {}",
                            listStr(a.dims), a.dims.size(), x.shape.size()));
  for (size_t i = 0; i < a.dims.size(); ++i) {
    checkAxis(where, "broadcast dimension", a.dims[i], declared.shape.size());
    if (i > 0 && a.dims[i] <= a.dims[i - 1])
      fail(where, fmt::format("broadcast_dimensions {} must be strictly increasing", listStr(a.dims)));
    const Dim& from = x.shape[i];
    const Dim& to = declared.shape[static_cast<size_t>(a.dims[i])];
    if (from != to && !from.isOne())
      fail(where, fmt::format("operand dim {} ({}) cannot broadcast to result dim {} ({}); sizes must match or be 1",
                              i, from.str(), a.dims[i], to.str()));
  }
  return declared;
}

TensorType inferSlice(const std::string& where, const TensorType& x, const SliceAttrs& a) {
  size_t rank = x.shape.size();
  if (a.starts.size() != rank || a.limits.size() != rank || a.strides.size() != rank)
    fail(where, fmt::format("starts, limits and strides need {} entries each (the operand's rank)", rank));
  Shape out;
  for (size_t i = 0; i < rank; ++i) {
    const Dim& d = x.shape[i];
    int64_t start = a.starts[i], limit = a.limits[i], stride = a.strides[i];
    if (stride <= 0) fail(where, fmt::format("stride {} on axis {} must be positive", stride, i));
    if (!d.isStatic()) {
      if (start != 0 || limit != -1 || stride != 1)
        fail(where, fmt::format("axis {} has symbolic size {}; it can only be taken whole (start 0, limit -1, stride 1)", i, d.str()));
      out.push_back(d);
      continue;
    }
    if (limit == -1) limit = d.size();
    if (start < 0 || start > limit || limit > d.size())
      fail(where, fmt::format("axis {}: need 0 <= start ({}) <= limit ({}) <= size ({})", i, start, limit, d.size()));
    // ceil((limit - start) / stride) without forming limit - start + stride - 1, which
    // overflows int64 for a stride near 2^63.
    int64_t span = limit - start;
    out.push_back(Dim(span == 0 ? 0 : (span - 1) / stride + 1));
  }
  return {x.dtype, out};
}

TensorType inferConcat(const std::string& where, const std::vector<const TensorType*>& ops, const ConcatAttrs& a) {
  const TensorType& first = *ops[0];
  checkAxis(where, "concatenate axis", a.axis, first.shape.size());
  Shape out = first.shape;
  for (size_t i = 1; i < ops.size(); ++i) {
    const TensorType& t = *ops[i];
    if (t.dtype != first.dtype)
      fail(where, fmt::format("operand {} has dtype {} but operand 0 has dtype {}", i, dtypeName(t.dtype), dtypeName(first.dtype)));
    if (t.shape.size() != first.shape.size())
      fail(where, fmt::format("operand {} has rank {} but operand 0 has rank {}", i, t.shape.size(), first.shape.size()));
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (static_cast<int64_t>(d) == a.axis) continue;
      if (t.shape[d] != first.shape[d])
        fail(where, fmt::format("operand {} has shape {} but operand 0 has shape {}; only axis {} may differ",
                                i, shapeStr(t.shape), shapeStr(first.shape), a.axis));
    }
    std::optional<Dim> sum;
    try {
      sum = out[static_cast<size_t>(a.axis)].plus(t.shape[static_cast<size_t>(a.axis)]);
    } catch (const InputError&) { // the sum overflows int64
      fail(where, fmt::format("axis {} sizes {} and {} add up past int64", a.axis,
                              out[static_cast<size_t>(a.axis)].str(),
                              t.shape[static_cast<size_t>(a.axis)].str()));
    }
    if (!sum)
      fail(where, fmt::format("axis {} sizes {} and {} cannot be added into one dim", a.axis,
                              out[static_cast<size_t>(a.axis)].str(), t.shape[static_cast<size_t>(a.axis)].str()));
    out[static_cast<size_t>(a.axis)] = *sum;
  }
  return {first.dtype, out};
}

TensorType inferPad(const std::string& where, const TensorType& x, const PadAttrs& a) {
  size_t rank = x.shape.size();
  if (a.low.size() != rank || a.high.size() != rank)
    fail(where, fmt::format("low and high need {} entries each (the operand's rank)", rank));
  Shape out = x.shape;
  for (size_t i = 0; i < rank; ++i) {
    if (a.low[i] < 0 || a.high[i] < 0)
      fail(where, fmt::format("axis {}: padding must be non-negative, got low {} high {}", i, a.low[i], a.high[i]));
    if (a.low[i] == 0 && a.high[i] == 0) continue;
    if (!x.shape[i].isStatic())
      fail(where, fmt::format("axis {} has symbolic size {} and cannot be padded", i, x.shape[i].str()));
    int64_t size;
    if (__builtin_add_overflow(x.shape[i].size(), a.low[i], &size) ||
        __builtin_add_overflow(size, a.high[i], &size))
      fail(where, fmt::format("axis {}: size {} padded by low {} and high {} does not fit in int64",
                              i, x.shape[i].size(), a.low[i], a.high[i]));
    out[i] = Dim(size);
  }
  return {x.dtype, out};
}

TensorType inferGather(const std::string& where, const std::vector<const TensorType*>& ops,
                       const GatherAttrs& a) {
  if (ops.size() < 2) fail(where, "gather takes an operand and at least one index operand");
  const TensorType& x = *ops[0];
  size_t rank = x.shape.size(), k = ops.size() - 1;
  if (a.axes.size() != k)
    fail(where, fmt::format("axes {} names {} axis(es) but the gather has {} index operand(s)",
                            listStr(a.axes), a.axes.size(), k));
  std::vector<bool> indexed(rank, false);
  for (int64_t axis : a.axes) {
    checkAxis(where, "gather axis", axis, rank);
    if (indexed[static_cast<size_t>(axis)])
      fail(where, fmt::format("axes {} names axis {} twice", listStr(a.axes), axis));
    indexed[static_cast<size_t>(axis)] = true;
  }
  const Shape& out = ops[1]->shape;
  for (size_t j = 1; j <= k; ++j) {
    const TensorType& t = *ops[j];
    if (!isInteger(t.dtype))
      fail(where, fmt::format("index operand {} has dtype {}; indices are integers", j,
                              dtypeName(t.dtype)));
    if (t.shape != out)
      fail(where, fmt::format("index operand {} has shape {} but index operand 1 has {}; every "
                              "index operand has the result's shape",
                              j, shapeStr(t.shape), shapeStr(out)));
  }
  if (a.dims.size() != rank - k)
    fail(where, fmt::format("dims {} has {} entries; the operand's {} axis(es) not in axes need "
                            "one each",
                            listStr(a.dims), a.dims.size(), rank - k));
  std::vector<bool> used(out.size(), false);
  size_t i = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (indexed[d]) continue;
    int64_t r = a.dims[i++];
    checkAxis(where, "gather dims entry", r, out.size());
    if (used[static_cast<size_t>(r)])
      fail(where, fmt::format("dims {} names result dimension {} twice", listStr(a.dims), r));
    used[static_cast<size_t>(r)] = true;
    if (x.shape[d] != out[static_cast<size_t>(r)])
      fail(where, fmt::format("dims {} maps operand axis {} (size {}) to result dimension {}, of "
                              "size {}",
                              listStr(a.dims), d, x.shape[d].str(), r,
                              out[static_cast<size_t>(r)].str()));
  }
  return {x.dtype, out};
}

TensorType inferReduce(const std::string& where, const TensorType& x, const ReduceAttrs& a) {
  bool logical = a.kind == ReduceKind::Any || a.kind == ReduceKind::All;
  if (logical != isBool(x.dtype))
    fail(where, fmt::format("reduce {} does not take dtype {}; any/all take bool, the others numbers",
                            reduceKindName(a.kind), dtypeName(x.dtype)));
  if (a.kind == ReduceKind::LogSumExp && !isFloat(x.dtype))
    fail(where, fmt::format("reduce logsumexp does not take dtype {}; it takes floats",
                            dtypeName(x.dtype)));
  if (a.axes.empty()) fail(where, "reduce needs at least one axis");
  for (size_t i = 0; i < a.axes.size(); ++i) {
    checkAxis(where, "reduce axis", a.axes[i], x.shape.size());
    if (i > 0 && a.axes[i] <= a.axes[i - 1])
      fail(where, fmt::format("reduce axes {} must be sorted and unique", listStr(a.axes)));
  }
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!std::binary_search(a.axes.begin(), a.axes.end(), static_cast<int64_t>(d))) out.push_back(x.shape[d]);
  return {x.dtype, out};
}

TensorType inferDot(const std::string& where, const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype)
    fail(where, fmt::format("operand 1 has dtype {} but operand 0 has dtype {}", dtypeName(b.dtype), dtypeName(a.dtype)));
  if (isBool(a.dtype)) fail(where, "dot does not take bool operands");
  if (a.shape.size() < 2 || a.shape.size() != b.shape.size())
    fail(where, fmt::format("dot needs operands of equal rank >= 2, got {} and {}", shapeStr(a.shape), shapeStr(b.shape)));
  size_t r = a.shape.size();
  for (size_t i = 0; i + 2 < r; ++i)
    if (a.shape[i] != b.shape[i])
      fail(where, fmt::format("batch dim {} differs: {} vs {}", i, a.shape[i].str(), b.shape[i].str()));
  if (a.shape[r - 1] != b.shape[r - 2])
    fail(where, fmt::format("contracting dims differ: operand 0 {} has K={} but operand 1 {} has K={}",
                            shapeStr(a.shape), a.shape[r - 1].str(), shapeStr(b.shape), b.shape[r - 2].str()));
  Shape out(a.shape.begin(), a.shape.end() - 1);
  out.push_back(b.shape[r - 1]);
  return {a.dtype, out};
}

} // namespace

TensorType inferType(const std::string& where, OpKind kind, const std::vector<const TensorType*>& ops,
                     const Attrs& attrs, const std::optional<TensorType>& declared) {
  checkOperandCount(where, kind, ops.size());
  TensorType result;
  switch (kind) {
  case OpKind::Parameter:
    result = requireDeclared(where, kind, declared);
    break;
  case OpKind::Constant: {
    result = requireDeclared(where, kind, declared);
    const auto& a = attrsOf<ConstantAttrs>(where, kind, attrs);
    if (a.values.empty()) fail(where, "constant needs at least one value");
    for (size_t i = 0; i < a.values.size(); ++i)
      checkValueFits(where, a.values.size() == 1 ? "value" : "values", result.dtype, a.values[i],
                     a.values.size() == 1 ? std::nullopt : std::optional<size_t>(i));
    if (a.values.size() > 1) {
      if (!isStatic(result.shape))
        fail(where, "a constant with more than one value needs a static shape");
      int64_t n = elementsOf(where, result.shape).size();
      if (static_cast<int64_t>(a.values.size()) != n)
        fail(where, fmt::format("constant has {} values but shape {} holds {}", a.values.size(), shapeStr(result.shape), n));
    }
    break;
  }
  case OpKind::Iota: {
    result = requireDeclared(where, kind, declared);
    checkAxis(where, "iota axis", attrsOf<IotaAttrs>(where, kind, attrs).axis, result.shape.size());
    if (isBool(result.dtype)) fail(where, "iota needs a numeric dtype");
    break;
  }
  case OpKind::Convert:
    result = {requireDeclared(where, kind, declared).dtype, ops[0]->shape};
    break;
  case OpKind::BroadcastInDim:
    result = inferBroadcast(where, *ops[0], attrsOf<BroadcastAttrs>(where, kind, attrs),
                            requireDeclared(where, kind, declared));
    break;
  case OpKind::Reshape: {
    const TensorType& d = requireDeclared(where, kind, declared);
    if (d.dtype != ops[0]->dtype)
      fail(where, fmt::format("result dtype {} differs from operand dtype {}", dtypeName(d.dtype), dtypeName(ops[0]->dtype)));
    Dim from = elementsOf(where, ops[0]->shape), to = elementsOf(where, d.shape);
    if (from != to)
      fail(where, fmt::format("cannot reshape {} ({} elements) into {} ({} elements)",
                              shapeStr(ops[0]->shape), from.str(), shapeStr(d.shape), to.str()));
    result = d;
    break;
  }
  case OpKind::Transpose: {
    const auto& a = attrsOf<TransposeAttrs>(where, kind, attrs);
    size_t rank = ops[0]->shape.size();
    std::vector<int64_t> sorted = a.perm;
    std::sort(sorted.begin(), sorted.end());
    bool isPerm = sorted.size() == rank;
    for (size_t i = 0; isPerm && i < rank; ++i) isPerm = sorted[i] == static_cast<int64_t>(i);
    if (!isPerm) fail(where, fmt::format("permutation {} is not a permutation of 0..{}", listStr(a.perm), rank == 0 ? 0 : rank - 1));
    Shape out;
    for (int64_t p : a.perm) out.push_back(ops[0]->shape[static_cast<size_t>(p)]);
    result = {ops[0]->dtype, out};
    break;
  }
  case OpKind::Slice:
    result = inferSlice(where, *ops[0], attrsOf<SliceAttrs>(where, kind, attrs));
    break;
  case OpKind::Concatenate:
    result = inferConcat(where, ops, attrsOf<ConcatAttrs>(where, kind, attrs));
    break;
  case OpKind::Pad:
    result = inferPad(where, *ops[0], attrsOf<PadAttrs>(where, kind, attrs));
    checkValueFits(where, "value", result.dtype, attrsOf<PadAttrs>(where, kind, attrs).value);
    break;
  case OpKind::Gather:
    result = inferGather(where, ops, attrsOf<GatherAttrs>(where, kind, attrs));
    break;
  case OpKind::Reduce:
    result = inferReduce(where, *ops[0], attrsOf<ReduceAttrs>(where, kind, attrs));
    break;
  case OpKind::Dot:
    result = inferDot(where, *ops[0], *ops[1]);
    break;
  default:
    result = inferElementwise(where, kind, ops, attrs);
    break;
  }
  if (declared && !(*declared == result))
    fail(where, fmt::format("declared type {} differs from the inferred type {}", declared->str(),
                            result.str()));
  for (const Dim& d : result.shape)
    if (d.isStatic() && d.size() < 0) fail(where, fmt::format("negative size {} in {}", d.size(), shapeStr(result.shape)));
  elementsOf(where, result.shape); // rejects static sizes whose element count overflows int64
  return result;
}

} // namespace weft::ir
