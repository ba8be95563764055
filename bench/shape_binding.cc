// The host-side cost of a new shape (issue 15): with ShapeMode::Generic, binding a new value
// of a graph's symbols takes the one compiled program (CompiledGraph::program, a map lookup)
// and evaluates its buffer sizes and grids (runtime/shape_binding.h) — no planning, no LLVM.
// Per example graph and symbolised suite workload, astitch on h100:
//   generic/<graph>: a new binding per iteration; us_per_kernel divides by the kernel count
//   specialized/<graph>: what the same new binding costs today (plan + LLVM + PTX, cache off)
// Run: build/bench/shape_binding [--benchmark_filter=generic]. Not a timed test: the numbers
// go to docs/performance.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <spdlog/spdlog.h>

#include "compile.h"
#include "frontend/json_reader.h"
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

void registerGraph(const std::string& name, const ir::Graph& g) {
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
