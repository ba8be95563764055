#include "frontend/json_reader.h"
#include "frontend/weights_file.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

#include "frontend/composite_ops.h"
#include "frontend/read_file.h"
#include "frontend/unique_keys_json.h"
#include "weft/error.h"

namespace weft::frontend {
namespace {

using json = nlohmann::json;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

[[noreturn]] void fail(const std::string& message) {
  throw InputError(message);
}

/// nlohmann reports a byte offset; users want a line and a column (both 1-based).
std::pair<size_t, size_t> lineAndColumn(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < text.size() && i + 1 < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// "; did you mean "x" or "y"?" for the candidates closest to `word`, or "" when none is close.
std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  // editDistance is quadratic: compared only where it can be within `limit` (the lengths
  // differ by no more) and for names of a readable length, so that a 100,000-character name
  // costs a length comparison per candidate, not 10^10 steps.
  constexpr size_t kLongest = 256;
  std::vector<std::string> close;
  size_t limit = std::max<size_t>(1, word.size() / 3);
  for (const auto& c : candidates) {
    size_t apart = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    bool near = !word.empty() && apart <= limit && word.size() <= kLongest &&
                c.size() <= kLongest && editDistance(word, c) <= std::min(limit, word.size() - 1);
    if (near || (word.size() >= 3 && word.size() <= c.size() && c.find(word) != std::string::npos))
      close.push_back(c);
  }
  if (close.empty() || close.size() > 5) return "";
  std::string out = " (did you mean ";
  for (size_t i = 0; i < close.size(); ++i)
    out += fmt::format("{}\"{}\"", i == 0 ? "" : (i + 1 == close.size() ? " or " : ", "), close[i]);
  return out + "?)";
}

std::string jsonTypeName(const json& j) {
  if (j.is_number()) return j.dump();
  if (j.is_string()) return fmt::format("the string {}", j.dump());
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_null()) return "null";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "a value";
}

std::optional<int64_t> asInt64(const json& j) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

/// Reads the fields of one JSON object, remembering which ones the reader knows so that a
/// misspelt field is reported instead of silently ignored.
class Fields {
public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    frontend::fail(fmt::format("{}: field \"{}\": {}", where_, field, what));
  }

  const json* find(const std::string& key) {
    known_.push_back(key);
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  const json& require(const std::string& key, const std::string& what) {
    const json* j = find(key);
    if (!j)
      frontend::fail(fmt::format("{}: field \"{}\" is missing; it must be {}", where_, key, what));
    return *j;
  }

  std::string string(const std::string& key) {
    const json& j = require(key, "a string");
    if (!j.is_string()) fail(key, fmt::format("expected a string, got {}", jsonTypeName(j)));
    return j.get<std::string>();
  }
  int64_t integer(const std::string& key, std::optional<int64_t> byDefault = std::nullopt) {
    const json* j = byDefault ? find(key) : &require(key, "an integer");
    if (!j) return *byDefault;
    auto v = asInt64(*j);
    if (!v) fail(key, fmt::format("expected an integer, got {}", jsonTypeName(*j)));
    return *v;
  }
  std::vector<int64_t> integers(const std::string& key,
                                std::optional<std::vector<int64_t>> byDefault = std::nullopt) {
    const json* j = byDefault ? find(key) : &require(key, "an array of integers");
    if (!j) return *byDefault;
    if (!j->is_array())
      fail(key, fmt::format("expected an array of integers, got {}", jsonTypeName(*j)));
    std::vector<int64_t> out;
    for (size_t i = 0; i < j->size(); ++i) {
      auto v = asInt64((*j)[i]);
      if (!v)
        fail(key, fmt::format("element {} is {}; expected an integer", i, jsonTypeName((*j)[i])));
      out.push_back(*v);
    }
    return out;
  }
  double number(const std::string& key, std::optional<double> byDefault = std::nullopt) {
    const json* j = byDefault ? find(key) : &require(key, "a number");
    if (!j) return *byDefault;
    return numberOf(key, *j);
  }
  /// A number, a bool (1/0) or one of the strings "inf", "-inf", "nan" (JSON has no spelling
  /// for those).
  double numberOf(const std::string& key, const json& j) const {
    if (j.is_number_integer()) {
      // Values are held as double (ir::ConstantAttrs): an integer a double cannot hold exactly
      // (past 2^53) would silently become another number.
      double d = j.get<double>();
      bool exact = j.is_number_unsigned()
                       ? d < 18446744073709551616.0 && static_cast<uint64_t>(d) == j.get<uint64_t>()
                       : ir::exactInDouble(j.get<int64_t>());
      if (!exact)
        fail(key, fmt::format("{} cannot be held exactly: weft holds values as double, exact for "
                              "integers up to 2^53 in magnitude",
                              j.dump()));
      return d;
    }
    if (j.is_number()) return j.get<double>();
    if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
    if (j.is_string()) {
      const auto& s = j.get_ref<const std::string&>();
      if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(key,
         fmt::format("expected a number (or \"inf\", \"-inf\", \"nan\"), got {}", jsonTypeName(j)));
  }
  DType dtype(const std::string& key) {
    std::string s = string(key);
    auto t = ir::parseDType(s);
    if (!t)
      fail(key, fmt::format(
                    "unknown dtype \"{}\"; use one of f32, f16, bf16, f64, i8, i32, i64, bool", s));
    return *t;
  }
  Shape shape(const std::string& key) {
    const json& j = require(key, "an array of sizes");
    if (!j.is_array())
      fail(key, fmt::format("expected an array of sizes, got {}", jsonTypeName(j)));
    Shape out;
    for (size_t i = 0; i < j.size(); ++i) {
      const json& d = j[i];
      if (auto v = asInt64(d); v && *v >= 0) {
        out.push_back(ir::Dim(*v));
        continue;
      }
      std::optional<ir::Dim> parsed;
      if (d.is_string()) parsed = ir::Dim::parse(d.get<std::string>());
      if (!parsed)
        fail(key, fmt::format(
                      "dim {} is {}; a dim is a non-negative integer or a symbol product such as "
                      "\"B\", \"B*S\" or \"2*B\"",
                      i, jsonTypeName(d)));
      out.push_back(*parsed);
    }
    return out;
  }

  /// Throws on a field nobody asked for (a typo, or an attribute the op does not take).
  void rejectUnknown() const {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
      std::vector<std::string> allowed = known_;
      std::sort(allowed.begin(), allowed.end());
      allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
      std::string list;
      for (const auto& a : allowed)
        list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
      frontend::fail(fmt::format("{}: unknown field \"{}\"; the fields allowed here are {}", where_,
                                 it.key(), list));
    }
  }

private:
  const json& object_;
  std::string where_;
  std::vector<std::string> known_;
};

/// One entry of "ops" before it is built.
struct OpEntry {
  size_t index = 0;
  const json* object = nullptr;
  std::string name, op;
  std::vector<std::string> inputs;
};

class GraphBuilder;

/// What a lowering sees of the op it lowers.
struct OpContext {
  GraphBuilder& builder;
  ir::Graph& g;
  const OpEntry& entry;
  Fields fields;
  std::vector<NodeId> in;

