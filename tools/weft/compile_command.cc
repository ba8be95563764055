// weft compile G.json --device-spec h100 [--policy astitch] [--bind B=64] --emit plan|dot|llvm|ptx
// [-o DIR]: plan the graph (after the canonicalizing passes, as weft::compile does) and print
// the plan, its Graphviz DOT, the optimised LLVM IR or the PTX — to stdout, or to
// DIR/<graph>.{plan.txt,dot,ll,ptx} with -o. Unbound symbols stay symbolic (i64 kernel
// parameters).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <memory>

#include "cli_support.h"
#include "codegen/compile.h"
#include "commands.h"
#include "fusion/plan_printer.h"
#include "weft/device_spec.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct CompileArgs {
  PlanOptions plan;
  std::string emit = "ptx";
  std::string outDir;
  bool noLibdevice = false;
};

void writeOut(const CompileArgs& a, const std::string& name, const std::string& ext,
              const std::string& text) {
  if (a.outDir.empty()) {
    fmt::print("{}", text);
    return;
  }
  std::filesystem::create_directories(a.outDir);
  std::string path = (std::filesystem::path(a.outDir) / (name + ext)).string();
  std::ofstream out(path);
  out << text;
  if (!out) throw Error("cannot write " + path);
  fmt::print(stderr, "wrote {}\n", path);
}

void runCompile(const CompileArgs& a) {
  frontend::ParsedGraph g = loadGraph(a.plan.file);
  fusion::FusionPlan plan = planFromOptions(a.plan, g);
  if (a.emit == "plan") return writeOut(a, g.name, ".plan.txt", fusion::printFusionPlan(plan));
  if (a.emit == "dot") return writeOut(a, g.name, ".dot", fusion::fusionPlanDot(plan));
  codegen::CodegenOptions o;
  o.keepLlvmIr = a.emit == "llvm";
  o.useLibdevice = !a.noLibdevice;
  codegen::CompiledModule m = codegen::compileToPtx(plan, o);
  if (a.emit == "llvm") return writeOut(a, g.name, ".ll", m.llvmIr);
  writeOut(a, g.name, ".ptx", m.ptx);
}

} // namespace

void addCompileCommand(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Plan a graph and emit its plan, DOT, LLVM IR or PTX");
  addPlanOptions(cmd, a->plan);
  cmd->add_option("--emit", a->emit, "What to print: plan, dot, llvm, ptx")
      ->check(CLI::IsMember({"plan", "dot", "llvm", "ptx"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->outDir,
                  "Write DIR/<graph>.{plan.txt,dot,ll,ptx} instead of stdout");
  cmd->add_flag("--no-libdevice", a->noLibdevice, "Use weft's own math instead of libdevice");
  cmd->callback([a] { runCompile(*a); });
}

} // namespace weft::tools
