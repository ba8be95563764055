// Every kernel of the corpus in test/sim/ptx (compiled from ptx/src by clang-19/llc-19, see
// ptx/src/build.sh) loads, runs and computes what the host computes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "sim/float_convert.h"
#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

TEST_CASE("corpus: every module loads", "[sim][corpus]") {
  auto dev = sim::makeSimDevice(h100());
  for (const char* f :
       {"elementwise.ptx", "reduce.ptx", "grid_barrier.ptx", "control.ptx", "math.ptx"}) {
    INFO(f);
    CHECK_NOTHROW(dev->loadModule(readPtx(f)));
  }
}

TEST_CASE("corpus: add_f32", "[sim][corpus]") {
  auto dev = sim::makeSimDevice(h100());
  const int n = 1000;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i)
    a[i] = i * 0.5f, b[i] = 1.0f / (i + 1);
  Buffer<float> A(*dev, a), B(*dev, b), C(*dev, size_t(n));
  auto c = runPtx(*dev, readPtx("elementwise.ptx"), "add_f32", grid1D((n + 255) / 256, 256),
                  {A.arg(), B.arg(), C.arg(), KernelArg::of(n)});
  auto r = C.get();
  for (int i = 0; i < n; ++i)
    REQUIRE(r[i] == std::fma(a[i], 2.0f, b[i]));
  CHECK(c.globalLoadRequests > 0);
}

