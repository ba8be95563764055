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

/// Whether two paths name one file (through "..", symlinks and hard links, existing or not).
bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  std::filesystem::path ca = std::filesystem::weakly_canonical(a, ec);
  if (ec) return false;
  std::filesystem::path cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

void runImport(const ImportCommandOptions& o) {
  if (!o.output.empty()) checkOutputFile("-o", o.output);
  frontend::ParsedGraph g;
  g.name = std::filesystem::path(o.model).stem().string();
  g.graph = onnx::importOnnx(o.model);
  if (!o.embedWeights) withWeightsHoisted(g);
  if (o.print) fmt::print("{}", ir::printGraph(g.graph, g.name));
  if (o.output.empty()) return;
  if (g.weightNames.empty()) {
    writeOutputFile("-o", o.output, frontend::writeGraphJson(g.graph, g.name));
    return;
  }
  // The weights file beside the graph, named relative to it in "weights_file".
  std::filesystem::path out(o.output);
  std::filesystem::path weights =
      o.weights.empty() ? std::filesystem::path(out).replace_extension(".safetensors")
                        : std::filesystem::path(o.weights);
  checkOutputFile("--weights", weights.string());
  // One path for both: the graph's JSON would overwrite the weights just written.
  for (const auto& [flag, other] : {std::pair<const char*, std::string>{"-o", o.output},
                                    std::pair<const char*, std::string>{"the model", o.model}})
    if (samePath(weights.string(), other))
      throw InputError(
          fmt::format("--weights {}: the same file as {} {}; give the weights a "
                      "file of their own (default: {})",
                      weights.string(), flag, other,
                      std::filesystem::path(out).replace_extension(".safetensors").string()));
  std::filesystem::path folder = out.parent_path().empty() ? "." : out.parent_path();
  std::string relative =
      std::filesystem::absolute(weights).lexically_relative(std::filesystem::absolute(folder))
          .string();
  try {
    frontend::writeWeightsFile(weights.string(), g.weights);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--weights {}", e.what()));
  }
  writeOutputFile("-o", o.output,
                  frontend::writeGraphJson(g.graph, g.name, g.weightNames,
                                           relative.empty() ? weights.string() : relative));
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
