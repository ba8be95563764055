#include "suite.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "compile.h"
#include "frontend/random_inputs.h"
#include "sim/sim_device.h"
#include "synthetic_graphs.h"

namespace weft::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

DeviceSpec specOf(const std::string& profile) {
  std::optional<DeviceSpec> spec = deviceSpecProfile(profile);
  if (!spec)
    throw InputError(fmt::format("unknown device profile \"{}\"; use one of {}", profile,
                                 fmt::join(deviceSpecProfileNames(), ", ")));
  return *spec;
}

CompileOptions compileOptions(fusion::Policy policy, const DeviceSpec& spec) {
  CompileOptions o;
  o.policy = policy;
  o.device = spec;
  o.cacheDir = "off"; // compile times are real, never a cache hit
  return o;
}

/// Medians of the timings of `programs`.
CompileTime compileTimeOf(const std::vector<CompiledProgram>& programs) {
  std::vector<double> plan, llvm, ptx, total;
  for (const CompiledProgram& p : programs) {
    const codegen::CompileTimings& t = p.module.timings;
    plan.push_back(p.planMs);
    llvm.push_back(t.llvmIrMs + t.optimiseMs);
    ptx.push_back(t.ptxMs);
    total.push_back(p.totalMs);
  }
  int kernels = 0;
  if (!programs.empty())
    kernels = int(programs.front().plan.kernelCount() *
                  std::max<size_t>(1, programs.front().versionCount));
  return {median(plan), median(llvm), median(ptx), median(total),
          static_cast<int>(programs.size()), kernels};
}

void report(const SuiteOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

} // namespace

PolicyRun summarize(fusion::Policy policy, const std::string& profile,
                    const std::vector<LaunchCounters>& launches, const ModelProfile& model,
                    const ProgramShape& shape) {
  PolicyRun r;
  r.policy = policy;
  r.profile = profile;
  r.kernels = static_cast<int>(launches.size());
  for (const LaunchCounters& k : launches) {
    r.gridBarriers += k.gridBarriers;
    r.bytes += k.globalBytes();
    r.warpInstructions += k.warpInstructions;
    r.blocks += k.blocks;
    r.simulatedBlocks += k.simulatedBlocks;
    if (k.sampled()) ++r.sampledKernels;
  }
  r.time = modelProgram(launches, model, shape);
  r.launches = launches;
  r.shape = shape;
  return r;
}

const PolicyRun* WorkloadResult::find(fusion::Policy policy, const std::string& profile) const {
  for (const PolicyRun& r : runs)
    if (r.policy == policy && r.profile == profile) return &r;
  return nullptr;
}

