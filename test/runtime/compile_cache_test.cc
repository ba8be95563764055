// The on-disk compile cache: round trip, a second process-level compile served from disk, and
// entries that are corrupt or belong to another key recompiled rather than loaded.
#include <catch2/catch.hpp>
#include <cmath>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include "compile.h"
#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "fusion/plan_serialization.h"
#include "runtime/compile_cache.h"

using namespace weft;
namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("weft_cache_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  return d;
}

codegen::CompiledModule sampleModule() {
  codegen::CompiledModule m;
  m.ptx = "// ptx text\n.version 8.5\n";
  codegen::CompiledKernel k;
  k.name = "k0";
  k.params = {{codegen::KernelParam::Kind::Buffer, 2, ""},
              {codegen::KernelParam::Kind::Symbol, -1, "B"},
              {codegen::KernelParam::Kind::BarrierState, -1, ""}};
  k.launch.blockSize = 256;
  k.launch.tiles = ir::Dim::symbol("B") * ir::Dim(4);
  k.launch.maxBlocks = 264;
  k.launch.cooperative = true;
  k.dynamicSharedBytes = 1024;
  k.planStep = 0;
  m.kernels.push_back(k);
  return m;
}

ir::Graph negGraph() {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {16}});
  g.addOutput(g.unary(ir::OpKind::Neg, x, "y"));
  return g;
}

} // namespace

namespace {

/// The one version of negGraph's plan, to store with sampleModule: what a specialised compile
/// stores.
std::vector<fusion::PlanVersion> samplePlans() {
  std::vector<fusion::PlanVersion> plans;
  plans.push_back({fusion::plan(negGraph(), *deviceSpecProfile("h100"), Policy::AStitch), {}});
  return plans;
}

} // namespace

TEST_CASE("a compile's plans and modules survive the cache's round trip", "[runtime][cache]") {
  runtime::CompileCache cache(freshDir("roundtrip").string());
  CHECK_FALSE(cache.load("key").has_value());
  // Two versions, the first guarded.
  std::vector<fusion::PlanVersion> plans = samplePlans();
  plans.insert(plans.begin(), plans.front());
  plans.front().guard = {{{"B", ir::SymbolRange{3, 16, 4}}}};
  cache.store("key", plans, {sampleModule(), sampleModule()});
  auto e = cache.load("key");
  REQUIRE(e.has_value());
  REQUIRE(e->plans.size() == 2);
  REQUIRE(e->modules.size() == 2);
  CHECK(e->plans[0].guard == plans[0].guard);
  CHECK(e->plans[1].guard.empty());
  CHECK(fusion::printFusionPlan(e->plans[1].plan) == fusion::printFusionPlan(plans[1].plan));
  CHECK(fusion::serializePlan(e->plans[0].plan) == fusion::serializePlan(plans[0].plan));
  const codegen::CompiledModule& m = e->modules[1];
  CHECK(m.ptx == sampleModule().ptx);
  REQUIRE(m.kernels.size() == 1);
  const auto& k = m.kernels[0];
  CHECK(k.name == "k0");
  CHECK(k.params.size() == 3);
  CHECK(k.params[1].symbol == "B");
  CHECK(k.params[2].kind == codegen::KernelParam::Kind::BarrierState);
  CHECK(k.launch.tiles == ir::Dim::symbol("B") * ir::Dim(4));
  CHECK(k.launch.cooperative);
  CHECK(k.dynamicSharedBytes == 1024);
  CHECK_FALSE(cache.load("another key").has_value());
  CHECK_FALSE(runtime::CompileCache("off").enabled());
}

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

