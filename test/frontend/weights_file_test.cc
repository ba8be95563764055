// Weights beside the graph (docs/graph-format.md, "Weights"): the safetensors layout written
// and read back bit for bit in every dtype, files as the safetensors package writes them,
// hostile files refused with their reason, and the JSON graph's "weights"/"weights_file".
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "frontend/json_reader.h"
#include "frontend/json_writer.h"
#include "frontend/weights_file.h"
#include "ir/printer.h"
#include "weft/error.h"

using namespace weft;
namespace fs = std::filesystem;

namespace {

HostTensor ramp(DType t, std::vector<int64_t> shape) {
  HostTensor x(t, std::move(shape));
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, ir::isBool(t) ? double(i % 2) : double(i) - 3.5 * double(isFloat(t)));
  return x;
}

const char* kGraph = R"({
  "name": "lin",
  "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 4]}],
  "weights_file": "lin.safetensors",
  "weights": [{"name": "w", "dtype": "f32", "shape": [4, 3]}, {"name": "b", "dtype": "f32", "shape": [3]}],
  "ops": [{"name": "m", "op": "dot", "inputs": ["x", "w"]}, {"name": "y", "op": "add", "inputs": ["m", "b"]}],
  "outputs": ["y"]
})";

fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("weft_weights_file_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

} // namespace

TEST_CASE("weights files round-trip every dtype bit for bit", "[weights]") {
  ir::Weights w;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::i32,
                  DType::i64, DType::boolean})
    w.emplace(std::string("t_") + std::string(dtypeName(t)), ramp(t, {2, 3}));
  w.emplace("scalar", ramp(DType::f32, {}));
  w.emplace("empty", ramp(DType::f32, {0, 5}));
  std::string bytes = frontend::encodeWeights(w);
  ir::Weights back = frontend::decodeWeights(bytes, "w.safetensors");
  REQUIRE(back.size() == w.size());
  for (const auto& [name, t] : w) {
    INFO(name);
    CHECK(back.at(name).dtype == t.dtype);
    CHECK(back.at(name).shape == t.shape);
    CHECK(back.at(name).bytes == t.bytes);
  }
}

TEST_CASE("a weights file as the safetensors package writes it reads as it is", "[weights]") {
  // Header padded with spaces, metadata first, tensors in another order than their data.
  std::string header = R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"a":{"dtype":"I8","shape":[3],"data_offsets":[0,3]}}    )";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  bytes += header;
  std::string data(16, '\0');
  data[0] = 1, data[1] = 2, data[2] = static_cast<char>(-3);
  float b[2] = {0.5f, -2.0f};
  std::memcpy(&data[8], b, 8);
  ir::Weights w = frontend::decodeWeights(bytes + data, "st");
  CHECK(w.at("a").getInt(2) == -3);
  CHECK(w.at("b").get(1) == -2.0);
}

TEST_CASE("a hostile weights file is refused with its reason", "[weights]") {
  ir::Weights w;
  w.emplace("w", ramp(DType::f32, {4, 3}));
  std::string good = frontend::encodeWeights(w);
  auto error = [](const std::string& bytes) {
    try {
      frontend::decodeWeights(bytes, "w.st");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("") == "w.st: not a weights file: 0 bytes, shorter than the 8-byte header length "
                     "(a truncated file?)");
  CHECK(error(good.substr(0, 20)).find("w.st: the header says it is") == 0);
  CHECK(error(good.substr(0, good.size() - 1)) ==
        "w.st: tensor \"w\": data_offsets [0, 48] lie outside the 47 data bytes the file holds "
        "(a truncated file?)");
  std::string badJson = std::string("\x02\0\0\0\0\0\0\0", 8) + "{x";
  CHECK(error(badJson).find("w.st: the header is not valid JSON") == 0);
  auto withHeader = [](const std::string& h, size_t dataBytes) {
    std::string b(8, '\0');
    b[0] = static_cast<char>(h.size());
    return b + h + std::string(dataBytes, '\0');
  };
  CHECK(error(withHeader(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 2)) ==
        "w.st: tensor \"w\": dtype \"U8\" is not one weft reads (F32, F16, BF16, F64, I8, I32, "
        "I64, BOOL)");
  CHECK(error(withHeader(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8)) ==
        "w.st: tensor \"w\": 4 bytes of data, but F32[2] needs 8");
  CHECK(error(withHeader(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,4]}})", 8)) ==
        "w.st: tensor \"w\": the shape must hold non-negative integers");
  CHECK(error(withHeader(R"({"w":{"dtype":"F32","shape":[2]}})", 8)) ==
        "w.st: tensor \"w\": needs \"dtype\" (a string), \"shape\" (an array) and "
        "\"data_offsets\" (two integers)");
  // A tensor (or a field of one) given twice: whichever the parser kept would be read.
  CHECK(error(withHeader(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         8)) == "w.st: the header gives \"w\" twice");
  CHECK(error(withHeader(R"({"w":{"dtype":"F32","shape":[2],"shape":[1],"data_offsets":[0,8]}})",
                         8)) == "w.st: the header gives \"shape\" twice");
}

