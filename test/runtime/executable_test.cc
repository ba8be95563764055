// weft::compile and Executable on the sim device: results against the reference interpreter,
// one compile per shape binding, device-buffer runs without copies, graph capture and replay
// with in-place argument updates, the graph-mode selection rule, and timing.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include <pthread.h>

#include "ir/interpreter.h"
#include "compile.h"
#include "frontend/json_reader.h"
#include "runtime/forwarding_device.h"
#include "runtime/shape_binding.h"

using namespace weft;
using ir::OpKind;

namespace {

/// y = exp(x) / sum(exp(x)) over rows of x [B, 8]; z = x * 2.
ir::Graph softmaxAndScale() {
  ir::Graph g;
  ir::Shape full = {ir::Dim::symbol("B"), 8};
  auto x = g.parameter("x", {DType::f32, full});
  auto e = g.unary(OpKind::Exp, x);
  auto s = g.broadcastInDim(g.reduce(ir::ReduceKind::Sum, e, {1}), full, {0});
  g.addOutput(g.binary(OpKind::Div, e, s, "y"));
  g.addOutput(g.binary(OpKind::Mul, x, g.broadcastInDim(g.scalar(DType::f32, 2), full, {}), "z"));
  return g;
}

HostTensor rows(int64_t b, double offset = 0) {
  HostTensor t(DType::f32, {b, 8});
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, std::sin(double(i) * 0.7 + offset));
  return t;
}

/// Specialised (one program per binding) unless a test asks for generic.
CompileOptions options(Policy p) {
  CompileOptions o;
  o.policy = p;
  o.cacheDir = "off";
  o.shapes = ShapeMode::Specialized;
  return o;
}

/// g's generic program under policy p on the simulator, run as CUDA graphs (GraphMode::On).
struct GenericGraphRun {
  std::shared_ptr<CompiledGraph> compiled;
  std::unique_ptr<Device> device;
  Executable exe;
  GenericGraphRun(const ir::Graph& g, Policy p)
      : compiled(compile(g, generic(p))), device(makeDevice("sim", compiled->options().device)),
        exe(compiled, *device) {
    exe.setGraphMode(GraphMode::On);
  }
  static CompileOptions generic(Policy p) {
    CompileOptions o = options(p);
    o.shapes = ShapeMode::Generic;
    return o;
  }
};

void requireClose(const HostTensor& got, const HostTensor& want) {
  REQUIRE(got.shape == want.shape);
  for (int64_t i = 0; i < got.numElements(); ++i)
    REQUIRE(got.get(i) == Approx(want.get(i)).margin(1e-5));
}

std::vector<HostTensor> readBack(Device& d, const std::vector<DevicePtr>& ptrs, int64_t b) {
  std::vector<HostTensor> out;
  for (DevicePtr p : ptrs) {
    HostTensor t(DType::f32, {b, 8});
    d.copyToHost(t.bytes.data(), p, t.byteSize());
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace

TEST_CASE("an Executable matches the interpreter and compiles once per binding", "[runtime]") {
  ir::Graph g = softmaxAndScale();
  for (Policy p : {Policy::None, Policy::Xla, Policy::AStitch}) {
    auto compiled = compile(g, options(p));
    CHECK(compiled->programCount() == 0); // symbolic: nothing to compile before a binding
    auto device = makeDevice("sim", compiled->options().device);
    Executable exe(compiled, *device);
    for (int64_t b : {3, 5, 3}) {
      auto in = rows(b);
      auto got = exe.run({in});
      auto want = ir::interpret(g, {in}, {{"B", b}});
      requireClose(got[0], want[0]);
      requireClose(got[1], want[1]);
    }
    CHECK(compiled->programCount() == 2);
    CHECK(exe.stats().plainRuns == 3);
    CHECK(exe.stats().inputCopies == 3);
  }
}

TEST_CASE("a static graph compiles at weft::compile, bad inputs are InputErrors", "[runtime]") {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {4}});
  g.addOutput(g.unary(OpKind::Neg, x, "y"));
  auto compiled = compile(g, options(Policy::AStitch));
  CHECK(compiled->programCount() == 1);
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  CHECK_THROWS_WITH(exe.run({HostTensor(DType::f32, {5})}),
                    "input \"x\": expected f32[4], got f32[5]");
  CHECK_THROWS_WITH(exe.run({HostTensor(DType::i32, {4})}),
                    "input \"x\": expected dtype f32, got i32");
  CHECK_THROWS_WITH(exe.run({}), "the graph takes 1 input(s) but 0 were given");
}

