// weft import M.onnx -o G.json: import an ONNX model (src/frontend/onnx) and write it as a
// weft JSON graph, or print its IR with --print. Initializers larger than a few hundred bytes
// become weights: declared in the graph's "weights", their values in G.safetensors beside it
// (docs/graph-format.md, "Weights"); --embed-weights keeps them in the JSON as constants.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "frontend/json_writer.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/weights_file.h"
#include "ir/printer.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct ImportCommandOptions {
  std::string model, output, weights;
  bool print = false, embedWeights = false;
};

void runImport(const ImportCommandOptions& o) {
  if (!o.output.empty()) checkOutputFile("-o", o.output);
  frontend::ParsedGraph g;
  g.name = std::filesystem::path(o.model).stem().string();
  g.graph = onnx::importOnnx(o.model);
  if (!o.embedWeights) withWeightsHoisted(g);
  if (o.print) fmt::print("{}", ir::printGraph(g.graph, g.name));
  if (o.output.empty()) return;
  writeGraphWithWeights(o.output, o.weights, g.graph, g.name, g.weightNames, g.weights, o.model);
}

} // namespace

void addImportCommand(CLI::App& app) {
  auto o = std::make_shared<ImportCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("import", "Import an ONNX model and write it as a weft JSON graph");
  cmd->add_option("model", o->model, "ONNX model file (.onnx); docs/onnx.md lists the operators")
      ->required();
  cmd->add_option("-o,--output", o->output, "JSON graph to write (docs/graph-format.md)");
  cmd->add_option("--weights", o->weights,
                  "Weights file to write (safetensors layout; default: the -o file with the "
                  "extension .safetensors)");
  cmd->add_flag("--embed-weights", o->embedWeights,
                "Keep initializers in the JSON as constants (no weights file; large constants "
                "are still weights when compiled)");
  cmd->add_flag("--print", o->print, "Print the imported graph's IR with shapes");
  cmd->callback([o] {
    if (o->output.empty() && !o->print)
      throw InputError("weft import: give -o G.json, --print, or both");
    runImport(*o);
  });
}

} // namespace weft::tools
