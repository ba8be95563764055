// Tensor-core and async-copy instructions against scalar references: mma.sync m16n8k16 for
// f16 and bf16 (fragments laid out by the PTX ISA's formulas, written out here on the host),
// ldmatrix m8n8 x1/x2/x4 with and without .trans, cp.async with zero-fill and its groups.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "sim/float_convert.h"
#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {

const char* kHeader = ".version 8.5\n.target sm_80\n.address_size 64\n";

/// Small integers and halves: every product and sum is exact in f16, bf16 and f32, so the
/// reference is exact and any layout mistake shows.
double valueAt(int i, int j, int salt) {
  return double(((i * 7 + j * 3 + salt) % 9) - 4) * 0.5;
}

uint16_t encode(double v, bool bf16) {
  return bf16 ? sim::toBF16(v) : sim::toHalf(v);
}

/// One warp runs `instruction` (an mma.sync with f32 accumulators, m16n8), each lane loading
/// its fragments from `frags` (12 words per lane: a0..a3, b0..b1, c0..c3, two of padding) and
/// storing d0..d3; CHECKs every element of D against the exact A B + C, gathered by the
/// accumulator formulas.
template <int K>
void runMma(const std::string& instruction, const std::vector<uint32_t>& frags,
            const double (&A)[16][K], const double (&B)[K][8], const double (&C)[16][8]) {
  std::string ptx = std::string(kHeader) + R"(
.visible .entry t(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<24>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 48;
  add.s64 %rd3, %rd0, %rd2;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd3];
  ld.global.v2.u32 {%r5, %r6}, [%rd3+16];
  ld.global.f32 %f0, [%rd3+24];
  ld.global.f32 %f1, [%rd3+28];
  ld.global.f32 %f2, [%rd3+32];
  ld.global.f32 %f3, [%rd3+36];
  )" + instruction + R"( {%f4, %f5, %f6, %f7}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f0, %f1, %f2, %f3};
  mul.wide.u32 %rd4, %r0, 16;
  add.s64 %rd5, %rd1, %rd4;
  st.global.v4.f32 [%rd5], {%f4, %f5, %f6, %f7};
  ret;
}
)";
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> in(*dev, frags);
  Buffer<float> out(*dev, size_t(32 * 4));
  auto c = runPtx(*dev, ptx, "t", grid1D(1, 32), {in.arg(), out.arg()});
  auto d = out.get();
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i) {
      int row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
      double want = C[row][col];
      for (int k = 0; k < K; ++k)
        want += A[row][k] * B[k][col];
      INFO("lane " << l << " d" << i << " = D[" << row << "][" << col << "]");
      CHECK(d[size_t(l * 4 + i)] == float(want));
    }
  }
  CHECK(c.warpInstructions == 16); // 15 around it, one mma for the warp
}

/// Runs one mma.sync.m16n8k16 whose lanes load their fragments from arrays the host laid out
/// by the PTX ISA's fragment formulas, and checks D (runMma).
void checkMma(bool bf16) {
  double A[16][16], B[16][8], C[16][8];
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k)
      A[i][k] = valueAt(i, k, 1);
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 8; ++j)
      B[k][j] = valueAt(k, j, 5);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      C[i][j] = valueAt(i, j, 2) * 4;
  // per lane: a0..a3, b0..b1 (two halves each), c0..c3 (f32 bits), two words of padding
  std::vector<uint32_t> frags(32 * 12);
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < 8; ++i) {
      int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      frags[size_t(l * 12 + i / 2)] |= uint32_t(encode(A[row][col], bf16)) << (16 * (i & 1));
    }
    for (int i = 0; i < 4; ++i) {
      int row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
      frags[size_t(l * 12 + 4 + i / 2)] |= uint32_t(encode(B[row][g], bf16)) << (16 * (i & 1));
    }
    for (int i = 0; i < 4; ++i)
      frags[size_t(l * 12 + 6 + i)] = uint32_t(fbits(float(C[g + (i >= 2 ? 8 : 0)][t * 2 + (i & 1)])));
  }
  std::string type = bf16 ? "bf16" : "f16";
  runMma("mma.sync.aligned.m16n8k16.row.col.f32." + type + "." + type + ".f32", frags, A, B, C);
}

} // namespace

TEST_CASE("mma.sync m16n8k16 f16 x f16 + f32: D = A B + C in the ISA's fragment layout",
          "[sim][tensor]") {
  checkMma(false);
}

