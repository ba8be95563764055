// One test per instruction family: hand-written PTX, results computed by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

namespace {
// st.global.u32 of register `reg` into slot k
std::string st32(const std::string& reg, int k) {
  return "  st.global.u32 [%rd2+" + std::to_string(8 * k) + "], " + reg + ";\n";
}
std::string st64(const std::string& reg, int k) {
  return "  st.global.u64 [%rd2+" + std::to_string(8 * k) + "], " + reg + ";\n";
}
std::string stPred(const std::string& p, int k) {
  return "  selp.u32 %r31, 1, 0, " + p + ";\n" + st32("%r31", k);
}
uint64_t u32(int64_t v) {
  return uint32_t(v);
}
} // namespace

TEST_CASE("integer arithmetic", "[sim][instr]") {
  auto r = runScalar(R"(
  mov.u32 %r1, -7;
  mov.u32 %r2, 3;
  add.s32 %r3, %r1, %r2;
  sub.s32 %r4, %r1, %r2;
  mul.lo.s32 %r5, %r1, %r2;
  mul.hi.u32 %r6, %r1, %r2;
  mul.hi.s32 %r7, %r1, %r2;
  mul.wide.s32 %rd3, %r1, %r2;
  mul.wide.u32 %rd4, %r1, %r2;
  mad.lo.s32 %r8, %r1, %r2, 100;
  div.s32 %r9, %r1, %r2;
  rem.s32 %r10, %r1, %r2;
  div.u32 %r11, %r1, %r2;
  rem.u32 %r12, %r1, %r2;
  div.u32 %r13, %r1, 0;
  abs.s32 %r14, %r1;
  neg.s32 %r15, %r1;
  min.s32 %r16, %r1, %r2;
  min.u32 %r17, %r1, %r2;
  max.s32 %r18, %r1, %r2;
  mad.wide.s32 %rd5, %r1, %r2, 1000;
  mul.hi.u64 %rd6, -1, 3;
  add.sat.s32 %r19, 2147483647, 5;
)" + st32("%r3", 0) + st32("%r4", 1) +
                         st32("%r5", 2) + st32("%r6", 3) + st32("%r7", 4) + st64("%rd3", 5) +
                         st64("%rd4", 6) + st32("%r8", 7) + st32("%r9", 8) + st32("%r10", 9) +
                         st32("%r11", 10) + st32("%r12", 11) + st32("%r13", 12) + st32("%r14", 13) +
                         st32("%r15", 14) + st32("%r16", 15) + st32("%r17", 16) + st32("%r18", 17) +
                         st64("%rd5", 18) + st64("%rd6", 19) + st32("%r19", 20),
                     21);
  const uint32_t m7 = uint32_t(-7);
  CHECK(r[0] == u32(-4));
  CHECK(r[1] == u32(-10));
  CHECK(r[2] == u32(-21));
  CHECK(r[3] == uint32_t((uint64_t(m7) * 3) >> 32));
  CHECK(r[4] == u32(-1)); // high word of -21
  CHECK(r[5] == uint64_t(-21));
  CHECK(r[6] == uint64_t(m7) * 3);
  CHECK(r[7] == 79);
  CHECK(r[8] == u32(-2)); // truncating division
  CHECK(r[9] == u32(-1));
  CHECK(r[10] == m7 / 3);
  CHECK(r[11] == m7 % 3);
  CHECK(r[12] == 0xffffffffu); // division by zero: all ones
  CHECK(r[13] == 7);
  CHECK(r[14] == 7);
  CHECK(r[15] == u32(-7));
  CHECK(r[16] == 3);
  CHECK(r[17] == 3);
  CHECK(r[18] == uint64_t(979));
  CHECK(r[19] == 2);
  CHECK(r[20] == 0x7fffffffu);
}

TEST_CASE("carry chains: add.cc / addc / sub.cc / subc / mad.lo.cc / madc.hi", "[sim][instr]") {
  auto r = runScalar(R"(
  add.cc.u32 %r1, -1, 1;
  addc.u32 %r2, 5, 6;
  sub.cc.u32 %r3, 0, 1;
  subc.u32 %r4, 10, 2;
  mad.lo.cc.u32 %r5, 65536, 65536, 7;
  madc.hi.u32 %r6, 65536, 65536, 1;
)" + st32("%r1", 0) + st32("%r2", 1) +
                         st32("%r3", 2) + st32("%r4", 3) + st32("%r5", 4) + st32("%r6", 5),
                     6);
  CHECK(r[0] == 0);
  CHECK(r[1] == 12); // 5 + 6 + carry
  CHECK(r[2] == 0xffffffffu);
  CHECK(r[3] == 7); // 10 - 2 - borrow
  CHECK(r[4] == 7); // low word of 2^32 + 7, no carry out of the low add
  CHECK(r[5] == 2); // high word 1 + 1 + carry 0
}

TEST_CASE("logic, shifts and bit manipulation", "[sim][instr]") {
  auto r = runScalar(R"(
  mov.b32 %r1, 0xF0F0A5A5;
  and.b32 %r2, %r1, 0xFF;
  or.b32 %r3, %r1, 0xF;
  xor.b32 %r4, %r1, -1;
  not.b32 %r5, %r1;
  cnot.b32 %r6, 0;
  cnot.b32 %r7, %r1;
  shl.b32 %r8, %r1, 4;
  shl.b32 %r9, %r1, 40;
  shr.u32 %r10, %r1, 4;
  shr.s32 %r11, %r1, 4;
  shr.s32 %r12, %r1, 99;
  popc.b32 %r13, %r1;
  clz.b32 %r14, 0x00010000;
  clz.b32 %r15, 0;
  brev.b32 %r16, 1;
  bfe.u32 %r17, %r1, 4, 8;
  bfe.s32 %r18, %r1, 28, 8;
  bfi.b32 %r19, 0xF, %r1, 8, 4;
  prmt.b32 %r20, 0x44332211, 0x88776655, 0x7531;
  prmt.b32 %r21, 0x80, 0, 0x8888;
  popc.b64 %r22, -1;
  clz.b64 %r23, 1;
  shr.u64 %rd3, -1, 60;
  shl.b64 %rd4, 1, 63;
  not.pred %p1, 1;
  setp.ne.s32 %p2, %r1, 0;
  xor.pred %p3, %p1, %p2;
)" + st32("%r2", 0) + st32("%r3", 1) +
                         st32("%r4", 2) + st32("%r5", 3) + st32("%r6", 4) + st32("%r7", 5) +
                         st32("%r8", 6) + st32("%r9", 7) + st32("%r10", 8) + st32("%r11", 9) +
                         st32("%r12", 10) + st32("%r13", 11) + st32("%r14", 12) + st32("%r15", 13) +
                         st32("%r16", 14) + st32("%r17", 15) + st32("%r18", 16) + st32("%r19", 17) +
                         st32("%r20", 18) + st32("%r21", 19) + st32("%r22", 20) + st32("%r23", 21) +
                         st64("%rd3", 22) + st64("%rd4", 23) + stPred("%p1", 24) +
                         stPred("%p3", 25),
                     26);
  const uint32_t x = 0xF0F0A5A5;
  CHECK(r[0] == 0xA5);
  CHECK(r[1] == 0xF0F0A5AF);
  CHECK(r[2] == uint32_t(~x));
  CHECK(r[3] == uint32_t(~x));
  CHECK(r[4] == 1);
  CHECK(r[5] == 0);
  CHECK(r[6] == uint32_t(x << 4));
  CHECK(r[7] == 0); // shifts clamp
  CHECK(r[8] == x >> 4);
  CHECK(r[9] == uint32_t(int32_t(x) >> 4));
  CHECK(r[10] == 0xffffffffu);
  CHECK(r[11] == uint64_t(__builtin_popcount(x)));
  CHECK(r[12] == 15);
  CHECK(r[13] == 32);
  CHECK(r[14] == 0x80000000u);
  CHECK(r[15] == 0x5A);
  CHECK(r[16] == 0xFFFFFFFFu); // bits 28..31 = 0xF, sign-extended
  CHECK(r[17] == 0xF0F0AFA5u);
  CHECK(r[18] == 0x88664422u); // bytes 1,3,5,7
  CHECK(r[19] == 0xFFFFFFFFu); // sign-replicate byte 0 (0x80)
  CHECK(r[20] == 64);
  CHECK(r[21] == 63);
  CHECK(r[22] == 15);
  CHECK(r[23] == 0x8000000000000000ull);
  CHECK(r[24] == 0);
  CHECK(r[25] == 1);
}

