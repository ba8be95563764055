#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "weft/error.h"

namespace weft::ir {
namespace {

using Sizes = std::vector<int64_t>;

/// A computed tensor: static shape and row-major elements, each already rounded to its dtype.
struct Value {
  Sizes shape;
  std::vector<double> data;
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

void roundInPlace(std::vector<double>& data, DType t) {
  switch (t) {
  case DType::f64:
    return;
  case DType::f32:
    for (double& v : data)
      v = static_cast<float>(v);
    return;
  default:
    for (double& v : data)
      v = roundToDType(v, t);
    return;
  }
}

double nanMax(double a, double b) {
  return (std::isnan(a) || a > b) ? a : b;
}
double nanMin(double a, double b) {
  return (std::isnan(a) || a < b) ? a : b;
}
double truth(bool b) {
  return b ? 1.0 : 0.0;
}

/// An integer-valued double as int64 (saturating: 2^63 itself is what a saturated i64 holds).
int64_t asInt(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (v >= kTwo63) return std::numeric_limits<int64_t>::max();
  if (v < -kTwo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// --- elementwise ---------------------------------------------------------------------

template <class F> Value map1(const Value& x, F f) {
  Value out{x.shape, std::vector<double>(x.data.size())};
  for (size_t i = 0; i < x.data.size(); ++i)
    out.data[i] = f(x.data[i]);
  return out;
}

template <class F> Value map2(const Value& a, const Value& b, F f) {
  Value out{a.shape, std::vector<double>(a.data.size())};
  for (size_t i = 0; i < a.data.size(); ++i)
    out.data[i] = f(a.data[i], b.data[i]);
  return out;
}

Value evalUnary(const Node& n, const Value& x) {
  DType t = n.type.dtype;
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
    if (isBool(t)) return map1(x, [](double v) { return truth(v == 0); });
    return map1(x, [](double v) { return static_cast<double>(~asInt(v)); });
  case OpKind::Convert:
    return x; // the conversion is the rounding on store
  default:
    break;
  }
  throw Error(fmt::format("{}: not a unary op", describe(n)));
}

Value evalBinary(const Node& n, const Value& a, const Value& b) {
  DType t = n.kind == OpKind::Compare ? DType::f64 : n.type.dtype;
  bool integer = isInteger(t);
  auto checkDivisor = [&](const Value& divisor) {
    for (size_t i = 0; i < divisor.data.size(); ++i)
      if (divisor.data[i] == 0)
        throw InputError(
            fmt::format("{}: integer division by zero at element {} of operand 1; a GPU gives no "
                        "defined result, so keep integer divisors non-zero",
                        describe(n), indexStr(divisor.shape, static_cast<int64_t>(i))));
  };
  switch (n.kind) {
  case OpKind::Add:
    return map2(a, b, [](double x, double y) { return x + y; });
  case OpKind::Sub:
    return map2(a, b, [](double x, double y) { return x - y; });
  case OpKind::Mul:
    return map2(a, b, [](double x, double y) { return x * y; });
  case OpKind::Pow:
    return map2(a, b, [](double x, double y) { return std::pow(x, y); });
  case OpKind::Max:
    return map2(a, b, nanMax);
  case OpKind::Min:
    return map2(a, b, nanMin);
  case OpKind::Div:
    if (!integer) return map2(a, b, [](double x, double y) { return x / y; });
    checkDivisor(b);
    // int64 arithmetic truncates toward zero; INT64_MIN / -1 is the one overflow.
    return map2(a, b, [](double x, double y) {
      return asInt(y) == -1 ? -x : static_cast<double>(asInt(x) / asInt(y));
    });
  case OpKind::Rem:
    if (!integer) return map2(a, b, [](double x, double y) { return std::fmod(x, y); });
    checkDivisor(b);
    return map2(a, b, [](double x, double y) {
      return asInt(y) == -1 ? 0.0 : static_cast<double>(asInt(x) % asInt(y));
    });
  case OpKind::And:
    if (isBool(t)) return map2(a, b, [](double x, double y) { return truth(x != 0 && y != 0); });
    return map2(a, b, [](double x, double y) { return static_cast<double>(asInt(x) & asInt(y)); });
  case OpKind::Or:
    if (isBool(t)) return map2(a, b, [](double x, double y) { return truth(x != 0 || y != 0); });
    return map2(a, b, [](double x, double y) { return static_cast<double>(asInt(x) | asInt(y)); });
  case OpKind::Compare:
    switch (n.attr<CompareAttrs>().dir) {
    case CompareDir::EQ:
      return map2(a, b, [](double x, double y) { return truth(x == y); });
    case CompareDir::NE:
      return map2(a, b, [](double x, double y) { return truth(x != y); });
    case CompareDir::LT:
      return map2(a, b, [](double x, double y) { return truth(x < y); });
    case CompareDir::LE:
      return map2(a, b, [](double x, double y) { return truth(x <= y); });
    case CompareDir::GT:
      return map2(a, b, [](double x, double y) { return truth(x > y); });
    case CompareDir::GE:
      return map2(a, b, [](double x, double y) { return truth(x >= y); });
    }
    break;
  default:
    break;
  }
  throw Error(fmt::format("{}: not a binary op", describe(n)));
}

Value evalTernary(const Node& n, const Value& a, const Value& b, const Value& c) {
  Value out{a.shape, std::vector<double>(a.data.size())};
  if (n.kind == OpKind::Select) {
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = a.data[i] != 0 ? b.data[i] : c.data[i];
  } else { // clamp(lo, x, hi)
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = nanMin(nanMax(b.data[i], a.data[i]), c.data[i]);
  }
  return out;
}

// --- sources -------------------------------------------------------------------------

Value evalConstant(const Node& n, const Sizes& shape) {
  const auto& values = n.attr<ConstantAttrs>().values;
  Value out{shape, {}};
  if (values.size() == 1)
    out.data.assign(static_cast<size_t>(checkedProduct(shape)), values[0]);
  else
    out.data = values;
  return out;
}

Value evalIota(const Node& n, const Sizes& shape) {
  Value out{shape, std::vector<double>(static_cast<size_t>(checkedProduct(shape)))};
  // The second view counts along the iota axis only, so its offset is the element's value.
  View along{0, Sizes(shape.size(), 0)};
  along.strides[static_cast<size_t>(n.attr<IotaAttrs>().axis)] = 1;
  forEachIndex(shape, contiguous(shape), along, [&](int64_t o, int64_t v) {
    out.data[static_cast<size_t>(o)] = static_cast<double>(v);
  });
  return out;
}

// --- broadcast and layout ------------------------------------------------------------

/// out[idx] = x[view(idx)] for every index of `shape`.
Value gather(const Value& x, const Sizes& shape, const View& view) {
  Value out{shape, std::vector<double>(static_cast<size_t>(checkedProduct(shape)))};
  forEachIndex(shape, contiguous(shape), view, [&](int64_t o, int64_t i) {
    out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(i)];
  });
  return out;
}

/// out[view(idx)] = x[idx] for every index of x.
void scatter(const Value& x, Value& out, const View& view) {
  forEachIndex(x.shape, contiguous(x.shape), view, [&](int64_t i, int64_t o) {
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
  Value out{shape, std::vector<double>(static_cast<size_t>(checkedProduct(shape)))};
  View view = contiguous(shape);
  for (const Value* x : xs) {
    scatter(*x, out, view);
    view.base += x->shape[axis] * view.strides[axis];
  }
  return out;
}

Value evalPad(const Node& n, const Value& x, const Sizes& shape) {
  const auto& a = n.attr<PadAttrs>();
  Value out{shape, std::vector<double>(static_cast<size_t>(checkedProduct(shape)), a.value)};
  View view = contiguous(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    view.base += a.low[i] * view.strides[i];
  scatter(x, out, view);
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
  }
  return 0.0;
}

Value evalReduce(const Node& n, const Value& x, const Sizes& shape) {
  const auto& a = n.attr<ReduceAttrs>();
  Value out{shape, std::vector<double>(static_cast<size_t>(checkedProduct(shape)),
                                       reduceIdentity(a.kind))};
  // Each operand axis maps to its result axis; reduced axes all land on the same element.
  Sizes outStrides = rowMajorStrides(shape);
  View view{0, Sizes(x.shape.size(), 0)};
  for (size_t d = 0, o = 0; d < x.shape.size(); ++d)
    if (!std::binary_search(a.axes.begin(), a.axes.end(), static_cast<int64_t>(d)))
      view.strides[d] = outStrides[o++];
  auto accumulate = [&](auto combine) {
    forEachIndex(x.shape, contiguous(x.shape), view, [&](int64_t i, int64_t o) {
      double& acc = out.data[static_cast<size_t>(o)];
      acc = combine(acc, x.data[static_cast<size_t>(i)]);
    });
  };
  switch (a.kind) {
  case ReduceKind::Sum:
    accumulate([](double s, double v) { return s + v; });
    break;
  case ReduceKind::Max:
    accumulate(nanMax);
    break;
  case ReduceKind::Min:
    accumulate(nanMin);
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
  }
  return out;
}

/// [..., M, K] x [..., K, N] -> [..., M, N], accumulated in double.
Value evalDot(const Value& a, const Value& b, const Sizes& shape) {
  size_t r = a.shape.size();
  int64_t m = a.shape[r - 2], k = a.shape[r - 1], nn = b.shape[r - 1];
  int64_t batches = checkedProduct(Sizes(a.shape.begin(), a.shape.end() - 2));
  Value out{shape, std::vector<double>(static_cast<size_t>(checkedProduct(shape)), 0.0)};
  for (int64_t p = 0; p < batches; ++p) {
    const double* A = a.data.data() + p * m * k;
    const double* B = b.data.data() + p * k * nn;
    double* C = out.data.data() + p * m * nn;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t l = 0; l < nn; ++l)
          C[i * nn + l] += A[i * k + j] * B[j * nn + l];
  }
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
  case OpKind::Reshape:
    return Value{shape, ops[0]->data};
  case OpKind::Transpose:
    return evalTranspose(n, *ops[0], shape);
  case OpKind::Slice:
    return evalSlice(n, *ops[0], shape);
  case OpKind::Concatenate:
    return evalConcatenate(n, ops, shape);
  case OpKind::Pad:
    return evalPad(n, *ops[0], shape);
  case OpKind::Reduce:
    return evalReduce(n, *ops[0], shape);
  case OpKind::Dot:
    return evalDot(*ops[0], *ops[1], shape);
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
  Value v{shape, std::vector<double>(static_cast<size_t>(count))};
  for (int64_t i = 0; i < count; ++i)
    v.data[static_cast<size_t>(i)] = t.get(i);
  return v;
}

/// live[v]: v is an output or an operand, transitively, of one. Only live nodes are run.
std::vector<bool> liveNodes(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (NodeId o : g.outputs())
    live[static_cast<size_t>(o)] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (NodeId o : g.node(static_cast<NodeId>(i)).operands)
        live[static_cast<size_t>(o)] = true;
  return live;
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

  // A value is freed after its last user has run, unless it is an output.
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
    Value v = evalNode(n, ops, shapes[id]);
    roundInPlace(v.data, n.type.dtype);
    values[id] = std::move(v);
    for (NodeId o : n.operands)
      if (lastUse[static_cast<size_t>(o)] == n.id) values[static_cast<size_t>(o)] = Value{};
  }

  std::vector<HostTensor> outputs;
  for (NodeId id : g.outputs()) {
    const Value& v = values[static_cast<size_t>(id)];
    HostTensor t(g.node(id).type.dtype, v.shape);
    for (size_t i = 0; i < v.data.size(); ++i)
      t.set(static_cast<int64_t>(i), v.data[i]);
    outputs.push_back(std::move(t));
  }
  return outputs;
}

} // namespace weft::ir
