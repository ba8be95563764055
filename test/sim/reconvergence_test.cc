// Reconvergence at the immediate post-dominator: where the analysis puts each branch's
// reconvergence point, and what a warp that diverged does after it (requests, active masks,
// barrier arrivals). The kernels lay their join out before the divergent code, as LLVM does
// with a loop's latch, so that lowest-pc-first scheduling alone would not reconverge them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/ptx_parser.h"
#include "sim_test_util.h"

using namespace weft;
using namespace weft::sim;
using namespace weft::sim::test;

namespace {

/// 1-based line of the first line of `ptx` that contains `text`.
uint32_t lineOf(const std::string& ptx, const std::string& text) {
  const size_t at = ptx.find(text);
  REQUIRE(at != std::string::npos);
  uint32_t line = 1;
  for (size_t i = 0; i < at; ++i)
    line += ptx[i] == '\n';
  return line;
}

/// The PTX line of the instruction where the branch on the line containing `branch`
/// reconverges, or 0 when it does not.
uint32_t reconvergenceLine(const Program& p, const std::string& ptx, const std::string& branch) {
  const uint32_t line = lineOf(ptx, branch);
  for (const Instr& in : p.code)
    if (in.line == line && in.op == Op::Bra)
      return in.reconvergePc == kNoReconvergence ? 0 : p.code[in.reconvergePc].line;
  FAIL("no branch at line " << line);
  return 0;
}

/// A kernel k(x, y, m, iters) whose body is `body`. Registers: %r2 = tid.x, %r3 = ntid.x,
/// %r1 = iters, %r4 = 0 (the iteration), %rd1-3 = x, y, m. The snippet kAddresses sets
/// %rd5 = &x[e], %rd6 = &y[e] (f32) and %rd7 = &m[2e] (u32) for e = %r4 * ntid + tid.
std::string loopKernel(const std::string& body, const std::string& decls = "") {
  return ".version 8.5\n.target sm_80\n.address_size 64\n" + decls +
         R"(
.visible .entry k(.param .u64 k_x, .param .u64 k_y, .param .u64 k_m, .param .u32 k_iters)
{
  .reg .pred %p<8>;
  .reg .b32 %r<24>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [k_x];
  ld.param.u64 %rd2, [k_y];
  ld.param.u64 %rd3, [k_m];
  ld.param.u32 %r1, [k_iters];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, 0;
)" + body +
         "}\n";
}

const std::string kAddresses = R"(
  mad.lo.u32 %r5, %r4, %r3, %r2;
  mul.wide.u32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  mul.wide.u32 %rd8, %r5, 8;
  add.s64 %rd7, %rd3, %rd8;
)";

/// The loop's join and latch, laid out before the loop's first block HEAD: stores %f2 to
/// y[e] and the active mask to m[2e], then loops while %r4 < iters.
const std::string kJoinAndLatch = R"(
  bra.uni HEAD;
JOIN:
  activemask.b32 %r9;
  st.global.f32 [%rd6], %f2;
  st.global.u32 [%rd7], %r9;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p1, %r4, %r1;
  @%p1 bra HEAD;
DONE:
  ret;
HEAD:
)";

struct LoopRun {
  std::vector<float> y;
  std::vector<uint32_t> m;
  LaunchCounters c;
};

LoopRun runLoop(const std::string& ptx, const std::vector<float>& x, uint32_t threads,
                uint32_t iters) {
  auto dev = makeSimDevice(h100());
  Buffer<float> X(*dev, x), Y(*dev, x.size());
  Buffer<uint32_t> M(*dev, 2 * x.size());
  LoopRun r;
  r.c =
      runPtx(*dev, ptx, "k", grid1D(1, threads), {X.arg(), Y.arg(), M.arg(), KernelArg::of(iters)});
  r.y = Y.get();
  r.m = M.get();
  return r;
}

/// The lanes of t's warp for which `in` holds.
template <class Pred> uint32_t warpMask(uint32_t t, Pred&& in) {
  uint32_t mask = 0;
  for (uint32_t lane = 0; lane < 32; ++lane)
    if (in(t / 32 * 32 + lane)) mask |= 1u << lane;
  return mask;
}

} // namespace