/// `entry` with its payload's checksum made to match the payload again (the format's
/// "checksum <16 hex digits>" line), so that only the plan's own checks can catch a change.
std::string rechecksummed(const std::string& entry) {
  size_t payload = entry.find("\npayload ");
  payload = entry.find('\n', payload + 1) + 1;
  size_t end = entry.size() - 1; // the payload's closing newline
  size_t sum = entry.find("\nchecksum 16\n") + 13;
  std::string_view bytes = std::string_view(entry).substr(payload, end - payload);
  return entry.substr(0, sum) + fmt::format("{:016x}", ir::fnv1a64(bytes)) +
         entry.substr(sum + 16);
}

/// The offset of a byte in the middle of the first version's plan section.
size_t insidePlan(const std::string& entry) {
  size_t head = entry.find("\nplan ");
  REQUIRE(head != std::string::npos);
  size_t begin = entry.find('\n', head + 1) + 1;
  size_t bytes = std::stoul(entry.substr(head + 6, begin - head - 7));
  REQUIRE(bytes > 64);
  return begin + bytes / 2;
}

} // namespace

TEST_CASE("a corrupt or mismatched entry is recompiled, not loaded", "[runtime][cache]") {
  fs::path dir = freshDir("corrupt");
  runtime::CompileCache cache(dir.string());
  cache.store("key", samplePlans(), {sampleModule()});
  std::string path = cache.pathFor("key");
  std::string text = readFile(path);
  REQUIRE(text.substr(0, 21) == "weft-compile-cache 3\n");
  // Flip one character of the PTX inside the payload: the checksum no longer matches.
  size_t at = text.find("ptx text");
  REQUIRE(at != std::string::npos);
  std::string damaged = text;
  damaged[at] = 'P';
  writeFile(path, damaged);
  CHECK_FALSE(cache.load("key").has_value());
  writeFile(path, text.substr(0, text.size() / 2)); // truncated
  CHECK_FALSE(cache.load("key").has_value());
  // A section whose length is off by one no longer ends at its newline.
  size_t ptxHead = text.find("\nptx ");
  REQUIRE(ptxHead != std::string::npos);
  std::string lying = text;
  lying[ptxHead + 5] = char(lying[ptxHead + 5] + 1);
  writeFile(path, lying);
  CHECK_FALSE(cache.load("key").has_value());
  // A bit flipped inside the plan under a payload checksum that matches: the plan's own checksum.
  std::string flipped = text;
  flipped[insidePlan(text)] ^= 1;
  CHECK(rechecksummed(text) == text); // the test's checksum is the cache's
  writeFile(path, rechecksummed(flipped));
  CHECK_FALSE(cache.load("key").has_value());
  writeFile(path, "{\"key\": \"key\"}"); // the first format's JSON
  CHECK_FALSE(cache.load("key").has_value());
  // Format 2 (modules only): never read.
  std::string two = text;
  two[19] = '2';
  writeFile(path, two);
  CHECK_FALSE(cache.load("key").has_value());
  cache.store("key", samplePlans(), {sampleModule()}); // overwritten by the next compile
  CHECK(cache.load("key").has_value());
}

TEST_CASE("weft::compile stores on disk and a later compile loads from there", "[runtime][cache]") {
  fs::path dir = freshDir("pipeline");
  CompileOptions o;
  o.cacheDir = dir.string();
  auto first = compile(negGraph(), o);
  CHECK_FALSE(first->program({}).fromDiskCache());
  auto second = compile(negGraph(), o);
  auto p = second->program({});
  CHECK(p.fromDiskCache());
  CHECK(p.ptx() == first->program({}).ptx());
  o.device = *deviceSpecProfile("v100"); // another device: another entry
  CHECK_FALSE(compile(negGraph(), o)->program({}).fromDiskCache());
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir))
    entries += e.path().extension() == ".entry";
  CHECK(entries == 2);
}

namespace {

/// y = (x * c - x) * 1e7 over f32[n], c a constant of `values` (one value: a splat).
ir::Graph scaledDifference(const std::vector<double>& values, int64_t n = 32) {
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {n}});
  auto c = g.constant(DType::f32, {n}, values, "c");
  auto d = g.binary(ir::OpKind::Sub, g.binary(ir::OpKind::Mul, x, c), x);
  auto k = g.broadcastInDim(g.scalar(DType::f32, 1e7), {n}, {});
  g.addOutput(g.binary(ir::OpKind::Mul, d, k, "y"));
  return g;
}

