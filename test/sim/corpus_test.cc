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

namespace {
uint16_t halfBits(_Float16 v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return v != v ? uint16_t(0x7fff) : b; // the GPU's f16 arithmetic NaN is canonical
}
_Float16 halfOf(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return h;
}
// IEEE maximum/minimum (NaN wins, -0 < +0) and maxnum/minnum (a number wins), on doubles
// holding f16/bf16/f32 values; NaN comes back as NaN for the caller to encode
double ieeeMinMax(double x, double y, bool isMin, bool nanWins) {
  const bool nx = x != x, ny = y != y;
  if (nx || ny) return (nanWins || (nx && ny)) ? NAN : nx ? y : x;
  if (x == y) return (std::signbit(x) == isMin) ? x : y;
  return (x < y) == isMin ? x : y;
}
uint16_t bf16Bits(double v) {
  return hostBF16(float(v)); // exact: v is a bf16 value or NaN
}
} // namespace

TEST_CASE("corpus: packed integers, NaN-propagating min/max and bf16 (packed.ll)",
          "[sim][corpus]") {
  // a and b per thread: special lanes first, then pseudo-random words
  std::vector<uint32_t> a = {0x7FC00000u, 0x80000000u, 0x7E003C00u, 0xBF807FC0u,
                             0x8000FFFFu, 0x807F01FFu, 0x01010001u, 0x3F808000u};
  std::vector<uint32_t> b = {0x3F800000u, 0x00000000u, 0x40007E00u, 0x7FC03F80u,
                             0x7FFF0001u, 0x7F80FF01u, 0x3F800000u, 0xC0400000u};
  uint64_t s = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(s >> 32);
  };
  while (a.size() < 32)
    a.push_back(next()), b.push_back(next());
  for (const char* file : {"packed_sm80.ptx", "packed_sm90.ptx"}) {
    const bool sm90 = std::string(file) == "packed_sm90.ptx";
    Corpus c(file);
    Device& d = *c.dev;
    std::vector<uint32_t> in;
    for (size_t t = 0; t < 32; ++t)
      in.push_back(a[t]), in.push_back(b[t]);
    Buffer<uint32_t> In(d, in);
    Buffer<uint32_t> Out(d, size_t(32 * 32));
    c.run("packed", grid1D(1, 32), {In.arg(), Out.arg()});
    auto o = Out.get();
    for (size_t t = 0; t < 32; ++t) {
      INFO(file << " thread " << t << ": a = " << a[t] << ", b = " << b[t]);
      const uint32_t* r = &o[t * 32];
      const uint32_t A = a[t], B = b[t];
      auto h16 = [](uint32_t w, int i) { return uint16_t(w >> (16 * i)); };
      auto b8 = [](uint32_t w, int i) { return uint8_t(w >> (8 * i)); };
      auto pair = [](uint16_t lo, uint16_t hi) { return uint32_t(lo) | uint32_t(hi) << 16; };
      auto perHalf = [&](auto f) { return pair(f(h16(A, 0), h16(B, 0)), f(h16(A, 1), h16(B, 1))); };
      auto perByte = [&](auto f) {
        uint32_t w = 0;
        for (int i = 0; i < 4; ++i)
          w |= uint32_t(uint8_t(f(b8(A, i), b8(B, i)))) << (8 * i);
        return w;
      };
      // <2 x i16>, <4 x i8>: wrap, signed and unsigned min/max per element
      CHECK(r[0] == perHalf([](uint16_t x, uint16_t y) { return uint16_t(x + y); }));
      CHECK(r[1] == perHalf([](uint16_t x, uint16_t y) { return uint16_t(x - y); }));
      CHECK(r[2] == perHalf([](uint16_t x, uint16_t y) { return uint16_t(std::max(int16_t(x), int16_t(y))); }));
      CHECK(r[3] == perHalf([](uint16_t x, uint16_t y) { return uint16_t(std::min(int16_t(x), int16_t(y))); }));
      CHECK(r[4] == perHalf([](uint16_t x, uint16_t y) { return std::max(x, y); }));
      CHECK(r[5] == perHalf([](uint16_t x, uint16_t y) { return std::min(x, y); }));
      CHECK(r[6] == perByte([](uint8_t x, uint8_t y) { return x + y; }));
      CHECK(r[7] == perByte([](uint8_t x, uint8_t y) { return std::max(int8_t(x), int8_t(y)); }));
      CHECK(r[8] == perByte([](uint8_t x, uint8_t y) { return std::min(x, y); }));
      CHECK(r[9] == (uint32_t(b8(B, 3)) | uint32_t(b8(A, 0)) << 8 | uint32_t(b8(B, 1)) << 16 |
                     uint32_t(b8(A, 2)) << 24));
      CHECK(r[31] == uint32_t(int32_t(int8_t(b8(A, 3) + b8(B, 3)))));
      // f32 maximum / minimum: NaN wins (canonical), -0 < +0
      auto f32Bits = [](double v) { return v != v ? 0x7fffffffu : uint32_t(fbits(float(v))); };
      CHECK(r[10] == f32Bits(ieeeMinMax(asFloat(A), asFloat(B), false, true)));
      CHECK(r[11] == f32Bits(ieeeMinMax(asFloat(A), asFloat(B), true, true)));
      // f16: maximum of the low halves, minimum / maxnum of both, select on olt
      auto hv = [](uint16_t x) { return double(halfOf(x)); };
      auto hMinMax = [&](bool isMin, bool nanWins) {
        return [&, isMin, nanWins](uint16_t x, uint16_t y) {
          return halfBits(_Float16(ieeeMinMax(hv(x), hv(y), isMin, nanWins)));
        };
      };
      CHECK(r[12] == hMinMax(false, true)(h16(A, 0), h16(B, 0)));
      CHECK(r[13] == perHalf(hMinMax(true, true)));
      CHECK(r[14] == perHalf(hMinMax(false, false)));
      CHECK(r[15] == perHalf([&](uint16_t x, uint16_t y) { return hv(x) < hv(y) ? x : y; }));
      CHECK(r[30] == perHalf([&](uint16_t x, uint16_t y) { return halfBits(halfOf(x) + halfOf(y)); }));
      // bf16
      auto bv = [](uint16_t x) { return double(hostBF16ToFloat(x)); };
      auto bMinMax = [&](bool isMin, bool nanWins) {
        return [&, isMin, nanWins](uint16_t x, uint16_t y) {
          return bf16Bits(ieeeMinMax(bv(x), bv(y), isMin, nanWins));
        };
      };
      const uint16_t a0 = h16(A, 0), bb0 = h16(B, 0);
      CHECK(r[16] == bMinMax(true, true)(a0, bb0));
      CHECK(r[17] == perHalf(bMinMax(false, true)));
      CHECK(r[18] == bMinMax(true, false)(a0, bb0));
      // sums and products of two bf16 are exact in double, so one rounding to bf16
      CHECK(r[19] == perHalf([&](uint16_t x, uint16_t y) { return hostBF16(float(bv(x) + bv(y))); }));
      CHECK(r[20] == perHalf([&](uint16_t x, uint16_t y) { return hostBF16(float(bv(x) * bv(y))); }));
      const double fmaExact = bv(a0) * bv(bb0) + bv(a0); // exact unless b is far from 1
      if (std::fabs(std::ilogb(bv(bb0))) < 30 || fmaExact != fmaExact)
        CHECK(r[21] == hostBF16(float(fmaExact)));
      CHECK(r[22] == (A ^ 0x80008000u)); // fneg flips the signs, NaN payloads included
      CHECK(r[23] == (bb0 & 0x7fffu));
      CHECK(r[24] == perHalf([&](uint16_t x, uint16_t y) {
              return (bv(x) != bv(x) || bv(y) != bv(y) || bv(x) > bv(y)) ? x : y;
            }));
      // sm_80 converts i32 -> f32 -> bf16 (two roundings), sm_90 has cvt.rn.bf16.s32
      const int32_t ai = int32_t(A);
      uint16_t viaF32 = hostBF16(float(ai));
      if (sm90) {
        const double exact = double(ai); // exact; hostBF16 of its float can double-round
        float f = float(exact);
        if (double(f) != exact && (fbits(f) & 1) == 0) // round to odd at float first
          f = std::nextafter(f, exact > double(f) ? INFINITY : -INFINITY);
        CHECK(r[25] == hostBF16(f));
      } else {
        CHECK(r[25] == viaF32);
      }
      const double av = bv(a0);
      if (av == av && std::fabs(av) < 2147483648.0) CHECK(r[26] == uint32_t(int32_t(av)));
      if (av == av) CHECK(r[27] == uint32_t(a0) << 16);
      CHECK(r[28] == (av != av ? 0x7fffu : hostBF16(float(std::floor(av)))));
      CHECK(r[29] == hostBF16(asFloat(A)));
    }
    // spot values, written out
    CHECK(o[10] == 0x7fffffffu);          // maximum(NaN, 1)
    CHECK(o[32 + 10] == 0x00000000u);     // maximum(-0, +0) = +0
    CHECK(o[32 + 11] == 0x80000000u);     // minimum(-0, +0) = -0
    CHECK(o[2 * 32 + 13] == 0x7fff7fffu); // minimum({1, NaN}, {NaN, 2}): NaN in both halves
    CHECK(o[2 * 32 + 14] == 0x40003c00u); // maxnum of the same: {1, 2}
    CHECK(o[3 * 32 + 17] == 0x7fff7fffu); // bf16 maximum({NaN, -1}, {1, NaN})
    CHECK(o[4 * 32 + 0] == 0xffff0000u);  // {-1 + 1, -32768 + 32767}: no carry between halves
    CHECK(o[6 * 32 + 25] == (sm90 ? 0x4b81u : 0x4b80u)); // 2^24 + 2^16 + 1
  }
}