TEST_CASE("graph mode: capture once, replay, update arguments only when a pointer changes",
          "[runtime][graph]") {
  ir::Graph g = softmaxAndScale();
  auto compiled = compile(g, options(Policy::None)); // several kernels
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  exe.setGraphMode(GraphMode::On);
  const int64_t b = 4;
  ir::Binding binding = {{"B", b}};
  size_t bytes = size_t(b) * 8 * 4;
  auto in = rows(b), in2 = rows(b, 1.0);
  DevicePtr x1 = device->allocate(bytes), x2 = device->allocate(bytes);
  DevicePtr y = device->allocate(bytes), z = device->allocate(bytes);
  device->copyToDevice(x1, in.bytes.data(), bytes);
  device->copyToDevice(x2, in2.bytes.data(), bytes);
  auto want1 = ir::interpret(g, {in}, binding), want2 = ir::interpret(g, {in2}, binding);
  int kernels = exe.programFor(binding).plan().kernelCount();
  REQUIRE(kernels > 2);

  exe.run({x1}, {y, z}, binding);
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().replays == 1);
  CHECK(exe.stats().argUpdates == 0);
  auto got = readBack(*device, {y, z}, b);
  requireClose(got[0], want1[0]);
  requireClose(got[1], want1[1]);

  exe.run({x1}, {y, z}, binding); // same pointers: a plain replay
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().replays == 2);
  CHECK(exe.stats().argUpdates == 0);

  exe.run({x2}, {y, z}, binding); // a new input pointer: only the kernels that read x change
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().replays == 3);
  size_t updates = exe.stats().argUpdates;
  CHECK(updates >= 1);
  CHECK(updates < size_t(kernels));
  got = readBack(*device, {y, z}, b);
  requireClose(got[0], want2[0]);
  requireClose(got[1], want2[1]);
  CHECK(exe.stats().inputCopies == 0); // device buffers are never copied

  exe.run({x2}, {y, z}, binding);
  CHECK(exe.stats().argUpdates == updates);

  // A new binding is another program: captured once more.
  auto in6 = rows(6);
  auto out6 = exe.run({in6});
  CHECK(exe.stats().captures == 2);
  requireClose(out6[0], ir::interpret(g, {in6}, {{"B", 6}})[0]);
  for (DevicePtr p : {x1, x2, y, z})
    device->free(p);
}

TEST_CASE("a log-softmax down the columns keeps its precision at large magnitudes",
          "[runtime][sim][precision]") {
  // log_softmax over axis 0 of [1000, 3] f32 rows of 3e5 (ulp 0.03): each is -log(1000) =
  // -6.9078. A logsumexp combined one partial at a time as max + log(1 + exp(-|a - b|)) rounds
  // at 3e5 each step and stops growing after 64 rows (-4.16); written out by hand or as the
  // composite op, under every policy, it must stay within a few ulps of the row's magnitude.
  for (bool composite : {true, false})
    for (Policy p : {Policy::None, Policy::Xla, Policy::AStitch}) {
      DYNAMIC_SECTION((composite ? "composite" : "by hand") << ", policy " << int(p)) {
        ir::Graph g;
        ir::Shape s = {1000, 3};
        ir::NodeId x = g.parameter("x", {DType::f32, s});
        if (composite) {
          ir::NodeId lse = g.reduce(ir::ReduceKind::LogSumExp, x, {0});
          g.addOutput(g.binary(OpKind::Sub, x, g.broadcastInDim(lse, s, {1}), "y"));
        } else {
          ir::NodeId m = g.broadcastInDim(g.reduce(ir::ReduceKind::Max, x, {0}), s, {1});
          ir::NodeId z = g.binary(OpKind::Sub, x, m);
          ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, g.unary(OpKind::Exp, z), {0});
          g.addOutput(g.binary(OpKind::Sub, z,
                               g.broadcastInDim(g.unary(OpKind::Log, sum), s, {1}), "y"));
        }
        HostTensor in(DType::f32, {1000, 3});
        for (int64_t i = 0; i < in.numElements(); ++i)
          in.set(i, 3e5 + double(i % 3) * 1e4);
        auto compiled = compile(g, options(p));
        auto device = makeDevice("sim", compiled->options().device);
        Executable exe(compiled, *device);
        HostTensor y = exe.run({in})[0];
        for (int64_t i = 0; i < y.numElements(); ++i)
          CHECK(y.get(i) == Approx(-std::log(1000.0)).margin(0.1));
      }
    }
}

