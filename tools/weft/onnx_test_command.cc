// weft onnx-test DIR...: the ONNX backend conformance runner. Runs every test case found under
// the folders (model.onnx + test_data_set_*/input_N.pb, output_N.pb) on the sim device under a
// fusion policy (astitch by default) or on the reference interpreter, prints a progress line on
// stderr, then a table of the cases that did not pass and the counts (or JSON with --json).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <memory>

#include "commands.h"
#include "frontend/onnx/conformance.h"
#include "progress.h"
#include "weft/device_spec.h"
#include "weft/error.h"
#ifdef WEFT_HAVE_ONNX_SIM
#include "frontend/onnx/conformance_sim.h"
#endif

namespace weft::tools {
namespace {

struct OnnxTestOptions {
  std::vector<std::string> dirs;
  std::string policy = "astitch", backend, profile = "h100", expected;
  bool json = false, all = false, quiet = false;
};

onnx::Backend chooseBackend(const OnnxTestOptions& o) {
#ifdef WEFT_HAVE_ONNX_SIM
  std::string kind = o.backend.empty() ? "sim" : o.backend;
  if (kind == "sim") {
    auto policy = parsePolicy(o.policy);
    if (!policy)
      throw InputError(fmt::format("--policy {}: expected none, xla or astitch", o.policy));
    if (!deviceSpecProfile(o.profile))
      throw InputError(fmt::format("--device {}: unknown profile; use one of {}", o.profile,
                                   fmt::join(deviceSpecProfileNames(), ", ")));
    return onnx::simBackend(*policy, o.profile);
  }
#else
  std::string kind = o.backend.empty() ? "interpreter" : o.backend;
  if (kind == "sim")
    throw InputError("--backend sim: this weft was built without the compile pipeline; use "
                     "--backend interpreter");
#endif
  if (kind == "interpreter") return onnx::interpreterBackend();
  throw InputError(fmt::format("--backend {}: expected sim or interpreter", kind));
}

void runOnnxTest(const OnnxTestOptions& o) {
  onnx::Backend backend = chooseBackend(o);
  // A bad --expected file fails before the run, not after it.
  std::map<std::string, onnx::Expectation> expected;
  if (!o.expected.empty()) expected = onnx::readExpectations(o.expected);
  std::vector<onnx::TestCase> cases;
  try {
    cases = onnx::findTestCases(o.dirs);
  } catch (const std::filesystem::filesystem_error& e) { // a symlink loop, an over-long name
    throw InputError(
        fmt::format("{}: cannot read the folder: {}", e.path1().string(), e.code().message()));
  }
  if (cases.empty())
    throw InputError(fmt::format("no ONNX test case (a folder with model.onnx) under {}",
                                 fmt::join(o.dirs, ", ")));
  onnx::RunnerOptions options;
  size_t counts[3] = {0, 0, 0};
  ProgressLine line; // in place on a terminal, a line every few seconds in a log
  if (!o.quiet)
    options.progress = [&](size_t i, size_t n, const onnx::CaseResult& r) {
      ++counts[static_cast<int>(r.status)];
      std::string text = fmt::format("[{}/{}] {} passed, {} failed, {} unsupported  {}", i + 1, n,
                                     counts[0], counts[1], counts[2], r.name);
      if (i + 1 == n)
        line.finish(text);
      else
        line.update(text);
    };
  std::vector<onnx::CaseResult> results = onnx::runTestCases(cases, backend, options);
  if (o.json)
    fmt::print("{}\n", onnx::resultsToJson(results, backend.name));
  else
    fmt::print("backend: {}\n{}", backend.name, onnx::formatResultTable(results, o.all));
  if (o.expected.empty()) return;
  onnx::ExpectationDiff diff =
      onnx::compareWithExpectations(results, expected);
  for (const auto& s : diff.improvements)
    std::fprintf(stderr, "improved: %s\n", s.c_str());
  for (const auto& s : diff.regressions)
    std::fprintf(stderr, "REGRESSION: %s\n", s.c_str());
  if (!diff.regressions.empty()) throw ExitCode{1};
}

} // namespace

void addOnnxTestCommand(CLI::App& app) {
  auto o = std::make_shared<OnnxTestOptions>();
  CLI::App* cmd = app.add_subcommand(
      "onnx-test", "Run ONNX backend test cases and compare with their reference outputs");
  cmd->add_option(
         "dirs", o->dirs,
         "Test case folders, or folders of them (e.g. /usr/share/libonnx-testdata/data/node)")
      ->required();
  cmd->add_flag("--json", o->json, "Print the results as JSON");
  cmd->add_option("--policy", o->policy,
                  "Fusion policy on the sim device: none, xla or astitch (default)");
  cmd->add_option("--backend", o->backend,
                  "sim (default when built with the pipeline) or interpreter");
  cmd->add_option("--device", o->profile,
                  "DeviceSpec profile the sim device models (default h100)");
  cmd->add_option("--expected", o->expected,
                  "Expectations file (test/onnx/expected_pass.txt); exit 1 when a case listed as "
                  "pass does not");
  cmd->add_flag("--all", o->all, "List passed cases in the table too");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line");
  cmd->callback([o] { runOnnxTest(*o); });
}

} // namespace weft::tools
