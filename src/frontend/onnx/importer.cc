#include "frontend/onnx/importer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "frontend/composite_ops.h"
#include "frontend/read_file.h"
#include "ir/interpreter.h"
#include "ir/shape.h"

namespace weft::onnx {
namespace {

using ::onnx::TensorProto;

[[noreturn]] void failAt(const std::string& where, const std::string& what) {
  throw InputError(fmt::format("{}: {}", where, what));
}

std::string readFile(const std::string& path) {
  return frontend::readFileBytes(path, "file");
}

/// Bytes per element of an ONNX element type as stored in raw_data; 0 for unknown ones.
size_t rawElementBytes(int t) {
  switch (t) {
  case TensorProto::UINT8:
  case TensorProto::INT8:
  case TensorProto::BOOL:
    return 1;
  case TensorProto::UINT16:
  case TensorProto::INT16:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return 2;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
    return 8;
  default:
    return 0;
  }
}

template <class T> T loadLE(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// An element of a floating-point ONNX type.
double decodeRawReal(int t, const char* p) {
  switch (t) {
  case TensorProto::FLOAT:
    return loadLE<float>(p);
  case TensorProto::DOUBLE:
    return loadLE<double>(p);
  case TensorProto::FLOAT16:
    return halfToFloat(loadLE<uint16_t>(p));
  case TensorProto::BFLOAT16:
    return bfloat16ToFloat(loadLE<uint16_t>(p));
  default:
    return 0;
  }
}

/// An element of an integer or bool ONNX type, exactly (UINT64 as its bits: the caller checks
/// that it fits int64).
int64_t decodeRawInt(int t, const char* p) {
  switch (t) {
  case TensorProto::UINT8:
    return loadLE<uint8_t>(p);
  case TensorProto::INT8:
    return loadLE<int8_t>(p);
  case TensorProto::UINT16:
    return loadLE<uint16_t>(p);
  case TensorProto::INT16:
    return loadLE<int16_t>(p);
  case TensorProto::INT32:
    return loadLE<int32_t>(p);
  case TensorProto::UINT32:
    return loadLE<uint32_t>(p);
  case TensorProto::INT64:
  case TensorProto::UINT64:
    return loadLE<int64_t>(p);
  case TensorProto::BOOL:
    return loadLE<uint8_t>(p) ? 1 : 0;
  default:
    return 0;
  }
}

/// An identifier usable as an IR symbol (Dim::parse accepts [A-Za-z_][A-Za-z0-9_]*).
std::string symbolName(const std::string& text) {
  std::string s;
  for (char c : text)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "d_" + s;
  return s;
}

} // namespace

// ---------------------------------------------------------------- literals and dtypes

Literal Literal::ofInts(ir::DType dtype, std::vector<int64_t> shape, std::vector<int64_t> values) {
  Literal lit{dtype, std::move(shape), {}, {}};
  if (lit.integral())
    lit.exact = std::move(values);
  else
    lit.reals.assign(values.begin(), values.end());
  return lit;
}

Literal Literal::ofReals(ir::DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  Literal lit{dtype, std::move(shape), {}, {}};
  if (!lit.integral()) {
    lit.reals = std::move(values);
    return lit;
  }
  lit.exact.reserve(values.size());
  for (double v : values) {
    // A double past int64 (or NaN) has no integer value: converting it is undefined.
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || v != std::trunc(v))
      throw InputError(fmt::format("{} is not an integer in the range of int64", v));
    lit.exact.push_back(static_cast<int64_t>(v));
  }
  return lit;
}

std::vector<double> Literal::doubles() const {
  if (!integral()) return reals;
  return std::vector<double>(exact.begin(), exact.end());
}

std::optional<size_t> Literal::firstInexact() const {
  if (!integral()) return std::nullopt;
  for (size_t i = 0; i < exact.size(); ++i)
    if (!ir::exactInDouble(exact[i])) return i;
  return std::nullopt;
}

namespace {

/// Why `lit` cannot become an IR constant exactly, or "" when it can.
std::string inexactReason(const Literal& lit) {
  std::optional<size_t> i = lit.firstInexact();
  if (!i) return "";
  return fmt::format("element {} ({}) of an {} constant used at run time is not supported: "
                     "weft's constants hold doubles, exact for integers up to 2^53 in magnitude",
                     *i, lit.exact[*i], ir::dtypeName(lit.dtype));
}

/// `lit` as a constant node of `g` named `name` (".k" added while the name is taken): one
/// value splat over the shape when every element is that value (bit for bit), or when there are
/// none. UnsupportedError, without a location (callers add theirs), when an integer element
/// past 2^53 would round.
ir::NodeId materialize(ir::Graph& g, const Literal& lit, const std::string& name) {
  if (std::string why = inexactReason(lit); !why.empty()) throw UnsupportedError(why, "");
  std::string n = name;
  for (int k = 1; !n.empty() && g.find(n); ++k)
    n = fmt::format("{}.{}", name, k);
  std::vector<double> values = lit.doubles();
  bool uniform = !values.empty() && std::all_of(values.begin(), values.end(), [&](double v) {
    return std::memcmp(&v, &values[0], sizeof(double)) == 0;
  });
  if (values.empty())
    values = {0.0}; // an empty tensor: a splat over zero elements
  else if (uniform)
    values.resize(1);
  return g.constant(lit.dtype, ir::Shape(lit.shape.begin(), lit.shape.end()), std::move(values), n);
}

} // namespace

int64_t Literal::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

ir::TensorType Literal::type() const {
  return {dtype, ir::Shape(shape.begin(), shape.end())};
}

std::vector<int64_t> Literal::ints() const {
  if (!ir::isInteger(dtype))
    throw InputError(fmt::format("it holds {} values, not integers (ONNX wants int64 here)",
                                 ir::dtypeName(dtype)));
  return exact;
}

std::optional<ir::DType> irDTypeOf(int t) {
  switch (t) {
  case TensorProto::FLOAT:
    return ir::DType::f32;
  case TensorProto::DOUBLE:
    return ir::DType::f64;
  case TensorProto::FLOAT16:
    return ir::DType::f16;
  case TensorProto::BFLOAT16:
    return ir::DType::bf16;
  case TensorProto::INT8:
    return ir::DType::i8;
  case TensorProto::INT32:
    return ir::DType::i32;
  case TensorProto::INT64:
    return ir::DType::i64;
  case TensorProto::BOOL:
    return ir::DType::boolean;
  // widened: the IR has no unsigned or 16-bit integers
  case TensorProto::UINT8:
  case TensorProto::UINT16:
  case TensorProto::INT16:
    return ir::DType::i32;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    return ir::DType::i64;
  default:
    return std::nullopt;
  }
}

ir::Shape inserted(ir::Shape shape, size_t at, const ir::Dim& d) {
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(at), d);
  return shape;
}

std::vector<int64_t> skipping(size_t rank, size_t at) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i)
    dims.push_back(static_cast<int64_t>(i < at ? i : i + 1));
  return dims;
}

double lowestValue(ir::DType t) {
  switch (t) {
  case ir::DType::i8:
    return -128.0;
  case ir::DType::i32:
    return -2147483648.0;
  case ir::DType::i64:
    return -9223372036854775808.0;
  default:
    return -std::numeric_limits<double>::infinity();
  }
}

std::string listStr(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string onnxTypeName(int t) {
  if (TensorProto::DataType_IsValid(t))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
  return fmt::format("data type {}", t);
}

Literal literalFromTensorProto(const TensorProto& t, const std::string& where) {
  if (t.data_type() == TensorProto::UNDEFINED) // an empty file parses as such a tensor
    failAt(where, fmt::format("tensor \"{}\" has no element type (data_type is UNDEFINED)",
                              t.name()));
  auto dtype = irDTypeOf(t.data_type());
  if (!dtype)
    throw UnsupportedError(
        fmt::format("{}: tensor \"{}\" has element type {}, which weft does not support", where,
                    t.name(), onnxTypeName(t.data_type())),
        "");
  if (t.data_location() == TensorProto::EXTERNAL)
    throw UnsupportedError(
        fmt::format(
            "{}: tensor \"{}\" keeps its data in an external file, which weft does not read", where,
            t.name()),
        "");
  Literal lit;
  lit.dtype = *dtype;
  for (int64_t d : t.dims()) {
    if (d < 0) failAt(where, fmt::format("tensor \"{}\" has a negative dimension {}", t.name(), d));
    lit.shape.push_back(d);
  }
  int64_t n = 0;
  try {
    n = ir::checkedProduct(lit.shape);
  } catch (const InputError& e) {
    failAt(where, fmt::format("tensor \"{}\" of shape [{}]: {}", t.name(),
                              fmt::join(lit.shape, ", "), e.what()));
  }
  // The data checks below come before any allocation: n is bounded by the bytes present.
  int dt = t.data_type();
  bool real = ir::isFloat(*dtype);
  // UINT64 values past INT64_MAX have no i64 (weft's widest integer) to go to.
  auto checkUint64 = [&]() {
    if (dt != TensorProto::UINT64) return;
    for (int64_t v : lit.exact)
      if (v < 0)
        failAt(where, fmt::format("tensor \"{}\" holds the UINT64 value {}, which is past the "
                                  "range of i64 (weft's widest integer)",
                                  t.name(), static_cast<uint64_t>(v)));
  };
  if (t.has_raw_data()) {
    size_t eb = rawElementBytes(dt);
    const std::string& raw = t.raw_data();
    uint64_t need = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(n), static_cast<uint64_t>(eb), &need) ||
        raw.size() != need)
      failAt(where,
             fmt::format("tensor \"{}\" has {} bytes of raw data but {} elements of {} need {}",
                         t.name(), raw.size(), n, onnxTypeName(dt),
                         eb == 0 ? std::string("a known element size")
                         : need / eb == static_cast<uint64_t>(n) ? std::to_string(need)
                                                                 : "more than 2^64"));
    if (real)
      lit.reals.reserve(static_cast<size_t>(n));
    else
      lit.exact.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const char* p = raw.data() + static_cast<size_t>(i) * eb;
      if (real)
        lit.reals.push_back(decodeRawReal(dt, p));
      else
        lit.exact.push_back(decodeRawInt(dt, p));
    }
    checkUint64();
    return lit;
  }
  auto take = [&](auto&& field, auto& out, auto&& convert) {
    if (field.size() != n)
      failAt(where, fmt::format("tensor \"{}\" holds {} values but its shape [{}] needs {}",
                                t.name(), field.size(), fmt::join(lit.shape, ", "), n));
    out.reserve(static_cast<size_t>(n));
    for (const auto& v : field)
      out.push_back(convert(v));
  };
  auto real64 = [](auto v) { return static_cast<double>(v); };
  auto int64 = [](auto v) { return static_cast<int64_t>(v); };
  // A value in a wider field than its type (int32_data for UINT8, uint64_data for UINT32, a
  // 16-bit pattern in int32_data) must fit the type: a writer's bug, not a value to wrap.
  auto inRange = [&](int64_t lo, int64_t hi, const char* what) {
    return [&t, &where, dt, lo, hi, what](auto v) {
      auto x = static_cast<int64_t>(v); // a uint64 past INT64_MAX is negative: out of range
      if (x < lo || x > hi)
        failAt(where, fmt::format("tensor \"{}\" of type {} holds {} {}, outside [{}, {}]",
                                  t.name(), onnxTypeName(dt), what, v, lo, hi));
      return x;
    };
  };
  switch (dt) {
  case TensorProto::FLOAT:
    take(t.float_data(), lit.reals, real64);
    break;
  case TensorProto::DOUBLE:
    take(t.double_data(), lit.reals, real64);
    break;
  case TensorProto::INT64:
    take(t.int64_data(), lit.exact, int64);
    break;
  case TensorProto::UINT32:
    take(t.uint64_data(), lit.exact, inRange(0, 4294967295, "the value"));
    break;
  case TensorProto::UINT64:
    take(t.uint64_data(), lit.exact, int64);
    break;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16: {
    auto bits = inRange(0, 65535, "the 16-bit pattern");
    bool half = dt == TensorProto::FLOAT16;
    take(t.int32_data(), lit.reals, [&](int32_t v) {
      auto b = static_cast<uint16_t>(bits(v));
      return static_cast<double>(half ? halfToFloat(b) : bfloat16ToFloat(b));
    });
    break;
  }
  case TensorProto::BOOL:
    take(t.int32_data(), lit.exact, [](int32_t v) -> int64_t { return v ? 1 : 0; });
    break;
  case TensorProto::UINT8:
    take(t.int32_data(), lit.exact, inRange(0, 255, "the value"));
    break;
  case TensorProto::INT8:
    take(t.int32_data(), lit.exact, inRange(-128, 127, "the value"));
    break;
  case TensorProto::UINT16:
    take(t.int32_data(), lit.exact, inRange(0, 65535, "the value"));
    break;
  case TensorProto::INT16:
    take(t.int32_data(), lit.exact, inRange(-32768, 32767, "the value"));
    break;
  default:
    take(t.int32_data(), lit.exact, int64);
    break; // INT32
  }
  checkUint64();
  return lit;
}