TEST_CASE("mma.sync m16n8k16 bf16 x bf16 + f32: D = A B + C in the ISA's fragment layout",
          "[sim][tensor]") {
  checkMma(true);
}

TEST_CASE("mma.sync rounds the exact sum once to f32", "[sim][tensor]") {
  // 1 + 2^-24 (twice, from two products) + 2^-30: a sequential f32 sum loses both halves of
  // an ulp; the exact sum rounds up to 1 + 2^-23.
  std::string ptx = std::string(kHeader) + R"(
.visible .entry t(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  // a = 1.0 (0x3c00) at k = 0 and k = 1 of rows g, b = 2^-24 (f16 subnormal 0x0001) at k = 0, 1
  mov.b32 %r1, 0x3c003c00;
  mov.b32 %r2, 0;
  mov.b32 %r3, 0;
  mov.b32 %r4, 0;
  mov.b32 %r5, 0x00010001;
  mov.b32 %r6, 0;
  mov.f32 %f0, 0f3F800000;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f3F800000;
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f4, %f5, %f6, %f7}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f0, %f1, %f2, %f3};
  mul.wide.u32 %rd1, %r0, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.f32 [%rd2], %f4;
  ret;
}
)";
  auto dev = makeSimDevice(h100());
  Buffer<float> out(*dev, size_t(32));
  runPtx(*dev, ptx, "t", grid1D(1, 32), {out.arg()});
  // row g, col 2t: sum over k of A[g][k] B[k][2t]; A[g][k] = 1 for k < 2t+2.. from all lanes
  // of the group: each of the 4 lanes contributes a[g][2t], a[g][2t+1] = 1, so A[g][0..7] = 1;
  // B[k][n] = 2^-24 for k in {2t, 2t+1} of every t, so B[0..7][n] = 2^-24: 8 products.
  for (int l = 0; l < 32; ++l)
    CHECK(out.get()[size_t(l)] == 1.0f + 8 * 0x1p-24f);
}

TEST_CASE("ldmatrix m8n8 x1, x2, x4, with and without .trans, rows from each lane's address",
          "[sim][tensor]") {
  // four 8x8 b16 matrices in shared memory, row r of matrix j stored at row slot 8j + (7 - r),
  // element (j, r, c) = j * 64 + r * 8 + c
  std::vector<uint16_t> src(256);
  for (int j = 0; j < 4; ++j)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        src[size_t((8 * j + 7 - r) * 8 + c)] = uint16_t(j * 64 + r * 8 + c);
  for (int num : {1, 2, 4})
    for (bool trans : {false, true}) {
      std::string regs;
      for (int j = 0; j < num; ++j)
        regs += (j ? ", " : "") + std::string("%r") + std::to_string(10 + j);
      std::string stores;
      for (int j = 0; j < num; ++j)
        stores += "  st.global.u32 [%rd5+" + std::to_string(4 * j) + "], %r" +
                  std::to_string(10 + j) + ";\n";
      std::string ptx = std::string(kHeader) + R"(
.visible .entry t(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 tile[512];
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd0, %rd2;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd3];
  mov.u32 %r5, tile;
  shl.b32 %r6, %r0, 4;
  add.u32 %r7, %r5, %r6;
  st.shared.v4.u32 [%r7], {%r1, %r2, %r3, %r4};
  bar.sync 0;
  // lane l names row slot 8 (l / 8) + 7 - l % 8
  shr.u32 %r8, %r0, 3;
  and.b32 %r9, %r0, 7;
  sub.u32 %r9, 7, %r9;
  shl.b32 %r8, %r8, 3;
  add.u32 %r8, %r8, %r9;
  shl.b32 %r8, %r8, 4;
  add.u32 %r8, %r5, %r8;
  ldmatrix.sync.aligned.m8n8.x)" +
                        std::to_string(num) + (trans ? ".trans" : "") + ".shared.b16 {" + regs +
                        R"(}, [%r8];
  mul.wide.u32 %rd4, %r0, 16;
  add.s64 %rd5, %rd1, %rd4;
)" + stores + "  ret;\n}\n";
      auto dev = makeSimDevice(h100());
      Buffer<uint16_t> in(*dev, src);
      Buffer<uint32_t> out(*dev, size_t(32 * 4));
      auto c = runPtx(*dev, ptx, "t", grid1D(1, 32), {in.arg(), out.arg()});
      auto o = out.get();
      INFO("x" << num << (trans ? ".trans" : ""));
      for (int l = 0; l < 32; ++l)
        for (int j = 0; j < num; ++j) {
          int q = l >> 2, cc = 2 * (l & 3);
          auto at = [&](int r, int col) { return uint32_t(j * 64 + r * 8 + col); };
          uint32_t lo = trans ? at(cc, q) : at(q, cc);
          uint32_t hi = trans ? at(cc + 1, q) : at(q, cc + 1);
          CHECK(o[size_t(l * 4 + j)] == (lo | hi << 16));
        }
      CHECK(c.sharedLoads == 1);
    }
}

