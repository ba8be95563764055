// The conformance runner's rules (tolerances, expectations) and the CI check: the ONNX
// backend node tests listed in test/onnx/expected_pass*.txt do at least as well as listed.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "frontend/onnx/conformance.h"
#include "weft/error.h"
#ifdef WEFT_ONNX_CONFORMANCE_SIM
#include "frontend/onnx/conformance_sim.h"
#endif

using namespace weft;
using namespace weft::onnx;
using Catch::Matchers::Contains;

#ifndef WEFT_ONNX_CONFORMANCE_SIM // the runner's rules are tested once, in the interpreter binary
namespace {

HostTensor tensor(DType t, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostTensor h(t, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i)
    h.set(static_cast<int64_t>(i), values[i]);
  return h;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

} // namespace

TEST_CASE("compareTensors applies rtol and atol, matches NaN with NaN and names the worst element",
          "[onnx]") {
  Tolerance tol; // rtol 1e-3, atol 1e-7
  auto want = tensor(DType::f32, {2, 2}, {1, 100, kNaN, 0});
  CHECK(
      compareTensors(tensor(DType::f32, {2, 2}, {1.0009, 100.09, kNaN, 5e-8}), want, tol).empty());
  std::string bad = compareTensors(tensor(DType::f32, {2, 2}, {1.0009, 101, kNaN, 0}), want, tol);
  CHECK_THAT(bad, Contains("1 of 4 elements differ; worst at [0, 1]: got 101 want 100"));
  CHECK_FALSE(compareTensors(tensor(DType::f32, {2, 2}, {1, 100, 0, 0}), want, tol).empty());
  CHECK_THAT(compareTensors(tensor(DType::f32, {4}, {1, 100, kNaN, 0}), want, tol),
             Contains("shape [4]"));
  // integers compare exactly
  CHECK_FALSE(compareTensors(tensor(DType::i32, {1}, {1000}), tensor(DType::i32, {1}, {1001}), tol)
                  .empty());
  // int64 exactly: 2^53 + 1 is not 2^53 (a double comparison would take one for the other)
  HostTensor big(DType::i64, {1}), bigger(DType::i64, {1});
  big.setInt(0, int64_t(1) << 53);
  bigger.setInt(0, (int64_t(1) << 53) + 1);
  CHECK_THAT(compareTensors(big, bigger, tol),
             Contains("first at [0]: got 9007199254740992 want 9007199254740993"));
  // f16 passes within one unit in the last place
  CHECK(compareTensors(tensor(DType::f16, {1}, {1000.5}), tensor(DType::f16, {1}, {1001}), tol)
            .empty());
}

TEST_CASE("a test case passes only with every output compared: count, dtype and file numbering", "[onnx]") {
  namespace fs = std::filesystem;
  const fs::path node = WEFT_ONNX_NODE_TESTS;
  if (!fs::exists(node / "test_relu")) FAIL(node << " is missing: install libonnx-testdata");
  const fs::path dir = fs::temp_directory_path() / "weft_conformance_outputs" / "test_relu";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir / "test_data_set_0");
  fs::copy_file(node / "test_relu" / "model.onnx", dir / "model.onnx");
  fs::copy_file(node / "test_relu" / "test_data_set_0" / "input_0.pb",
                dir / "test_data_set_0" / "input_0.pb");
  const TestCase tc{"test_relu", dir.string()};
  // no reference output: nothing was checked
  CaseResult none = runTestCase(tc, interpreterBackend());
  CHECK(none.status == CaseStatus::Failed);
  CHECK_THAT(none.detail, Contains("no output_*.pb"));
  // a reference of another dtype (uint8 [3, 4, 5], read as i32) for relu's f32 output
  fs::copy_file(node / "test_add_uint8" / "test_data_set_0" / "input_0.pb",
                dir / "test_data_set_0" / "output_0.pb");
  CaseResult dtype = runTestCase(tc, interpreterBackend());
  CHECK(dtype.status == CaseStatus::Failed);
  CHECK_THAT(dtype.detail, Contains("is f32[3, 4, 5], the reference is i32[3, 4, 5]"));
  // the right reference, and then one reference too many
  fs::copy_file(node / "test_relu" / "test_data_set_0" / "output_0.pb",
                dir / "test_data_set_0" / "output_0.pb", fs::copy_options::overwrite_existing);
  CHECK(runTestCase(tc, interpreterBackend()).status == CaseStatus::Passed);
  fs::copy_file(node / "test_relu" / "test_data_set_0" / "output_0.pb",
                dir / "test_data_set_0" / "output_1.pb");
  CaseResult extra = runTestCase(tc, interpreterBackend());
  CHECK(extra.status == CaseStatus::Failed);
  CHECK_THAT(extra.detail, Contains("1 outputs, the reference has 2"));
  // files numbered from 0: input_1.pb alone is not input 0
  fs::remove(dir / "test_data_set_0" / "output_1.pb");
  fs::rename(dir / "test_data_set_0" / "input_0.pb", dir / "test_data_set_0" / "input_1.pb");
  CaseResult gap = runTestCase(tc, interpreterBackend());
  CHECK(gap.status == CaseStatus::Failed);
  CHECK_THAT(gap.detail, Contains("input_0.pb is missing"));
  fs::remove_all(dir.parent_path());
}