TEST_CASE("logsumexp partials combined across threads keep infinities, NaN and empty rows",
          "[runtime][sim][precision]") {
  // Rows of 5,000 (a block per row, warps and then the block combining (max, sum) pairs) and of
  // 24 (a warp per row), f32 and f64 (whose pair crosses shared memory as its value): rows of
  // -inf, one +inf, one NaN, a -inf among finite values, equal huge values, and mixed signs.
  for (int64_t length : {int64_t(5000), int64_t(24)})
    for (DType t : {DType::f32, DType::f64}) {
      DYNAMIC_SECTION("rows of " << length << ", " << ir::dtypeName(t)) {
        const int64_t rows = 7;
        ir::Graph g;
        ir::NodeId x = g.parameter("x", {t, {rows, length}});
        g.addOutput(g.reduce(ir::ReduceKind::LogSumExp, x, {1}, "lse"));
        HostTensor in(t, {rows, length});
        const double inf = std::numeric_limits<double>::infinity();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < length; ++i) {
            double v = std::sin(double(i) * 0.37 + double(r)) * 30;
            if (r == 0) v = -inf;
            if (r == 1 && i == length / 3) v = inf;
            if (r == 2 && i == length - 1) v = std::nan("");
            if (r == 3 && i % 5 == 0) v = -inf;
            if (r == 4) v = 1e30;
            in.set(r * length + i, v);
          }
        auto compiled = compile(g, options(Policy::AStitch));
        auto device = makeDevice("sim", compiled->options().device);
        Executable exe(compiled, *device);
        HostTensor got = exe.run({in})[0];
        HostTensor want = ir::interpret(g, {in})[0];
        CHECK(got.get(0) == -inf);
        CHECK(got.get(1) == inf);
        CHECK(std::isnan(got.get(2)));
        for (int64_t r = 3; r < rows; ++r)
          CHECK(got.get(r) == Approx(want.get(r)).epsilon(1e-6));
        CHECK(got.get(4) == Approx(1e30 + std::log(double(length))).epsilon(1e-6));
      }
    }
}

TEST_CASE("a kernel that hands its last phase to its last block is right on every launch",
          "[runtime][sim][handoff]") {
  // The sum over [300, 2048] f32 and log-softmax + NLL over [40, 3000]: per-row values, then
  // their sums in the block that counts out last (fusion::Barrier::LastBlock). The block counter
  // must be back at 0 after each launch, or a later launch would pick the wrong block (or
  // none), plain and replayed as a CUDA graph.
  auto parsed = frontend::readGraphJson(R"({"name": "nll", "inputs": [
      {"name": "logits", "dtype": "f32", "shape": [40, 3000]},
      {"name": "labels", "dtype": "i32", "shape": [40]},
      {"name": "x", "dtype": "f32", "shape": [300, 2048]}],
    "ops": [{"name": "logp", "op": "log_softmax", "inputs": ["logits"], "axis": -1},
            {"name": "vocab", "op": "iota", "dtype": "i32", "shape": [40, 3000], "axis": 1},
            {"name": "lb", "op": "broadcast_in_dim", "inputs": ["labels"], "shape": [40, 3000], "dims": [0]},
            {"name": "hit", "op": "compare", "inputs": ["vocab", "lb"], "direction": "eq"},
            {"name": "zero", "op": "constant", "dtype": "f32", "shape": [40, 3000], "value": 0},
            {"name": "picked", "op": "select", "inputs": ["hit", "logp", "zero"]},
            {"name": "loss", "op": "reduce", "inputs": ["picked"], "kind": "sum", "axes": [0, 1]},
            {"name": "total", "op": "reduce", "inputs": ["x"], "kind": "sum", "axes": [0, 1]}],
    "outputs": ["loss", "total"]})",
                                        "nll.json");
  const ir::Graph& g = parsed.graph;
  auto compiled = compile(g, options(Policy::AStitch));
  // One kernel: the loss's rows, a grid barrier, the rows of x, then both sums in the last
  // block (a cooperative kernel that also hands off).
  int handoffs = 0, cooperative = 0;
  for (const fusion::Step& step : compileVersions(g, {}, options(Policy::AStitch)).front()->plan.steps)
    if (const auto* k = std::get_if<fusion::KernelPlan>(&step)) {
      handoffs += k->handsOffToLastBlock();
      cooperative += k->launch.cooperative;
    }
  CHECK(handoffs == 1);
  CHECK(cooperative == 1);
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  for (GraphMode mode : {GraphMode::Off, GraphMode::On}) {
    exe.setGraphMode(mode);
    for (int call = 0; call < 3; ++call) {
      std::vector<HostTensor> in = {HostTensor(DType::f32, {40, 3000}),
                                    HostTensor(DType::i32, {40}),
                                    HostTensor(DType::f32, {300, 2048})};
      for (int64_t i = 0; i < in[0].numElements(); ++i)
        in[0].set(i, std::sin(double(i) * 0.01 + call) * 5);
      for (int64_t i = 0; i < 40; ++i)
        in[1].set(i, double((i * 97 + call * 13) % 3000));
      for (int64_t i = 0; i < in[2].numElements(); ++i)
        in[2].set(i, std::cos(double(i) * 0.003 - call));
      std::vector<HostTensor> got = exe.run(in), want = ir::interpret(g, in);
      INFO("graph mode " << int(mode) << ", call " << call);
      CHECK(got[0].get(0) == Approx(want[0].get(0)).epsilon(1e-5));
      CHECK(got[1].get(0) == Approx(want[1].get(0)).epsilon(1e-5).margin(1e-3));
    }
  }
}