TEST_CASE("setp: every comparison, unordered floats, .and/.or and the second predicate",
          "[sim][instr]") {
  std::string body = R"(
  mov.f32 %f1, 0f7FC00000;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f40000000;
)";
  int k = 0;
  auto cmp = [&](const std::string& op, const std::string& a, const std::string& b) {
    body += "  setp." + op + " %p1, " + a + ", " + b + ";\n" + stPred("%p1", k++);
  };
  // floats: 1 vs 2, NaN vs 1
  for (const char* c : {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu",
                        "geu", "num", "nan"}) {
    cmp(std::string(c) + ".f32", "%f2", "%f3");
    cmp(std::string(c) + ".f32", "%f1", "%f2");
  }
  // integers: -1 vs 1 signed and unsigned
  for (const char* c : {"lt.s32", "lt.u32", "lo.u32", "hs.u32", "ge.s64", "eq.b32"})
    cmp(c, "-1", "1");
  body += "  setp.lt.and.f32 %p2|%p3, %f2, %f3, %p1;\n" + stPred("%p2", k);
  body += stPred("%p3", k + 1);
  k += 2;
  body += "  setp.gt.or.s32 %p4, 1, 2, !%p1;\n" + stPred("%p4", k++);
  auto r = runScalar(body, k);
  const int want[] = {
      0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, // eq ne lt le gt ge (ordered, NaN → false)
      0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, // equ neu ltu leu gtu geu
      1, 0, 0, 1,                         // num nan
      1, 0, 0, 1, 0, 0,                   // -1 vs 1: lt.s32, lt.u32, lo, hs, ge.s64, eq
      0, 0,                               // p1 (eq.b32 -1,1) = 0 → and gives 0, 0
      1,                                  // 1>2 false or !p1 true
  };
  REQUIRE(size_t(k) == std::size(want));
  for (int i = 0; i < k; ++i) {
    INFO("comparison " << i);
    CHECK(r[i] == uint64_t(want[i]));
  }
}

TEST_CASE("selp, slct, mov pack/unpack and special registers", "[sim][instr]") {
  auto r = runScalar(R"(
  setp.eq.u32 %p1, %r0, 1;
  selp.b32 %r1, 10, 20, %p1;
  slct.s32.s32 %r2, 5, 6, -1;
  slct.f32.f32 %f1, 0f3F800000, 0f40000000, 0f80000000;
  mov.b64 %rd3, {%r1, %r2};
  mov.b64 {%r3, %r4}, %rd3;
  mov.b32 %r5, {%h1, %h2};
  mov.u32 %r6, %laneid;
  mov.u32 %r7, %ntid.x;
  mov.u32 %r8, %lanemask_lt;
  mov.u32 %r9, %warpid;
  cvt.u16.u32 %h3, %r0;
  mov.b32 %r10, {%h3, %h3};
  mov.b32 {%h4, %h5}, %r10;
  cvt.u32.u16 %r11, %h5;
)" + st32("%r1", 0) + st32("%r2", 1) +
                         st32("%f1", 2) + st64("%rd3", 3) + st32("%r4", 4) + st32("%r6", 5) +
                         st32("%r7", 6) + st32("%r8", 7) + st32("%r9", 8) + st32("%r10", 9) +
                         st32("%r11", 10),
                     11, 40);
  for (int t = 0; t < 40; ++t) {
    const uint64_t* s = &r[size_t(t) * 11];
    INFO("thread " << t);
    CHECK(s[0] == (t == 1 ? 10u : 20u));
    CHECK(s[1] == 6);
    CHECK(asFloat(s[2]) == 1.0f); // -0 >= 0
    CHECK(s[3] == ((uint64_t(6) << 32) | s[0]));
    CHECK(s[4] == 6);
    CHECK(s[5] == uint64_t(t % 32));
    CHECK(s[6] == 40);
    CHECK(s[7] == (1ull << (t % 32)) - 1);
    CHECK(s[8] == uint64_t(t / 32));
    CHECK(s[9] == ((uint64_t(t) << 16) | uint64_t(t)));
    CHECK(s[10] == uint64_t(t));
  }
}

TEST_CASE("scoped blocks may declare registers without a '%' (NVPTX's f64 shuffle halves)",
          "[sim][instr]") {
  // Two blocks declare the same name; each writes it before reading it.
  auto r = runScalar(R"(
  cvt.u64.u32 %rd5, %r0;
  shl.b64 %rd6, %rd5, 32;
  or.b64 %rd7, %rd6, 7;
  { .reg .b32 tmp; mov.b64 {tmp, %r3}, %rd7; }
  { .reg .b32 tmp; mov.b64 {%r4, tmp}, %rd7; add.u32 %r5, tmp, 1; }
)" + st32("%r3", 0) + st32("%r4", 1) +
                         st32("%r5", 2),
                     3, 33);
  for (int t = 0; t < 33; ++t) {
    const uint64_t* s = &r[size_t(t) * 3];
    INFO("thread " << t);
    CHECK(s[0] == uint64_t(t)); // high half
    CHECK(s[1] == 7);           // low half
    CHECK(s[2] == uint64_t(t) + 1);
  }
}

TEST_CASE("special registers in a 3-D grid", "[sim][instr]") {
  auto dev = sim::makeSimDevice(h100());
  const std::string ptx = R"(
.version 8.5
.target sm_80
.address_size 64
.visible .entry t(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %tid.z;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %ctaid.y;
  mov.u32 %r6, %ctaid.z;
  mov.u32 %r7, %nctaid.x;
  mov.u32 %r8, %nctaid.y;
  mov.u32 %r9, %ntid.y;
  // linear block id and thread id
  mad.lo.u32 %r10, %r6, %r8, %r5;
  mad.lo.u32 %r10, %r10, %r7, %r4;
  mov.u32 %r11, %ntid.x;
  mad.lo.u32 %r12, %r3, %r9, %r2;
  mad.lo.u32 %r12, %r12, %r11, %r1;
  mov.u32 %r13, %dynamic_smem_size;
  // out[(block * 24 + thread)] = tid.x | tid.y << 8 | tid.z << 16 | dynsmem << 24
  mad.lo.u32 %r14, %r10, 24, %r12;
  mul.wide.u32 %rd1, %r14, 4;
  add.s64 %rd2, %rd0, %rd1;
  shl.b32 %r2, %r2, 8;
  shl.b32 %r3, %r3, 16;
  shl.b32 %r13, %r13, 24;
  or.b32 %r1, %r1, %r2;
  or.b32 %r1, %r1, %r3;
  or.b32 %r1, %r1, %r13;
  st.global.u32 [%rd2], %r1;
  ret;
}
)";
  LaunchConfig cfg;
  cfg.grid = {2, 3, 2};
  cfg.block = {4, 3, 2};
  cfg.dynamicSharedBytes = 5;
  Buffer<uint32_t> out(*dev, size_t(12 * 24));
  runPtx(*dev, ptx, "t", cfg, {out.arg()});
  auto o = out.get();
  for (int b = 0; b < 12; ++b)
    for (int z = 0; z < 2; ++z)
      for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x) {
          int t = (z * 3 + y) * 4 + x;
          REQUIRE(o[b * 24 + t] == uint32_t(x | y << 8 | z << 16 | 5 << 24));
        }
}

