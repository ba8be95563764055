// The coverage sweep: every op x every dtype it accepts x none/xla/astitch x v100/a100/h100,
// with special values in the inputs (NaN, +-inf, -0, subnormals, the largest finite values,
// integer extremes), compiled, run on the simulator and checked against the interpreter under
// the rules of `weft run --check`; plus size-1, empty and rank-0 shapes through every policy.
//
// The whole sweep runs in CI (about 3,650 compiles of small graphs, a minute on one core), one
// test case per policy so that ctest spreads them over the cores.
#include <catch2/catch.hpp>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "ir/printer.h"
#include "runtime/output_check.h"
#include "compile.h"

using namespace weft;
using ir::CompareDir;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::ReduceKind;

namespace {

const DType kFloats[] = {DType::f64, DType::f32, DType::f16, DType::bf16};
const DType kInts[] = {DType::i8, DType::i32, DType::i64};
const DType kAll[] = {DType::f64, DType::f32, DType::f16, DType::bf16,
                      DType::i8,  DType::i32, DType::i64, DType::boolean};

std::vector<DType> numeric() {
  return {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64};
}

/// Values every float input cycles through before its pseudo-random tail.
std::vector<double> floatSpecials(DType t) {
  double inf = std::numeric_limits<double>::infinity();
  double maxFinite = t == DType::f64    ? std::numeric_limits<double>::max()
                     : t == DType::f32  ? std::numeric_limits<float>::max()
                     : t == DType::f16  ? 65504.0
                                        : 3.3895313892515355e38; // bf16
  double tiny = t == DType::f64    ? std::numeric_limits<double>::denorm_min()
                : t == DType::f32  ? std::numeric_limits<float>::denorm_min()
                : t == DType::f16  ? std::ldexp(1.0, -24)
                                   : std::ldexp(1.0, -133); // bf16's smallest subnormal
  return {std::nan(""), inf, -inf, -0.0, 0.0, tiny, -maxFinite, maxFinite, 1.0, -1.0, 0.5, 3.0};
}

std::vector<int64_t> intSpecials(DType t) {
  int64_t lo = t == DType::i8 ? -128 : t == DType::i32 ? INT32_MIN : INT64_MIN;
  int64_t hi = t == DType::i8 ? 127 : t == DType::i32 ? INT32_MAX : INT64_MAX;
  return {lo, hi, -1, 0, 1, lo + 1, hi - 1, 2, -7, 100};
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Which special element i of input `which` takes (n specials): input 0 cycles through them,
/// input 1 steps once per cycle of input 0, so the first n * n elements meet every pair; a
/// third input mixes. Past n * n elements: pseudo-random values.
std::optional<size_t> specialIndex(int64_t i, int which, size_t n) {
  auto u = size_t(i);
  if (u >= n * n) return std::nullopt;
  return which == 0 ? u % n : which == 1 ? (u / n) % n : (u * 7 + 3) % n;
}

/// Input `which` of a case: the specials as above, then values in [-4, 4) (floats) or
/// [-100, 100] (integers). `nonZero` replaces zeros (integer divisors).
HostTensor sweepInput(DType t, const std::vector<int64_t>& shape, int which, bool nonZero) {
  HostTensor x(t, shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    uint64_t r = mix(uint64_t(i) * 31 + uint64_t(which) * 1000003 + uint64_t(t));
    if (ir::isBool(t)) {
      auto k = specialIndex(i, which, 2);
      x.setInt(i, k ? int64_t(*k) : int64_t(r & 1));
    } else if (ir::isInteger(t)) {
      auto s = intSpecials(t);
      auto k = specialIndex(i, which, s.size());
      int64_t v = k ? s[*k] : int64_t(r % 201) - 100;
      if (nonZero && v == 0) v = 3;
      x.setInt(i, v);
    } else {
      auto s = floatSpecials(t);
      auto k = specialIndex(i, which, s.size());
      x.set(i, k ? s[*k] : double(r >> 11) * 0x1p-50 - 4.0);
    }
  }
  return x;
}

struct Case {
  std::string name;
  ir::Graph graph;
  std::vector<HostTensor> inputs;
  bool math = false; // a transcendental op: also swept with weft's own math (no libdevice)
};

/// Shape of the sweep's inputs: 144 elements, so that two inputs meet in every pair of 12
/// specials; 48 columns take vector paths, 3 rows a partial warp.
const std::vector<int64_t> kShape = {3, 48};

ir::Shape staticShape(const std::vector<int64_t>& s) {
  ir::Shape out;
  for (int64_t d : s)
    out.push_back(ir::Dim(d));
  return out;
}

/// A case of one op applied to `arity` fresh inputs of dtype `t` (and shape `shape`).
Case opCase(const std::string& name, DType t, int arity, const std::vector<int64_t>& shape,
            const std::function<NodeId(ir::Graph&, const std::vector<NodeId>&)>& build,
            bool nonZeroDivisor = false) {
  Case c;
  c.name = name;
  std::vector<NodeId> in;
  for (int i = 0; i < arity; ++i) {
    in.push_back(c.graph.parameter(fmt::format("x{}", i), {t, staticShape(shape)}));
    c.inputs.push_back(sweepInput(t, shape, i, nonZeroDivisor && i == 1));
  }
  c.graph.addOutput(build(c.graph, in));
  return c;
}

Case mathCase(Case c) {
  c.math = true;
  return c;
}

std::vector<Case> opCases() {
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };
  std::string dn;
  for (OpKind k : {OpKind::Exp, OpKind::Log, OpKind::Tanh, OpKind::Sqrt, OpKind::Rsqrt,
                   OpKind::Erf, OpKind::Sigmoid, OpKind::Sin, OpKind::Cos, OpKind::Floor,
                   OpKind::Ceil, OpKind::Reciprocal})
    for (DType t : kFloats)
      add(mathCase(opCase(fmt::format("{} {}", ir::opName(k), ir::dtypeName(t)), t, 1, kShape,
                          [k](ir::Graph& g, auto in) { return g.unary(k, in[0]); })));
  for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Sign})
    for (DType t : numeric())
      add(opCase(fmt::format("{} {}", ir::opName(k), ir::dtypeName(t)), t, 1, kShape,
                 [k](ir::Graph& g, auto in) { return g.unary(k, in[0]); }));
  for (DType t : {DType::boolean, DType::i8, DType::i32, DType::i64}) {
    add(opCase(fmt::format("not {}", ir::dtypeName(t)), t, 1, kShape,
               [](ir::Graph& g, auto in) { return g.unary(OpKind::Not, in[0]); }));
    for (OpKind k : {OpKind::And, OpKind::Or})
      add(opCase(fmt::format("{} {}", ir::opName(k), ir::dtypeName(t)), t, 2, kShape,
                 [k](ir::Graph& g, auto in) { return g.binary(k, in[0], in[1]); }));
  }
  for (DType from : kAll)
    for (DType to : kAll)
      if (from != to)
        add(opCase(fmt::format("convert {} to {}", ir::dtypeName(from), ir::dtypeName(to)), from,
                   1, kShape, [to](ir::Graph& g, auto in) { return g.convert(in[0], to); }));
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min,
                   OpKind::Rem})
    for (DType t : numeric())
      add(opCase(fmt::format("{} {}", ir::opName(k), ir::dtypeName(t)), t, 2, kShape,
                 [k](ir::Graph& g, auto in) { return g.binary(k, in[0], in[1]); },
                 /*nonZeroDivisor=*/k == OpKind::Div || k == OpKind::Rem));
  for (DType t : kFloats)
    add(mathCase(opCase(fmt::format("pow {}", ir::dtypeName(t)), t, 2, kShape,
                        [](ir::Graph& g, auto in) { return g.binary(OpKind::Pow, in[0], in[1]); })));
  for (CompareDir d : {CompareDir::EQ, CompareDir::NE, CompareDir::LT, CompareDir::LE,
                       CompareDir::GT, CompareDir::GE})
    for (DType t : kAll)
      add(opCase(fmt::format("compare {} {}", ir::compareDirName(d), ir::dtypeName(t)), t, 2,
                 kShape, [d](ir::Graph& g, auto in) { return g.compare(d, in[0], in[1]); }));
  for (DType t : kAll)
    add(opCase(fmt::format("select {}", ir::dtypeName(t)), t, 2, kShape, [](ir::Graph& g, auto in) {
      NodeId p = g.compare(CompareDir::NE, in[0], in[1]);
      return g.select(p, in[0], in[1]);
    }));
  for (DType t : numeric())
    add(opCase(fmt::format("clamp {}", ir::dtypeName(t)), t, 3, kShape, [](ir::Graph& g, auto in) {
      return g.clamp(in[0], in[1], in[2]);
    }));
  for (DType t : kAll) {
    std::string n(ir::dtypeName(t));
    add(opCase("broadcast_in_dim " + n, t, 1, {3}, [](ir::Graph& g, auto in) {
      return g.broadcastInDim(in[0], staticShape({3, 40}), {0});
    }));
    add(opCase("reshape " + n, t, 1, kShape, [](ir::Graph& g, auto in) {
      return g.reshape(in[0], staticShape({12, 12}));
    }));
    add(opCase("transpose " + n, t, 1, kShape,
               [](ir::Graph& g, auto in) { return g.transpose(in[0], {1, 0}); }));
    add(opCase("slice " + n, t, 1, kShape, [](ir::Graph& g, auto in) {
      return g.slice(in[0], {1, 3}, {3, 47}, {1, 2});
    }));
    add(opCase("concatenate " + n, t, 2, kShape,
               [](ir::Graph& g, auto in) { return g.concatenate({in[0], in[1]}, 1); }));
    add(opCase("pad " + n, t, 1, kShape,
               [](ir::Graph& g, auto in) { return g.pad(in[0], {1, 0}, {0, 5}, 1); }));
    // Gathers of the special values: along the columns by a [3, 20] table of -2..49 (out of
    // range at both ends), and along the rows by [2, 0, -1, 3, 1] broadcast (an embedding's form).
    add(opCase("gather columns " + n, t, 1, kShape, [](ir::Graph& g, auto in) {
      std::vector<double> at;
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 20; ++k)
          at.push_back(double((r * 17 + k * 7) % 52 - 2));
      NodeId idx = g.constant(DType::i32, staticShape({3, 20}), at);
      return g.gather(in[0], {idx}, {1}, {0});
    }));
    add(opCase("gather rows " + n, t, 1, kShape, [](ir::Graph& g, auto in) {
      NodeId ids = g.constant(DType::i64, staticShape({5}), {2, 0, -1, 3, 1});
      return g.gather(in[0], {g.broadcastInDim(ids, staticShape({5, 48}), {0})}, {0}, {1});
    }));
    if (!ir::isBool(t))
      add(opCase("iota " + n, t, 1, kShape, [t](ir::Graph& g, auto in) {
        return g.binary(OpKind::Add, in[0], g.iota(t, staticShape({3, 48}), 1));
      }));
  }
  // Constants of special values (a table of 144, not a splat), added to an input.
  for (DType t : kAll) {
    std::vector<double> values;
    for (int64_t i = 0; i < 144; ++i) {
      if (ir::isBool(t)) {
        values.push_back(double(i % 2));
      } else if (ir::isInteger(t)) {
        auto sp = intSpecials(t);
        double v = double(sp[size_t(i) % sp.size()]);
        values.push_back(v >= 9223372036854775808.0 ? std::ldexp(1.0, 62) : v); // a double's i64
      } else {
        auto sp = floatSpecials(t);
        values.push_back(sp[size_t(i * 5) % sp.size()]);
      }
    }
    add(opCase(fmt::format("constant table {}", ir::dtypeName(t)), t, 1, kShape,
               [t, values](ir::Graph& g, auto in) {
                 NodeId c = g.constant(t, staticShape({3, 48}), values);
                 return g.binary(ir::isBool(t) ? OpKind::Or : OpKind::Add, in[0], c);
               }));
  }
  auto reduces = [&](ReduceKind k, DType t) {
    std::string n = fmt::format("reduce {} {}", ir::reduceKindName(k), ir::dtypeName(t));
    add(opCase(n + " rows", t, 1, kShape, [k](ir::Graph& g, auto in) { return g.reduce(k, in[0], {1}); }));
    add(opCase(n + " columns", t, 1, kShape, [k](ir::Graph& g, auto in) { return g.reduce(k, in[0], {0}); }));
    add(opCase(n + " all", t, 1, kShape, [k](ir::Graph& g, auto in) { return g.reduce(k, in[0], {0, 1}); }));
  };
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Prod})
    for (DType t : numeric())
      reduces(k, t);
  for (ReduceKind k : {ReduceKind::Any, ReduceKind::All})
    reduces(k, DType::boolean);
  for (DType t : kFloats)
    reduces(ReduceKind::LogSumExp, t);
  // A row max next to a column sum in one stitched kernel (the i8 case that once emitted
  // packed 16x2 instructions), in every dtype.
  for (DType t : numeric())
    add(opCase(fmt::format("row max and column sum {}", ir::dtypeName(t)), t, 1, {16, 40},
               [](ir::Graph& g, auto in) {
                 g.addOutput(g.reduce(ReduceKind::Max, in[0], {1}));
                 return g.reduce(ReduceKind::Sum, in[0], {0});
               }));
  return cases;
}