  const std::string& name() const { return entry.name; }
  const std::string& where() const { return fields.where(); }
  [[noreturn]] void fail(const std::string& what) const {
    frontend::fail(fmt::format("{}: {}", where(), what));
  }
  const ir::TensorType& type(NodeId id) const { return g.node(id).type; }
  size_t rank(NodeId id) const { return type(id).shape.size(); }

  void expectInputs(size_t lo, size_t hi, const char* what) const {
    if (in.size() < lo || in.size() > hi)
      fail(fmt::format("field \"inputs\": {} takes {}, got {}", entry.op, what, in.size()));
  }
  /// A Python-style axis (negative counts from the end) checked against `rank`.
  int64_t axis(int64_t a, size_t rank, const std::string& field) const {
    auto normalized = normalizeAxis(a, rank);
    if (!normalized) {
      int64_t r = static_cast<int64_t>(rank);
      fields.fail(field, fmt::format("axis {} is out of range for rank {} (allowed: {}..{})", a,
                                     rank, -r, r - 1));
    }
    return *normalized;
  }
  std::vector<int64_t> axes(const std::vector<int64_t>& raw, size_t rank,
                            const std::string& field) const {
    std::vector<int64_t> out;
    for (int64_t a : raw)
      out.push_back(axis(a, rank, field));
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end())
      fields.fail(field, fmt::format("axes [{}] name an axis twice", fmt::join(raw, ", ")));
    return out;
  }
  std::string sub(const std::string& suffix) const { return entry.name + "." + suffix; }

  /// Where the composite ops (composite_ops.h) build this op's expansion: intermediates
  /// named "<op name>.<suffix>", problems reported at this op.
  Site site() const {
    return Site{g, [this](const std::string& suffix) { return sub(suffix); },
                [this](const std::string& what) { fail(what); }};
  }
  /// Fails unless the `axes` of inputs[0] a mean divides by have static sizes.
  void requireStaticCount(NodeId x, const std::vector<int64_t>& axes) const {
    const Shape& shape = type(x).shape;
    if (auto a = reducedCount(shape, axes).symbolicAxis)
      fail(fmt::format(
          "axis {} of inputs[0] has symbolic size {}; {} divides by the axis size, which must "
          "be static",
          *a, shape[static_cast<size_t>(*a)].str(), entry.op));
  }
};

