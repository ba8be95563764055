// Shape-generic programs (CompileOptions::shapes = ShapeMode::Generic, issue 15): every example
// graph with symbols and every suite workload (its leading dim made the symbol B,
// bench::symbolicWorkload) compiled ONCE and run on the sim device over many bindings, each
// output checked against the reference interpreter as `weft run --check` does; the disk cache
// holds one entry per graph afterwards, whether the sweep runs in one CompiledGraph or in a
// fresh one per binding (one process per binding).
//
// Sizes: 1, primes, powers of two and their neighbours, sizes not divisible by 4 or 8, and a
// few production-ish ones, each kept while the largest input stays within kMaxElements
// elements (the simulator runs every thread and the interpreter every op; a production size
// takes 20-50 s here), and at least the first kMinSizes. So a graph gets as many of the 50
// sizes as its unit of B allows: row_reduce_750000x32 (32 per B) all 50; layer norms and
// bias_grad (768) 31, up to 65; gelu_bias (3072) 16; astitch_fig7 and rms_norm (4096) 14;
// log_softmax_nll and row_reduce_64x30000 (30000 per B) and softmax (12x128x128 per batch)
// only 1-4. The production sizes are checked by hand (`weft run --shapes generic --check`,
// docs/performance.md) and measured by `weft bench --shapes generic`.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench/workloads.h"
#include "compile.h"
#include "frontend/json_reader.h"
#include "frontend/random_inputs.h"
#include "ir/symbol_ranges.h"
#include "runtime/output_check.h"

using namespace weft;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 16;
constexpr size_t kMinSizes = 4; // even past kMaxElements: 1, 2, 3, 4

const std::vector<int64_t> kSizes = {
    1,   2,   3,   4,   5,   6,   7,   8,   9,   11,  12,   13,   15,   16,   17,   19,  23,
    24,  29,  31,  32,  33,  37,  41,  47,  48,  53,  61,   63,   64,   65,   96,   97,  100,
    127, 128, 129, 191, 255, 256, 257, 333, 509, 512, 513,  768,  1000, 1021, 1024, 2048};

struct SweepGraph {
  std::string name;
  ir::Graph graph;
};