/// Softmax over the last axis of an f32 input of `shape` (rank >= 1).
NodeId softmax(ir::Graph& g, NodeId x) {
  ir::Shape s = g.node(x).type.shape; // a copy: adding nodes moves the graph's nodes
  int64_t last = int64_t(s.size()) - 1;
  std::vector<int64_t> keep;
  for (int64_t d = 0; d < last; ++d)
    keep.push_back(d);
  NodeId m = g.reduce(ReduceKind::Max, x, {last});
  NodeId e = g.unary(OpKind::Exp, g.binary(OpKind::Sub, x, g.broadcastInDim(m, s, keep)));
  NodeId sum = g.reduce(ReduceKind::Sum, e, {last});
  return g.binary(OpKind::Div, e, g.broadcastInDim(sum, s, keep));
}

std::vector<Case> degenerateCases() {
  std::vector<Case> cases;
  const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {1, 1}, {1, 33}, {33, 1},
                                                    {0, 8}, {8, 0}, {2, 1, 3}, {1, 0, 1}};
  for (const auto& s : shapes) {
    std::string sn = fmt::format("[{}]", fmt::join(s, ","));
    cases.push_back(opCase("exp(x) + y " + sn, DType::f32, 2, s, [](ir::Graph& g, auto in) {
      return g.binary(OpKind::Add, g.unary(OpKind::Exp, in[0]), in[1]);
    }));
    if (s.empty()) continue;
    int64_t last = int64_t(s.size()) - 1;
    cases.push_back(opCase("reduce sum last axis " + sn, DType::f32, 1, s, [last](ir::Graph& g, auto in) {
      return g.reduce(ReduceKind::Sum, in[0], {last});
    }));
    cases.push_back(opCase("reduce max first axis " + sn, DType::f32, 1, s, [](ir::Graph& g, auto in) {
      return g.reduce(ReduceKind::Max, in[0], {0});
    }));
    cases.push_back(opCase("reduce sum all axes " + sn, DType::i32, 1, s, [](ir::Graph& g, auto in) {
      std::vector<int64_t> all;
      for (size_t d = 0; d < g.node(in[0]).type.shape.size(); ++d)
        all.push_back(int64_t(d));
      return g.reduce(ReduceKind::Sum, in[0], all);
    }));
    cases.push_back(opCase("softmax " + sn, DType::f32, 1, s,
                           [](ir::Graph& g, auto in) { return softmax(g, in[0]); }));
    cases.push_back(opCase("row max and column sum " + sn, DType::f32, 1, s, [last](ir::Graph& g, auto in) {
      g.addOutput(g.reduce(ReduceKind::Max, in[0], {last}));
      return g.reduce(ReduceKind::Sum, in[0], {0});
    }));
  }
  return cases;
}