using Lowering = std::function<NodeId(OpContext&)>;

// --- implicit broadcasting (numpy rules), made explicit with broadcast_in_dim ---

void broadcastInputs(OpContext& c) {
  std::vector<Shape> shapes;
  for (NodeId id : c.in)
    shapes.push_back(c.type(id).shape);
  size_t i = 0;
  std::optional<Shape> target = broadcastShape(shapes, &i);
  if (!target) {
    std::string list;
    for (size_t j = 0; j < shapes.size(); ++j)
      list += fmt::format("{}{}", j ? ", " : "", ir::shapeStr(shapes[j]));
    c.fail(fmt::format(
        "inputs[{}] \"{}\" has shape {} which does not broadcast with the other inputs ({}); "
        "sizes must match or be 1 (numpy rules), right-aligned",
        i, c.entry.inputs[i], ir::shapeStr(shapes[i]), list));
  }
  Site site = c.site();
  for (size_t k = 0; k < c.in.size(); ++k)
    c.in[k] = broadcastTo(site, c.in[k], *target, c.sub(fmt::format("broadcast{}", k)));
}

// --- IR primitives ---

Lowering unaryOp(OpKind k) {
  return [k](OpContext& c) {
    c.expectInputs(1, 1, "one input");
    return c.g.unary(k, c.in[0], c.name());
  };
}

Lowering binaryOp(OpKind k) {
  return [k](OpContext& c) {
    c.expectInputs(2, 2, "two inputs");
    broadcastInputs(c);
    return c.g.binary(k, c.in[0], c.in[1], c.name());
  };
}

NodeId lowerCompare(OpContext& c) {
  c.expectInputs(2, 2, "two inputs");
  std::string dir = c.fields.string("direction");
  std::string lower = dir;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  auto d = ir::parseCompareDir(lower);
  if (!d)
    c.fields.fail("direction",
                  fmt::format("unknown direction \"{}\"; use one of eq, ne, lt, le, gt, ge", dir));
  broadcastInputs(c);
  return c.g.compare(*d, c.in[0], c.in[1], c.name());
}

NodeId lowerSelect(OpContext& c) {
  c.expectInputs(3, 3, "three inputs (predicate, on_true, on_false)");
  broadcastInputs(c);
  return c.g.select(c.in[0], c.in[1], c.in[2], c.name());
}

NodeId lowerClamp(OpContext& c) {
  c.expectInputs(3, 3, "three inputs (lo, x, hi)");
  broadcastInputs(c);
  return c.g.clamp(c.in[0], c.in[1], c.in[2], c.name());
}

NodeId lowerConvert(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  return c.g.convert(c.in[0], c.fields.dtype("dtype"), c.name());
}

NodeId lowerConstant(OpContext& c) {
  c.expectInputs(0, 0, "no inputs");
  DType t = c.fields.dtype("dtype");
  Shape shape = c.fields.shape("shape");
  const json* one = c.fields.find("value");
  const json* many = c.fields.find("values");
  if ((one != nullptr) == (many != nullptr))
    c.fail("a constant needs exactly one of \"value\" (one number, splat over the shape) and "
           "\"values\" (all "
           "elements, row-major)");
  std::vector<double> values;
  if (one) {
    values.push_back(c.fields.numberOf("value", *one));
  } else {
    if (!many->is_array())
      c.fields.fail("values",
                    fmt::format("expected an array of numbers, got {}", jsonTypeName(*many)));
    for (const json& v : *many)
      values.push_back(c.fields.numberOf("values", v));
    if (values.empty()) c.fields.fail("values", "needs at least one number");
  }
  return c.g.constant(t, std::move(shape), std::move(values), c.name());
}

NodeId lowerIota(OpContext& c) {
  c.expectInputs(0, 0, "no inputs");
  DType t = c.fields.dtype("dtype");
  Shape shape = c.fields.shape("shape");
  int64_t axis = c.axis(c.fields.integer("axis"), shape.size(), "axis");
  return c.g.iota(t, std::move(shape), axis, c.name());
}

NodeId lowerBroadcastInDim(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  Shape shape = c.fields.shape("shape");
  return c.g.broadcastInDim(c.in[0], std::move(shape), c.fields.integers("dims"), c.name());
}

NodeId lowerReshape(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  return c.g.reshape(c.in[0], c.fields.shape("shape"), c.name());
}

NodeId lowerTranspose(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  return c.g.transpose(c.in[0], c.fields.integers("perm"), c.name());
}

