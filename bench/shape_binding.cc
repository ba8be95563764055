// The host-side cost of a new shape (issue 15): with ShapeMode::Generic, binding a new value
// of a graph's symbols takes the one compiled program (CompiledGraph::program, a map lookup)
// and evaluates its buffer sizes and grids (runtime/shape_binding.h) — no planning, no LLVM.
// Per example graph and symbolised suite workload, astitch on h100:
//   generic/<graph>: a new binding per iteration; us_per_kernel divides by the kernel count
//   specialized/<graph>: what the same new binding costs today (plan + LLVM + PTX, cache off)
//   replay/<graph>: an Executable in graph mode alternating between two bindings one version
//     serves: version choice, re-shaping its buffers and grids, kernel arguments and in-place
//     updates of every kernel node, and the replay call, on a device whose launches and
//     replays do nothing (the host's share of a replay with updated parameters)
// Run: build/bench/shape_binding [--benchmark_filter=generic]. Not a timed test: the numbers
// go to docs/performance.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <spdlog/spdlog.h>

#include "compile.h"
#include "frontend/json_reader.h"
#include "ir/interpreter.h"
#include "runtime/forwarding_device.h"
#include "runtime/shape_binding.h"
#include "workloads.h"

namespace {

using namespace weft;

CompileOptions optionsFor(ShapeMode mode) {
  CompileOptions o;
  o.shapes = mode;
  o.cacheDir = "off";
  return o;
}

ir::Binding bindingOf(const ir::Graph& g, int64_t n) {
  ir::Binding b;
  for (const std::string& s : g.symbols())
    b[s] = n;
  return b;
}

void genericBinding(benchmark::State& state, const ir::Graph& g) {
  auto compiled = compile(g, optionsFor(ShapeMode::Generic));
  const CompiledProgram& program = compiledProgram(compiled->program(bindingOf(g, 1)));
  int64_t n = 1;
  for (auto _ : state) {
    ir::Binding b = bindingOf(g, ++n); // a binding not seen before
    BoundShapes s = bindShapes(compiledProgram(compiled->program(b)), b);
    benchmark::DoNotOptimize(s.launches.data());
  }
  double kernels = std::max<size_t>(1, program.module.kernels.size());
  state.counters["kernels"] = kernels;
  state.counters["us_per_kernel"] = benchmark::Counter(
      double(state.iterations()) * kernels, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["programs"] = double(compiled->programCount());
}

void specializedBinding(benchmark::State& state, const ir::Graph& g) {
  auto compiled = compile(g, optionsFor(ShapeMode::Specialized));
  int64_t n = 1;
  for (auto _ : state) {
    Program p = compiled->program(bindingOf(g, ++n));
    benchmark::DoNotOptimize(p.ptx().data());
  }
}

/// The sim device for loading, memory and graph bookkeeping, with launches, replays and
/// synchronisation left out: what remains is the host's own work.
class HostOnlyDevice final : public runtime::ForwardingDevice {
public:
  using ForwardingDevice::ForwardingDevice;
  std::string name() const override { return "host-only"; }
  void launch(KernelHandle k, const LaunchConfig& c, const std::vector<KernelArg>& a) override {
    if (capturing_) inner().launch(k, c, a); // recorded, not run
  }
  void synchronize() override {}
  void beginCapture() override {
    inner().beginCapture();
    capturing_ = true;
  }
  GraphHandle endCapture() override {
    capturing_ = false;
    return inner().endCapture();
  }
  void replay(GraphHandle) override {}
  void startTimer() override {}
  std::optional<double> stopTimer() override { return std::nullopt; }
  std::vector<LaunchCounters> takeCounters() override { return {}; }

private:
  bool capturing_ = false;
};

void graphReplay(benchmark::State& state, const ir::Graph& g) {
  auto compiled = compile(g, optionsFor(ShapeMode::Generic));
  HostOnlyDevice device(makeDevice("sim", compiled->options().device));
  Executable exe(compiled, device);
  exe.setGraphMode(GraphMode::On);
  // Two bindings of one version ([129, 1024] for every symbol), buffers for the larger.
  const std::array<ir::Binding, 2> bindings = {bindingOf(g, 200), bindingOf(g, 300)};
  std::vector<DevicePtr> in, out;
  for (ir::NodeId v : g.inputs())
    in.push_back(device.allocate(size_t(ir::checkedProduct(ir::evaluate(
                                     g.node(v).type.shape, bindings[1]))) *
                                 ir::dtypeBytes(g.node(v).type.dtype)));
  for (ir::NodeId v : g.outputs())
    out.push_back(device.allocate(size_t(ir::checkedProduct(ir::evaluate(
                                      g.node(v).type.shape, bindings[1]))) *
                                  ir::dtypeBytes(g.node(v).type.dtype)));
  exe.run(in, out, bindings[1]);
  exe.run(in, out, bindings[0]);
  size_t i = 0;
  for (auto _ : state)
    exe.run(in, out, bindings[++i % 2]);
  double kernels = std::max<size_t>(
      1, compiledProgram(compiled->program(bindings[0])).module.kernels.size());
  state.counters["kernels"] = kernels;
  state.counters["us_per_kernel"] = benchmark::Counter(
      double(state.iterations()) * kernels, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["captures"] = double(exe.stats().captures);
  state.counters["launch_updates"] = double(exe.stats().launchUpdates);
  for (DevicePtr p : in)
    device.free(p);
  for (DevicePtr p : out)
    device.free(p);
}

void registerGraph(const std::string& name, const ir::Graph& g) {
  benchmark::RegisterBenchmark(("replay/" + name).c_str(),
                               [g](benchmark::State& s) { graphReplay(s, g); })
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("generic/" + name).c_str(),
                               [g](benchmark::State& s) { genericBinding(s, g); })
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("specialized/" + name).c_str(),
                               [g](benchmark::State& s) { specializedBinding(s, g); })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
}

} // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  namespace fs = std::filesystem;
  fs::path src(WEFT_SOURCE_DIR);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(src / "examples" / "graphs"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    frontend::ParsedGraph g = frontend::readGraphFile(f.string());
    if (!g.graph.symbols().empty()) registerGraph("example_" + f.stem().string(), g.graph);
  }
  files.clear();
  for (const auto& e : fs::directory_iterator(src / "bench" / "workloads"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files)
    registerGraph("suite_" + f.stem().string(), bench::symbolicWorkload(f.string()).graph);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
