// The on-disk compile cache: round trip, a second process-level compile served from disk, and
// entries that are corrupt or belong to another key recompiled rather than loaded.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "runtime/compile_cache.h"
#include "weft/weft.h"

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
  cache.store("key", sampleModule()); // overwritten by the next compile
  CHECK(cache.load("key").has_value());
}

TEST_CASE("weft::compile stores on disk and a later compile loads from there", "[runtime][cache]") {
  fs::path dir = freshDir("pipeline");
  CompileOptions o;
  o.cacheDir = dir.string();
  auto first = compile(negGraph(), o);
  CHECK_FALSE(first->program({})->fromDiskCache);
  auto second = compile(negGraph(), o);
  auto p = second->program({});
  CHECK(p->fromDiskCache);
  CHECK(p->module.ptx == first->program({})->module.ptx);
  o.device = *deviceSpecProfile("v100"); // another device: another entry
  CHECK_FALSE(compile(negGraph(), o)->program({})->fromDiskCache);
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir))
    entries += e.path().extension() == ".json";
  CHECK(entries == 2);
}