namespace {
uint16_t hostHalf(float f) {
  _Float16 h = _Float16(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float hostHalfToFloat(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return float(h);
}
// round-to-nearest-even f32 → bf16, written independently of sim/float_convert
uint16_t hostBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fff;
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float hostBF16ToFloat(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
struct Corpus {
  std::unique_ptr<Device> dev = sim::makeSimDevice(h100());
  ModuleHandle mod;
  explicit Corpus(const char* file) { mod = dev->loadModule(readPtx(file)); }
  LaunchCounters run(const char* kernel, LaunchConfig cfg, const std::vector<KernelArg>& args) {
    dev->takeCounters();
    dev->launch(dev->getKernel(mod, kernel), cfg, args);
    return dev->takeCounters().at(0);
  }
};
} // namespace

TEST_CASE("corpus: elementwise kernels of every dtype", "[sim][corpus]") {
  Corpus c("elementwise.ptx");
  Device& d = *c.dev;
  const int n = 300;
  auto cfg = grid1D((n + 127) / 128, 128);
  SECTION("axpy_f64") {
    std::vector<double> a(n), b(n), want(n);
    for (int i = 0; i < n; ++i)
      a[i] = i * 0.25 - 7, b[i] = std::sin(i);
    for (int i = 0; i < n; ++i)
      want[i] = std::fma(1.5, a[i], b[i] / 3.0);
    Buffer<double> A(d, a), B(d, b);
    c.run("axpy_f64", cfg, {A.arg(), B.arg(), KernelArg::of(1.5), KernelArg::of(n)});
    CHECK(B.get() == want);
  }
  SECTION("scale_f16") {
    std::vector<uint16_t> a(n), want(n);
    for (int i = 0; i < n; ++i)
      a[i] = hostHalf(i * 0.37f - 40.f);
    for (int i = 0; i < n; ++i)
      want[i] = hostHalf(std::fma(hostHalfToFloat(a[i]), 1.5f, 0.25f));
    Buffer<uint16_t> A(d, a), B(d, size_t(n));
    c.run("scale_f16", cfg, {A.arg(), B.arg(), KernelArg::of(n)});
    CHECK(B.get() == want);
  }
  SECTION("add_bf16") {
    std::vector<uint16_t> a(n), b(n), want(n);
    for (int i = 0; i < n; ++i)
      a[i] = hostBF16(i * 1.37f), b[i] = hostBF16(-i * 0.011f + 3);
    for (int i = 0; i < n; ++i)
      want[i] = hostBF16(hostBF16ToFloat(a[i]) + hostBF16ToFloat(b[i]));
    Buffer<uint16_t> A(d, a), B(d, b), C(d, size_t(n));
    c.run("add_bf16", cfg, {A.arg(), B.arg(), C.arg(), KernelArg::of(n)});
    CHECK(C.get() == want);
  }
  SECTION("clamp_i8") {
    std::vector<int8_t> a(n), want(n);
    for (int i = 0; i < n; ++i)
      a[i] = int8_t(i * 7 - 128);
    for (int i = 0; i < n; ++i)
      want[i] = int8_t(std::clamp(a[i] * 3, -128, 127));
    Buffer<int8_t> A(d, a), B(d, size_t(n));
    c.run("clamp_i8", cfg, {A.arg(), B.arg(), KernelArg::of(n)});
    CHECK(B.get() == want);
  }
  SECTION("mix_i32") {
    std::vector<int> a(n), b(n), want(n);
    for (int i = 0; i < n; ++i)
      a[i] = (i * 7919) % 100000 - 50000, b[i] = (i * 31) % 97 - 48;
    for (int i = 0; i < n; ++i) {
      int x = a[i], y = b[i];
      want[i] = (x / (y | 1)) + (x % 7) - (x >> 3) + std::min(x, y) + __builtin_popcount(x) +
                __builtin_clz(x | 1);
    }
    Buffer<int> A(d, a), B(d, b), C(d, size_t(n));
    c.run("mix_i32", cfg, {A.arg(), B.arg(), C.arg(), KernelArg::of(n)});
    CHECK(C.get() == want);
  }
  SECTION("mix_u64") {
    std::vector<uint64_t> a(n), want(n);
    for (int i = 0; i < n; ++i)
      a[i] = 0xdeadbeefcafef00dull * uint64_t(i + 1) ^ uint64_t(i) << 40;
    for (int i = 0; i < n; ++i) {
      uint64_t x = a[i];
      want[i] = x * 0x9E3779B97F4A7C15ull + (x >> 17) + x / 1000003ull + (x % 97);
    }
    Buffer<uint64_t> A(d, a), C(d, size_t(n));
    c.run("mix_u64", cfg, {A.arg(), C.arg(), KernelArg::of(n)});
    CHECK(C.get() == want);
  }
  SECTION("cmp_bool") {
    std::vector<float> a(n), b(n);
    std::vector<uint8_t> want(n);
    for (int i = 0; i < n; ++i)
      a[i] = i % 5 == 0 ? NAN : float(i % 17), b[i] = float(i % 13);
    for (int i = 0; i < n; ++i)
      want[i] = (a[i] < b[i]) || std::isnan(a[i]);
    Buffer<float> A(d, a), B(d, b);
    Buffer<uint8_t> C(d, size_t(n));
    c.run("cmp_bool", cfg, {A.arg(), B.arg(), C.arg(), KernelArg::of(n)});
    CHECK(C.get() == want);
  }
  SECTION("cvt_mix") {
    std::vector<float> a(n);
    for (int i = 0; i < n; ++i)
      a[i] = (i - 150) * 1234.567f;
    Buffer<float> A(d, a);
    Buffer<int> I32(d, size_t(n));
    Buffer<int64_t> I64(d, size_t(n));
    Buffer<double> F64(d, size_t(n));
    Buffer<uint32_t> U32(d, size_t(n));
    c.run("cvt_mix", cfg, {A.arg(), I32.arg(), I64.arg(), F64.arg(), U32.arg(), KernelArg::of(n)});
    auto i32 = I32.get();
    auto i64 = I64.get();
    auto f64 = F64.get();
    auto u32 = U32.get();
    for (int i = 0; i < n; ++i) {
      REQUIRE(i32[i] == int(a[i]));
      REQUIRE(i64[i] == (long long)a[i]);
      REQUIRE(f64[i] == double(a[i]));
      REQUIRE(u32[i] == unsigned(std::fabs(a[i])));
    }
  }
  SECTION("vec4_f32") {
    std::vector<float> a(4 * n), want(4 * n);
    for (int i = 0; i < 4 * n; ++i)
      a[i] = (i % 11) - 5.5f;
    for (int i = 0; i < n; ++i) {
      want[4 * i] = a[4 * i] + 1.f;
      want[4 * i + 1] = a[4 * i + 1] * 2.f;
      want[4 * i + 2] = a[4 * i + 2] - 3.f;
      want[4 * i + 3] = a[4 * i + 3] > 0 ? a[4 * i + 3] : 0;
    }
    Buffer<float> A(d, a), B(d, size_t(4 * n));
    auto cnt = c.run("vec4_f32", grid1D(1, 32), {A.arg(), B.arg(), KernelArg::of(32)});
    auto r = B.get();
    for (int i = 0; i < 4 * 32; ++i)
      REQUIRE(r[i] == want[i]);
    // 32 lanes x 16 bytes = 512 bytes = 16 sectors, one request each way
    CHECK(cnt.globalLoadRequests == 1);
    CHECK(cnt.globalSectorsRead == 16);
    CHECK(cnt.globalSectorsWritten == 16);
  }
}

TEST_CASE("corpus: reductions", "[sim][corpus]") {
  Corpus c("reduce.ptx");
  Device& d = *c.dev;
  SECTION("row_sum with warp shuffles and shared memory") {
    const int rows = 5, cols = 1000;
    std::vector<float> x(rows * cols);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(int(i % 23) - 11);
    Buffer<float> X(d, x), Y(d, size_t(rows));
    auto cnt = c.run("row_sum", grid1D(rows, 256), {X.arg(), Y.arg(), KernelArg::of(cols)});
    auto y = Y.get();
    for (int r = 0; r < rows; ++r) {
      float s = 0;
      for (int k = 0; k < cols; ++k)
        s += x[r * cols + k];
      CHECK(y[r] == s); // small integers: exact in any order
    }
    CHECK(cnt.blockBarriers == rows);
    CHECK(cnt.sharedStores > 0);
  }
  SECTION("row_max_dyn with dynamic shared memory") {
    const int rows = 3, cols = 777;
    std::vector<float> x(rows * cols);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(float(i));
    Buffer<float> X(d, x), Y(d, size_t(rows));
    c.run("row_max_dyn", grid1D(rows, 128, false, 128 * 4),
          {X.arg(), Y.arg(), KernelArg::of(cols)});
    auto y = Y.get();
    for (int r = 0; r < rows; ++r)
      CHECK(y[r] == *std::max_element(x.begin() + r * cols, x.begin() + (r + 1) * cols));
  }
  SECTION("col_sum") {
    const int rows = 17, cols = 70;
    std::vector<float> x(rows * cols);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 7) * 0.5f;
    Buffer<float> X(d, x), Y(d, size_t(cols));
    c.run("col_sum", grid1D(3, 32), {X.arg(), Y.arg(), KernelArg::of(rows), KernelArg::of(cols)});
    auto y = Y.get();
    for (int k = 0; k < cols; ++k) {
      float s = 0;
      for (int r = 0; r < rows; ++r)
        s += x[r * cols + k];
      CHECK(y[k] == s);
    }
  }
  SECTION("col_sum_atomic") {
    const int rows = 9, cols = 40;
    std::vector<float> x(rows * cols);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 5);
    Buffer<float> X(d, x), Y(d, size_t(cols));
    auto cnt = c.run("col_sum_atomic", grid1D(rows, 64),
                     {X.arg(), Y.arg(), KernelArg::of(rows), KernelArg::of(cols)});
    auto y = Y.get();
    for (int k = 0; k < cols; ++k) {
      float s = 0;
      for (int r = 0; r < rows; ++r)
        s += x[r * cols + k];
      CHECK(y[k] == s);
    }
    CHECK(cnt.atomics == uint64_t(rows) * 2); // 40 active threads = two warps per block
  }
  SECTION("shfl_ops: up, down, idx, ballot, any, all") {
    std::vector<int> in(32);
    for (int i = 0; i < 32; ++i)
      in[i] = i * 3 + (i == 7 ? 200 : 0);
    Buffer<int> In(d, in), Out(d, size_t(32 * 6));
    c.run("shfl_ops", grid1D(1, 32), {In.arg(), Out.arg()});
    auto o = Out.get();
    uint32_t ballot = 0;
    for (int i = 0; i < 32; ++i)
      ballot |= uint32_t(in[i] & 1) << i;
    for (int t = 0; t < 32; ++t) {
      INFO("lane " << t);
      CHECK(o[t * 6 + 0] == (t >= 1 ? in[t - 1] : in[t]));
      CHECK(o[t * 6 + 1] == (t + 2 <= 31 ? in[t + 2] : in[t]));
      CHECK(o[t * 6 + 2] == in[5]);
      CHECK(uint32_t(o[t * 6 + 3]) == ballot);
      CHECK(o[t * 6 + 4] == 1);
      CHECK(o[t * 6 + 5] == 1);
    }
  }
}

TEST_CASE("corpus: grid barrier across blocks (cooperative)", "[sim][corpus]") {
  Corpus c("grid_barrier.ptx");
  Device& d = *c.dev;
  const int blocks = 6, n = blocks * 256 - 50;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i % 10);
  Buffer<float> X(d, x), Y(d, size_t(n)), P(d, size_t(blocks + 1));
  Buffer<uint32_t> Bar(d, size_t(2));
  auto cnt = c.run("center", grid1D(blocks, 256, true),
                   {X.arg(), Y.arg(), P.arg(), Bar.arg(), KernelArg::of(n)});
  double sum = std::accumulate(x.begin(), x.end(), 0.0);
  float mean = float(sum) / n;
  auto y = Y.get();
  for (int i = 0; i < n; ++i)
    REQUIRE(y[i] == x[i] - mean);
  CHECK(cnt.gridBarriers == 2);
  CHECK(cnt.syncInstructions > 0);
  CHECK(cnt.syncSectors > 0);
  CHECK(Bar.get()[1] == 2); // two generations passed
}

