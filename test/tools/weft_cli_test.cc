// The weft program: output, exit codes (0 ok, 2 input errors, 1 other errors) and messages.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/npy.h"
#include "run_weft.h"

namespace fs = std::filesystem;

namespace {

using weft::testing::runWeft;
using Result = weft::testing::WeftResult;

fs::path scratch() {
  return weft::testing::scratchDir();
}

std::string writeFile(const std::string& name, const std::string& text) {
  fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
}

const std::string kSoftmax =
    R"({"name": "sm", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 3]}],
  "ops": [{"name": "y", "op": "softmax", "inputs": ["x"]}], "outputs": ["y"]})";

} // namespace

TEST_CASE("weft --version and --help") {
  Result r = runWeft("--version");
  CHECK(r.rc == 0);
  CHECK(r.out.rfind("weft 0.", 0) == 0);
  for (const char* cmd : {"--help", "check --help", "eval --help"}) {
    Result h = runWeft(cmd);
    CHECK(h.rc == 0);
    CHECK(h.out.find("Usage:") != std::string::npos);
  }
  CHECK(runWeft("eval --help").out.find("--save-outputs") != std::string::npos);
}

TEST_CASE("weft check prints the IR with shapes") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("check " + g);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("graph sm(%x: f32[B, 3]) {\n  %y.max = reduce[max, axes=[1]](%x) : f32[B]\n",
                    0) == 0);
  CHECK(r.out.find("  %y = div(%y.exp, %y.sum_broadcast) : f32[B, 3]\n  return %y\n}\n") !=
        std::string::npos);
}

TEST_CASE("weft eval of a 2x3 softmax on given inputs matches the hand-computed values") {
  fs::path in = scratch() / "inputs";
  fs::create_directories(in);
  weft::HostTensor x(weft::DType::f32, {2, 3});
  std::vector<double> v{1, 2, 3, 0, 0, 0};
  for (int i = 0; i < 6; ++i)
    x.set(i, v[i]);
  weft::frontend::writeNpy((in / "x.npy").string(), x);
  std::string g = writeFile("sm.json", kSoftmax);
  fs::path outDir = scratch() / "outputs";
  Result r =
      runWeft("eval " + g + " --inputs " + in.string() + " --save-outputs " + outDir.string());
  CHECK(r.err.empty());
  REQUIRE(r.rc == 0);
  // B is bound from x.npy's shape.
  CHECK(
      r.out ==
      "y: f32[2, 3] min 0.0900306 max 0.665241 mean 0.333333 first [0.0900306, 0.244728, 0.665241, "
      "0.333333, 0.333333, 0.333333]\n");
  weft::HostTensor y = weft::frontend::readNpy((outDir / "y.npy").string(), weft::DType::f32);
  CHECK(y.shape == std::vector<int64_t>{2, 3});
  CHECK(y.get(2) == Approx(0.66524095577).epsilon(1e-6));
}

TEST_CASE("weft eval of layer norm on a known row") {
  std::string g =
      writeFile("ln.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [1, 4]}],
    "ops": [{"name": "y", "op": "layer_norm", "inputs": ["x"], "epsilon": 0}], "outputs": ["y"]})");
  fs::path in = scratch() / "ln_inputs";
  fs::create_directories(in);
  weft::HostTensor x(weft::DType::f32, {1, 4});
  for (int i = 0; i < 4; ++i)
    x.set(i, i + 1); // mean 2.5, variance 1.25
  weft::frontend::writeNpy((in / "x.npy").string(), x);
  Result r = runWeft("eval " + g + " --inputs " + in.string());
  CHECK(r.rc == 0);
  CHECK(r.out == "y: f32[1, 4] min -1.34164 max 1.34164 mean 0 first [-1.34164, -0.447214, "
                 "0.447214, 1.34164]\n");
}

TEST_CASE("weft eval with random inputs is seeded") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result a = runWeft("eval " + g + " --bind B=4 --random --seed 5");
  Result b = runWeft("eval " + g + " --bind B=4 --random --seed 5");
  Result c = runWeft("eval " + g + " --bind B=4 --random --seed 6");
  CHECK(a.rc == 0);
  CHECK(a.out.rfind("y: f32[4, 3] min ", 0) == 0);
  CHECK(a.out.find("mean 0.333333") != std::string::npos);
  CHECK(a.out == b.out);
  CHECK(a.out != c.out);
}

TEST_CASE("input errors go to stderr with exit code 2") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result unbound = runWeft("eval " + g);
  CHECK(unbound.rc == 2);
  CHECK(unbound.out.empty());
  CHECK(unbound.err ==
        "weft: error: " + g + ": symbol \"B\" is not bound; give it a size with --bind B=16\n");

  std::string square =
      writeFile("square.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["B", "B"]}],
    "ops": [{"name": "y", "op": "neg", "inputs": ["x"]}], "outputs": ["y"]})");
  Result overflow = runWeft("eval " + square + " --bind B=10000000000");
  CHECK(overflow.rc == 2);
  CHECK(overflow.err == "weft: error: " + square +
                            ": --bind B=10000000000: value \"x\" f32[B, B] would hold 1e+20 "
                            "elements (346.9 EiB), more elements than int64 can count; use "
                            "smaller sizes\n");
  Result tooBig = runWeft("eval " + square + " --bind B=1000000000");
  CHECK(tooBig.rc == 2);
  CHECK(tooBig.err.rfind("weft: error: " + square +
                             ": --bind B=1000000000: the inputs and outputs need 6.9 EiB (\"x\" "
                             "f32[B, B] alone 3.5 EiB), more than this machine's ",
                         0) == 0);
  CHECK(tooBig.err.find(" of memory; use smaller sizes\n") != std::string::npos);

  Result bad = runWeft("check " + writeFile("bad.json", "{\"inputs\": [}"));
  CHECK(bad.rc == 2);
  CHECK(bad.err.find(": invalid JSON: ") != std::string::npos);
  CHECK(bad.err.rfind("weft: error: ", 0) == 0);

  Result missing = runWeft("check /nonexistent/g.json");
  CHECK(missing.rc == 2);
  CHECK(missing.err == "weft: error: /nonexistent/g.json: cannot open the graph file: No such "
                       "file or directory\n");

  Result usage = runWeft("frobnicate");
  CHECK(usage.rc == 2);
  CHECK(usage.err.rfind("weft: error: ", 0) == 0);

  Result noCommand = runWeft("");
  CHECK(noCommand.rc == 2);

  Result log = runWeft("check " + g, "WEFT_LOG=loud");
  CHECK(log.rc == 2);
  CHECK(log.err == "weft: error: WEFT_LOG=\"loud\": unknown log level; use one of error, warn, "
                   "info, debug, trace, off\n");
}

TEST_CASE("WEFT_LOG=info logs to stderr, not stdout") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("eval " + g + " --bind B=2 --seed 1", "WEFT_LOG=info");
  CHECK(r.rc == 0);
  CHECK(r.err.find("weft: info: random inputs, seed 1") != std::string::npos);
  CHECK(r.out.find("weft: info") == std::string::npos);
}

namespace {
/// "N kernel(s)" from the first line of `weft run`.
int kernelsOf(const std::string& out) {
  size_t at = out.find(" kernel(s)");
  if (at == std::string::npos) return -1;
  size_t begin = out.rfind(' ', at - 1) + 1;
  return std::stoi(out.substr(begin, at - begin));
}

/// The first line of `out` that starts with `prefix` ("" when none does).
std::string lineStartingWith(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}
} // namespace