TEST_CASE("reconvergence points are the branches' immediate post-dominators",
          "[sim][reconvergence]") {
  SECTION("an if-else in a loop, its join laid out before it") {
    const std::string ptx = loopKernel(kJoinAndLatch + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  setp.lt.f32 %p2, %f1, 0f00000000;
  @%p2 bra NEG;
  setp.gt.f32 %p3, %f1, 0f3F800000;
  @%p3 bra BIG;
  mov.f32 %f2, %f1;
NONNEG:
  bra.uni JOIN;
NEG:
  neg.f32 %f2, %f1;
  bra.uni JOIN;
BIG:
  add.f32 %f2, %f1, %f1;
  bra.uni NONNEG;
)");
    Program p = parse(ptx);
    CHECK(reconvergenceLine(p, ptx, "@%p2 bra NEG") == lineOf(ptx, "JOIN:") + 1);
    CHECK(reconvergenceLine(p, ptx, "@%p3 bra BIG") == lineOf(ptx, "NONNEG:") + 1);
    // the loop's exit: the thread ends, there is nothing to reconverge at
    CHECK(reconvergenceLine(p, ptx, "@%p1 bra HEAD") == 0);
  }
  SECTION("a loop exit laid out before the loop") {
    const std::string ptx = loopKernel(R"(
  bra.uni HEAD;
AFTER:
  st.global.f32 [%rd2], %f1;
  ret;
HEAD:
  add.u32 %r4, %r4, 1;
  setp.ge.u32 %p1, %r4, %r2;
  @%p1 bra AFTER;
  bra.uni HEAD;
)");
    Program p = parse(ptx);
    CHECK(reconvergenceLine(p, ptx, "@%p1 bra AFTER") == lineOf(ptx, "AFTER:") + 1);
  }
  SECTION("an early return from one side does not move the join") {
    const std::string ptx = loopKernel(kJoinAndLatch + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  setp.lt.f32 %p2, %f1, 0f00000000;
  @!%p2 bra JOIN;
  setp.lt.f32 %p4, %f1, 0fC1000000;
  @%p4 bra DONE;
  neg.f32 %f2, %f1;
  bra.uni JOIN;
)");
    Program p = parse(ptx);
    CHECK(reconvergenceLine(p, ptx, "@!%p2 bra JOIN") == lineOf(ptx, "JOIN:") + 1);
  }
  SECTION("sides that end in different rets of a .func, and a side that never ends") {
    const std::string ptx = R"(.version 8.5
.target sm_80
.address_size 64
.visible .func (.param .b32 f_r) f(.param .b32 f_a)
{
  .reg .pred %p<4>;
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [f_a];
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra LOW;
  st.param.b32 [f_r], %r1;
  ret;
LOW:
  setp.eq.u32 %p2, %r1, 3;
  @%p2 bra FOREVER;
  st.param.b32 [f_r], 0;
  ret;
FOREVER:
  bra.uni FOREVER;
}
)";
    Program p = parse(ptx);
    CHECK(reconvergenceLine(p, ptx, "@%p1 bra LOW") == 0);
    CHECK(reconvergenceLine(p, ptx, "@%p2 bra FOREVER") == 0);
  }
}

TEST_CASE("an if-else inside a loop reconverges at its join every iteration",
          "[sim][reconvergence]") {
  const uint32_t threads = 64, iters = 6;
  const std::string ptx = loopKernel(kJoinAndLatch + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  setp.lt.f32 %p2, %f1, 0f00000000;
  add.f32 %f2, %f1, %f1;
  @!%p2 bra JOIN;
  neg.f32 %f2, %f1;
  bra.uni JOIN;
)");
  // a third of each warp takes the other side, different lanes each iteration
  std::vector<float> x(threads * iters);
  for (uint32_t e = 0; e < x.size(); ++e) {
    const uint32_t i = e / threads, lane = e % 32;
    x[e] = (lane + i) % 3 == 0 ? -float(1 + e % 5) : float(1 + e % 7);
  }
  LoopRun r = runLoop(ptx, x, threads, iters);
  for (uint32_t e = 0; e < x.size(); ++e) {
    INFO("element " << e);
    CHECK(r.y[e] == (x[e] < 0 ? -x[e] : 2 * x[e]));
    CHECK(r.m[2 * e] == 0xFFFFFFFFu);
  }
  // as many requests as without divergence: one per warp and iteration for each access
  const uint64_t warps = threads / 32;
  CHECK(r.c.globalLoadRequests == warps * iters);
  CHECK(r.c.globalStoreRequests == 2 * warps * iters);
  CHECK(r.c.globalSectorsRead == 4 * warps * iters);
}