TEST_CASE("corpus: grid barrier without a cooperative launch is reported, not hung",
          "[sim][corpus]") {
  sim::ExecOptions opts;
  opts.deadlockInstructions = 1 << 16;
  auto dev = sim::makeSimDevice(h100(), opts);
  auto mod = dev->loadModule(readPtx("grid_barrier.ptx"));
  const int n = 512;
  Buffer<float> X(*dev, size_t(n)), Y(*dev, size_t(n)), P(*dev, size_t(3));
  Buffer<uint32_t> Bar(*dev, size_t(2));
  try {
    dev->launch(dev->getKernel(mod, "center"), grid1D(2, 256),
                {X.arg(), Y.arg(), P.arg(), Bar.arg(), KernelArg::of(n)});
    FAIL("expected a deadlock error");
  } catch (const DeviceError& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("waits in a grid barrier"));
    CHECK_THAT(msg, Catch::Contains("not cooperative"));
    CHECK_THAT(msg, Catch::Contains("block (0,0,0), thread (0,0,0)"));
  }
}

TEST_CASE("corpus: divergent control flow, calls and recursion", "[sim][corpus]") {
  Corpus c("control.ptx");
  Device& d = *c.dev;
  auto collatz = [](long long v) {
    int s = 0;
    while (v != 1)
      v = (v & 1) ? 3 * v + 1 : v / 2, ++s;
    return s;
  };
  std::function<int(int)> fib = [&](int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); };
  SECTION("divergent") {
    const int n = 96;
    std::vector<int> in(n), want(n);
    for (int i = 0; i < n; ++i)
      in[i] = (i * 37) % 61;
    for (int i = 0; i < n; ++i) {
      int v = in[i];
      if (v % 3 == 0)
        want[i] = collatz(v + 1);
      else if (v % 3 == 1)
        want[i] = fib(v & 15);
      else {
        want[i] = 0;
        for (int k = 0; k < v; ++k)
          want[i] += k * k;
      }
    }
    Buffer<int> In(d, in), Out(d, size_t(n));
    c.run("divergent", grid1D(3, 32), {In.arg(), Out.arg()});
    CHECK(Out.get() == want);
  }
  SECTION("local_array") {
    const int n = 64;
    std::vector<int> in(n), want(n);
    for (int i = 0; i < n; ++i)
      in[i] = (i * 13 + 5) % 101;
    for (int i = 0; i < n; ++i) {
      int buf[16];
      for (int k = 0; k < 16; ++k)
        buf[k] = in[(i + k) % n];
      int idx = in[i] & 15;
      want[i] = buf[idx] + buf[(idx + 3) & 15];
    }
    Buffer<int> In(d, in), Out(d, size_t(n));
    c.run("local_array", grid1D(2, 32), {In.arg(), Out.arg(), KernelArg::of(n)});
    CHECK(Out.get() == want);
  }
}