HostTensor toHostTensor(const Literal& lit) {
  HostTensor h(lit.dtype, lit.shape);
  for (size_t i = 0; i < lit.size(); ++i) {
    if (lit.integral())
      h.setInt(static_cast<int64_t>(i), lit.exact[i]);
    else
      h.set(static_cast<int64_t>(i), lit.reals[i]);
  }
  return h;
}

Literal toLiteral(const HostTensor& h) {
  Literal lit{h.dtype, h.shape, {}, {}};
  int64_t n = h.numElements();
  if (lit.integral()) {
    lit.exact.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      lit.exact.push_back(h.getInt(i));
  } else {
    lit.reals.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      lit.reals.push_back(h.get(i));
  }
  return lit;
}

// ---------------------------------------------------------------- operator table

namespace {

/// The domain of ONNX's training operators; weft lowers the optimizers of its opset 1
/// (ops_training.cc), registered as "ai.onnx.preview.training.<type>".
constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

bool isDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// The operator table's key for node `n`: its type in the default domain, "<domain>.<type>"
/// in any other (only the training domain's optimizers are in the table).
std::string operatorKey(const ::onnx::NodeProto& n) {
  return isDefaultDomain(n.domain()) ? n.op_type() : n.domain() + "." + n.op_type();
}

} // namespace

const OperatorTable& operatorTable() {
  static const OperatorTable table = [] {
    OperatorTable t;
    addElementwiseOps(t);
    addLayoutOps(t);
    addReduceOps(t);
    addNNOps(t);
    addMathOps(t);
    addIndexOps(t);
    addLossOps(t);
    addPoolOps(t);
    addConvOps(t);
    addScatterOps(t);
    addResizeOps(t);
    addQuantizeOps(t);
    addEinsumOps(t);
    addSignalOps(t);
    addRnnOps(t);
    addTrainingOps(t);
    addSampleOps(t);
    return t;
  }();
  return table;
}

std::vector<std::string> supportedOperators() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : operatorTable())
    names.push_back(name);
  return names;
}

// ---------------------------------------------------------------- node context

NodeContext::NodeContext(ir::Graph& graph, const ::onnx::NodeProto& n, int op, std::string source,
                         std::vector<Value*> inputs)
    : g(graph), node(n), opset(op), source_(std::move(source)), inputs_(std::move(inputs)),
      outputs_(static_cast<size_t>(n.output_size())) {
  for (size_t i = 0; i < outputs_.size(); ++i)
    outputs_[i].name = n.output(static_cast<int>(i));
}

std::string NodeContext::where() const {
  std::string name =
      node.name().empty() ? (node.output_size() ? node.output(0) : std::string("?")) : node.name();
  return fmt::format("{}: node \"{}\" ({}, opset {})", source_, name, node.op_type(), opset);
}

void NodeContext::fail(const std::string& what) const {
  failAt(where(), what);
}

void NodeContext::unsupported(const std::string& what) const {
  throw UnsupportedError(fmt::format("{}: {}", where(), what), node.op_type());
}

ir::NodeId NodeContext::in(size_t i) {
  if (!has(i)) fail(fmt::format("input {} is required but missing", i));
  Value* v = inputs_[i];
  if (v->node < 0) v->node = constant(*v->literal, v->name);
  return v->node;
}

const Literal* NodeContext::literal(size_t i) const {
  if (!has(i) || !inputs_[i]->literal) return nullptr;
  return &*inputs_[i]->literal;
}

const Literal& NodeContext::requireLiteral(size_t i, const std::string& what) const {
  if (!has(i)) fail(fmt::format("input {} ({}) is required but missing", i, what));
  const Value* v = inputs_[i];
  if (v->literal) return *v->literal;
  if (v->graphInput)
    throw ImportTimeValueError(
        fmt::format("{}: input {} ({}) must be known when the model is imported, but it is the "
                    "graph input \"{}\"; "
                    "store it as an initializer or freeze it (ImportOptions::frozenInputs)",
                    where(), i, what, v->name),
        node.op_type(), v->name);
  unsupported(fmt::format(
      "input {} ({}) must be known when the model is imported (an initializer, a Constant or a "
      "static shape computation), but \"{}\" is computed at run time, which is not supported",
      i, what, v->name));
}

std::vector<int64_t> NodeContext::constInts(size_t i, const std::string& what) const {
  const Literal& lit = requireLiteral(i, what);
  try {
    return lit.ints();
  } catch (const InputError& e) {
    fail(fmt::format("input {} ({}): {}", i, what, e.what()));
  }
}

double NodeContext::constScalar(size_t i, const std::string& what) const {
  const Literal& lit = requireLiteral(i, what);
  if (lit.size() != 1)
    fail(fmt::format("input {} ({}) must hold one value, it holds {}", i, what, lit.size()));
  return lit.value(0);
}

ir::TensorType NodeContext::type(size_t i) const {
  if (!has(i)) fail(fmt::format("input {} is required but missing", i));
  const Value* v = inputs_[i];
  if (v->node >= 0) return g.node(v->node).type;
  return v->literal->type();
}

