// Every kernel of the corpus in test/sim/ptx (compiled from ptx/src by clang-19/llc-19, see
// ptx/src/build.sh) loads, runs and computes what the host computes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>

#include "sim/float_convert.h"
#include "sim_test_util.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::sim::test;

TEST_CASE("corpus: every module loads", "[sim][corpus]") {
  auto dev = sim::makeSimDevice(h100());
  for (const char* f : {"elementwise.ptx", "reduce.ptx", "grid_barrier.ptx", "control.ptx", "math.ptx"}) {
    INFO(f);
    CHECK_NOTHROW(dev->loadModule(readPtx(f)));
  }
}

TEST_CASE("corpus: add_f32", "[sim][corpus]") {
  auto dev = sim::makeSimDevice(h100());
  const int n = 1000;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = i * 0.5f, b[i] = 1.0f / (i + 1);
  Buffer<float> A(*dev, a), B(*dev, b), C(*dev, size_t(n));
  auto c = runPtx(*dev, readPtx("elementwise.ptx"), "add_f32", grid1D((n + 255) / 256, 256),
                  {A.arg(), B.arg(), C.arg(), KernelArg::of(n)});
  auto r = C.get();
  for (int i = 0; i < n; ++i) REQUIRE(r[i] == std::fma(a[i], 2.0f, b[i]));
  CHECK(c.globalLoadRequests > 0);
}