NodeId lowerSlice(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  std::vector<int64_t> starts = c.fields.integers("starts");
  std::vector<int64_t> limits = c.fields.integers("limits");
  std::vector<int64_t> strides =
      c.fields.integers("strides", std::vector<int64_t>(starts.size(), 1));
  return c.g.slice(c.in[0], std::move(starts), std::move(limits), std::move(strides), c.name());
}

NodeId lowerConcatenate(OpContext& c) {
  c.expectInputs(1, std::numeric_limits<size_t>::max(), "at least one input");
  int64_t axis = c.axis(c.fields.integer("axis"), c.rank(c.in[0]), "axis");
  return c.g.concatenate(c.in, axis, c.name());
}

NodeId lowerPad(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  std::vector<int64_t> low = c.fields.integers("low");
  std::vector<int64_t> high = c.fields.integers("high");
  return c.g.pad(c.in[0], std::move(low), std::move(high), c.fields.number("value", 0.0), c.name());
}

/// Fails unless inputs[1..] (the indices of gather, take, take_along_axis) are integers.
void requireIntegerIndices(const OpContext& c) {
  for (size_t j = 1; j < c.in.size(); ++j)
    if (!ir::isInteger(c.type(c.in[j]).dtype))
      c.fail(fmt::format("field \"inputs\": inputs[{}] \"{}\" is {}; indices are integers", j,
                         c.entry.inputs[j], c.type(c.in[j]).str()));
}

NodeId lowerGather(OpContext& c) {
  c.expectInputs(2, std::numeric_limits<size_t>::max(),
                 "an operand and at least one index operand");
  requireIntegerIndices(c);
  std::vector<int64_t> axes; // in the index operands' order, not sorted
  for (int64_t a : c.fields.integers("axes"))
    axes.push_back(c.axis(a, c.rank(c.in[0]), "axes"));
  std::vector<NodeId> indices(c.in.begin() + 1, c.in.end());
  return c.g.gather(c.in[0], std::move(indices), std::move(axes), c.fields.integers("dims"),
                    c.name());
}

NodeId lowerReduce(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  std::string kind = c.fields.string("kind");
  auto k = ir::parseReduceKind(kind);
  if (!k)
    c.fields.fail(
        "kind",
        fmt::format("unknown reduction \"{}\"; use one of sum, max, min, prod, any, all, logsumexp", kind));
  auto axes = c.axes(c.fields.integers("axes"), c.rank(c.in[0]), "axes");
  return c.g.reduce(*k, c.in[0], std::move(axes), c.name());
}

NodeId lowerDot(OpContext& c) {
  c.expectInputs(2, 2, "two inputs");
  return c.g.dot(c.in[0], c.in[1], c.name());
}

// --- convenience ops, expanded into primitives ---

std::vector<int64_t> axesField(OpContext& c, size_t rank) {
  const json* j = c.fields.find("axes");
  if (!j) c.fail("field \"axes\" is missing; it must be an array of the axes to reduce, e.g. [-1]");
  return c.axes(c.fields.integers("axes"), rank, "axes");
}

NodeId lowerMean(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  auto axes = axesField(c, c.rank(c.in[0]));
  c.requireStaticCount(c.in[0], axes);
  return mean(c.site(), c.in[0], axes, "mean", c.name());
}

NodeId lowerVariance(OpContext& c) {
  c.expectInputs(1, 1, "one input");
  auto axes = axesField(c, c.rank(c.in[0]));
  c.requireStaticCount(c.in[0], axes);
  return variance(c.site(), c.in[0], axes, c.name()).variance;
}

Lowering lowerSoftmax(bool logarithm) {
  return [logarithm](OpContext& c) {
    c.expectInputs(1, 1, "one input");
    NodeId x = c.in[0];
    if (c.rank(x) == 0) c.fail(fmt::format("inputs[0] is a scalar; {} needs an axis", c.entry.op));
    std::vector<int64_t> axes{c.axis(c.fields.integer("axis", -1), c.rank(x), "axis")};
    return softmax(c.site(), x, axes, logarithm, c.name());
  };
}

/// The options of layer_norm and rms_norm: over the last axis, gamma and beta of shape [C]
/// (C = x's last dim) from inputs 1 and 2 when given.
NormOptions normOptions(OpContext& c, double defaultEpsilon) {
  NormOptions o;
  o.epsilon = c.fields.number("epsilon", defaultEpsilon);
  NodeId x = c.in[0];
  if (c.rank(x) == 0)
    c.fail(fmt::format("inputs[0] is a scalar; {} needs an axis to work over", c.entry.op));
  o.axes = {static_cast<int64_t>(c.rank(x)) - 1};
  c.requireStaticCount(x, o.axes);
  const Shape& xs = c.type(x).shape;
  Shape want{xs.back()};
  const char* roles[] = {"", "gamma", "beta"};
  for (size_t input = 1; input < c.in.size(); ++input) {
    if (c.type(c.in[input]).shape != want)
      c.fail(fmt::format(
          "inputs[{}] \"{}\" ({}) has shape {} but {} needs {} (the last axis of inputs[0], {})",
          input, c.entry.inputs[input], roles[input], ir::shapeStr(c.type(c.in[input]).shape),
          c.entry.op, ir::shapeStr(want), ir::shapeStr(xs)));
    (input == 1 ? o.gamma : o.beta) = c.in[input];
  }
  return o;
}

