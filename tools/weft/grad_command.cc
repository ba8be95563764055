// weft grad G.json --loss NAME [--wrt A,B,...] [--amp f16|bf16] -o OUT.json: differentiate a forward graph
// (src/autodiff) and write the training graph as weft JSON: G's inputs; G's outputs, then
// grad_<input> per wrt input.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "autodiff/grad.h"
#include "cli_support.h"
#include "commands.h"
#include "frontend/json_writer.h"
#include "ir/printer.h"
#include "passes/amp.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct GradOptions {
  std::string file, loss, wrt, output, amp;
  bool print = false;
};

/// --wrt A,B,C: the names in order; empty for the default (every float input).
std::vector<std::string> splitNames(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name.empty()) throw InputError(fmt::format("--wrt \"{}\": an empty name", text));
    names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

void runGrad(const GradOptions& o) {
  std::optional<DType> amp = ampOption(o.amp);
  if (!o.output.empty()) checkOutputFile("-o", o.output);
  frontend::ParsedGraph g = loadGraph(o.file);
  std::vector<std::string> wrt = splitNames(o.wrt);
  if (wrt.empty()) wrt = autodiff::floatInputs(g.graph);
  ir::Graph training;
  try {
    training = autodiff::grad(g.graph, o.loss, wrt);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", o.file, e.what()));
  }
  // AMP on the whole training step: the backward's casts fuse like the forward's.
  if (amp) training = passes::autoMixedPrecision(training, *amp);
  std::string name = g.name + "_grad";
  if (o.print) fmt::print("{}", ir::printGraph(training, name));
  if (!o.output.empty()) writeOutputFile("-o", o.output, frontend::writeGraphJson(training, name));
}

} // namespace

void addGradCommand(CLI::App& app) {
  auto o = std::make_shared<GradOptions>();
  CLI::App* cmd = app.add_subcommand(
      "grad", "Differentiate a graph: write its training graph (outputs, then gradients) as JSON");
  cmd->add_option("graph", o->file, "Forward graph (JSON, docs/graph-format.md, or ONNX)")->required();
  cmd->add_option("--loss", o->loss, "The output to differentiate: a scalar floating-point output")
      ->required();
  cmd->add_option("--wrt", o->wrt,
                  "Inputs to differentiate with respect to, comma-separated, in the order of the "
                  "gradient outputs (default: every floating-point input, in graph order)");
  cmd->add_option("-o,--output", o->output, "JSON graph to write");
  addAmpOption(cmd, o->amp);
  cmd->add_flag("--print", o->print, "Print the training graph's IR with shapes");
  cmd->callback([o] {
    if (o->output.empty() && !o->print)
      throw InputError("weft grad: give -o OUT.json, --print, or both");
    runGrad(*o);
  });
}

} // namespace weft::tools