struct Target {
  Policy policy;
  std::string profile;
  bool libdevice = true;
};

/// Compiles and runs `c` for `target` on the simulator; the failure text, or "" when every
/// output matches the interpreter.
std::string runCase(const Case& c, const Target& target) {
  CompileOptions o;
  o.policy = target.policy;
  o.device = *deviceSpecProfile(target.profile);
  o.cacheDir = "off";
  o.codegen.threads = 1;
  o.codegen.useLibdevice = target.libdevice;
  std::string where = fmt::format("{} under {} on {}{}", c.name, fusion::policyName(target.policy),
                                  target.profile, target.libdevice ? "" : " without libdevice");
  try {
    auto compiled = compile(c.graph, o);
    auto device = makeDevice("sim", o.device);
    Executable exe(compiled, *device);
    std::vector<HostTensor> got = exe.run(c.inputs);
    for (const runtime::TensorCheck& check : runtime::checkOutputs(c.graph, c.inputs, {}, got))
      if (!check.passed) return where + ": " + check.str() + "\n" + ir::printGraph(c.graph);
  } catch (const std::exception& e) {
    return where + ": " + e.what() + "\n" + ir::printGraph(c.graph);
  }
  return "";
}

/// Runs `cases` under every profile and `policy`; one FAIL_CHECK per failing run.
void sweep(const std::vector<Case>& cases, Policy policy) {
  size_t runs = 0, failures = 0;
  for (const Case& c : cases)
    for (const char* profile : {"v100", "a100", "h100"}) {
      std::string failure = runCase(c, {policy, profile});
      ++runs;
      if (!failure.empty()) {
        ++failures;
        FAIL_CHECK(failure);
      }
    }
  INFO(runs << " runs of " << cases.size() << " cases, " << failures << " failed");
  CHECK(failures == 0);
}

} // namespace

