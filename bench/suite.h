#pragma once
// Runs workloads through the compiler and the simulator: for each workload, policy and device
// profile, compile (timed), run once on the sim device, and reduce the per-launch counters to
// what the report shows. Plus the compile-time scaling of generated 100- to 10,000-node
// graphs. Nothing here asserts a time; test/bench tests the arithmetic.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "perf_model.h"
#include "workloads.h"

namespace weft::bench {

struct SuiteOptions {
  std::vector<fusion::Policy> policies = {fusion::Policy::None, fusion::Policy::Xla,
                                          fusion::Policy::AStitch};
  std::vector<std::string> profiles = {"h100"}; // device spec profiles; the first is primary
  int compileRuns = 3;            // compile time = median of this many runs (primary profile),
  double compileBudgetMs = 20000; // ... but no more runs once the runs so far took this long
  uint64_t sampleBlocks = 0;      // sim block sampling (0: simulate every block; see perf docs)
  uint64_t seed = 1;              // random inputs
  /// Generic: each workload's symbolic graph (Workload::buildSymbolic) compiled once and run
  /// at the production binding; compile time is the generic program's.
  ShapeMode shapes = ShapeMode::Specialized;
  std::optional<DType> amp; // CompileOptions::amp: mixed precision (passes/amp.h)
  bool tf32 = false;        // CompileOptions::tf32: f32 dots on TF32 tensor cores
  std::vector<int> scalingNodes = {100, 1000, 10000}; // empty: no scaling section
  std::function<void(const std::string&)> progress;   // one line per step
};

/// Medians over SuiteOptions::compileRuns runs, in ms.
/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v);

struct CompileTime {
  double planMs = 0, llvmMs = 0, ptxMs = 0, totalMs = 0; // llvm = IR emission + O3
  int runs = 0;
  /// Kernels one run compiles: the plan's kernels times the program's versions (a generic
  /// program compiles every version; 0 when unknown). totalMs / kernelsCompiled is the compile
  /// time per kernel the suite's target bounds.
  int kernelsCompiled = 0;
};

/// One workload under one policy on one profile.
struct PolicyRun {
  fusion::Policy policy = fusion::Policy::AStitch;
  std::string profile;
  int kernels = 0;           // launches the simulator ran
  uint64_t gridBarriers = 0; // summed over kernels
  uint64_t bytes = 0;        // global sectors × 32 (reads + writes), summed
  uint64_t warpInstructions = 0;
  uint64_t blocks = 0, simulatedBlocks = 0; // summed over kernels
  int sampledKernels = 0; // kernels whose counters were extrapolated from sampled blocks
  ModeledTime time;       // on this profile
  CompileTime compile;    // measured (runs == 0 when not timed for this profile)
  std::vector<LaunchCounters> launches; // what the model read, per launch (JSON's "launches")
  ProgramShape shape;
};

PolicyRun summarize(fusion::Policy policy, const std::string& profile,
                    const std::vector<LaunchCounters>& launches, const ModelProfile& model,
                    const ProgramShape& shape = {});

struct WorkloadResult {
  std::string name, summary;
  size_t graphNodes = 0;
  uint64_t compulsoryBytes = 0;
  bool rowsFitOnChip = false; // on the primary profile
  std::vector<PolicyRun> runs;
  const PolicyRun* find(fusion::Policy policy, const std::string& profile) const;
};

struct ScalingPoint {
  int nodes = 0;
  CompileTime compile; // astitch on the primary profile
};

struct Scaling {
  std::vector<ScalingPoint> points;
  double exponent = 0; // least-squares slope of log(time to PTX) over log(nodes)
};

/// Least-squares slope of log(y) over log(x); 0 with fewer than two points.
double fittedExponent(const std::vector<double>& x, const std::vector<double>& y);

struct SuiteResult {
  std::vector<std::string> profiles;
  std::vector<fusion::Policy> policies;
  uint64_t sampleBlocks = 0;
  std::vector<WorkloadResult> workloads;
  Scaling scaling;
  double wallSeconds = 0;
};

WorkloadResult runWorkload(const Workload& w, const SuiteOptions& options);
/// The scaling points; one whose graph_<nodes> workload already ran reuses its times.
Scaling runScaling(const SuiteOptions& options, const std::vector<WorkloadResult>& done = {});
SuiteResult runSuite(const std::vector<Workload>& workloads, const SuiteOptions& options);

} // namespace weft::bench
