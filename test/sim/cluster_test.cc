// Thread-block clusters (LaunchConfig::clusterSize): the cluster special registers, mapa and
// ld/st.shared::cluster reading other blocks' shared memory, barrier.cluster, the launch
// checks, the errors (each naming the thread and address) and the cluster counters. The
// kernels are test/sim/ptx/cluster.ptx (ptxas_test.cc assembles them for sm_90).
#include <catch2/catch.hpp>

#include <functional>

#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {

LaunchConfig clusterGrid(Dim3 grid, uint32_t threads, uint32_t clusterSize,
                         bool cooperative = false) {
  LaunchConfig c;
  c.grid = grid;
  c.block.x = threads;
  c.clusterSize = clusterSize;
  c.cooperative = cooperative;
  return c;
}

Dim3 dims(uint32_t x, uint32_t y = 1, uint32_t z = 1) {
  Dim3 d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

DeviceSpec a100() {
  DeviceSpec s = h100();
  s.name = "a100";
  s.computeCapability = 80;
  s.smCount = 108;
  return s;
}

/// Runs cluster_neighbour32 and returns what each thread read from its neighbour.
std::vector<uint32_t> neighbour32(Device& dev, const LaunchConfig& cfg, LaunchCounters* c = nullptr) {
  Buffer<uint32_t> out(dev, size_t(cfg.grid.x) * cfg.block.x);
  LaunchCounters k = runPtx(dev, readPtx("cluster.ptx"), "cluster_neighbour32", cfg, {out.arg()});
  if (c) *c = k;
  return out.get();
}

std::vector<uint32_t> expectedNeighbour32(uint32_t blocks, uint32_t threads, uint32_t size) {
  std::vector<uint32_t> want;
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < threads; ++t)
      want.push_back((b % size + 1) % size * 1000 + t);
  return want;
}

} // namespace

TEST_CASE("cluster special registers for cluster sizes 1, 2, 4 and 8 and a 3-D grid",
          "[sim][cluster]") {
  auto dev = makeSimDevice(h100());
  for (uint32_t size : {1u, 2u, 4u, 8u}) {
    for (Dim3 g : {dims(16), dims(8, 3, 2)}) {
      INFO("cluster size " << size << ", grid " << g.x << "x" << g.y << "x" << g.z);
      Buffer<uint32_t> out(*dev, size_t(g.count()) * 16);
      runPtx(*dev, readPtx("cluster.ptx"), "cluster_sregs", clusterGrid(g, 32, size),
             {out.arg()});
      std::vector<uint32_t> got = out.get();
      for (uint32_t z = 0; z < g.z; ++z)
        for (uint32_t y = 0; y < g.y; ++y)
          for (uint32_t x = 0; x < g.x; ++x) {
            const uint32_t linear = x + g.x * (y + g.y * z);
            const std::vector<uint32_t> want = {x % size, size,       x / size, y,    z,
                                                g.x / size, g.y,      g.z,      x % size, 0,
                                                0,        size,       1,        1,    size > 1,
                                                linear};
            std::vector<uint32_t> block(got.begin() + linear * 16, got.begin() + linear * 16 + 16);
            INFO("block " << x << "," << y << "," << z);
            CHECK(block == want);
          }
    }
  }
}

TEST_CASE("each block reads its neighbour's shared memory through a 32-bit shared::cluster "
          "address",
          "[sim][cluster]") {
  auto dev = makeSimDevice(h100());
  for (uint32_t size : {2u, 4u, 8u, 16u}) {
    INFO("cluster size " << size);
    CHECK(neighbour32(*dev, clusterGrid(dims(16), 64, size)) == expectedNeighbour32(16, 64, size));
  }
  // a cooperative launch keeps the whole grid resident; clusters work the same there
  CHECK(neighbour32(*dev, clusterGrid(dims(8), 96, 4, true)) == expectedNeighbour32(8, 96, 4));
}

TEST_CASE("cluster size 1: rank 0 of 1, barrier.cluster synchronises the block alone, mapa to "
          "rank 0 is the block's own shared memory, also on sm_80",
          "[sim][cluster]") {
  for (const DeviceSpec& spec : {h100(), a100()}) {
    INFO(spec.name);
    auto dev = makeSimDevice(spec);
    LaunchCounters c;
    CHECK(neighbour32(*dev, clusterGrid(dims(4), 64, 1), &c) == expectedNeighbour32(4, 64, 1));
    CHECK(c.clusterBarriers == 8); // two phases per block, each block a cluster
    CHECK(c.clusterSharedLoads == 0);
    CHECK(c.sharedLoads == 8); // own-block ld.shared::cluster: 2 warps x 4 blocks
  }
}