TEST_CASE("findTestCases reports a symlink loop as the path's error, an InputError", "[onnx]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "weft_conformance_loop";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink(dir / "loop", dir / "loop"); // loop -> itself
  CHECK_THROWS_MATCHES(findTestCases({(dir / "loop").string()}), InputError,
                       Catch::Matchers::Message((dir / "loop").string() +
                                                ": Too many levels of symbolic links"));
  CHECK_THROWS_MATCHES(findTestCases({(dir / "missing").string()}), InputError,
                       Catch::Matchers::Message((dir / "missing").string() +
                                                ": no such file or directory"));
  fs::remove_all(dir);
}

TEST_CASE("readExpectations parses statuses and reasons, and rejects malformed lines", "[onnx]") {
  auto path = (std::filesystem::temp_directory_path() / "weft_expectations_test.txt").string();
  {
    std::ofstream out(path);
    out << "# comment\n\ntest_a pass\ntest_b unsupported  # Cast to STRING\ntest_c skip # too "
           "slow\n";
  }
  auto e = readExpectations(path);
  REQUIRE(e.size() == 3);
  CHECK(e["test_a"].status == CaseStatus::Passed);
  CHECK(e["test_b"].status == CaseStatus::Unsupported);
  CHECK(e["test_b"].reason == "Cast to STRING");
  CHECK(e["test_c"].skip);
  std::vector<CaseResult> results(2);
  results[0].name = "test_a";
  results[0].status = CaseStatus::Failed;
  results[1].name = "test_b";
  results[1].status = CaseStatus::Passed;
  ExpectationDiff d = compareWithExpectations(results, e);
  CHECK(d.regressions.size() == 1);
  CHECK(d.improvements.size() == 1);
  {
    std::ofstream out(path);
    out << "test_a passes\n";
  }
  CHECK_THROWS_AS(readExpectations(path), InputError);
  std::filesystem::remove(path);
}

#endif

#ifdef WEFT_ONNX_CONFORMANCE_SIM
#define EXPECTATIONS "expected_pass.txt"
#else
#define EXPECTATIONS "expected_pass_interpreter.txt"
#endif

TEST_CASE("ONNX node tests do at least as well as test/onnx/" EXPECTATIONS, "[onnx][conformance]") {
  const std::string nodeDir = WEFT_ONNX_NODE_TESTS;
  if (!std::filesystem::exists(nodeDir))
    FAIL(nodeDir << " is missing: install libonnx-testdata (scripts/install-deps.sh)");
  auto expected = readExpectations(std::string(WEFT_SOURCE_DIR) + "/test/onnx/" EXPECTATIONS);
  std::vector<std::string> dirs;
  size_t listedPass = 0;
  for (const auto& [name, e] : expected) {
    if (e.skip) continue;
    listedPass += e.status == CaseStatus::Passed;
    std::string dir = nodeDir + "/" + name;
    if (!std::filesystem::exists(dir))
      FAIL(EXPECTATIONS " lists " << name << ", which " << nodeDir << " lacks");
    dirs.push_back(dir);
  }
#ifdef WEFT_ONNX_CONFORMANCE_SIM
  Backend backend = simBackend(Policy::AStitch);
#else
  Backend backend = interpreterBackend();
#endif
  std::vector<CaseResult> results = runTestCases(findTestCases(dirs), backend);
  ExpectationDiff diff = compareWithExpectations(results, expected);
  INFO("backend " << backend.name << "\n" << formatResultTable(results));
  for (const auto& s : diff.improvements)
    WARN(s << " (update test/onnx/" EXPECTATIONS ")");
  for (const auto& s : diff.regressions)
    CHECK(s == "");
  CHECK(diff.regressions.empty());
  CHECK(listedPass > 0);
}
