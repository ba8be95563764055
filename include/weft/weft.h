#pragma once
// weft's public C++ API.
//
//   ir::Graph g = ...;                                  // builder API (ir/graph.h) or JSON
//   auto compiled = weft::compile(g, {});               // plan + codegen, per shape binding
//   auto device = weft::makeDevice("auto", compiled->options().device);
//   weft::Executable exe(compiled, *device);
//   std::vector<weft::HostTensor> outs = exe.run(inputs); // symbols bound from input shapes
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "fusion/fusion_plan.h"
#include "ir/graph.h"
#include "weft/device.h"
#include "weft/device_spec.h"
#include "weft/error.h"
#include "weft/tensor.h"

namespace weft {

using fusion::Policy;

struct CompileOptions {
  Policy policy = Policy::AStitch;
  DeviceSpec device = *deviceSpecProfile("h100");
  bool canonicalize = true; // run src/passes before planning
  codegen::CodegenOptions codegen;
  /// Disk cache directory: "" = $XDG_CACHE_HOME/weft (or ~/.cache/weft); "off" = no disk cache.
  std::string cacheDir;
};

/// Everything compiled for one shape binding: the plan, the PTX and how to launch it.
struct CompiledProgram {
  ir::Binding binding;
  fusion::FusionPlan plan;
  codegen::CompiledModule module;
  bool fromDiskCache = false;
  double planMs = 0;  // passes + planning
  double totalMs = 0; // the whole pipeline for this binding
};

/// A graph plus compile options; compiles a specialised program once per shape binding and
/// caches it (in memory here, on disk through the compile cache).
class CompiledGraph {
public:
  CompiledGraph(ir::Graph graph, CompileOptions options);
  const ir::Graph& graph() const { return graph_; }
  const CompileOptions& options() const { return options_; }
  /// The program for `binding` (every symbol of the graph bound), compiled on first use.
  std::shared_ptr<const CompiledProgram> program(const ir::Binding& binding);
  /// Number of distinct bindings compiled so far (for tests of recompilation).
  size_t programCount() const;

private:
  ir::Graph graph_;
  CompileOptions options_;
  mutable std::mutex mutex_;
  std::map<ir::Binding, std::shared_ptr<const CompiledProgram>> programs_;
};

/// The pipeline, top to bottom: verify → bind → canonicalize → plan → codegen.
std::shared_ptr<CompiledGraph> compile(const ir::Graph& graph, const CompileOptions& options = {});
/// One binding's pipeline run, without caches (what CompiledGraph::program calls on a miss).
CompiledProgram compileProgram(const ir::Graph& graph, const ir::Binding& binding,
                               const CompileOptions& options);

/// Binds every symbol of `graph` from the shapes of `inputs` (in graph input order); throws
/// InputError naming the input and dim when the shapes disagree with the graph or each other.
ir::Binding inferBinding(const ir::Graph& graph, const std::vector<HostTensor>& inputs,
                         const ir::Binding& given = {});

enum class GraphMode { Off, On, Auto };

/// A CompiledGraph bound to a Device: modules loaded once per binding, buffers planned and
/// allocated once per binding, the launch sequence replayed per call (optionally as a
/// captured graph whose kernel arguments are updated in place when caller pointers change).
class Executable {
public:
  Executable(std::shared_ptr<CompiledGraph> compiled, Device& device);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Host arrays in, host arrays out (graph input order / graph output order).
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs,
                              const ir::Binding& binding = {});
  /// Device buffers in and out, owned by the caller; nothing is copied.
  void run(const std::vector<DevicePtr>& inputs, const std::vector<DevicePtr>& outputs,
           const ir::Binding& binding);

  void setGraphMode(GraphMode mode) { graphMode_ = mode; }
  GraphMode graphMode() const { return graphMode_; }
  /// Times `repeats` runs on the device after one warm-up run: each kernel launched alone, and
  /// the whole launch sequence (in the current graph mode). Medians; device events where the
  /// device has a clock (cuda), host time around launch + synchronize otherwise (sim).
  struct Timing {
    struct Kernel {
      std::string name;
      double ms = 0;
    };
    std::vector<Kernel> kernels;
    double totalMs = 0;
    int runs = 0;
    bool deviceClock = false; // false: host wall-clock time
  };
  Timing time(const std::vector<HostTensor>& inputs, int repeats, const ir::Binding& binding = {});

  /// Counters of the launches since the last call (sim device only; empty on cuda).
  std::vector<LaunchCounters> takeCounters() { return device_.takeCounters(); }
  std::shared_ptr<const CompiledProgram> programFor(const ir::Binding& binding) {
    return compiled_->program(binding);
  }

  /// Observability for tests of graph mode.
  struct Stats {
    size_t captures = 0;    // graphs captured
    size_t replays = 0;     // graph launches
    size_t plainRuns = 0;   // runs launched kernel by kernel
    size_t argUpdates = 0;  // kernel nodes whose arguments were updated in place
    size_t inputCopies = 0; // host→device copies of inputs (zero for the device-buffer API)
  };
  const Stats& stats() const { return stats_; }

private:
  struct Bound;
  Bound& bind(const ir::Binding& binding);
  Bound& stageHostInputs(const std::vector<HostTensor>& inputs, const ir::Binding& binding);
  std::vector<std::vector<KernelArg>> kernelArgs(Bound& b, const std::vector<DevicePtr>& inputs,
                                                 const std::vector<DevicePtr>& outputs);
  double timeRegion(const std::function<void()>& work, bool* deviceClock);
  void launchAll(Bound& b, const std::vector<DevicePtr>& inputs,
                 const std::vector<DevicePtr>& outputs);

  std::shared_ptr<CompiledGraph> compiled_;
  Device& device_;
  GraphMode graphMode_ = GraphMode::Off;
  std::map<ir::Binding, std::unique_ptr<Bound>> bound_;
  Stats stats_;
};

/// PyGraph-style selective deployment: given measured times (ms) of plain launches and of
/// graph replays for the same work, keep graph mode only when it is faster by `margin`.
bool graphModeWins(const std::vector<double>& plainMs, const std::vector<double>& graphMs,
                   double margin = 0.02);

} // namespace weft