TEST_CASE("weft run compiles, runs on the simulator and checks against the interpreter") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("run " + g + " --bind B=4 --seed 3 --check --counters");
  REQUIRE(r.rc == 0);
  CHECK(r.out.rfind(g + ": sm on sim (h100), policy astitch, 1 kernel(s)", 0) == 0);
  CHECK(r.out.find("\ny: f32[4, 3] ") != std::string::npos);
  CHECK(r.out.find("counters (simulator, per kernel launch") != std::string::npos);
  // 4x3 f32 in and out: 96 compulsory bytes; the kernel moves whole 32-byte sectors.
  CHECK(r.out.find(" 96 compulsory (ratio ") != std::string::npos);
  CHECK(r.out.find("modeled time on h100 (not measured): ") != std::string::npos);
  CHECK(r.out.find("  y: ok; worst at ") != std::string::npos);
  CHECK(r.out.find("check: all outputs match\n") != std::string::npos);
  CHECK(r.err.empty());

  // Unfused, softmax's max, subtract, exp, sum and divide are separate kernels.
  Result none = runWeft("run " + g + " --bind B=4 --policy none --check");
  CHECK(none.rc == 0);
  CHECK(kernelsOf(none.out) > 3);
  CHECK(kernelsOf(r.out) == 1);

  // The same seed gives the same outputs under every policy and device profile.
  Result xla = runWeft("run " + g + " --bind B=4 --seed 3 --policy xla --device-spec v100");
  CHECK(xla.rc == 0);
  CHECK(lineStartingWith(xla.out, "y: ") == lineStartingWith(r.out, "y: "));
  CHECK(!lineStartingWith(r.out, "y: f32[4, 3] min ").empty());
}

TEST_CASE("weft run --time reports per-kernel and end-to-end medians, --graph replays") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("run " + g + " --bind B=4 --policy none --time 3 --graph on --check");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("timing on sim (h100): median of 3 run(s), host wall-clock") !=
        std::string::npos);
  CHECK(r.out.find("end to end (graph on)") != std::string::npos);
  CHECK(r.out.find("; modeled h100 time beside it") != std::string::npos);
  CHECK(r.out.find("check: all outputs match") != std::string::npos);
  // The copy baseline (issue 16): a copy of the compulsory bytes on the same device, and every
  // time as a fraction of its speed. softmax [4, 3]: x and y, 48 bytes each, 3 vectors each way.
  CHECK(r.out.find("copy baseline (weft_copy)") != std::string::npos);
  CHECK(r.out.find("copy baseline: 48 read + 48 written = the compulsory bytes (96)") !=
        std::string::npos);
  CHECK(lineStartingWith(r.out, "  end to end (graph on)").find("% of copy") != std::string::npos);
}

TEST_CASE("weft run: devices and bad options") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result cuda = runWeft("run " + g + " --bind B=4 --device cuda");
  if (cuda.rc == 0) {
    WARN("a CUDA driver is present: the no-driver path is not exercised here");
  } else {
    CHECK(cuda.rc == 1);
    CHECK(cuda.out.empty());
    // No driver on this machine, or a weft built without the toolkit's cuda.h: one line each.
    CHECK((cuda.err.rfind("weft: error: no CUDA driver", 0) == 0 ||
           cuda.err.rfind("weft: error: weft was built without the CUDA toolkit", 0) == 0));
    CHECK(std::count(cuda.err.begin(), cuda.err.end(), '\n') == 1);
    Result fallback = runWeft("run " + g + " --bind B=4 --device auto --check");
    CHECK(fallback.rc == 0);
    CHECK(fallback.err.find("; running on the simulator (sim)\n") != std::string::npos);
    CHECK(fallback.out.find(" on sim (h100), ") != std::string::npos);
  }

  Result policy = runWeft("run " + g + " --bind B=4 --policy fast");
  CHECK(policy.rc == 2);
  CHECK(policy.err == "weft: error: --policy fast: unknown policy; use none, xla or astitch\n");
  Result spec = runWeft("run " + g + " --bind B=4 --device-spec p100");
  CHECK(spec.rc == 2);
  CHECK(spec.err ==
        "weft: error: --device-spec p100: unknown profile; use one of v100, a100, h100\n");
  Result device = runWeft("run " + g + " --bind B=4 --device tpu");
  CHECK(device.rc == 2);
  Result graph = runWeft("run " + g + " --bind B=4 --graph sometimes");
  CHECK(graph.rc == 2);
  CHECK(graph.err == "weft: error: --graph sometimes: use on, off or auto\n");
  Result unbound = runWeft("run " + g);
  CHECK(unbound.rc == 2);
  CHECK(unbound.err ==
        "weft: error: " + g + ": symbol \"B\" is not bound; give it a size with --bind B=16\n");
}

TEST_CASE("weft run --inputs and --save-outputs round-trip through .npy files") {
  std::string g = writeFile("sm.json", kSoftmax);
  fs::path in = scratch() / "run_in", out = scratch() / "run_out";
  fs::create_directories(in);
  weft::HostTensor x(weft::DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i)
    x.set(i, i % 3); // rows [0, 1, 2]
  weft::frontend::writeNpy((in / "x.npy").string(), x);
  Result r = runWeft("run " + g + " --inputs " + in.string() + " --save-outputs " + out.string() +
                     " --check");
  REQUIRE(r.rc == 0);
  weft::HostTensor y = weft::frontend::readNpy((out / "y.npy").string(), weft::DType::f32);
  REQUIRE(y.shape == std::vector<int64_t>{2, 3});
  // softmax([0, 1, 2]) = e^i / (1 + e + e^2)
  double z = 1 + std::exp(1.0) + std::exp(2.0);
  for (int i = 0; i < 6; ++i)
    CHECK(y.get(i) == Approx(std::exp(double(i % 3)) / z).epsilon(1e-6));
}

TEST_CASE("weft plan prints the plan as text and DOT") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("plan " + g + " --bind B=4");
  REQUIRE(r.rc == 0);
  CHECK(r.out.rfind("fusion plan: policy astitch, device h100 (sm_90), 1 step(s), 1 kernel(s)\n",
                    0) == 0);
  CHECK(r.out.find("mapping row_reduce(warp_per_row") != std::string::npos);
  Result none = runWeft("plan " + g + " --bind B=4 --policy none --device-spec a100");
  CHECK(none.out.rfind("fusion plan: policy none, device a100 (sm_80), ", 0) == 0);
  Result dot = runWeft("plan " + g + " --bind B=4 --dot");
  CHECK(dot.rc == 0);
  CHECK(dot.out.rfind("digraph plan {", 0) == 0);
  CHECK(runWeft("plan /nonexistent.json").rc == 2);
}

TEST_CASE("weft compile --emit launch lists buffers and launches for gpu_replay") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("compile " + g + " --bind B=4 --emit launch");
  REQUIRE(r.rc == 0);
  std::istringstream in(r.out);
  std::string word;
  int version = 0;
  size_t buffers = 0, kernels = 0;
  in >> word >> version;
  CHECK(word == "weft-launch");
  CHECK(version == 3);
  in >> word >> buffers;
  CHECK(word == "buffers");
  CHECK(buffers >= 2); // the input and the output at least
  for (size_t i = 0; i < buffers; ++i) {
    size_t index = 99, bytes = 0;
    in >> word >> index >> bytes;
    CHECK(word == "buffer");
    CHECK(index == i);
    CHECK(bytes > 0);
  }
  in >> word >> kernels;
  CHECK(word == "kernels");
  CHECK(kernels == 1); // astitch: one kernel
  std::string name;
  unsigned grid = 0, block = 0, shared = 0, cooperative = 9, cluster = 0, required = 9, fill = 9,
           tiles = 0, params = 0;
  in >> word >> name >> grid >> block >> shared >> cooperative >> cluster >> required >> fill >>
      tiles >> params;
  CHECK(word == "kernel");
  CHECK(cluster == 1); // rows of 16 need no cluster
  CHECK(required == 0);
  CHECK(fill <= 1);
  CHECK(tiles >= grid); // the replayer raises the grid up to the tiles where the kernel fills
  CHECK(r.out.find(".entry " + name) == std::string::npos); // the PTX is a separate --emit
  CHECK(grid >= 1);
  CHECK(block >= 32);
  CHECK(cooperative <= 1);
  CHECK(params >= 2);
  // Rows of 30,000 f32 are shared by clusters of 2 on the h100 profile: the manifest says so,
  // and the grid is whole clusters (gpu_replay must launch them in clusters to be correct).
  Result rows = runWeft("compile " + std::string(WEFT_SOURCE_DIR) +
                        "/examples/graphs/row_reduce_64x30000.json --emit launch");
  REQUIRE(rows.rc == 0);
  size_t at = rows.out.find("\nkernel ");
  REQUIRE(at != std::string::npos);
  std::istringstream line(rows.out.substr(at + 1));
  line >> word >> name >> grid >> block >> shared >> cooperative >> cluster >> required;
  CHECK(cluster == 2);
  CHECK(required == 1);
  CHECK(grid == 128);
  // Unbound symbols: a clear error, exit 2.
  Result unbound = runWeft("compile " + g + " --emit launch");
  CHECK(unbound.rc == 2);
  CHECK(unbound.err.find("--emit launch needs every symbol bound") != std::string::npos);
}