TEST_CASE("cvt: rounding modes, saturation, f16/bf16 and integer widths", "[sim][instr]") {
  auto r = runScalar(
      R"(
  mov.f32 %f1, 0f40200000;
  mov.f32 %f2, 0fC0200000;
  cvt.rni.s32.f32 %r1, %f1;
  cvt.rzi.s32.f32 %r2, %f2;
  cvt.rmi.s32.f32 %r3, %f2;
  cvt.rpi.s32.f32 %r4, %f1;
  cvt.rni.s32.f32 %r5, %f2;
  cvt.rzi.s32.f32 %r6, 0f7FC00000;
  cvt.rzi.s32.f32 %r7, 0f501502F9;
  cvt.rzi.u32.f32 %r8, 0fBF800000;
  cvt.rn.f32.u32 %f3, 16777217;
  cvt.rz.f32.u32 %f4, 16777219;
  cvt.rp.f32.u32 %f5, 16777217;
  cvt.rn.f16.f32 %h1, 0f3DCCCCCD;
  cvt.rz.f16.f32 %h2, 0f3DCCCCCD;
  cvt.rp.f16.f32 %h3, 0f3DCCCCCD;
  cvt.f32.f16 %f6, %h1;
  cvt.rn.bf16.f32 %h4, 0f3F808000;
  cvt.rn.bf16.f32 %h5, 0f3F818000;
  cvt.f32.bf16 %f7, %h5;
  cvt.rn.f16.f32 %h6, 0f47800000;
  cvt.rz.f16.f32 %h7, 0f47800000;
  cvt.rn.f32.f64 %f8, 0d3FB999999999999A;
  cvt.rz.f32.f64 %f9, 0d3FB999999999999A;
  cvt.f64.f32 %fd1, %f8;
  cvt.sat.f32.f32 %f10, 0f40000000;
  cvt.rni.f32.f32 %f11, 0f40200000;
  cvt.rmi.f32.f32 %f12, 0fC0200000;
  cvt.sat.s8.s32 %r9, 300;
  cvt.s8.s32 %r10, 300;
  cvt.u64.u32 %rd3, -1;
  cvt.s64.s32 %rd4, -1;
  cvt.rzi.s64.f64 %rd5, 0dC115C6D6CCCCCCCD;
  cvt.rn.f64.s64 %fd2, -9007199254740993;
  cvt.rn.f16.f32 %h8, 0f33000000;
  cvt.rn.f16.f32 %h9, 0f33000001;
  cvt.u32.u16 %r11, %h8;
  cvt.u32.u16 %r12, %h9;
  cvt.rzi.u8.f32 %r13, 0f43960000;
  cvt.rn.f16.f32 %h10, 0f7FC00000;
)" + st32("%r1", 0) +
          st32("%r2", 1) + st32("%r3", 2) + st32("%r4", 3) + st32("%r5", 4) + st32("%r6", 5) +
          st32("%r7", 6) + st32("%r8", 7) + st32("%f3", 8) + st32("%f4", 9) + st32("%f5", 10) +
          "  st.global.b16 [%rd2+88], %h1;\n  st.global.b16 [%rd2+96], %h2;\n"
          "  st.global.b16 [%rd2+104], %h3;\n" +
          st32("%f6", 14) + "  st.global.b16 [%rd2+120], %h4;\n  st.global.b16 [%rd2+128], %h5;\n" +
          st32("%f7", 17) + "  st.global.b16 [%rd2+144], %h6;\n  st.global.b16 [%rd2+152], %h7;\n" +
          st32("%f8", 20) + st32("%f9", 21) + st64("%fd1", 22) + st32("%f10", 23) +
          st32("%f11", 24) + st32("%f12", 25) + st32("%r9", 26) + st32("%r10", 27) +
          st64("%rd3", 28) + st64("%rd4", 29) + st64("%rd5", 30) + st64("%fd2", 31) +
          st32("%r11", 32) + st32("%r12", 33) + st32("%r13", 34) +
          "  st.global.b16 [%rd2+280], %h10;\n",
      36);
  CHECK(r[0] == 2);           // rni(2.5) = 2 (ties to even)
  CHECK(r[1] == u32(-2));     // rzi(-2.5)
  CHECK(r[2] == u32(-3));     // rmi(-2.5)
  CHECK(r[3] == 3);           // rpi(2.5)
  CHECK(r[4] == u32(-2));     // rni(-2.5)
  CHECK(r[5] == 0);           // NaN → 0
  CHECK(r[6] == 0x7fffffffu); // 1e10 saturates
  CHECK(r[7] == 0);           // -1 → u32 saturates to 0
  CHECK(asFloat(r[8]) == 16777216.0f);
  CHECK(asFloat(r[9]) == 16777218.0f);
  CHECK(asFloat(r[10]) == 16777218.0f);
  CHECK(r[11] == 0x2E66); // 0.1 in f16, nearest
  CHECK(r[12] == 0x2E66); // toward zero
  CHECK(r[13] == 0x2E67); // toward +inf
  CHECK(asFloat(r[14]) == 0.0999755859375f);
  CHECK(r[15] == 0x3F80); // 1.00390625 → tie → even (1.0)
  CHECK(r[16] == 0x3F82); // 1.01171875 → tie → even (0x3F82)
  CHECK(asFloat(r[17]) == 1.015625f);
  CHECK(r[18] == 0x7C00); // 65536 → inf
  CHECK(r[19] == 0x7BFF); // toward zero: max finite
  CHECK(asFloat(r[20]) == 0.1f);
  CHECK(asFloat(r[21]) == std::nextafter(0.1f, 0.0f));
  CHECK(asDouble(r[22]) == double(0.1f));
  CHECK(asFloat(r[23]) == 1.0f);
  CHECK(asFloat(r[24]) == 2.0f);
  CHECK(asFloat(r[25]) == -3.0f);
  CHECK(r[26] == 127);
  CHECK(uint8_t(r[27]) == uint8_t(300 & 0xff));
  CHECK(r[28] == 0xffffffffull);
  CHECK(r[29] == ~0ull);
  CHECK(int64_t(r[30]) == -356789);
  CHECK(asDouble(r[31]) == -9007199254740992.0);
  CHECK(r[32] == 0);      // 2^-25: exactly half the smallest subnormal → ties to even → 0
  CHECK(r[33] == 1);      // just above → smallest subnormal
  CHECK(r[34] == 255);    // 300 → u8 saturates
  CHECK(r[35] == 0x7FFF); // canonical NaN
}

TEST_CASE("floating-point arithmetic, min/max NaN rules, ftz, sat, approximations",
          "[sim][instr]") {
  auto r = runScalar(R"(
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f40400000;
  div.rn.f32 %f3, %f1, %f2;
  fma.rn.f32 %f4, %f3, %f2, 0fBF800000;
  mul.rp.f32 %f5, %f3, %f2;
  add.rm.f32 %f6, %f1, 0f33800000;
  add.rp.f32 %f7, %f1, 0f33800000;
  max.f32 %f8, 0f7FC00000, %f2;
  min.f32 %f9, 0f80000000, 0f00000000;
  max.f32 %f10, 0f80000000, 0f00000000;
  add.ftz.f32 %f11, 0f00000001, 0f00000000;
  add.f32 %f12, 0f00000001, 0f00000000;
  add.sat.f32 %f13, %f2, %f2;
  sqrt.rn.f32 %f14, %f2;
  rsqrt.approx.f32 %f15, 0f40800000;
  ex2.approx.ftz.f32 %f16, 0f40400000;
  lg2.approx.f32 %f17, 0f41000000;
  sin.approx.f32 %f18, 0f00000000;
  cos.approx.f32 %f19, 0f00000000;
  tanh.approx.f32 %f20, 0f00000000;
  copysign.f32 %f21, 0fBF800000, %f2;
  abs.f32 %f22, 0fC0400000;
  neg.f32 %f23, %f2;
  rcp.rn.f32 %f24, 0f40800000;
  sub.f32 %f25, 0f7F800000, 0f7F800000;
  testp.notanumber.f32 %p1, %f25;
  testp.finite.f32 %p2, %f2;
  testp.subnormal.f32 %p3, 0f00000001;
  div.rn.f64 %fd1, 0d3FF0000000000000, 0d4008000000000000;
  fma.rn.f64 %fd2, %fd1, 0d4008000000000000, 0dBFF0000000000000;
  sqrt.rn.f64 %fd3, 0d4000000000000000;
  min.f64 %fd4, 0d7FF8000000000000, 0d3FF0000000000000;
  div.full.f32 %f26, %f1, %f2;
  mul.f32 %f27, 0f7F7FFFFF, 0f40000000;
)" + st32("%f3", 0) + st32("%f4", 1) +
                         st32("%f5", 2) + st32("%f6", 3) + st32("%f7", 4) + st32("%f8", 5) +
                         st32("%f9", 6) + st32("%f10", 7) + st32("%f11", 8) + st32("%f12", 9) +
                         st32("%f13", 10) + st32("%f14", 11) + st32("%f15", 12) + st32("%f16", 13) +
                         st32("%f17", 14) + st32("%f18", 15) + st32("%f19", 16) + st32("%f20", 17) +
                         st32("%f21", 18) + st32("%f22", 19) + st32("%f23", 20) + st32("%f24", 21) +
                         st32("%f25", 22) + stPred("%p1", 23) + stPred("%p2", 24) +
                         stPred("%p3", 25) + st64("%fd1", 26) + st64("%fd2", 27) +
                         st64("%fd3", 28) + st64("%fd4", 29) + st32("%f26", 30) + st32("%f27", 31),
                     32);
  const float third = 1.0f / 3.0f;
  CHECK(asFloat(r[0]) == third);
  CHECK(asFloat(r[1]) == std::fma(third, 3.0f, -1.0f)); // fused: not 0
  CHECK(asFloat(r[1]) != 0.0f);
  CHECK(asFloat(r[2]) == std::nextafter(1.0f, 2.0f)); // 1.00000003 toward +inf (rn gives 1)
  CHECK(asFloat(r[3]) == 1.0f);
  CHECK(asFloat(r[4]) == std::nextafter(1.0f, 2.0f));
  CHECK(asFloat(r[5]) == 3.0f);
  CHECK(r[6] == 0x80000000u);
  CHECK(r[7] == 0x00000000u);
  CHECK(r[8] == 0); // ftz flushes the subnormal
  CHECK(r[9] == 1); // without ftz it stays
  CHECK(asFloat(r[10]) == 1.0f);
  CHECK(asFloat(r[11]) == std::sqrt(3.0f));
  CHECK(asFloat(r[12]) == 0.5f);
  CHECK(asFloat(r[13]) == 8.0f);
  CHECK(asFloat(r[14]) == 3.0f);
  CHECK(asFloat(r[15]) == 0.0f);
  CHECK(asFloat(r[16]) == 1.0f);
  CHECK(asFloat(r[17]) == 0.0f);
  CHECK(asFloat(r[18]) == -3.0f); // value of b, sign of a
  CHECK(asFloat(r[19]) == 3.0f);
  CHECK(asFloat(r[20]) == -3.0f);
  CHECK(asFloat(r[21]) == 0.25f);
  CHECK(r[22] == 0x7fffffffu); // canonical NaN
  CHECK(r[23] == 1);
  CHECK(r[24] == 1);
  CHECK(r[25] == 1);
  CHECK(asDouble(r[26]) == 1.0 / 3.0);
  CHECK(asDouble(r[27]) == std::fma(1.0 / 3.0, 3.0, -1.0));
  CHECK(asDouble(r[28]) == std::sqrt(2.0));
  CHECK(asDouble(r[29]) == 1.0);
  CHECK(asFloat(r[30]) == third);
  CHECK(std::isinf(asFloat(r[31])));
}