TEST_CASE("nested divergence reconverges at the inner join, then at the outer one",
          "[sim][reconvergence]") {
  const uint32_t threads = 64, iters = 6;
  const std::string ptx = loopKernel(kJoinAndLatch + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  setp.lt.f32 %p2, %f1, 0f00000000;
  @%p2 bra NEG;
  setp.gt.f32 %p3, %f1, 0f3F800000;
  @%p3 bra BIG;
  mov.f32 %f2, %f1;
NONNEG:
  activemask.b32 %r10;
  st.global.u32 [%rd7+4], %r10;
  bra.uni JOIN;
NEG:
  neg.f32 %f2, %f1;
  bra.uni JOIN;
BIG:
  add.f32 %f2, %f1, %f1;
  bra.uni NONNEG;
)");
  // three classes per warp, rotating over the lanes: negative, in [0, 1], above 1
  auto classOf = [&](uint32_t e) { return (e % 32 + e / threads) % 3; };
  std::vector<float> x(threads * iters);
  for (uint32_t e = 0; e < x.size(); ++e)
    x[e] = classOf(e) == 0 ? -float(1 + e % 5) : classOf(e) == 1 ? 0.5f : float(2 + e % 3);
  LoopRun r = runLoop(ptx, x, threads, iters);
  for (uint32_t e = 0; e < x.size(); ++e) {
    INFO("element " << e);
    const uint32_t i = e / threads, t = e % threads;
    CHECK(r.y[e] == (x[e] < 0 ? -x[e] : x[e] > 1 ? 2 * x[e] : x[e]));
    CHECK(r.m[2 * e] == 0xFFFFFFFFu);
    const uint32_t nonNegative = warpMask(t, [&](uint32_t u) { return x[i * threads + u] >= 0; });
    CHECK(r.m[2 * e + 1] == (x[e] >= 0 ? nonNegative : 0u));
  }
  const uint64_t warps = threads / 32;
  CHECK(r.c.globalLoadRequests == warps * iters);
  CHECK(r.c.globalStoreRequests == 3 * warps * iters);
}

TEST_CASE("threads that return early inside a divergent branch leave the others reconverged",
          "[sim][reconvergence]") {
  const uint32_t threads = 64, iters = 6;
  // the early return as a branch to the kernel's ret (LLVM's form) and as a guarded ret
  const std::string branchToRet = R"(
  @%p4 bra DONE;
)",
                    guardedRet = R"(
  @%p4 ret;
)";
  for (const std::string& earlyReturn : {branchToRet, guardedRet}) {
    INFO(earlyReturn);
    const std::string ptx = loopKernel(kJoinAndLatch + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  setp.lt.f32 %p2, %f1, 0f00000000;
  add.f32 %f2, %f1, %f1;
  @!%p2 bra JOIN;
  setp.lt.f32 %p4, %f1, 0fC1000000;
)" + earlyReturn + R"(
  neg.f32 %f2, %f1;
  bra.uni JOIN;
)");
    // negative on a rotating third of the lanes; below -8 (return) for even lanes at i = 2
    std::vector<float> x(threads * iters);
    for (uint32_t e = 0; e < x.size(); ++e) {
      const uint32_t i = e / threads, lane = e % 32;
      const bool negative = (lane + i) % 3 == 0;
      x[e] = !negative ? float(1 + e % 7) : i == 2 && lane % 2 == 0 ? -10.0f : -float(1 + e % 5);
    }
    LoopRun r = runLoop(ptx, x, threads, iters);
    std::vector<bool> alive(threads, true);
    uint64_t loads = 0, stores = 0;
    for (uint32_t i = 0; i < iters; ++i) {
      for (uint32_t w = 0; w < threads / 32; ++w)
        if (warpMask(w * 32, [&](uint32_t u) { return bool(alive[u]); })) ++loads;
      for (uint32_t t = 0; t < threads; ++t)
        if (alive[t] && x[i * threads + t] < -8) alive[t] = false;
      for (uint32_t w = 0; w < threads / 32; ++w)
        if (warpMask(w * 32, [&](uint32_t u) { return bool(alive[u]); })) stores += 2;
      for (uint32_t t = 0; t < threads; ++t) {
        INFO("iteration " << i << ", thread " << t);
        const uint32_t e = i * threads + t;
        if (!alive[t]) {
          CHECK(r.m[2 * e] == 0); // returned: stored nothing
          continue;
        }
        CHECK(r.y[e] == (x[e] < 0 ? -x[e] : 2 * x[e]));
        CHECK(r.m[2 * e] == warpMask(t, [&](uint32_t u) { return bool(alive[u]); }));
      }
    }
    CHECK(r.c.globalLoadRequests == loads);
    CHECK(r.c.globalStoreRequests == stores);
  }
}

