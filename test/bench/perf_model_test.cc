// The perf model's arithmetic on hand-made counters and shapes (bench/perf_model.h,
// fusion/cost_model.h): bandwidth, L2 re-reads, bytes in flight, a round's work, the grid of a
// kernel that fills the SMs, launches, grid barriers.
#include <catch2/catch.hpp>

#include "bench/perf_model.h"
#include "bench/workloads.h"
#include "codegen/ptxas.h"
#include "compile.h"

using namespace weft;
using namespace weft::bench;

namespace {
ModelProfile toyProfile() {
  ModelProfile p;
  p.name = "toy";
  p.cost.smCount = 100;
  p.cost.peakDramGBs = 1000;
  p.cost.dramGBs = 1000;   // 1e6 bytes per µs
  p.cost.l2GBs = 4000;     // 4e6 bytes per µs
  p.cost.l2Bytes = 10e6;
  p.cost.latencyNs = 1000; // 1 µs: 10 KB in flight per SM for 1e6 bytes per µs on 100 SMs
  p.cost.dependentInstructionNs = 0;
  p.cost.blockBarrierNs = 0;
  p.cost.issueGInstr = 500; // warp instructions per ns
  p.cost.launchUs = 5;
  p.cost.graphLaunchUs = 1;
  p.cost.barrierUs = 3;
  p.cost.barrierPerBlockUs = 0.01;
  return p;
}

LaunchCounters memoryKernel(uint64_t readBytes, uint64_t writtenBytes, uint64_t blocks) {
  LaunchCounters k;
  k.globalSectorsRead = readBytes / 32;
  k.globalSectorsWritten = writtenBytes / 32;
  k.globalLoadRequests = readBytes / 512; // 16-byte loads: 512 bytes per warp request
  k.blocks = blocks;
  return k;
}
} // namespace

TEST_CASE("a memory-bound kernel: bytes over bandwidth plus launch", "[bench][model]") {
  LaunchCounters k = memoryKernel(32000000, 16000000, 1000);
  k.warpInstructions = 1000000;
  ModeledTime t = modelKernel(k, toyProfile());
  CHECK(t.memoryUs == Approx(48)); // 48 MB at 1e6 bytes per µs
  CHECK(t.issueUs == Approx(2));   // 1e6 / 5e5 per µs
  CHECK(t.boundUs == Approx(48));
  CHECK(t.launchUs == 5);
  CHECK(t.totalUs() == Approx(53));
  CHECK(t.dramBytes == 48000000);
  CHECK(t.l2Bytes == 0);
  // Under a CUDA graph only the launch changes.
  ModelProfile graph = toyProfile();
  graph.launches = LaunchMode::Graph;
  CHECK(modelKernel(k, graph).totalUs() == Approx(49));
  CHECK(modelProfile(*deviceSpecProfile("h100"), LaunchMode::Graph).launchUs() <
        modelProfile(*deviceSpecProfile("h100")).launchUs());
}

TEST_CASE("issue-bound kernels, idle SMs and grid barriers", "[bench][model]") {
  LaunchCounters k;
  k.globalSectorsRead = 32;
  k.warpInstructions = 50000000; // 100 µs at 5e5 per µs on every SM
  k.blocks = 25;                 // a quarter of the 100 SMs issue: 4x slower
  k.gridBarriers = 3;
  ModeledTime t = modelKernel(k, toyProfile());
  CHECK(t.issueUs == Approx(400));
  CHECK(t.barrierUs == Approx(3 * (3 + 0.01 * 25)));
  CHECK(t.totalUs() == Approx(400 + 5 + t.barrierUs));
  CHECK(fusion::gridBarrierUs(toyProfile().cost, 100) == Approx(4));
}

TEST_CASE("a handoff to the last block costs two memory round trips, not a grid barrier",
          "[bench][model]") {
  LaunchCounters k = memoryKernel(32000000, 16000000, 100);
  KernelShape shape;
  shape.blockSize = 256;
  shape.blocksPerSM = 1;
  shape.loadsInFlight = 8;
  const double without = modelKernel(k, toyProfile(), &shape).totalUs();
  shape.handsOff = true;
  ModeledTime t = modelKernel(k, toyProfile(), &shape);
  CHECK(fusion::handoffUs(toyProfile().cost) == Approx(2)); // 2 x 1 µs of latency
  CHECK(t.barrierUs == Approx(2));
  CHECK(t.totalUs() == Approx(without + 2));
  // log_softmax_nll's kernel hands off: its shape says so.
  CompileOptions o;
  o.cacheDir = "off";
  const bench::Workload w = bench::findWorkload("log_softmax_nll", bench::defaultWorkloadsDir());
  auto compiled = compile(w.build(), o);
  ProgramShape ps = programShape(compiledProgram(compiled->program({})));
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].handsOff);
}

