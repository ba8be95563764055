#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <new>

#include "weft/error.h"

namespace weft::ir {
namespace {

using Sizes = std::vector<int64_t>;

/// A computed tensor: static shape and row-major elements, each already rounded to its dtype.
/// Floats and bools live in `data` (bools as 0/1); integer dtypes live in `ints`, exactly, as
/// two's-complement values wrapped to their width (i64 included, which a double cannot hold).
struct Value {
  Sizes shape;
  DType dtype = DType::f32;
  std::vector<double> data;
  std::vector<int64_t> ints;
  bool integer() const { return isInteger(dtype); }
};

Sizes rowMajorStrides(const Sizes& shape) {
  Sizes strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Where the elements of a multi-index space live in a flat buffer:
/// index idx is at base + sum(idx[k] * strides[k]). Stride 0 repeats an element (broadcast).
struct View {
  int64_t base = 0;
  Sizes strides;
};

View contiguous(const Sizes& shape) {
  return {0, rowMajorStrides(shape)};
}

/// Calls fn(a, b) for every multi-index of `shape` in row-major order, where a and b are the
/// index's offsets in the views va and vb. Walks like an odometer, so each step is O(1).
template <class F> void forEachIndex(const Sizes& shape, const View& va, const View& vb, F&& fn) {
  if (checkedProduct(shape) == 0) return;
  size_t rank = shape.size();
  if (rank == 0) {
    fn(va.base, vb.base);
    return;
  }
  Sizes idx(rank, 0);
  int64_t a = va.base, b = vb.base;
  const int64_t inner = shape[rank - 1], sa = va.strides[rank - 1], sb = vb.strides[rank - 1];
  for (;;) {
    for (int64_t i = 0; i < inner; ++i)
      fn(a + i * sa, b + i * sb);
    size_t d = rank - 1; // the innermost axis is done; carry into the outer ones
    for (;;) {
      if (d == 0) return;
      --d;
      a += va.strides[d];
      b += vb.strides[d];
      if (++idx[d] < shape[d]) break;
      a -= idx[d] * va.strides[d];
      b -= idx[d] * vb.strides[d];
      idx[d] = 0;
    }
  }
}

/// The multi-index of row-major element `flat`, as text: "[1, 2]".
std::string indexStr(const Sizes& shape, int64_t flat) {
  Sizes idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

/// Rounds every element to the value's dtype, as a store of that dtype keeps it.
void roundInPlace(Value& v) {
  switch (v.dtype) {
  case DType::f64:
    return;
  case DType::f32:
    for (double& x : v.data)
      x = static_cast<float>(x);
    return;
  case DType::i8:
  case DType::i32:
    for (int64_t& x : v.ints)
      x = wrapToDType(x, v.dtype);
    return;
  case DType::i64:
    return;
  default:
    for (double& x : v.data)
      x = roundToDType(x, v.dtype);
    return;
  }
}

/// IEEE 754-2019 maximum/minimum: NaN if either operand is NaN, and +0 > -0.
double ieeeMaximum(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double ieeeMinimum(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
double truth(bool b) {
  return b ? 1.0 : 0.0;
}

// Two's-complement arithmetic on int64 (wrapped to the dtype's width on store).
int64_t wrapAdd(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
}
int64_t wrapSub(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
}
int64_t wrapMul(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
}
int64_t wrapNeg(int64_t x) {
  return wrapSub(0, x);
}

/// The dtype's smallest and largest value, as int64.
int64_t intMin(DType t) {
  switch (t) {
  case DType::i8: return std::numeric_limits<int8_t>::min();
  case DType::i32: return std::numeric_limits<int32_t>::min();
  default: return std::numeric_limits<int64_t>::min();
  }
}
int64_t intMax(DType t) {
  switch (t) {
  case DType::i8: return std::numeric_limits<int8_t>::max();
  case DType::i32: return std::numeric_limits<int32_t>::max();
  default: return std::numeric_limits<int64_t>::max();
  }
}

/// A float as an integer of `t`: truncate toward zero, saturate, NaN gives 0 (llvm.fptosi.sat).
int64_t floatToInt(double v, DType t) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(intMin(t))) return intMin(t);
  if (v >= static_cast<double>(intMax(t))) return intMax(t); // 2^63 itself saturates too
  return static_cast<int64_t>(std::trunc(v));
}

/// An integer as a float of `t`, rounded once to f32 (the compute type of f32, f16 and bf16)
/// or to f64, then to `t`, as codegen's sitofp then store does.
double intToFloat(int64_t v, DType t) {
  if (t == DType::f64) return static_cast<double>(v);
  return roundToDType(static_cast<double>(static_cast<float>(v)), t);
}

Value sameShape(const Value& x, DType t) {
  Value out{x.shape, t, {}, {}};
  size_t n = x.integer() ? x.ints.size() : x.data.size();
  if (isInteger(t))
    out.ints.resize(n);
  else
    out.data.resize(n);
  return out;
}

// --- elementwise ---------------------------------------------------------------------

template <class F> Value map1(const Value& x, F f) {
  Value out = sameShape(x, x.dtype);
  for (size_t i = 0; i < x.data.size(); ++i)
    out.data[i] = f(x.data[i]);
  return out;
}
template <class F> Value map1Int(const Value& x, F f) {
  Value out = sameShape(x, x.dtype);
  for (size_t i = 0; i < x.ints.size(); ++i)
    out.ints[i] = f(x.ints[i]);
  return out;
}

template <class F> Value map2(const Value& a, const Value& b, DType t, F f) {
  Value out = sameShape(a, t);
  for (size_t i = 0; i < a.data.size(); ++i)
    out.data[i] = f(a.data[i], b.data[i]);
  return out;
}
template <class F> Value map2Int(const Value& a, const Value& b, F f) {
  Value out = sameShape(a, a.dtype);
  for (size_t i = 0; i < a.ints.size(); ++i)
    out.ints[i] = f(a.ints[i], b.ints[i]);
  return out;
}

Value evalConvert(const Value& x, DType to) {
  Value out = sameShape(x, to);
  size_t n = x.integer() ? x.ints.size() : x.data.size();
  for (size_t i = 0; i < n; ++i) {
    if (x.integer()) {
      int64_t v = x.ints[i];
      if (isInteger(to))
        out.ints[i] = v; // wrapped to the width on store
      else if (isBool(to))
        out.data[i] = truth(v != 0);
      else
        out.data[i] = intToFloat(v, to);
    } else {
      double v = x.data[i];
      if (isInteger(to))
        out.ints[i] = isBool(x.dtype) ? static_cast<int64_t>(v) : floatToInt(v, to);
      else if (isBool(to))
        out.data[i] = truth(v != 0); // NaN converts to true
      else
        out.data[i] = v; // rounded to `to` on store
    }
  }
  return out;
}

Value evalUnaryInt(const Node& n, const Value& x) {
  switch (n.kind) {
  case OpKind::Neg:
    return map1Int(x, wrapNeg);
  case OpKind::Abs:
    return map1Int(x, [](int64_t v) { return v < 0 ? wrapNeg(v) : v; });
  case OpKind::Sign:
    return map1Int(x, [](int64_t v) -> int64_t { return (v > 0) - (v < 0); });
  case OpKind::Not:
    return map1Int(x, [](int64_t v) { return ~v; });
  default:
    break;
  }
  throw Error(fmt::format("{}: not a unary integer op", describe(n)));
}

Value evalUnary(const Node& n, const Value& x) {
  DType t = n.type.dtype;
  if (n.kind == OpKind::Convert) return evalConvert(x, t);
  if (x.integer()) return evalUnaryInt(n, x);
  switch (n.kind) {
  case OpKind::Neg:
    return map1(x, [](double v) { return -v; });
  case OpKind::Abs:
    return map1(x, [](double v) { return std::fabs(v); });
  case OpKind::Exp:
    return map1(x, [](double v) { return std::exp(v); });
  case OpKind::Log:
    return map1(x, [](double v) { return std::log(v); });
  case OpKind::Tanh:
    return map1(x, [](double v) { return std::tanh(v); });
  case OpKind::Sqrt:
    return map1(x, [](double v) { return std::sqrt(v); });
  case OpKind::Rsqrt:
    return map1(x, [](double v) { return 1.0 / std::sqrt(v); });
  case OpKind::Erf:
    return map1(x, [](double v) { return std::erf(v); });
  case OpKind::Sigmoid:
    return map1(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  case OpKind::Sin:
    return map1(x, [](double v) { return std::sin(v); });
  case OpKind::Cos:
    return map1(x, [](double v) { return std::cos(v); });
  case OpKind::Floor:
    return map1(x, [](double v) { return std::floor(v); });
  case OpKind::Ceil:
    return map1(x, [](double v) { return std::ceil(v); });
  case OpKind::Reciprocal:
    return map1(x, [](double v) { return 1.0 / v; });
  case OpKind::Sign:
    return map1(x, [](double v) { return std::isnan(v) ? v : truth(v > 0) - truth(v < 0); });
  case OpKind::Not:
    return map1(x, [](double v) { return truth(v == 0); }); // bool
  default:
    break;
  }
  throw Error(fmt::format("{}: not a unary op", describe(n)));
}

template <class Cmp> Value compareWith(const Value& a, const Value& b, Cmp cmp) {
  Value out = sameShape(a, DType::boolean);
  if (a.integer()) {
    for (size_t i = 0; i < a.ints.size(); ++i)
      out.data[i] = truth(cmp(a.ints[i], b.ints[i]));
  } else {
    for (size_t i = 0; i < a.data.size(); ++i)
      out.data[i] = truth(cmp(a.data[i], b.data[i]));
  }
  return out;
}

Value evalCompare(const Node& n, const Value& a, const Value& b) {
  switch (n.attr<CompareAttrs>().dir) {
  case CompareDir::EQ:
    return compareWith(a, b, [](auto x, auto y) { return x == y; });
  case CompareDir::NE:
    return compareWith(a, b, [](auto x, auto y) { return x != y; });
  case CompareDir::LT:
    return compareWith(a, b, [](auto x, auto y) { return x < y; });
  case CompareDir::LE:
    return compareWith(a, b, [](auto x, auto y) { return x <= y; });
  case CompareDir::GT:
    return compareWith(a, b, [](auto x, auto y) { return x > y; });
  case CompareDir::GE:
    return compareWith(a, b, [](auto x, auto y) { return x >= y; });
  }
  throw Error(fmt::format("{}: unknown comparison", describe(n)));
}

Value evalBinaryInt(const Node& n, const Value& a, const Value& b) {
  auto checkDivisor = [&](const Value& divisor) {
    for (size_t i = 0; i < divisor.ints.size(); ++i)
      if (divisor.ints[i] == 0)
        throw InputError(
            fmt::format("{}: integer division by zero at element {} of operand 1; no result is "
                        "right (weft's kernels give -1 for x / 0 and x for x % 0), so keep "
                        "integer divisors non-zero",
                        describe(n), indexStr(divisor.shape, static_cast<int64_t>(i))));
  };
  switch (n.kind) {
  case OpKind::Add:
    return map2Int(a, b, wrapAdd);
  case OpKind::Sub:
    return map2Int(a, b, wrapSub);
  case OpKind::Mul:
    return map2Int(a, b, wrapMul);
  case OpKind::Max:
    return map2Int(a, b, [](int64_t x, int64_t y) { return std::max(x, y); });
  case OpKind::Min:
    return map2Int(a, b, [](int64_t x, int64_t y) { return std::min(x, y); });
  case OpKind::Div:
    checkDivisor(b);
    // Truncates toward zero; MIN / -1 wraps to MIN (the one overflow).
    return map2Int(a, b, [](int64_t x, int64_t y) { return y == -1 ? wrapNeg(x) : x / y; });
  case OpKind::Rem:
    checkDivisor(b);
    return map2Int(a, b, [](int64_t x, int64_t y) -> int64_t { return y == -1 ? 0 : x % y; });
  case OpKind::And:
    return map2Int(a, b, [](int64_t x, int64_t y) { return x & y; });
  case OpKind::Or:
    return map2Int(a, b, [](int64_t x, int64_t y) { return x | y; });
  default:
    break;
  }
  throw Error(fmt::format("{}: not a binary integer op", describe(n)));
}

Value evalBinary(const Node& n, const Value& a, const Value& b) {
  if (n.kind == OpKind::Compare) return evalCompare(n, a, b);
  if (a.integer()) return evalBinaryInt(n, a, b);
  DType t = n.type.dtype;
  switch (n.kind) {
  case OpKind::Add:
    return map2(a, b, t, [](double x, double y) { return x + y; });
  case OpKind::Sub:
    return map2(a, b, t, [](double x, double y) { return x - y; });
  case OpKind::Mul:
    return map2(a, b, t, [](double x, double y) { return x * y; });
  case OpKind::Pow:
    return map2(a, b, t, [](double x, double y) { return std::pow(x, y); });
  case OpKind::Max:
    return map2(a, b, t, ieeeMaximum);
  case OpKind::Min:
    return map2(a, b, t, ieeeMinimum);
  case OpKind::Div:
    return map2(a, b, t, [](double x, double y) { return x / y; });
  case OpKind::Rem:
    return map2(a, b, t, [](double x, double y) { return std::fmod(x, y); });
  case OpKind::And: // bool
    return map2(a, b, t, [](double x, double y) { return truth(x != 0 && y != 0); });
  case OpKind::Or:
    return map2(a, b, t, [](double x, double y) { return truth(x != 0 || y != 0); });
  default:
    break;
  }
  throw Error(fmt::format("{}: not a binary op", describe(n)));
}

Value evalTernary(const Node& n, const Value& a, const Value& b, const Value& c) {
  if (n.kind == OpKind::Select) {
    Value out = sameShape(b, b.dtype);
    for (size_t i = 0; i < a.data.size(); ++i) {
      if (b.integer())
        out.ints[i] = a.data[i] != 0 ? b.ints[i] : c.ints[i];
      else
        out.data[i] = a.data[i] != 0 ? b.data[i] : c.data[i];
    }
    return out;
  }
  // clamp(lo, x, hi) = min(max(x, lo), hi)
  Value out = sameShape(b, b.dtype);
  if (b.integer()) {
    for (size_t i = 0; i < b.ints.size(); ++i)
      out.ints[i] = std::min(std::max(b.ints[i], a.ints[i]), c.ints[i]);
  } else {
    for (size_t i = 0; i < b.data.size(); ++i)
      out.data[i] = ieeeMinimum(ieeeMaximum(b.data[i], a.data[i]), c.data[i]);
  }
  return out;
}

// --- sources -------------------------------------------------------------------------

/// A value of `shape` with every element `v`, exactly for integer dtypes (a double cannot hold
/// INT64_MAX); `filled` takes a double that the verifier has checked fits the dtype.
Value filledExact(const Sizes& shape, DType t, int64_t v) {
  Value out{shape, t, {}, {}};
  auto n = static_cast<size_t>(checkedProduct(shape));
  if (isInteger(t))
    out.ints.assign(n, v);
  else
    out.data.assign(n, static_cast<double>(v));
  return out;
}
Value filled(const Sizes& shape, DType t, double v) {
  if (isInteger(t)) return filledExact(shape, t, static_cast<int64_t>(v));
  return Value{shape, t, std::vector<double>(static_cast<size_t>(checkedProduct(shape)), v), {}};
}

Value evalConstant(const Node& n, const Sizes& shape) {
  const auto& values = n.attr<ConstantAttrs>().values;
  if (values.size() == 1) return filled(shape, n.type.dtype, values[0]);
  Value out{shape, n.type.dtype, {}, {}};
  if (out.integer())
    for (double v : values)
      out.ints.push_back(static_cast<int64_t>(v));
  else
    out.data = values;
  return out;
}

Value evalIota(const Node& n, const Sizes& shape) {
  Value out = filled(shape, n.type.dtype, 0);
  // The second view counts along the iota axis only, so its offset is the element's value.
  View along{0, Sizes(shape.size(), 0)};
  along.strides[static_cast<size_t>(n.attr<IotaAttrs>().axis)] = 1;
  forEachIndex(shape, contiguous(shape), along, [&](int64_t o, int64_t v) {
    if (out.integer())
      out.ints[static_cast<size_t>(o)] = v;
    else
      out.data[static_cast<size_t>(o)] = static_cast<double>(v);
  });
  return out;
}

// --- broadcast and layout ------------------------------------------------------------

/// out[idx] = x[view(idx)] for every index of `shape`.
Value gather(const Value& x, const Sizes& shape, const View& view) {
  Value out = filled(shape, x.dtype, 0);
  forEachIndex(shape, contiguous(shape), view, [&](int64_t o, int64_t i) {
    if (x.integer())
      out.ints[static_cast<size_t>(o)] = x.ints[static_cast<size_t>(i)];
    else
      out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(i)];
  });
  return out;
}

/// out[view(idx)] = x[idx] for every index of x.
void scatter(const Value& x, Value& out, const View& view) {
  forEachIndex(x.shape, contiguous(x.shape), view, [&](int64_t i, int64_t o) {
    if (x.integer())
      out.ints[static_cast<size_t>(o)] = x.ints[static_cast<size_t>(i)];
    else
      out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(i)];
  });
}

Value evalBroadcast(const Node& n, const Value& x, const Sizes& shape) {
  const auto& dims = n.attr<BroadcastAttrs>().dims;
  Sizes xStrides = rowMajorStrides(x.shape);
  View view{0, Sizes(shape.size(), 0)}; // result axes the operand lacks repeat it: stride 0
  for (size_t i = 0; i < dims.size(); ++i)
    view.strides[static_cast<size_t>(dims[i])] = x.shape[i] == 1 ? 0 : xStrides[i];
  return gather(x, shape, view);
}

Value evalTranspose(const Node& n, const Value& x, const Sizes& shape) {
  const auto& perm = n.attr<TransposeAttrs>().perm;
  Sizes xStrides = rowMajorStrides(x.shape);
  View view{0, Sizes(shape.size())};
  for (size_t i = 0; i < perm.size(); ++i)
    view.strides[i] = xStrides[static_cast<size_t>(perm[i])];
  return gather(x, shape, view);
}

Value evalSlice(const Node& n, const Value& x, const Sizes& shape) {
  const auto& a = n.attr<SliceAttrs>(); // limits are implied by the result shape (-1 included)
  Sizes xStrides = rowMajorStrides(x.shape);
  View view{0, Sizes(shape.size())};
  for (size_t i = 0; i < shape.size(); ++i) {
    view.base += a.starts[i] * xStrides[i];
    view.strides[i] = a.strides[i] * xStrides[i];
  }
  return gather(x, shape, view);
}

Value evalConcatenate(const Node& n, const std::vector<const Value*>& xs, const Sizes& shape) {
  auto axis = static_cast<size_t>(n.attr<ConcatAttrs>().axis);
  Value out = filled(shape, n.type.dtype, 0);
  View view = contiguous(shape);
  for (const Value* x : xs) {
    scatter(*x, out, view);
    view.base += x->shape[axis] * view.strides[axis];
  }
  return out;
}

Value evalPad(const Node& n, const Value& x, const Sizes& shape) {
  const auto& a = n.attr<PadAttrs>();
  Value out = filled(shape, n.type.dtype, a.value);
  View view = contiguous(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    view.base += a.low[i] * view.strides[i];
  scatter(x, out, view);
  return out;
}

/// result[o] = operand[p]: p along axes[j] from index operand j at o, along the other axes the
/// result's coordinates dims[i]; an index outside its axis gives 0 (false).
Value evalGather(const Node& n, const std::vector<const Value*>& ops, const Sizes& shape) {
  const auto& a = n.attr<GatherAttrs>();
  const Value& x = *ops[0];
  Sizes xStrides = rowMajorStrides(x.shape);
  // The operand offset from the result index's own coordinates (the non-indexed axes).
  View fromResult{0, Sizes(shape.size(), 0)};
  std::vector<int64_t> resultDim = gatherResultDims(a, x.shape.size());
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (resultDim[d] >= 0) fromResult.strides[static_cast<size_t>(resultDim[d])] = xStrides[d];
  Value out = filled(shape, n.type.dtype, 0);
  forEachIndex(shape, fromResult, contiguous(shape), [&](int64_t base, int64_t o) {
    int64_t at = base;
    for (size_t j = 0; j < a.axes.size(); ++j) {
      int64_t p = ops[j + 1]->ints[static_cast<size_t>(o)];
      auto axis = static_cast<size_t>(a.axes[j]);
      if (p < 0 || p >= x.shape[axis]) return; // out of range: the element stays 0
      at += p * xStrides[axis];
    }
    if (x.integer())
      out.ints[static_cast<size_t>(o)] = x.ints[static_cast<size_t>(at)];
    else
      out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(at)];
  });
  return out;
}

// --- reduce and dot ------------------------------------------------------------------

double reduceIdentity(ReduceKind k) {
  switch (k) {
  case ReduceKind::Sum:
    return 0.0;
  case ReduceKind::Max:
    return -std::numeric_limits<double>::infinity();
  case ReduceKind::Min:
    return std::numeric_limits<double>::infinity();
  case ReduceKind::Prod:
    return 1.0;
  case ReduceKind::Any:
    return 0.0;
  case ReduceKind::All:
    return 1.0;
  case ReduceKind::LogSumExp:
    return -std::numeric_limits<double>::infinity();
  }
  return 0.0;
}

/// log(exp(a) + exp(b)) without overflow; equal operands (±inf included) give a + log 2, a NaN
/// gives NaN.
double logSumExp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return a + std::log(2.0);
  double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

int64_t reduceIdentityInt(ReduceKind k, DType t) {
  switch (k) {
  case ReduceKind::Max:
    return intMin(t);
  case ReduceKind::Min:
    return intMax(t);
  case ReduceKind::Prod:
  case ReduceKind::All:
    return 1;
  default:
    return 0;
  }
}

Value evalReduce(const Node& n, const Value& x, const Sizes& shape) {
  const auto& a = n.attr<ReduceAttrs>();
  Value out = x.integer() ? filledExact(shape, x.dtype, reduceIdentityInt(a.kind, x.dtype))
                          : filled(shape, x.dtype, reduceIdentity(a.kind));
  // Each operand axis maps to its result axis; reduced axes all land on the same element.
  Sizes outStrides = rowMajorStrides(shape);
  View view{0, Sizes(x.shape.size(), 0)};
  for (size_t d = 0, o = 0; d < x.shape.size(); ++d)
    if (!std::binary_search(a.axes.begin(), a.axes.end(), static_cast<int64_t>(d)))
      view.strides[d] = outStrides[o++];
  // acc[o] = combine(acc[o], in[i]) over the floats (data) or the integers (ints).
  auto accumulateIn = [&](auto& acc, const auto& in, auto combine) {
    forEachIndex(x.shape, contiguous(x.shape), view, [&](int64_t i, int64_t o) {
      acc[static_cast<size_t>(o)] = combine(acc[static_cast<size_t>(o)], in[static_cast<size_t>(i)]);
    });
  };
  auto accumulate = [&](auto combine) { accumulateIn(out.data, x.data, combine); };
  auto accumulateInt = [&](auto combine) { accumulateIn(out.ints, x.ints, combine); };
  if (x.integer()) {
    switch (a.kind) {
    case ReduceKind::Sum:
      accumulateInt(wrapAdd);
      break;
    case ReduceKind::Prod:
      accumulateInt(wrapMul);
      break;
    case ReduceKind::Max:
      accumulateInt([](int64_t s, int64_t v) { return std::max(s, v); });
      break;
    case ReduceKind::Min:
      accumulateInt([](int64_t s, int64_t v) { return std::min(s, v); });
      break;
    default:
      throw Error(fmt::format("{}: {} takes bool operands", describe(n), reduceKindName(a.kind)));
    }
    return out;
  }
  switch (a.kind) {
  case ReduceKind::Sum:
    accumulate([](double s, double v) { return s + v; });
    break;
  case ReduceKind::Max:
    accumulate(ieeeMaximum);
    break;
  case ReduceKind::Min:
    accumulate(ieeeMinimum);
    break;
  case ReduceKind::Prod:
    accumulate([](double s, double v) { return s * v; });
    break;
  case ReduceKind::Any:
    accumulate([](double s, double v) { return truth(s != 0 || v != 0); });
    break;
  case ReduceKind::All:
    accumulate([](double s, double v) { return truth(s != 0 && v != 0); });
    break;
  case ReduceKind::LogSumExp:
    accumulate(logSumExp);
    break;
  }
  return out;
}

/// [..., M, K] x [..., K, N] -> [..., M, N], accumulated in double (floats) or wrapping int64.
template <class T, class Mul, class Add>
void matmul(const std::vector<T>& a, const std::vector<T>& b, std::vector<T>& c, int64_t batches,
            int64_t m, int64_t k, int64_t nn, Mul mul, Add add) {
  for (int64_t p = 0; p < batches; ++p) {
    const T* A = a.data() + p * m * k;
    const T* B = b.data() + p * k * nn;
    T* C = c.data() + p * m * nn;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t l = 0; l < nn; ++l)
          C[i * nn + l] = add(C[i * nn + l], mul(A[i * k + j], B[j * nn + l]));
  }
}

Value evalDot(const Node& n, const Value& a, const Value& b, const Sizes& shape) {
  size_t r = a.shape.size();
  int64_t m = a.shape[r - 2], k = a.shape[r - 1], nn = b.shape[r - 1];
  int64_t batches = checkedProduct(Sizes(a.shape.begin(), a.shape.end() - 2));
  Value out = filled(shape, n.type.dtype, 0);
  if (a.integer())
    matmul(a.ints, b.ints, out.ints, batches, m, k, nn, wrapMul, wrapAdd);
  else
    matmul(a.data, b.data, out.data, batches, m, k, nn, std::multiplies<double>(),
           std::plus<double>());
  return out;
}

// --- driver --------------------------------------------------------------------------

Value evalNode(const Node& n, const std::vector<const Value*>& ops, const Sizes& shape) {
  switch (n.kind) {
  case OpKind::Parameter:
    break; // bound by the caller
  case OpKind::Constant:
    return evalConstant(n, shape);
  case OpKind::Iota:
    return evalIota(n, shape);
  case OpKind::Select:
  case OpKind::Clamp:
    return evalTernary(n, *ops[0], *ops[1], *ops[2]);
  case OpKind::BroadcastInDim:
    return evalBroadcast(n, *ops[0], shape);
  case OpKind::Reshape: {
    Value v = *ops[0];
    v.shape = shape;
    return v;
  }
  case OpKind::Transpose:
    return evalTranspose(n, *ops[0], shape);
  case OpKind::Slice:
    return evalSlice(n, *ops[0], shape);
  case OpKind::Concatenate:
    return evalConcatenate(n, ops, shape);
  case OpKind::Pad:
    return evalPad(n, *ops[0], shape);
  case OpKind::Gather:
    return evalGather(n, ops, shape);
  case OpKind::Reduce:
    return evalReduce(n, *ops[0], shape);
  case OpKind::Dot:
    return evalDot(n, *ops[0], *ops[1], shape);
  default:
    if (isUnary(n.kind)) return evalUnary(n, *ops[0]);
    if (isBinary(n.kind)) return evalBinary(n, *ops[0], *ops[1]);
    break;
  }
  throw Error(fmt::format("{}: the interpreter cannot evaluate this op", describe(n)));
}

std::vector<Sizes> evaluateShapes(const Graph& g, const Binding& binding) {
  std::vector<Sizes> shapes;
  shapes.reserve(g.size());
  for (const Node& n : g.nodes()) {
    try {
      shapes.push_back(evaluate(n.type.shape, binding));
    } catch (const InputError& e) {
      throw InputError(
          fmt::format("{}: shape {}: {}", describe(n), shapeStr(n.type.shape), e.what()));
    }
  }
  return shapes;
}

Value readInput(const Node& param, const Sizes& shape, const HostTensor& t) {
  std::string expected = fmt::format("{}[{}]", dtypeName(param.type.dtype), fmt::join(shape, ", "));
  if (t.dtype != param.type.dtype || t.shape != shape)
    throw InputError(
        fmt::format("input \"{}\": expected {}, got {}", param.name, expected, t.typeStr()));
  int64_t count = checkedProduct(shape);
  if (t.bytes.size() != static_cast<size_t>(count) * static_cast<size_t>(dtypeBytes(t.dtype)))
    throw InputError(fmt::format("input \"{}\": {} needs {} bytes, the tensor holds {}", param.name,
                                 expected, count * dtypeBytes(t.dtype), t.bytes.size()));
  Value v = filled(shape, t.dtype, 0);
  for (int64_t i = 0; i < count; ++i) {
    if (v.integer())
      v.ints[static_cast<size_t>(i)] = t.getInt(i);
    else
      v.data[static_cast<size_t>(i)] = t.get(i);
  }
  return v;
}

} // namespace

std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs,
                                  const Binding& binding) {
  if (inputs.size() != g.inputs().size()) {
    std::vector<std::string> names;
    for (NodeId id : g.inputs())
      names.push_back(g.node(id).name);
    throw InputError(fmt::format("the graph takes {} input(s) ({}), got {}", g.inputs().size(),
                                 fmt::join(names, ", "), inputs.size()));
  }
  std::vector<Sizes> shapes = evaluateShapes(g, binding);
  std::vector<Value> values(g.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeId id = g.inputs()[i];
    values[static_cast<size_t>(id)] =
        readInput(g.node(id), shapes[static_cast<size_t>(id)], inputs[i]);
  }

  // Only live nodes run; a value is freed after its last user has run, unless it is an output.
  std::vector<bool> live = liveNodes(g);
  std::vector<NodeId> lastUse(g.size(), -1);
  for (const Node& n : g.nodes())
    if (live[static_cast<size_t>(n.id)])
      for (NodeId o : n.operands)
        lastUse[static_cast<size_t>(o)] = n.id;
  for (NodeId o : g.outputs())
    lastUse[static_cast<size_t>(o)] = static_cast<NodeId>(g.size());

  for (const Node& n : g.nodes()) {
    auto id = static_cast<size_t>(n.id);
    if (!live[id] || n.kind == OpKind::Parameter) continue;
    std::vector<const Value*> ops;
    for (NodeId o : n.operands)
      ops.push_back(&values[static_cast<size_t>(o)]);
    int64_t elements = checkedProduct(shapes[id]);
    if (elements > kMaxInterpretedElements)
      throw InputError(fmt::format("{}: the reference interpreter holds values of up to {} "
                                   "elements; this one has {} ({})",
                                   describe(n), kMaxInterpretedElements, elements,
                                   fmt::join(shapes[id], " x ")));
    Value v;
    try {
      v = evalNode(n, ops, shapes[id]);
    } catch (const std::bad_alloc&) {
      throw InputError(fmt::format("{}: the reference interpreter ran out of memory computing "
                                   "its {} elements",
                                   describe(n), elements));
    }
    v.dtype = n.type.dtype;
    roundInPlace(v);
    values[id] = std::move(v);
    for (NodeId o : n.operands)
      if (lastUse[static_cast<size_t>(o)] == n.id) values[static_cast<size_t>(o)] = Value{};
  }

  std::vector<HostTensor> outputs;
  for (NodeId id : g.outputs()) {
    const Value& v = values[static_cast<size_t>(id)];
    HostTensor t(g.node(id).type.dtype, v.shape);
    if (v.integer())
      for (size_t i = 0; i < v.ints.size(); ++i)
        t.setInt(static_cast<int64_t>(i), v.ints[i]);
    else
      for (size_t i = 0; i < v.data.size(); ++i)
        t.set(static_cast<int64_t>(i), v.data[i]);
    outputs.push_back(std::move(t));
  }
  return outputs;
}

} // namespace weft::ir
