#pragma once
// weft's public C++ API: build or load a graph, compile it, run it on a GPU or the simulator.
//
//   weft::Graph g = ...;                                  // weft/graph.h, or parseGraphJson
//   auto compiled = weft::compile(g, {});                 // plan + codegen, per shape binding
//                                                         // (or once: CompileOptions::shapes)
//   auto device = weft::makeDevice("auto", compiled->options().device);
//   weft::Executable exe(compiled, *device);
//   std::vector<weft::HostTensor> outs = exe.run(inputs); // symbols bound from input shapes
//   std::string plan = exe.programFor(binding).plan().str(); // kernels, groups, schemes
//
// These headers need only each other (include/ on the include path); the compiler's own types
// stay behind Graph, Program and CompiledGraph.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/compile_options.h"
#include "weft/device.h"
#include "weft/device_spec.h"
#include "weft/dtype.h"
#include "weft/error.h"
#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {

struct CompiledProgram; // what a Program holds: the plan and the PTX (src/compile.h)

/// A compiled program's fusion plan: which ops each kernel runs and how they are stitched.
class Plan {
public:
  int kernelCount() const;
  /// What `weft plan` prints: per kernel its ops, groups, dominants, thread mappings, the
  /// storage of every value, the barriers and the launch configuration; then the buffers.
  std::string str() const;
  std::string dot() const; // the same as a Graphviz graph (`weft plan --dot`)

private:
  friend struct detail::Access;
  explicit Plan(std::shared_ptr<const CompiledProgram> program) : program_(std::move(program)) {}
  std::shared_ptr<const CompiledProgram> program_;
};

/// Everything compiled for one binding of a graph's symbols (ShapeMode::Specialized), or for
/// every binding (ShapeMode::Generic: the symbols stay symbolic in its plan and PTX and are
/// kernel parameters): its plan, its PTX and how long the compile took. Cheap to copy (copies share the program); the strings it returns by
/// reference live as long as the program does.
class Program {
public:
  /// Wall-clock times of the pipeline's steps, milliseconds; codegen's are 0 when the PTX
  /// came from the disk cache.
  struct Timings {
    double planMs = 0;     // verify, bind, canonicalize, plan
    double llvmIrMs = 0;   // emit the kernels as LLVM IR (and link libdevice)
    double optimiseMs = 0; // LLVM's O3
    double ptxMs = 0;      // NVPTX → PTX
    double totalMs = 0;    // the whole pipeline for this binding
  };

  const Binding& binding() const; // the binding it was specialised for; {} when generic
  bool generic() const;            // compiled with the graph's symbols left symbolic
  Plan plan() const;
  const std::string& ptx() const;    // one PTX module holding every kernel
  const std::string& llvmIr() const; // "" unless CodegenOptions::keepLlvmIr
  std::vector<std::string> kernelNames() const; // the PTX entries, in launch order
  bool fromDiskCache() const;
  Timings timings() const;

private:
  friend struct detail::Access;
  explicit Program(std::shared_ptr<const CompiledProgram> program)
      : program_(std::move(program)) {}
  std::shared_ptr<const CompiledProgram> program_;
};

/// A graph plus compile options; compiles a specialised program once per binding of the
/// graph's symbols, or under ShapeMode::Generic one program for every binding (a binding with
/// a symbol bound to 0 still gets a specialised one), and keeps them (in memory here, on disk
/// through the compile cache). Thread-safe.
class CompiledGraph {
public:
  /// Verifies `graph` (InputError naming the value and rule); compiles nothing yet.
  CompiledGraph(Graph graph, CompileOptions options);
  ~CompiledGraph();
  CompiledGraph(const CompiledGraph&) = delete;
  CompiledGraph& operator=(const CompiledGraph&) = delete;

  const Graph& graph() const;
  const CompileOptions& options() const;
  /// The program for `binding` (every symbol of the graph bound; others ignored), compiled on
  /// first use.
  Program program(const Binding& binding);
  /// Number of programs compiled so far: distinct bindings (Specialized); 1, plus one per
  /// degenerate binding seen (Generic).
  size_t programCount() const;

private:
  friend struct detail::Access;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A CompiledGraph for `graph`; a graph without symbols is compiled at once.
std::shared_ptr<CompiledGraph> compile(const Graph& graph, const CompileOptions& options = {});

/// Binds every symbol of `graph` from the shapes of `inputs` (in graph input order); throws
/// InputError naming the input and dim when the shapes disagree with the graph or each other.
Binding inferBinding(const Graph& graph, const std::vector<HostTensor>& inputs,
                     const Binding& given = {});

/// The weights of the JSON graph file at `path`: its "weights" read from its "weights_file"
/// (docs/graph-format.md, "Weights") and checked against the graph, by input name, for
/// Executable::setWeights; empty for a graph without weights. InputError naming the file and
/// the tensor on any problem.
std::map<std::string, HostTensor> loadGraphWeights(const std::string& path);

enum class GraphMode { Off, On, Auto };

/// A CompiledGraph bound to a Device: modules loaded once per program, the launch sequence
/// replayed per call (optionally as a captured graph whose kernel arguments are updated in
/// place when caller pointers change). A specialised program gets its buffers (and graph) per
/// binding. A generic program's version gets them once, and a new binding it serves re-shapes
/// them in place: buffers grow only when the binding needs more than they hold (none do up to
/// setMaxBinding's sizes), and the captured graph's launches get their new grids and symbol
/// arguments — one graph per version for a whole sweep of shapes.
class Executable {
public:
  Executable(std::shared_ptr<CompiledGraph> compiled, Device& device);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Host arrays in, host arrays out (graph input order / graph output order).
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs, const Binding& binding = {});
  /// Device buffers in and out, owned by the caller; nothing is copied, except into the buffer
  /// of an output that is also an input (or an intermediate), which no kernel writes. Each
  /// starts at a multiple of 16 bytes (kernels access up to 16 bytes at a time; cudaMalloc's
  /// and Device::allocate's are): InputError naming the buffer otherwise.
  void run(const std::vector<DevicePtr>& inputs, const std::vector<DevicePtr>& outputs,
           const Binding& binding);