TEST_CASE("weft run and plan accept ONNX models") {
  const std::string model = "/usr/share/libonnx-testdata/data/node/test_softmax_axis_1/model.onnx";
  if (!fs::exists(model)) {
    WARN("libonnx-testdata is not installed: " + model);
    return;
  }
  Result r = runWeft("run " + model + " --check");
  CHECK(r.rc == 0);
  CHECK(r.out.find("1 kernel(s)") != std::string::npos);
  CHECK(r.out.find("check: all outputs match") != std::string::npos);
  CHECK(runWeft("plan " + model).rc == 0);
}

namespace {
/// The one line a failed command printed, checking that it is exactly one line.
std::string oneLine(const Result& r) {
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  return r.err;
}
} // namespace

TEST_CASE("absurd --bind sizes are exit 2 naming the value and why, before any allocation") {
  std::string g = writeFile("sm.json", kSoftmax);
  // Fits in int64 but not in memory: eval and run refuse before allocating the inputs.
  for (const char* cmd : {"eval ", "run "}) {
    Result r = runWeft(cmd + g + " --bind B=99999999999999");
    CHECK(r.rc == 2);
    CHECK(oneLine(r).rfind("weft: error: " + g +
                               ": --bind B=99999999999999: the inputs and outputs need 2.1 PiB "
                               "(\"x\" f32[B, 3] alone 1.1 PiB), more than this machine's ",
                           0) == 0);
  }
  // Past int64: plan and compile (which allocate nothing) refuse too.
  for (const char* cmd : {"plan ", "compile "}) {
    Result r = runWeft(cmd + g + " --bind B=999999999999999999");
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == "weft: error: " + g +
                            ": --bind B=999999999999999999: value \"x\" f32[B, 3] would hold "
                            "3e+18 elements of 4 bytes, 1.2e+19 bytes (10.4 EiB): more bytes "
                            "than int64 can count; use smaller sizes\n");
  }
  // One dim alone past int64.
  std::string wide =
      writeFile("wide.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["10*B"]}],
    "ops": [{"name": "y", "op": "neg", "inputs": ["x"]}], "outputs": ["y"]})");
  Result dim = runWeft("plan " + wide + " --bind B=999999999999999999");
  CHECK(dim.rc == 2);
  CHECK(oneLine(dim) == "weft: error: " + wide +
                            ": --bind B=999999999999999999: value \"x\" f32[10*B] has dim 10*B = "
                            "1e+19, which does not fit in int64; use smaller sizes\n");
  // bench's graph-file workloads are checked the same way (this was std::bad_alloc, exit 1).
  Result bench = runWeft("bench " + g + " --bind B=99999999999999 --policy none");
  CHECK(bench.rc == 2);
  CHECK(oneLine(bench).rfind("weft: error: " + g + ": --bind B=99999999999999: the inputs and "
                                                   "outputs need 2.1 PiB",
                             0) == 0);
  // Bad --bind syntax and negative sizes (B=0, an empty batch, is a size).
  for (const char* bind : {"B=-1", "B", "B=1e3", "=4", "B=+3"}) {
    Result r = runWeft("eval " + g + " --bind " + bind);
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == std::string("weft: error: --bind: binding \"") + bind +
                            "\": expected SYMBOL=SIZE (a whole number, 0 or more), e.g. B=16\n");
  }
}

TEST_CASE("output paths weft cannot write are exit 2 naming the path and the OS's reason") {
  std::string g = writeFile("sm.json", kSoftmax);
  // A path below a regular file cannot be created, whoever runs the test (root included).
  std::string under = g + "/sub";
  Result compile = runWeft("compile " + g + " --bind B=4 --emit plan -o " + under);
  CHECK(compile.rc == 2);
  CHECK(oneLine(compile) ==
        "weft: error: -o " + under + ": cannot create the directory: Not a directory\n");
  Result graphs = runWeft("bench softmax --write-graphs " + under);
  CHECK(graphs.rc == 2);
  CHECK(oneLine(graphs) ==
        "weft: error: --write-graphs " + under + ": cannot create the directory: Not a directory\n");
  // --save-outputs fails before the run, for eval and run alike.
  for (const char* cmd : {"eval ", "run "}) {
    Result save = runWeft(cmd + g + " --bind B=4 --save-outputs " + under);
    CHECK(save.rc == 2);
    CHECK(save.out.empty());
    CHECK(oneLine(save) == "weft: error: --save-outputs " + under +
                               ": cannot create the directory: Not a directory\n");
  }
  // bench -o and --csv are checked before the (long) run: no progress line comes first.
  Result report = runWeft("bench softmax --policy none -o " + under + "/report.md");
  CHECK(report.rc == 2);
  CHECK(oneLine(report) == "weft: error: -o " + under + "/report.md: cannot write the file: " +
                               under + ": Not a directory\n");
  Result csvDir = runWeft("bench softmax --policy none --csv " + scratch().string());
  CHECK(csvDir.rc == 2);
  CHECK(oneLine(csvDir) == "weft: error: --csv " + scratch().string() +
                               ": cannot write the file: it is a directory\n");
  const std::string model = "/usr/share/libonnx-testdata/data/node/test_add/model.onnx";
  if (!fs::exists(model)) {
    WARN("libonnx-testdata is not installed: " + model);
    return;
  }
  Result import = runWeft("import " + model + " -o " + under + "/g.json");
  CHECK(import.rc == 2);
  CHECK(oneLine(import) == "weft: error: -o " + under + "/g.json: cannot write the file: " +
                               under + ": Not a directory\n");
  Result into = runWeft("import " + model + " -o " + g + "/g.json");
  CHECK(into.rc == 2);
  CHECK(oneLine(into) == "weft: error: -o " + g + "/g.json: cannot write the file: " + g +
                             " is not a directory\n");
  // What only the write finds: a full device.
  Result full = runWeft("import " + model + " -o /dev/full");
  CHECK(full.rc == 2);
  CHECK(oneLine(full) == "weft: error: -o /dev/full: cannot write the file: No space left on "
                         "device\n");
}

TEST_CASE("weft onnx-test: a file, a bad profile or a bad --expected are exit 2") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result file = runWeft("onnx-test " + g);
  CHECK(file.rc == 2);
  CHECK(oneLine(file) == "weft: error: " + g +
                             ": not a directory; give a test case folder (model.onnx and "
                             "test_data_set_*/) or a folder of them\n");
  Result missing = runWeft("onnx-test /nonexistent/cases");
  CHECK(missing.rc == 2);
  CHECK(oneLine(missing) == "weft: error: /nonexistent/cases: no such file or directory\n");
  const std::string node = "/usr/share/libonnx-testdata/data/node/test_add";
  if (!fs::exists(node)) {
    WARN("libonnx-testdata is not installed: " + node);
    return;
  }
  Result profile = runWeft("onnx-test " + node + " --device p100");
  CHECK(profile.rc == 2);
  CHECK(oneLine(profile) ==
        "weft: error: --device p100: unknown profile; use one of v100, a100, h100\n");
  // --expected is read before the cases run: no progress line first.
  Result expected = runWeft("onnx-test " + node + " --expected " + scratch().string());
  CHECK(expected.rc == 2);
  CHECK(oneLine(expected) == "weft: error: " + scratch().string() +
                                 ": cannot open the expectations file: it is a directory\n");
}