TEST_CASE("ldmatrix and mma.sync need the whole warp", "[sim][tensor]") {
  std::string ptx = std::string(kHeader) + R"(
.visible .entry t(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .shared .align 16 .b8 tile[256];
  mov.u32 %r0, %tid.x;
  setp.ge.u32 %p0, %r0, 16;
  @%p0 bra DONE;
  mov.u32 %r1, tile;
  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r2}, [%r1];
DONE:
  ret;
}
)";
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> out(*dev, size_t(1));
  CHECK_THROWS_WITH(runPtx(*dev, ptx, "t", grid1D(1, 32), {out.arg()}),
                    Catch::Contains("needs all 32 lanes"));
}

TEST_CASE("cp.async copies 4, 8 and 16 bytes into shared memory, zero-filling past src-size",
          "[sim][tensor]") {
  std::vector<uint32_t> src(32 * 4);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint32_t(1000 + i);
  std::string ptx = std::string(kHeader) + R"(
.visible .entry t(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 tile[1536];
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd0, %rd2;
  mov.u32 %r1, tile;
  shl.b32 %r2, %r0, 4;
  add.u32 %r3, %r1, %r2;
  cp.async.cg.shared.global [%r3], [%rd3], 16;
  cp.async.commit_group;
  cp.async.ca.shared.global [%r3+512], [%rd3], 16, 8;
  cp.async.ca.shared.global [%r3+1024], [%rd3+4], 4;
  cp.async.ca.shared.global [%r3+1032], [%rd3+8], 8;
  cp.async.commit_group;
  cp.async.wait_group 1;
  cp.async.wait_all;
  bar.sync 0;
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r3];
  ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r3+512];
  ld.shared.u32 %r12, [%r3+1024];
  ld.shared.v2.u32 {%r13, %r14}, [%r3+1032];
  mul.wide.u32 %rd4, %r0, 48;
  add.s64 %rd5, %rd1, %rd4;
  st.global.v4.u32 [%rd5], {%r4, %r5, %r6, %r7};
  st.global.v4.u32 [%rd5+16], {%r8, %r9, %r10, %r11};
  st.global.u32 [%rd5+32], %r12;
  st.global.v2.u32 [%rd5+40], {%r13, %r14};
  ret;
}
)";
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> in(*dev, src);
  Buffer<uint32_t> out(*dev, size_t(32 * 12));
  auto c = runPtx(*dev, ptx, "t", grid1D(1, 32), {in.arg(), out.arg()});
  auto o = out.get();
  for (int l = 0; l < 32; ++l) {
    auto v = [&](int i) { return src[size_t(4 * l + i)]; };
    std::vector<uint32_t> want = {v(0), v(1), v(2), v(3), v(0), v(1), 0, 0, v(1), 0, v(2), v(3)};
    for (size_t i = 0; i < want.size(); ++i)
      CHECK(o[size_t(l) * 12 + i] == want[i]);
  }
  // each cp.async is one global request touching the 16 sectors of the warp's 512 bytes
  CHECK(c.globalLoadRequests == 4);
  CHECK(c.globalSectorsRead == 16 + 16 + 16 + 16);
  CHECK(c.sharedStores == 4);
}

