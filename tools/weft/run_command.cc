// weft run G.json|M.onnx [--device sim|cuda|auto] [--policy P] [--device-spec S] [--bind ...]
// [--inputs DIR | --random --seed N] [--check] [--counters] [--graph on|off|auto] [--time N]
// [--save-outputs DIR] [--amp f16|bf16] [--tf32] [--no-wgmma] [--sweep S=V1,V2,... [--max-bind S=N]]: weft's main job. Compiles the graph (weft::compile), runs it on a
// device through an Executable, prints each output's summary and, on request, compares every
// output with the reference interpreter (exit 1 on a mismatch), prints what the simulator
// counted per kernel, and times the kernels. --sweep runs one binding after another in one
// Executable (random inputs, each checked with --check) and says what the sweep cost: programs,
// versions, graph captures, in-place launch updates and buffer reallocations.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <new>
#include <set>
#include <spdlog/spdlog.h>
#include <stdexcept>

#include "bench/copy_baseline.h"
#include "bench/perf_model.h"
#include "bench/workloads.h"
#include "cli_support.h"
#include "commands.h"
#include "compile.h"
#include "counters_table.h"
#include "frontend/tensor_summary.h"
#include "ir/interpreter.h"
#include "passes/amp.h"
#include "progress.h"
#include "runtime/cuda/cublaslt_steps.h"
#include "runtime/output_check.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct RunArgs {
  std::string file, device = "sim", policy = "astitch", deviceSpec = "h100", graphMode = "off";
  std::string shapes = "generic";
  InputOptions in;
  bool check = false, counters = false, noLibdevice = false;
  int timeRuns = 0;
  bool timeGiven = false; // --time N was on the command line (then N must be 1 or more)
  std::string sweep, maxBind;
  std::string amp;   // --amp f16|bf16 (passes/amp.h)
  bool tf32 = false; // --tf32 (CompileOptions::tf32)
  bool noWgmma = false; // --no-wgmma (CompileOptions::warpgroupMma)
};

/// --sweep S=V1,V2,...: the symbol and its sizes, in order (InputError naming what is wrong).
std::pair<std::string, std::vector<int64_t>> parseSweep(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(fmt::format("--sweep {}: give a symbol and its sizes, e.g. B=1,7,64", text));
  std::vector<int64_t> sizes;
  for (size_t start = eq + 1; start <= text.size();) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string v = text.substr(start, comma - start);
    if (v.find("..") != std::string::npos)
      throw InputError(fmt::format("--sweep {}: \"{}\" is a range; list the sizes to run, e.g. "
                                   "B=1,7,64 (a range goes in --bind, B=1..4096)",
                                   text, v));
    try { // "1=2" and the like are no size either
      sizes.push_back(ir::parseSize(v));
    } catch (const InputError& e) {
      throw InputError(fmt::format("--sweep {}: {}", text, e.what()));
    }
    start = comma + 1;
  }
  std::string symbol = text.substr(0, eq);
  try { // the symbol's name, as --bind reads it
    ir::parseBinding(symbol + "=0");
  } catch (const InputError&) {
    throw InputError(fmt::format("--sweep {}: \"{}\" is not a symbol name", text, symbol));
  }
  return {symbol, sizes};
}

