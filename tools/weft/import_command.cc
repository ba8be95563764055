// weft import M.onnx -o G.json: import an ONNX model (src/frontend/onnx) and write it as a
// weft JSON graph, or print its IR with --print.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "frontend/json_writer.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/printer.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct ImportCommandOptions {
  std::string model, output;
  bool print = false;
};

void runImport(const ImportCommandOptions& o) {
  if (!o.output.empty()) checkOutputFile("-o", o.output);
  ir::Graph g = onnx::importOnnx(o.model);
  std::string name = std::filesystem::path(o.model).stem().string();
  if (o.print) fmt::print("{}", ir::printGraph(g, name));
  if (o.output.empty()) return;
  writeOutputFile("-o", o.output, frontend::writeGraphJson(g, name));
}

} // namespace

void addImportCommand(CLI::App& app) {
  auto o = std::make_shared<ImportCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("import", "Import an ONNX model and write it as a weft JSON graph");
  cmd->add_option("model", o->model, "ONNX model file (.onnx); docs/onnx.md lists the operators")
      ->required();
  cmd->add_option("-o,--output", o->output, "JSON graph to write (docs/graph-format.md)");
  cmd->add_flag("--print", o->print, "Print the imported graph's IR with shapes");
  cmd->callback([o] {
    if (o->output.empty() && !o->print)
      throw InputError("weft import: give -o G.json, --print, or both");
    runImport(*o);
  });
}

} // namespace weft::tools
