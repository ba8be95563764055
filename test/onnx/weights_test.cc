// Weights as device-resident parameters (issue 20, part 1) on the one-layer encoder of
// encoder_model.h: imported initializers become weights, not constants; the PTX does not
// depend on their values and embeds none; no kernel copies them; a second set of weights
// reuses the compiled program (in memory and from the disk cache); `weft import` writes them
// to a weights file beside the graph that `weft run` reads, and a hostile weights file is one
// error line with exit code 2.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "compile.h"
#include "encoder_model.h"
#include "frontend/npy.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/random_inputs.h"
#include "frontend/weights_file.h"
#include "ir/interpreter.h"
#include "passes/hoist_weights.h"
#include "runtime/output_check.h"
#include "../support/run_weft.h"

using namespace weft;
namespace fs = std::filesystem;

namespace {

ir::Graph encoderGraph(uint64_t seed) {
  return weft::onnx::importOnnxBytes(weft::onnx::test::encoderModel(seed), "encoder.onnx");
}

CompileOptions options(Policy p, std::string cacheDir = "off") {
  CompileOptions o;
  o.policy = p;
  o.cacheDir = std::move(cacheDir);
  return o;
}

HostTensor encoderInput(uint64_t seed) {
  HostTensor x(DType::f32, {64, 256});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, std::sin(double(i) * 0.37 + double(seed)));
  return x;
}

/// The largest table of values a PTX module embeds (`.global .b8 NAME[N] = {...}`), in bytes.
size_t largestEmbeddedTable(const std::string& ptx) {
  size_t largest = 0;
  std::regex table(R"(\.(?:global|const)\s+(?:\.align\s+\d+\s+)?\.b8\s+\w+\[(\d+)\])");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), table); it != std::sregex_iterator();
       ++it)
    largest = std::max<size_t>(largest, std::stoull((*it)[1]));
  return largest;
}

fs::path writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

/// `weft import` of the encoder with `seed` into DIR/encoder.json + DIR/encoder.safetensors.
fs::path importedEncoder(const std::string& dir, uint64_t seed) {
  fs::path d = testing::scratchDir() / dir;
  fs::create_directories(d);
  fs::path model = writeFile(d / "encoder.onnx", weft::onnx::test::encoderModel(seed));
  auto r = testing::runWeft("import " + model.string() + " -o " + (d / "encoder.json").string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return d / "encoder.json";
}

} // namespace

TEST_CASE("the encoder's initializers become weights, small constants stay", "[weights]") {
  ir::Graph g = encoderGraph(1);
  passes::HoistedWeights h = passes::hoistWeights(g);
  // 6 projections (weight + bias) and 2 layer norms (gamma + beta).
  CHECK(h.values.size() == 16);
  CHECK(h.values.at("q.weight").typeStr() == "f32[256, 256]");
  CHECK(h.values.at("ffn2.weight").typeStr() == "f32[1024, 256]");
  CHECK(h.graph.inputs().size() == 17); // x, then the weights
  CHECK(h.graph.node(h.graph.inputs()[0]).name == "x");
  for (const ir::Node& n : h.graph.nodes())
    if (n.kind == ir::OpKind::Constant)
      CHECK(n.attr<ir::ConstantAttrs>().values.size() * 4 <= ir::kMaxEmbeddedConstantBytes);
  // The values moved, bit for bit.
  ir::NodeId w = *g.find("q.weight");
  CHECK(h.values.at("q.weight").bytes == passes::constantTensor(g.node(w)).bytes);
}

TEST_CASE("the encoder's PTX embeds no weight and does not depend on the weights' values",
          "[weights]") {
  for (Policy p : {Policy::None, Policy::Xla, Policy::AStitch}) {
    INFO(fusion::policyName(p));
    std::string a = compile(encoderGraph(1), options(p))->program({}).ptx();
    std::string b = compile(encoderGraph(2), options(p))->program({}).ptx();
    CHECK(a == b);
    CHECK(largestEmbeddedTable(a) <= ir::kMaxEmbeddedConstantBytes);
    CHECK(a.size() < 1'000'000);
  }
}