TEST_CASE("half-precision arithmetic (f16, bf16, f16x2)", "[sim][instr]") {
  auto r = runScalar(R"(
  mov.b16 %h1, 0x3C00;
  mov.b16 %h2, 0x4000;
  add.f16 %h3, %h1, %h2;
  mul.f16 %h4, %h2, %h2;
  fma.rn.f16 %h5, %h2, %h2, %h1;
  neg.f16 %h6, %h1;
  mov.b32 %r1, {%h1, %h2};
  add.f16x2 %r2, %r1, %r1;
  mov.b16 %h7, 0x3F80;
  add.bf16 %h8, %h7, %h7;
  setp.lt.f16 %p1, %h1, %h2;
  max.f16 %h9, %h1, %h2;
)" +
                         std::string("  st.global.b16 [%rd2+0], %h3;\n  st.global.b16 [%rd2+8], "
                                     "%h4;\n  st.global.b16 [%rd2+16], %h5;\n"
                                     "  st.global.b16 [%rd2+24], %h6;\n") +
                         st32("%r2", 4) + "  st.global.b16 [%rd2+40], %h8;\n" + stPred("%p1", 6) +
                         "  st.global.b16 [%rd2+56], %h9;\n",
                     8);
  CHECK(r[0] == 0x4200); // 3.0
  CHECK(r[1] == 0x4400); // 4.0
  CHECK(r[2] == 0x4500); // 5.0
  CHECK(r[3] == 0xBC00);
  CHECK(r[4] == 0x44004000u); // {2, 4}
  CHECK(r[5] == 0x4000);      // bf16 2.0
  CHECK(r[6] == 1);
  CHECK(r[7] == 0x4000);
}

TEST_CASE("memory: vectors, generic addressing, local, const and global variables",
          "[sim][instr]") {
  const std::string decls = R"(
.const .align 4 .b32 table[4] = {10, 20, 30, 40};
.global .align 8 .u64 gvar = 77;
.global .align 4 .f32 gfloats[2] = {0f3F800000, 0f40000000};
)";
  auto r = runScalar(R"(
  .shared .align 16 .b8 buf[64];
  .local .align 16 .b8 __local_depot0[32];
  .reg .b64 %SP;
  .reg .b64 %SPL;
  mov.u64 %SPL, __local_depot0;
  cvta.local.u64 %SP, %SPL;
  // shared through a generic pointer, vector store then scalar loads
  mov.u64 %rd3, buf;
  cvta.shared.u64 %rd4, %rd3;
  st.v4.u32 [%rd4], {%r0, 11, 12, 13};
  ld.shared.u32 %r1, [buf+4];
  ld.u32 %r2, [%rd4+12];
  cvta.to.shared.u64 %rd5, %rd4;
  ld.shared.v2.u32 {%r3, %r4}, [%rd5+8];
  // local through generic and local addressing
  st.u64 [%SP+8], 123456789;
  ld.local.u64 %rd6, [%SPL+8];
  // const memory and global variables
  ld.const.u32 %r5, [table+8];
  mov.u64 %rd7, table;
  ld.const.u32 %r6, [%rd7+12];
  ld.global.u64 %rd8, [gvar];
  mov.u64 %rd9, gfloats;
  ld.global.v2.f32 {%f1, %f2}, [%rd9];
  ld.global.s8 %r7, [%rd2+0];
)" + st32("%r1", 0) + st32("%r2", 1) +
                         st32("%r3", 2) + st32("%r4", 3) + st64("%rd6", 4) + st32("%r5", 5) +
                         st32("%r6", 6) + st64("%rd8", 7) + st32("%f2", 8) +
                         "  st.global.u8 [%rd2+72], 200;\n"
                         "  ld.global.s8 %r8, [%rd2+72];\n" +
                         st32("%r8", 10),
                     11, 1, decls);
  CHECK(r[0] == 11);
  CHECK(r[1] == 13);
  CHECK(r[2] == 12);
  CHECK(r[3] == 13);
  CHECK(r[4] == 123456789);
  CHECK(r[5] == 30);
  CHECK(r[6] == 40);
  CHECK(r[7] == 77);
  CHECK(asFloat(r[8]) == 2.0f);
  CHECK(r[10] == uint32_t(int32_t(int8_t(200)))); // sign-extended load
}

TEST_CASE("atomics on global and shared memory", "[sim][instr]") {
  // 64 threads hammer global and shared counters; thread 0 reports the shared results
  auto dev = sim::makeSimDevice(h100());
  const std::string ptx = R"(
.version 8.5
.target sm_80
.address_size 64
.visible .entry t(.param .u64 g, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<32>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<16>;
  .reg .f64 %fd<4>;
  .shared .align 8 .b8 sh[16];
  ld.param.u64 %rd1, [g];
  ld.param.u64 %rd2, [out];
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra WAIT;
  st.shared.u32 [sh], 0;
  st.shared.u32 [sh+4], 1000;
  st.shared.u64 [sh+8], 0;
WAIT:
  bar.sync 0;
  atom.global.add.u32 %r1, [%rd1], 1;
  atom.global.max.s32 %r2, [%rd1+4], %r0;
  atom.global.min.u32 %r3, [%rd1+8], %r0;
  cvt.rn.f32.u32 %f1, %r0;
  atom.global.add.f32 %f2, [%rd1+12], %f1;
  atom.global.or.b32 %r4, [%rd1+16], %r0;
  atom.global.inc.u32 %r5, [%rd1+20], 9;
  atom.global.dec.u32 %r6, [%rd1+24], 100;
  atom.global.and.b32 %r7, [%rd1+28], -2;
  atom.global.xor.b32 %r8, [%rd1+32], 1;
  cvt.rn.f64.u32 %fd1, %r0;
  atom.global.add.f64 %fd2, [%rd1+40], %fd1;
  atom.global.add.u64 %rd3, [%rd1+48], 3;
  atom.global.exch.b32 %r9, [%rd1+56], %r0;
  red.global.add.u32 [%rd1+60], 2;
  atom.shared.add.u32 %r10, [sh], 1;
  atom.shared.min.s32 %r11, [sh+4], %r0;
  atom.shared.add.u64 %rd4, [sh+8], 5;
  // compare-and-swap: only the thread whose compare value matches wins
  atom.global.cas.b32 %r12, [%rd1+64], %r0, 1000;
  bar.sync 0;
  @%p1 bra DONE;
  ld.shared.u32 %r13, [sh];
  ld.shared.u32 %r14, [sh+4];
  ld.shared.u64 %rd5, [sh+8];
  st.global.u32 [%rd2], %r13;
  st.global.u32 [%rd2+4], %r14;
  st.global.u64 [%rd2+8], %rd5;
DONE:
  ret;
}
)";
  std::vector<uint32_t> g(18, 0);
  g[2] = 999;  // min
  g[6] = 50;   // dec starts at 50
  g[7] = 0xff; // and
  g[16] = 7;   // cas: thread 7 matches
  Buffer<uint32_t> G(*dev, g), Out(*dev, size_t(4));
  auto cnt = runPtx(*dev, ptx, "t", grid1D(1, 64), {G.arg(), Out.arg()});
  auto r = G.get();
  CHECK(r[0] == 64);
  CHECK(r[1] == 63);
  CHECK(r[2] == 0);
  float fsum;
  std::memcpy(&fsum, &r[3], 4);
  CHECK(fsum == 2016.0f);
  CHECK(r[4] == 63);
  CHECK(r[5] == 64 % 10); // inc wraps at 9: 64 increments from 0 → 4
  CHECK(r[6] == 50 - 50 + 100 - 13);
  CHECK(r[7] == 0xfe);
  CHECK(r[8] == 0); // 64 xors of 1
  double dsum;
  std::memcpy(&dsum, &r[10], 8);
  CHECK(dsum == 2016.0);
  CHECK((uint64_t(r[13]) << 32 | r[12]) == 192);
  CHECK(r[14] < 64);
  CHECK(r[15] == 128);
  CHECK(r[16] == 1000);
  auto o = Out.get();
  CHECK(o[0] == 64);
  CHECK(o[1] == 0);
  CHECK((uint64_t(o[3]) << 32 | o[2]) == 320);
  CHECK(cnt.atomics == 2 * 17); // 17 atomic instructions on data, two warps
}

