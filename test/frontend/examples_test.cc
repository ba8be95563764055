// Every graph of examples/graphs reads, has the documented outputs, and survives a
// write/read round trip unchanged.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "frontend/json_reader.h"
#include "frontend/json_writer.h"
#include "ir/printer.h"

using namespace weft;

TEST_CASE("every example reads, has the expected outputs and round-trips") {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"layer_norm", {"y: f32[B, 768]"}},
      {"softmax", {"probs: f32[B, 12, 128, 128]"}},
      {"gelu_bias", {"y: f32[B, 3072]"}},
      {"rms_norm", {"y: f32[B, 4096]"}},
      {"residual_add_layer_norm", {"y: f32[B, 768]", "sum: f32[B, 768]"}},
      {"astitch_fig7", {"multiply.1: f32[B, 128]"}},
      {"row_reduce_750000x32", {"y: f32[750000]"}},
      {"row_reduce_64x30000", {"y: f32[64]"}},
      {"column_reduce_bias_grad", {"dbias: f32[768]"}},
      {"layer_norm_backward", {"dx: f32[B, 768]", "dgamma: f32[768]", "dbeta: f32[768]"}},
      {"layer_norm_loss", {"loss: f32[]"}},
      {"mlp_train", {"loss: f32[]"}},
      {"bert_embeddings", {"embeddings: f32[B, 128, 256]"}},
  };
  size_t seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(WEFT_SOURCE_DIR "/examples/graphs")) {
    if (entry.path().extension() != ".json") continue;
    std::string stem = entry.path().stem().string();
    INFO(stem);
    auto g = frontend::readGraphFile(entry.path().string());
    CHECK(g.name == stem);
    std::vector<std::string> outputs;
    for (ir::NodeId id : g.graph.outputs())
      outputs.push_back(g.graph.node(id).name + ": " + g.graph.node(id).type.str());
    auto it = expected.find(stem);
    REQUIRE(it != expected.end()); // a new example needs its expected outputs here
    CHECK(outputs == it->second);
    auto back = frontend::readGraphJson(frontend::writeGraphJson(g.graph, g.name), "written.json");
    CHECK(ir::printGraph(back.graph, back.name) == ir::printGraph(g.graph, g.name));
    ++seen;
  }
  CHECK(seen == expected.size());
}

TEST_CASE("the AStitch Figure 7 example keeps the paper's op names and shapes") {
  auto g = frontend::readGraphFile(WEFT_SOURCE_DIR "/examples/graphs/astitch_fig7.json");
  auto type = [&](const char* name) { return g.graph.node(*g.graph.find(name)).type.str(); };
  CHECK(type("reduce.1") == "f32[B, 128]");
  CHECK(type("power.1") == "f32[128]");
  CHECK(type("broadcast.2") == "f32[B, 128]");
  CHECK(type("reduce.2") == "f32[128]");
  CHECK(g.graph.node(*g.graph.find("divide.1")).kind == ir::OpKind::Div);
  CHECK(g.graph.node(*g.graph.find("multiply.1")).kind == ir::OpKind::Mul);
}