TEST_CASE("no kernel of the encoder copies a weight at run time", "[weights]") {
  ir::Graph g = encoderGraph(1);
  size_t weightBytes = 0;
  for (const auto& [name, t] : passes::hoistWeights(g).values)
    weightBytes += t.byteSize();
  REQUIRE(weightBytes > 3'000'000); // 0.8 M f32 weights
  for (Policy p : {Policy::None, Policy::Xla, Policy::AStitch}) {
    INFO(fusion::policyName(p));
    auto compiled = compile(g, options(p));
    auto device = makeDevice("sim", compiled->options().device);
    Executable exe(compiled, *device);
    exe.run({encoderInput(0)});
    // Every value the layer writes is an activation (at most 64 x 1024 f32 = 256 KiB each):
    // a copy of the weights (3 MiB) is more than all of them together.
    uint64_t written = 0;
    for (const LaunchCounters& c : exe.takeCounters()) {
      INFO(c.kernel);
      CHECK(c.globalSectorsWritten * 32 <= 256 * 1024 + 4096);
      written += c.globalSectorsWritten * 32;
    }
    if (p != Policy::None) CHECK(written < weightBytes / 2); // none writes every op's result
    CHECK(exe.stats().weightUploads == 16); // once, at load
    exe.run({encoderInput(1)});
    CHECK(exe.stats().weightUploads == 16);
  }
}

TEST_CASE("a second set of weights reuses the compiled program", "[weights]") {
  ir::Graph g1 = encoderGraph(1), g2 = encoderGraph(2);
  HostTensor x = encoderInput(3);
  SECTION("setWeights on one compiled graph: new results, no new program") {
    passes::HoistedWeights h1 = passes::hoistWeights(g1), h2 = passes::hoistWeights(g2);
    auto compiled = compile(h1.graph, options(Policy::AStitch));
    auto device = makeDevice("sim", compiled->options().device);
    Executable first(compiled, *device), second(compiled, *device);
    first.setWeights(h1.values);
    second.setWeights(h2.values);
    CHECK(first.callInputNames() == std::vector<std::string>{"x"});
    std::vector<HostTensor> y1 = first.run({x}), y2 = second.run({x});
    CHECK(compiled->programCount() == 1);
    auto check = [&](const passes::HoistedWeights& h, const std::vector<HostTensor>& y) {
      std::vector<HostTensor> inputs = {x};
      for (size_t i = 1; i < h.graph.inputs().size(); ++i)
        inputs.push_back(h.values.at(h.graph.node(h.graph.inputs()[i]).name));
      for (const runtime::TensorCheck& c : runtime::checkOutputs(h.graph, inputs, {}, y)) {
        INFO(c.str());
        CHECK(c.passed);
      }
    };
    check(h1, y1);
    check(h2, y2);
    CHECK(y1[0].bytes != y2[0].bytes);
    // Replacing the weights of an Executable in place gives the new results.
    first.setWeights(h2.values);
    CHECK(first.run({x})[0].bytes == y2[0].bytes);
    CHECK(compiled->programCount() == 1);
  }
  SECTION("a graph that differs only in its constants' values hits the disk cache") {
    fs::path dir = testing::scratchDir() / "weights_cache";
    fs::remove_all(dir);
    auto a = compile(g1, options(Policy::AStitch, dir.string()));
    auto b = compile(g2, options(Policy::AStitch, dir.string()));
    CHECK_FALSE(a->program({}).fromDiskCache());
    CHECK(b->program({}).fromDiskCache());
    // and computes with its own values
    auto device = makeDevice("sim", b->options().device);
    Executable exe(b, *device);
    std::vector<HostTensor> y = exe.run({x});
    for (const runtime::TensorCheck& c : runtime::checkOutputs(g2, {x}, {}, y)) {
      INFO(c.str());
      CHECK(c.passed);
    }
  }
}

TEST_CASE("weft import writes the weights beside the graph, weft run checks it under every "
          "policy",
          "[weights][cli]") {
  fs::path json = importedEncoder("import_run", 1);
  fs::path weights = fs::path(json).replace_extension(".safetensors");
  REQUIRE(fs::exists(weights));
  CHECK(fs::file_size(json) < 32 * 1024); // the graph, without its 3 MB of weights
  CHECK(fs::file_size(weights) > 3'000'000);
  std::string text = testing::slurp(json);
  CHECK(text.find("\"weights_file\": \"encoder.safetensors\"") != std::string::npos);
  CHECK(text.find("{\"name\": \"q.weight\", \"dtype\": \"f32\", \"shape\": [256, 256]}") !=
        std::string::npos);
  for (const char* policy : {"none", "xla", "astitch"}) {
    auto r = testing::runWeft("run " + json.string() + " --check --policy " + policy);
    INFO(policy << "\n" << r.out << r.err);
    CHECK(r.rc == 0);
    CHECK(r.out.find("check: all outputs match") != std::string::npos);
  }
}

