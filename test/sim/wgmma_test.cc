// wgmma.mma_async m64nNk16 against a host reference: the host lays A (64 x 16) and B (N x 16)
// out in shared memory as K-major or MN-major core matrices (8 rows of 16 bytes) at chosen start
// addresses, leading-dimension (K) and stride-dimension (M / N) byte offsets, and reads D back
// by the accumulator formulas (warp r of the warpgroup: rows 16 r + g, + 8; register i at
// column 8 (i / 4) + 2 t + i % 2). Also the fence / commit / wait instructions, and the errors
// for the forms the simulator refuses.
#include <catch2/catch.hpp>

#include <cstring>
#include <fmt/format.h>

#include "sim/float_convert.h"
#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {

constexpr int kShared = 40960;

/// Small integers and halves: every product and sum is exact in f16, bf16 and f32.
double valueAt(int i, int j, int salt) {
  return double(((i * 7 + j * 3 + salt) % 11) - 5) * 0.5;
}

uint64_t descriptor(uint64_t start, uint64_t lbo, uint64_t sbo, uint64_t swizzle = 0) {
  return ((start >> 4) & 0x3fff) | ((lbo >> 4) & 0x3fff) << 16 | ((sbo >> 4) & 0x3fff) << 32 |
         swizzle << 62;
}

/// An operand placed in the shared image (rows along M or N): K-major, element (row, k) at
/// start + (row / 8) * sbo + (k / 8) * lbo + (row % 8) * 16 + (k % 8) * 2; MN-major (imm-trans
/// 1), at start + (row / 8) * sbo + (k / 8) * lbo + (k % 8) * 16 + (row % 8) * 2.
struct Placement {
  uint64_t start, lbo, sbo;
  bool mnMajor = false;
  uint64_t at(int row, int k) const {
    uint64_t inside = mnMajor ? uint64_t(k % 8) * 16 + uint64_t(row % 8) * 2
                              : uint64_t(row % 8) * 16 + uint64_t(k % 8) * 2;
    return start + uint64_t(row / 8) * sbo + uint64_t(k / 8) * lbo + inside;
  }
};

struct Wgmma {
  int n = 64;
  bool bf16 = false;
  bool scaleD = true;
  int scaleA = 1, scaleB = 1;
  int threads = 128;
  std::string extra;            // text replacing the whole instruction when not empty
  std::string guard;            // a guard on the mma_async (e.g. "@%p1 ")
  uint64_t swizzle = 0;         // swizzle mode written into A's descriptor
  int64_t bStartOverride = -1;  // B's start address, when set
  bool transA = false, transB = false; // imm-trans-a / imm-trans-b
};

std::string kernel(const Wgmma& w) {
  const int regs = w.n / 2;
  std::string list, loads, stores;
  for (int i = 0; i < regs; ++i) {
    list += fmt::format("{}%f{}", i ? ", " : "", i);
    loads += fmt::format("  ld.global.f32 %f{}, [%rd11+{}];\n", i, 4 * i);
    stores += fmt::format("  st.global.f32 [%rd12+{}], %f{};\n", 4 * i, i);
  }
  const char* t = w.bf16 ? "bf16" : "f16";
  std::string mma =
      w.extra.empty()
          ? fmt::format("{}wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, %rd8, %rd9, "
                        "%p3, {}, {}, {}, {};",
                        w.guard, w.n, t, t, list, w.scaleA, w.scaleB, int(w.transA),
                        int(w.transB))
          : w.extra;
  return fmt::format(R"(.version 8.5
.target sm_90a
.address_size 64
.shared .align 16 .b8 smem[{}];
.visible .entry t(.param .u64 img, .param .u64 din, .param .u64 dout, .param .u64 da0,
                  .param .u64 da1, .param .u64 db, .param .u32 scaled, .param .u32 chunks)
{{
  .reg .pred %p<5>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<130>;
  ld.param.u64 %rd1, [img];
  ld.param.u64 %rd2, [din];
  ld.param.u64 %rd3, [dout];
  ld.param.u32 %r9, [chunks];
  mov.u32 %r1, %tid.x;
  mov.u32 %r10, %ntid.x;
  mov.u32 %r2, %r1;
$copy:
  setp.ge.u32 %p1, %r2, %r9;
  @%p1 bra $copied;
  mul.wide.u32 %rd4, %r2, 16;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.v4.u32 {{%r3, %r4, %r5, %r6}}, [%rd5];
  cvt.u32.u64 %r7, %rd4;
  mov.u32 %r8, smem;
  add.s32 %r8, %r8, %r7;
  st.shared.v4.u32 [%r8], {{%r3, %r4, %r5, %r6}};
  add.s32 %r2, %r2, %r10;
  bra.uni $copy;
$copied:
  bar.sync 0;
  shr.u32 %r11, %r1, 7;
  setp.eq.u32 %p2, %r11, 0;
  ld.param.u64 %rd6, [da0];
  ld.param.u64 %rd7, [da1];
  selp.b64 %rd8, %rd6, %rd7, %p2;
  ld.param.u64 %rd9, [db];
  ld.param.u32 %r12, [scaled];
  setp.ne.u32 %p3, %r12, 0;
  setp.lt.u32 %p4, %r1, 16;
  mul.wide.u32 %rd10, %r1, {};
  add.s64 %rd11, %rd2, %rd10;
{}  wgmma.fence.sync.aligned;
  {}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  add.s64 %rd12, %rd3, %rd10;
{}  ret;
}}
)",
                     kShared, 4 * regs, loads, mma, stores);
}

