#include "cli_support.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fmt/format.h>
#include <set>
#include <spdlog/spdlog.h>

#include "frontend/npy.h"
#include "frontend/onnx/load_graph.h"
#include "frontend/random_inputs.h"
#include "fusion/plan.h"
#include "passes/pipeline.h"
#include "weft/error.h"

namespace weft::tools {

frontend::ParsedGraph loadGraph(const std::string& path) {
  frontend::ParsedGraph g = frontend::loadGraphAnyFormat(path);
  spdlog::debug("read {}: graph \"{}\" with {} values", path, g.name, g.graph.size());
  return g;
}

DeviceSpec deviceSpecOption(const std::string& name) {
  std::optional<DeviceSpec> spec = deviceSpecProfile(name);
  if (!spec)
    throw InputError(fmt::format("--device-spec {}: unknown profile; use one of {}", name,
                                 fmt::join(deviceSpecProfileNames(), ", ")));
  return *spec;
}

fusion::Policy policyOption(const std::string& name) {
  std::optional<fusion::Policy> policy = fusion::parsePolicy(name);
  if (!policy)
    throw InputError(fmt::format("--policy {}: unknown policy; use none, xla or astitch", name));
  return *policy;
}

fusion::FusionPlan planGraphFile(const frontend::ParsedGraph& g, const std::string& bind,
                                 const DeviceSpec& spec, fusion::Policy policy) {
  ir::Binding binding = parseBindOption(bind);
  ir::Graph graph = binding.empty() ? g.graph : ir::bindSymbols(g.graph, binding);
  return fusion::plan(passes::canonicalize(graph), spec, policy);
}

void addInputOptions(CLI::App* cmd, InputOptions& o) {
  cmd->add_option("--bind", o.bind, "Sizes of the graph's symbols, e.g. B=16,S=128");
  auto* inputs = cmd->add_option("--inputs", o.inputsDir,
                                 "Directory with one <input name>.npy per graph input");
  auto* random =
      cmd->add_flag("--random", o.random, "Seeded random inputs (the default without --inputs)");
  cmd->add_option("--seed", o.seed, "Seed of the random inputs (default 0)");
  inputs->excludes(random);
  cmd->add_option("--save-outputs", o.saveDir, "Write each output to DIR/<output name>.npy");
}

GraphInputs prepareInputs(const frontend::ParsedGraph& g, const std::string& file,
                          const InputOptions& o) {
  GraphInputs r;
  r.binding = parseBindOption(o.bind);
  if (!o.inputsDir.empty()) {
    r.inputs = readInputsDir(g.graph, o.inputsDir);
    r.binding = completeBinding(g, file, r.binding, &r.inputs);
    return r;
  }
  r.binding = completeBinding(g, file, r.binding, nullptr);
  try {
    r.inputs = frontend::randomInputs(g.graph, r.binding, o.seed);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", file, e.what()));
  }
  spdlog::info("random inputs, seed {}", o.seed);
  return r;
}

void withHostMemoryCheck(const std::string& file, const InputOptions& o,
                         const std::function<void()>& work) {
  try {
    work();
  } catch (const std::bad_alloc&) {
    throw InputError(
        fmt::format("{}: not enough host memory for the inputs and outputs under --bind {}; use "
                    "smaller sizes",
                    file, o.bind.empty() ? "(none)" : o.bind));
  }
}

ir::Binding parseBindOption(const std::string& text) {
  if (text.empty()) return {};
  try {
    return ir::parseBinding(text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--bind: {}", e.what()));
  }
}

ir::Binding completeBinding(const frontend::ParsedGraph& g, const std::string& file,
                            ir::Binding binding, const std::vector<HostTensor>* inputs) {
  if (inputs) {
    for (size_t k = 0; k < g.graph.inputs().size() && k < inputs->size(); ++k) {
      const ir::Shape& shape = g.graph.node(g.graph.inputs()[k]).type.shape;
      const auto& actual = (*inputs)[k].shape;
      for (size_t d = 0; d < shape.size() && d < actual.size(); ++d) {
        const ir::Dim& dim = shape[d];
        if (dim.symbols().size() == 1 && dim.factor() == 1 && !binding.count(dim.symbols()[0]))
          binding[dim.symbols()[0]] = actual[d];
      }
    }
  }
  std::vector<std::string> unbound;
  for (const auto& s : g.graph.symbols())
    if (!binding.count(s)) unbound.push_back(s);
  if (!unbound.empty()) {
    std::string example;
    for (const auto& s : unbound)
      example += fmt::format("{}{}=16", example.empty() ? "" : ",", s);
    std::string names;
    for (const auto& s : unbound)
      names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", s);
    throw InputError(fmt::format("{}: symbol{} {} {} not bound; give {} a size with --bind {}",
                                 file, unbound.size() > 1 ? "s" : "", names,
                                 unbound.size() > 1 ? "are" : "is",
                                 unbound.size() > 1 ? "them" : "it", example));
  }
  std::set<std::string> used;
  for (const auto& s : g.graph.symbols())
    used.insert(s);
  for (const auto& [s, v] : binding)
    if (!used.count(s)) spdlog::warn("--bind {}={}: the graph has no symbol \"{}\"", s, v, s);
  return binding;
}

std::vector<HostTensor> readInputsDir(const ir::Graph& g, const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw InputError(fmt::format(
        "--inputs {}: not a directory; it must hold one <input name>.npy per graph input", dir));
  std::vector<HostTensor> out;
  for (ir::NodeId id : g.inputs()) {
    const ir::Node& n = g.node(id);
    std::filesystem::path p = std::filesystem::path(dir) / (n.name + ".npy");
    if (!std::filesystem::exists(p))
      throw InputError(fmt::format("--inputs {}: no {} for graph input \"{}\" ({})", dir,
                                   p.filename().string(), n.name, n.type.str()));
    out.push_back(frontend::readNpy(p.string(), n.type.dtype));
  }
  return out;
}

void saveOutputs(const ir::Graph& g, const std::vector<HostTensor>& outputs,
                 const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw InputError(
        fmt::format("--save-outputs {}: cannot create the directory: {}", dir, ec.message()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string name = g.node(g.outputs()[k]).name;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    std::filesystem::path p = std::filesystem::path(dir) / (name + ".npy");
    frontend::writeNpy(p.string(), outputs[k]);
    spdlog::info("wrote {}", p.string());
  }
}

void addPlanOptions(CLI::App* cmd, PlanOptions& o) {
  cmd->add_option("graph", o.file, "Graph file (weft JSON or ONNX)")->required();
  cmd->add_option("--policy", o.policy, "Fusion policy: none, xla, astitch")
      ->capture_default_str();
  cmd->add_option("--device-spec", o.deviceSpec, "Device profile: v100, a100, h100")
      ->capture_default_str();
  cmd->add_option("--bind", o.bind, "Symbol sizes, e.g. B=64,S=128 (unbound symbols stay symbolic)");
}

fusion::FusionPlan planFromOptions(const PlanOptions& o, const frontend::ParsedGraph& g) {
  DeviceSpec spec = deviceSpecOption(o.deviceSpec);
  fusion::Policy policy = policyOption(o.policy);
  return planGraphFile(g, o.bind, spec, policy);
}

} // namespace weft::tools
