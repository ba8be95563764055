// weft bench [WORKLOADS...] [--policy all|none|xla|astitch] [--device-spec h100,a100,v100]
// [--format md|json|csv] [-o FILE] [--csv FILE] [--shapes specialized|generic] [--amp f16|bf16] [--tf32]: the benchmark
// suite (bench/); generic compiles each workload once with its leading dim symbolic and runs
// it at the production size. Each workload is
// compiled under each policy for each device profile, run once on the sim device, and reported with
// its kernels, grid barriers, bytes moved against the compulsory bytes, modeled GPU time and
// measured compile time; then the compile-time scaling of generated graphs. One progress line
// per step on stderr.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <sstream>

#include "bench/report.h"
#include "bench/suite.h"
#include "bench/sweep_workloads.h"
#include "cli_support.h"
#include "commands.h"
#include "frontend/json_writer.h"
#include "frontend/read_file.h"
#include "ir/shape.h"
#include "progress.h"
#include "weft/device_spec.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct BenchArgs {
  std::vector<std::string> workloads;
  std::string policy = "all";
  std::string deviceSpec = "h100";
  std::string format = "md";
  std::string output;
  std::string workloadsDir = bench::defaultWorkloadsDir();
  std::string bind;
  std::string shapes = "generic";
  std::string amp; // --amp f16|bf16
  bool tf32 = false; // --tf32
  int compileRuns = 3;
  uint64_t sampleBlocks = 0;
  std::string scaling = "auto";
  std::string writeGraphs;
  std::string csv;
};

void writeText(const std::string& flag, const std::string& path, const std::string& text) {
  writeOutputFile(flag, path, text);
  fmt::print(stderr, "weft bench: wrote {}\n", path);
}

/// --write-graphs DIR: each workload's graph as DIR/<name>.json (for `weft plan` on the
/// generated ones), instead of benchmarking.
void writeGraphs(const std::vector<bench::Workload>& workloads, const std::string& dir) {
  makeOutputDir("--write-graphs", dir);
  for (const bench::Workload& w : workloads) {
    std::string path = (std::filesystem::path(dir) / (w.name + ".json")).string();
    writeOutputFile("--write-graphs", path, frontend::writeGraphJson(w.build(), w.name));
    fmt::print(stderr, "wrote {}\n", path);
  }
}

/// The items of a comma-separated list; InputError naming `flag` on an empty item ("a,,b",
/// "a,", ",a"), which is a slip, not a name.
std::vector<std::string> splitList(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    if (items.back().empty())
      throw InputError(fmt::format(
          "{} {}: an empty name in the list; separate the names with single commas", flag, text));
    start = comma + 1;
  }
  return items;
}

std::vector<fusion::Policy> parsePolicies(const std::string& text) {
  if (text == "all") return {fusion::Policy::None, fusion::Policy::Xla, fusion::Policy::AStitch};
  std::vector<fusion::Policy> policies;
  for (const std::string& name : splitList("--policy", text)) {
    std::optional<fusion::Policy> p = fusion::parsePolicy(name);
    if (!p)
      throw InputError(fmt::format(
          "--policy {}: unknown policy \"{}\"; use all, or a comma-separated list of none, xla, "
          "astitch",
          text, name));
    policies.push_back(*p);
  }
  if (policies.empty()) throw InputError("--policy is empty; use all, none, xla or astitch");
  return policies;
}

std::vector<std::string> parseProfiles(const std::string& text) {
  std::vector<std::string> profiles = splitList("--device-spec", text);
  if (profiles.empty()) throw InputError("--device-spec is empty; use e.g. h100 or h100,a100,v100");
  for (const std::string& p : profiles)
    if (!deviceSpecProfile(p))
      throw InputError(
          fmt::format("--device-spec {}: unknown profile \"{}\"; use one or more of {}", text, p,
                      fmt::join(deviceSpecProfileNames(), ", ")));
  return profiles;
}