TEST_CASE("output and input names map to distinct files that stay inside the folder") {
  // "a/b" and "a?b" both became "a_b.npy" (one overwrote the other); "../x" was read from
  // outside --inputs. Every byte but letters, digits, '.', '_' and '-' is now %XX.
  std::string g = writeFile(
      "names.json", R"({"name": "n", "inputs": [{"name": "../x", "dtype": "f32", "shape": [2]}],
    "ops": [{"name": "a/b", "op": "neg", "inputs": ["../x"]},
            {"name": "a?b", "op": "exp", "inputs": ["../x"]}], "outputs": ["a/b", "a?b"]})");
  fs::path dir = scratch() / "names_in", out = scratch() / "names_out";
  fs::remove_all(dir);
  fs::create_directories(dir);
  weft::HostTensor x(weft::DType::f32, {2});
  x.set(0, 1);
  x.set(1, 2);
  // A file where the unsanitised name would lead (DIR/../x.npy) is never read.
  weft::frontend::writeNpy((scratch() / "x.npy").string(), x);
  Result outside = runWeft("eval " + g + " --inputs " + dir.string());
  CHECK(outside.rc == 2);
  CHECK(oneLine(outside) == "weft: error: --inputs " + dir.string() +
                                ": no ..%2Fx.npy for graph input \"../x\" (f32[2])\n");
  weft::frontend::writeNpy((dir / "..%2Fx.npy").string(), x);
  Result r = runWeft("eval " + g + " --inputs " + dir.string() + " --save-outputs " + out.string());
  REQUIRE(r.rc == 0);
  weft::HostTensor neg = weft::frontend::readNpy((out / "a%2Fb.npy").string(), weft::DType::f32);
  weft::HostTensor ex = weft::frontend::readNpy((out / "a%3Fb.npy").string(), weft::DType::f32);
  CHECK(neg.get(0) == -1);
  CHECK(neg.get(1) == -2);
  CHECK(ex.get(0) == Approx(std::exp(1.0)).epsilon(1e-6));
  CHECK(ex.get(1) == Approx(std::exp(2.0)).epsilon(1e-6));
  CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator()) == 2);
}

TEST_CASE("directories, empty files and bad numbers where files and counts are expected") {
  std::string g = writeFile("sm.json", kSoftmax);
  std::string dir = scratch().string();
  Result check = runWeft("check " + dir);
  CHECK(check.rc == 2);
  CHECK(oneLine(check) == "weft: error: " + dir + ": cannot open the graph file: it is a directory\n");
  Result empty = runWeft("check " + writeFile("empty.json", ""));
  CHECK(empty.rc == 2);
  CHECK(oneLine(empty).find("empty.json:1:1: invalid JSON: ") != std::string::npos);
  Result emptyOnnx = runWeft("check " + writeFile("empty.onnx", ""));
  CHECK(emptyOnnx.rc == 2);
  CHECK(oneLine(emptyOnnx) ==
        "weft: error: " + (scratch() / "empty.onnx").string() +
            ": the file is empty, not an ONNX model\n");
  Result inputsFile = runWeft("eval " + g + " --inputs " + g);
  CHECK(inputsFile.rc == 2);
  CHECK(oneLine(inputsFile) == "weft: error: --inputs " + g +
                                   ": not a directory; it must be a directory holding one <input "
                                   "name>.npy per graph input\n");
  fs::path in = scratch() / "dir_in";
  fs::remove_all(in);
  fs::create_directories(in / "x.npy");
  Result npyDir = runWeft("eval " + g + " --inputs " + in.string());
  CHECK(npyDir.rc == 2);
  CHECK(oneLine(npyDir) ==
        "weft: error: " + (in / "x.npy").string() + ": cannot open the .npy file: it is a directory\n");
  fs::remove(in / "x.npy");
  std::ofstream(in / "x.npy").flush();
  Result npyEmpty = runWeft("eval " + g + " --inputs " + in.string());
  CHECK(npyEmpty.rc == 2);
  CHECK(oneLine(npyEmpty) == "weft: error: " + (in / "x.npy").string() +
                                 ": not a .npy file (it does not start with \\x93NUMPY)\n");
  Result seed = runWeft("eval " + g + " --bind B=2 --seed -1");
  CHECK(seed.rc == 2);
  CHECK(oneLine(seed) == "weft: error: --seed: give a seed from 0 to 2^64 - 1, not -1 (see weft "
                         "--help or weft COMMAND --help)\n");
  Result blocks = runWeft("bench softmax --sample-blocks -1");
  CHECK(blocks.rc == 2);
  CHECK(oneLine(blocks) == "weft: error: --sample-blocks: give a block count of 0 or more, not -1 "
                           "(see weft --help or weft COMMAND --help)\n");
  Result twice = runWeft("eval " + g + " --bind B=4,B=5");
  CHECK(twice.rc == 2);
  CHECK(oneLine(twice) == "weft: error: --bind B=4,B=5: \"B\" is given more than once\n");
  Result time = runWeft("run " + g + " --bind B=2 --time -3");
  CHECK(time.rc == 2);
  CHECK(oneLine(time) == "weft: error: --time -3: give the number of timed runs (1 or more)\n");
}

TEST_CASE("weft plan --explain says why and weft compile --emit map lists every kernel op") {
  std::string g = writeFile("explain_sm.json", kSoftmax);
  Result r = runWeft("plan " + g + " --bind B=4 --explain");
  CHECK(r.rc == 0);
  CHECK(r.out.find("the dominant") != std::string::npos);
  CHECK(r.out.find("boundaries (values read from memory across steps): none") !=
        std::string::npos);
  Result x = runWeft("plan " + g + " --bind B=4 --explain --policy xla");
  CHECK(x.out.find("xla does not fuse a reduce into its consumers") != std::string::npos);
  Result m = runWeft("compile " + g + " --bind B=4 --emit map");
  CHECK(m.rc == 0);
  CHECK(m.out.find("\"kernel\": \"stitch0_") != std::string::npos);
  CHECK(m.out.find("\"ops\": [") != std::string::npos);
  Result both = runWeft("plan " + g + " --bind B=4 --explain --dot");
  CHECK(both.rc == 2);
  CHECK(both.err.find("excludes") != std::string::npos);
}

TEST_CASE("weft run --shapes generic compiles one program for every binding, a bad value is exit 2") {
  std::string g = writeFile("sm.json", kSoftmax);
  fs::path cache = scratch() / "shapes-cache";
  fs::remove_all(cache);
  std::string env = "XDG_CACHE_HOME=" + cache.string();
  for (const char* b : {"1", "7", "33"}) {
    Result r = runWeft("run " + g + " --bind B=" + std::string(b) + " --shapes generic --check", env);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("one generic program for every binding") != std::string::npos);
    CHECK(r.out.find("check: all outputs match\n") != std::string::npos);
  }
  size_t entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache))
    entries += e.is_regular_file() ? 1 : 0;
  CHECK(entries == 1);
  // plan and compile print the symbolic plan whatever --bind says.
  Result plan = runWeft("plan " + g + " --bind B=4 --shapes generic");
  CHECK(plan.rc == 0);
  CHECK(plan.out.find("f32[3*B]") != std::string::npos);
  CHECK(runWeft("compile " + g + " --shapes generic --emit ptx").rc == 0);
  for (const std::string& cmd : {"run " + g + " --bind B=2", "plan " + g, "compile " + g,
                                "bench " + g + " --bind B=2"}) {
    Result bad = runWeft(cmd + " --shapes sometimes");
    CHECK(bad.rc == 2);
    CHECK(bad.err ==
          "weft: error: --shapes sometimes: unknown shape mode; use specialized or generic\n");
  }
}

TEST_CASE("an empty batch (--bind B=0) runs, plans and sweeps as its own specialised program") {
  // The CLI refused B=0 though weft::compile serves it (genericServes); plan --bind B=0 showed a
  // generic version (B >= 65537, a column sum split 528 ways) that binding never runs.
  std::string g = writeFile("empty_batch.json", R"({"inputs": [{"name": "x", "dtype": "f32",
    "shape": ["B", 4]}], "ops": [{"name": "y", "op": "exp", "inputs": ["x"]},
    {"name": "s", "op": "reduce", "kind": "sum", "axes": [0], "inputs": ["y"]}],
    "outputs": ["y", "s"]})");
  for (const char* shapes : {"generic", "specialized"}) {
    INFO(shapes);
    Result r = runWeft("run " + g + " --random --check --bind B=0 --shapes " + shapes);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("y: f32[0, 4]") != std::string::npos);
    CHECK(r.out.find("s: f32[4] min 0 max 0") != std::string::npos);
    CHECK(r.out.find("check: all outputs match") != std::string::npos);
    Result plan = runWeft("plan " + g + " --bind B=0 --shapes " + shapes);
    REQUIRE(plan.rc == 0);
    CHECK(plan.out.find("input %x f32[0]") != std::string::npos);
    CHECK(plan.out.find("== version") == std::string::npos);
    CHECK(plan.out.find("cooperative no") != std::string::npos); // no split, no grid barrier
  }
  Result e = runWeft("eval " + g + " --bind B=0");
  CHECK(e.rc == 0);
  CHECK(e.out.find("s: f32[4] min 0 max 0") != std::string::npos);
  // A sweep through 0: the generic program for B >= 1, one specialised program for B=0.
  Result sweep = runWeft("run " + g + " --sweep B=0,3,0,5 --bind B=0..8");
  REQUIRE(sweep.rc == 0);
  CHECK(sweep.out.find(": MISMATCH") == std::string::npos);
  CHECK(sweep.out.find("sweep: 4 binding(s), 2 program(s) compiled") != std::string::npos);
}

