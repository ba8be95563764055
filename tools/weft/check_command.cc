// weft check G.json: read and verify a graph, print its IR with every value's type.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "ir/printer.h"

namespace weft::tools {

void addCheckCommand(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("check", "Read and verify a JSON graph, print its IR with shapes");
  cmd->add_option("graph", *file, "Graph file (JSON, docs/graph-format.md)")->required();
  cmd->callback([file] {
    frontend::ParsedGraph g = loadGraph(*file);
    fmt::print("{}", ir::printGraph(g.graph, g.name));
  });
}

} // namespace weft::tools