NodeId lowerLayerNorm(OpContext& c) {
  c.expectInputs(1, 3, "one to three inputs (x, gamma, beta)");
  return layerNorm(c.site(), c.in[0], normOptions(c, 1e-5), c.name()).y;
}

NodeId lowerRmsNorm(OpContext& c) {
  c.expectInputs(1, 2, "one or two inputs (x, gamma)");
  return rmsNorm(c.site(), c.in[0], normOptions(c, 1e-6), c.name());
}

/// take and take_along_axis: numpy's (composite_ops.h), indices any integer dtype.
Lowering lowerTake(bool alongAxis) {
  return [alongAxis](OpContext& c) {
    c.expectInputs(2, 2, "two inputs (x, indices)");
    if (c.rank(c.in[0]) == 0) c.fail("inputs[0] is a scalar; there is no axis to take along");
    requireIntegerIndices(c);
    int64_t axis = c.axis(c.fields.integer("axis", 0), c.rank(c.in[0]), "axis");
    return alongAxis ? takeAlongAxis(c.site(), c.in[0], c.in[1], axis, c.name())
                     : take(c.site(), c.in[0], c.in[1], axis, c.name());
  };
}

Lowering activation(NodeId (*build)(const Site&, NodeId, const std::string&)) {
  return [build](OpContext& c) {
    c.expectInputs(1, 1, "one input");
    return build(c.site(), c.in[0], c.name());
  };
}

NodeId lowerBiasAdd(OpContext& c) {
  c.expectInputs(2, 2, "two inputs (x, bias)");
  NodeId x = c.in[0], b = c.in[1];
  if (c.rank(x) == 0) c.fail("inputs[0] is a scalar; bias_add needs an axis for the bias");
  int64_t axis = c.axis(c.fields.integer("axis", -1), c.rank(x), "axis");
  const Shape& xs = c.type(x).shape;
  if (c.type(b).dtype != c.type(x).dtype)
    c.fail(fmt::format("inputs[1] \"{}\" (bias) has dtype {} but inputs[0] has dtype {}; "
                       "convert one of them",
                       c.entry.inputs[1], ir::dtypeName(c.type(b).dtype),
                       ir::dtypeName(c.type(x).dtype)));
  Shape want{xs[static_cast<size_t>(axis)]};
  if (c.type(b).shape != want)
    c.fail(fmt::format(
        "inputs[1] \"{}\" (bias) has shape {} but bias_add needs {} (axis {} of inputs[0], {})",
        c.entry.inputs[1], ir::shapeStr(c.type(b).shape), ir::shapeStr(want), axis,
        ir::shapeStr(xs)));
  NodeId bb = c.g.broadcastInDim(b, xs, {axis}, c.sub("bias_broadcast"));
  return c.g.binary(OpKind::Add, x, bb, c.name());
}

const std::map<std::string, Lowering>& lowerings() {
  static const std::map<std::string, Lowering> table = [] {
    std::map<std::string, Lowering> t;
    for (int i = 0; i < ir::kNumOpKinds; ++i) {
      auto k = static_cast<OpKind>(i);
      std::string name(ir::opName(k));
      if (ir::isUnary(k) && k != OpKind::Convert) t[name] = unaryOp(k);
      if (ir::isBinary(k) && k != OpKind::Compare) t[name] = binaryOp(k);
    }
    t["compare"] = lowerCompare;
    t["select"] = lowerSelect;
    t["clamp"] = lowerClamp;
    t["convert"] = lowerConvert;
    t["constant"] = lowerConstant;
    t["iota"] = lowerIota;
    t["broadcast_in_dim"] = lowerBroadcastInDim;
    t["reshape"] = lowerReshape;
    t["transpose"] = lowerTranspose;
    t["slice"] = lowerSlice;
    t["concatenate"] = lowerConcatenate;
    t["pad"] = lowerPad;
    t["gather"] = lowerGather;
    t["reduce"] = lowerReduce;
    t["dot"] = lowerDot;
    // The names XLA's HLO uses for the same primitives (the AStitch paper's figures use them).
    t["negate"] = t["neg"];
    t["exponential"] = t["exp"];
    t["subtract"] = t["sub"];
    t["multiply"] = t["mul"];
    t["divide"] = t["div"];
    t["power"] = t["pow"];
    t["maximum"] = t["max"];
    t["minimum"] = t["min"];
    t["remainder"] = t["rem"];
    t["logistic"] = t["sigmoid"];
    // Convenience ops.
    t["take"] = lowerTake(false);
    t["take_along_axis"] = lowerTake(true);
    t["softmax"] = lowerSoftmax(false);
    t["log_softmax"] = lowerSoftmax(true);
    t["layer_norm"] = lowerLayerNorm;
    t["rms_norm"] = lowerRmsNorm;
    t["gelu"] = activation(gelu);
    t["gelu_tanh"] = activation(geluTanh);
    t["silu"] = activation(silu);
    t["mean"] = lowerMean;
    t["variance"] = lowerVariance;
    t["bias_add"] = lowerBiasAdd;
    return t;
  }();
  return table;
}