TEST_CASE("weft run --sweep runs every size through one executable and counts what it cost") {
  std::string g = writeFile("sm.json", kSoftmax);
  Result r = runWeft("run " + g +
                         " --shapes generic --graph on --sweep B=1,2,3,16,17,200 --max-bind B=256 "
                         "--check",
                     "XDG_CACHE_HOME=" + (scratch() / "sweep-cache").string());
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("  B=200: version ") != std::string::npos);
  CHECK(r.out.find(": MISMATCH") == std::string::npos);
  CHECK(r.out.find("outputs match") != std::string::npos);
  // One compile; as many captures as versions run; no reallocation up to --max-bind.
  CHECK(r.out.find("sweep: 6 binding(s), 1 program(s) compiled") != std::string::npos);
  CHECK(r.out.find(" 0 buffer reallocation(s)") != std::string::npos);
  // Specialised: a program and a capture per size.
  Result s = runWeft("run " + g + " --shapes specialized --graph on --sweep B=1,2,3");
  REQUIRE(s.rc == 0);
  CHECK(s.out.find("sweep: 3 binding(s), 3 program(s) compiled, 3 version(s) run, 3 graph "
                   "capture(s)") != std::string::npos);
  struct Bad {
    std::string args, err;
  };
  for (const Bad& b : std::vector<Bad>{
           {"--sweep X=1", "weft: error: --sweep X=1: the graph has no symbol \"X\"\n"},
           {"--sweep B=1,x", "weft: error: --sweep B=1,x: \"x\" is not a size (a whole number, 0 or more)\n"},
           {"--sweep B", "weft: error: --sweep B: give a symbol and its sizes, e.g. B=1,7,64\n"},
           {"--bind B=2 --max-bind B=8",
            "weft: error: --max-bind sizes the buffers of a --sweep; give --sweep too\n"},
           {"--sweep B=1 --time 2", "weft: error: --sweep runs random inputs and checks them; it "
                                    "does not take --time, --counters, --inputs or "
                                    "--save-outputs\n"}}) {
    Result bad = runWeft("run " + g + " " + b.args);
    CHECK(bad.rc == 2);
    CHECK(bad.err == b.err);
  }
}

TEST_CASE("symbols that must be equal are unified: one symbol to bind, a contradiction is exit 2") {
  // x [B, 4] and mask [N, 4] meet in an add (N := B), bias [K] is broadcast onto [B, 4] (K := 4).
  std::string g = writeFile("unify.json", R"({"name": "u",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 4]},
               {"name": "mask", "dtype": "f32", "shape": ["N", 4]},
               {"name": "bias", "dtype": "f32", "shape": ["K"]}],
    "ops": [{"name": "m", "op": "add", "inputs": ["x", "mask"]},
            {"name": "y", "op": "add", "inputs": ["m", "bias"]},
            {"name": "s", "op": "softmax", "inputs": ["y"]}],
    "outputs": ["s"]})");
  Result check = runWeft("check " + g);
  REQUIRE(check.rc == 0);
  CHECK(check.out.find("%mask: f32[B, 4]") != std::string::npos);
  CHECK(check.out.find("%bias: f32[4]") != std::string::npos);
  CHECK(check.out.find("// N = B: unified by op \"m.broadcast1\" (broadcast_in_dim)") !=
        std::string::npos);
  CHECK(check.out.find("// K = 4: unified by op") != std::string::npos);
  for (const char* bind : {"B=5", "B=5,N=5", "B=5,N=5,K=4"}) {
    Result r = runWeft("run " + g + " --bind " + std::string(bind) + " --random --seed 3 --check");
    INFO(bind << ": " << r.err);
    CHECK(r.rc == 0);
    CHECK(r.out.find("check: all outputs match\n") != std::string::npos);
  }
  Result bad = runWeft("run " + g + " --bind B=5,N=6 --random --check");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("binding N=6 contradicts N = B (= 5 here), which op \"m.broadcast1\"") !=
        std::string::npos);
  CHECK(bad.err.find('\n') == bad.err.size() - 1); // one line
  Result badK = runWeft("run " + g + " --bind B=5,K=3 --random");
  CHECK(badK.rc == 2);
  CHECK(badK.err.find("binding K=3 contradicts K = 4") != std::string::npos);
}

TEST_CASE("weft run --bind B=LO..HI declares the sizes a program is planned for, sizes outside are exit 2") {
  std::string g = writeFile("sm_range.json", kSoftmax);
  Result ok = runWeft("run " + g + " --bind B=1..64,B=5 --random --check");
  INFO(ok.err);
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("check: all outputs match\n") != std::string::npos);
  // Buffers are sized for the range's upper end once: growing sizes never reallocate.
  Result sweep = runWeft("run " + g + " --bind B=1..64 --sweep B=1,7,64 --check --graph on");
  INFO(sweep.err);
  CHECK(sweep.rc == 0);
  CHECK(sweep.out.find(" 0 buffer reallocation(s)") != std::string::npos);
  Result grows = runWeft("run " + g + " --sweep B=1,7,64 --check --graph on");
  CHECK(grows.rc == 0);
  CHECK(grows.out.find(" 0 buffer reallocation(s)") == std::string::npos);
  Result outside = runWeft("run " + g + " --bind B=1..64,B=65 --random");
  CHECK(outside.rc == 2);
  CHECK(outside.err == "weft: error: " + g +
                           ": B=65 is outside the range 1..64 declared for B when the graph was "
                           "compiled; compile it again for a range that holds it\n");
  Result plan = runWeft("plan " + g + " --bind B=1..16");
  CHECK(plan.rc == 0);
  CHECK(plan.out.find("B >= ") == std::string::npos); // no class past 16 is planned
  CHECK(plan.out.find("B in [3, 16]") != std::string::npos);
  for (const auto& [bind, why] :
       std::vector<std::pair<std::string, std::string>>{
           {"B=9..3", "--bind B=9..3: the range is empty (9 > 3)"},
           {"B=-1..8", "--bind B=-1..8: \"-1\" is not a size (a whole number, 0 or more)"},
           {"B=1..x", "--bind B=1..x: \"x\" is not a size (a whole number, 0 or more)"},
           {"=1..4", "--bind =1..4: a range is written NAME=LO..HI, e.g. B=1..4096"}}) {
    Result bad = runWeft("run " + g + " --bind " + bind + ",B=2 --random");
    CHECK(bad.rc == 2);
    CHECK(bad.err == "weft: error: " + why + "\n");
  }
}

// --- hostile inputs found by fuzzing: each is exit 2 and one line, never a crash or a hang ---

TEST_CASE("shape arithmetic past int64 is exit 2 naming the op, not a wrapped shape") {
  // eval wrote far past a buffer sized for the wrapped f32[2, 6] (exit 139).
  std::string pad =
      writeFile("pad_wrap.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4, 6]}],
    "ops": [{"name": "y", "op": "pad", "inputs": ["x"], "low": [9223372036854775807, 0],
             "high": [9223372036854775807, 0]}], "outputs": ["y"]})");
  for (const char* cmd : {"check ", "eval "}) {
    Result r = runWeft(cmd + pad);
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == "weft: error: " + pad +
                            ": op \"y\" (pad): axis 0: size 4 padded by low 9223372036854775807 "
                            "and high 9223372036854775807 does not fit in int64\n");
  }
  std::string slice =
      writeFile("slice_stride.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "ops": [{"name": "y", "op": "slice", "inputs": ["x"], "starts": [1], "limits": [4],
             "strides": [9223372036854775807]}], "outputs": ["y"]})");
  Result s = runWeft("check " + slice);
  CHECK(s.rc == 0);
  CHECK(s.out.find(": f32[1]\n") != std::string::npos);
}