void runBench(const BenchArgs& a) {
  bench::SuiteOptions o;
  o.policies = parsePolicies(a.policy);
  o.profiles = parseProfiles(a.deviceSpec);
  o.shapes = shapeModeOption(a.shapes);
  o.amp = ampOption(a.amp);
  o.tf32 = a.tf32;
  o.compileRuns = a.compileRuns;
  o.sampleBlocks = a.sampleBlocks;
  ir::Binding binding = parseBindOption(a.bind);
  std::vector<bench::Workload> workloads;
  std::vector<std::pair<std::string, size_t>> named; // each workload named on the command line
  if (a.workloads.empty())
    workloads = bench::suiteWorkloads(a.workloadsDir);
  else
    for (const std::string& w : a.workloads)
      if (w == "sweep") { // issue 16's row sweep, every point (bench/sweep_workloads.h)
        for (const bench::SweepPoint& p : bench::sweepPoints())
          workloads.push_back(bench::sweepWorkload(p));
      } else {
        named.emplace_back(w, workloads.size());
        workloads.push_back(bench::findWorkload(w, a.workloadsDir, binding));
        // A graph file: refuse a device or FIFO before the workload opens it (a FIFO blocks).
        if (workloads.back().summary.rfind("graph file ", 0) == 0)
          frontend::requireRegularFile(w, "graph file");
      }
  if (!a.writeGraphs.empty()) return writeGraphs(workloads, a.writeGraphs);
  if (!a.output.empty()) checkOutputFile("-o", a.output); // before the run, not after it
  if (!a.csv.empty()) checkOutputFile("--csv", a.csv);
  // Workloads named on the command line (graph files above all), bound under --bind or
  // static: sizes past int64 or this machine's memory fail here, before anything allocates.
  // A symbol --bind leaves open is named with the file and the flag to give, as run's is.
  for (const auto& [name, k] : named) {
    frontend::ParsedGraph bound{.name = name, .graph = workloads[k].build()};
    completeBinding(bound, name, {}, nullptr); // bound.graph has --bind's symbols replaced
    checkBoundSizes(bound.graph, name, binding, a.bind, hostMemoryBytes());
  }
  const bool scaling = a.scaling == "on" || (a.scaling == "auto" && a.workloads.empty());
  if (!scaling) o.scalingNodes.clear();
  // Each step's line: redrawn in place on a terminal, every one of them in a log (a bench
  // step takes seconds, so a log gets a line per step, as before).
  ProgressLine line;
  o.progress = [&line](const std::string& text) { line.update("weft bench: " + text, true); };

  bench::SuiteResult result = bench::runSuite(workloads, o);
  if (line.onTerminal()) line.finish("weft bench: done");
  std::string text = a.format == "json"  ? bench::formatJson(result)
                     : a.format == "csv" ? bench::formatCsv(result)
                                         : bench::formatMarkdown(result);
  if (!a.csv.empty()) writeText("--csv", a.csv, bench::formatCsv(result));
  if (a.output.empty())
    fmt::print("{}", text);
  else
    writeText("-o", a.output, text);
}

} // namespace

void addBenchCommand(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Benchmark suite: kernels, bytes moved, modeled GPU time and compile time per "
               "workload and fusion policy (docs/performance.md)");
  cmd->add_option("workloads", a->workloads,
                  "Suite workloads by name, graph files, or the row sweep (sweep, or one point "
                  "such as sweep_softmax_bf16_4096; not in the default suite)");
  cmd->add_option("--policy", a->policy, "all, or a comma-separated list of none, xla, astitch")
      ->capture_default_str();
  cmd->add_option("--device-spec", a->deviceSpec,
                  "Comma-separated device profiles to model (v100, a100, h100); the first one's "
                  "plan gives the counts and compile times")
      ->capture_default_str();
  cmd->add_option("--format", a->format, "md (Markdown tables), json or csv")
      ->check(CLI::IsMember({"md", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->output, "Write the report to FILE instead of stdout");
  cmd->add_option("--csv", a->csv, "Also write the CSV rows to FILE (bench/report.sh's chart)");
  cmd->add_option("--workloads-dir", a->workloadsDir, "Where the suite's JSON workloads are")
      ->capture_default_str();
  cmd->add_option("--bind", a->bind, "Symbol sizes for graph-file workloads, e.g. B=64");
  addShapesOption(cmd, a->shapes);
  addAmpOption(cmd, a->amp);
  addTf32Option(cmd, a->tf32);
  cmd->add_option("--compile-runs", a->compileRuns, "Compile time = median of this many runs")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--sample-blocks", a->sampleBlocks,
                  "Simulate this many blocks of larger grids and extrapolate when they count "
                  "the same (0: every block). Later kernels then read unwritten data, so their "
                  "data-dependent code may count differently (docs/performance.md)")
      ->check(CLI::Validator( // a uint64 option would take "-1" as 2^64 - 1
          [](std::string& text) {
            if (parseUint64(text)) return std::string();
            return "give a block count of 0 or more, not " +
                   (text.empty() ? std::string("an empty value") : text);
          },
          "N"))
      ->capture_default_str();
  cmd->add_option("--scaling", a->scaling,
                  "Compile-time scaling on 100/1,000/10,000-node graphs: on, off, or auto (on "
                  "when no workload is named)")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();
  cmd->add_option("--write-graphs", a->writeGraphs,
                  "Write each workload's graph to DIR/<name>.json and exit (no benchmark)");
  cmd->callback([a] {
    try {
      runBench(*a);
    } catch (const std::bad_alloc&) {
      throw InputError(fmt::format("weft bench: not enough host memory for the workloads{}; use "
                                   "smaller sizes",
                                   a->bind.empty() ? "" : " under --bind " + a->bind));
    } catch (const std::length_error&) { // a vector past max_size(): a size no machine holds
      throw InputError(fmt::format("weft bench: not enough host memory for the workloads{}; use "
                                   "smaller sizes",
                                   a->bind.empty() ? "" : " under --bind " + a->bind));
    }
  });
}

} // namespace weft::tools
