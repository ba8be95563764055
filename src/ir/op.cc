#include "ir/op.h"

#include <algorithm>
#include <array>

namespace weft::ir {
namespace {

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpClass cls;
  int operands;
};

constexpr std::array<OpInfo, kNumOpKinds> kOps = {{
    {OpKind::Parameter, "parameter", OpClass::Input, 0},
    {OpKind::Constant, "constant", OpClass::LightElementwise, 0},
    {OpKind::Iota, "iota", OpClass::LightElementwise, 0},
    {OpKind::Neg, "neg", OpClass::LightElementwise, 1},
    {OpKind::Abs, "abs", OpClass::LightElementwise, 1},
    {OpKind::Exp, "exp", OpClass::ExpensiveElementwise, 1},
    {OpKind::Log, "log", OpClass::ExpensiveElementwise, 1},
    {OpKind::Tanh, "tanh", OpClass::ExpensiveElementwise, 1},
    {OpKind::Sqrt, "sqrt", OpClass::ExpensiveElementwise, 1},
    {OpKind::Rsqrt, "rsqrt", OpClass::ExpensiveElementwise, 1},
    {OpKind::Erf, "erf", OpClass::ExpensiveElementwise, 1},
    {OpKind::Sigmoid, "sigmoid", OpClass::ExpensiveElementwise, 1},
    {OpKind::Sin, "sin", OpClass::ExpensiveElementwise, 1},
    {OpKind::Cos, "cos", OpClass::ExpensiveElementwise, 1},
    {OpKind::Floor, "floor", OpClass::LightElementwise, 1},
    {OpKind::Ceil, "ceil", OpClass::LightElementwise, 1},
    {OpKind::Sign, "sign", OpClass::LightElementwise, 1},
    {OpKind::Not, "not", OpClass::LightElementwise, 1},
    {OpKind::Reciprocal, "reciprocal", OpClass::ExpensiveElementwise, 1},
    {OpKind::Convert, "convert", OpClass::LightElementwise, 1},
    {OpKind::Add, "add", OpClass::LightElementwise, 2},
    {OpKind::Sub, "sub", OpClass::LightElementwise, 2},
    {OpKind::Mul, "mul", OpClass::LightElementwise, 2},
    {OpKind::Div, "div", OpClass::ExpensiveElementwise, 2},
    {OpKind::Pow, "pow", OpClass::ExpensiveElementwise, 2},
    {OpKind::Max, "max", OpClass::LightElementwise, 2},
    {OpKind::Min, "min", OpClass::LightElementwise, 2},
    {OpKind::Rem, "rem", OpClass::ExpensiveElementwise, 2},
    {OpKind::And, "and", OpClass::LightElementwise, 2},
    {OpKind::Or, "or", OpClass::LightElementwise, 2},
    {OpKind::Compare, "compare", OpClass::LightElementwise, 2},
    {OpKind::Select, "select", OpClass::LightElementwise, 3},
    {OpKind::Clamp, "clamp", OpClass::LightElementwise, 3},
    {OpKind::BroadcastInDim, "broadcast_in_dim", OpClass::Broadcast, 1},
    {OpKind::Reshape, "reshape", OpClass::Layout, 1},
    {OpKind::Transpose, "transpose", OpClass::Layout, 1},
    {OpKind::Slice, "slice", OpClass::Layout, 1},
    {OpKind::Concatenate, "concatenate", OpClass::Layout, -1},
    {OpKind::Pad, "pad", OpClass::Layout, 1},
    {OpKind::Gather, "gather", OpClass::Layout, -1},
    {OpKind::Reduce, "reduce", OpClass::Reduce, 1},
    {OpKind::Dot, "dot", OpClass::ComputeIntensive, 2},
}};

const OpInfo& info(OpKind k) { return kOps[static_cast<size_t>(k)]; }

} // namespace

std::string_view opName(OpKind k) { return info(k).name; }
OpClass opClass(OpKind k) { return info(k).cls; }
int operandCount(OpKind k) { return info(k).operands; }

std::optional<OpKind> parseOpKind(std::string_view s) {
  for (const OpInfo& i : kOps)
    if (i.name == s) return i.kind;
  return std::nullopt;
}

std::string_view opClassName(OpClass c) {
  switch (c) {
  case OpClass::Input: return "input";
  case OpClass::LightElementwise: return "light-elementwise";
  case OpClass::ExpensiveElementwise: return "expensive-elementwise";
  case OpClass::Broadcast: return "broadcast";
  case OpClass::Layout: return "layout";
  case OpClass::Reduce: return "reduce";
  case OpClass::ComputeIntensive: return "compute-intensive";
  }
  return "?";
}

namespace {
constexpr std::array<std::string_view, 6> kCompareNames = {"eq", "ne", "lt", "le", "gt", "ge"};
constexpr std::array<std::string_view, 7> kReduceNames = {"sum", "max", "min", "prod",
                                                          "any", "all", "logsumexp"};
} // namespace

std::string_view compareDirName(CompareDir d) { return kCompareNames[static_cast<size_t>(d)]; }
std::optional<CompareDir> parseCompareDir(std::string_view s) {
  for (size_t i = 0; i < kCompareNames.size(); ++i)
    if (kCompareNames[i] == s) return static_cast<CompareDir>(i);
  return std::nullopt;
}
std::string_view reduceKindName(ReduceKind k) { return kReduceNames[static_cast<size_t>(k)]; }
std::optional<ReduceKind> parseReduceKind(std::string_view s) {
  for (size_t i = 0; i < kReduceNames.size(); ++i)
    if (kReduceNames[i] == s) return static_cast<ReduceKind>(i);
  return std::nullopt;
}

std::vector<int64_t> gatherResultDims(const GatherAttrs& a, size_t rank) {
  std::vector<int64_t> out(rank, -1);
  size_t i = 0;
  for (size_t d = 0; d < rank && i < a.dims.size(); ++d)
    if (std::find(a.axes.begin(), a.axes.end(), static_cast<int64_t>(d)) == a.axes.end())
      out[d] = a.dims[i++];
  return out;
}

bool isUnary(OpKind k) { return k >= OpKind::Neg && k <= OpKind::Convert; }
bool isBinary(OpKind k) { return k >= OpKind::Add && k <= OpKind::Compare; }
bool isElementwise(OpKind k) { return k >= OpKind::Neg && k <= OpKind::Clamp; }
bool isMemoryIntensive(OpKind k) { return k != OpKind::Parameter && k != OpKind::Dot; }

} // namespace weft::ir
