// Warp-level semantics: divergence and reconvergence, shfl.sync modes with segments and
// the predicate output, vote.sync, and member masks that never arrive.
#include <catch2/catch.hpp>

#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {
std::string st32(const std::string& reg, int k) {
  return "  st.global.u32 [%rd2+" + std::to_string(8 * k) + "], " + reg + ";\n";
}
} // namespace

TEST_CASE("divergent branch reconverges and is counted per path", "[sim][warp]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(2 * 32));
  const std::string body = R"(
  and.b32 %r1, %r0, 1;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra EVEN;
  activemask.b32 %r2;
  bra.uni JOIN;
EVEN:
  activemask.b32 %r2;
  add.u32 %r2, %r2, 0;
JOIN:
  activemask.b32 %r3;
)" + st32("%r2", 0) + st32("%r3", 1);
  auto c = runPtx(*dev, scalarKernel(body, 2), "t", grid1D(1, 32), {out.arg()});
  auto o = out.get();
  for (int t = 0; t < 32; ++t) {
    CHECK(o[2 * t] == (t % 2 ? 0xAAAAAAAAu : 0x55555555u));
    CHECK(o[2 * t + 1] == 0xFFFFFFFFu); // reconverged after the join
  }
  // 4 preamble + 3 + 2 (odd path) + 2 (even path) + 1 + 2 stores + ret
  CHECK(c.warpInstructions == 15);
  CHECK(c.threadInstructions == 4 * 32 + 3 * 32 + 2 * 16 + 2 * 16 + 32 + 2 * 32 + 32);
}

TEST_CASE("loops with per-thread trip counts reconverge after the loop", "[sim][warp]") {
  auto r = runScalar(R"(
  mov.u32 %r1, 0;
  mov.u32 %r2, 0;
LOOP:
  setp.ge.u32 %p1, %r1, %r0;
  @%p1 bra END;
  add.u32 %r2, %r2, %r1;
  add.u32 %r1, %r1, 1;
  bra.uni LOOP;
END:
  activemask.b32 %r3;
)" + st32("%r2", 0) + st32("%r3", 1),
                     2, 32);
  for (int t = 0; t < 32; ++t) {
    CHECK(r[2 * t] == uint64_t(t * (t - 1) / 2));
    CHECK(r[2 * t + 1] == 0xFFFFFFFFu);
  }
}

TEST_CASE("shfl.sync: up, down, bfly and idx within 8-lane segments, with the predicate",
          "[sim][warp]") {
  auto r = runScalar(R"(
  mul.lo.u32 %r1, %r0, 10;
  shfl.sync.down.b32 %r2|%p1, %r1, 3, 0x181f, -1;
  shfl.sync.up.b32 %r3|%p2, %r1, 3, 0x1800, -1;
  shfl.sync.bfly.b32 %r4|%p3, %r1, 5, 0x181f, -1;
  shfl.sync.idx.b32 %r5|%p4, %r1, 2, 0x181f, -1;
  shfl.sync.idx.b32 %r6, %r1, 33, 31, -1;
  selp.u32 %r7, 1, 0, %p1;
  selp.u32 %r8, 1, 0, %p2;
)" + st32("%r2", 0) + st32("%r3", 1) +
                         st32("%r4", 2) + st32("%r5", 3) + st32("%r6", 4) + st32("%r7", 5) +
                         st32("%r8", 6),
                     7, 32);
  for (int l = 0; l < 32; ++l) {
    INFO("lane " << l);
    const uint64_t* s = &r[size_t(l) * 7];
    const int seg = l & ~7;
    const bool downOk = l + 3 < seg + 8, upOk = l - 3 >= seg;
    CHECK(s[0] == uint64_t(10 * (downOk ? l + 3 : l)));
    CHECK(s[1] == uint64_t(10 * (upOk ? l - 3 : l)));
    CHECK(s[2] == uint64_t(10 * (l ^ 5)));
    CHECK(s[3] == uint64_t(10 * (seg + 2)));
    CHECK(s[4] == 10); // lane index taken modulo 32
    CHECK(s[5] == uint64_t(downOk));
    CHECK(s[6] == uint64_t(upOk));
  }
}