TEST_CASE("corpus: libdevice math", "[sim][corpus]") {
  Corpus c("math.ptx");
  Device& d = *c.dev;
  SECTION("f32") {
    const int n = 200;
    std::vector<float> a(n);
    for (int i = 0; i < n; ++i)
      a[i] = (i - 100) * 0.047f;
    Buffer<float> A(d, a), O(d, size_t(n * 10));
    c.run("math_f32", grid1D(2, 128), {A.arg(), O.arg(), KernelArg::of(n)});
    auto o = O.get();
    auto near = [](float got, double want) {
      return std::fabs(got - want) <= 2e-6 * std::max(1.0, std::fabs(want));
    };
    for (int i = 0; i < n; ++i) {
      double x = a[i];
      INFO("x = " << x);
      CHECK(near(o[i * 10 + 0], std::exp(x)));
      CHECK(near(o[i * 10 + 1], std::log(std::fabs(x) + 1e-3f)));
      CHECK(near(o[i * 10 + 2], std::tanh(x)));
      CHECK(near(o[i * 10 + 3], std::erf(x)));
      CHECK(near(o[i * 10 + 4], std::pow(std::fabs(x), 1.7)));
      CHECK(near(o[i * 10 + 5], std::sin(x)));
      CHECK(near(o[i * 10 + 6], std::cos(x)));
      CHECK(near(o[i * 10 + 7], 1 / std::sqrt(std::fabs(x) + 1)));
      CHECK(o[i * 10 + 8] == std::sqrt(std::fabs(a[i])));
      CHECK(near(o[i * 10 + 9], 1 / (1 + std::exp(-x))));
    }
  }
  SECTION("f64") {
    const int n = 100;
    std::vector<double> a(n);
    for (int i = 0; i < n; ++i)
      a[i] = (i - 50) * 0.173;
    Buffer<double> A(d, a), O(d, size_t(n * 4));
    c.run("math_f64", grid1D(1, 128), {A.arg(), O.arg(), KernelArg::of(n)});
    auto o = O.get();
    auto near = [](double got, double want) {
      return std::fabs(got - want) <= 1e-15 * std::max(1.0, std::fabs(want));
    };
    for (int i = 0; i < n; ++i) {
      double x = a[i];
      INFO("x = " << x);
      CHECK(o[i * 4 + 0] == std::sqrt(std::fabs(x)));
      CHECK(near(o[i * 4 + 1], std::exp(x)));
      CHECK(near(o[i * 4 + 2], std::log(std::fabs(x) + 1e-3)));
      CHECK(near(o[i * 4 + 3], std::tanh(x)));
    }
  }
}