TEST_CASE("calls: parameters, return values and recursion", "[sim][instr]") {
  auto dev = sim::makeSimDevice(h100());
  const std::string ptx = R"(
.version 8.5
.target sm_80
.address_size 64
.func (.param .b32 ret) fact(.param .b32 n, .param .align 8 .b8 pair[16])
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd1, [pair+8];
  setp.le.u32 %p1, %r1, 1;
  @%p1 bra BASE;
  add.s32 %r2, %r1, -1;
  {
  .param .b32 p0;
  .param .align 8 .b8 p1[16];
  .param .b32 r0;
  st.param.b32 [p0], %r2;
  st.param.b64 [p1+8], %rd1;
  call.uni (r0), fact, (p0, p1);
  ld.param.b32 %r3, [r0];
  }
  mul.lo.s32 %r4, %r3, %r1;
  st.param.b32 [ret], %r4;
  ret;
BASE:
  cvt.u32.u64 %r5, %rd1;
  st.param.b32 [ret], %r5;
  ret;
}
.visible .entry t(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a0;
  .param .align 8 .b8 a1[16];
  .param .b32 rv;
  st.param.b32 [a0], %r1;
  st.param.b64 [a1+8], 1;
  call.uni (rv), fact, (a0, a1);
  ld.param.b32 %r2, [rv];
  }
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
)";
  Buffer<uint32_t> out(*dev, size_t(12));
  runPtx(*dev, ptx, "t", grid1D(1, 12), {out.arg()});
  auto o = out.get();
  uint32_t f = 1;
  for (uint32_t i = 0; i < 12; ++i) {
    if (i > 1) f *= i;
    CHECK(o[i] == (i <= 1 ? 1 : f));
  }
}

TEST_CASE("exit ends threads early and bar.sync still completes", "[sim][instr]") {
  auto r = runScalar(R"(
  setp.ge.u32 %p1, %r0, 16;
  @%p1 exit;
  bar.sync 0;
)" + st32("%r0", 0),
                     1, 64);
  for (int t = 0; t < 64; ++t)
    CHECK(r[t] == (t < 16 ? uint64_t(t) : 0));
}

TEST_CASE("trap stops the launch with its location", "[sim][instr]") {
  auto dev = sim::makeSimDevice(h100());
  Buffer<uint64_t> out(*dev, size_t(4));
  try {
    runPtx(*dev, scalarKernel("  setp.eq.u32 %p1, %r0, 3;\n  @%p1 trap;\n", 1), "t", grid1D(1, 4),
           {out.arg()});
    FAIL("trap should fail the launch");
  } catch (const DeviceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("trap executed") && Catch::Contains("thread (3,0,0)") &&
                             Catch::Contains("@%p1 trap;"));
  }
}

TEST_CASE("named barriers with a thread count, fences, warp sync, clocks, shared atomics",
          "[sim][instr]") {
  // warps 0-1 meet at barrier 1 (64 threads); warps 2-3 at barrier 2 (64 threads)
  auto r = runScalar(R"(
  .shared .align 4 .b8 cnt[8];
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra INIT_DONE;
  st.shared.u32 [cnt], 0;
  st.shared.u32 [cnt+4], 5;
INIT_DONE:
  bar.sync 0;
  shr.u32 %r1, %r0, 6;
  setp.eq.u32 %p2, %r1, 0;
  @%p2 bra LOW;
  red.shared.add.u32 [cnt], 1;
  barrier.sync 2, 64;
  bra.uni JOIN;
LOW:
  red.shared.add.u32 [cnt], 1;
  bar.sync 1, 64;
JOIN:
  membar.gl;
  fence.acq_rel.gpu;
  bar.warp.sync -1;
  mov.u64 %rd3, %clock64;
  mov.u64 %rd4, %clock64;
  sub.s64 %rd5, %rd4, %rd3;
  setp.gt.s64 %p3, %rd5, 0;
  selp.u32 %r2, 1, 0, %p3;
  atom.shared.cas.b32 %r3, [cnt+4], 5, 6;
  bar.sync 0;
  ld.shared.u32 %r4, [cnt];
  ld.shared.u32 %r5, [cnt+4];
  ld.global.nc.u32 %r6, [%rd2];
  st.global.u32 [%rd2], %r2;
  st.global.u32 [%rd2+8], %r4;
  st.global.u32 [%rd2+16], %r5;
)",
                     3, 128);
  for (int t = 0; t < 128; ++t) {
    INFO("thread " << t);
    CHECK(r[3 * t] == 1);       // the clock moves forward
    CHECK(r[3 * t + 1] == 128); // every thread's reduction landed before the last barrier
    CHECK(r[3 * t + 2] == 6);   // exactly one compare-and-swap succeeded
  }
}

TEST_CASE("bar.arrive: producers arrive without waiting, consumers wait for them", "[sim][instr]") {
  // warp 1 produces into shared memory and arrives at barrier 3; warp 0, which runs first,
  // waits there (64 threads) and must not read before the producers arrived
  auto r = runScalar(R"(
  .shared .align 4 .b8 buf[128];
  and.b32 %r1, %r0, 31;
  mul.wide.u32 %rd3, %r1, 4;
  mov.u64 %rd4, buf;
  add.s64 %rd5, %rd4, %rd3;
  setp.ge.u32 %p1, %r0, 32;
  @!%p1 bra CONSUMER;
  mul.lo.u32 %r2, %r0, 3;
  st.shared.u32 [%rd5], %r2;
  bar.arrive 3, 64;
  bra.uni DONE;
CONSUMER:
  bar.sync 3, 64;
  ld.shared.u32 %r3, [%rd5];
  st.global.u32 [%rd2], %r3;
DONE:
)",
                     1, 64);
  for (int t = 0; t < 32; ++t)
    CHECK(r[t] == uint64_t((t + 32) * 3));
}

namespace {
// Loads the 32-bit words A[tid] into %r1 and B[tid] into %r2 (tables declared by tables32).
std::string tables32(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  auto list = [](const std::vector<uint32_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  };
  return ".global .align 4 .u32 A[" + std::to_string(a.size()) + "] = {" + list(a) + "};\n" +
         ".global .align 4 .u32 B[" + std::to_string(b.size()) + "] = {" + list(b) + "};\n";
}
const char* kLoadAB = R"(
  mul.wide.u32 %rd3, %r0, 4;
  mov.u64 %rd4, A;
  add.s64 %rd5, %rd4, %rd3;
  ld.global.u32 %r1, [%rd5];
  mov.u64 %rd4, B;
  add.s64 %rd5, %rd4, %rd3;
  ld.global.u32 %r2, [%rd5];
)";
uint32_t pack16(uint16_t lo, uint16_t hi) {
  return uint32_t(lo) | (uint32_t(hi) << 16);
}
} // namespace