std::string opWhere(const std::string& name, const std::string& op) {
  return op.empty() ? fmt::format("op \"{}\"", name) : fmt::format("op \"{}\" ({})", name, op);
}

class GraphBuilder {
public:
  ParsedGraph build(const json& doc, const std::string& defaultName) {
    if (!doc.is_object())
      fail(fmt::format(
          "the graph must be a JSON object with \"inputs\", \"ops\" and \"outputs\", got {}",
          jsonTypeName(doc)));
    Fields top(doc, "graph");
    ParsedGraph out;
    out.name = defaultName;
    if (top.find("name")) out.name = top.string("name");
    top.find("doc");
    readInputs(top.require("inputs", "an array of {\"name\", \"dtype\", \"shape\"} objects"));
    if (const json* w = top.find("weights")) out.weightNames = readInputs(*w, "weights");
    if (top.find("weights_file")) out.weightsFile = top.string("weights_file");
    if (out.weightNames.empty() != out.weightsFile.empty())
      fail(out.weightsFile.empty()
               ? "graph: field \"weights\" needs \"weights_file\", the file holding their values"
               : "graph: field \"weights_file\" needs \"weights\", the inputs it holds");
    std::vector<OpEntry> entries = readOps(top.require("ops", "an array of ops"));
    const json& outputs = top.require("outputs", "an array of value names");
    top.rejectUnknown();
    for (size_t i : topologicalOrder(entries))
      buildOp(entries[i]);
    setOutputs(outputs);
    ir::verify(g_);
    out.graph = std::move(g_);
    return out;
  }

private:
  void declare(const std::string& name, const std::string& where) {
    if (declared_.count(name))
      fail(fmt::format(
          "{}: the name \"{}\" is already used by {}; every input and op needs its own name", where,
          name, declared_[name]));
    declared_[name] = where;
  }