TEST_CASE("bytes in flight cap the bandwidth of a small grid (Little's law)", "[bench][model]") {
  const fusion::CostModel m = toyProfile().cost;
  // 100 SMs × 10 KB / 1 µs = 1e6 bytes per µs: the full bandwidth; half the bytes, half of it
  CHECK(fusion::achievedBandwidthGBs(m, 100, 10000) == Approx(1000));
  CHECK(fusion::achievedBandwidthGBs(m, 100, 5000) == Approx(500));
  CHECK(fusion::achievedBandwidthGBs(m, 100, 1e6) == Approx(1000)); // never above DRAM's
  CHECK(fusion::achievedBandwidthGBs(m, 10, 10000) == Approx(100));

  // 10.24 MB over 50 blocks of 256 threads with 16-byte loads: 8 warps × 512 B = 4096 B in
  // flight on each of 50 SMs → 204.8 bytes per ns; the same over 1000 blocks (8 resident per
  // SM) is bandwidth-bound.
  LaunchCounters few = memoryKernel(10240000, 0, 50), many = memoryKernel(10240000, 0, 1000);
  KernelShape shape;
  shape.blockSize = 256;
  shape.blocksPerSM = 8;
  CHECK(modelKernel(few, toyProfile(), &shape).memoryUs == Approx(50));
  CHECK(modelKernel(many, toyProfile(), &shape).memoryUs == Approx(10.24));
  // Two loads in flight per thread: twice the bytes in flight.
  shape.loadsInFlight = 2;
  CHECK(modelKernel(few, toyProfile(), &shape).memoryUs == Approx(25));
  // A warp's instructions and block barriers between its loads lengthen the wait: 1000 warp
  // instructions per load request at 1 ns each double the 1 µs latency (1 ns: a dependent
  // instruction's wait, longer than the block's 8 warps over the SM's issue rate of 20 per ns).
  shape.loadsInFlight = 1;
  ModelProfile slow = toyProfile();
  slow.cost.dependentInstructionNs = 1;
  slow.cost.issueGInstr = 2000;
  LaunchCounters busy = few;
  busy.warpInstructions = 1000 * busy.globalLoadRequests;
  CHECK(modelKernel(busy, slow, &shape).memoryUs == Approx(100));
  // Without the shape (block size unknown) the SMs it runs on count as full.
  CHECK(modelKernel(few, toyProfile()).memoryUs == Approx(10.24));
}

TEST_CASE("a value written and re-read while it fits in L2 costs L2 bandwidth", "[bench][model]") {
  // kernel 0: reads input buffer 0 (8 MB), writes intermediate 1 (8 MB)
  // kernel 1: reads 1 (8 MB) and writes output 2 (8 MB)
  auto program = [](uint64_t bytes) {
    ProgramShape shape(2);
    shape[0].reads = {{0, bytes}};
    shape[0].writes = {{1, bytes}};
    shape[1].reads = {{1, bytes}};
    shape[1].writes = {{2, bytes}};
    for (KernelShape& s : shape)
      s.blockSize = 256, s.blocksPerSM = 8;
    return shape;
  };
  std::vector<LaunchCounters> small = {memoryKernel(8000000, 8000000, 1000),
                                       memoryKernel(8000000, 8000000, 1000)};
  // The re-read of buffer 1: 8 MB within L2's 10 MB, but kernel 1's own output (8 MB) passes
  // through L2 while it reads: 2 MB of it still hit.
  std::vector<uint64_t> hits = l2HitBytes(small, program(8000000), 10e6);
  CHECK(hits == std::vector<uint64_t>{0, 2000000});
  hits = l2HitBytes(small, program(8000000), 20e6);
  CHECK(hits == std::vector<uint64_t>{0, 8000000});
  ModelProfile p = toyProfile();
  p.cost.l2Bytes = 20e6;
  ModeledTime t = modelProgram(small, p, program(8000000));
  CHECK(t.l2Bytes == 8000000);
  CHECK(t.dramBytes == 24000000);
  CHECK(t.memoryUs == Approx(24 + 2)); // 24 MB from DRAM, 8 MB at 4e6 bytes per µs
  // Too big for L2: every byte from DRAM.
  std::vector<LaunchCounters> big = {memoryKernel(64000000, 64000000, 1000),
                                     memoryKernel(64000000, 64000000, 1000)};
  CHECK(l2HitBytes(big, program(64000000), 20e6) == std::vector<uint64_t>{0, 0});
  // A kernel's own re-reads (it reads more than its buffers hold) hit L2.
  std::vector<LaunchCounters> twice = {memoryKernel(16000000, 8000000, 1000),
                                       memoryKernel(8000000, 8000000, 1000)};
  CHECK(l2HitBytes(twice, program(8000000), 10e6)[0] == 8000000);
}