TEST_CASE("cvt between integer types chops to the destination and extends by its signedness",
          "[sim][instr]") {
  // the i8 row max NVPTX emits on sm_80: a value masked to 8 bits (and.b32 255), moved through
  // shfl, comes back with cvt.s8.s32, which must sign-extend: 255 is -1 in the .s16 max
  auto r = runScalar(R"(
  mov.u32 %r1, 255;
  cvt.s8.s32 %h1, %r1;
  max.s16 %h2, %h1, 8;
  cvt.u8.s32 %h3, -1;
  cvt.s16.s32 %h4, 0x12348000;
  cvt.s32.s16 %r2, %h4;
  cvt.u16.u32 %h5, 0x12345678;
  mov.u16 %h6, 0x0180;
  cvt.s8.s16 %h7, %h6;
  cvt.sat.s8.s32 %h8, 300;
  cvt.sat.u8.s32 %h9, -3;
  cvt.s32.s64 %r3, 0x180000000;
  cvt.u32.u64 %r4, 0x1FFFFFFFF;
  cvt.s64.s8 %rd3, %h1;
  cvt.u64.u8 %rd4, %h1;
  cvt.s8.s32 %h10, 0x7F;
  cvt.u64.s32 %rd5, -2;
)" + std::string("  st.global.b16 [%rd2+0], %h1;\n  st.global.b16 [%rd2+8], %h2;\n"
                                     "  st.global.b16 [%rd2+16], %h3;\n  st.global.b16 [%rd2+24], %h4;\n") +
                         st32("%r2", 4) + "  st.global.b16 [%rd2+40], %h5;\n" +
                         "  st.global.b16 [%rd2+48], %h7;\n  st.global.b16 [%rd2+56], %h8;\n" +
                         "  st.global.b16 [%rd2+64], %h9;\n" + st32("%r3", 9) + st32("%r4", 10) +
                         st64("%rd3", 11) + st64("%rd4", 12) +
                         "  st.global.b16 [%rd2+104], %h10;\n" + st64("%rd5", 14),
                     15);
  CHECK(r[0] == 0xFFFF);     // cvt.s8.s32 255 → -1, sign-extended into the 16-bit register
  CHECK(r[1] == 8);          // max.s16(-1, 8), not 255
  CHECK(r[2] == 0x00FF);     // cvt.u8.s32 -1 → 255, zero-extended
  CHECK(r[3] == 0x8000);     // chopped to 16 bits
  CHECK(r[4] == 0xFFFF8000u); // -32768
  CHECK(r[5] == 0x5678);
  CHECK(r[6] == 0xFF80);     // -128 from the low byte 0x80
  CHECK(r[7] == 0x007F);     // .sat clamps 300 to 127
  CHECK(r[8] == 0x0000);     // .sat clamps -3 to 0
  CHECK(r[9] == 0x80000000u);
  CHECK(r[10] == 0xFFFFFFFFu);
  CHECK(r[11] == ~uint64_t(0)); // s8 -1 widened to s64
  CHECK(r[12] == 0xFF);         // the same register read as u8
  CHECK(r[13] == 0x007F);
  CHECK(r[14] == uint64_t(-2)); // s32 source is sign-extended, whatever the destination
}

TEST_CASE("packed 16-bit integers: add/sub wrap per half, min/max{.relu} per half",
          "[sim][instr]") {
  // sm_90 NVPTX lowers <2 x i16> (i8 reductions widened to i16) to these
  const std::vector<uint32_t> a = {0x8000FFFFu, 0x7FFF0001u, 0xFFFE0005u, 0x00000000u,
                                   0x12345678u};
  const std::vector<uint32_t> b = {0x7FFF0001u, 0x8000FFFFu, 0x00030002u, 0xFFFFFFFFu,
                                   0x12345678u};
  const int n = int(a.size());
  auto r = runScalar(std::string(kLoadAB) + R"(
  add.s16x2 %r3, %r1, %r2;
  add.u16x2 %r4, %r1, %r2;
  sub.s16x2 %r5, %r1, %r2;
  sub.u16x2 %r6, %r1, %r2;
  min.s16x2 %r7, %r1, %r2;
  max.s16x2 %r8, %r1, %r2;
  min.u16x2 %r9, %r1, %r2;
  max.u16x2 %r10, %r1, %r2;
  min.relu.s16x2 %r11, %r1, %r2;
  max.relu.s16x2 %r12, %r1, %r2;
  min.relu.s32 %r13, %r1, %r2;
  max.relu.s32 %r14, %r1, %r2;
  add.s16x2 %r15, %r1, 0x00010001;
)" + st32("%r3", 0) + st32("%r4", 1) + st32("%r5", 2) +
                         st32("%r6", 3) + st32("%r7", 4) + st32("%r8", 5) + st32("%r9", 6) +
                         st32("%r10", 7) + st32("%r11", 8) + st32("%r12", 9) + st32("%r13", 10) +
                         st32("%r14", 11) + st32("%r15", 12),
                     13, n, tables32(a, b));
  for (int t = 0; t < n; ++t) {
    INFO("lane " << t << ": a = " << a[t] << ", b = " << b[t]);
    const uint64_t* s = &r[size_t(t) * 13];
    uint16_t al = uint16_t(a[t]), ah = uint16_t(a[t] >> 16);
    uint16_t bl = uint16_t(b[t]), bh = uint16_t(b[t] >> 16);
    auto smin = [](uint16_t x, uint16_t y) { return uint16_t(std::min(int16_t(x), int16_t(y))); };
    auto smax = [](uint16_t x, uint16_t y) { return uint16_t(std::max(int16_t(x), int16_t(y))); };
    auto relu = [](uint16_t x) { return int16_t(x) < 0 ? uint16_t(0) : x; };
    const uint32_t sum = pack16(uint16_t(al + bl), uint16_t(ah + bh));
    const uint32_t diff = pack16(uint16_t(al - bl), uint16_t(ah - bh));
    CHECK(s[0] == sum); // no carry from the low half into the high half
    CHECK(s[1] == sum);
    CHECK(s[2] == diff);
    CHECK(s[3] == diff);
    CHECK(s[4] == pack16(smin(al, bl), smin(ah, bh)));
    CHECK(s[5] == pack16(smax(al, bl), smax(ah, bh)));
    CHECK(s[6] == pack16(std::min(al, bl), std::min(ah, bh)));
    CHECK(s[7] == pack16(std::max(al, bl), std::max(ah, bh)));
    CHECK(s[8] == pack16(relu(smin(al, bl)), relu(smin(ah, bh))));
    CHECK(s[9] == pack16(relu(smax(al, bl)), relu(smax(ah, bh))));
    CHECK(s[10] == uint32_t(std::max(0, std::min(int32_t(a[t]), int32_t(b[t])))));
    CHECK(s[11] == uint32_t(std::max(0, std::max(int32_t(a[t]), int32_t(b[t])))));
    CHECK(s[12] == pack16(uint16_t(al + 1), uint16_t(ah + 1)));
  }
  // spot values, written out: lane 0 is {lo -1, hi -32768} and {lo 1, hi 32767}
  CHECK(r[0] == 0xFFFF0000u);
  CHECK(r[2] == 0x0001FFFEu);
  CHECK(r[4] == 0x8000FFFFu);
  CHECK(r[5] == 0x7FFF0001u);
  CHECK(r[6] == 0x7FFF0001u);
  CHECK(r[7] == 0x8000FFFFu);
  CHECK(r[2 * 13 + 8] == 0x00000002u); // {lo min(5,2)=2, hi relu(min(-2,3))=0}
}