  /// "inputs", or "weights" (field = "weights"): graph inputs, the weights after the inputs;
  /// returns their names. A weight's shape is static (its values are in a file).
  std::vector<std::string> readInputs(const json& inputs, const std::string& field = "inputs") {
    const std::string kind = field == "weights" ? "weight" : "input";
    std::vector<std::string> names;
    if (!inputs.is_array())
      fail(fmt::format("graph: field \"{}\": expected an array, got {}", field,
                       jsonTypeName(inputs)));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const json& in = inputs[i];
      if (!in.is_object())
        fail(fmt::format("graph: field \"{}\": element {} is {}; expected an object with "
                         "\"name\", \"dtype\", "
                         "\"shape\"",
                         field, i, jsonTypeName(in)));
      Fields f(in, fmt::format("{}[{}]", field, i));
      std::string name = f.string("name");
      if (name.empty())
        fail(fmt::format("{}[{}]: field \"name\" is empty; give the {} a name", field, i, kind));
      Fields named(in, fmt::format("{} \"{}\"", kind, name));
      named.find("name");
      named.find("doc");
      DType t = named.dtype("dtype");
      Shape shape = named.shape("shape");
      named.rejectUnknown();
      if (kind == "weight" && !ir::isStatic(shape))
        fail(fmt::format("weight \"{}\": field \"shape\": {} has a symbolic dim; a weight's "
                         "shape is static (its values are in the weights file)",
                         name, ir::shapeStr(shape)));
      declare(name, fmt::format("{} \"{}\"", kind, name));
      names.push_back(name);
      try {
        values_[name] = g_.parameter(name, {t, shape});
      } catch (const InputError& e) {
        // The builder says `op "x" (parameter): ...`; in the file it is an input's shape.
        std::string msg = e.what();
        std::string builderPrefix = fmt::format("op \"{}\" (parameter): ", name);
        if (msg.rfind(builderPrefix, 0) == 0) msg = msg.substr(builderPrefix.size());
        fail(fmt::format("{} \"{}\": field \"shape\": {}: {}", kind, name, ir::shapeStr(shape),
                         msg));
      }
    }
    return names;
  }

  std::vector<OpEntry> readOps(const json& ops) {
    if (!ops.is_array())
      fail(fmt::format("graph: field \"ops\": expected an array, got {}", jsonTypeName(ops)));
    if (ops.empty())
      fail("graph: field \"ops\" is empty; a graph needs at least one op to compute its outputs");
    std::vector<OpEntry> entries;
    for (size_t i = 0; i < ops.size(); ++i) {
      const json& o = ops[i];
      if (!o.is_object())
        fail(fmt::format(
            "graph: field \"ops\": element {} is {}; expected an object with \"name\", \"op\" and "
            "\"inputs\"",
            i, jsonTypeName(o)));
      OpEntry e;
      e.index = i;
      e.object = &o;
      e.name = Fields(o, fmt::format("ops[{}]", i)).string("name");
      if (e.name.empty())
        fail(fmt::format("ops[{}]: field \"name\" is empty; give the op a name", i));
      Fields f(o, opWhere(e.name, ""));
      e.op = f.string("op");
      std::string where = opWhere(e.name, e.op);
      if (!lowerings().count(e.op)) {
        if (e.op == "parameter")
          fail(fmt::format("{}: field \"op\": graph inputs are declared in \"inputs\", not as ops",
                           where));
        fail(fmt::format(
            "{}: field \"op\": unknown op \"{}\"{}; the ops are listed in docs/graph-format.md",
            where, e.op, didYouMean(e.op, knownOpNames())));
      }
      if (const json* in = f.find("inputs")) {
        if (!in->is_array())
          fail(fmt::format("{}: field \"inputs\": expected an array of value names, got {}", where,
                           jsonTypeName(*in)));
        for (size_t k = 0; k < in->size(); ++k) {
          if (!(*in)[k].is_string())
            fail(fmt::format(
                "{}: field \"inputs\": element {} is {}; expected the name of an input or op",
                where, k, jsonTypeName((*in)[k])));
          e.inputs.push_back((*in)[k].get<std::string>());
        }
      }
      declare(e.name, where);
      entries.push_back(std::move(e));
    }
    return entries;
  }

  /// Ops in an order where each comes after the ops it uses; among ready ops, file order.
  std::vector<size_t> topologicalOrder(const std::vector<OpEntry>& entries) {
    std::unordered_map<std::string, size_t> byName;
    for (const auto& e : entries)
      byName[e.name] = e.index;
    std::vector<std::vector<size_t>> users(entries.size());
    std::vector<size_t> pending(entries.size(), 0);
    std::vector<std::vector<size_t>> deps(entries.size());
    for (const auto& e : entries) {
      for (size_t k = 0; k < e.inputs.size(); ++k) {
        const std::string& in = e.inputs[k];
        if (values_.count(in)) continue;
        auto it = byName.find(in);
        if (it == byName.end()) {
          std::vector<std::string> names;
          for (const auto& [n, _] : declared_)
            names.push_back(n);
          fail(fmt::format("{}: field \"inputs\": inputs[{}] \"{}\" is not defined{}; it must name "
                           "a graph input or "
                           "an op",
                           opWhere(e.name, e.op), k, in, didYouMean(in, names)));
        }
        deps[e.index].push_back(it->second);
        users[it->second].push_back(e.index);
        ++pending[e.index];
      }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < entries.size(); ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.push(u);
    }
    if (order.size() != entries.size()) reportCycle(entries, deps, pending);
    return order;
  }

  [[noreturn]] void reportCycle(const std::vector<OpEntry>& entries,
                                const std::vector<std::vector<size_t>>& deps,
                                const std::vector<size_t>& pending) {
    // Every op left pending is on a cycle or downstream of one; walk dependencies from the first
    // such op until an op repeats: the ops from its first visit on form a cycle.
    size_t start = 0;
    while (pending[start] == 0)
      ++start;
    std::vector<size_t> path;
    std::vector<int> seenAt(entries.size(), -1);
    size_t cur = start;
    while (seenAt[cur] < 0) {
      seenAt[cur] = static_cast<int>(path.size());
      path.push_back(cur);
      for (size_t d : deps[cur])
        if (pending[d] != 0) {
          cur = d;
          break;
        }
    }
    std::vector<size_t> cycle(path.begin() + seenAt[cur], path.end());
    std::reverse(cycle.begin(), cycle.end()); // producer -> consumer order
    std::string text;
    for (size_t i : cycle)
      text += fmt::format("\"{}\" -> ", entries[i].name);
    text += fmt::format("\"{}\"", entries[cycle.front()].name);
    fail(fmt::format(
        "{}: the ops form a cycle: {} (each feeds the next); an op cannot use its own result",
        opWhere(entries[cycle.front()].name, entries[cycle.front()].op), text));
  }

  void buildOp(const OpEntry& e) {
    OpContext c{*this, g_, e, Fields(*e.object, opWhere(e.name, e.op)), {}};
    c.fields.find("name");
    c.fields.find("op");
    c.fields.find("inputs");
    c.fields.find("doc");
    for (const auto& in : e.inputs)
      c.in.push_back(values_.at(in));
    NodeId id;
    try {
      id = lowerings().at(e.op)(c);
    } catch (const InputError& ex) {
      // The builder names the IR op ("op \"y.sum\" (reduce): ..."); name the file's op when
      // the failing node was one of its expansion's intermediates.
      std::string msg = ex.what();
      if (msg.rfind(c.where(), 0) == 0 || msg.rfind(fmt::format("op \"{}\" ", e.name), 0) == 0)
        throw;
      fail(fmt::format("{}: {}", c.where(), msg));
    }
    c.fields.rejectUnknown();
    values_[e.name] = id;
  }

  void setOutputs(const json& outputs) {
    if (!outputs.is_array())
      fail(fmt::format("graph: field \"outputs\": expected an array of value names, got {}",
                       jsonTypeName(outputs)));
    if (outputs.empty())
      fail("graph: field \"outputs\" is empty; name at least one input or op whose value the graph "
           "returns");
    std::vector<std::string> names;
    for (const auto& [n, _] : values_)
      names.push_back(n);
    std::set<std::string> seen;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const json& o = outputs[i];
      if (!o.is_string())
        fail(fmt::format(
            "graph: field \"outputs\": element {} is {}; expected the name of an input or op", i,
            jsonTypeName(o)));
      std::string name = o.get<std::string>();
      auto it = values_.find(name);
      if (it == values_.end())
        fail(fmt::format("graph: field \"outputs\": outputs[{}] \"{}\" is not defined{}; it must "
                         "name a graph input "
                         "or an op",
                         i, name, didYouMean(name, names)));
      if (!seen.insert(name).second)
        fail(fmt::format("graph: field \"outputs\": \"{}\" is listed twice; list each output once",
                         name));
      g_.addOutput(it->second);
    }
  }

  ir::Graph g_;
  std::unordered_map<std::string, NodeId> values_; // file names of inputs and ops -> nodes
  std::map<std::string, std::string> declared_;    // name -> what declared it
};

} // namespace