namespace {

using ::onnx::AttributeProto;

std::string attrTypeName(int t) {
  if (AttributeProto::AttributeType_IsValid(t))
    return AttributeProto::AttributeType_Name(static_cast<AttributeProto::AttributeType>(t));
  return fmt::format("type {}", t);
}

/// The attribute types whose value field `a` sets (a list field counts when non-empty).
std::vector<AttributeProto::AttributeType> valueFields(const AttributeProto& a) {
  std::vector<AttributeProto::AttributeType> set;
  auto see = [&](bool present, AttributeProto::AttributeType t) {
    if (present) set.push_back(t);
  };
  see(a.has_f(), AttributeProto::FLOAT);
  see(a.has_i(), AttributeProto::INT);
  see(a.has_s(), AttributeProto::STRING);
  see(a.has_t(), AttributeProto::TENSOR);
  see(a.has_g(), AttributeProto::GRAPH);
  see(a.has_sparse_tensor(), AttributeProto::SPARSE_TENSOR);
  see(a.has_tp(), AttributeProto::TYPE_PROTO);
  see(a.floats_size() > 0, AttributeProto::FLOATS);
  see(a.ints_size() > 0, AttributeProto::INTS);
  see(a.strings_size() > 0, AttributeProto::STRINGS);
  see(a.tensors_size() > 0, AttributeProto::TENSORS);
  see(a.graphs_size() > 0, AttributeProto::GRAPHS);
  see(a.sparse_tensors_size() > 0, AttributeProto::SPARSE_TENSORS);
  see(a.type_protos_size() > 0, AttributeProto::TYPE_PROTOS);
  return set;
}

/// Whether `a` holds a value of `type`: its declared type, or for an attribute that declares
/// none (UNDEFINED, written by IR versions before 2) the field of that type being set.
bool holds(const AttributeProto& a, AttributeProto::AttributeType type) {
  if (a.type() != AttributeProto::UNDEFINED) return a.type() == type;
  std::vector<AttributeProto::AttributeType> set = valueFields(a);
  return std::find(set.begin(), set.end(), type) != set.end();
}

bool isListType(AttributeProto::AttributeType t) {
  return t == AttributeProto::FLOATS || t == AttributeProto::INTS || t == AttributeProto::STRINGS ||
         t == AttributeProto::TENSORS || t == AttributeProto::GRAPHS ||
         t == AttributeProto::SPARSE_TENSORS || t == AttributeProto::TYPE_PROTOS;
}

/// An operator's signature from ONNX opset `since` on: its inputs in order (a variadic one
/// ends in "...") and its attribute names, space-separated. Every version of ONNX's operator
/// schemas (those of ONNX 1.12 for opsets 1 to 17, and those of opsets 18 to 21) of the
/// operators weft lowers.
struct OpSignature {
  const char* op;
  int since;
  const char* inputs;
  const char* attributes;
};

const OpSignature kSignatures[] = {
    {"Abs", 1, "X", "consumed_inputs"},
    {"Abs", 6, "X", ""},
    {"Abs", 13, "X", ""},
    {"Acos", 7, "input", ""},
    {"Acosh", 9, "input", ""},
    {"Adagrad", 1, "R T inputs...", "decay_factor epsilon norm_coefficient"},
    {"Adam", 1, "R T inputs...", "alpha beta epsilon norm_coefficient norm_coefficient_post"},
    {"Add", 1, "A B", "axis broadcast consumed_inputs"},
    {"Add", 6, "A B", "axis broadcast"},
    {"Add", 7, "A B", ""},
    {"Add", 13, "A B", ""},
    {"Add", 14, "A B", ""},
    {"AffineGrid", 20, "theta size", "align_corners"},
    {"And", 1, "A B", "axis broadcast"},
    {"And", 7, "A B", ""},
    {"ArgMax", 1, "data", "axis keepdims"},
    {"ArgMax", 11, "data", "axis keepdims"},
    {"ArgMax", 12, "data", "axis keepdims select_last_index"},
    {"ArgMax", 13, "data", "axis keepdims select_last_index"},
    {"ArgMin", 1, "data", "axis keepdims"},
    {"ArgMin", 11, "data", "axis keepdims"},
    {"ArgMin", 12, "data", "axis keepdims select_last_index"},
    {"ArgMin", 13, "data", "axis keepdims select_last_index"},
    {"Asin", 7, "input", ""},
    {"Asinh", 9, "input", ""},
    {"Atan", 7, "input", ""},
    {"Atanh", 9, "input", ""},
    {"AveragePool", 1, "X", "auto_pad kernel_shape pads strides"},
    {"AveragePool", 7, "X", "auto_pad count_include_pad kernel_shape pads strides"},
    {"AveragePool", 10, "X", "auto_pad ceil_mode count_include_pad kernel_shape pads strides"},
    {"AveragePool", 11, "X", "auto_pad ceil_mode count_include_pad kernel_shape pads strides"},
    {"AveragePool", 19, "X",
     "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
    {"BatchNormalization", 1, "X scale B mean var",
     "consumed_inputs epsilon is_test momentum spatial"},
    {"BatchNormalization", 6, "X scale B mean var", "epsilon is_test momentum spatial"},
    {"BatchNormalization", 7, "X scale B mean var", "epsilon momentum spatial"},
    {"BatchNormalization", 9, "X scale B mean var", "epsilon momentum"},
    {"BatchNormalization", 14, "X scale B input_mean input_var", "epsilon momentum training_mode"},
    {"BatchNormalization", 15, "X scale B input_mean input_var", "epsilon momentum training_mode"},
    {"BitShift", 11, "X Y", "direction"},
    {"BitwiseAnd", 18, "A B", ""},
    {"BitwiseNot", 18, "X", ""},
    {"BitwiseOr", 18, "A B", ""},
    {"BitwiseXor", 18, "A B", ""},
    {"BlackmanWindow", 17, "size", "output_datatype periodic"},
    {"Cast", 1, "input", "to"},
    {"Cast", 6, "input", "to"},
    {"Cast", 9, "input", "to"},
    {"Cast", 13, "input", "to"},
    {"Cast", 19, "input", "saturate to"},
    {"Cast", 21, "input", "saturate to"},
    {"CastLike", 15, "input target_type", ""},
    {"CastLike", 19, "input target_type", "saturate"},
    {"CastLike", 21, "input target_type", "saturate"},
    {"Ceil", 1, "X", "consumed_inputs"},
    {"Ceil", 6, "X", ""},
    {"Ceil", 13, "X", ""},
    {"Celu", 12, "X", "alpha"},
    {"CenterCropPad", 18, "input_data shape", "axes"},
    {"Clip", 1, "input", "consumed_inputs max min"},
    {"Clip", 6, "input", "max min"},
    {"Clip", 11, "input min max", ""},
    {"Clip", 12, "input min max", ""},
    {"Clip", 13, "input min max", ""},
    {"Col2Im", 18, "input image_shape block_shape", "dilations pads strides"},
    {"Concat", 1, "inputs...", "axis"},
    {"Concat", 4, "inputs...", "axis"},
    {"Concat", 11, "inputs...", "axis"},
    {"Concat", 13, "inputs...", "axis"},
    {"Constant", 1, "", "value"},
    {"Constant", 9, "", "value"},
    {"Constant", 11, "", "sparse_value value"},
    {"Constant", 12, "",
     "sparse_value value value_float value_floats value_int value_ints value_string value_strings"},
    {"Constant", 13, "",
     "sparse_value value value_float value_floats value_int value_ints value_string value_strings"},
    {"Constant", 19, "",
     "sparse_value value value_float value_floats value_int value_ints value_string value_strings"},
    {"Constant", 21, "",
     "sparse_value value value_float value_floats value_int value_ints value_string value_strings"},
    {"ConstantOfShape", 9, "input", "value"},
    {"ConstantOfShape", 20, "input", "value"},
    {"ConstantOfShape", 21, "input", "value"},
    {"Conv", 1, "X W B", "auto_pad dilations group kernel_shape pads strides"},
    {"Conv", 11, "X W B", "auto_pad dilations group kernel_shape pads strides"},
    {"ConvInteger", 10, "x w x_zero_point w_zero_point",
     "auto_pad dilations group kernel_shape pads strides"},
    {"ConvTranspose", 1, "X W B",
     "auto_pad dilations group kernel_shape output_padding output_shape pads strides"},
    {"ConvTranspose", 11, "X W B",
     "auto_pad dilations group kernel_shape output_padding output_shape pads strides"},
    {"Cos", 7, "input", ""},
    {"Cosh", 9, "input", ""},
    {"CumSum", 11, "x axis", "exclusive reverse"},
    {"CumSum", 14, "x axis", "exclusive reverse"},
    {"DFT", 17, "input dft_length", "axis inverse onesided"},
    {"DFT", 20, "input dft_length axis", "inverse onesided"},
    {"DepthToSpace", 1, "input", "blocksize"},
    {"DepthToSpace", 11, "input", "blocksize mode"},
    {"DepthToSpace", 13, "input", "blocksize mode"},
    {"DequantizeLinear", 10, "x x_scale x_zero_point", ""},
    {"DequantizeLinear", 13, "x x_scale x_zero_point", "axis"},
    {"DequantizeLinear", 19, "x x_scale x_zero_point", "axis"},
    {"DequantizeLinear", 21, "x x_scale x_zero_point", "axis block_size"},
    {"Det", 11, "X", ""},
    {"Div", 1, "A B", "axis broadcast consumed_inputs"},
    {"Div", 6, "A B", "axis broadcast"},
    {"Div", 7, "A B", ""},
    {"Div", 13, "A B", ""},
    {"Div", 14, "A B", ""},
    {"Dropout", 1, "data", "consumed_inputs is_test ratio"},
    {"Dropout", 6, "data", "is_test ratio"},
    {"Dropout", 7, "data", "ratio"},
    {"Dropout", 10, "data", "ratio"},
    {"Dropout", 12, "data ratio training_mode", "seed"},
    {"Dropout", 13, "data ratio training_mode", "seed"},
    {"DynamicQuantizeLinear", 11, "x", ""},
    {"Einsum", 12, "Inputs...", "equation"},
    {"Elu", 1, "X", "alpha consumed_inputs"},
    {"Elu", 6, "X", "alpha"},
    {"Equal", 1, "A B", "axis broadcast"},
    {"Equal", 7, "A B", ""},
    {"Equal", 11, "A B", ""},
    {"Equal", 13, "A B", ""},
    {"Equal", 19, "A B", ""},
    {"Erf", 9, "input", ""},
    {"Erf", 13, "input", ""},
    {"Exp", 1, "input", "consumed_inputs"},
    {"Exp", 6, "input", ""},
    {"Exp", 13, "input", ""},
    {"Expand", 8, "input shape", ""},
    {"Expand", 13, "input shape", ""},
    {"EyeLike", 9, "input", "dtype k"},
    {"Flatten", 1, "input", "axis"},
    {"Flatten", 9, "input", "axis"},
    {"Flatten", 11, "input", "axis"},
    {"Flatten", 13, "input", "axis"},
    {"Flatten", 21, "input", "axis"},
    {"Floor", 1, "X", "consumed_inputs"},
    {"Floor", 6, "X", ""},
    {"Floor", 13, "X", ""},
    {"GRU", 1, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size output_sequence"},
    {"GRU", 3, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size linear_before_reset output_sequence"},
    {"GRU", 7, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size linear_before_reset"},
    {"GRU", 14, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size layout linear_before_reset"},
    {"Gather", 1, "data indices", "axis"},
    {"Gather", 11, "data indices", "axis"},
    {"Gather", 13, "data indices", "axis"},
    {"GatherElements", 11, "data indices", "axis"},
    {"GatherElements", 13, "data indices", "axis"},
    {"GatherND", 11, "data indices", ""},
    {"GatherND", 12, "data indices", "batch_dims"},
    {"GatherND", 13, "data indices", "batch_dims"},
    {"Gelu", 20, "X", "approximate"},
    {"Gemm", 1, "A B C", "alpha beta broadcast transA transB"},
    {"Gemm", 6, "A B C", "alpha beta broadcast transA transB"},
    {"Gemm", 7, "A B C", "alpha beta transA transB"},
    {"Gemm", 9, "A B C", "alpha beta transA transB"},
    {"Gemm", 11, "A B C", "alpha beta transA transB"},
    {"Gemm", 13, "A B C", "alpha beta transA transB"},
    {"GlobalAveragePool", 1, "X", ""},
    {"GlobalMaxPool", 1, "X", ""},
    {"Greater", 1, "A B", "axis broadcast"},
    {"Greater", 7, "A B", ""},
    {"Greater", 9, "A B", ""},
    {"Greater", 13, "A B", ""},
    {"GreaterOrEqual", 12, "A B", ""},
    {"GreaterOrEqual", 16, "A B", ""},
    {"GridSample", 16, "X grid", "align_corners mode padding_mode"},
    {"GridSample", 20, "X grid", "align_corners mode padding_mode"},
    {"GroupNormalization", 18, "X scale bias", "epsilon num_groups"},
    {"GroupNormalization", 21, "X scale bias", "epsilon num_groups stash_type"},
    {"HammingWindow", 17, "size", "output_datatype periodic"},
    {"HannWindow", 17, "size", "output_datatype periodic"},
    {"HardSigmoid", 1, "X", "alpha beta consumed_inputs"},
    {"HardSigmoid", 6, "X", "alpha beta"},
    {"HardSwish", 14, "X", ""},
    {"Hardmax", 1, "input", "axis"},
    {"Hardmax", 11, "input", "axis"},
    {"Hardmax", 13, "input", "axis"},
    {"Identity", 1, "input", ""},
    {"Identity", 13, "input", ""},
    {"Identity", 14, "input", ""},
    {"Identity", 16, "input", ""},
    {"Identity", 19, "input", ""},
    {"Identity", 21, "input", ""},
    {"InstanceNormalization", 1, "input scale B", "consumed_inputs epsilon"},
    {"InstanceNormalization", 6, "input scale B", "epsilon"},
    {"IsInf", 10, "X", "detect_negative detect_positive"},
    {"IsInf", 20, "X", "detect_negative detect_positive"},
    {"IsNaN", 9, "X", ""},
    {"IsNaN", 13, "X", ""},
    {"IsNaN", 20, "X", ""},
    {"LRN", 1, "X", "alpha beta bias size"},
    {"LRN", 13, "X", "alpha beta bias size"},
    {"LSTM", 1, "X W R B sequence_lens initial_h initial_c P",
     "activation_alpha activation_beta activations clip direction hidden_size input_forget output_sequence"},
    {"LSTM", 7, "X W R B sequence_lens initial_h initial_c P",
     "activation_alpha activation_beta activations clip direction hidden_size input_forget"},
    {"LSTM", 14, "X W R B sequence_lens initial_h initial_c P",
     "activation_alpha activation_beta activations clip direction hidden_size input_forget layout"},
    {"LayerNormalization", 17, "X Scale B", "axis epsilon stash_type"},
    {"LeakyRelu", 1, "X", "alpha consumed_inputs"},
    {"LeakyRelu", 6, "X", "alpha"},
    {"LeakyRelu", 16, "X", "alpha"},
    {"Less", 1, "A B", "axis broadcast"},
    {"Less", 7, "A B", ""},
    {"Less", 9, "A B", ""},
    {"Less", 13, "A B", ""},
    {"LessOrEqual", 12, "A B", ""},
    {"LessOrEqual", 16, "A B", ""},
    {"Log", 1, "input", "consumed_inputs"},
    {"Log", 6, "input", ""},
    {"Log", 13, "input", ""},
    {"LogSoftmax", 1, "input", "axis"},
    {"LogSoftmax", 11, "input", "axis"},
    {"LogSoftmax", 13, "input", "axis"},
    {"LpPool", 1, "X", "auto_pad kernel_shape p pads strides"},
    {"LpPool", 2, "X", "auto_pad kernel_shape p pads strides"},
    {"LpPool", 11, "X", "auto_pad kernel_shape p pads strides"},
    {"LpPool", 18, "X", "auto_pad ceil_mode dilations kernel_shape p pads strides"},
    {"MatMul", 1, "A B", ""},
    {"MatMul", 9, "A B", ""},
    {"MatMul", 13, "A B", ""},
    {"MatMulInteger", 10, "A B a_zero_point b_zero_point", ""},
    {"Max", 1, "data_0...", "consumed_inputs"},
    {"Max", 6, "data_0...", ""},
    {"Max", 8, "data_0...", ""},
    {"Max", 12, "data_0...", ""},
    {"Max", 13, "data_0...", ""},
    {"MaxPool", 1, "X", "auto_pad kernel_shape pads strides"},
    {"MaxPool", 8, "X", "auto_pad kernel_shape pads storage_order strides"},
    {"MaxPool", 10, "X", "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
    {"MaxPool", 11, "X", "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
    {"MaxPool", 12, "X", "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
    {"MaxUnpool", 9, "X I output_shape", "kernel_shape pads strides"},
    {"MaxUnpool", 11, "X I output_shape", "kernel_shape pads strides"},
    {"Mean", 1, "data_0...", "consumed_inputs"},
    {"Mean", 6, "data_0...", ""},
    {"Mean", 8, "data_0...", ""},
    {"Mean", 13, "data_0...", ""},
    {"MeanVarianceNormalization", 9, "X", "axes"},
    {"MeanVarianceNormalization", 13, "X", "axes"},
    {"MelWeightMatrix", 17, "num_mel_bins dft_length sample_rate lower_edge_hertz upper_edge_hertz",
     "output_datatype"},
    {"Min", 1, "data_0...", "consumed_inputs"},
    {"Min", 6, "data_0...", ""},
    {"Min", 8, "data_0...", ""},
    {"Min", 12, "data_0...", ""},
    {"Min", 13, "data_0...", ""},
    {"Mish", 18, "X", ""},
    {"Mod", 10, "A B", "fmod"},
    {"Mod", 13, "A B", "fmod"},
    {"Momentum", 1, "R T inputs...", "alpha beta mode norm_coefficient"},
    {"Mul", 1, "A B", "axis broadcast consumed_inputs"},
    {"Mul", 6, "A B", "axis broadcast"},
    {"Mul", 7, "A B", ""},
    {"Mul", 13, "A B", ""},
    {"Mul", 14, "A B", ""},
    {"Neg", 1, "X", "consumed_inputs"},
    {"Neg", 6, "X", ""},
    {"Neg", 13, "X", ""},
    {"NegativeLogLikelihoodLoss", 12, "input target weight", "ignore_index reduction"},
    {"NegativeLogLikelihoodLoss", 13, "input target weight", "ignore_index reduction"},
    {"Not", 1, "X", ""},
    {"OneHot", 9, "indices depth values", "axis"},
    {"OneHot", 11, "indices depth values", "axis"},
    {"Or", 1, "A B", "axis broadcast"},
    {"Or", 7, "A B", ""},
    {"PRelu", 1, "X slope", "consumed_inputs"},
    {"PRelu", 6, "X slope", ""},
    {"PRelu", 7, "X slope", ""},
    {"PRelu", 9, "X slope", ""},
    {"PRelu", 16, "X slope", ""},
    {"Pad", 1, "data", "mode paddings value"},
    {"Pad", 2, "data", "mode pads value"},
    {"Pad", 11, "data pads constant_value", "mode"},
    {"Pad", 13, "data pads constant_value", "mode"},
    {"Pad", 18, "data pads constant_value axes", "mode"},
    {"Pad", 19, "data pads constant_value axes", "mode"},
    {"Pad", 21, "data pads constant_value axes", "mode"},
    {"Pow", 1, "X Y", "axis broadcast"},
    {"Pow", 7, "X Y", ""},
    {"Pow", 12, "X Y", ""},
    {"Pow", 13, "X Y", ""},
    {"Pow", 15, "X Y", ""},
    {"QLinearConv", 10, "x x_scale x_zero_point w w_scale w_zero_point y_scale y_zero_point B",
     "auto_pad dilations group kernel_shape pads strides"},
    {"QLinearMatMul", 10, "a a_scale a_zero_point b b_scale b_zero_point y_scale y_zero_point", ""},
    {"QLinearMatMul", 21, "a a_scale a_zero_point b b_scale b_zero_point y_scale y_zero_point", ""},
    {"QuantizeLinear", 10, "x y_scale y_zero_point", ""},
    {"QuantizeLinear", 13, "x y_scale y_zero_point", "axis"},
    {"QuantizeLinear", 19, "x y_scale y_zero_point", "axis saturate"},
    {"QuantizeLinear", 21, "x y_scale y_zero_point", "axis block_size output_dtype saturate"},
    {"RNN", 1, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size output_sequence"},
    {"RNN", 7, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size"},
    {"RNN", 14, "X W R B sequence_lens initial_h",
     "activation_alpha activation_beta activations clip direction hidden_size layout"},
    {"Range", 11, "start limit delta", ""},
    {"Reciprocal", 1, "X", "consumed_inputs"},
    {"Reciprocal", 6, "X", ""},
    {"Reciprocal", 13, "X", ""},
    {"ReduceL1", 1, "data", "axes keepdims"},
    {"ReduceL1", 11, "data", "axes keepdims"},
    {"ReduceL1", 13, "data", "axes keepdims"},
    {"ReduceL1", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceL2", 1, "data", "axes keepdims"},
    {"ReduceL2", 11, "data", "axes keepdims"},
    {"ReduceL2", 13, "data", "axes keepdims"},
    {"ReduceL2", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceLogSum", 1, "data", "axes keepdims"},
    {"ReduceLogSum", 11, "data", "axes keepdims"},
    {"ReduceLogSum", 13, "data", "axes keepdims"},
    {"ReduceLogSum", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceLogSumExp", 1, "data", "axes keepdims"},
    {"ReduceLogSumExp", 11, "data", "axes keepdims"},
    {"ReduceLogSumExp", 13, "data", "axes keepdims"},
    {"ReduceLogSumExp", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceMax", 1, "data", "axes keepdims"},
    {"ReduceMax", 11, "data", "axes keepdims"},
    {"ReduceMax", 12, "data", "axes keepdims"},
    {"ReduceMax", 13, "data", "axes keepdims"},
    {"ReduceMax", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceMax", 20, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceMean", 1, "data", "axes keepdims"},
    {"ReduceMean", 11, "data", "axes keepdims"},
    {"ReduceMean", 13, "data", "axes keepdims"},
    {"ReduceMean", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceMin", 1, "data", "axes keepdims"},
    {"ReduceMin", 11, "data", "axes keepdims"},
    {"ReduceMin", 12, "data", "axes keepdims"},
    {"ReduceMin", 13, "data", "axes keepdims"},
    {"ReduceMin", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceMin", 20, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceProd", 1, "data", "axes keepdims"},
    {"ReduceProd", 11, "data", "axes keepdims"},
    {"ReduceProd", 13, "data", "axes keepdims"},
    {"ReduceProd", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceSum", 1, "data", "axes keepdims"},
    {"ReduceSum", 11, "data", "axes keepdims"},
    {"ReduceSum", 13, "data axes", "keepdims noop_with_empty_axes"},
    {"ReduceSumSquare", 1, "data", "axes keepdims"},
    {"ReduceSumSquare", 11, "data", "axes keepdims"},
    {"ReduceSumSquare", 13, "data", "axes keepdims"},
    {"ReduceSumSquare", 18, "data axes", "keepdims noop_with_empty_axes"},
    {"Relu", 1, "X", "consumed_inputs"},
    {"Relu", 6, "X", ""},
    {"Relu", 13, "X", ""},
    {"Relu", 14, "X", ""},
    {"Reshape", 1, "data", "consumed_inputs shape"},
    {"Reshape", 5, "data shape", ""},
    {"Reshape", 13, "data shape", ""},
    {"Reshape", 14, "data shape", "allowzero"},
    {"Reshape", 19, "data shape", "allowzero"},
    {"Reshape", 21, "data shape", "allowzero"},
    {"Resize", 10, "X scales", "mode"},
    {"Resize", 11, "X roi scales sizes",
     "coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value mode nearest_mode"},
    {"Resize", 13, "X roi scales sizes",
     "coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value mode nearest_mode"},
    {"Resize", 18, "X roi scales sizes",
     "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value keep_aspect_ratio_policy mode nearest_mode"},
    {"Resize", 19, "X roi scales sizes",
     "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value keep_aspect_ratio_policy mode nearest_mode"},
    {"ReverseSequence", 10, "input sequence_lens", "batch_axis time_axis"},
    {"RoiAlign", 10, "X rois batch_indices",
     "mode output_height output_width sampling_ratio spatial_scale"},
    {"RoiAlign", 16, "X rois batch_indices",
     "coordinate_transformation_mode mode output_height output_width sampling_ratio spatial_scale"},
    {"Round", 11, "X", ""},
    {"STFT", 17, "signal frame_step window frame_length", "onesided"},
    {"Scatter", 9, "data indices updates", "axis"},
    {"Scatter", 11, "data indices updates", "axis"},
    {"ScatterElements", 11, "data indices updates", "axis"},
    {"ScatterElements", 13, "data indices updates", "axis"},
    {"ScatterElements", 16, "data indices updates", "axis reduction"},
    {"ScatterElements", 18, "data indices updates", "axis reduction"},
    {"ScatterND", 11, "data indices updates", ""},
    {"ScatterND", 13, "data indices updates", ""},
    {"ScatterND", 16, "data indices updates", "reduction"},
    {"ScatterND", 18, "data indices updates", "reduction"},
    {"Selu", 1, "X", "alpha consumed_inputs gamma"},
    {"Selu", 6, "X", "alpha gamma"},
    {"Shape", 1, "data", ""},
    {"Shape", 13, "data", ""},
    {"Shape", 15, "data", "end start"},
    {"Shape", 19, "data", "end start"},
    {"Shape", 21, "data", "end start"},
    {"Shrink", 9, "input", "bias lambd"},
    {"Sigmoid", 1, "X", "consumed_inputs"},
    {"Sigmoid", 6, "X", ""},
    {"Sigmoid", 13, "X", ""},
    {"Sign", 9, "input", ""},
    {"Sign", 13, "input", ""},
    {"Sin", 7, "input", ""},
    {"Sinh", 9, "input", ""},
    {"Size", 1, "data", ""},
    {"Size", 13, "data", ""},
    {"Size", 19, "data", ""},
    {"Size", 21, "data", ""},
    {"Slice", 1, "data", "axes ends starts"},
    {"Slice", 10, "data starts ends axes steps", ""},
    {"Slice", 11, "data starts ends axes steps", ""},
    {"Slice", 13, "data starts ends axes steps", ""},
    {"Softmax", 1, "input", "axis"},
    {"Softmax", 11, "input", "axis"},
    {"Softmax", 13, "input", "axis"},
    {"SoftmaxCrossEntropyLoss", 12, "scores labels weights", "ignore_index reduction"},
    {"SoftmaxCrossEntropyLoss", 13, "scores labels weights", "ignore_index reduction"},
    {"Softplus", 1, "X", ""},
    {"Softsign", 1, "input", ""},
    {"SpaceToDepth", 1, "input", "blocksize"},
    {"SpaceToDepth", 13, "input", "blocksize"},
    {"Split", 1, "input split", "axis split"},
    {"Split", 2, "input", "axis split"},
    {"Split", 11, "input", "axis split"},
    {"Split", 13, "input split", "axis"},
    {"Split", 18, "input split", "axis num_outputs"},
    {"Sqrt", 1, "X", "consumed_inputs"},
    {"Sqrt", 6, "X", ""},
    {"Sqrt", 13, "X", ""},
    {"Squeeze", 1, "data", "axes"},
    {"Squeeze", 11, "data", "axes"},
    {"Squeeze", 13, "data axes", ""},
    {"Squeeze", 21, "data axes", ""},
    {"Sub", 1, "A B", "axis broadcast consumed_inputs"},
    {"Sub", 6, "A B", "axis broadcast"},
    {"Sub", 7, "A B", ""},
    {"Sub", 13, "A B", ""},
    {"Sub", 14, "A B", ""},
    {"Sum", 1, "data_0...", "consumed_inputs"},
    {"Sum", 6, "data_0...", ""},
    {"Sum", 8, "data_0...", ""},
    {"Sum", 13, "data_0...", ""},
    {"Tan", 7, "input", ""},
    {"Tanh", 1, "input", "consumed_inputs"},
    {"Tanh", 6, "input", ""},
    {"Tanh", 13, "input", ""},
    {"ThresholdedRelu", 10, "X", "alpha"},
    {"Tile", 1, "input tiles axis", ""},
    {"Tile", 6, "input repeats", ""},
    {"Tile", 13, "input repeats", ""},
    {"TopK", 1, "X", "axis k"},
    {"TopK", 10, "X K", "axis"},
    {"TopK", 11, "X K", "axis largest sorted"},
    {"Transpose", 1, "data", "perm"},
    {"Transpose", 13, "data", "perm"},
    {"Transpose", 21, "data", "perm"},
    {"Trilu", 14, "input k", "upper"},
    {"Unsqueeze", 1, "data", "axes"},
    {"Unsqueeze", 11, "data", "axes"},
    {"Unsqueeze", 13, "data axes", ""},
    {"Unsqueeze", 21, "data axes", ""},
    {"Upsample", 1, "X", "height_scale mode width_scale"},
    {"Upsample", 7, "X", "mode scales"},
    {"Upsample", 9, "X scales", "mode"},
    {"Upsample", 10, "X scales", "mode"},
    {"Where", 9, "condition X Y", ""},
    {"Where", 16, "condition X Y", ""},
    {"Xor", 1, "A B", "axis broadcast"},
    {"Xor", 7, "A B", ""},
};

std::vector<std::string> words(const char* text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// The signature of `op` at `opset` (its newest version at or before it); nullptr when ONNX
/// defines none by then (the lowering says from which opset it is defined).
const OpSignature* signatureAt(const std::string& op, int opset) {
  const OpSignature* found = nullptr;
  for (const OpSignature& s : kSignatures)
    if (op == s.op && s.since <= opset && (!found || s.since > found->since)) found = &s;
  return found;
}

} // namespace

void NodeContext::checkSignature() const {
  const OpSignature* sig = signatureAt(node.op_type(), opset);
  if (!sig) return;
  std::string version = fmt::format("{}-{}", node.op_type(), sig->since);
  std::vector<std::string> inputs = words(sig->inputs), attrs = words(sig->attributes);
  for (const auto& a : node.attribute()) {
    if (contains(attrs, a.name())) continue;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == a.name())
        fail(fmt::format("{} takes {} as input {}, not as an attribute", version, a.name(), i));
    std::vector<std::string> elsewhere; // the versions of the operator that have it
    for (const OpSignature& s : kSignatures)
      if (node.op_type() == s.op && contains(words(s.attributes), a.name()))
        elsewhere.push_back(fmt::format("{}-{}", s.op, s.since));
    fail(fmt::format(
        "{} has no attribute \"{}\" ({}{})", version, a.name(),
        attrs.empty() ? "it has none" : fmt::format("its attributes: {}", fmt::join(attrs, ", ")),
        elsewhere.empty() ? "" : fmt::format("; {} has it", fmt::join(elsewhere, ", "))));
  }
  bool variadic = !inputs.empty() && inputs.back().size() > 3 &&
                  inputs.back().compare(inputs.back().size() - 3, 3, "...") == 0;
  size_t given = 0; // up to the last input given (an empty name omits an optional one)
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty()) given = static_cast<size_t>(i) + 1;
  if (variadic || given <= inputs.size()) return;
  size_t extra = inputs.size();
  // The name another version gives the first extra input, when this version takes it as an
  // attribute (Clip-6's min, ReduceSum-11's axes).
  for (const OpSignature& s : kSignatures) {
    if (node.op_type() != s.op) continue;
    std::vector<std::string> other = words(s.inputs);
    if (other.size() > extra && contains(attrs, other[extra]))
      fail(fmt::format("{} takes {} as an attribute, not as input {} (it takes {} input{})",
                       version, other[extra], extra, inputs.size(), inputs.size() == 1 ? "" : "s"));
  }
  fail(fmt::format(
      "{} takes at most {} input{} ({}), but the node has {}", version, inputs.size(),
      inputs.size() == 1 ? "" : "s",
      inputs.empty() ? std::string("none") : fmt::format("{}", fmt::join(inputs, ", ")), given));
}

void NodeContext::checkAttributeValues() const {
  for (const auto& a : node.attribute()) {
    if (a.has_ref_attr_name())
      fail(fmt::format("attribute \"{}\" refers to the function attribute \"{}\", which only a "
                       "function body may do",
                       a.name(), a.ref_attr_name()));
    std::vector<AttributeProto::AttributeType> set = valueFields(a);
    auto others = [&](AttributeProto::AttributeType declared) {
      std::vector<std::string> names;
      for (auto t : set)
        if (t != declared) names.push_back(attrTypeName(t));
      return fmt::format("{}", fmt::join(names, " and "));
    };
    // An attribute holds exactly the value of its type (ONNX's checker); a list may be empty.
    if (a.type() == AttributeProto::UNDEFINED) {
      if (set.size() != 1)
        fail(fmt::format("attribute \"{}\" declares no type and holds {}", a.name(),
                         set.empty() ? std::string("no value")
                                     : fmt::format("values of types {}", others(a.type()))));
      continue;
    }
    bool present = std::find(set.begin(), set.end(), a.type()) != set.end();
    if (!present && !isListType(a.type()))
      fail(fmt::format("attribute \"{}\" is declared {} but holds no {} value{}", a.name(),
                       attrTypeName(a.type()), attrTypeName(a.type()),
                       set.empty() ? "" : fmt::format(" (it holds {})", others(a.type()))));
    if (set.size() > (present ? 1u : 0u))
      fail(fmt::format("attribute \"{}\" is declared {} but also holds {}", a.name(),
                       attrTypeName(a.type()), others(a.type())));
  }
}

bool NodeContext::hasAttr(const std::string& name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return true;
  return false;
}

/// The attribute `name` of this node, checked to hold `type`; nullptr when absent.
const AttributeProto* NodeContext::attr(const std::string& name, int type) const {
  const AttributeProto* found = nullptr;
  for (const auto& a : node.attribute()) {
    if (a.name() != name) continue;
    if (found) fail(fmt::format("attribute \"{}\" is given twice", name));
    found = &a;
  }
  if (found && !holds(*found, static_cast<AttributeProto::AttributeType>(type)))
    fail(fmt::format("attribute \"{}\" must be {}, but it is {}", name, attrTypeName(type),
                     found->type() == AttributeProto::UNDEFINED
                         ? std::string("UNDEFINED with no such value")
                         : attrTypeName(found->type())));
  return found;
}

int64_t NodeContext::attrInt(const std::string& name, int64_t dflt) const {
  const auto* a = attr(name, AttributeProto::INT);
  return a ? a->i() : dflt;
}

int64_t NodeContext::requireAttrInt(const std::string& name) const {
  const auto* a = attr(name, AttributeProto::INT);
  if (!a) fail(fmt::format("the required attribute \"{}\" (INT) is missing", name));
  return a->i();
}

float NodeContext::attrFloat(const std::string& name, float dflt) const {
  const auto* a = attr(name, AttributeProto::FLOAT);
  return a ? a->f() : dflt;
}

std::string NodeContext::attrString(const std::string& name, const std::string& dflt) const {
  const auto* a = attr(name, AttributeProto::STRING);
  return a ? a->s() : dflt;
}

std::optional<std::vector<int64_t>> NodeContext::attrInts(const std::string& name) const {
  const auto* a = attr(name, AttributeProto::INTS);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<int64_t> NodeContext::requireAttrInts(const std::string& name) const {
  auto v = attrInts(name);
  if (!v) fail(fmt::format("the required attribute \"{}\" (INTS) is missing", name));
  return *v;
}

std::optional<std::vector<float>> NodeContext::attrFloats(const std::string& name) const {
  const auto* a = attr(name, AttributeProto::FLOATS);
  if (!a) return std::nullopt;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

const TensorProto* NodeContext::attrTensor(const std::string& name) const {
  const auto* a = attr(name, AttributeProto::TENSOR);
  return a ? &a->t() : nullptr;
}

std::string NodeContext::name(size_t i) const {
  std::string base = wantsOutput(i) ? node.output(static_cast<int>(i)) : std::string();
  if (base.empty()) return "";
  std::string n = base;
  for (int k = 1; g.find(n); ++k)
    n = fmt::format("{}.{}", base, k);
  return n;
}

void NodeContext::setOutput(size_t i, ir::NodeId id) {
  if (i >= outputs_.size()) return; // an optional output the model does not ask for
  outputs_[i].node = id;
  outputs_[i].literal.reset();
}

void NodeContext::setOutput(size_t i, Literal lit) {
  if (i >= outputs_.size()) return;
  outputs_[i].node = -1;
  outputs_[i].literal = std::move(lit);
}

void NodeContext::setOutputOnnxType(size_t i, int onnxType) {
  if (i < outputs_.size()) outputs_[i].onnxType = onnxType;
}

frontend::Site NodeContext::site() const {
  return frontend::Site{g, nullptr, [this](const std::string& what) { fail(what); },
                        /*lookThroughUnitReshapes=*/true};
}

ir::NodeId NodeContext::splat(ir::DType t, const ir::Shape& shape, double v) {
  return g.constant(t, shape, {v});
}

ir::NodeId NodeContext::splatLike(ir::NodeId x, double v) {
  return frontend::splatLike(site(), x, v, "");
}

ir::NodeId NodeContext::constant(const Literal& lit, const std::string& nm) {
  try {
    return materialize(g, lit, nm);
  } catch (const UnsupportedError& e) {
    unsupported(e.what());
  }
}

ir::Shape NodeContext::broadcastShape(const ir::Shape& a, const ir::Shape& b) const {
  auto out = frontend::broadcastShape({a, b});
  if (!out)
    fail(fmt::format("shapes {} and {} cannot be broadcast together (numpy rules: trailing dims "
                     "must match or be 1)",
                     ir::shapeStr(a), ir::shapeStr(b)));
  return *out;
}

ir::NodeId NodeContext::broadcastTo(ir::NodeId x, const ir::Shape& shape, const std::string& nm) {
  return frontend::broadcastTo(site(), x, shape, nm);
}

std::pair<ir::NodeId, ir::NodeId> NodeContext::broadcastPair(ir::NodeId a, ir::NodeId b) {
  ir::Shape s = broadcastShape(typeOf(a).shape, typeOf(b).shape);
  return {broadcastTo(a, s), broadcastTo(b, s)};
}

ir::NodeId NodeContext::convertTo(ir::NodeId x, ir::DType t, const std::string& nm) {
  if (typeOf(x).dtype == t) return x;
  return g.convert(x, t, nm);
}

ir::NodeId NodeContext::reshapeTo(ir::NodeId x, const ir::Shape& shape, const std::string& nm) {
  if (typeOf(x).shape == shape) return x;
  return g.reshape(x, shape, nm);
}

ir::NodeId NodeContext::reduceKeep(ir::ReduceKind kind, ir::NodeId x,
                                   const std::vector<int64_t>& axes, bool keepdims,
                                   const std::string& nm) {
  ir::Shape kept = frontend::reducedShape(typeOf(x).shape, axes, /*keepdims=*/true);
  ir::NodeId r = g.reduce(kind, x, axes, keepdims ? "" : nm);
  if (!keepdims) return r;
  return g.reshape(r, kept, nm);
}

int64_t NodeContext::axis(int64_t a, size_t r, const std::string& what) const {
  auto normalized = frontend::normalizeAxis(a, r);
  if (!normalized) fail(fmt::format("{} {} is out of range for rank {}", what, a, r));
  return *normalized;
}

// ---------------------------------------------------------------- the model

namespace {

struct ModelImporter {
  std::string source;
  int opset = 0;
  int trainingOpset = 0; // the version of ai.onnx.preview.training imported, 0 if none
  /// The opset node `n` is lowered at: its domain's version.
  int opsetOf(const ::onnx::NodeProto& n) const {
    return n.domain() == kTrainingDomain ? trainingOpset : opset;
  }
  ir::Graph g;
  std::map<std::string, Value> values;
  /// Fresh-name counters past every name of the model that looks like an IR fresh name
  /// ("constant.1"), so that no intermediate takes a name the model uses (freshNameCounters).
  std::vector<int> nameCounters;

  static constexpr int64_t kFoldLimit = int64_t(1) << 20; // elements folded on the host at most

  void importModel(const ::onnx::ModelProto& m);
  /// The default domain's opset version; nullopt when the model imports none.
  std::optional<int64_t> defaultOpset(const ::onnx::ModelProto& m) const;
  ImportOptions options;
  /// The IR symbol of each dim_param, and every symbol given out. Distinct dim_params get
  /// distinct symbols ("a-b" and "a_b" both read a_b as identifiers: one is a_b_2), and an
  /// unnamed dim a symbol no dim_param has: a shared symbol would make the two sizes one.
  std::map<std::string, std::string> dimSymbols;
  std::set<std::string> symbolsUsed;
  /// Reserves the dim_params of `graph`'s inputs that are identifiers already, so that they
  /// keep their names whatever order the inputs come in.
  void reserveDimSymbols(const ::onnx::GraphProto& graph);
  std::string dimSymbol(const std::string& dimParam);
  std::string freshSymbol(const std::string& base);
  void addInput(const ::onnx::ValueInfoProto& vi);
  /// Fails unless initializer `init`, which shadows graph input `vi`, has its type and shape.
  void checkShadowedInput(const ::onnx::ValueInfoProto& vi, const Value& init) const;
  void checkOperators(const ::onnx::GraphProto& graph, int64_t version) const;
  void importNode(const ::onnx::NodeProto& n);
  bool foldNode(const ::onnx::NodeProto& n, std::vector<Value*>& inputs);
  /// The graph's outputs: the model's, in order, each a distinct value with the model's name.
  void setGraphOutputs(const ::onnx::GraphProto& graph);
  /// Gives node `id` a fresh name (its name plus ".k"), freeing its name for an output.
  void renameValue(ir::NodeId id);
  /// Runs the node's lowering; an InputError the IR raises (a bad permutation, a size
  /// overflow...) gets the node's location, the prefix of every error (docs/onnx.md).
  void lower(NodeContext& ctx) const;
};

/// An IR error's message without its "op \"name\" (kind): " prefix (ir::describe), whose name
/// is internal: "kind: what" (the IR op the node lowers to), or "what" without `keepKind`.
std::string irMessage(const std::string& message, bool keepKind = true) {
  if (message.rfind("op \"", 0) != 0) return message;
  size_t close = message.find("\" (", 4);
  if (close == std::string::npos) return message;
  size_t kindEnd = message.find("): ", close + 3);
  if (kindEnd == std::string::npos) return message;
  std::string what = message.substr(kindEnd + 3);
  if (!keepKind) return what;
  return fmt::format("{}: {}", message.substr(close + 3, kindEnd - (close + 3)), what);
}

namespace {

/// A type weft holds widened wraps at its own width in ONNX (uint8 200 + 100 is 44, 3 - 5 is
/// 254): the results of the operators that can leave its range are brought back into it (the
/// low bits, as Cast keeps them: castTo), and the operators whose result has their input's
/// type pass the type on, so that a chain of them keeps it. The widened value is exact, so
/// its low bits are the narrow type's result. UINT64 is i64 with the same bits, which wrap
/// alike by themselves; it is passed on so that the operators after know it (unsigned64.cc).
void keepNarrowTypes(NodeContext& c) {
  static const std::set<std::string> wraps = {
      "Abs",   "Add",        "BitShift",  "CumSum", "Div", "MatMul", "Mul", "Neg",
      "Pow",   "ReduceL1",   "ReduceProd", "ReduceSum", "ReduceSumSquare", "Sub", "Sum"};
  static const std::set<std::string> keeps = {
      "Clip",    "Concat",         "DepthToSpace", "Dropout", "Expand",    "Flatten",
      "Gather",  "GatherElements", "Identity",     "Max",     "Min",       "Mod",
      "Pad",     "ReduceMax",      "ReduceMin",    "Relu",    "Reshape",   "Sign",
      "Slice",   "SpaceToDepth",   "Split",        "Squeeze", "Tile",      "Transpose",
      "Trilu",   "Unsqueeze",      "Where"};
  const std::string& op = c.node.op_type();
  const bool wrap = wraps.count(op) > 0;
  if (!wrap && !keeps.count(op)) return;
  int narrow = 0;
  for (size_t i = 0; i < c.numInputs() && narrow == 0; ++i)
    if (heldNarrowBits(c.onnxType(i)) != 0 || isUnsigned64(c.onnxType(i))) narrow = c.onnxType(i);
  if (narrow == 0) return;
  const ir::DType held = *irDTypeOf(narrow);
  for (size_t i = 0; i < c.outputs().size(); ++i) {
    const ir::NodeId out = c.outputs()[i].node;
    if (out < 0 || c.outputs()[i].literal || c.typeOf(out).dtype != held) continue;
    if (wrap) c.setOutput(i, castTo(c, out, narrow, ""));
    c.setOutputOnnxType(i, narrow);
  }
}

} // namespace

void ModelImporter::lower(NodeContext& ctx) const {
  std::string where = ctx.where();
  ctx.checkAttributeValues();
  ctx.checkSignature();
  try {
    lowerWithOnnxTypes(ctx, operatorTable().at(operatorKey(ctx.node)));
    keepNarrowTypes(ctx);
  } catch (const InputError& e) {
    std::string what = e.what();
    if (what.rfind(where + ": ", 0) == 0) throw; // located already (UnsupportedError included)
    throw InputError(fmt::format("{}: {}", where, irMessage(what)));
  }
}

/// For each op kind, the highest n of a model name "<kind>.<n>" (the IR's fresh names), so
/// that fresh names start past them. Names whose n does not fit an int are never reached.
std::vector<int> freshNameCounters(const ::onnx::GraphProto& graph) {
  std::map<std::string, int> kinds;
  for (int k = 0; k < ir::kNumOpKinds; ++k)
    kinds[std::string(ir::opName(static_cast<ir::OpKind>(k)))] = k;
  std::vector<int> counters(ir::kNumOpKinds, 0);
  auto see = [&](const std::string& name) {
    size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot + 1 >= name.size() || name.size() - dot > 10) return;
    auto kind = kinds.find(name.substr(0, dot));
    if (kind == kinds.end()) return;
    int n = 0;
    for (size_t i = dot + 1; i < name.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(name[i]))) return;
      n = n * 10 + (name[i] - '0'); // at most 9 digits: no overflow
    }
    counters[static_cast<size_t>(kind->second)] =
        std::max(counters[static_cast<size_t>(kind->second)], n);
  };
  for (const auto& vi : graph.input())
    see(vi.name());
  for (const auto& t : graph.initializer())
    see(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output())
      see(o);
  for (const auto& vi : graph.output())
    see(vi.name());
  return counters;
}

std::optional<int64_t> ModelImporter::defaultOpset(const ::onnx::ModelProto& m) const {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return std::nullopt;
}

void ModelImporter::reserveDimSymbols(const ::onnx::GraphProto& graph) {
  for (const auto& vi : graph.input()) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
    for (const auto& d : vi.type().tensor_type().shape().dim())
      if (d.has_dim_param() && symbolName(d.dim_param()) == d.dim_param()) {
        dimSymbols[d.dim_param()] = d.dim_param();
        symbolsUsed.insert(d.dim_param());
      }
  }
}

std::string ModelImporter::dimSymbol(const std::string& dimParam) {
  auto it = dimSymbols.find(dimParam);
  if (it != dimSymbols.end()) return it->second;
  return dimSymbols[dimParam] = freshSymbol(symbolName(dimParam));
}

std::string ModelImporter::freshSymbol(const std::string& base) {
  std::string s = base;
  for (int k = 2; symbolsUsed.count(s); ++k)
    s = fmt::format("{}_{}", base, k);
  symbolsUsed.insert(s);
  return s;
}

void ModelImporter::addInput(const ::onnx::ValueInfoProto& vi) {
  std::string where = fmt::format("{}: graph input \"{}\"", source, vi.name());
  if (!vi.type().has_tensor_type())
    throw UnsupportedError(
        where + ": only tensor inputs are supported (not sequences, maps or optionals)", "");
  const auto& tt = vi.type().tensor_type();
  auto dtype = irDTypeOf(tt.elem_type());
  if (!dtype)
    throw UnsupportedError(
        fmt::format("{}: element type {} is not supported", where, onnxTypeName(tt.elem_type())),
        "");
  if (!tt.has_shape())
    throw UnsupportedError(
        where + ": has no shape (rank unknown); weft needs the rank of every input", "");
  ir::Shape shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0)
        failAt(where, fmt::format("dim {} is negative ({})", i, d.dim_value()));
      shape.push_back(ir::Dim(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      shape.push_back(ir::Dim::symbol(dimSymbol(d.dim_param())));
    } else {
      std::string unnamed = symbolName(fmt::format("{}_{}", vi.name(), i));
      shape.push_back(ir::Dim::symbol(freshSymbol(unnamed)));
    }
  }
  Value v;
  v.name = vi.name();
  v.graphInput = true;
  v.onnxType = tt.elem_type();
  if (auto frozen = options.frozenInputs.find(vi.name()); frozen != options.frozenInputs.end()) {
    v.literal = toLiteral(frozen->second);
    if (v.literal->dtype != *dtype || v.literal->shape.size() != shape.size())
      failAt(where, fmt::format("the frozen value {} does not match the input's type {}",
                                frozen->second.typeStr(), ir::TensorType{*dtype, shape}.str()));
  } else {
    try {
      v.node = g.parameter(vi.name(), {*dtype, shape});
    } catch (const InputError& e) { // e.g. dims whose product overflows int64
      failAt(where, irMessage(e.what(), /*keepKind=*/false));
    }
  }
  values[vi.name()] = std::move(v);
}

void ModelImporter::checkShadowedInput(const ::onnx::ValueInfoProto& vi, const Value& init) const {
  // The initializer is the input's default value: it must be a value the input could take.
  if (!vi.type().has_tensor_type()) return;
  const auto& tt = vi.type().tensor_type();
  std::string where = fmt::format("{}: initializer \"{}\"", source, vi.name());
  if (tt.elem_type() != 0 && tt.elem_type() != init.onnxType)
    failAt(where, fmt::format("has type {} but the graph input it provides the default of is {}",
                              onnxTypeName(init.onnxType), onnxTypeName(tt.elem_type())));
  if (!tt.has_shape()) return;
  const std::vector<int64_t>& shape = init.literal->shape;
  bool fits = static_cast<size_t>(tt.shape().dim_size()) == shape.size();
  std::vector<std::string> dims;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param());
    if (fits && d.has_dim_value() && d.dim_value() != shape[static_cast<size_t>(i)]) fits = false;
  }
  if (!fits)
    failAt(where, fmt::format("has shape [{}] but the graph input it provides the default of has "
                              "shape [{}]",
                              fmt::join(shape, ", "), fmt::join(dims, ", ")));
}

void ModelImporter::checkOperators(const ::onnx::GraphProto& graph, int64_t version) const {
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const auto& n : graph.node()) {
    bool defaultDomain = isDefaultDomain(n.domain());
    std::string key = n.domain() + "::" + n.op_type();
    if (operatorTable().count(operatorKey(n))) continue;
    if (!seen.insert(key).second) continue;
    std::string name =
        n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name();
    if (defaultDomain)
      problems.push_back(fmt::format("unsupported operator {} (node \"{}\", opset {})", n.op_type(),
                                     name, version));
    else
      problems.push_back(fmt::format(
          "unsupported operator {}.{} (node \"{}\"; only the default ONNX domain and the "
          "optimizers of ai.onnx.preview.training are supported)",
          n.domain(), n.op_type(), name));
  }
  if (problems.empty()) return;
  std::string first;
  for (const auto& n : graph.node())
    if (!operatorTable().count(operatorKey(n))) {
      first = n.op_type();
      break;
    }
  throw UnsupportedError(fmt::format("{}: {}; see docs/onnx.md for the operators weft lowers",
                                     source, fmt::join(problems, "; ")),
                         first);
}

bool ModelImporter::foldNode(const ::onnx::NodeProto& n, std::vector<Value*>& inputs) {
  int64_t elements = 0;
  for (Value* v : inputs) {
    if (!v) continue;
    if (!v->literal) return false;
    elements += v->literal->numElements();
  }
  if (elements > kFoldLimit) return false;
  // Lower the node into a scratch graph, then run the reference interpreter on it: one
  // lowering per operator serves both folding and import. The known inputs are parameters
  // of the scratch graph fed their exact values (an IR constant holds doubles, which round
  // int64 past 2^53), and keep their literals for the operands the lowering reads.
  ir::Graph scratch;
  scratch.restoreBuildState({}, nameCounters);
  std::vector<Value> copies;
  copies.reserve(inputs.size());
  std::vector<Value*> scratchInputs;
  std::vector<HostTensor> fed;
  std::map<const Value*, Value*> copyOf; // one parameter for a value used twice
  for (Value* v : inputs) {
    if (!v) {
      scratchInputs.push_back(nullptr);
      continue;
    }
    if (auto it = copyOf.find(v); it != copyOf.end()) {
      scratchInputs.push_back(it->second);
      continue;
    }
    ir::NodeId p = -1;
    try {
      p = scratch.parameter(fmt::format("folded_input_{}", fed.size()), v->literal->type());
    } catch (const InputError&) {
      return false; // not a type the IR takes as a parameter: import the node instead
    }
    fed.push_back(toHostTensor(*v->literal));
    copies.push_back(Value{v->name, p, v->literal, v->graphInput, v->onnxType});
    scratchInputs.push_back(&copies.back());
    copyOf[v] = &copies.back();
  }
  NodeContext ctx(scratch, n, opsetOf(n), source, scratchInputs);
  lower(ctx);
  std::vector<ir::NodeId> computed;
  for (const Value& out : ctx.outputs())
    if (!out.literal && out.node >= 0) computed.push_back(out.node);
  std::vector<HostTensor> results;
  if (!computed.empty()) {
    for (ir::NodeId id : computed) {
      const ir::Shape& shape = scratch.node(id).type.shape;
      if (!ir::isStatic(shape)) return false;
      // A large result (an Expand or ConstantOfShape of constants) stays a node of the graph:
      // folding it would hold every element on the host.
      int64_t n = 1;
      for (const ir::Dim& d : shape)
        if (__builtin_mul_overflow(n, d.size(), &n)) return false;
      if (n > kFoldLimit) return false;
    }
    scratch.setOutputs(computed);
    try {
      results = ir::interpret(scratch, fed);
    } catch (const InputError& e) {
      failAt(ctx.where(), irMessage(e.what()));
    }
  }
  size_t k = 0;
  for (const Value& out : ctx.outputs()) {
    if (out.name.empty()) continue;
    Value v{out.name, -1, out.literal, false, out.onnxType};
    if (!out.literal) {
      if (out.node < 0) continue; // an output the lowering does not produce
      v.literal = toLiteral(results[k++]);
    }
    values[out.name] = std::move(v);
  }
  return true;
}

void ModelImporter::importNode(const ::onnx::NodeProto& n) {
  std::string node =
      n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name();
  std::vector<Value*> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string& name = n.input(i);
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    auto it = values.find(name);
    if (it == values.end()) {
      failAt(
          source,
          fmt::format("node \"{}\" ({}): input {} \"{}\" is not an initializer, a graph input or "
                      "the output "
                      "of an earlier node (missing initializer or nodes out of topological order)",
                      node, n.op_type(), i, name));
    }
    inputs.push_back(&it->second);
  }
  // ONNX graphs are in SSA form: each value name is assigned once.
  for (int i = 0; i < n.output_size(); ++i) {
    const std::string& name = n.output(i);
    if (name.empty()) continue;
    bool twice = values.count(name) > 0;
    for (int j = 0; j < i && !twice; ++j)
      twice = n.output(j) == name;
    if (twice)
      failAt(source,
             fmt::format("node \"{}\" ({}): output {} \"{}\" is already defined (by a graph "
                         "input, an initializer or another output); ONNX assigns each "
                         "value once",
                         node, n.op_type(), i, name));
  }
  if (foldNode(n, inputs)) return;
  NodeContext ctx(g, n, opsetOf(n), source, inputs);
  lower(ctx);
  for (const Value& out : ctx.outputs()) {
    if (out.name.empty() || (out.node < 0 && !out.literal)) continue;
    values[out.name] = out;
  }
}

void ModelImporter::importModel(const ::onnx::ModelProto& m) {
  if (!m.has_graph() || m.ir_version() <= 0)
    failAt(source, "not an ONNX model (no ir_version or no graph in the protobuf)");
  std::optional<int64_t> version = defaultOpset(m);
  // The range check comes before the version is narrowed to an int (2^32 + 13 is not 13).
  if (version && *version >= kMinOpset && *version <= kMaxOpset) opset = static_cast<int>(*version);
  // Operators of other domains are reported even without a default opset.
  checkOperators(m.graph(), version.value_or(0));
  // ai.onnx.preview.training's optimizers are read at its opset (1), and a model of them alone
  // (ONNX's test_adam...) need not import the default domain.
  for (const auto& o : m.opset_import())
    if (o.domain() == kTrainingDomain) {
      if (o.version() != 1)
        failAt(source, fmt::format("the model imports opset {} of {}; weft supports its opset 1",
                                   o.version(), kTrainingDomain));
      trainingOpset = 1;
    }
  bool trainingOnly = m.graph().node_size() > 0;
  for (const auto& n : m.graph().node()) {
    if (n.domain() != kTrainingDomain)
      trainingOnly = false;
    else if (trainingOpset == 0)
      failAt(source, fmt::format("node \"{}\" ({}) is of domain {}, which the model does not "
                                 "import (opset_import has no entry for it)",
                                 n.name().empty() && n.output_size() ? n.output(0) : n.name(),
                                 n.op_type(), kTrainingDomain));
  }
  if (!version && !trainingOnly)
    failAt(source, "the model imports no opset of the default ONNX domain (opset_import has no "
                   "entry for \"\" or "
                   "\"ai.onnx\")");
  if (version && (*version < kMinOpset || *version > kMaxOpset))
    failAt(source,
           fmt::format(
               "the model imports opset {} of the default domain; weft supports opsets {} to {}",
               *version, kMinOpset, kMaxOpset));
  const auto& graph = m.graph();
  nameCounters = freshNameCounters(graph);
  g.restoreBuildState({}, nameCounters);
  for (const auto& init : graph.initializer()) {
    std::string where = fmt::format("{}: initializer \"{}\"", source, init.name());
    if (values.count(init.name())) failAt(where, "the name is used by another initializer");
    Value v;
    v.name = init.name();
    v.literal = literalFromTensorProto(init, where);
    v.onnxType = init.data_type();
    values[init.name()] = std::move(v);
  }
  std::set<std::string> inputNames;
  reserveDimSymbols(graph);
  for (const auto& vi : graph.input()) {
    if (!inputNames.insert(vi.name()).second)
      failAt(source, fmt::format("graph input \"{}\" is listed twice", vi.name()));
    if (auto init = values.find(vi.name()); init != values.end())
      checkShadowedInput(vi, init->second);
    else
      addInput(vi);
  }
  for (const auto& n : graph.node())
    importNode(n);
  setGraphOutputs(graph);
  ir::verify(g);
}

void ModelImporter::setGraphOutputs(const ::onnx::GraphProto& graph) {
  if (graph.output_size() == 0) failAt(source, "the graph has no outputs");
  std::set<std::string> names;
  for (const auto& o : graph.output())
    if (!names.insert(o.name()).second)
      failAt(source, fmt::format("graph output \"{}\" is listed twice", o.name()));
  std::vector<ir::NodeId> outputs;
  for (const auto& o : graph.output()) {
    auto it = values.find(o.name());
    if (it == values.end())
      failAt(source,
             fmt::format("graph output \"{}\" is not produced by any node, initializer or input",
                         o.name()));
    // A name an intermediate took (a lowering naming more than its last op) is given up.
    if (auto taken = g.find(o.name()); taken && *taken != it->second.node) renameValue(*taken);
    Value& v = it->second;
    if (v.node < 0) {
      try {
        v.node = materialize(g, *v.literal, o.name());
      } catch (const UnsupportedError& e) {
        throw UnsupportedError(fmt::format("{}: graph output \"{}\": {}", source, o.name(),
                                           e.what()),
                               "");
      } catch (const InputError& e) {
        failAt(source, fmt::format("graph output \"{}\": {}", o.name(),
                                   irMessage(e.what(), /*keepKind=*/false)));
      }
    }
    // A lowering that passes its input through (Identity, a whole Slice, a no-op Squeeze...)
    // leaves the input's value under the output's name, and two outputs may be one tensor: such
    // an output is a named copy, an identity reshape, which the passes keep as a distinct named
    // output (passes::Rewriter::finish). Every output is then its own value, named as in the
    // model.
    ir::NodeId id = v.node;
    if (g.node(id).name != o.name() ||
        std::find(outputs.begin(), outputs.end(), id) != outputs.end())
      id = g.reshape(id, g.node(id).type.shape, o.name());
    outputs.push_back(id);
  }
  g.setOutputs(outputs);
}

void ModelImporter::renameValue(ir::NodeId id) {
  const std::string& base = g.node(id).name;
  std::string fresh = base;
  for (int k = 1; g.find(fresh); ++k)
    fresh = fmt::format("{}.{}", base, k);
  // The IR has no renaming: rebuild the graph in the same order (node ids stay).
  ir::Graph h;
  h.restoreBuildState(g.symbolEqualities(), g.nameCounters());
  for (const ir::Node& n : g.nodes())
    h.add(n.kind, n.operands, n.attrs, n.type, n.id == id ? fresh : n.name);
  g = std::move(h);
}

} // namespace

namespace {
::onnx::ModelProto parseModel(const std::string& bytes, const std::string& source) {
  ::onnx::ModelProto model;
  if (bytes.empty()) failAt(source, "the file is empty, not an ONNX model");
  if (!model.ParseFromString(bytes))
    failAt(source, "not a valid ONNX model: the protobuf cannot be parsed (a truncated or corrupt "
                   "file, or not an "
                   "ONNX file)");
  return model;
}
} // namespace

ir::Graph importOnnxBytes(const std::string& bytes, const std::string& source,
                          const ImportOptions& options) {
  ::onnx::ModelProto model = parseModel(bytes, source);
  ModelImporter importer;
  importer.source = source;
  importer.options = options;
  importer.importModel(model);
  return std::move(importer.g);
}

ir::Graph importOnnx(const std::string& path, const ImportOptions& options) {
  return importOnnxBytes(readFile(path), path, options);
}

std::vector<std::string> onnxInputNames(const std::string& path) {
  ::onnx::ModelProto model = parseModel(readFile(path), path);
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer())
    initializers.insert(init.name());
  std::vector<std::string> names;
  for (const auto& vi : model.graph().input())
    if (!initializers.count(vi.name())) names.push_back(vi.name());
  return names;
}

HostTensor parseTensorProto(const std::string& bytes, const std::string& source) {
  TensorProto t;
  if (!t.ParseFromString(bytes))
    failAt(source, "not a valid TensorProto (the protobuf cannot be parsed)");
  return toHostTensor(literalFromTensorProto(t, source));
}

HostTensor readTensorProtoFile(const std::string& path) {
  return parseTensorProto(readFile(path), path);
}

bool looksLikeOnnx(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) return true;
  // Only a regular file is sniffed: reading a FIFO's first byte would block, or take it from
  // the reader that follows (which refuses anything but a regular file: read_file.h).
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  // ModelProto's field 1 (ir_version, a varint) is written first by every ONNX writer: tag 0x08.
  return in.get(first) && first == 0x08;
}

} // namespace weft::onnx