TEST_CASE("an embedder runs an imported graph through the public API with its weights file",
          "[weights]") {
  fs::path json = importedEncoder("public_api", 2);
  Graph g = loadGraphJson(json.string());
  std::map<std::string, HostTensor> weights = loadGraphWeights(json.string());
  CHECK(weights.size() == 16);
  auto compiled = compile(g, options(Policy::Xla));
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  exe.setWeights(weights);
  HostTensor x = encoderInput(4);
  std::vector<HostTensor> y = exe.run({x});
  for (const runtime::TensorCheck& c : runtime::checkOutputs(encoderGraph(2), {x}, {}, y)) {
    INFO(c.str());
    CHECK(c.passed);
  }
  CHECK_THROWS_WITH(loadGraphWeights((json.parent_path() / "nothing.json").string()),
                    Catch::Contains("nothing.json: cannot open the graph file"));
}

TEST_CASE("new weights reach a captured graph's replays and device-buffer runs", "[weights]") {
  passes::HoistedWeights h1 = passes::hoistWeights(encoderGraph(1)),
                         h2 = passes::hoistWeights(encoderGraph(2));
  auto compiled = compile(h1.graph, options(Policy::Xla));
  auto device = makeDevice("sim", compiled->options().device);
  HostTensor x = encoderInput(5);
  Executable plain(compiled, *device);
  plain.setWeights(h2.values);
  const std::vector<HostTensor> want2 = plain.run({x});
  plain.setWeights(h1.values);
  const std::vector<HostTensor> want1 = plain.run({x});

  Executable graphed(compiled, *device);
  graphed.setGraphMode(GraphMode::On);
  graphed.setWeights(h1.values);
  CHECK(graphed.run({x})[0].bytes == want1[0].bytes);
  graphed.setWeights(h2.values); // same sizes: uploaded in place, the captured graph stays valid
  CHECK(graphed.run({x})[0].bytes == want2[0].bytes);
  CHECK(graphed.stats().captures == 1);
  CHECK(graphed.stats().replays == 2);
  CHECK(graphed.stats().weightUploads == 32);

  // The device-buffer API takes the call's inputs only, as run() does.
  DevicePtr in = device->allocate(x.byteSize()), out = device->allocate(want2[0].byteSize());
  device->copyToDevice(in, x.bytes.data(), x.byteSize());
  graphed.run(std::vector<DevicePtr>{in}, std::vector<DevicePtr>{out}, {});
  HostTensor y(DType::f32, want2[0].shape);
  device->copyToHost(y.bytes.data(), out, y.byteSize());
  CHECK(y.bytes == want2[0].bytes);
  device->free(in);
  device->free(out);
}

TEST_CASE("a generic program's versions share the constants the compiler made weights",
          "[weights]") {
  // A column sum of x + c over x [B, 256]: the planner maps few rows and many rows differently.
  ir::Graph g;
  ir::Shape shape = {ir::Dim::symbol("B"), 256};
  auto x = g.parameter("x", {DType::f32, shape});
  std::vector<double> c(256);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = std::cos(double(i));
  auto cc = g.broadcastInDim(g.constant(DType::f32, {256}, c, "c"), shape, {1});
  g.addOutput(g.reduce(ir::ReduceKind::Sum, g.binary(ir::OpKind::Add, x, cc), {0}, "s"));
  auto compiled = compile(g, options(Policy::AStitch));
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  std::set<const CompiledProgram*> versions;
  for (int64_t b : {2, 100, 5000}) {
    HostTensor xv(DType::f32, {b, 256});
    for (int64_t i = 0; i < xv.numElements(); ++i)
      xv.set(i, std::sin(double(i)));
    std::vector<HostTensor> y = exe.run({xv}, {{"B", b}});
    versions.insert(&compiledProgram(exe.programFor({{"B", b}})));
    for (const runtime::TensorCheck& t : runtime::checkOutputs(g, {xv}, {{"B", b}}, y)) {
      INFO(b << ": " << t.str());
      CHECK(t.passed);
    }
  }
  REQUIRE(versions.size() > 1);
  CHECK(exe.stats().weightUploads == 1); // c, once for every version
}

