// weft compile G.json --device-spec h100 [--policy astitch] [--bind B=64] --emit plan|dot|map|llvm|ptx|launch
// [--amp f16|bf16] [-o DIR]: plan the graph (after AMP with --amp and the canonicalizing
// passes, as weft::compile does) and print
// the plan, its Graphviz DOT, the optimised LLVM IR or the PTX — to stdout, or to
// DIR/<graph>.{plan.txt,dot,ll,ptx} with -o. Unbound symbols stay symbolic (i64 kernel
// parameters).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "cli_support.h"
#include "codegen/compile.h"
#include "commands.h"
#include "fusion/plan_explainer.h"
#include "fusion/plan_printer.h"
#include "passes/amp.h"
#include "progress.h"
#include "runtime/shape_binding.h"
#include "weft/device_spec.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct CompileArgs {
  PlanOptions plan;
  std::string emit = "ptx";
  std::string outDir;
  std::string amp; // --amp f16|bf16 (passes/amp.h)
  bool noLibdevice = false;
};

void writeOut(const CompileArgs& a, const std::string& name, const std::string& ext,
              const std::string& text) {
  if (a.outDir.empty()) {
    fmt::print("{}", text);
    return;
  }
  makeOutputDir("-o", a.outDir);
  std::string path = (std::filesystem::path(a.outDir) / (name + ext)).string();
  writeOutputFile("-o", path, text);
  fmt::print(stderr, "wrote {}\n", path);
}

/// The plan's launches as plain text, for running weft's PTX without weft (a driver-API
/// program, bench/gpu_replay.cc): every buffer's bytes, then every kernel in launch order with
/// its grid, block, dynamic shared bytes, whether it is cooperative, its thread-block cluster
/// size (1: none), whether the kernel is correct only in such clusters, whether it fills the
/// SMs (LaunchPlan::fillSMs) and its tiles, and its parameters (b<i>: buffer i; barrier: a
/// zeroed grid-barrier state of 256 B). The launch is the one bindShapes makes
/// (launchConfigFor) without the device's resident blocks: the replayer applies fillSMs.
std::string launchManifest(const fusion::FusionPlan& plan, const codegen::CompiledModule& m) {
  ir::Binding none;
  auto value = [&](const ir::Dim& d, const std::string& what) {
    if (!d.isStatic())
      throw InputError(fmt::format("--emit launch needs every symbol bound (--bind): {} is {}",
                                   what, d.str()));
    return d.size();
  };
  std::string out = "weft-launch 3\n";
  out += fmt::format("buffers {}\n", plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const fusion::Buffer& b = plan.buffers[i];
    out += fmt::format("buffer {} {}\n", i,
                       std::max<int64_t>(1, value(b.elements, "a buffer's size") *
                                                ir::dtypeBytes(b.dtype)));
  }
  out += fmt::format("kernels {}\n", m.kernels.size());
  for (const codegen::CompiledKernel& k : m.kernels) {
    const int64_t tiles = value(k.launch.tiles, "kernel " + k.name + "'s tiles");
    LaunchConfig c = launchConfigFor(k, tiles);
    // fillSMs and the tiles: a launcher that knows the device's resident blocks raises the
    // grid up to them (LaunchPlan::fillSMs).
    out += fmt::format("kernel {} {} {} {} {} {} {} {} {} {}", k.name, c.grid.x, c.block.x,
                       c.dynamicSharedBytes, c.cooperative ? 1 : 0, c.clusterSize,
                       c.clusterRequired ? 1 : 0, k.launch.fillSMs ? 1 : 0, tiles,
                       k.params.size());
    for (const codegen::KernelParam& p : k.params) {
      switch (p.kind) {
      case codegen::KernelParam::Kind::Buffer:
        out += fmt::format(" b{}", p.buffer);
        break;
      case codegen::KernelParam::Kind::Symbol:
        throw InputError(fmt::format("--emit launch needs every symbol bound (--bind): {} is not",
                                     p.symbol));
      case codegen::KernelParam::Kind::BarrierState:
        out += " barrier";
        break;
      }
    }
    out += "\n";
  }
  return out;
}

void runCompile(const CompileArgs& a) {
  std::optional<DType> amp = ampOption(a.amp);
  frontend::ParsedGraph g = loadGraph(a.plan.file);
  if (amp) g.graph = passes::autoMixedPrecision(g.graph, *amp); // as weft::compile places it
  std::optional<fusion::FusionPlan> planned;
  {
    ElapsedProgress progress(fmt::format("weft: planning {} ({} values)", g.name, g.graph.size()));
    // A launch manifest (bench/gpu_replay.cc) is one binding's launches: planned for it.
    PlanOptions planOptions = a.plan;
    if (a.emit == "launch") planOptions.shapes = "specialized";
    planned = planFromOptions(planOptions, g);
  }
  fusion::FusionPlan& plan = *planned;
  if (a.emit == "plan") return writeOut(a, g.name, ".plan.txt", fusion::printFusionPlan(plan));
  if (a.emit == "dot") return writeOut(a, g.name, ".dot", fusion::fusionPlanDot(plan));
  if (a.emit == "map") return writeOut(a, g.name, ".map.json", fusion::kernelMapJson(plan));
  codegen::CodegenOptions o;
  o.keepLlvmIr = a.emit == "llvm";
  o.useLibdevice = !a.noLibdevice;
  std::optional<codegen::CompiledModule> compiled;
  {
    ElapsedProgress progress(fmt::format("weft: compiling {} kernel(s) of {} to PTX",
                                         plan.kernelCount(), g.name));
    compiled = codegen::compileToPtx(plan, o);
  }
  codegen::CompiledModule& m = *compiled;
  if (a.emit == "llvm") return writeOut(a, g.name, ".ll", m.llvmIr);
  if (a.emit == "launch") return writeOut(a, g.name, ".launch", launchManifest(plan, m));
  writeOut(a, g.name, ".ptx", m.ptx);
}

} // namespace

void addCompileCommand(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Plan a graph and emit its plan, DOT, LLVM IR or PTX");
  addPlanOptions(cmd, a->plan);
  addAmpOption(cmd, a->amp);
  cmd->add_option("--emit", a->emit,
                  "What to print: plan, dot, map (kernel -> ops as JSON), llvm, ptx, or launch "
                  "(the launches, as text for bench/gpu_replay.cc)")
      ->check(CLI::IsMember({"plan", "dot", "map", "llvm", "ptx", "launch"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->outDir,
                  "Write DIR/<graph>.{plan.txt,dot,map.json,ll,ptx,launch} instead of stdout");
  cmd->add_flag("--no-libdevice", a->noLibdevice, "Use weft's own math instead of libdevice");
  cmd->callback([a] { runCompile(*a); });
}

} // namespace weft::tools