double fittedExponent(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    double lx = std::log(x[i]), ly = std::log(y[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  double den = double(n) * sxx - sx * sx;
  return den == 0 ? 0 : (double(n) * sxy - sx * sy) / den;
}

WorkloadResult runWorkload(const Workload& w, const SuiteOptions& o) {
  WorkloadResult result;
  result.name = w.name;
  result.summary = w.summary;
  ir::Graph graph = w.build();
  // Generic: the symbolic graph is compiled; `graph` stays the bound one for what the report
  // derives from shapes (compulsory bytes, rows on chip).
  ir::Graph compiledGraph = graph;
  ir::Binding binding;
  if (o.shapes == ShapeMode::Generic && w.buildSymbolic) {
    SymbolicGraph s = w.buildSymbolic();
    compiledGraph = std::move(s.graph);
    binding = std::move(s.production);
    graph = ir::bindSymbols(compiledGraph, binding);
  }
  if (!graph.symbols().empty())
    throw InputError(fmt::format("workload \"{}\": symbols {} are not bound; give --bind, e.g. "
                                 "--bind {}=64",
                                 w.name, fmt::join(graph.symbols(), ", "), graph.symbols()[0]));
  result.graphNodes = graph.size();
  result.compulsoryBytes = compulsoryBytes(graph);
  const DeviceSpec primary = specOf(o.profiles.at(0));
  result.rowsFitOnChip = rowsFitOnChip(graph, primary.sharedMemoryPerBlock);
  std::vector<HostTensor> inputs = frontend::randomInputs(compiledGraph, binding, o.seed);

  for (const std::string& profile : o.profiles) {
    const DeviceSpec spec = specOf(profile);
    const bool timed = profile == o.profiles[0];
    for (fusion::Policy policy : o.policies) {
      const std::string what = fmt::format("{} {} {}", w.name, fusion::policyName(policy), profile);
      CompileOptions options = compileOptions(policy, spec);
      options.shapes = o.shapes;
      options.amp = o.amp;
      options.tf32 = o.tf32;
      const int runs = timed ? std::max(1, o.compileRuns) : 1;
      report(o, fmt::format("{}: compiling ({}x)", what, runs));
      // The first run is the program the simulator executes; the others only time.
      auto compiled = std::make_shared<CompiledGraph>(publicGraph(compiledGraph), options);
      std::vector<CompiledProgram> programs{compiledProgram(compiled->program(binding))};
      double spentMs = programs.back().totalMs;
      const ir::Binding compiledFor = programs.back().binding; // {} when generic
      for (int i = 1; i < runs && spentMs < o.compileBudgetMs; ++i) {
        programs.push_back(*compileVersions(compiledGraph, compiledFor, options).back());
        spentMs += programs.back().totalMs;
      }

      sim::ExecOptions exec;
      exec.sampleBlocks = o.sampleBlocks;
      // Fused kernels of long chains (xla's column reduce of cluster_200 recomputes a
      // 100-op expression per element) legitimately run for long without a store.
      exec.deadlockInstructions = 1ull << 30;
      std::unique_ptr<Device> device = sim::makeSimDevice(spec, exec);
      Executable exe(compiled, *device);
      report(o,
             fmt::format("{}: simulating {} kernel(s)", what, programs.back().plan.kernelCount()));
      exe.run(inputs, binding);
      PolicyRun run = summarize(policy, profile, exe.takeCounters(), modelProfile(spec),
                                programShape(programs.front(), binding));
      if (timed) run.compile = compileTimeOf(programs);
      result.runs.push_back(std::move(run));
    }
  }
  return result;
}

Scaling runScaling(const SuiteOptions& o, const std::vector<WorkloadResult>& done) {
  Scaling s;
  const DeviceSpec spec = specOf(o.profiles.at(0));
  std::vector<double> x, y;
  for (int nodes : o.scalingNodes) {
    ScalingPoint p{nodes, {}};
    // graph_10000 is clusteredGraph(10000, 64, 64): reuse its astitch compile times.
    for (const WorkloadResult& w : done)
      if (w.name == fmt::format("graph_{}", nodes))
        if (const PolicyRun* r = w.find(fusion::Policy::AStitch, o.profiles[0]);
            r && r->compile.runs)
          p.compile = r->compile;
    if (p.compile.runs == 0) {
      report(o, fmt::format("compile-time scaling: {} nodes", nodes));
      ir::Graph g = clusteredGraph(nodes, 64, 64);
      std::vector<CompiledProgram> programs;
      double spentMs = 0;
      for (int i = 0; i < std::max(1, o.compileRuns) && (i == 0 || spentMs < o.compileBudgetMs);
           ++i) {
        programs.push_back(
            *compileVersions(g, {}, compileOptions(fusion::Policy::AStitch, spec)).back());
        spentMs += programs.back().totalMs;
      }
      p.compile = compileTimeOf(programs);
    }
    x.push_back(nodes);
    y.push_back(p.compile.totalMs);
    s.points.push_back(p);
  }
  s.exponent = fittedExponent(x, y);
  return s;
}

SuiteResult runSuite(const std::vector<Workload>& workloads, const SuiteOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  SuiteResult r;
  r.profiles = o.profiles;
  r.policies = o.policies;
  r.sampleBlocks = o.sampleBlocks;
  for (size_t i = 0; i < workloads.size(); ++i) {
    SuiteOptions step = o;
    step.progress = [&](const std::string& line) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      report(o, fmt::format("[{}/{}] {:.0f} s: {}", i + 1, workloads.size(), s, line));
    };
    r.workloads.push_back(runWorkload(workloads[i], step));
  }
  if (!o.scalingNodes.empty()) r.scaling = runScaling(o, r.workloads);
  r.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

} // namespace weft::bench
