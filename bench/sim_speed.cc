// Simulator speed: thread instructions per second on one core, on an elementwise kernel and
// on a row reduction (warp shuffles + shared memory) from the corpus in test/sim/ptx. This is
// a benchmark, never a timed test.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "sim/sim_device.h"

namespace {

std::string readPtx(const char* name) {
  std::ifstream f(std::string(WEFT_SOURCE_DIR) + "/test/sim/ptx/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Setup {
  std::unique_ptr<weft::Device> dev = weft::makeSimDevice(weft::DeviceSpec{});
  weft::KernelHandle kernel;
  Setup(const char* file, const char* name) {
    kernel = dev->getKernel(dev->loadModule(readPtx(file)), name);
  }
};

void report(benchmark::State& state, weft::Device& dev) {
  uint64_t threadInstr = 0, warpInstr = 0;
  for (auto& c : dev.takeCounters())
    threadInstr += c.threadInstructions, warpInstr += c.warpInstructions;
  state.counters["thread_instr/s"] =
      benchmark::Counter(double(threadInstr), benchmark::Counter::kIsRate);
  state.counters["warp_instr/s"] =
      benchmark::Counter(double(warpInstr), benchmark::Counter::kIsRate);
}

void BM_ElementwiseAddF32(benchmark::State& state) {
  Setup s("elementwise.ptx", "add_f32");
  const int n = int(state.range(0));
  auto a = s.dev->allocate(n * 4), b = s.dev->allocate(n * 4), c = s.dev->allocate(n * 4);
  weft::LaunchConfig cfg;
  cfg.grid.x = uint32_t((n + 255) / 256);
  cfg.block.x = 256;
  std::vector<weft::KernelArg> args = {weft::KernelArg::pointer(a), weft::KernelArg::pointer(b),
                                       weft::KernelArg::pointer(c), weft::KernelArg::of(n)};
  s.dev->takeCounters();
  for (auto _ : state)
    s.dev->launch(s.kernel, cfg, args);
  report(state, *s.dev);
}
BENCHMARK(BM_ElementwiseAddF32)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_RowSumReduction(benchmark::State& state) {
  Setup s("reduce.ptx", "row_sum");
  const int rows = 256, cols = int(state.range(0));
  std::vector<float> host(size_t(rows) * cols, 1.0f);
  auto x = s.dev->allocate(host.size() * 4), y = s.dev->allocate(rows * 4);
  s.dev->copyToDevice(x, host.data(), host.size() * 4);
  weft::LaunchConfig cfg;
  cfg.grid.x = rows;
  cfg.block.x = 256;
  std::vector<weft::KernelArg> args = {weft::KernelArg::pointer(x), weft::KernelArg::pointer(y),
                                       weft::KernelArg::of(cols)};
  s.dev->takeCounters();
  for (auto _ : state)
    s.dev->launch(s.kernel, cfg, args);
  report(state, *s.dev);
}
BENCHMARK(BM_RowSumReduction)->Arg(4096)->Unit(benchmark::kMillisecond);

// A cooperative launch with every block resident: block reductions, two grid barriers
// (atomics + spinning) and an elementwise pass. Spinning is synchronisation, not data.
void BM_GridBarrierCenter(benchmark::State& state) {
  Setup s("grid_barrier.ptx", "center");
  const int blocks = int(state.range(0)), n = blocks * 256;
  auto x = s.dev->allocate(n * 4), y = s.dev->allocate(n * 4),
       partial = s.dev->allocate((blocks + 1) * 4);
  auto bar = s.dev->allocate(8);
  s.dev->memset(x, 0, n * 4);
  s.dev->memset(bar, 0, 8);
  weft::LaunchConfig cfg;
  cfg.grid.x = uint32_t(blocks);
  cfg.block.x = 256;
  cfg.cooperative = true;
  std::vector<weft::KernelArg> args = {weft::KernelArg::pointer(x), weft::KernelArg::pointer(y),
                                       weft::KernelArg::pointer(partial),
                                       weft::KernelArg::pointer(bar), weft::KernelArg::of(n)};
  s.dev->takeCounters();
  for (auto _ : state)
    s.dev->launch(s.kernel, cfg, args);
  report(state, *s.dev);
}
BENCHMARK(BM_GridBarrierCenter)->Arg(1056)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