TEST_CASE("setp on f16x2 / bf16x2: p compares the low halves, q the high halves",
          "[sim][instr]") {
  // lanes: {lo, hi} of a and b as f16 (0x3C00 = 1, 0x4000 = 2, 0x7E00 = NaN) or bf16
  const std::vector<uint32_t> a = {0x40003C00u, 0x3C007E00u, 0x3C004000u};
  const std::vector<uint32_t> b = {0x3C004000u, 0x3C003C00u, 0x3C004000u};
  const std::vector<uint32_t> abf = {0xBF803F80u, 0x3F807FC0u, 0x00008000u}; // {1,-1} {NaN,1} {-0,+0}
  const std::vector<uint32_t> bbf = {0x00007FC0u, 0x3F803F80u, 0x80000000u}; // {NaN,0} {1,1} {+0,-0}
  std::string decls = tables32(a, b);
  decls += ".global .align 4 .u32 C[3] = {" + std::to_string(abf[0]) + ", " +
           std::to_string(abf[1]) + ", " + std::to_string(abf[2]) + "};\n";
  decls += ".global .align 4 .u32 D[3] = {" + std::to_string(bbf[0]) + ", " +
           std::to_string(bbf[1]) + ", " + std::to_string(bbf[2]) + "};\n";
  auto r = runScalar(std::string(kLoadAB) + R"(
  mov.u64 %rd4, C;
  add.s64 %rd5, %rd4, %rd3;
  ld.global.u32 %r3, [%rd5];
  mov.u64 %rd4, D;
  add.s64 %rd5, %rd4, %rd3;
  ld.global.u32 %r4, [%rd5];
  setp.lt.f16x2 %p1|%p2, %r1, %r2;
  setp.equ.f16x2 %p3|%p4, %r1, %r2;
)" + stPred("%p1", 0) + stPred("%p2", 1) + stPred("%p3", 2) +
                         stPred("%p4", 3) + R"(
  setp.eq.u32 %p7, 1, 1;
  setp.ge.and.f16x2 %p1|%p2, %r1, %r2, %p7;
  setp.neu.or.f16x2 %p3|%p4, %r1, %r1, !%p7;
)" + stPred("%p1", 4) + stPred("%p2", 5) + stPred("%p3", 6) +
                         stPred("%p4", 7) + R"(
  setp.gt.bf16x2 %p1|%p2, %r3, %r4;
  setp.gtu.bf16x2 %p3|%p4, %r3, %r4;
  setp.eq.bf16x2 %p5|%p6, %r3, %r4;
)" + stPred("%p1", 8) + stPred("%p2", 9) + stPred("%p3", 10) +
                         stPred("%p4", 11) + stPred("%p5", 12) + stPred("%p6", 13),
                     14, 3, decls);
  // f16: lane 0 {1,2} vs {2,1}; lane 1 {NaN,1} vs {1,1}; lane 2 {2,1} vs {2,1}
  const int want[3][14] = {
      // lt lo, lt hi, equ lo, equ hi, ge&p7 lo, hi, neu|!p7 lo, hi, bf16 gt, gtu, eq
      {1, 0, 0, 0, 0, 1, 0, 0, /*bf16 {1,-1} vs {NaN,0}*/ 0, 0, 1, 0, 0, 0},
      {0, 0, 1, 1, 0, 1, 1, 0, /*{NaN,1} vs {1,1}*/ 0, 0, 1, 0, 0, 1},
      {0, 0, 1, 1, 1, 1, 0, 0, /*{-0,+0} vs {+0,-0}*/ 0, 0, 0, 0, 1, 1},
  };
  for (int t = 0; t < 3; ++t)
    for (int k = 0; k < 14; ++k) {
      INFO("lane " << t << " result " << k);
      CHECK(r[size_t(t) * 14 + k] == uint64_t(want[t][k]));
    }
}

TEST_CASE("min/max NaN rules for f32, f16, f16x2, bf16, bf16x2, with and without .NaN",
          "[sim][instr]") {
  // lanes: a, b as 32-bit words; f16/bf16 instructions read the low half, x2 both halves
  const std::vector<uint32_t> a = {0x7FC00000u, 0x3F800000u, 0x80000000u, 0x7E003C00u,
                                   0xBF807FC0u};
  const std::vector<uint32_t> b = {0x3F800000u, 0x7FC00000u, 0x00000000u, 0x40007E00u,
                                   0x7FC03F80u};
  const int n = int(a.size());
  auto r = runScalar(std::string(kLoadAB) + R"(
  mov.b32 %f1, %r1;
  mov.b32 %f2, %r2;
  min.f32 %f3, %f1, %f2;
  max.f32 %f4, %f1, %f2;
  min.NaN.f32 %f5, %f1, %f2;
  max.NaN.f32 %f6, %f1, %f2;
  mov.b32 {%h1, %h2}, %r1;
  mov.b32 {%h3, %h4}, %r2;
  min.f16 %h5, %h1, %h3;
  max.NaN.f16 %h6, %h1, %h3;
  min.f16x2 %r3, %r1, %r2;
  max.NaN.f16x2 %r4, %r1, %r2;
  max.bf16 %h7, %h1, %h3;
  min.NaN.bf16 %h8, %h1, %h3;
  max.bf16x2 %r5, %r1, %r2;
  min.NaN.bf16x2 %r6, %r1, %r2;
  min.NaN.f16x2 %r7, %r1, %r2;
  max.NaN.bf16x2 %r8, %r1, %r2;
)" + st32("%f3", 0) + st32("%f4", 1) + st32("%f5", 2) +
                         st32("%f6", 3) +
                         "  st.global.b16 [%rd2+32], %h5;\n  st.global.b16 [%rd2+40], %h6;\n" +
                         st32("%r3", 6) + st32("%r4", 7) +
                         "  st.global.b16 [%rd2+64], %h7;\n  st.global.b16 [%rd2+72], %h8;\n" +
                         st32("%r5", 10) + st32("%r6", 11) + st32("%r7", 12) + st32("%r8", 13),
                     14, n, tables32(a, b));
  // Host reference: PTX min/max return the non-NaN operand (canonical NaN when both are
  // NaN); .NaN returns the canonical NaN when either is; -0 < +0.
  auto isNaN16 = [](uint16_t h, bool bf) {
    return bf ? ((h & 0x7F80) == 0x7F80 && (h & 0x7F)) : ((h & 0x7C00) == 0x7C00 && (h & 0x3FF));
  };
  auto val16 = [](uint16_t h, bool bf) -> double {
    if (bf) return asFloat(uint32_t(h) << 16);
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e ? std::ldexp(1024 + m, e - 25) : std::ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
  };
  auto mm16 = [&](uint16_t x, uint16_t y, bool mn, bool nan, bool bf) -> uint16_t {
    bool nx = isNaN16(x, bf), ny = isNaN16(y, bf);
    if (nx && ny) return 0x7FFF;
    if (nan && (nx || ny)) return 0x7FFF;
    if (nx) return y;
    if (ny) return x;
    double vx = val16(x, bf), vy = val16(y, bf);
    if (vx == vy) return ((x & 0x8000) != 0) == mn ? x : y; // -0 is the min, +0 the max
    return (vx < vy) == mn ? x : y;
  };
  auto mm32 = [&](uint32_t x, uint32_t y, bool mn, bool nan) -> uint32_t {
    float fx = asFloat(x), fy = asFloat(y);
    bool nx = std::isnan(fx), ny = std::isnan(fy);
    if ((nx && ny) || (nan && (nx || ny))) return 0x7FFFFFFFu;
    if (nx) return y;
    if (ny) return x;
    if (fx == fy) return ((x & 0x80000000u) != 0) == mn ? x : y;
    return (fx < fy) == mn ? x : y;
  };
  auto x2 = [&](uint32_t x, uint32_t y, bool mn, bool nan, bool bf) {
    return pack16(mm16(uint16_t(x), uint16_t(y), mn, nan, bf),
                  mm16(uint16_t(x >> 16), uint16_t(y >> 16), mn, nan, bf));
  };
  for (int t = 0; t < n; ++t) {
    INFO("lane " << t << ": a = " << a[t] << ", b = " << b[t]);
    const uint64_t* s = &r[size_t(t) * 14];
    const uint16_t al = uint16_t(a[t]), bl = uint16_t(b[t]);
    CHECK(s[0] == mm32(a[t], b[t], true, false));
    CHECK(s[1] == mm32(a[t], b[t], false, false));
    CHECK(s[2] == mm32(a[t], b[t], true, true));
    CHECK(s[3] == mm32(a[t], b[t], false, true));
    CHECK(s[4] == mm16(al, bl, true, false, false));
    CHECK(s[5] == mm16(al, bl, false, true, false));
    CHECK(s[6] == x2(a[t], b[t], true, false, false));
    CHECK(s[7] == x2(a[t], b[t], false, true, false));
    CHECK(s[8] == mm16(al, bl, false, false, true));
    CHECK(s[9] == mm16(al, bl, true, true, true));
    CHECK(s[10] == x2(a[t], b[t], false, false, true));
    CHECK(s[11] == x2(a[t], b[t], true, true, true));
    CHECK(s[12] == x2(a[t], b[t], true, true, false));
    CHECK(s[13] == x2(a[t], b[t], false, true, true));
  }
  // spot values written out
  CHECK(r[0 * 14 + 0] == 0x3F800000u);  // min.f32(NaN, 1) = 1
  CHECK(r[0 * 14 + 2] == 0x7FFFFFFFu);  // min.NaN.f32(NaN, 1) = NaN
  CHECK(r[2 * 14 + 0] == 0x80000000u);  // min.f32(-0, +0) = -0
  CHECK(r[2 * 14 + 1] == 0x00000000u);  // max.f32(-0, +0) = +0
  CHECK(r[3 * 14 + 6] == 0x40003C00u);  // min.f16x2({1, NaN}, {NaN, 2}) = {1, 2}
  CHECK(r[3 * 14 + 7] == 0x7FFF7FFFu);  // max.NaN.f16x2: NaN in both halves
  CHECK(r[4 * 14 + 10] == 0xBF803F80u); // max.bf16x2({NaN, -1}, {1, NaN}) = {1, -1}
  CHECK(r[4 * 14 + 11] == 0x7FFF7FFFu); // min.NaN.bf16x2 of the same: NaN in both halves
}