/// --sweep's symbol against --bind and --max-bind, before anything compiles: --bind must not
/// give the swept symbol a size too (a range is fine: the program is planned for it); each
/// --max-bind size must hold the sizes the runs use (--sweep's, --bind's), and must fit in this
/// machine's memory; a --max-bind symbol the graph lacks is warned of, as --bind's are.
void checkSweepOptions(const RunArgs& a, const frontend::ParsedGraph& g) {
  auto [symbol, sizes] = parseSweep(a.sweep);
  const std::vector<std::string> symbols = g.graph.symbols();
  if (std::find(symbols.begin(), symbols.end(), symbol) == symbols.end())
    throw InputError(fmt::format("--sweep {}: the graph has no symbol \"{}\"", a.sweep, symbol));
  ir::Binding bound = parseBindOption(a.in.bind);
  if (bound.count(symbol))
    throw InputError(fmt::format("--bind {} and --sweep {} both give {}: give its sizes in --sweep "
                                 "only (a --bind range {}=LO..HI is fine)",
                                 a.in.bind, a.sweep, symbol, symbol));
  checkBindRanges(g.graph, a.file, a.in.bind);
  if (a.maxBind.empty()) return;
  ir::Binding max = parseSizesOption("--max-bind", a.maxBind);
  for (const auto& [s, size] : max) {
    int64_t need = 0;
    std::string from;
    if (s == symbol) {
      need = *std::max_element(sizes.begin(), sizes.end());
      from = "--sweep " + a.sweep;
    } else if (auto it = bound.find(s); it != bound.end()) {
      need = it->second;
      from = "--bind " + a.in.bind;
    }
    if (size < need)
      throw InputError(fmt::format("--max-bind {}: {}={} is below {}={}, which {} runs; give {} "
                                   "{} or more",
                                   a.maxBind, s, size, s, need, from, s, need));
  }
  warnUnusedBindings(g, max, "--max-bind");
  // The buffers are sized for the largest binding: --bind's sizes, --max-bind's over them.
  ir::Binding largest = bound;
  for (const auto& [s, size] : max)
    largest[s] = size;
  checkBoundSizes(g.graph, a.file, largest, a.maxBind, hostMemoryBytes(), "--max-bind");
}

GraphMode graphModeOption(const std::string& text) {
  if (text == "off") return GraphMode::Off;
  if (text == "on") return GraphMode::On;
  if (text == "auto") return GraphMode::Auto;
  throw InputError(fmt::format("--graph {}: use on, off or auto", text));
}