struct Result {
  std::vector<float> d;
  LaunchCounters counters;
};

/// Runs the kernel with A of warpgroup g at `a[g]`, B at `b`, D's initial values `d0`
/// (per thread, N / 2 each, in register order); fills the shared image from the matrices.
Result run(const Wgmma& w, const std::vector<Placement>& a, const Placement& b,
           const std::vector<std::vector<double>>& A, const std::vector<double>& B,
           const std::vector<float>& d0) {
  std::vector<uint8_t> image(kShared, 0);
  auto put = [&](uint64_t at, double v) {
    uint16_t bits = w.bf16 ? sim::toBF16(v) : sim::toHalf(v);
    REQUIRE(at + 2 <= image.size());
    std::memcpy(image.data() + at, &bits, 2);
  };
  for (size_t g = 0; g < a.size(); ++g)
    for (int row = 0; row < 64; ++row)
      for (int k = 0; k < 16; ++k)
        put(a[g].at(row, k), A[g][size_t(row * 16 + k)]);
  for (int col = 0; col < w.n; ++col)
    for (int k = 0; k < 16; ++k)
      put(b.at(col, k), B[size_t(col * 16 + k)]);
  std::vector<uint32_t> words(image.size() / 4);
  std::memcpy(words.data(), image.data(), image.size());
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> img(*dev, words);
  Buffer<float> din(*dev, d0);
  Buffer<float> dout(*dev, d0.size());
  const uint64_t da0 = descriptor(a[0].start, a[0].lbo, a[0].sbo, w.swizzle);
  const uint64_t da1 = a.size() > 1 ? descriptor(a[1].start, a[1].lbo, a[1].sbo, w.swizzle) : da0;
  const uint64_t db = descriptor(w.bStartOverride >= 0 ? uint64_t(w.bStartOverride) : b.start,
                                 b.lbo, b.sbo);
  auto c = runPtx(*dev, kernel(w), "t", grid1D(1, uint32_t(w.threads)),
                  {img.arg(), din.arg(), dout.arg(), KernelArg::of<uint64_t>(da0), KernelArg::of<uint64_t>(da1),
                   KernelArg::of<uint64_t>(db), KernelArg::of<uint32_t>(w.scaleD ? 1 : 0),
                   KernelArg::of<uint32_t>(uint32_t(kShared / 16))});
  return {dout.get(), c};
}