TEST_CASE("64-bit shared::cluster addresses: [a+imm], .v2 loads and stores, generic mapa",
          "[sim][cluster]") {
  auto dev = makeSimDevice(h100());
  const uint32_t blocks = 8, threads = 64, size = 4;
  Buffer<uint32_t> out(*dev, size_t(blocks) * threads * 4);
  runPtx(*dev, readPtx("cluster.ptx"), "cluster_neighbour64", clusterGrid(dims(blocks), threads, size),
         {out.arg()});
  std::vector<uint32_t> want;
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < threads; ++t) {
      const uint32_t first = (b % size + 1) % size * 1000 + 2 * t;
      want.insert(want.end(), {first + 1, first, first + 1, first});
    }
  CHECK(out.get() == want);
}

TEST_CASE("cluster counters: clusterBarriers per phase per cluster, clusterSharedLoads for "
          "other blocks only",
          "[sim][cluster][counters]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> out(*dev, size_t(4 * 64));
  LaunchCounters c = runPtx(*dev, readPtx("cluster.ptx"), "cluster_counts",
                            clusterGrid(dims(4), 64, 2), {out.arg()});
  std::vector<uint32_t> want;
  for (uint32_t b = 0; b < 4; ++b)
    for (uint32_t t = 0; t < 64; ++t)
      want.push_back((b % 2 ^ 1) * 1000 + t + (b % 2) * 1000 + t);
  CHECK(out.get() == want);
  CHECK(c.clusterBarriers == 4);    // 2 phases x 2 clusters
  CHECK(c.clusterSharedLoads == 8); // the partner's slot: 2 warps x 4 blocks
  CHECK(c.sharedLoads == 8);        // the own slot through a shared::cluster address
  CHECK(c.sharedStores == 8);
  CHECK(c.blockBarriers == 0);
  CHECK(c.globalStoreRequests == 8);
  CHECK(c.simulatedBlocks == 4);
}

TEST_CASE("block sampling samples whole clusters, and the extrapolated counters equal a full run",
          "[sim][cluster][sampling]") {
  auto count = [](uint64_t sampleBlocks) {
    sim::ExecOptions opts;
    opts.sampleBlocks = sampleBlocks;
    auto dev = makeSimDevice(h100(), opts);
    Buffer<uint32_t> out(*dev, size_t(16 * 64));
    return runPtx(*dev, readPtx("cluster.ptx"), "cluster_counts", clusterGrid(dims(16), 64, 2),
                  {out.arg()});
  };
  LaunchCounters full = count(0), sampled = count(2);
  CHECK(full.simulatedBlocks == 16);
  CHECK(sampled.simulatedBlocks == 6); // clusters 0 and 3 sampled, and the last one
  CHECK(sampled.clusterBarriers == full.clusterBarriers);
  CHECK(full.clusterBarriers == 16);
  CHECK(sampled.clusterSharedLoads == full.clusterSharedLoads);
  CHECK(full.clusterSharedLoads == 32);
  CHECK(sampled.sharedLoads == full.sharedLoads);
  CHECK(sampled.warpInstructions == full.warpInstructions);
}

TEST_CASE("cluster launch checks: sm_90, a divisor of grid.x, at most 16 blocks, resident on a "
          "GPC",
          "[sim][cluster][errors]") {
  auto h = makeSimDevice(h100());
  CHECK(errorOf([&] { neighbour32(*h, clusterGrid(dims(6), 32, 4)); }) ==
        "kernel 'cluster_neighbour32': cluster size 4: it does not divide grid.x = 6");
  CHECK(errorOf([&] { neighbour32(*h, clusterGrid(dims(64), 32, 32)); }) ==
        "kernel 'cluster_neighbour32': cluster size 32: the largest cluster is 16 blocks (8 "
        "portably)");
  CHECK(errorOf([&] { neighbour32(*h, clusterGrid(dims(4), 32, 0)); }) ==
        "kernel 'cluster_neighbour32': cluster size 0: a cluster has at least one block (1: no "
        "clusters)");
  // An SM whose registers, by the simulator's estimate, hold no such block still runs one (ptxas
  // fits a kernel's registers to its .maxntid): the cluster is checked against one per SM.
  DeviceSpec tiny = h100();
  tiny.registersPerSM = 256;
  auto t = makeSimDevice(tiny);
  CHECK(errorOf([&] { neighbour32(*t, clusterGrid(dims(4), 32, 2)); }).empty());
  auto a = makeSimDevice(a100());
  CHECK(errorOf([&] { neighbour32(*a, clusterGrid(dims(4), 32, 2)); }) ==
        "kernel 'cluster_neighbour32': cluster size 2: thread-block clusters need sm_90 or later; "
        "the device (a100) is sm_80");
}