std::vector<SweepGraph> sweepGraphs() {
  std::vector<SweepGraph> out;
  fs::path src(WEFT_SOURCE_DIR);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(src / "examples" / "graphs"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    frontend::ParsedGraph g = frontend::readGraphFile(f.string());
    if (!g.graph.symbols().empty()) out.push_back({"example " + f.stem().string(), g.graph});
  }
  files.clear();
  for (const auto& e : fs::directory_iterator(src / "bench" / "workloads"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files)
    out.push_back({"suite " + f.stem().string(), bench::symbolicWorkload(f.string()).graph});
  return out;
}

/// Elements of the graph's largest input per unit of every symbol (all symbols bound to 1).
int64_t elementsPerUnit(const ir::Graph& g) {
  ir::Binding ones;
  for (const std::string& s : g.symbols())
    ones[s] = 1;
  int64_t most = 1;
  for (ir::NodeId in : g.inputs())
    most = std::max(most, ir::checkedProduct(ir::evaluate(g.node(in).type.shape, ones)));
  return most;
}

std::vector<ir::Binding> bindingsFor(const ir::Graph& g, size_t limit = kSizes.size()) {
  int64_t unit = elementsPerUnit(g);
  std::vector<ir::Binding> out;
  for (int64_t n : kSizes) {
    if (out.size() >= kMinSizes && n * unit > kMaxElements) break;
    if (out.size() == limit) break;
    ir::Binding b;
    for (const std::string& s : g.symbols())
      b[s] = n;
    out.push_back(b);
  }
  return out;
}

size_t cacheEntries(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    n += e.is_regular_file() ? 1 : 0;
  return n;
}

fs::path freshCacheDir(const std::string& what) {
  // Per process: two test runs at once must not clear each other's cache entries.
  fs::path dir = fs::temp_directory_path() /
                 ("weft_shape_sweep_" + what + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string str(const ir::Binding& b) {
  std::string s;
  for (const auto& [k, v] : b)
    s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

/// Runs `graph`'s generic program over `bindings` in one CompiledGraph and Executable; one
/// CHECK per output and binding, then one compile and one cache entry.
void sweep(const SweepGraph& sg, Policy policy, const std::vector<ir::Binding>& bindings) {
  CompileOptions o;
  o.policy = policy;
  o.shapes = ShapeMode::Generic;
  fs::path cache = freshCacheDir(std::string(fusion::policyName(policy)));
  o.cacheDir = cache.string();
  auto compiled = compile(sg.graph, o);
  auto device = makeDevice("sim", o.device);
  Executable exe(compiled, *device);
  for (const ir::Binding& b : bindings) {
    std::vector<HostTensor> inputs = frontend::randomInputs(sg.graph, b, 7);
    std::vector<HostTensor> got;
    try {
      got = exe.run(inputs, b);
    } catch (const std::exception& e) {
      FAIL_CHECK(sg.name << " " << fusion::policyName(policy) << " " << str(b) << ": "
                         << e.what());
      continue;
    }
    for (const runtime::TensorCheck& c : runtime::checkOutputs(sg.graph, inputs, b, got)) {
      INFO(sg.name << " " << fusion::policyName(policy) << " " << str(b) << ": " << c.str());
      CHECK(c.passed);
    }
  }
  INFO(sg.name << " " << fusion::policyName(policy));
  CHECK(compiled->programCount() == 1);
  CHECK(cacheEntries(cache) == 1);
  fs::remove_all(cache);
}

} // namespace

TEST_CASE("one generic astitch program per graph matches the interpreter at every size",
          "[shapes][sim]") {
  for (const SweepGraph& g : sweepGraphs())
    sweep(g, Policy::AStitch, bindingsFor(g.graph));
}

TEST_CASE("one generic program per graph under xla and none matches at a few sizes",
          "[shapes][sim]") {
  for (const SweepGraph& g : sweepGraphs())
    for (Policy p : {Policy::Xla, Policy::None})
      sweep(g, p, bindingsFor(g.graph, 3));
}

TEST_CASE("a process per binding leaves one cache entry for the generic program", "[shapes][sim]") {
  ir::Graph g =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/layer_norm.json")
          .graph;
  fs::path cache = freshCacheDir("per_process");
  CompileOptions o;
  o.shapes = ShapeMode::Generic;
  o.cacheDir = cache.string();
  int fromCache = 0;
  for (int64_t b : {1, 7, 33, 128, 1000}) {
    auto compiled = compile(g, o); // a fresh CompiledGraph: what a new process has
    auto device = makeDevice("sim", o.device);
    Executable exe(compiled, *device);
    ir::Binding binding{{"B", b}};
    std::vector<HostTensor> inputs = frontend::randomInputs(g, binding, 1);
    std::vector<HostTensor> got = exe.run(inputs, binding);
    for (const runtime::TensorCheck& c : runtime::checkOutputs(g, inputs, binding, got)) {
      INFO("B=" << b << ": " << c.str());
      CHECK(c.passed);
    }
    Program p = exe.programFor(binding);
    CHECK(p.generic());
    CHECK(p.binding().empty());
    fromCache += p.fromDiskCache() ? 1 : 0;
  }
  CHECK(fromCache == 4);
  CHECK(cacheEntries(cache) == 1);
  // The specialised programs of the same sweep: one entry per binding, as before.
  o.shapes = ShapeMode::Specialized;
  auto compiled = compile(g, o);
  for (int64_t b : {1, 7})
    compiled->program({{"B", b}});
  CHECK(compiled->programCount() == 2);
  CHECK(cacheEntries(cache) == 3);
  fs::remove_all(cache);
}

TEST_CASE("a binding with a symbol bound to 0 gets a specialised program of its own",
          "[shapes][sim]") {
  ir::Graph g =
      frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/softmax.json")
          .graph;
  CompileOptions o;
  o.shapes = ShapeMode::Generic;
  o.cacheDir = "off";
  auto compiled = compile(g, o);
  auto device = makeDevice("sim", o.device);
  Executable exe(compiled, *device);
  for (int64_t b : {0, 3}) {
    ir::Binding binding{{"B", b}};
    std::vector<HostTensor> inputs = frontend::randomInputs(g, binding, 1);
    std::vector<HostTensor> got = exe.run(inputs, binding);
    for (const runtime::TensorCheck& c : runtime::checkOutputs(g, inputs, binding, got)) {
      INFO("B=" << b << ": " << c.str());
      CHECK(c.passed);
    }
  }
  CHECK_FALSE(exe.programFor({{"B", 0}}).generic());
  CHECK(exe.programFor({{"B", 3}}).generic());
  CHECK(compiled->programCount() == 2);
}

TEST_CASE("a generic program picks its version by the binding: one compile, one cache entry",
          "[shapes][sim]") {
  // The bias-gradient column sum: few rows are summed by one block per column tile, many are
  // split across a wave of blocks (fusion/plan_versions.h).
  ir::Graph g;
  ir::NodeId dy = g.parameter("dy", {DType::f32, {ir::Dim::symbol("B"), 768}});
  g.addOutput(g.reduce(ir::ReduceKind::Sum, dy, {0}, "dbias"));
  fs::path cache =
      fs::temp_directory_path() / ("weft_shape_versions_test_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  CompileOptions o;
  o.shapes = ShapeMode::Generic;
  o.cacheDir = cache.string();
  auto compiled = compile(g, o);
  auto device = makeDevice("sim", o.device);
  Executable exe(compiled, *device);
  std::set<size_t> versions;
  for (int64_t b : {3, 16, 200, 5000}) {
    ir::Binding binding{{"B", b}};
    const CompiledProgram& p = compiledProgram(exe.programFor(binding));
    CHECK(p.versionCount >= 2);
    versions.insert(p.version);
    CHECK(ir::admits(p.guard, binding));
    std::vector<HostTensor> inputs = frontend::randomInputs(g, binding, 2);
    std::vector<HostTensor> got = exe.run(inputs, binding);
    for (const runtime::TensorCheck& c : runtime::checkOutputs(g, inputs, binding, got)) {
      INFO("B=" << b << ": " << c.str());
      CHECK(c.passed);
    }
  }
  CHECK(versions.size() >= 2); // B = 3 and B = 5000 run different kernels
  CHECK(compiled->programCount() == 1);
  CHECK(cacheEntries(cache) == 1);
  // A fresh compile loads every version from that one entry.
  auto again = compile(g, o);
  CHECK(again->program({{"B", 5000}}).fromDiskCache());
  CHECK(cacheEntries(cache) == 1);
  fs::remove_all(cache);
}

TEST_CASE("symbolic rows: divisibility versions vectorise multiples of 4, others stay scalar",
          "[shapes][sim]") {
  // Softmax, layer norm and an elementwise + column sum whose row length S is a symbol: the
  // versions guarded by S % 4 == 0 read rows with 128-bit vectors (fusion/plan_versions.h),
  // the others element by element. Every size in 1..70 and a few more, under every policy.
  auto rowsOf = [](const char* name, auto&& build) {
    ir::Graph g;
    ir::Shape shape = {ir::Dim::symbol("B"), ir::Dim::symbol("S")};
    ir::NodeId x = g.parameter("x", {DType::f32, shape});
    build(g, x, shape);
    return SweepGraph{name, std::move(g)};
  };
  std::vector<SweepGraph> graphs;
  graphs.push_back(rowsOf("softmax_rows", [](ir::Graph& g, ir::NodeId x, const ir::Shape& s) {
    ir::NodeId e = g.unary(ir::OpKind::Exp, x);
    ir::NodeId sum = g.broadcastInDim(g.reduce(ir::ReduceKind::Sum, e, {1}), s, {0});
    g.addOutput(g.binary(ir::OpKind::Div, e, sum, "y"));
  }));
  graphs.push_back(rowsOf("scale_colsum", [](ir::Graph& g, ir::NodeId x, const ir::Shape& s) {
    ir::NodeId y = g.binary(ir::OpKind::Mul, x, g.broadcastInDim(g.scalar(DType::f32, 3), s, {}),
                            "y");
    g.addOutput(y);
    g.addOutput(g.reduce(ir::ReduceKind::Sum, y, {0}, "colsum"));
  }));
  std::vector<int64_t> sizes;
  for (int64_t v = 1; v <= 70; ++v)
    sizes.push_back(v);
  for (int64_t v : {127, 128, 129, 255, 256, 300})
    sizes.push_back(v);
  for (const SweepGraph& sg : graphs)
    for (Policy p : {Policy::AStitch, Policy::Xla, Policy::None}) {
      std::vector<ir::Binding> bindings;
      for (size_t i = 0; i < sizes.size(); ++i)
        bindings.push_back({{"B", int64_t(1 + (i * 7) % 5)}, {"S", sizes[i]}});
      sweep(sg, p, bindings);
    }
  // The divisible versions exist and vectorise: 128-bit loads in their PTX only. (Rows of
  // tensors too small to fill the device take width 1 whatever S is, fusion/thread_mapping.cc:
  // B = 1024 makes them large enough.)
  CompileOptions o;
  o.shapes = ShapeMode::Generic;
  o.cacheDir = "off";
  auto compiled = compile(graphs[0].graph, o);
  const CompiledProgram& divisible = compiledProgram(compiled->program({{"B", 1024}, {"S", 64}}));
  const CompiledProgram& scalar = compiledProgram(compiled->program({{"B", 1024}, {"S", 63}}));
  REQUIRE(!divisible.guard.empty());
  CHECK(divisible.guard[0].at("S").divisor == 4);
  CHECK(ir::guardStr(scalar.guard).find('%') == std::string::npos);
  CHECK(divisible.module.ptx.find(".v4.f32") != std::string::npos);
  CHECK(scalar.module.ptx.find(".v4.f32") == std::string::npos);
}
