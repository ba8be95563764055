// Finding the driver: the dlopen failure path, what makeCudaDevice() says on this machine,
// a toolkit's stub libcuda (every entry point resolves, every call fails), and a weft built
// without the toolkit.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "runtime/cuda/cuda_device.h"
#include "weft/error.h"
#ifdef WEFT_HAVE_CUDA_TOOLKIT
#include "runtime/cuda/cuda_device_impl.h"
#include "runtime/cuda/driver_api.h"
#endif

using namespace weft;
using namespace weft::runtime::cuda;

namespace {
/// The message a DeviceError thrown by `f` carries ("" when it does not throw one).
template <class F> std::string deviceErrorOf(F&& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}
} // namespace

#ifdef WEFT_HAVE_CUDA_TOOLKIT

namespace {
bool libcudaLoads() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}
} // namespace

TEST_CASE("a missing driver library is reported in one line naming it", "[cuda]") {
  const std::string expected =
      "no CUDA driver found (/nonexistent/libcuda.so.1: cannot open shared object file: No "
      "such file or directory)";
  CHECK(deviceErrorOf([] { loadDriverApi("/nonexistent/libcuda.so.1"); }) == expected);
  CHECK(deviceErrorOf([] { makeCudaDevice(0, "/nonexistent/libcuda.so.1"); }) == expected);
  std::string why;
  CHECK_FALSE(cudaDriverAvailable(&why, "/nonexistent/libcuda.so.1"));
  CHECK(why == expected);
}

TEST_CASE("a library that is not a CUDA driver is refused naming the first missing entry point",
          "[cuda]") {
  // libm loads fine but has no cuGetErrorName
  std::string message = deviceErrorOf([] { loadDriverApi("libm.so.6"); });
  CHECK(message.rfind("the CUDA driver in libm.so.6 has no entry point cuGetErrorName", 0) == 0);
}

TEST_CASE("the toolkit's stub libcuda resolves every entry point and then fails at cuInit",
          "[cuda]") {
  std::string stub = std::string(WEFT_CUDA_STUBS_DIR) + "/libcuda.so";
  if (!std::filesystem::exists(stub)) {
    WARN("skipped: no stub driver at " << stub);
    return;
  }
  // In a child process: the stub's soname is libcuda.so.1, so once loaded it would answer
  // for the real driver in every later test of this process.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(fds[0]);
    std::string report;
    try {
      auto api = loadDriverApi(stub);
      report += api->viaGetProcAddress ? "getprocaddress\n" : "dlsym\n";
      report += api->cuLaunchCooperativeKernel && api->cuGraphExecKernelNodeSetParams ? "resolved\n"
                                                                                      : "missing\n";
      report += loadDriverApi(stub) == api ? "once\n" : "twice\n";
      report += deviceErrorOf([&] { CudaDevice device(api, 0); }) + "\n";
      std::string why;
      report += cudaDriverAvailable(&why, stub) ? "available\n" : why + "\n";
    } catch (const std::exception& e) {
      report += std::string("threw: ") + e.what() + "\n";
    }
    ssize_t written = write(fds[1], report.data(), report.size());
    _exit(written == ssize_t(report.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string report;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;)
    report.append(buffer, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  const std::string stubError =
      "cuInit failed: CUDA_ERROR_STUB_LIBRARY (CUDA driver is a stub library)";
  CHECK(report == "getprocaddress\nresolved\nonce\n" + stubError + "\n" + stubError + "\n");
}

#endif

TEST_CASE("makeCudaDevice() on a machine without a usable GPU fails with one clear line",
          "[cuda]") {
  std::string why;
  if (cudaDriverAvailable(&why)) {
    WARN("skipped: this machine has a CUDA driver and a GPU (the [gpu] tests cover it)");
    return;
  }
  std::string message = deviceErrorOf([] { makeCudaDevice(); });
  INFO(message);
  REQUIRE_FALSE(message.empty());
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message == why);
#ifdef WEFT_HAVE_CUDA_TOOLKIT
  if (!libcudaLoads())
    CHECK(message == "no CUDA driver found (libcuda.so.1: cannot open shared object file: No such "
                     "file or directory)");
#else
  CHECK(message.rfind("weft was built without the CUDA toolkit", 0) == 0);
#endif
}