TEST_CASE("shared::cluster errors name the thread and the address", "[sim][cluster][errors]") {
  auto dev = makeSimDevice(h100());
  auto peek = [&](uint32_t flip, uint32_t write) {
    Buffer<uint32_t> out(*dev, size_t(4 * 32));
    runPtx(*dev, readPtx("cluster.ptx"), "cluster_peek", clusterGrid(dims(4), 32, 2),
           {out.arg(), KernelArg::of(flip), KernelArg::of(write)});
    return out.get();
  };
  std::vector<uint32_t> want;
  for (uint32_t i = 0; i < 4 * 32; ++i)
    want.push_back(i % 32);
  CHECK(peek(1, 1) == want);

  // The block of rank 1 completes the barrier's phase and reads first: rank 1 ^ 2 = 3.
  std::string err = errorOf([&] { peek(2, 1); });
  CHECK_THAT(err, Catch::StartsWith("kernel 'cluster_peek': shared::cluster load at address "
                                    "0x4000000 names block rank 3 of a cluster of 2 blocks at PTX "
                                    "line "));
  CHECK_THAT(err, Catch::EndsWith("`ld.shared::cluster.u32 %r12, [%r11];`, block (1,0,0), thread "
                                  "(0,0,0)"));

  err = errorOf([&] { peek(1, 0); });
  CHECK_THAT(err, Catch::StartsWith(
                      "kernel 'cluster_peek': read of uninitialised shared memory of block "
                      "(0,0,0) (cluster rank 0) at shared::cluster address 0x1000000: no thread of "
                      "that block has written it (missing barrier.cluster?) at PTX line "));
  CHECK_THAT(err, Catch::EndsWith("block (1,0,0), thread (0,0,0)"));

  err = errorOf([&] {
    runPtx(*dev, readPtx("cluster.ptx"), "cluster_after_exit", clusterGrid(dims(2), 32, 2), {});
  });
  CHECK_THAT(err, Catch::StartsWith("kernel 'cluster_after_exit': shared::cluster load at address "
                                    "0x2000000: every thread of block (1,0,0) (cluster rank 1) has "
                                    "exited"));
  CHECK_THAT(err, Catch::EndsWith("block (0,0,0), thread (0,0,0)"));
}

TEST_CASE("barrier.cluster errors: a thread that never arrives deadlocks the cluster, and arriving "
          "twice",
          "[sim][cluster][errors]") {
  auto dev = makeSimDevice(h100());
  std::string err = errorOf([&] {
    runPtx(*dev, readPtx("cluster.ptx"), "cluster_skip", clusterGrid(dims(4), 64, 2), {});
  });
  CHECK_THAT(err, Catch::StartsWith("kernel 'cluster_skip': deadlock: threads wait at "
                                    "barrier.cluster.wait for threads of their cluster that never "
                                    "arrive, at PTX line "));
  CHECK_THAT(err, Catch::Contains("`barrier.cluster.wait;`, block (0,0,0), thread (0,0,0); not "
                                  "arrived: PTX line "));
  CHECK_THAT(err, Catch::EndsWith("`bar.sync 0;`, block (1,0,0), thread (0,0,0)"));

  err = errorOf([&] {
    runPtx(*dev, readPtx("cluster.ptx"), "cluster_arrive_twice", clusterGrid(dims(2), 32, 2), {});
  });
  CHECK_THAT(err, Catch::StartsWith("kernel 'cluster_arrive_twice': barrier.cluster.arrive twice "
                                    "without a barrier.cluster.wait in between at PTX line "));
  CHECK_THAT(err, Catch::EndsWith("block (0,0,0), thread (0,0,0)"));
}

TEST_CASE("pushing into another block: atom and st on shared::cluster addresses, getctarank, "
          "ld/st.shared::cta",
          "[sim][cluster]") {
  auto dev = makeSimDevice(h100());
  for (uint32_t size : {1u, 2u, 4u}) {
    INFO("cluster size " << size);
    const uint32_t blocks = 8, threads = 96;
    Buffer<uint32_t> out(*dev, size_t(blocks / size) * (1 + size));
    LaunchCounters c = runPtx(*dev, readPtx("cluster.ptx"), "cluster_push",
                              clusterGrid(dims(blocks), threads, size), {out.arg()});
    std::vector<uint32_t> want;
    for (uint32_t cl = 0; cl < blocks / size; ++cl) {
      want.push_back(size * threads);
      for (uint32_t r = 0; r < size; ++r)
        want.push_back(100 * r + 7);
    }
    CHECK(out.get() == want);
    CHECK(c.atomics == blocks * 3);                    // 3 warps per block
    CHECK(c.clusterBarriers == 2 * (blocks / size));   // 2 phases per cluster
    CHECK(c.clusterSharedLoads == 0);                  // nothing read from another block
  }
}

