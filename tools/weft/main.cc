// weft: the command line. Builds the CLI11 app from the subcommands of commands.h and maps
// errors to exit codes: 2 for errors in what the user gave (weft::InputError, bad flags),
// 1 for other failures. Nothing escapes as an uncaught exception.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "commands.h"
#include "ir/printer.h"
#include "runtime/logging.h"
#include "weft/error.h"
#include "weft/version.h"

namespace {

/// One line on stderr: control characters a user's names or paths carry (a newline in an ONNX
/// node name) are written as escapes.
void printError(const char* kind, std::string_view message, std::string_view suffix = "") {
  std::fprintf(stderr, "weft: %s: %s%s\n", kind, weft::ir::escapeControl(message).c_str(),
               std::string(suffix).c_str());
}

} // namespace

int main(int argc, char** argv) {
  try {
    weft::runtime::setupLogging();
    CLI::App app{"weft: a JIT fusion compiler for GPUs (AStitch-style operator stitching)", "weft"};
    app.set_version_flag("--version", std::string("weft ") + WEFT_VERSION);
    app.require_subcommand(1);
    app.footer("Logging: set WEFT_LOG to error, warn (default), info, debug, trace or off.");
    weft::tools::addCheckCommand(app);
    weft::tools::addEvalCommand(app);
    weft::tools::addImportCommand(app);
    weft::tools::addGradCommand(app);
    weft::tools::addOnnxTestCommand(app);
    weft::tools::addPlanCommand(app);
    weft::tools::addCompileCommand(app);
    weft::tools::addRunCommand(app);
    weft::tools::addBenchCommand(app);
    try {
      app.parse(argc, argv);
    } catch (const CLI::Success& e) {
      return app.exit(e); // --help, --version
    } catch (const CLI::ParseError& e) {
      // One line, the hint folded in: an error is one line on stderr.
      printError("error", e.what(), " (see weft --help or weft COMMAND --help)");
      return 2;
    }
    return 0;
  } catch (const weft::tools::ExitCode& e) {
    return e.code;
  } catch (const weft::InputError& e) {
    printError("error", e.what());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) { // a path the user gave: a symlink
    // loop, a name too long, no permission (the commands report these themselves; this is the
    // net under them)
    printError("error", e.path1().string() + ": " + e.code().message());
    return 2;
  } catch (const weft::Error& e) { // may hold a multi-line report (invalid LLVM IR: a weft bug)
    std::fprintf(stderr, "weft: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft: internal error: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "weft: internal error: unknown exception\n");
    return 1;
  }
}