TEST_CASE("the copy baseline is modeled near the profile's DRAM bandwidth", "[bench][model]") {
  ModelProfile h100 = modelProfile(*deviceSpecProfile("h100"));
  const uint64_t bytes = 256ull << 20;
  const double copy = copyBaselineUs(bytes, h100);
  CHECK(copy > bandwidthLimitUs(bytes, h100));
  // bandwidth-bound: the bytes at the streaming bandwidth, plus one launch
  CHECK(copy == Approx(double(bytes) / (h100.cost.dramGBs * 1e3) + h100.launchUs()).epsilon(0.01));
}

TEST_CASE("model profiles come from the device specs", "[bench][model]") {
  DeviceSpec h100 = *deviceSpecProfile("h100");
  ModelProfile p = modelProfile(h100);
  CHECK(p.cost.smCount == h100.smCount);
  CHECK(p.cost.peakDramGBs == h100.memoryBandwidthGBs);
  CHECK(p.cost.dramGBs < h100.memoryBandwidthGBs);
  CHECK(p.cost.issueGInstr == Approx(h100.smCount * h100.warpSchedulersPerSM * h100.clockGHz));
  // L2 holds more on the H100 than on the V100
  CHECK(p.cost.l2Bytes > modelProfile(*deviceSpecProfile("v100")).cost.l2Bytes);
}

TEST_CASE("a load-then-reduce phase at one block per SM keeps nothing in flight while it reduces",
          "[bench][model]") {
  // 8.192 MB read by 100 blocks of 512 threads (16 warps), one per SM, 8 loads in flight per thread
  // (the row loaded into registers first), then 1000 warp instructions per load to reduce it.
  ModelProfile p = toyProfile();
  p.cost.issueGInstr = 2000; // 20 warp instructions per ns per SM: 16 warps take 0.8 ns each
  const double bytes = 8192000;
  LaunchCounters k = memoryKernel(uint64_t(bytes), 0, 100);
  k.warpInstructions = 1000 * k.globalLoadRequests;
  KernelShape rows;
  rows.blockSize = 512;
  rows.blocksPerSM = 1;
  rows.loadsInFlight = 8;
  // A round: 1 µs of latency, then the work of all 8 loads (8 × 1000 × 0.8 ns); in flight:
  // 16 warps × 512 B × 8 per SM.
  const double round = 1000 + 8 * 1000 * 0.8, inFlight = 16 * 512.0 * 8;
  const ModeledTime t = modelKernel(k, p, &rows);
  CHECK(t.memoryUs == Approx(bytes / (100 * inFlight / round * 1e3)));
  // The same bytes and work streamed by four resident blocks per SM: one's loads are in flight
  // while another reduces, and the kernel runs at the bandwidth.
  LaunchCounters streamed = k;
  streamed.blocks = 400;
  KernelShape overlapped = rows;
  overlapped.blocksPerSM = 4;
  const ModeledTime s = modelKernel(streamed, p, &overlapped);
  CHECK(s.memoryUs == Approx(bytes / 1e6));
  CHECK(t.memoryUs > 1.1 * s.memoryUs);
  // More loads in flight per thread do not hide the reduce that follows them: 8 loads, against 1,
  // give far less than 8 times the bandwidth.
  KernelShape one = rows;
  one.loadsInFlight = 1;
  CHECK(modelKernel(k, p, &one).memoryUs < 2 * t.memoryUs);
  // Block barriers between the loads and the work add to the round: 1 per load at 100 ns.
  p.cost.blockBarrierNs = 100;
  LaunchCounters synced = k;
  synced.blockBarriers = k.globalLoadRequests / 16; // per block: one per load of each warp
  CHECK(modelKernel(synced, p, &rows).memoryUs ==
        Approx(bytes / (100 * inFlight / (round + 8 * 100) * 1e3)));
}