TEST_CASE("random inputs leave the weights as the weights file gives them", "[weights][cli]") {
  fs::path json = importedEncoder("random", 1);
  fs::path out = testing::scratchDir() / "random_out";
  auto r = testing::runWeft("eval " + json.string() + " --random --seed 5 --save-outputs " +
                            out.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  // The interpreter on the same random x and the model's own initializers.
  ir::Graph g = encoderGraph(1);
  std::vector<HostTensor> x = frontend::randomInputs(g, {}, 5);
  std::vector<HostTensor> want = ir::interpret(g, x);
  HostTensor got = frontend::readNpy((out / "y.npy").string(), DType::f32);
  CHECK(got.bytes == want[0].bytes);
}

TEST_CASE("a hostile weights file is one error line with exit code 2", "[weights][cli]") {
  fs::path json = importedEncoder("hostile", 1);
  fs::path weights = fs::path(json).replace_extension(".safetensors");
  const std::string good = testing::slurp(weights);
  ir::Weights all = frontend::decodeWeights(good, "good");
  auto runWith = [&](const std::string& bytes) {
    writeFile(weights, bytes);
    return testing::runWeft("run " + json.string());
  };
  auto expectError = [&](const testing::WeftResult& r, const std::string& pattern) {
    INFO(r.out << r.err);
    CHECK(r.rc == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(std::regex_search(r.err, std::regex(pattern)));
  };
  SECTION("truncated") {
    expectError(runWith(good.substr(0, good.size() / 2)),
                R"(encoder\.json: weights_file: .*encoder\.safetensors: tensor "[\w.]+": data_offsets .* truncated)");
    expectError(runWith(good.substr(0, 5)), R"(encoder\.safetensors: not a weights file)");
    expectError(runWith(good.substr(0, 40)), R"(encoder\.safetensors: the header says)");
  }
  SECTION("missing tensor") {
    ir::Weights w = all;
    w.erase("ffn1.bias");
    expectError(runWith(frontend::encodeWeights(w)),
                R"(encoder\.safetensors: tensor "ffn1.bias" is missing)");
  }
  SECTION("wrong dtype") {
    ir::Weights w = all;
    HostTensor& t = w.at("ln1.gamma");
    HostTensor d(DType::f64, t.shape);
    w.at("ln1.gamma") = d;
    expectError(runWith(frontend::encodeWeights(w)),
                R"(tensor "ln1.gamma" is F64\[256\], but the graph declares it f32\[256\])");
  }
  SECTION("wrong shape") {
    ir::Weights w = all;
    w.at("q.weight") = HostTensor(DType::f32, {256, 128});
    expectError(runWith(frontend::encodeWeights(w)),
                R"(tensor "q.weight" has shape \[256, 128\], but the graph declares it f32\[256, 256\])");
  }
  SECTION("a tensor the graph does not declare") {
    ir::Weights w = all;
    w.emplace("extra", HostTensor(DType::f32, {2}));
    expectError(runWith(frontend::encodeWeights(w)), R"(tensor "extra" is not a weight)");
  }
  SECTION("no file") {
    fs::remove(weights);
    auto r = testing::runWeft("run " + json.string());
    expectError(r, R"(encoder\.safetensors: cannot open the weights file)");
  }
}

TEST_CASE("setWeights refuses what the graph does not take", "[weights]") {
  passes::HoistedWeights h = passes::hoistWeights(encoderGraph(1));
  auto compiled = compile(h.graph, options(Policy::Xla));
  auto device = makeDevice("sim", compiled->options().device);
  Executable exe(compiled, *device);
  CHECK_THROWS_WITH(exe.setWeights({{"nope", HostTensor(DType::f32, {2})}}),
                    "weight \"nope\": the graph has no input of that name");
  CHECK_THROWS_WITH(exe.setWeights({{"q.bias", HostTensor(DType::f16, {256})}}),
                    "weight \"q.bias\": expected dtype f32 (f32[256]), got f16");
  CHECK_THROWS_WITH(exe.setWeights({{"q.bias", HostTensor(DType::f32, {255})}}),
                    "weight \"q.bias\": expected shape [256] (f32[256]), got [255]");
  CHECK(exe.stats().weightUploads == 0);
  CHECK_THROWS_WITH(exe.run({}), "the graph takes 17 input(s) but 0 were given");
  exe.setWeights(h.values);
  CHECK_THROWS_WITH(exe.run({}),
                    "the graph takes 1 input(s) but 0 were given (besides the 16 weight(s) set by "
                    "setWeights)");
}

TEST_CASE("write the encoder model for measurements", "[.write_encoder]") {
  const char* path = std::getenv("WEFT_ENCODER_ONNX");
  REQUIRE(path);
  const char* seed = std::getenv("WEFT_ENCODER_SEED");
  weft::onnx::test::EncoderShape shape;
  if (std::getenv("WEFT_ENCODER_BASE")) shape = {128, 768, 12, 3072};
  writeFile(path, weft::onnx::test::encoderModel(seed ? std::stoull(seed) : 1, shape));
}