/// Lays out A (one per warpgroup) and B, runs, and checks every accumulator of every thread.
void check(const Wgmma& w, const std::vector<Placement>& a, const Placement& b) {
  const int regs = w.n / 2;
  std::vector<std::vector<double>> A(a.size(), std::vector<double>(64 * 16));
  for (size_t g = 0; g < a.size(); ++g)
    for (int row = 0; row < 64; ++row)
      for (int k = 0; k < 16; ++k)
        A[g][size_t(row * 16 + k)] = valueAt(row, k, 1 + int(g));
  std::vector<double> B(size_t(w.n) * 16);
  for (int col = 0; col < w.n; ++col)
    for (int k = 0; k < 16; ++k)
      B[size_t(col * 16 + k)] = valueAt(k, col, 5);
  std::vector<float> d0(size_t(w.threads) * size_t(regs));
  for (size_t i = 0; i < d0.size(); ++i)
    d0[i] = w.scaleD ? float(valueAt(int(i % 97), int(i / 97), 2) * 4) : std::nanf("");
  Result r = run(w, a, b, A, B, d0);
  for (int tid = 0; tid < w.threads; ++tid) {
    const int g = (tid & 31) >> 2, t = tid & 3, warp = (tid >> 5) & 3, group = tid >> 7;
    for (int i = 0; i < regs; ++i) {
      const int row = warp * 16 + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
      const size_t at = size_t(tid * regs + i);
      double want = w.scaleD ? double(d0[at]) : 0.0;
      for (int k = 0; k < 16; ++k)
        want += w.scaleA * A[size_t(group)][size_t(row * 16 + k)] * w.scaleB *
                B[size_t(col * 16 + k)];
      INFO(fmt::format("thread {} d{} = D[{}][{}] of warpgroup {}", tid, i, row, col, group));
      REQUIRE(r.d[at] == float(want));
    }
  }
  // per thread: the copy loop, then 17 + 2 * (N / 2) around the wgmma; one shared load per warp
  CHECK(r.counters.sharedLoads == uint64_t(w.threads / 32));
}

} // namespace

TEST_CASE("wgmma.mma_async m64nNk16 f16: D = A B + D from K-major core matrices",
          "[sim][tensor][wgmma]") {
  for (int n : {8, 16, 64, 128, 256}) {
    INFO("N " << n);
    Wgmma w;
    w.n = n;
    // A: core matrices adjacent along K (LBO 128), 8-row groups 256 bytes apart; B: K halves
    // far apart (LBO past all of N), 8-column groups 144 bytes apart (16 bytes of padding)
    Placement a{0x100, 128, 256};
    Placement b{0x2000, uint64_t(n / 8) * 144 + 64, 144};
    check(w, {a}, b);
  }
}

TEST_CASE("wgmma.mma_async bf16: scale-d false ignores D, imm-scale -1 negates A or B",
          "[sim][tensor][wgmma]") {
  for (int n : {64, 128}) {
    INFO("N " << n);
    Wgmma w;
    w.n = n;
    w.bf16 = true;
    w.scaleD = false;
    w.scaleA = -1;
    Placement a{0x40, 2048, 128};
    Placement b{0x1000, 128, 256};
    check(w, {a}, b);
    w.scaleA = 1;
    w.scaleB = -1;
    w.scaleD = true;
    check(w, {a}, b);
  }
}

TEST_CASE("wgmma.mma_async with two warpgroups: each reads A through its own descriptor",
          "[sim][tensor][wgmma]") {
  Wgmma w;
  w.n = 128;
  w.threads = 256;
  Placement a0{0, 128, 256}, a1{0x800, 128, 256};
  Placement b{0x1800, 128, 256};
  check(w, {a0, a1}, b);
}

TEST_CASE("wgmma.mma_async imm-trans 1: M-major A and N-major B core matrices",
          "[sim][tensor][wgmma]") {
  for (bool bf16 : {false, true})
    for (int n : {8, 64, 128, 256})
      for (auto [ta, tb] : {std::pair{true, false}, {false, true}, {true, true}}) {
        INFO("bf16 " << bf16 << " N " << n << " trans-a " << ta << " trans-b " << tb);
        Wgmma w;
        w.n = n;
        w.bf16 = bf16;
        w.transA = ta;
        w.transB = tb;
        // MN-major: 8-row groups 128 bytes apart (SBO), the two K halves 1024 + 64 apart (LBO)
        Placement a = ta ? Placement{0x100, 1088, 128, true} : Placement{0x100, 128, 256};
        Placement b = tb ? Placement{0x2000, uint64_t(n / 8) * 128 + 32, 128, true}
                         : Placement{0x2000, 128, 256};
        check(w, {a}, b);
      }
}