TEST_CASE("a log-softmax over a row split across blocks splits its logsumexp too",
          "[runtime][sim][split]") {
  // One row of 200,000 on the v100 profile: the row is split over the grid and its max and
  // logsumexp are siblings. The logsumexp was computed after the grid barrier by one thread
  // over the whole row (the simulator's progress check stopped it; a GPU would have crawled);
  // now each block reduces its part and the partials are combined like the max's.
  ir::Graph g;
  ir::Shape s = {1, 200000};
  ir::NodeId x = g.parameter("x", {DType::f32, s});
  ir::NodeId m = g.broadcastInDim(g.reduce(ir::ReduceKind::Max, x, {1}), s, {0});
  ir::NodeId lse = g.broadcastInDim(g.reduce(ir::ReduceKind::LogSumExp, x, {1}), s, {0});
  g.addOutput(g.binary(OpKind::Sub, g.binary(OpKind::Sub, x, m), g.binary(OpKind::Sub, lse, m),
                       "y"));
  CompileOptions o = options(Policy::AStitch);
  o.device = *deviceSpecProfile("v100");
  auto compiled = compile(g, o);
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  HostTensor in(DType::f32, {1, 200000});
  for (int64_t i = 0; i < in.numElements(); ++i)
    in.set(i, std::sin(double(i)) * 4);
  HostTensor y = exe.run({in})[0];
  requireClose(y, ir::interpret(g, {in})[0]);
  // One thread's loop over the row cost 5.55 M warp instructions of the kernel's total; split,
  // the kernel takes 2.42 M, and 2.31 M with both reduces in one pass (simulator, 2026-11-26).
  uint64_t warpInstructions = 0;
  for (const LaunchCounters& c : exe.takeCounters())
    warpInstructions += c.warpInstructions;
  CHECK(warpInstructions < 3500000);
}