/// runtime::checkOutputs of one run; the interpreter's errors (an integer x / 0) are prefixed
/// with `where` (the graph file, as eval's are, and the swept size in a sweep).
std::vector<runtime::TensorCheck> interpreterChecks(const std::string& where,
                                                    const frontend::ParsedGraph& g,
                                                    const GraphInputs& in,
                                                    const std::vector<HostTensor>& actual,
                                                    const runtime::CheckOptions& options) {
  try {
    return runtime::checkOutputs(g.graph, in.inputs, in.binding, actual, options);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
}

/// Compares every output with ir::interpret under the rules of runtime::checkOutputs; prints one
/// line per output. True when all pass.
bool checkOutputs(const std::string& file, const frontend::ParsedGraph& g, const GraphInputs& in,
                  const std::vector<HostTensor>& actual, const runtime::CheckOptions& options) {
  bool allPassed = true;
  std::vector<runtime::TensorCheck> checks = interpreterChecks(file, g, in, actual, options);
  fmt::print("check against the reference interpreter:\n");
  for (const runtime::TensorCheck& c : checks) {
    fmt::print("  {}\n", c.str());
    allPassed = allPassed && c.passed;
  }
  fmt::print("check: {}\n", allPassed ? "all outputs match" : "MISMATCH");
  return allPassed;
}

/// The graph's compulsory bytes at the run's binding (bench/workloads.h: inputs read once, only
/// the gathered elements of an input only gathers read, outputs written once).
uint64_t compulsoryBytes(const ir::Graph& g, const ir::Binding& binding) {
  return bench::compulsoryBytes(ir::bindSymbols(g, binding));
}

/// Measured medians per kernel and end to end, next to the time the performance model gives
/// for the same launches (bench/perf_model.h) when the simulator's counters are at hand, and
/// each as a fraction of the copy baseline's speed: a copy of the workload's compulsory bytes
/// (bench/copy_kernel.h), timed on the same device in the same run.
void printTiming(const Executable::Timing& t, const std::string& deviceName, GraphMode mode,
                 const std::vector<LaunchCounters>& counters, const bench::ProgramShape& shape,
                 const DeviceSpec& spec, const bench::CopyRun& copy, uint64_t compulsory) {
  bool modeled = counters.size() == t.kernels.size();
  bench::ModelProfile profile = bench::modelProfile(
      spec, mode == GraphMode::On ? bench::LaunchMode::Graph : bench::LaunchMode::Stream);
  std::vector<uint64_t> hits = bench::l2HitBytes(counters, shape, profile.cost.l2Bytes);
  const bool shaped = modeled && shape.size() == counters.size();
  auto ofCopy = [&](double ms) {
    return ms > 0 ? fmt::format("   {:>5.0f}% of copy", 100 * copy.ms / ms) : std::string();
  };
  fmt::print("timing on {}: median of {} run(s), {}{}\n", deviceName, t.runs,
             t.deviceClock ? "device events" : "host wall-clock (the simulator has no GPU clock)",
             modeled ? fmt::format("; modeled {} time beside it", spec.name) : "");
  for (size_t k = 0; k < t.kernels.size(); ++k) {
    fmt::print("  {:<40} {:>12.4f} ms{}", t.kernels[k].name, t.kernels[k].ms, ofCopy(t.kernels[k].ms));
    if (modeled)
      fmt::print("   modeled {:>10.4f} ms",
                 bench::modelKernel(counters[k], profile, shaped ? &shape[k] : nullptr, hits[k])
                         .totalUs() /
                     1e3);
    fmt::print("\n");
  }
  fmt::print("  {:<40} {:>12.4f} ms{}",
             fmt::format("end to end (graph {})", mode == GraphMode::On     ? "on"
                                                  : mode == GraphMode::Auto ? "auto"
                                                                            : "off"),
             t.totalMs, ofCopy(t.totalMs));
  if (modeled)
    fmt::print("   modeled {:>10.4f} ms",
               bench::modelProgram(counters, profile, shaped ? shape : bench::ProgramShape{})
                       .totalUs() /
                   1e3);
  fmt::print("\n");
  const uint64_t copied = copy.launch.vectors * bench::kCopyVectorBytes;
  fmt::print("  {:<40} {:>12.4f} ms   {:.1f} GB/s{}   modeled {:>10.4f} ms\n",
             fmt::format("copy baseline ({})", bench::kCopyKernelName), copy.ms,
             copy.ms > 0 ? 2.0 * double(copied) / (copy.ms * 1e6) : 0.0,
             copy.deviceClock ? "" : " (host clock)",
             bench::copyBaselineUs(compulsory, profile) / 1e3);
  fmt::print("copy baseline: {} read + {} written = the compulsory bytes ({}), {} x {} threads; "
             "\"% of copy\" is the copy's time over each time (100% = a kernel as fast as a copy "
             "of the workload's compulsory bytes)\n",
             copied, copied, compulsory, copy.launch.grid, copy.launch.block);
}

/// The modeled GPU time of the counted launches on `spec` (never measured; bench/perf_model.h).
void printModeledTime(const std::vector<LaunchCounters>& counters, const bench::ProgramShape& shape,
                      const DeviceSpec& spec, uint64_t compulsory) {
  bench::ModelProfile profile = bench::modelProfile(spec);
  bench::ModeledTime t = bench::modelProgram(
      counters, profile, shape.size() == counters.size() ? shape : bench::ProgramShape{});
  fmt::print("modeled time on {} (not measured): {:.2f} us = max(memory {:.2f}, issue {:.2f}) "
             "per kernel {:.2f} + launches {:.2f} + grid barriers {:.2f}; {:.1f} MB from DRAM, "
             "{:.1f} MB from L2; {:.0f}% of a copy's speed (modeled copy of the compulsory "
             "bytes: {:.2f} us)\n",
             spec.name, t.totalUs(), t.memoryUs, t.issueUs, t.boundUs, t.launchUs, t.barrierUs,
             double(t.dramBytes) / 1e6, double(t.l2Bytes) / 1e6,
             t.totalUs() > 0 ? 100 * bench::copyBaselineUs(compulsory, profile) / t.totalUs() : 0,
             bench::copyBaselineUs(compulsory, profile));
}

/// The runs of --sweep, each checked on request.
void sweepBindings(const RunArgs& a, const frontend::ParsedGraph& g, Executable& exe,
                   const std::shared_ptr<CompiledGraph>& compiled) {
  auto [symbol, sizes] = parseSweep(a.sweep);
  if (!a.maxBind.empty()) exe.setMaxBinding(parseSizesOption("--max-bind", a.maxBind));
  std::set<const void*> versions;
  bool allPassed = true;
  for (int64_t size : sizes) {
    InputOptions in = a.in;
    in.bind = (in.bind.empty() ? "" : in.bind + ",") + fmt::format("{}={}", symbol, size);
    GraphInputs inputs = prepareInputs(g, a.file, in);
    std::vector<HostTensor> outputs = exe.run(callInputs(g, inputs.inputs), inputs.binding);
    Program program = exe.programFor(inputs.binding);
    versions.insert(&compiledProgram(program));
    std::string verdict;
    if (a.check) {
      bool passed = true;
      for (const runtime::TensorCheck& c :
           interpreterChecks(fmt::format("{}: {}={}", a.file, symbol, size), g, inputs, outputs,
                             {.tf32Dots = a.tf32}))
        passed = passed && c.passed;
      verdict = passed ? ": outputs match" : ": MISMATCH";
      allPassed = allPassed && passed;
    }
    fmt::print("  {}={}: version {} of {}, {} kernel(s){}\n", symbol, size,
               compiledProgram(program).version + 1, compiledProgram(program).versionCount,
               program.plan().kernelCount(), verdict);
  }
  const Executable::Stats& s = exe.stats();
  fmt::print("sweep: {} binding(s), {} program(s) compiled, {} version(s) run, {} graph "
             "capture(s), {} in-place launch update(s) (new grids), {} argument update(s), {} buffer "
             "reallocation(s)\n",
             sizes.size(), compiled->programCount(), versions.size(), s.captures,
             s.launchUpdates, s.argUpdates, s.reallocations);
  exe.takeCounters();
  if (a.check && !allPassed) throw ExitCode{1};
}

/// --sweep: every size of the swept symbol through one Executable, each checked on request.
/// Host memory that runs out is the sweep's (its sizes, or the buffers --max-bind asks for).
void runSweep(const RunArgs& a, const frontend::ParsedGraph& g, Executable& exe,
              const std::shared_ptr<CompiledGraph>& compiled) {
  auto outOfMemory = [&] {
    return InputError(fmt::format("{}: not enough host memory for --sweep {}{}; use smaller sizes",
                                  a.file, a.sweep,
                                  a.maxBind.empty() ? "" : " with --max-bind " + a.maxBind));
  };
  try {
    sweepBindings(a, g, exe, compiled);
  } catch (const std::bad_alloc&) {
    throw outOfMemory();
  } catch (const std::length_error&) { // a vector past max_size(): a size no machine holds
    throw outOfMemory();
  }
}

void runGraph(const RunArgs& a) {
  GraphMode mode = graphModeOption(a.graphMode);
  DeviceSpec profile = deviceSpecOption(a.deviceSpec);
  fusion::Policy policy = policyOption(a.policy);
  ShapeMode shapes = shapeModeOption(a.shapes);
  if (a.timeRuns < 0 || (a.timeGiven && a.timeRuns == 0))
    throw InputError(
        fmt::format("--time {}: give the number of timed runs (1 or more)", a.timeRuns));
  if (!a.sweep.empty() && (a.timeRuns > 0 || a.counters || !a.in.inputsDir.empty() ||
                          !a.in.saveDir.empty()))
    throw InputError("--sweep runs random inputs and checks them; it does not take --time, "
                     "--counters, --inputs or --save-outputs");
  if (!a.maxBind.empty() && a.sweep.empty())
    throw InputError("--max-bind sizes the buffers of a --sweep; give --sweep too");
  std::optional<DType> amp = ampOption(a.amp);
  frontend::ParsedGraph g = loadGraph(a.file);
  // The mixed-precision graph is what runs, and what --check's interpreter runs too: the check
  // is of the compiler, not of AMP's rounding (test/passes/amp_test.cc bounds that).
  if (amp) g.graph = passes::autoMixedPrecision(g.graph, *amp);
  GraphInputs in = a.sweep.empty() ? prepareInputs(g, a.file, a.in) : GraphInputs{};
  if (!a.sweep.empty()) checkSweepOptions(a, g);

  std::unique_ptr<Device> device = makeDevice(a.device, profile);
  CompileOptions options;
  options.policy = policy;
  options.shapes = shapes;
  options.symbolRanges = parseBindRanges(a.in.bind);
  options.device = device->spec(); // the real device's attributes on cuda, the profile on sim
  // Dots stay plain where cuBLASLt runs them (DeviceSpec::gemmLibrary); asked only for a graph
  // with dots, which loads cuBLASLt to run them anyway.
  const bool hasDots = std::any_of(g.graph.nodes().begin(), g.graph.nodes().end(),
                                   [](const ir::Node& n) { return n.kind == ir::OpKind::Dot; });
  options.device.gemmLibrary = hasDots && runtime::cuda::gemmLibraryAvailable(*device);
  if (options.device.gemmLibrary)
    spdlog::info("dots stay plain GEMM steps: cuBLASLt runs each where it is faster");
  options.codegen.useLibdevice = !a.noLibdevice;
  options.tf32 = a.tf32;
  options.warpgroupMma = !a.noWgmma;
  std::shared_ptr<CompiledGraph> compiled = compile(g.graph, options);
  Executable exe(compiled, *device);
  exe.setGraphMode(mode);
  // Weights go to the device once and stay there; each run takes only the other inputs.
  exe.setWeights(g.weights);
  if (!a.sweep.empty()) {
    fmt::print("{}: {} on {}, policy {}, shapes {}, sweep {}\n", a.file, g.name, device->name(),
               fusion::policyName(policy), shapeModeName(shapes), a.sweep);
    return runSweep(a, g, exe, compiled);
  }

  std::vector<HostTensor> outputs;
  try {
    // The first run compiles: long for a large graph, so the wait shows on a terminal.
    ElapsedProgress progress(fmt::format("weft: compiling and running {} ({} values)", g.name,
                                         g.graph.size()));
    outputs = exe.run(callInputs(g, in.inputs), in.binding);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", a.file, e.what()));
  }
  std::vector<LaunchCounters> counters = exe.takeCounters();
  Program program = exe.programFor(in.binding);
  fmt::print("{}: {} on {}, policy {}, {} kernel(s){}{}\n", a.file, g.name, device->name(),
             fusion::policyName(policy), program.plan().kernelCount(),
             program.generic() ? ", one generic program for every binding" : "",
             program.fromDiskCache() ? " (from the compile cache)" : "");
  for (size_t k = 0; k < outputs.size(); ++k)
    fmt::print("{}: {}\n", g.graph.node(g.graph.outputs()[k]).name,
               frontend::summarizeTensor(outputs[k]));
  if (!a.in.saveDir.empty()) saveOutputs(g.graph, outputs, a.in.saveDir);

  if (a.counters) {
    if (counters.empty() && program.plan().kernelCount() > 0) {
      // A real GPU counts nothing here: run the same PTX once on the simulator for its counts.
      std::unique_ptr<Device> sim = makeDevice("sim", device->spec());
      Executable simExe(compiled, *sim);
      simExe.setWeights(g.weights);
      simExe.run(callInputs(g, in.inputs), in.binding);
      counters = simExe.takeCounters();
    }
    fmt::print("{}", formatCountersTable(counters, compulsoryBytes(g.graph, in.binding)));
    printModeledTime(counters, bench::programShape(compiledProgram(program), in.binding),
                     device->spec(), compulsoryBytes(g.graph, in.binding));
  }
  if (a.timeRuns > 0) {
    Executable::Timing timing = exe.time(callInputs(g, in.inputs), a.timeRuns, in.binding);
    // The copy baseline on the same device, in the same run (issue 16).
    bench::CopyRun copy =
        bench::runCopyBaseline(*device, compulsoryBytes(g.graph, in.binding), a.timeRuns);
    printTiming(timing, device->name(), mode, counters,
                bench::programShape(compiledProgram(program), in.binding), device->spec(), copy,
                compulsoryBytes(g.graph, in.binding));
  }
  if (a.check && !checkOutputs(a.file, g, in, outputs, {.tf32Dots = a.tf32})) throw ExitCode{1};
}

} // namespace