TEST_CASE("the kernel's .reqnctapercluster and .maxclusterrank are checked at launch",
          "[sim][cluster][errors]") {
  auto dev = makeSimDevice(h100());
  const std::string ptx = readPtx("cluster.ptx");
  CHECK(runPtx(*dev, ptx, "cluster_required", clusterGrid(dims(8), 32, 4), {}).clusterBarriers ==
        2);
  CHECK(errorOf([&] { runPtx(*dev, ptx, "cluster_required", clusterGrid(dims(8), 32, 2), {}); }) ==
        "kernel 'cluster_required': cluster size 2: the kernel requires .reqnctapercluster 4, 1, "
        "1 (clusters here are clusterSize blocks along x)");
  CHECK(runPtx(*dev, ptx, "cluster_at_most2", clusterGrid(dims(8), 32, 2), {}).clusterBarriers ==
        4);
  CHECK(errorOf([&] { runPtx(*dev, ptx, "cluster_at_most2", clusterGrid(dims(8), 32, 4), {}); }) ==
        "kernel 'cluster_at_most2': cluster size 4: the kernel allows .maxclusterrank 2");
}

TEST_CASE("barrier.cluster.wait without an arrive is an error naming the thread",
          "[sim][cluster][errors]") {
  auto dev = makeSimDevice(h100());
  std::string err = errorOf([&] {
    runPtx(*dev, readPtx("cluster.ptx"), "cluster_wait_only", clusterGrid(dims(2), 32, 1), {});
  });
  CHECK_THAT(err, Catch::StartsWith("kernel 'cluster_wait_only': barrier.cluster.wait without a "
                                    "barrier.cluster.arrive before it at PTX line "));
  CHECK_THAT(err, Catch::EndsWith("`barrier.cluster.wait;`, block (0,0,0), thread (0,0,0)"));
}

TEST_CASE("every ld.shared::cluster type: u8, s8, b16, b32, s32, b64, f32, f64",
          "[sim][cluster]") {
  auto dev = makeSimDevice(h100());
  const uint32_t blocks = 4, size = 2;
  Buffer<uint64_t> out(*dev, size_t(blocks) * 9);
  runPtx(*dev, readPtx("cluster.ptx"), "cluster_types", clusterGrid(dims(blocks), 64, size),
         {out.arg()});
  std::vector<uint64_t> want;
  for (uint32_t b = 0; b < blocks; ++b) {
    const uint64_t n = (b % size + 1) % size; // the neighbour's rank
    const uint64_t f64 = dbits(2.5 + double(n));
    want.insert(want.end(), {0x11 + n, 0xffffffffffffff88ull, 0x4433, 0x88776655,
                             0xffffffff88776655ull, 0x8877665544332211ull + n, f64 >> 32, f64, 0});
  }
  CHECK(out.get() == want);
}

TEST_CASE("a ring all-reduce over the cluster: one barrier.cluster phase per step in a loop",
          "[sim][cluster][counters]") {
  auto dev = makeSimDevice(h100());
  for (uint32_t size : {1u, 2u, 4u, 8u, 16u}) {
    INFO("cluster size " << size);
    const uint32_t blocks = 16, threads = 128;
    Buffer<uint32_t> out(*dev, size_t(blocks) * threads);
    LaunchCounters c = runPtx(*dev, readPtx("cluster.ptx"), "cluster_ring",
                              clusterGrid(dims(blocks), threads, size), {out.arg()});
    std::vector<uint32_t> want;
    for (uint32_t b = 0; b < blocks; ++b)
      for (uint32_t t = 0; t < threads; ++t)
        want.push_back(size * (size + 1) / 2 + size * t);
    CHECK(out.get() == want);
    CHECK(c.clusterBarriers == size * (blocks / size)); // size - 1 steps and the last phase
    CHECK(c.clusterSharedLoads == (size - 1) * blocks * 4); // 4 warps per block and step
  }
}

TEST_CASE("ld.shared of a mapa result is out of bounds and says it needs ld.shared::cluster",
          "[sim][cluster][errors]") {
  auto dev = makeSimDevice(h100());
  std::string err = errorOf([&] {
    runPtx(*dev, readPtx("cluster.ptx"), "cluster_cta_load", clusterGrid(dims(2), 32, 2), {});
  });
  CHECK_THAT(err, Catch::StartsWith("kernel 'cluster_cta_load': out-of-bounds shared load of 4 "
                                    "bytes at shared address 0x2000000 (the block has 1024 bytes "
                                    "of shared memory); a shared::cluster address (mapa's) needs "
                                    "ld/st.shared::cluster at PTX line "));
}