TEST_CASE("coverage sweep: the op list holds every op and dtype pair", "[sweep]") {
  std::vector<Case> cases = opCases();
  CHECK(cases.size() == 441); // + logsumexp rows, columns, all over the 4 float dtypes; + gathers
  std::set<std::string> kinds;
  for (const Case& c : cases)
    for (const ir::Node& n : c.graph.nodes())
      kinds.insert(std::string(ir::opName(n.kind)));
  // Every op of the IR but dot (compute-intensive; its own tests) is swept.
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    auto kind = static_cast<OpKind>(k);
    if (kind == OpKind::Dot) continue;
    INFO(ir::opName(kind));
    CHECK(kinds.count(std::string(ir::opName(kind))) == 1);
  }
}

TEST_CASE("coverage sweep: every op and dtype with special values under none", "[sweep]") {
  sweep(opCases(), Policy::None);
}
TEST_CASE("coverage sweep: every op and dtype with special values under xla", "[sweep]") {
  sweep(opCases(), Policy::Xla);
}
TEST_CASE("coverage sweep: every op and dtype with special values under astitch", "[sweep]") {
  sweep(opCases(), Policy::AStitch);
}

TEST_CASE("coverage sweep: math ops with special values without libdevice", "[sweep]") {
  size_t runs = 0, failures = 0;
  for (const Case& c : opCases()) {
    if (!c.math) continue;
    for (const char* profile : {"v100", "a100", "h100"}) {
      std::string failure = runCase(c, {Policy::AStitch, profile, false});
      ++runs;
      if (!failure.empty()) {
        ++failures;
        FAIL_CHECK(failure);
      }
    }
  }
  INFO(runs << " runs, " << failures << " failed");
  CHECK(runs == 156);
  CHECK(failures == 0);
}