TEST_CASE("a kernel that fills the SMs is modeled with the grid it launches", "[bench][model]") {
  // The simulator launched 200 blocks (2 per SM by its register estimate); the GPU launches 300
  // (3 per SM by ptxas's registers), all resident: half as many bytes again in flight.
  ModelProfile p = toyProfile();
  p.cost.latencyNs = 2000;
  LaunchCounters k = memoryKernel(10240000, 0, 200);
  KernelShape planned;
  planned.blockSize = 256;
  planned.blocksPerSM = 3;
  KernelShape filled = planned;
  filled.fillGrid = 300;
  // 8 warps × 512 B per block on 100 SMs over 2 µs: 204.8 bytes per ns per resident block
  CHECK(modelKernel(k, p, &planned).memoryUs == Approx(10240000 / (2 * 204.8e3)));
  CHECK(modelKernel(k, p, &filled).memoryUs == Approx(10240000 / (3 * 204.8e3)));

  // Softmax over rows of 128 fills the SMs (LaunchPlan::fillSMs). Where ptxas is installed, its
  // shape says the GPU's grid: every SM holds the blocks ptxas's registers allow, at least the
  // plan's; without it, the simulator's own grid is modeled.
  CompileOptions o;
  o.cacheDir = "off";
  const bench::Workload w = bench::findWorkload("softmax", bench::defaultWorkloadsDir());
  auto compiled = compile(w.build(), o);
  const CompiledProgram& program = compiledProgram(compiled->program({}));
  REQUIRE(program.module.kernels.size() == 1);
  const codegen::CompiledKernel& kernel = program.module.kernels[0];
  REQUIRE(kernel.launch.fillSMs);
  const KernelShape s = programShape(program).at(0);
  const int smCount = program.plan.device.smCount;
  if (codegen::findPtxas().empty()) {
    CHECK(s.fillGrid == 0);
  } else {
    CHECK(s.fillGrid >= kernel.launch.maxBlocks);
    CHECK(s.fillGrid == std::min<int64_t>(kernel.launch.tiles.size(),
                                          std::max<int64_t>(kernel.launch.maxBlocks,
                                                            int64_t(smCount) * s.blocksPerSM)));
    CHECK(s.blocksPerSM * int64_t(smCount) >= kernel.launch.maxBlocks);
  }
}

TEST_CASE("a column reduce's loop keeps the loads of ptxas's 4-fold unroll in flight",
          "[bench][model]") {
  // bias_grad: columns of 16,384 rows, 32 rows of threads, split 11: about 47 iterations a
  // thread, unrolled 4 times by ptxas. A short column of 64 rows (two iterations) keeps 2.
  CompileOptions o;
  o.cacheDir = "off";
  const bench::Workload w = bench::findWorkload("bias_grad", bench::defaultWorkloadsDir());
  auto compiled = compile(w.build(), o);
  const CompiledProgram& program = compiledProgram(compiled->program({}));
  REQUIRE(program.module.kernels.size() == 1);
  CHECK(programShape(program).at(0).loadsInFlight == 4);

  ir::Graph g;
  auto x = g.parameter("x", {ir::DType::f32, {64, 4096}});
  g.setOutputs({g.reduce(ir::ReduceKind::Sum, x, {0}, "y")});
  auto shortColumns = compile(publicGraph(std::move(g)), o);
  const CompiledProgram& shortProgram = compiledProgram(shortColumns->program({}));
  const auto* kp = std::get_if<fusion::KernelPlan>(&shortProgram.plan.steps.at(0));
  REQUIRE(kp != nullptr);
  const auto* column = std::get_if<fusion::ColumnReduceMapping>(&kp->groups.at(0).mapping);
  REQUIRE(column != nullptr);
  const int64_t iterations =
      (64 + column->tileRows * column->splitFactor - 1) / (column->tileRows * column->splitFactor);
  CHECK(programShape(shortProgram).at(0).loadsInFlight == std::min<int64_t>(iterations, 4));
}
