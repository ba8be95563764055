// The on-disk compile cache: round trip, a second process-level compile served from disk, and
// entries that are corrupt or belong to another key recompiled rather than loaded.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "runtime/compile_cache.h"
#include "compile.h"

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

TEST_CASE("a module survives the cache's round trip", "[runtime][cache]") {
  runtime::CompileCache cache(freshDir("roundtrip").string());
  CHECK_FALSE(cache.load("key").has_value());
  cache.store("key", sampleModule());
  auto m = cache.load("key");
  REQUIRE(m.has_value());
  CHECK(m->ptx == sampleModule().ptx);
  REQUIRE(m->kernels.size() == 1);
  const auto& k = m->kernels[0];
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

TEST_CASE("a corrupt or mismatched entry is recompiled, not loaded", "[runtime][cache]") {
  fs::path dir = freshDir("corrupt");
  runtime::CompileCache cache(dir.string());
  cache.store("key", sampleModule());
  std::string path = cache.pathFor("key");
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Flip one character of the PTX inside the payload: the checksum no longer matches.
  size_t at = text.find("ptx text");
  REQUIRE(at != std::string::npos);
  std::string damaged = text;
  damaged[at] = 'P';
  std::ofstream(path, std::ios::trunc) << damaged;
  CHECK_FALSE(cache.load("key").has_value());
  std::ofstream(path, std::ios::trunc) << text.substr(0, text.size() / 2); // truncated
  CHECK_FALSE(cache.load("key").has_value());
  // A section whose length is off by one no longer ends at its newline.
  size_t ptxHead = text.find("\nptx ");
  REQUIRE(ptxHead != std::string::npos);
  std::string lying = text;
  lying[ptxHead + 5] = char(lying[ptxHead + 5] + 1);
  std::ofstream(path, std::ios::trunc) << lying;
  CHECK_FALSE(cache.load("key").has_value());
  std::ofstream(path, std::ios::trunc) << "{\"key\": \"key\"}"; // the first format's JSON
  CHECK_FALSE(cache.load("key").has_value());
  cache.store("key", sampleModule()); // overwritten by the next compile
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