TEST_CASE("coverage sweep: size-1, empty and rank-0 shapes under every policy", "[sweep]") {
  for (Policy p : {Policy::None, Policy::Xla, Policy::AStitch})
    sweep(degenerateCases(), p);
}

TEST_CASE("the sweep's inputs meet every pair of specials", "[sweep]") {
  HostTensor a = sweepInput(DType::f32, kShape, 0, false);
  HostTensor b = sweepInput(DType::f32, kShape, 1, false);
  size_t n = floatSpecials(DType::f32).size();
  REQUIRE(size_t(a.numElements()) >= n * n);
  std::set<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < n * n; ++i)
    pairs.insert({fmt::format("{}", a.get(int64_t(i))), fmt::format("{}", b.get(int64_t(i)))});
  CHECK(pairs.size() == n * n);
  HostTensor i = sweepInput(DType::i64, kShape, 0, false);
  CHECK(i.getInt(0) == INT64_MIN);
  CHECK(i.getInt(1) == INT64_MAX);
  HostTensor d = sweepInput(DType::i32, kShape, 1, true);
  for (int64_t e = 0; e < d.numElements(); ++e)
    CHECK(d.getInt(e) != 0);
}

TEST_CASE("sigmoid of large negative inputs keeps exp(x)'s subnormals", "[sweep]") {
  // 1 / (1 + exp(-x)) overflows exp(-x) for x < -88.7 in f32 and gave 0 where exp(x) is a
  // subnormal; --check's atol cannot see that, so compare relative to the exact value.
  for (DType t : {DType::f32, DType::f64}) {
    std::vector<double> xs = t == DType::f32 ? std::vector<double>{-90, -95.5, -98}
                                             : std::vector<double>{-710, -720, -730};
    ir::Graph g;
    NodeId x = g.parameter("x", {t, staticShape({int64_t(xs.size())})});
    g.addOutput(g.unary(OpKind::Sigmoid, x, "y"));
    HostTensor in(t, {int64_t(xs.size())});
    for (size_t i = 0; i < xs.size(); ++i)
      in.set(int64_t(i), xs[i]);
    for (bool libdevice : {true, false}) {
      CompileOptions o;
      o.cacheDir = "off";
      o.codegen.useLibdevice = libdevice;
      auto device = makeDevice("sim", o.device);
      Executable exe(compile(g, o), *device);
      HostTensor y = exe.run({in})[0];
      for (size_t i = 0; i < xs.size(); ++i) {
        double want = roundToDType(std::exp(xs[i]) / (1 + std::exp(xs[i])), t);
        INFO(ir::dtypeName(t) << " sigmoid(" << xs[i] << "), libdevice " << libdevice);
        CHECK(y.get(int64_t(i)) > 0);
        CHECK(std::fabs(y.get(int64_t(i)) - want) <= 0.01 * want);
      }
    }
  }
}