TEST_CASE("half-precision families of sm_80 / sm_90: bf16 arithmetic, fma .relu, conversions",
          "[sim][instr]") {
  auto st16 = [](const std::string& reg, int k) {
    return "  st.global.b16 [%rd2+" + std::to_string(8 * k) + "], " + reg + ";\n";
  };
  auto r = runScalar(R"(
  mov.b16 %h1, 0x3F60;
  mov.b16 %h2, 0x3F94;
  mov.b16 %h3, 0x9780;
  fma.rn.bf16 %h4, %h1, %h2, %h3;
  mov.b16 %h3, 0x1780;
  fma.rn.bf16 %h5, %h1, %h2, %h3;
  mov.b16 %h6, 0xC000;
  mov.b16 %h7, 0x4040;
  mov.b16 %h8, 0x3F80;
  fma.rn.relu.bf16 %h9, %h6, %h7, %h8;
  mov.b16 %h10, 0x4200;
  mov.b16 %h11, 0x3C00;
  mov.b32 %r1, {%h6, %h1};
  mov.b32 %r2, {%h10, %h10};
  mov.b32 %r3, {%h11, %h11};
  fma.rn.relu.f16x2 %r4, %r1, %r2, %r3;
  mov.b16 %h12, 0x7FC0;
  fma.rn.relu.bf16 %h13, %h12, %h7, %h8;
  add.rn.bf16 %h14, %h8, %h8;
)" + st16("%h4", 0) + st16("%h5", 1) + st16("%h9", 2) + st32("%r4", 3) +
                         st16("%h13", 4) + st16("%h14", 5) + R"(
  mov.b32 %r5, {%h8, %h7};
  mov.b32 %r6, {%h7, %h7};
  sub.rn.bf16x2 %r7, %r5, %r6;
  mul.rn.bf16x2 %r8, %r5, %r6;
  fma.rn.bf16x2 %r9, %r5, %r6, %r5;
  neg.bf16x2 %r10, %r5;
  mov.b16 %h15, 0xFFC1;
  abs.bf16 %h15, %h15;
  ex2.approx.ftz.bf16 %h1, %h7;
  cvt.rn.bf16.f32 %h2, 0f3F808000;
  cvt.rn.bf16.f32 %h3, 0f3F818000;
  cvt.f32.bf16 %f1, %h8;
  cvt.rn.bf16x2.f32 %r11, 0f40400000, 0fBF800000;
)" + st32("%r7", 6) + st32("%r8", 7) + st32("%r9", 8) + st32("%r10", 9) +
                         st16("%h15", 10) + st16("%h1", 11) + st16("%h2", 12) + st16("%h3", 13) +
                         st32("%f1", 14) + st32("%r11", 15) + R"(
  cvt.rn.bf16.s32 %h6, 257;
  cvt.rn.bf16.s32 %h9, 259;
  mov.b16 %h12, 0xBFC0;
  cvt.rmi.bf16.bf16 %h10, %h12;
  cvt.rzi.s32.bf16 %r12, %h12;
  ex2.approx.f16x2 %r13, %r3;
  mov.b16 %h0, 0x0000;
  tanh.approx.bf16 %h11, %h0;
)" + st16("%h6", 16) + st16("%h9", 17) + st16("%h10", 18) +
                         st32("%r12", 19) + st32("%r13", 20) + st16("%h11", 21),
                     22);
  // 0.875 * 1.15625 = 259/256, exactly halfway between the bf16 neighbours 258/256 and
  // 260/256; -2^-80 must tip it down, +2^-80 up (rounding through double would tie to even)
  CHECK(r[0] == 0x3F81);
  CHECK(r[1] == 0x3F82);
  CHECK(r[2] == 0x0000);       // relu(-2 * 3 + 1)
  CHECK(r[3] == 0x46880000u);  // f16x2 relu: {lo relu(-2*3+1) = 0, hi 1.84375*3+1 = 6.53125}
  CHECK(r[4] == 0x7FFF);       // relu keeps NaN (canonical)
  CHECK(r[5] == 0x4000);       // 1 + 1
  CHECK(r[6] == 0x0000C000u);  // {1 - 3, 3 - 3} = {-2, 0}
  CHECK(r[7] == 0x41104040u);  // {1 * 3, 3 * 3} = {3, 9}
  CHECK(r[8] == 0x41404080u);  // {1 * 3 + 1, 3 * 3 + 3} = {4, 12}
  CHECK(r[9] == 0xC040BF80u);  // {-1, -3}
  CHECK(r[10] == 0x7FC1);      // abs clears the sign, keeps the payload
  CHECK(r[11] == 0x4100);      // 2^3
  CHECK(r[12] == 0x3F80);      // tie to even
  CHECK(r[13] == 0x3F82);      // tie to even
  CHECK(r[14] == 0x3F800000u);
  CHECK(r[15] == 0x4040BF80u); // {hi cvt(a) = 3, lo cvt(b) = -1}
  CHECK(r[16] == 0x4380);      // 257 -> 256 (tie to even)
  CHECK(r[17] == 0x4382);      // 259 -> 260 (tie to even)
  CHECK(r[18] == 0xC000);      // floor(-1.5) = -2
  CHECK(r[19] == uint32_t(-1)); // trunc(-1.5)
  CHECK(r[20] == 0x40004000u); // ex2 of {1, 1} = {2, 2}
  CHECK(r[21] == 0x0000);      // tanh(0)
}

TEST_CASE("cvt from 64-bit integers to bf16/f16 rounds once, not through double",
          "[sim][instr]") {
  // 2^60 + 2^52 is halfway between the bf16 values 2^60 (0x5D80) and 2^60 + 2^53 (0x5D81)
  auto r = runScalar(R"(
  cvt.rn.bf16.s64 %h1, 0x1010000000000001;
  cvt.rn.bf16.s64 %h2, 0x1010000000000000;
  cvt.rz.bf16.u64 %h3, 0x101FFFFFFFFFFFFF;
  cvt.rp.bf16.s64 %h4, 0x1000000000000001;
  cvt.rn.bf16.s64 %h5, -1157425104234217473;
  cvt.rn.f16.s64 %h6, 2049;
  cvt.rn.f16.u64 %h7, 0xFFFFFFFFFFFFFFFF;
)" + std::string("  st.global.b16 [%rd2+0], %h1;\n  st.global.b16 [%rd2+8], %h2;\n"
                                     "  st.global.b16 [%rd2+16], %h3;\n  st.global.b16 [%rd2+24], %h4;\n"
                                     "  st.global.b16 [%rd2+32], %h5;\n  st.global.b16 [%rd2+40], %h6;\n"
                                     "  st.global.b16 [%rd2+48], %h7;\n"),
                     7);
  CHECK(r[0] == 0x5D81); // just above the tie: up
  CHECK(r[1] == 0x5D80); // the tie itself: to even
  CHECK(r[2] == 0x5D80); // 2^60 + 2^53 - 1 toward zero (a double would round it up to 2^60 + 2^53)
  CHECK(r[3] == 0x5D81); // 2^60 + 1 toward +inf
  CHECK(r[4] == 0xDD81); // -(2^60 + 2^52 + 1)
  CHECK(r[5] == 0x6800); // 2049 -> 2048 (tie to even)
  CHECK(r[6] == 0x7C00); // 2^64 - 1 overflows f16 to +inf
}