// mma.sync.m16n8k8 with tf32 inputs: the fragments laid out on the host by the ISA's formulas
// for .tf32 (A: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B: b0 (t, g), b1
// (t + 4, g)), values exact in tf32 plus low significand bits the tensor core must ignore.
TEST_CASE("mma.sync m16n8k8 tf32 x tf32 + f32: D = A B + C, low 13 bits of the inputs ignored",
          "[sim][tensor]") {
  double A[16][8], B[8][8], C[16][8];
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 8; ++k)
      A[i][k] = valueAt(i, k, 1) * 1.25; // 11 significant bits at most: exact in tf32
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 8; ++j)
      B[k][j] = valueAt(k, j, 5);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      C[i][j] = valueAt(i, j, 2) * 4 + 0x1p-20; // C is f32: its low bits count
  auto noisy = [](double v) { return uint32_t(fbits(float(v))) | (v != 0 ? 0x1555u : 0u); };
  std::vector<uint32_t> frags(32 * 12);
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i)
      frags[size_t(l * 12 + i)] = noisy(A[g + (i & 1) * 8][t + (i >> 1) * 4]);
    for (int i = 0; i < 2; ++i)
      frags[size_t(l * 12 + 4 + i)] = noisy(B[t + i * 4][g]);
    for (int i = 0; i < 4; ++i)
      frags[size_t(l * 12 + 6 + i)] =
          uint32_t(fbits(float(C[g + (i >= 2 ? 8 : 0)][t * 2 + (i & 1)])));
  }
  runMma("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", frags, A, B, C);
}

TEST_CASE("mma.sync: shapes and types outside the supported ones are refused by name",
          "[sim][tensor]") {
  for (const char* bad : {"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
                          "mma.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32"}) {
    std::string ptx = std::string(kHeader) + ".visible .entry t()\n{\n  .reg .b32 %r<8>;\n"
                      "  .reg .f32 %f<8>;\n  " + bad +
                      " {%f4, %f5, %f6, %f7}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f0, %f1, %f2, "
                      "%f3};\n  ret;\n}\n";
    auto dev = makeSimDevice(h100());
    INFO(bad);
    CHECK_THROWS_WITH(runPtx(*dev, ptx, "t", grid1D(1, 32), {}),
                      Catch::Contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
  }
}

// What the f32 GEMM on tf32 tensor cores converts its fragments with.
TEST_CASE("cvt.rna.tf32.f32: nearest with ties away from zero, NaN and infinity kept",
          "[sim][tensor]") {
  std::string ptx = std::string(kHeader) + R"(
.visible .entry t(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd0, %rd2;
  ld.global.f32 %f0, [%rd3];
  cvt.rna.tf32.f32 %r1, %f0;
  add.s64 %rd4, %rd1, %rd2;
  st.global.b32 [%rd4], %r1;
  ret;
}
)";
  // input bits -> tf32 bits
  const std::vector<std::pair<uint32_t, uint32_t>> cases = {
      {0x3f800000u, 0x3f800000u}, // 1
      {0x3f801000u, 0x3f802000u}, // 1 + 2^-11: a tie, away from zero
      {0xbf801000u, 0xbf802000u}, // and its negative
      {0x3f800fffu, 0x3f800000u}, // just below the tie
      {0x3f803fffu, 0x3f804000u}, // above it
      {0x7f800000u, 0x7f800000u}, // +inf
      {0xff800000u, 0xff800000u}, // -inf
      {0x7f7fffffu, 0x7f800000u}, // the largest f32: past the largest tf32
      {0x00001000u, 0x00002000u}, // a subnormal tie
      {0x80000fffu, 0x80000000u}, // a negative subnormal, to -0
      {0x7fffffffu, 0x7fffffffu}, // NaN with every significand bit set: still NaN
      {0xffffffffu, 0x7fffffffu}, // and its negative
      {0x7fc00000u, 0x7fffffffu}, // a quiet NaN
  };
  std::vector<uint32_t> in;
  for (auto [x, want] : cases)
    in.push_back(x);
  in.resize(32, 0);
  auto dev = makeSimDevice(h100());
  Buffer<uint32_t> inBuf(*dev, in);
  Buffer<uint32_t> out(*dev, size_t(32));
  runPtx(*dev, ptx, "t", grid1D(1, 32), {inBuf.arg(), out.arg()});
  auto got = out.get();
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(fmt::format("{:#010x}", cases[i].first));
    CHECK(got[i] == cases[i].second);
  }
  for (const char* other : {"cvt.rn.tf32.f32", "cvt.rna.satfinite.tf32.f32", "cvt.rna.f32.f32"}) {
    std::string bad = std::string(kHeader) + ".visible .entry t()\n{\n  .reg .b32 %r<2>;\n"
                      "  .reg .f32 %f<2>;\n  " + other + " %r1, %f0;\n  ret;\n}\n";
    INFO(other);
    CHECK_THROWS_WITH(runPtx(*dev, bad, "t", grid1D(1, 32), {}),
                      Catch::Contains("only cvt.rna.tf32.f32 is supported"));
  }
}