TEST_CASE("weft bench checks a graph file's sizes before allocating, with or without --bind") {
  // f32[2^62] wrapped HostTensor's byte count to 0 (exit 139); a constant of it overflowed
  // the simulator's allocation; f32[2^33] simulated for minutes past this machine's memory.
  const std::string flags = " --scaling off --compile-runs 1 --policy none";
  std::string input =
      writeFile("bench_huge_input.json",
                R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4611686018427387904]}],
    "ops": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y"]})");
  Result r = runWeft("bench " + input + flags);
  CHECK(r.rc == 2);
  CHECK(oneLine(r) == "weft: error: " + input +
                          ": (no --bind): value \"x\" f32[4611686018427387904] would hold 4.61e+18 "
                          "elements of 4 bytes, 1.84e+19 bytes (16.0 EiB): more bytes than int64 "
                          "can count; use smaller sizes\n");
  std::string constant = writeFile("bench_huge_const.json", R"({"inputs": [],
    "ops": [{"name": "y", "op": "constant", "dtype": "f32", "shape": [4611686018427387904], "value": 1}],
    "outputs": ["y"]})");
  Result c = runWeft("bench " + constant + flags);
  CHECK(c.rc == 2);
  CHECK(oneLine(c).find("value \"y\" f32[4611686018427387904] would hold") != std::string::npos);
  std::string big =
      writeFile("bench_big_input.json",
                R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [1099511627776]}],
    "ops": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y"]})");
  Result m = runWeft("bench " + big + flags);
  CHECK(m.rc == 2);
  CHECK(oneLine(m).find("the inputs and outputs need 8.0 TiB") != std::string::npos);
  CHECK(oneLine(m).find("of memory; use smaller sizes\n") != std::string::npos);
}

TEST_CASE("a symlink loop or an over-long path is exit 2 naming it, never an internal error") {
  std::string g =
      writeFile("fs_sm.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}],
    "ops": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y"]})");
  fs::path loopDir = scratch() / "fs_loopdir";
  fs::remove_all(loopDir);
  fs::create_directories(loopDir);
  fs::create_symlink("x.npy", loopDir / "x.npy"); // x.npy -> itself
  for (const char* cmd : {"eval ", "run "}) {
    Result r = runWeft(cmd + g + " --inputs " + loopDir.string());
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == "weft: error: --inputs " + loopDir.string() +
                            ": cannot read x.npy for graph input \"x\" (f32[2, 3]): Too many "
                            "levels of symbolic links\n");
  }
  std::string longDir(300, 'a');
  Result tooLong = runWeft("eval " + g + " --inputs " + longDir);
  CHECK(tooLong.rc == 2);
  CHECK(oneLine(tooLong) == "weft: error: --inputs " + longDir +
                                ": File name too long; it must be a directory holding one <input "
                                "name>.npy per graph input\n");
  fs::path self = scratch() / "fs_selfloop";
  fs::remove(self);
  fs::create_symlink(self.filename(), self);
  Result dirLoop = runWeft("eval " + g + " --inputs " + self.string());
  CHECK(dirLoop.rc == 2);
  CHECK(oneLine(dirLoop).find("Too many levels of symbolic links") != std::string::npos);
  Result onnxTest = runWeft("onnx-test " + self.string());
  CHECK(onnxTest.rc == 2);
  CHECK(oneLine(onnxTest).find(self.string() + ": ") != std::string::npos);
  CHECK(onnxTest.err.find("internal error") == std::string::npos);
  Result bench = runWeft("bench " + self.string());
  CHECK(bench.rc == 2);
  CHECK(oneLine(bench).find("unknown workload \"" + self.string() + "\"") != std::string::npos);
  // An input whose file name is longer than a file system allows.
  std::string name(300, 'x');
  std::string longName = writeFile("fs_long_name.json", R"({"inputs": [{"name": ")" + name +
                                                            R"(", "dtype": "f32", "shape": [2]}],
    "ops": [{"name": "y", "op": "exp", "inputs": [")" + name +
                                                            R"("]}], "outputs": ["y"]})");
  Result npy = runWeft("eval " + longName + " --inputs " + scratch().string());
  CHECK(npy.rc == 2);
  CHECK(oneLine(npy).find("File name too long") != std::string::npos);
}

TEST_CASE("devices and FIFOs are refused as files, never read without end or waited on") {
  for (const char* cmd : {"check /dev/zero", "eval /dev/zero", "import /dev/zero --print"}) {
    Result r = runWeft(cmd);
    CHECK(r.rc == 2);
    CHECK(oneLine(r).find("/dev/zero: cannot open the ") != std::string::npos);
    CHECK(r.err.find("it is not a regular file") != std::string::npos);
  }
  fs::path fifo = scratch() / "graph.fifo";
  fs::remove(fifo);
  REQUIRE(std::system(("mkfifo " + fifo.string()).c_str()) == 0);
  Result r = runWeft("check " + fifo.string());
  CHECK(r.rc == 2);
  CHECK(oneLine(r) == "weft: error: " + fifo.string() +
                          ": cannot open the graph file: it is not a regular file (a device, "
                          "FIFO or socket); give a file\n");
}

namespace {

/// A protobuf field: a varint, or length-delimited bytes.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7)
    out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string bytesField(int field, const std::string& b) {
  return varint(uint64_t(field) << 3 | 2) + varint(b.size()) + b;
}
std::string intField(int field, uint64_t v) {
  return varint(uint64_t(field) << 3) + varint(v);
}

/// An ONNX model y = x + w, x and w f32[2, 100]: w a 800-byte initializer, which import writes
/// to a weights file.
std::string addWeightModel() {
  auto valueInfo = [](const std::string& name) {
    std::string shape = bytesField(1, intField(1, 2)) + bytesField(1, intField(1, 100));
    std::string tensor = intField(1, 1) + bytesField(2, shape);
    return bytesField(1, name) + bytesField(2, bytesField(1, tensor));
  };
  std::string raw(800, '\0'); // 0, 0.5, 1, ...: distinct values, kept as a weight (not a splat)
  for (int i = 0; i < 200; ++i) {
    float v = 0.5f * float(i);
    std::memcpy(&raw[size_t(i) * 4], &v, 4);
  }
  std::string w =
      intField(1, 2) + intField(1, 100) + intField(2, 1) + bytesField(8, "w") + bytesField(9, raw);
  std::string node = bytesField(1, "x") + bytesField(1, "w") + bytesField(2, "y") +
                     bytesField(3, "y") + bytesField(4, "Add");
  std::string graph = bytesField(1, node) + bytesField(2, "g") + bytesField(5, w) +
                      bytesField(11, valueInfo("x")) + bytesField(12, valueInfo("y"));
  return intField(1, 8) + bytesField(7, graph) + bytesField(8, bytesField(1, "") + intField(2, 17));
}

} // namespace

TEST_CASE("weft import: a weights file that cannot be written, or is -o itself, is exit 2") {
  fs::path model = scratch() / "add_weight.onnx";
  std::ofstream(model, std::ios::binary) << addWeightModel();
  fs::path out = scratch() / "add_weight.json";
  Result ok = runWeft("import " + model.string() + " -o " + out.string());
  INFO(ok.err);
  REQUIRE(ok.rc == 0);
  REQUIRE(fs::exists(scratch() / "add_weight.safetensors"));
  // The weights were lost with exit 0: the write was never checked.
  Result full =
      runWeft("import " + model.string() + " -o " + out.string() + " --weights /dev/full");
  CHECK(full.rc == 2);
  CHECK(oneLine(full) == "weft: error: --weights /dev/full: cannot write the weights file: No "
                         "space left on device\n");
  // The JSON overwrote the weights: exit 0, and a graph that could not run.
  Result same =
      runWeft("import " + model.string() + " -o " + out.string() + " --weights " + out.string());
  CHECK(same.rc == 2);
  CHECK(oneLine(same).rfind("weft: error: --weights " + out.string() + ": the same file as -o " +
                                out.string() + "; give the weights a file of their own",
                            0) == 0);
}

