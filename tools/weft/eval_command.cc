// weft eval G.json: run a graph on the reference interpreter (ir::interpret) and print a
// summary of each output.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli_support.h"
#include "commands.h"
#include "frontend/tensor_summary.h"
#include "ir/interpreter.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct EvalOptions {
  std::string file, bind, inputsDir, saveDir;
  bool random = false;
  uint64_t seed = 0;
};

void evaluate(const EvalOptions& o) {
  frontend::ParsedGraph g = loadGraph(o.file);
  auto [binding, inputs] = prepareInputs(g, o.file, o.bind, o.inputsDir, o.seed);
  std::vector<HostTensor> outputs;
  try {
    outputs = ir::interpret(g.graph, inputs, binding);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", o.file, e.what()));
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    fmt::print("{}: {}\n", g.graph.node(g.graph.outputs()[k]).name,
               frontend::summarizeTensor(outputs[k]));
  if (!o.saveDir.empty()) saveOutputs(g.graph, outputs, o.saveDir);
}

void runEval(const EvalOptions& o) {
  try {
    evaluate(o);
  } catch (const std::bad_alloc&) {
    throw InputError(
        fmt::format("{}: not enough host memory for the inputs and outputs under --bind {}; use "
                    "smaller sizes",
                    o.file, o.bind.empty() ? "(none)" : o.bind));
  }
}

} // namespace

void addEvalCommand(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Run a graph on the reference interpreter and summarize its outputs");
  cmd->add_option("graph", o->file, "Graph file (JSON, docs/graph-format.md)")->required();
  cmd->add_option("--bind", o->bind, "Sizes of the graph's symbols, e.g. B=16,S=128");
  auto* inputs = cmd->add_option("--inputs", o->inputsDir,
                                 "Directory with one <input name>.npy per graph input");
  auto* random =
      cmd->add_flag("--random", o->random, "Seeded random inputs (the default without --inputs)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs (default 0)");
  cmd->add_option("--save-outputs", o->saveDir, "Write each output to DIR/<output name>.npy");
  inputs->excludes(random);
  cmd->callback([o] { runEval(*o); });
}

} // namespace weft::tools