void addRunCommand(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Compile a graph, run it on a device, and optionally check, count and time it");
  cmd->add_option("graph", a->file, "Graph file (weft JSON or ONNX)")->required();
  cmd->add_option("--device", a->device, "Device: sim (PTX simulator), cuda (a GPU), auto")
      ->check(CLI::IsMember({"sim", "cuda", "auto"}))
      ->capture_default_str();
  addShapesOption(cmd, a->shapes);
  addAmpOption(cmd, a->amp);
  addTf32Option(cmd, a->tf32);
  cmd->add_flag("--no-wgmma", a->noWgmma,
                "f16/bf16 dots on mma.sync on sm_90 too, not warpgroup MMA (to compare the two)");
  cmd->add_option("--policy", a->policy, "Fusion policy: none, xla, astitch")
      ->capture_default_str();
  cmd->add_option("--device-spec", a->deviceSpec,
                  "Profile the simulator models and the planner targets: v100, a100, h100 "
                  "(cuda reads the real device instead)")
      ->capture_default_str();
  addInputOptions(cmd, a->in);
  cmd->add_flag("--check", a->check,
                "Compare every output with the reference interpreter; exit 1 on a mismatch");
  cmd->add_flag("--counters", a->counters,
                "Print what the simulator counted per kernel (instructions, sectors, barriers)");
  cmd->add_option("--graph", a->graphMode,
                  "Launch as a captured graph: on, off, or auto (measure both, keep the faster)")
      ->capture_default_str();
  cmd->add_option("--time", a->timeRuns,
                  "Time N runs after a warm-up: each kernel alone and end to end (medians)");
  cmd->add_flag("--no-libdevice", a->noLibdevice, "Use weft's own math instead of libdevice");
  cmd->add_option("--sweep", a->sweep,
                  "Run one binding per size of a symbol, e.g. B=1,7,64,1000, in one executable "
                  "(random inputs; --check checks each) and report programs, versions, graph "
                  "captures, launch updates and reallocations");
  cmd->add_option("--max-bind", a->maxBind,
                  "With --sweep: the largest size of each symbol, e.g. B=4096; a generic "
                  "program's buffers are allocated for it once (default: the upper end of a "
                  "--bind range, B=1..4096)");
  cmd->footer("On cuda the PTX is linked to cubins on every core and they are kept in "
              "$XDG_CACHE_HOME/weft/cubins (or ~/.cache/weft/cubins) for the next run; "
              "WEFT_CUBIN_CACHE=DIR keeps them in DIR, WEFT_CUBIN_CACHE=off hands the PTX to "
              "the driver's JIT instead.");
  cmd->callback([a, cmd] {
    a->timeGiven = cmd->count("--time") > 0;
    withHostMemoryCheck(a->file, a->in, [&] { runGraph(*a); });
  });
}

} // namespace weft::tools