TEST_CASE("wgmma.mma_async refuses what it does not run, naming it", "[sim][tensor][wgmma]") {
  auto dev = makeSimDevice(h100());
  Placement a{0x100, 128, 256}, b{0x2000, 128, 256};
  std::vector<std::vector<double>> A(1, std::vector<double>(64 * 16, 1.0));
  std::vector<double> B(64 * 16, 1.0);
  std::vector<float> d0(128 * 32, 0.f);
  SECTION("a swizzled layout") {
    Wgmma w;
    w.swizzle = 1;
    REQUIRE_THROWS_WITH(run(w, {a}, b, A, B, d0),
                        Catch::Contains("the A descriptor asks for the 128-byte swizzle mode; "
                                        "only no-swizzle"));
  }
  SECTION("a descriptor past the block's shared memory") {
    Wgmma w;
    w.bStartOverride = kShared - 256;
    REQUIRE_THROWS_WITH(run(w, {a}, b, A, B, d0),
                        Catch::Contains("is past the block's 40960 bytes of shared memory"));
  }
  SECTION("a block that is not whole warpgroups") {
    Wgmma w;
    w.threads = 96;
    std::vector<float> d96(96 * 32, 0.f);
    REQUIRE_THROWS_WITH(run(w, {a}, b, A, B, d96),
                        Catch::Contains("needs whole warpgroups (128 threads), but the block has "
                                        "96 threads"));
  }
  SECTION("part of a warp") {
    Wgmma w;
    w.guard = "@%p4 ";
    REQUIRE_THROWS_WITH(run(w, {a}, b, A, B, d0),
                        Catch::Contains("needs all 32 lanes of each warp of the warpgroup"));
  }
  SECTION("descriptors that differ inside a warpgroup") {
    Wgmma w;
    w.threads = 128;
    // warpgroup 0 reads da0, but a second descriptor in the same group: select on the lane
    w.extra = "setp.lt.u32 %p2, %r1, 64;\n  selp.b64 %rd8, %rd6, %rd7, %p2;\n"
              "  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" +
              [] {
                std::string s;
                for (int i = 0; i < 32; ++i)
                  s += fmt::format("{}%f{}", i ? ", " : "", i);
                return s;
              }() +
              "}, %rd8, %rd9, %p3, 1, 1, 0, 0;";
    Placement a1{0x800, 128, 256};
    std::vector<std::vector<double>> A2(2, A[0]);
    REQUIRE_THROWS_WITH(run(w, {a, a1}, b, A2, B, d0),
                        Catch::Contains("the A descriptor differs across the warpgroup"));
  }
  auto accumulators = [] {
    std::string s;
    for (int i = 0; i < 32; ++i)
      s += fmt::format("{}%f{}", i ? ", " : "", i);
    return s;
  };
  SECTION("warps of a warpgroup at different wgmma instructions") {
    Wgmma w;
    const std::string mma = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" +
                            accumulators() + "}, %rd8, %rd9, %p3, 1, 1, 0, 0;";
    w.extra = "setp.lt.u32 %p2, %r1, 32;\n  @%p2 bra $second;\n  " + mma +
              "\n  bra.uni $after;\n$second:\n  " + mma + "\n$after:";
    REQUIRE_THROWS_WITH(run(w, {a}, b, A, B, d0),
                        Catch::Contains("execute different wgmma.mma_async instructions"));
  }
  SECTION("a warp that leaves before its warpgroup's wgmma") {
    Wgmma w;
    w.extra = "setp.ge.u32 %p2, %r1, 96;\n  @%p2 ret;\n  "
              "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" +
              accumulators() + "}, %rd8, %rd9, %p3, 1, 1, 0, 0;";
    REQUIRE_THROWS_WITH(run(w, {a}, b, A, B, d0),
                        Catch::Contains("deadlock") && Catch::Contains("wgmma.mma_async"));
  }
  SECTION("other shapes, imm-trans values and A in registers are refused at load") {
    std::string t = kernel(Wgmma{});
    std::string trans = t;
    trans.replace(trans.find("1, 1, 0, 0;"), 11, "1, 1, 0, 2;");
    REQUIRE_THROWS_WITH(dev->loadModule(trans),
                        Catch::Contains("imm-trans-b must be an immediate 0 or 1"));
    std::string registers = t;
    registers.replace(registers.find("%rd8, %rd9, %p3, 1, 1, 0, 0;"), 28,
                      "{%r1, %r2, %r3, %r4}, %rd9, %p3, 1, 1, 0;");
    REQUIRE_THROWS_WITH(dev->loadModule(registers),
                        Catch::Contains("with A in registers is not supported"));
    std::string shape = t;
    shape.replace(shape.find("m64n64k16"), 9, "m64n60k16");
    REQUIRE_THROWS_WITH(dev->loadModule(shape),
                        Catch::Contains("only wgmma.mma_async.sync.aligned.m64nNk16"));
  }
}