TEST_CASE("a loop whose trip count differs per lane reconverges at its exit",
          "[sim][reconvergence]") {
  const uint32_t threads = 64, iters = 4;
  // trip count tid % 4 + 1; the code after the loop is laid out before it
  const std::string ptx = loopKernel(R"(
  mov.f32 %f3, 0f00000000;
  and.b32 %r11, %r2, 3;
  add.u32 %r11, %r11, 1;
  bra.uni HEAD;
AFTER:
  activemask.b32 %r9;
  mul.wide.u32 %rd9, %r2, 4;
  add.s64 %rd10, %rd2, %rd9;
  st.global.f32 [%rd10], %f3;
  mul.wide.u32 %rd11, %r2, 8;
  add.s64 %rd12, %rd3, %rd11;
  st.global.u32 [%rd12], %r9;
  ret;
HEAD:
)" + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  add.f32 %f3, %f3, %f1;
  add.u32 %r4, %r4, 1;
  setp.ge.u32 %p1, %r4, %r11;
  @%p1 bra AFTER;
  bra.uni HEAD;
)");
  std::vector<float> x(threads * iters);
  for (uint32_t e = 0; e < x.size(); ++e)
    x[e] = float(e % 13);
  LoopRun r = runLoop(ptx, x, threads, iters);
  for (uint32_t t = 0; t < threads; ++t) {
    INFO("thread " << t);
    float sum = 0;
    for (uint32_t i = 0; i < t % 4 + 1; ++i)
      sum += x[i * threads + t];
    CHECK(r.y[t] == sum);
    CHECK(r.m[2 * t] == 0xFFFFFFFFu);
  }
  const uint64_t warps = threads / 32;
  CHECK(r.c.globalLoadRequests == warps * iters); // the longest trip count
  CHECK(r.c.globalStoreRequests == 2 * warps);    // once, after the loop
}

TEST_CASE("bar.sync after a reconverged branch: each warp arrives and exchanges once",
          "[sim][reconvergence]") {
  const uint32_t threads = 64, iters = 4;
  // after the join every thread publishes its value in shared memory and, behind bar.sync,
  // takes the value of thread tid + 32 (the other warp)
  const std::string ptx = loopKernel(R"(
  mov.u64 %rd9, buf;
  mul.wide.u32 %rd10, %r2, 4;
  add.s64 %rd11, %rd9, %rd10;
  add.u32 %r12, %r2, 32;
  rem.u32 %r12, %r12, %r3;
  mul.wide.u32 %rd12, %r12, 4;
  add.s64 %rd13, %rd9, %rd12;
  bra.uni HEAD;
JOIN:
  activemask.b32 %r9;
  st.shared.f32 [%rd11], %f2;
  bar.sync 0;
  ld.shared.f32 %f4, [%rd13];
  bar.sync 0;
  st.global.f32 [%rd6], %f4;
  st.global.u32 [%rd7], %r9;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p1, %r4, %r1;
  @%p1 bra HEAD;
  ret;
HEAD:
)" + kAddresses + R"(
  ld.global.f32 %f1, [%rd5];
  setp.lt.f32 %p2, %f1, 0f00000000;
  add.f32 %f2, %f1, %f1;
  @!%p2 bra JOIN;
  neg.f32 %f2, %f1;
  bra.uni JOIN;
)",
                                     ".shared .align 4 .f32 buf[64];\n");
  std::vector<float> x(threads * iters);
  for (uint32_t e = 0; e < x.size(); ++e)
    x[e] = (e % 32 + e / threads) % 3 == 0 ? -float(1 + e % 5) : float(1 + e % 7);
  LoopRun r = runLoop(ptx, x, threads, iters);
  for (uint32_t e = 0; e < x.size(); ++e) {
    INFO("element " << e);
    const uint32_t i = e / threads, t = e % threads;
    const float other = x[i * threads + (t + 32) % threads];
    CHECK(r.y[e] == (other < 0 ? -other : 2 * other));
    CHECK(r.m[2 * e] == 0xFFFFFFFFu);
  }
  const uint64_t warps = threads / 32;
  CHECK(r.c.blockBarriers == 2 * iters);
  CHECK(r.c.sharedStores == warps * iters);
  CHECK(r.c.sharedLoads == warps * iters);
  CHECK(r.c.globalStoreRequests == 2 * warps * iters);
}