double nextUp(double v) {
  return double(std::nextafter(float(v), 2.0f));
}

size_t entriesIn(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    n += e.path().extension() == ".entry";
  return n;
}

} // namespace

TEST_CASE("graphs whose constants differ in one bit never share a cache entry", "[runtime][cache]") {
  fs::path dir = freshDir("one_bit");
  CompileOptions o;
  o.cacheDir = dir.string();
  // A splat constant: 1.0000001 and the next float above it print alike to 6 digits.
  double c1 = 1.0000001, c2 = nextUp(c1);
  auto a = compile(scaledDifference({c1}), o);
  auto b = compile(scaledDifference({c2}), o);
  CHECK_FALSE(b->program({}).fromDiskCache());
  CHECK(a->program({}).ptx() != b->program({}).ptx());
  // A constant of many values (hashed in the key), one element one ulp apart.
  std::vector<double> many(32, 1.0);
  auto m1 = compile(scaledDifference(many), o);
  many[17] = nextUp(1.0);
  auto m2 = compile(scaledDifference(many), o);
  CHECK_FALSE(m2->program({}).fromDiskCache());
  // -0 and +0 are different constants too.
  auto z1 = compile(scaledDifference({0.0}), o);
  auto z2 = compile(scaledDifference({-0.0}), o);
  CHECK_FALSE(z2->program({}).fromDiskCache());
  CHECK(entriesIn(dir) == 6);
  // And the same graph again is served from the cache.
  CHECK(compile(scaledDifference(many), o)->program({}).fromDiskCache());
}

TEST_CASE("the cached program computes what a fresh one computes", "[runtime][cache]") {
  // The reproduction of the bug: the second graph must not get the first one's results.
  fs::path dir = freshDir("results");
  CompileOptions o;
  o.cacheDir = dir.string();
  auto device = makeDevice("sim", o.device);
  HostTensor x(DType::f32, {32});
  for (int64_t i = 0; i < 32; ++i)
    x.set(i, 1.0);
  std::vector<double> firstY;
  for (double c : {1.0000001, nextUp(1.0000001)}) {
    Executable exe(compile(scaledDifference({c}), o), *device);
    double y = exe.run({x})[0].get(0);
    firstY.push_back(y);
    CHECK(y == Approx((float(c) * 1.0f - 1.0f) * 1e7).epsilon(1e-6));
  }
  CHECK(firstY[0] != firstY[1]);
}

namespace {

/// Inputs for `g` under `binding`: deterministic values of every input's dtype.
std::vector<HostTensor> inputsFor(const ir::Graph& g, const Binding& binding) {
  std::vector<HostTensor> inputs;
  for (ir::NodeId id : g.inputs()) {
    const ir::Node& p = g.node(id);
    HostTensor t(p.type.dtype, ir::evaluate(p.type.shape, binding));
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, std::sin(double(i) * 0.37 + double(id)));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

ir::Graph example(const std::string& name) {
  return frontend::readGraphFile(std::string(WEFT_SOURCE_DIR) + "/examples/graphs/" + name +
                                 ".json")
      .graph;
}

/// The second program is the first as loaded from the cache: same plan, same PTX, same results.
void checkSameProgram(const Program& fresh, const Program& loaded) {
  const CompiledProgram& a = compiledProgram(fresh);
  const CompiledProgram& b = compiledProgram(loaded);
  CHECK_FALSE(a.fromDiskCache);
  CHECK(b.fromDiskCache);
  CHECK(fusion::printFusionPlan(b.plan) == fusion::printFusionPlan(a.plan));
  CHECK(fusion::serializePlan(b.plan) == fusion::serializePlan(a.plan));
  CHECK(b.module.ptx == a.module.ptx);
  CHECK(b.guard == a.guard);
  CHECK(b.version == a.version);
  CHECK(b.versionCount == a.versionCount);
}

void checkSameOutputs(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].shape == b[i].shape);
    CHECK(a[i].bytes == b[i].bytes);
  }
}

} // namespace