TEST_CASE("corpus: LLVM intrinsics and half/bfloat arithmetic (ops.ll)", "[sim][corpus]") {
  Corpus c("ops.ptx");
  Device& d = *c.dev;
  const std::vector<float> xs = {0.3f,    -0.3f, 2.5f,   -2.5f,    1.0f,  0.75f, 3.7f,    -7.25f,
                                 NAN,     1e10f, -1e10f, 300.0f,   -0.0f, 0.0f,  0.5f,    1.5f,
                                 12.375f, -1.5f, 255.5f, 65504.0f, 1e-6f, -4.0f, 100.25f, 0.1f,
                                 5.0f,    -9.5f, 7.0f,   INFINITY, 33.3f, -0.7f, 2e9f,    -3e9f};
  REQUIRE(xs.size() == 32);
  Buffer<float> In(d, xs);
  Buffer<uint32_t> Out(d, size_t(32 * 32));
  c.run("ops", grid1D(1, 32), {In.arg(), Out.arg()});
  auto o = Out.get();
  auto bitsF = [](float f) { return uint32_t(fbits(f)); };
  auto h = [](float f) { return _Float16(f); };
  auto hbits = [](_Float16 v) {
    uint16_t b;
    std::memcpy(&b, &v, 2);
    return uint32_t(b);
  };
  for (uint32_t t = 0; t < 32; ++t) {
    const float x = xs[t];
    uint32_t xi;
    std::memcpy(&xi, &x, 4);
    const uint32_t* r = &o[t * 32];
    INFO("thread " << t << " x = " << x);
    const bool nan = std::isnan(x);
    CHECK(r[0] == bitsF(nan ? 1.0f : std::min(x, 1.0f)));
    CHECK(r[1] == (nan ? 0x7fffffffu : bitsF(std::max(x, 1.0f))));
    CHECK(r[2] == (nan ? 0x7fffffffu : bitsF(std::min(x, 1.0f))));
    CHECK(r[3] == ((xi << (t % 32)) | (t % 32 ? xi >> (32 - t % 32) : 0)));
    CHECK(r[4] == (xi ? uint32_t(__builtin_ctz(xi)) : 32u));
    CHECK(r[5] == uint32_t(__builtin_popcount(xi)));
    uint32_t rev = 0;
    for (int i = 0; i < 32; ++i)
      rev |= ((xi >> i) & 1) << (31 - i);
    CHECK(r[6] == rev);
    CHECK(r[7] == __builtin_bswap32(xi));
    const int32_t sat = nan                   ? 0
                        : x >= 2147483648.0f  ? INT32_MAX
                        : x <= -2147483648.0f ? INT32_MIN
                                              : int32_t(x);
    CHECK(r[8] == uint32_t(sat));
    CHECK(r[9] == (nan ? 0u : x <= 0 ? 0u : x >= 255 ? 255u : uint32_t(x)));
    CHECK(r[10] == uint32_t(sat == INT32_MIN ? sat : std::abs(sat)));
    CHECK(r[11] == uint32_t(std::max(sat, 3)));
    if (!nan) {
      _Float16 hx = h(x), h2 = hx * hx;
      _Float16 h3 = _Float16(double(h2) * double(hx) + double(hx));
      _Float16 h4 = h3 - hx;
      CHECK(r[12] == (h4 != h4 ? 0x7fffu : hbits(h4))); // the GPU's NaN is canonical
      _Float16 v0 = hx + hx, v1 = h2 + h2;
      v0 = v0 * hx;
      v1 = v1 * h2;
      CHECK(r[14] == (hbits(v0) | hbits(v1) << 16));
      float b = hostBF16ToFloat(hostBF16(x));
      float b2 = hostBF16ToFloat(hostBF16(b + b));
      CHECK(r[13] == hostBF16(b2 * b));
      CHECK(r[15] == bitsF(std::floor(x)));
      CHECK(r[16] == bitsF(std::round(x)));
      CHECK(r[17] == bitsF(std::trunc(x)));
      CHECK(r[18] == bitsF(float(std::nearbyint(double(x)))));
      if (std::fabs(x) < 100) CHECK(std::fabs(asFloat(r[19]) - std::fmod(x, 0.75f)) < 1e-5);
      double hd = double(hx) * 3.0;
      CHECK(r[25] == bitsF(float(hd)));
      CHECK(r[26] == hbits(_Float16(hd)));
    }
    CHECK(r[20] == uint32_t(int32_t(xi) / 7));
    CHECK(r[21] == uint32_t(int64_t(int32_t(xi)) % 1000000007));
    if (t) CHECK(r[22] == xi / t);
    CHECK(r[23] == std::min(xi, t));
    CHECK(r[24] == uint32_t(int32_t(std::min(int16_t(xi), int16_t(-5)))));
    CHECK(r[27] == bitsF(float(uint64_t(xi))));
    CHECK(r[28] == (xi ^ 0x80000000u));
    CHECK(r[29] == (!(x >= 0.5f) ? r[3] : r[4]));
  }
}