std::vector<std::string> knownOpNames() {
  std::vector<std::string> out;
  for (const auto& [name, _] : lowerings())
    out.push_back(name);
  return out;
}

ParsedGraph readGraphJson(const std::string& text, const std::string& fileName) {
  json doc;
  try {
    doc = parseWithUniqueKeys(text, [&](const std::string& key, size_t at) {
      auto [line, column] = lineAndColumn(text, at == std::string::npos ? 1 : at + 1);
      return fmt::format("{}:{}:{}: invalid JSON: key \"{}\" appears twice in one object; give "
                         "each field once",
                         fileName, line, column, key);
    });
  } catch (const json::parse_error& e) {
    auto [line, column] = lineAndColumn(text, e.byte);
    std::string what = e.what();
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
    // error ..."
    if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    throw InputError(fmt::format("{}:{}:{}: invalid JSON: {}", fileName, line, column, what));
  } catch (const json::out_of_range& e) {
    // A number too large for a double: nlohmann names the literal but not where it is.
    std::string what = e.what();
    std::string literal;
    if (auto q = what.find('\''); q != std::string::npos)
      literal = what.substr(q + 1, what.rfind('\'') - q - 1);
    size_t at = literal.empty() ? std::string::npos : text.find(literal);
    auto [line, column] = lineAndColumn(text, at == std::string::npos ? 1 : at + 1);
    throw InputError(fmt::format("{}:{}:{}: invalid JSON: the number {} does not fit in a double",
                                 fileName, line, column, literal.empty() ? "(?)" : literal));
  }
  std::string stem = std::filesystem::path(fileName).stem().string();
  try {
    return GraphBuilder().build(doc, stem.empty() ? "main" : stem);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", fileName, e.what()));
  }
}

ParsedGraph readGraphFile(const std::string& path) {
  ParsedGraph g = readGraphJson(readFileBytes(path, "graph file"), path);
  if (!g.weightsFile.empty()) {
    std::filesystem::path file(g.weightsFile);
    if (file.is_relative()) file = std::filesystem::path(path).parent_path() / file;
    try {
      g.weights = loadWeightsFor(g.graph, g.weightNames, file.string());
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: weights_file: {}", path, e.what()));
    }
  }
  return g;
}

} // namespace weft::frontend