TEST_CASE("sibling reduces of a row split across blocks read each block's part once",
          "[runtime][sim][split]") {
  // max, logsumexp, sum and min of one row of 200,000 on the v100 profile: split over the grid,
  // each block accumulates all four partials in one pass over its part of the row. A pass per
  // reduce read the row 4.2 times (3.34 MB against 0.80 MB compulsory).
  ir::Graph g;
  ir::Shape s = {1, 200000};
  ir::NodeId x = g.parameter("x", {DType::f32, s});
  ir::NodeId mx = g.reduce(ir::ReduceKind::Max, x, {1}, "mx");
  ir::NodeId lse = g.reduce(ir::ReduceKind::LogSumExp, x, {1}, "lse");
  ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  ir::NodeId mn = g.reduce(ir::ReduceKind::Min, x, {1}, "mn");
  g.addOutput(g.binary(OpKind::Add, mx, lse, "e"));
  g.addOutput(g.binary(OpKind::Sub, sum, mn, "f"));
  CompileOptions o = options(Policy::AStitch);
  o.device = *deviceSpecProfile("v100");
  auto compiled = compile(g, o);
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  REQUIRE(exe.programFor({}).plan().kernelCount() == 1);
  HostTensor in(DType::f32, {1, 200000});
  for (int64_t i = 0; i < in.numElements(); ++i)
    in.set(i, std::sin(double(i) * 0.37) * 6);
  std::vector<HostTensor> got = exe.run({in});
  std::vector<HostTensor> want = ir::interpret(g, {in});
  for (size_t i = 0; i < got.size(); ++i)
    requireClose(got[i], want[i]);
  uint64_t bytes = 0;
  for (const LaunchCounters& c : exe.takeCounters())
    bytes += c.globalBytes();
  CHECK(bytes < uint64_t(1.2 * 800000));
}