  /// Weights: values of graph inputs that stay the same from call to call (a model's
  /// parameters), by input name. Uploaded to the device here, once, and owned by the
  /// Executable; a later call replaces the ones it names (in place when the size is the same).
  /// Nothing is recompiled: the program takes weights as pointers, as it takes inputs. The
  /// inputs set here are left out of every run's inputs, which follow callInputNames().
  /// InputError naming the weight when it is no input of the graph or its dtype or shape
  /// differs from the input's; a symbolic dim takes any size here, and a run whose binding
  /// gives it another is an InputError naming the weight.
  void setWeights(const std::map<std::string, HostTensor>& weights);
  /// The graph inputs run() and time() take: every input not bound by setWeights, in order.
  std::vector<std::string> callInputNames() const;

  void setGraphMode(GraphMode mode) { graphMode_ = mode; }
  GraphMode graphMode() const { return graphMode_; }
  /// The largest size each symbol will take (`--max-bind`): a generic program's buffers are
  /// allocated for it (capped by each version's guard) when first bound, so later bindings up
  /// to it never reallocate. Symbols not named here take the upper end of the range the graph
  /// was compiled for (CompileOptions::symbolRanges) where it has one; the rest size buffers
  /// by the bindings seen.
  void setMaxBinding(Binding max) { maxBinding_ = std::move(max); }
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
  Timing time(const std::vector<HostTensor>& inputs, int repeats, const Binding& binding = {});

  /// Counters of the launches since the last call (sim device only; empty on cuda).
  std::vector<LaunchCounters> takeCounters() { return device_.takeCounters(); }
  /// The program run for `binding` (compiled on first use).
  Program programFor(const Binding& binding);

  /// Observability for tests of graph mode.
  struct Stats {
    size_t captures = 0;    // graphs captured
    size_t replays = 0;     // graph launches
    size_t plainRuns = 0;   // runs launched kernel by kernel
    size_t argUpdates = 0;  // kernel nodes whose arguments were updated in place
    size_t launchUpdates = 0; // kernel nodes given a new shape's grid and arguments in place
    size_t reshapes = 0;    // new bindings served by an already bound generic version
    size_t reallocations = 0; // device buffers regrown for a binding larger than any before
    size_t inputCopies = 0; // host→device copies of inputs (zero for the device-buffer API)
    size_t weightUploads = 0; // host→device copies of weights: setWeights' and the compiler's
  };
  const Stats& stats() const { return stats_; }

private:
  struct Bound;
  Bound& bind(const Binding& binding);
  void reshape(Bound& b, const Binding& binding);
  DevicePtr regrow(DevicePtr old, size_t& capacity, size_t bytes);
  Bound& stageHostInputs(const std::vector<HostTensor>& inputs, const Binding& binding);
  std::vector<std::vector<KernelArg>> kernelArgs(Bound& b, const std::vector<DevicePtr>& inputs,
                                                 const std::vector<DevicePtr>& outputs);
  double timeRegion(const std::function<void()>& work, bool* deviceClock);
  void launchAll(Bound& b, const std::vector<DevicePtr>& inputs,
                 const std::vector<DevicePtr>& outputs);
  // Weights (executable_weights.cc): the graph inputs set by setWeights, by input index.
  struct Weight {
    DevicePtr ptr = 0;
    size_t capacity = 0;
    HostTensor shape; // dtype and shape, no bytes
  };
  std::map<size_t, Weight> weights_;
  /// Graph-order input pointers: the call's, with the weights in their places.
  std::vector<DevicePtr> withWeights(const std::vector<DevicePtr>& callInputs) const;
  /// The graph's inputs as dtype and shape only (bytes left empty), for binding symbols.
  std::vector<HostTensor> inputShapes(const std::vector<HostTensor>& callInputs) const;
  void freeWeights();
  InputError countError(size_t graphInputs, size_t given) const;

  std::shared_ptr<CompiledGraph> compiled_;
  Device& device_;
  GraphMode graphMode_ = GraphMode::Off;
  Binding maxBinding_;
  // Per program: a specialised program serves one binding, a generic version many (re-shaped).
  std::map<const CompiledProgram*, std::unique_ptr<Bound>> bound_;
  std::map<const CompiledProgram*, ModuleHandle> modules_; // one load per program (generic: one)
  Stats stats_;
};

/// PyGraph-style selective deployment: given measured times (ms) of plain launches and of
/// graph replays for the same work, keep graph mode only when it is faster by `margin`.
bool graphModeWins(const std::vector<double>& plainMs, const std::vector<double>& graphMs,
                   double margin = 0.02);

} // namespace weft