TEST_CASE("bar.sync on both sides of a divergent branch completes with the whole block",
          "[sim][reconvergence]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(2 * 32));
  // lanes 0-15 and 16-31 meet at different bar.sync instructions (bar.sync counts threads)
  const std::string body = R"(
  mul.wide.u32 %rd3, %r0, 4;
  mov.u64 %rd4, buf;
  add.s64 %rd5, %rd4, %rd3;
  xor.b32 %r4, %r0, 16;
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd4, %rd6;
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LOW;
  mul.lo.u32 %r1, %r0, 100;
  st.shared.u32 [%rd5], %r1;
  bar.sync 0;
  ld.shared.u32 %r2, [%rd7];
  bra.uni JOIN;
LOW:
  mul.lo.u32 %r1, %r0, 2;
  st.shared.u32 [%rd5], %r1;
  bar.sync 0;
  ld.shared.u32 %r2, [%rd7];
JOIN:
  activemask.b32 %r3;
  st.global.u32 [%rd2], %r2;
  st.global.u32 [%rd2+8], %r3;
)";
  auto c = runPtx(*dev, scalarKernel(body, 2, ".shared .align 4 .u32 buf[32];\n"), "t",
                  grid1D(1, 32), {out.arg()});
  auto o = out.get();
  for (uint32_t l = 0; l < 32; ++l) {
    const uint32_t src = l ^ 16;
    CHECK(o[2 * l] == (src < 16 ? src * 2 : src * 100));
    CHECK(o[2 * l + 1] == 0xFFFFFFFFu);
  }
  CHECK(c.blockBarriers == 1);
  CHECK(c.globalStoreRequests == 2);
}

TEST_CASE("a barrier that needs the lanes waiting at a reconvergence point completes",
          "[sim][reconvergence]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(32));
  // lanes 0-15 wait at a bar.sync inside the branch for lanes 16-31, which wait for them at
  // the join: the join gives way (its bar.sync completes the first barrier, as on the GPU)
  const std::string body = R"(
  setp.lt.u32 %p1, %r0, 16;
  @!%p1 bra JOIN;
  bar.sync 0;
JOIN:
  bar.sync 0;
  st.global.u32 [%rd2], %r0;
)";
  auto c = runPtx(*dev, scalarKernel(body, 1), "t", grid1D(1, 32), {out.arg()});
  auto o = out.get();
  for (uint32_t l = 0; l < 32; ++l)
    CHECK(o[l] == l);
  CHECK(c.blockBarriers == 2);
}

TEST_CASE("threads that return from a call at different times go on together",
          "[sim][reconvergence]") {
  auto dev = makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(2 * 32));
  // f returns through two rets; it is defined after the kernel, so its code lies above it
  const std::string decls = ".func (.param .b32 f_r) f(.param .b32 f_a);\n";
  const std::string body = R"(
  {
  .param .b32 param0;
  st.param.b32 [param0+0], %r0;
  .param .b32 retval0;
  call.uni (retval0), f, (param0);
  ld.param.b32 %r1, [retval0+0];
  }
  activemask.b32 %r2;
  st.global.u32 [%rd2], %r1;
  st.global.u32 [%rd2+8], %r2;
)";
  const std::string f = R"(
.func (.param .b32 f_r) f(.param .b32 f_a)
{
  .reg .pred %q<2>;
  .reg .b32 %s<4>;
  ld.param.u32 %s1, [f_a];
  setp.lt.u32 %q1, %s1, 16;
  @%q1 bra LOW;
  mul.lo.u32 %s2, %s1, 3;
  st.param.b32 [f_r], %s2;
  ret;
LOW:
  add.u32 %s2, %s1, 100;
  st.param.b32 [f_r], %s2;
  ret;
}
)";
  auto c = runPtx(*dev, scalarKernel(body, 2, decls) + f, "t", grid1D(1, 32), {out.arg()});
  auto o = out.get();
  for (uint32_t l = 0; l < 32; ++l) {
    CHECK(o[2 * l] == (l < 16 ? l + 100 : 3 * l));
    CHECK(o[2 * l + 1] == 0xFFFFFFFFu);
  }
  CHECK(c.globalStoreRequests == 2);
}
