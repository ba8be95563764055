#pragma once
// The subcommands of `weft`, one file each (weft/<name>_command.cc). To add one: define
// `void add<Name>Command(CLI::App&)` in its own file (it adds a subcommand with its options and
// a callback), declare it here, call it from main.cc and list the file in tools/CMakeLists.txt.
// Callbacks report through exceptions: weft::InputError (exit 2) for anything the user gave,
// other weft::Error (exit 1), or ExitCode to end with a chosen status after printing.
namespace CLI {
class App;
}

namespace weft::tools {

void addCheckCommand(CLI::App& app); // weft check G.json
void addEvalCommand(CLI::App& app);  // weft eval G.json [--bind] [--inputs DIR | --random --seed N]
void addImportCommand(CLI::App& app);   // weft import M.onnx -o G.json
void addGradCommand(CLI::App& app); // weft grad G.json --loss NAME [--wrt A,B] -o OUT.json
void addOnnxTestCommand(CLI::App& app); // weft onnx-test DIR... [--json] [--policy P]
void addCompileCommand(
    CLI::App& app); // weft compile G.json [--policy P] --emit plan|dot|llvm|ptx [-o DIR]
void addPlanCommand(CLI::App& app); // weft plan G.json [--policy P] [--device-spec S] [--dot]
void addRunCommand(CLI::App& app); // weft run G.json [--device D] [--check] [--counters] [--time N]
void addBenchCommand(CLI::App& app); // weft bench [WORKLOADS] [--policy all] [--device-spec h100]
                                     // [--format md|json|csv]

/// Thrown by a command that has printed its result and wants weft to exit with `code`
/// (e.g. 1 when `weft run --check` finds a mismatch).
struct ExitCode {
  int code;
};

} // namespace weft::tools
