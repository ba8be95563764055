// Compile time per example graph: plan (policies none and astitch) + LLVM IR + O3 + PTX, per
// kernel. Run: build/bench/compile_time [--benchmark_repetitions=N]. The *_median rows give the
// median; "ms_per_kernel" divides the whole compile by the kernel count (target <= 30 ms);
// llvm_ms / opt_ms / ptx_ms split it by step (also per kernel). Symbols are bound to 64.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <spdlog/spdlog.h>

#include "codegen/compile.h"
#include "frontend/json_reader.h"
#include "fusion/plan.h"
#include "ir/graph.h"
#include "weft/error.h"

namespace {

using namespace weft;

void compileExample(benchmark::State& state, const std::string& path, fusion::Policy policy) {
  ir::Graph g = frontend::readGraphFile(path).graph;
  ir::Binding bind;
  for (const std::string& s : g.symbols())
    bind[s] = 64;
  ir::Graph bound = ir::bindSymbols(g, bind);
  DeviceSpec spec = *deviceSpecProfile("h100");
  double kernels = 0, llvm = 0, opt = 0, ptx = 0;
  for (auto _ : state) {
    fusion::FusionPlan plan = fusion::plan(bound, spec, policy);
    codegen::CompiledModule m;
    try {
      m = codegen::compileToPtx(plan);
    } catch (const Error& e) {
      state.SkipWithError(e.what());
      return;
    }
    benchmark::DoNotOptimize(m.ptx.data());
    kernels = double(m.kernels.size());
    llvm += m.timings.llvmIrMs;
    opt += m.timings.optimiseMs;
    ptx += m.timings.ptxMs;
  }
  double n = double(state.iterations()) * std::max(1.0, kernels);
  state.counters["kernels"] = kernels;
  state.counters["llvm_ms"] = llvm / n;
  state.counters["opt_ms"] = opt / n;
  state.counters["ptx_ms"] = ptx / n;
  state.counters["ms_per_kernel"] = (llvm + opt + ptx) / n;
}

} // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  std::filesystem::path dir = std::filesystem::path(WEFT_SOURCE_DIR) / "examples" / "graphs";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (fusion::Policy policy : {fusion::Policy::None, fusion::Policy::AStitch})
    for (const auto& f : files)
      benchmark::RegisterBenchmark(
          ("compile/" + std::string(fusion::policyName(policy)) + "/" + f.stem().string()).c_str(),
          compileExample, f.string(), policy)
          ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
