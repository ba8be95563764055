#include "workloads.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "frontend/json_reader.h"
#include "frontend/onnx/load_graph.h"
#include "fusion/graph_queries.h"
#include "sweep_workloads.h"
#include "synthetic_graphs.h"
#include "weft/error.h"

#ifndef WEFT_BENCH_WORKLOADS_DIR
#define WEFT_BENCH_WORKLOADS_DIR "bench/workloads"
#endif

namespace weft::bench {
namespace {

Workload jsonWorkload(const std::string& dir, const std::string& name, std::string summary) {
  std::string path = (std::filesystem::path(dir) / (name + ".json")).string();
  return {name, std::move(summary), [path] { return frontend::readGraphFile(path).graph; },
          [path] { return symbolicWorkload(path); }};
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string defaultWorkloadsDir() {
  // An installed weft (cmake --install) finds the suite next to itself, in
  // PREFIX/share/weft/workloads for PREFIX/bin/weft, wherever the prefix was moved; a weft run
  // from its build tree falls back to the source tree's bench/workloads.
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path installed = exe.parent_path().parent_path() / "share/weft/workloads";
    if (std::filesystem::is_directory(installed, ec))
      return installed.string();
  }
  return WEFT_BENCH_WORKLOADS_DIR;
}

std::vector<Workload> suiteWorkloads(const std::string& dir) {
  std::vector<Workload> w;
  w.push_back(jsonWorkload(dir, "layer_norm_f32", "BERT-base LayerNorm [16384, 768] f32"));
  w.push_back(
      jsonWorkload(dir, "layer_norm_f16", "BERT-base LayerNorm [16384, 768] f16 (f32 statistics)"));
  w.push_back(jsonWorkload(dir, "softmax", "attention softmax, scale + mask, [49152, 128]"));
  w.push_back(jsonWorkload(dir, "gelu_bias", "bias + GELU [16384, 3072]"));
  w.push_back(jsonWorkload(dir, "rms_norm_bf16", "RMSNorm [4096, 4096] bf16"));
  w.push_back(
      jsonWorkload(dir, "row_reduce_750000x32", "DIEN row reduce [750000, 32] (AStitch Fig. 6a)"));
  w.push_back(jsonWorkload(dir, "row_reduce_64x30000",
                           "Transformer row reduce [64, 30000] (AStitch Fig. 6b)"));
  w.push_back(jsonWorkload(dir, "astitch_fig7", "AStitch Fig. 7 subgraph, [2048, 128, 32]"));
  w.push_back(jsonWorkload(dir, "bias_grad", "bias-gradient column reduce [16384, 768]"));
  w.push_back(jsonWorkload(dir, "layer_norm_backward", "LayerNorm backward [16384, 768]"));
  w.push_back(jsonWorkload(dir, "log_softmax_nll", "log-softmax + NLL, [512, 30000] vocabulary"));
  w.push_back(jsonWorkload(dir, "bert_ffn_gemm", "BERT-base FFN GEMM [128, 768] x [768, 3072] f32"));
  w.push_back(jsonWorkload(dir, "mlp_train_step",
                           "MLP training step (weft grad --sgd): [1024, 128] -> 512, layer norm, "
                           "GELU -> 64, softmax cross-entropy, backward, update"));
  w.push_back({"cluster_200", "generated cluster of 200 ops on [2048, 768]",
               [] { return elementwiseCluster(200, 2048, 768); }, {}});
  w.push_back({"chain_softmax_64", "64 chained softmaxes on [4, 8] (recompute against store)",
               [] { return chainedSoftmaxes(64, 4, 8); }, {}});
  w.push_back({"graph_10000",
               "generated 10,000-node graph: clusters of 48 ops on [64, 64] between matmuls",
               [] { return clusteredGraph(10000, 64, 64); }, {}});
  return w;
}

Workload findWorkload(const std::string& nameOrPath, const std::string& dir,
                      const ir::Binding& binding) {
  std::vector<std::string> names;
  for (Workload& w : suiteWorkloads(dir)) {
    if (w.name == nameOrPath) return w;
    names.push_back(w.name);
  }
  if (std::optional<SweepPoint> p = sweepPointNamed(nameOrPath)) return sweepWorkload(*p);
  std::error_code ec; // a symlink loop or an over-long name is no file, not an exception
  if (endsWith(nameOrPath, ".json") || endsWith(nameOrPath, ".onnx") ||
      std::filesystem::is_regular_file(nameOrPath, ec)) {
    std::string path = nameOrPath;
    std::string stem = std::filesystem::path(path).stem().string();
    return {stem, "graph file " + path,
            [path, binding] {
              ir::Graph g = frontend::loadGraphAnyFormat(path).graph;
              return binding.empty() ? g : ir::bindSymbols(g, binding);
            },
            [path, binding, stem] {
              return SymbolicGraph{stem, frontend::loadGraphAnyFormat(path).graph, binding};
            }};
  }
  throw InputError(fmt::format("unknown workload \"{}\"; the suite's workloads are {} (or give a "
                               "graph file, e.g. examples/graphs/softmax.json --bind B=4, or "
                               "sweep / sweep_<layer_norm|rms_norm|softmax>_<f32|bf16>_<256 to "
                               "262144>)",
                               nameOrPath, fmt::join(names, ", ")));
}

SymbolicGraph symbolicWorkload(const std::string& jsonPath) {
  std::ifstream in(jsonPath);
  if (!in) throw InputError(fmt::format("{}: cannot be read", jsonPath));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str());
  const nlohmann::json& first = j.at("inputs").at(0).at("shape");
  if (first.empty() || !first[0].is_number_integer())
    throw InputError(fmt::format("{}: the first input has no static leading dim", jsonPath));
  int64_t n = first[0].get<int64_t>();
  // A rank-1 [N] is the leading dim's (layer norm backward's mean) unless N is also the first
  // input's last dim (rms_norm's weight [4096] of x [4096, 4096]): then it stays static.
  bool squareLast = first.size() > 1 && first.back() == n;
  std::function<void(nlohmann::json&)> symbolize = [&](nlohmann::json& node) {
    if (node.is_object()) {
      for (auto& [key, value] : node.items()) {
        if (key == "shape" && value.is_array() && !value.empty() && value[0].is_number_integer() &&
            value[0] == n && !(value.size() == 1 && squareLast))
          value[0] = "B";
        else
          symbolize(value);
      }
    } else if (node.is_array()) {
      for (nlohmann::json& e : node)
        symbolize(e);
    }
  };
  symbolize(j);
  frontend::ParsedGraph g = frontend::readGraphJson(j.dump(), jsonPath);
  return {g.name, std::move(g.graph), {{"B", n}}};
}

uint64_t compulsoryBytes(const ir::Graph& g) {
  auto elementsOf = [&](ir::NodeId id) {
    uint64_t n = 1;
    for (const ir::Dim& d : g.node(id).type.shape)
      n *= static_cast<uint64_t>(d.evaluate({}));
    return n;
  };
  auto bytesOf = [&](ir::NodeId id) {
    return elementsOf(id) * static_cast<uint64_t>(ir::dtypeBytes(g.node(id).type.dtype));
  };
  // An input only gathers read (an embedding table) needs only the elements they read: at most
  // one per gathered element, however large the table.
  std::vector<std::vector<ir::NodeId>> users = g.users();
  auto gatheredOnly = [&](ir::NodeId in) -> std::optional<uint64_t> {
    const auto& us = users[static_cast<size_t>(in)];
    if (us.empty()) return std::nullopt;
    uint64_t elements = 0;
    for (ir::NodeId u : us) {
      const ir::Node& n = g.node(u);
      if (!fusion::readsAtDataPositions(n, in) ||
          std::count(n.operands.begin(), n.operands.end(), in) != 1) // also an index operand
        return std::nullopt;
      elements += elementsOf(u);
    }
    return elements * static_cast<uint64_t>(ir::dtypeBytes(g.node(in).type.dtype));
  };
  uint64_t total = 0;
  for (ir::NodeId in : g.inputs()) {
    std::optional<uint64_t> gathered = gatheredOnly(in);
    total += gathered ? std::min(*gathered, bytesOf(in)) : bytesOf(in);
  }
  for (ir::NodeId out : g.outputs())
    total += bytesOf(out);
  return total;
}

bool rowsFitOnChip(const ir::Graph& g, int64_t sharedMemoryPerBlock) {
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::OpKind::Dot) return false;
    if (n.kind != ir::OpKind::Reduce) continue;
    const ir::Node& in = g.node(n.operands[0]);
    int64_t row = 1;
    for (int64_t axis : n.attr<ir::ReduceAttrs>().axes)
      row *= in.type.shape[static_cast<size_t>(axis)].evaluate({});
    if (row * 4 > sharedMemoryPerBlock) return false;
  }
  return true;
}

} // namespace weft::bench
