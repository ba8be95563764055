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
  std::string file;
  InputOptions in;
};

void evaluate(const EvalOptions& o) {
  frontend::ParsedGraph g = loadGraph(o.file);
  auto [binding, inputs] = prepareInputs(g, o.file, o.in);
  std::vector<HostTensor> outputs;
  try {
    outputs = ir::interpret(g.graph, inputs, binding);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", o.file, e.what()));
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    fmt::print("{}: {}\n", g.graph.node(g.graph.outputs()[k]).name,
               frontend::summarizeTensor(outputs[k]));
  if (!o.in.saveDir.empty()) saveOutputs(g.graph, outputs, o.in.saveDir);
}

} // namespace

void addEvalCommand(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Run a graph on the reference interpreter and summarize its outputs");
  cmd->add_option("graph", o->file, "Graph file (JSON, docs/graph-format.md)")->required();
  addInputOptions(cmd, o->in);
  cmd->callback([o] { withHostMemoryCheck(o->file, o->in, [&] { evaluate(*o); }); });
}

} // namespace weft::tools