TEST_CASE("a chain of 20,000 ops compiles and runs from a thread with a 1 MiB stack",
          "[runtime][sim][deep]") {
  // Planning walked the chain and codegen emits each op from its operand's code, recursively:
  // a chain of 60,000 ops overflowed a main thread's 8 MiB. weft::compile now plans and emits
  // on a stack of its own (codegen/compile_stack.h), whatever the caller's; this caller has
  // 1 MiB, which the recursion overflowed at about 6,000 ops.
  ir::Graph g;
  ir::NodeId v = g.parameter("x", {DType::f32, {4}});
  for (int i = 0; i < 20000; ++i)
    v = g.unary(i % 2 ? OpKind::Neg : OpKind::Abs, v);
  g.addOutput(v);
  struct Run {
    const ir::Graph* g;
    std::vector<HostTensor> got;
    std::string error;
  } run{&g, {}, {}};
  auto body = [](void* p) -> void* {
    auto* r = static_cast<Run*>(p);
    try {
      auto compiled = compile(*r->g, options(Policy::AStitch));
      auto device = makeDevice("sim", compiled->options().device);
      Executable exe(compiled, *device);
      HostTensor in(DType::f32, {4});
      for (int64_t i = 0; i < 4; ++i)
        in.set(i, double(i) - 1.5);
      r->got = exe.run({in});
    } catch (const std::exception& e) {
      r->error = e.what();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 20);
  pthread_t t;
  REQUIRE(pthread_create(&t, &attr, body, &run) == 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  REQUIRE(run.error == "");
  REQUIRE(run.got.size() == 1);
  for (int64_t i = 0; i < 4; ++i) // -|x| after the last neg
    CHECK(run.got[0].get(i) == -std::abs(double(i) - 1.5));
}

TEST_CASE("device-buffer runs refuse a buffer that does not start at a multiple of 16 bytes",
          "[runtime][errors]") {
  // [B, 8] f32 rows: the kernels load them 4 floats (16 bytes) at a time.
  ir::Graph g = softmaxAndScale();
  auto compiled = compile(g, options(Policy::AStitch));
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  ir::Binding binding = {{"B", 4}};
  const size_t bytes = 4 * 8 * 4;
  DevicePtr x = device->allocate(bytes + 16), y = device->allocate(bytes + 16),
            z = device->allocate(bytes + 16);
  CHECK_THROWS_WITH(exe.run({x + 8}, {y, z}, binding),
                    Catch::Matchers::Contains("input \"x\": device address") &&
                        Catch::Matchers::Contains("is not a multiple of 16 bytes"));
  CHECK_THROWS_WITH(exe.run({x}, {y, z + 4}, binding),
                    Catch::Matchers::Contains("output \"") &&
                        Catch::Matchers::Contains("is not a multiple of 16 bytes"));
  auto in = rows(4);
  device->copyToDevice(x + 16, in.bytes.data(), bytes);
  exe.run({x + 16}, {y, z}, binding); // an offset of 16 bytes is fine
  auto got = readBack(*device, {y, z}, 4);
  requireClose(got[0], ir::interpret(g, {in}, binding)[0]);
  for (DevicePtr p : {x, y, z})
    device->free(p);
}

TEST_CASE("graph mode, generic program: one capture per version serves a sweep of shapes",
          "[runtime][graph][shapes]") {
  ir::Graph g = softmaxAndScale();
  GenericGraphRun run(g, Policy::None); // several kernels, each with a grid per binding
  auto& compiled = run.compiled;
  Executable& exe = run.exe;
  // B = 1 .. 2 run one version, 3 .. 16 another, 17 .. 128 another (ir::sizeClasses), unless
  // the planner maps neighbouring classes alike: count the versions the sweep selects.
  const std::vector<int64_t> sweep = {2, 1, 16, 3, 9, 100, 17, 128, 40, 129, 1000, 700};
  std::set<const void*> versions;
  for (int64_t b : sweep) {
    auto in = rows(b, double(b));
    auto got = exe.run({in});
    auto want = ir::interpret(g, {in}, {{"B", b}});
    requireClose(got[0], want[0]);
    requireClose(got[1], want[1]);
    versions.insert(&compiledProgram(exe.programFor({{"B", b}})));
  }
  CHECK(compiled->programCount() == 1);
  CHECK(exe.stats().captures == versions.size()); // not one per binding
  CHECK(exe.stats().replays == sweep.size());
  CHECK(exe.stats().reshapes == sweep.size() - versions.size());
  CHECK(exe.stats().launchUpdates > 0); // grids changed in place (129 → 1000 rows)
  // Buffers grew when a binding needed more than its version held before (1 after 2, 3 after
  // 16, 17 after 128, 700 after 1000 did not).
  CHECK(exe.stats().reallocations > 0);
}

TEST_CASE("setMaxBinding sizes a generic version's buffers once: no reallocation in a sweep",
          "[runtime][shapes]") {
  ir::Graph g = softmaxAndScale();
  GenericGraphRun run(g, Policy::None);
  Executable& exe = run.exe;
  exe.setMaxBinding({{"B", 128}});
  for (int64_t b : {17, 18, 64, 128, 100, 33}) {
    auto in = rows(b);
    requireClose(exe.run({in})[0], ir::interpret(g, {in}, {{"B", b}})[0]);
  }
  CHECK(exe.stats().reallocations == 0);
  // Past the declared maximum the buffers still grow: correct, one reallocation per buffer.
  auto in = rows(300);
  requireClose(exe.run({in})[0], ir::interpret(g, {in}, {{"B", 300}})[0]);
}

TEST_CASE("graph mode auto keeps the faster of plain launches and replays", "[runtime][graph]") {
  CHECK(graphModeWins({1.0, 1.1, 0.9}, {0.5, 0.6, 0.55}));
  CHECK_FALSE(graphModeWins({1.0, 1.1, 0.9}, {0.99, 1.0, 0.995})); // within the 2 % margin
  CHECK_FALSE(graphModeWins({0.5, 0.5, 0.5}, {0.9, 0.8, 1.0}));
  CHECK_FALSE(graphModeWins({}, {0.1}));
  CHECK(graphModeWins({2, 2, 2}, {1.9, 1.9, 1.9}, 0.0));

  ir::Graph g = softmaxAndScale();
  auto compiled = compile(g, options(Policy::None));
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  exe.setGraphMode(GraphMode::Auto);
  auto in = rows(2);
  for (int i = 0; i < 8; ++i)
    requireClose(exe.run({in})[0], ir::interpret(g, {in}, {{"B", 2}})[0]);
  // three plain trials, then three graph trials (the first one captures), then the choice
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().plainRuns + exe.stats().replays == 8);
  CHECK(exe.stats().plainRuns >= 3);
  CHECK(exe.stats().replays >= 3);
}

TEST_CASE("Executable::time reports every kernel and leaves no counters behind", "[runtime]") {
  ir::Graph g = softmaxAndScale();
  auto compiled = compile(g, options(Policy::None));
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  auto in = rows(2);
  exe.run({in});
  std::vector<LaunchCounters> counters = exe.takeCounters();
  int kernels = exe.programFor({{"B", 2}}).plan().kernelCount();
  CHECK(counters.size() == size_t(kernels));
  Executable::Timing t = exe.time({in}, 3);
  CHECK(t.runs == 3);
  CHECK_FALSE(t.deviceClock); // the simulator has no GPU clock
  REQUIRE(t.kernels.size() == size_t(kernels));
  for (const auto& k : t.kernels)
    CHECK(k.ms > 0);
  CHECK(t.totalMs > 0);
  CHECK(exe.takeCounters().empty());
  CHECK_THROWS_AS(exe.time({in}, 0), InputError);
}

TEST_CASE("graph mode: a binding that changes only a kernel's grid updates the captured launch",
          "[runtime][graph][shapes]") {
  // examples/graphs/rms_norm.json, x [B, 4096]: a block per row of 256 threads, at most 528
  // blocks on the h100 profile, its weight staged once per block (not cooperative, so no
  // cluster shares it: fusion/cluster_plan.h). Every binding launches without clusters, so one
  // capture serves them all and each new grid is a launch update.
  ir::Graph g =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/rms_norm.json").graph;
  GenericGraphRun run(g, Policy::AStitch);
  Executable& exe = run.exe;
  HostTensor weight(DType::f32, {4096});
  for (int64_t i = 0; i < 4096; ++i)
    weight.set(i, 1 + 0.25 * std::cos(double(i)));
  std::vector<uint32_t> clusters;
  for (int64_t b : {136, 130, 136, 600, 130}) {
    HostTensor in(DType::f32, {b, 4096});
    for (int64_t i = 0; i < in.numElements(); ++i)
      in.set(i, std::sin(double(i) * 0.37 + double(b)));
    auto got = exe.run({in, weight});
    auto want = ir::interpret(g, {in, weight}, {{"B", b}});
    REQUIRE(got[0].shape == want[0].shape);
    for (int64_t i = 0; i < got[0].numElements(); ++i)
      REQUIRE(got[0].get(i) == Approx(want[0].get(i)).epsilon(1e-4).margin(1e-5));
    const CompiledProgram& p = compiledProgram(exe.programFor({{"B", b}}));
    REQUIRE(p.module.kernels.size() == 1);
    clusters.push_back(bindShapes(p, {{"B", b}}).launches[0].clusterSize);
  }
  CHECK(clusters == std::vector<uint32_t>{1, 1, 1, 1, 1});
  CHECK(exe.stats().captures == 1);
  CHECK(exe.stats().launchUpdates == 4); // 136, 130, 136, 528 (600 rows) and 130 blocks
  CHECK(exe.stats().replays == 5);
}

TEST_CASE("a kernel that fills the SMs launches the blocks the device keeps resident",
          "[runtime]") {
  // Softmax over rows of 128 (fusion::LaunchPlan::fillSMs): the plan's grid is 4 blocks per
  // SM, the simulator's register count lets more stay resident, and the Executable launches
  // that many (never fewer than planned, never more than the tiles); the results match.
  auto parsed =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/softmax.json");
  ir::Graph g = ir::bindSymbols(parsed.graph, {{"B", 8}});
  auto compiled = compile(g);
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  const CompiledProgram& p = compiledProgram(exe.programFor({}));
  REQUIRE(p.module.kernels.size() == 1);
  const codegen::CompiledKernel& k = p.module.kernels[0];
  REQUIRE(k.launch.fillSMs);
  std::vector<HostTensor> inputs;
  for (ir::NodeId id : g.inputs()) {
    std::vector<int64_t> shape;
    for (const ir::Dim& d : g.node(id).type.shape)
      shape.push_back(d.size());
    HostTensor t(g.node(id).type.dtype, shape);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, std::sin(double(i) * 0.11));
    inputs.push_back(std::move(t));
  }
  auto got = exe.run(inputs);
  auto want = ir::interpret(g, inputs);
  for (int64_t i = 0; i < got[0].numElements(); ++i)
    REQUIRE(got[0].get(i) == Approx(want[0].get(i)).epsilon(1e-5).margin(1e-7));
  std::vector<LaunchCounters> counters = exe.takeCounters();
  REQUIRE(counters.size() == 1);
  const int64_t tiles = k.launch.tiles.size();
  const int64_t planned = std::min(tiles, k.launch.maxBlocks);
  REQUIRE(tiles > k.launch.maxBlocks);
  // The simulator's own answer, as the Executable asked it.
  ModuleHandle m = device->loadModule(p.module.ptx);
  int64_t resident = int64_t(device->spec().smCount) *
                     device->maxActiveBlocksPerSM(device->getKernel(m, k.name),
                                                  k.launch.blockSize, k.dynamicSharedBytes);
  CHECK(resident > planned);
  CHECK(int64_t(counters[0].blocks) == std::min(tiles, std::max(planned, resident)));
}