TEST_CASE("out-of-range or empty option values are exit 2 with one line") {
  std::string g = writeFile("opts_sm.json", kSoftmax);
  struct Bad {
    std::string args, err;
  };
  for (const Bad& b : std::vector<Bad>{
           // 2^64 - 1 (saturated) while -1 was refused.
           {"eval " + g + " --bind B=2 --seed 99999999999999999999999",
            "weft: error: --seed: give a seed from 0 to 2^64 - 1, not 99999999999999999999999"},
           {"eval " + g + " --bind B=2 --seed 18446744073709551616",
            "weft: error: --seed: give a seed from 0 to 2^64 - 1, not 18446744073709551616"},
           {"eval " + g + " --bind B=2 --seed ''",
            "weft: error: --seed: give a seed from 0 to 2^64 - 1, not an empty value"},
           {"eval " + g + " --bind B=2 --seed -1",
            "weft: error: --seed: give a seed from 0 to 2^64 - 1, not -1"},
           {"run " + g + " --bind B=2 --amp ''",
            "weft: error: --amp: give f16 or bf16, not an empty value"},
           {"bench softmax --sample-blocks ''",
            "weft: error: --sample-blocks: give a block count of 0 or more, not an empty value"}}) {
    Result r = runWeft(b.args);
    INFO(b.args);
    CHECK(r.rc == 2);
    CHECK(oneLine(r).rfind(b.err, 0) == 0);
  }
  CHECK(runWeft("eval " + g + " --bind B=2 --seed 18446744073709551615").rc == 0);
  for (const Bad& b : std::vector<Bad>{
           {"run " + g + " --bind B=2 --time 0",
            "weft: error: --time 0: give the number of timed runs (1 or more)\n"},
           {"bench softmax --policy none,,xla",
            "weft: error: --policy none,,xla: an empty name in the list; separate the names with "
            "single commas\n"},
           {"bench softmax --device-spec h100,",
            "weft: error: --device-spec h100,: an empty name in the list; separate the names with "
            "single commas\n"},
           {"run " + g + " --sweep B=1,2 --max-bind B=1..4",
            "weft: error: --max-bind B=1..4: \"B=1..4\" is a range; --max-bind takes sizes, e.g. "
            "B=4096\n"},
           // --sweep read the first size of an empty map (ran B=7, exit 0).
           {"run " + g + " --sweep B=1..4 --check",
            "weft: error: --sweep B=1..4: \"1..4\" is a range; list the sizes to run, e.g. "
            "B=1,7,64 (a range goes in --bind, B=1..4096)\n"}}) {
    Result r = runWeft(b.args);
    INFO(b.args);
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == b.err);
  }
}

TEST_CASE("command line parse errors are one line with the hint folded in") {
  std::string g = writeFile("parse_sm.json", kSoftmax);
  for (const std::string& args : std::vector<std::string>{
           "eval " + g + " --no-such-option", "run " + g + " --device tpu", "eval",
           "bench --format xml", "run " + g + " --policy none --policy xla"}) {
    Result r = runWeft(args);
    INFO(args);
    CHECK(r.rc == 2);
    CHECK(oneLine(r).rfind("weft: error: ", 0) == 0);
    CHECK(r.err.find("(see weft --help or weft COMMAND --help)\n") != std::string::npos);
  }
}

TEST_CASE("one --bind parser for every command: malformed ranges and contradictions are named") {
  std::string g = writeFile("bind_sm.json", kSoftmax);
  // eval ignored malformed ranges and said "symbol B is not bound".
  for (const char* cmd : {"eval ", "run ", "plan "}) {
    Result dots = runWeft(cmd + g + " --bind B=..x");
    CHECK(dots.rc == 2);
    CHECK(oneLine(dots) == "weft: error: --bind B=..x: \"\" is not a size (a whole number, 0 or "
                           "more)\n");
    Result empty = runWeft(cmd + g + " --bind B=10..1");
    CHECK(empty.rc == 2);
    CHECK(oneLine(empty) == "weft: error: --bind B=10..1: the range is empty (10 > 1)\n");
  }
  // N is unified with B: generic plan took B=2,N=3 that eval and run refuse.
  std::string u = writeFile("bind_unify.json", R"({"name": "u",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 4]},
               {"name": "mask", "dtype": "f32", "shape": ["N", 4]}],
    "ops": [{"name": "m", "op": "add", "inputs": ["x", "mask"]}], "outputs": ["m"]})");
  for (const char* cmd : {"eval ", "run ", "plan ", "plan --shapes specialized "}) {
    Result r = runWeft(cmd + u + " --bind B=2,N=3");
    INFO(cmd);
    CHECK(r.rc == 2);
    CHECK(oneLine(r).find("binding N=3 contradicts N = B (= 2 here)") != std::string::npos);
  }
}

TEST_CASE("a static input of the wrong shape is worded as eval words it") {
  std::string g =
      writeFile("npy_shape.json", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}],
    "ops": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y"]})");
  fs::path in = scratch() / "npy_shape_in";
  fs::create_directories(in);
  weft::frontend::writeNpy((in / "x.npy").string(), weft::HostTensor(weft::DType::f32, {3, 2}));
  // run said: dim 0 is 3 but 2 is 2 here.
  for (const char* cmd : {"eval ", "run "}) {
    Result r = runWeft(cmd + g + " --inputs " + in.string());
    INFO(cmd);
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == "weft: error: " + g + ": input \"x\": expected f32[2, 3], got f32[3, 2]\n");
  }
}

TEST_CASE("an error naming something with a newline or other control characters stays one line") {
  std::string g = writeFile("ctl.json", R"({"inputs": [{"name": "x\nweft: error: FAKE\t\u0001",
    "dtype": "f32", "shape": [-1]}], "ops": [], "outputs": ["x\nweft: error: FAKE\t\u0001"]})");
  Result r = runWeft("check " + g);
  CHECK(r.rc == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("x\\nweft: error: FAKE\\t\\x01") != std::string::npos);
  CHECK(r.err.rfind("weft: error: ", 0) == 0);
}

TEST_CASE("a 0*B dim is the static 0: it broadcasts with 0, reshapes to [0] and binds nothing") {
  // check said [0, 4] does not broadcast with [0*B, 4]; a reshape of [0*B, 4] to [0] failed.
  std::string add = writeFile("zero_b_add.json", R"({"inputs": [
    {"name": "x", "dtype": "f32", "shape": ["0*B", 4]}, {"name": "z", "dtype": "f32", "shape": [0, 4]}],
    "ops": [{"name": "y", "op": "add", "inputs": ["x", "z"]}], "outputs": ["y"]})");
  Result c = runWeft("check " + add);
  INFO(c.err);
  CHECK(c.rc == 0);
  CHECK(c.out.find("(%x: f32[0, 4], %z: f32[0, 4])") != std::string::npos);
  std::string reshape = writeFile("zero_b_reshape.json", R"({"inputs": [
    {"name": "x", "dtype": "f32", "shape": ["0*B", 4]}],
    "ops": [{"name": "y", "op": "reshape", "inputs": ["x"], "shape": [0]}], "outputs": ["y"]})");
  Result e = runWeft("eval " + reshape); // no symbol left to bind
  INFO(e.err);
  CHECK(e.rc == 0);
  CHECK(e.out == "y: f32[0] first []\n");
  Result r = runWeft("run " + add + " --check");
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find("check: all outputs match") != std::string::npos);
}

TEST_CASE("sizes past 18 digits in --bind, --sweep and --max-bind say the limit") {
  std::string g = writeFile("digits.json", kSoftmax);
  struct Case {
    std::string args, err;
  };
  for (const Case& c : std::vector<Case>{
           {"eval " + g + " --bind B=9223372036854775807",
            "--bind: binding \"B=9223372036854775807\": sizes go up to 10^18 - 1 (18 digits)"},
           {"plan " + g + " --bind B=1..99999999999999999999",
            "--bind B=1..99999999999999999999: \"99999999999999999999\" is too large: sizes go "
            "up to 10^18 - 1 (18 digits)"},
           {"run " + g + " --sweep B=1,99999999999999999999",
            "--sweep B=1,99999999999999999999: \"99999999999999999999\" is too large: sizes go "
            "up to 10^18 - 1 (18 digits)"},
           {"run " + g + " --sweep B=1 --max-bind B=99999999999999999999",
            "--max-bind: binding \"B=99999999999999999999\": sizes go up to 10^18 - 1 (18 "
            "digits)"}}) {
    Result r = runWeft(c.args);
    INFO(c.args);
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == "weft: error: " + c.err + "\n");
  }
}