TEST_CASE("vote.sync: all, any, uni, ballot over the member mask", "[sim][warp]") {
  auto r = runScalar(R"(
  setp.lt.u32 %p1, %r0, 20;
  @!%p1 bra DONE;
  activemask.b32 %r9;
  and.b32 %r1, %r0, 1;
  setp.eq.u32 %p2, %r1, 1;
  vote.sync.ballot.b32 %r2, %p2, %r9;
  vote.sync.all.pred %p3, %p1, %r9;
  vote.sync.any.pred %p4, %p2, %r9;
  vote.sync.uni.pred %p5, %p2, %r9;
  vote.sync.all.pred %p6, !%p2, %r9;
  selp.u32 %r3, 1, 0, %p3;
  selp.u32 %r4, 1, 0, %p4;
  selp.u32 %r5, 1, 0, %p5;
  selp.u32 %r6, 1, 0, %p6;
)" + st32("%r2", 0) + st32("%r3", 1) +
                         st32("%r4", 2) + st32("%r5", 3) + st32("%r6", 4) + st32("%r9", 5) +
                         "DONE:\n",
                     6, 32);
  for (int l = 0; l < 20; ++l) {
    INFO("lane " << l);
    const uint64_t* s = &r[size_t(l) * 6];
    CHECK(s[0] == 0x000AAAAAu); // odd lanes below 20
    CHECK(s[1] == 1);
    CHECK(s[2] == 1);
    CHECK(s[3] == 0);
    CHECK(s[4] == 0);
    CHECK(s[5] == 0x000FFFFFu);
  }
  CHECK(r[20 * 6] == 0); // lanes that skipped wrote nothing
}

TEST_CASE("shfl.sync waits for diverged members and runs once they arrive", "[sim][warp]") {
  // lanes 0-15 and 16-31 reach the same shfl.sync along different paths
  auto r = runScalar(R"(
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LOW;
  mul.lo.u32 %r1, %r0, 100;
  bra.uni SHFL;
LOW:
  mul.lo.u32 %r1, %r0, 2;
SHFL:
  shfl.sync.bfly.b32 %r2, %r1, 16, 31, -1;
)" + st32("%r2", 0),
                     1, 32);
  for (int l = 0; l < 32; ++l) {
    int src = l ^ 16;
    CHECK(r[l] == uint64_t(src < 16 ? src * 2 : src * 100));
  }
}

TEST_CASE("shfl.sync whose members never arrive is reported", "[sim][warp]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(32));
  const std::string body = R"(
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LOW;
  bar.sync 0;
  bra.uni DONE;
LOW:
  shfl.sync.bfly.b32 %r2, %r0, 1, 31, -1;
  bar.sync 0;
DONE:
)";
  try {
    runPtx(*dev, scalarKernel(body, 1), "t", grid1D(1, 32), {out.arg()});
    FAIL("expected a deadlock");
  } catch (const DeviceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("deadlock") && Catch::Contains("kernel 't'"));
  }
}

TEST_CASE("a lane spinning on a flag set by another lane of its warp makes progress",
          "[sim][warp]") {
  // lane 0 waits for lane 1 through shared memory; with lowest-pc-first scheduling alone
  // lane 0 would spin forever (independent thread scheduling guarantees lane 1 runs)
  auto r = runScalar(R"(
  .shared .align 4 .b8 flag[4];
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra SKIP;
  st.shared.u32 [flag], 0;
SKIP:
  bar.sync 0;
  setp.eq.u32 %p2, %r0, 1;
  @%p2 bra SETTER;
  @%p1 bra DONE;
SPIN:
  ld.volatile.shared.u32 %r1, [flag];
  setp.eq.u32 %p3, %r1, 0;
  @%p3 bra SPIN;
  bra.uni DONE;
SETTER:
  st.volatile.shared.u32 [flag], 42;
DONE:
  ld.volatile.shared.u32 %r2, [flag];
  st.global.u32 [%rd2], %r2;
)",
                     1, 2);
  CHECK(r[0] == 42);
  CHECK(r[1] == 42);
}

TEST_CASE("cvt.rn.f16x2.f32 packs two conversions", "[sim][warp]") {
  auto r = runScalar(
      "  cvt.rn.f16x2.f32 %r1, 0f3F800000, 0f40000000;\n  st.global.u32 [%rd2], %r1;\n", 1);
  CHECK(r[0] == 0x3C004000u);
}