namespace {

/// The simulator, except that it keeps `clusters` clusters resident at once, as a GPU whose
/// GPCs cannot all hold a whole cluster does (an H100 keeps 15 clusters of 8, not 16).
class ClusterLimitedDevice final : public runtime::ForwardingDevice {
public:
  ClusterLimitedDevice(std::unique_ptr<Device> sim, int clusters)
      : ForwardingDevice(std::move(sim)), clusters_(clusters) {}
  void launch(KernelHandle k, const LaunchConfig& c, const std::vector<KernelArg>& a) override {
    launches.push_back(c);
    inner().launch(k, c, a);
  }
  int maxActiveClusters(KernelHandle, int, size_t, int) override { return clusters_; }
  std::vector<LaunchConfig> launches;

private:
  int clusters_;
};

} // namespace

TEST_CASE("rows shared by clusters launch no more clusters than the device keeps resident",
          "[runtime]") {
  // Softmax over rows of 32,768 floats: each row shared by a cluster of 2 blocks, 6 rows, 12
  // tiles. A device that keeps 2 clusters resident gets a grid of 4 blocks, each cluster taking
  // three rows in turn (a fifth block would wait for a whole cluster to finish); the results
  // match the interpreter.
  ir::Graph g;
  ir::Shape shape = {6, 32768};
  auto x = g.parameter("x", {DType::f32, shape});
  auto m = g.broadcastInDim(g.reduce(ir::ReduceKind::Max, x, {1}), shape, {0});
  auto e = g.unary(OpKind::Exp, g.binary(OpKind::Sub, x, m));
  auto s = g.broadcastInDim(g.reduce(ir::ReduceKind::Sum, e, {1}), shape, {0});
  g.addOutput(g.binary(OpKind::Div, e, s, "y"));
  auto compiled = compile(g);
  ClusterLimitedDevice device(makeDevice("sim", compiled->options().device), 2);
  Executable exe(compiled, device);
  const CompiledProgram& p = compiledProgram(exe.programFor({}));
  REQUIRE(p.module.kernels.size() == 1);
  const codegen::CompiledKernel& k = p.module.kernels[0];
  REQUIRE(k.launch.clusterRequired);
  REQUIRE(k.launch.clusterSize == 2);
  REQUIRE(k.launch.maxBlocks >= 12); // as planned, one block per tile
  HostTensor in(DType::f32, {6, 32768});
  for (int64_t i = 0; i < in.numElements(); ++i)
    in.set(i, std::sin(double(i) * 0.37) * 4);
  auto got = exe.run({in});
  auto want = ir::interpret(g, {in});
  REQUIRE(device.launches.size() == 1);
  CHECK(device.launches[0].grid.x == 4);
  CHECK(device.launches[0].clusterSize == 2);
  for (int64_t i = 0; i < got[0].numElements(); ++i)
    REQUIRE(got[0].get(i) == Approx(want[0].get(i)).epsilon(1e-5).margin(1e-9));
}

TEST_CASE("launchConfigFor: whole resident clusters cap a clustered kernel's grid", "[runtime]") {
  codegen::CompiledKernel k;
  k.name = "rows";
  k.launch.blockSize = 1024;
  k.launch.maxBlocks = 128;
  k.launch.clusterSize = 8;
  k.launch.clusterRequired = true;
  CHECK(launchConfigFor(k, 4096).grid.x == 128);       // the device told nothing: as planned
  CHECK(launchConfigFor(k, 4096, 120).grid.x == 120);  // 15 clusters of 8 fit
  CHECK(launchConfigFor(k, 4096, 125).grid.x == 120);  // whole clusters only
  CHECK(launchConfigFor(k, 4096, 4).grid.x == 128);    // less than a cluster: not an answer
  CHECK(launchConfigFor(k, 40, 120).grid.x == 40);     // fewer tiles than fit
  CHECK(launchConfigFor(k, 36, 120).grid.x == 40);     // rounded up to whole clusters
  CHECK(launchConfigFor(k, 4096, 120).clusterSize == 8);
  k.launch.clusterRequired = false; // clusters that only share staged inputs: as planned
  CHECK(launchConfigFor(k, 4096, 120).grid.x == 128);
}