TEST_CASE("weft run: --bind and --sweep giving one symbol a size is one error naming both flags") {
  std::string g = writeFile("bind_sweep.json", kSoftmax);
  // Was: --bind B=5,B=1: "B" is given more than once (a text the user never wrote).
  Result r = runWeft("run " + g + " --check --bind B=5 --sweep B=1,7");
  CHECK(r.rc == 2);
  CHECK(oneLine(r) == "weft: error: --bind B=5 and --sweep B=1,7 both give B: give its sizes in "
                      "--sweep only (a --bind range B=LO..HI is fine)\n");
  Result range = runWeft("run " + g + " --check --bind B=1..8 --sweep B=1,7");
  INFO(range.err);
  CHECK(range.rc == 0);
}

TEST_CASE("weft run checks --max-bind as --bind: its memory, sizes below the sweep, unknown symbols") {
  std::string g = writeFile("max_bind.json", kSoftmax);
  // Was: "not enough host memory ... under --bind B=1..8", after compiling.
  Result huge = runWeft("run " + g + " --bind B=1..8 --sweep B=1,2 --max-bind B=99999999999999");
  CHECK(huge.rc == 2);
  CHECK(oneLine(huge).rfind("weft: error: " + g +
                                ": --max-bind B=99999999999999: the inputs and outputs need ",
                            0) == 0);
  // Was: accepted, the buffers reallocated past it.
  Result below = runWeft("run " + g + " --bind B=1..8 --sweep B=1,7 --max-bind B=2");
  CHECK(below.rc == 2);
  CHECK(oneLine(below) ==
        "weft: error: --max-bind B=2: B=2 is below B=7, which --sweep B=1,7 runs; give B 7 or "
        "more\n");
  // Was: accepted silently.
  Result unknown = runWeft("run " + g + " --sweep B=1,2 --max-bind B=4,Q=8");
  CHECK(unknown.rc == 0);
  CHECK(unknown.err == "weft: warning: --max-bind Q=8: the graph has no symbol \"Q\"\n");
  Result fine = runWeft("run " + g + " --sweep B=1,7 --max-bind B=7 --check");
  CHECK(fine.rc == 0);
  CHECK(fine.err.empty());
}

TEST_CASE("a --bind range that contradicts a unified symbol is refused, as a size is") {
  // S is unified with B (x + m): B=2,S=3..4 and B=5..6,S=3..4 ran (exit 0).
  std::string u = writeFile("range_unify.json", R"({"name": "u",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 8]},
               {"name": "m", "dtype": "f32", "shape": ["S", 8]}],
    "ops": [{"name": "y", "op": "add", "inputs": ["x", "m"]}], "outputs": ["y"]})");
  for (const char* cmd : {"run --random --check ", "eval ", "plan "}) {
    Result r = runWeft(cmd + u + " --bind B=2,S=3..4");
    INFO(cmd << r.err);
    CHECK(r.rc == 2);
    CHECK(oneLine(r).rfind("weft: error: " + u + ": --bind B=2,S=3..4: S=3..4 contradicts S = B "
                                                 "(= 2 here), which op ",
                           0) == 0);
    CHECK(r.err.find("; bind S to 2 or leave it out\n") != std::string::npos);
  }
  Result ranges = runWeft("plan " + u + " --bind B=5..6,S=3..4");
  CHECK(ranges.rc == 2);
  CHECK(oneLine(ranges).find(": --bind B=5..6,S=3..4: S=3..4 contradicts S = B (in 5..6 here)") !=
        std::string::npos);
  CHECK(ranges.err.find("; bind S within 5..6 or leave it out\n") != std::string::npos);
  Result size = runWeft("plan " + u + " --bind S=3,B=5..6");
  CHECK(size.rc == 2);
  CHECK(oneLine(size).find(": S=3 contradicts S = B (in 5..6 here)") != std::string::npos);
  // Ranges that meet, or a size inside the range, are fine.
  for (const char* bind : {"B=3,S=3..4", "B=1..8,S=3..4", "B=4..6,S=1..4"}) {
    Result r = runWeft("plan " + u + " --bind " + bind);
    INFO(bind << r.err);
    CHECK(r.rc == 0);
  }
  Result runs = runWeft("run " + u + " --random --check --bind B=3,S=3..4");
  INFO(runs.err);
  CHECK(runs.rc == 0);
}

TEST_CASE("bench without --bind and run --check's interpreter errors name the graph file") {
  std::string g = writeFile("bench_unbound.json", kSoftmax);
  // Was: weft: error: op "x" (parameter): shape [B, 3]: symbol "B" is not bound...
  Result b = runWeft("bench " + g + " --compile-runs 1 --scaling off --policy none");
  CHECK(b.rc == 2);
  CHECK(oneLine(b) ==
        "weft: error: " + g + ": symbol \"B\" is not bound; give it a size with --bind B=16\n");
  // An integer division by zero: the interpreter's error, which eval prefixes with the file.
  std::string dz = writeFile("div_zero.json", R"({"inputs": [{"name": "x", "dtype": "i32", "shape": [4]}],
    "ops": [{"name": "z", "op": "constant", "dtype": "i32", "shape": [4], "value": 0},
            {"name": "y", "op": "div", "inputs": ["x", "z"]}], "outputs": ["y"]})");
  Result e = runWeft("eval " + dz);
  CHECK(e.rc == 2);
  CHECK(oneLine(e).rfind("weft: error: " + dz + ": op \"y\" (div): integer division by zero", 0) ==
        0);
  Result r = runWeft("run " + dz + " --check");
  CHECK(r.rc == 2);
  CHECK(oneLine(r) == e.err);
}

TEST_CASE("a value whose bytes overflow int64 says the bytes do, not the elements") {
  std::string g = writeFile("bytes_overflow.json",
                            R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [9223372036854775807]}],
    "ops": [{"name": "y", "op": "neg", "inputs": ["x"]}], "outputs": ["y"]})");
  for (const char* cmd : {"eval ", "run ", "plan "}) {
    Result r = runWeft(cmd + g);
    INFO(cmd);
    CHECK(r.rc == 2);
    CHECK(oneLine(r) == "weft: error: " + g +
                            ": (no --bind): value \"x\" f32[9223372036854775807] would hold "
                            "9.22e+18 elements of 4 bytes, 3.69e+19 bytes (32.0 EiB): more bytes "
                            "than int64 can count; use smaller sizes\n");
  }
}

TEST_CASE("a softmax over [0, B] runs under every policy and both shape modes") {
  // [0, B] has 0*B elements, which used to stay symbolic: astitch's generic plan then tiled
  // "0*B" rows and codegen refused it.
  std::string g = writeFile("empty_rows.json",
                            R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [0, "B"]}],
  "ops": [{"name": "y", "op": "softmax", "inputs": ["x"]}], "outputs": ["y"]})");
  for (const char* policy : {"none", "xla", "astitch"})
    for (const char* shapes : {"generic", "specialized"}) {
      INFO(policy << " " << shapes);
      Result r = runWeft(std::string("run ") + g + " --random --check --bind B=3 --policy " +
                         policy + " --shapes " + shapes);
      CHECK(r.rc == 0);
      CHECK(r.out.find("check: all outputs match") != std::string::npos);
    }
}

TEST_CASE("weft plan with a --bind range of only 0 shows the plan of B=0") {
  // B=0..0 planned no size class and crashed with map::at; its only binding is B=0, which runs
  // a specialised program.
  std::string g = writeFile("sm.json", kSoftmax);
  for (const char* command : {"plan", "compile --emit plan"}) {
    INFO(command);
    Result r = runWeft(std::string(command) + " " + g + " --bind B=0..0");
    CHECK(r.rc == 0);
    CHECK(r.out.find("input %x f32[0]") != std::string::npos);
  }
}