TEST_CASE("a warm compile takes its plan from the cache and runs as the cold one did",
          "[runtime][cache]") {
  // Softmax specialised for B = 3 (tile slices of its mask), astitch on the h100 profile.
  fs::path dir = freshDir("warm_plan");
  CompileOptions o;
  o.cacheDir = dir.string();
  o.shapes = ShapeMode::Specialized;
  ir::Graph g = example("softmax");
  Binding b{{"B", 3}};
  auto cold = compile(g, o);
  auto warm = compile(g, o);
  Program p1 = cold->program(b), p2 = warm->program(b);
  checkSameProgram(p1, p2);
  auto device = makeDevice("sim", o.device);
  Executable e1(cold, *device), e2(warm, *device);
  std::vector<HostTensor> inputs = inputsFor(g, b);
  checkSameOutputs(e1.run(inputs), e2.run(inputs));
}

TEST_CASE("a generic program's versions and guards come from the cache, each binding served by "
          "the same version",
          "[runtime][cache]") {
  fs::path dir = freshDir("warm_generic");
  CompileOptions o;
  o.cacheDir = dir.string();
  // Figure 7 has three versions: B in [1, 2], in [3, 128], and every other B.
  ir::Graph g = example("astitch_fig7");
  auto cold = compile(g, o);
  auto warm = compile(g, o);
  auto device = makeDevice("sim", o.device);
  Executable e1(cold, *device), e2(warm, *device);
  std::set<size_t> versions;
  for (int64_t rows : {1, 5, 130}) {
    INFO("B = " << rows);
    Binding b{{"B", rows}};
    Program p1 = cold->program(b), p2 = warm->program(b);
    checkSameProgram(p1, p2);
    versions.insert(compiledProgram(p2).version);
    std::vector<HostTensor> inputs = inputsFor(g, b);
    checkSameOutputs(e1.run(inputs, b), e2.run(inputs, b));
  }
  CHECK(versions.size() == 3); // each binding its own version
  CHECK(entriesIn(dir) == 1);  // one entry holds them all
}

TEST_CASE("an entry whose plan is corrupt is planned again and computes the right results",
          "[runtime][cache]") {
  fs::path dir = freshDir("corrupt_plan");
  CompileOptions o;
  o.cacheDir = dir.string();
  o.shapes = ShapeMode::Specialized;
  ir::Graph g = example("layer_norm");
  Binding b{{"B", 6}};
  auto cold = compile(g, o);
  Program fresh = cold->program(b);
  std::string path;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".entry") path = e.path().string();
  REQUIRE_FALSE(path.empty());
  const std::string text = readFile(path);
  auto device = makeDevice("sim", o.device);
  Executable reference(cold, *device);
  std::vector<HostTensor> inputs = inputsFor(g, b);
  std::vector<HostTensor> want = reference.run(inputs);
  // A flipped bit in the plan: caught by the entry's checksum, then (the checksum made to
  // match) by the plan's own.
  std::string flipped = text;
  flipped[insidePlan(text)] ^= 0x10;
  for (const std::string& damaged : {flipped, rechecksummed(flipped)}) {
    writeFile(path, damaged);
    auto again = compile(g, o);
    Program p = again->program(b);
    CHECK_FALSE(p.fromDiskCache());
    CHECK(compiledProgram(p).module.ptx == compiledProgram(fresh).module.ptx);
    Executable exe(again, *device);
    checkSameOutputs(exe.run(inputs), want);
    CHECK(readFile(path) == text); // and the entry is whole again
  }
}