TEST_CASE("a JSON graph names its weights and their file, the reader loads and checks them",
          "[weights]") {
  fs::path dir = scratch();
  write(dir / "lin.json", kGraph);
  ir::Weights w;
  w.emplace("w", ramp(DType::f32, {4, 3}));
  w.emplace("b", ramp(DType::f32, {3}));
  frontend::writeWeightsFile((dir / "lin.safetensors").string(), w);
  frontend::ParsedGraph g = frontend::readGraphFile((dir / "lin.json").string());
  CHECK(g.weightNames == std::vector<std::string>{"w", "b"});
  CHECK(g.weightsFile == "lin.safetensors");
  REQUIRE(g.graph.inputs().size() == 3); // x, then the weights
  CHECK(g.graph.node(g.graph.inputs()[1]).name == "w");
  CHECK(g.weights.at("w").bytes == w.at("w").bytes);
  // Written back with its weights section, read back alike.
  std::string text = frontend::writeGraphJson(g.graph, g.name, g.weightNames, g.weightsFile);
  frontend::ParsedGraph back = frontend::readGraphJson(text, "back.json");
  CHECK(back.weightNames == g.weightNames);
  CHECK(ir::printGraph(back.graph) == ir::printGraph(g.graph));
  // A missing tensor names the graph, the file and the tensor.
  w.erase("b");
  frontend::writeWeightsFile((dir / "lin.safetensors").string(), w);
  CHECK_THROWS_WITH(frontend::readGraphFile((dir / "lin.json").string()),
                    (dir / "lin.json").string() + ": weights_file: " +
                        (dir / "lin.safetensors").string() +
                        ": tensor \"b\" is missing; the graph declares it as a weight");
}

TEST_CASE("the weights fields are checked", "[weights]") {
  std::string noFile = kGraph;
  noFile.erase(noFile.find("  \"weights_file\""), std::string("  \"weights_file\": \"lin.safetensors\",\n").size());
  CHECK_THROWS_WITH(frontend::readGraphJson(noFile, "g.json"),
                    "g.json: graph: field \"weights\" needs \"weights_file\", the file holding "
                    "their values");
  std::string symbolic = kGraph;
  symbolic.replace(symbolic.find("[4, 3]"), 6, "[\"K\", 3]");
  CHECK_THROWS_WITH(frontend::readGraphJson(symbolic, "g.json"),
                    "g.json: weight \"w\": field \"shape\": [K, 3] has a symbolic dim; a weight's "
                    "shape is static (its values are in the weights file)");
  std::string clash = kGraph;
  clash.replace(clash.find("\"name\": \"b\""), 11, "\"name\": \"x\"");
  CHECK_THROWS_WITH(frontend::readGraphJson(clash, "g.json"),
                    Catch::Contains("the name \"x\" is already used by input \"x\""));
}

TEST_CASE("a weights file that cannot be written to the end is an error, not lost weights",
          "[weights]") {
  // The write went to the stream's buffer; /dev/full refused it only at the unchecked close.
  ir::Weights w;
  w.emplace("w", ramp(DType::f32, {64}));
  CHECK_THROWS_WITH(frontend::writeWeightsFile("/dev/full", w),
                    "/dev/full: cannot write the weights file: No space left on device");
}
