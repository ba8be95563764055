#pragma once
// The ONNX conformance runner: runs ONNX backend test cases (a folder with model.onnx and
// test_data_set_*/input_N.pb, output_N.pb — the layout of Debian's libonnx-testdata) through
// a backend and compares every output with the reference at rtol/atol. The CLI's
// `weft onnx-test` and the CI check (test/onnx) are thin layers over these functions.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "weft/tensor.h"

namespace weft::onnx {

struct TestCase {
  std::string name; // the folder's name, e.g. "test_softmax_axis_0_expanded"
  std::string dir;
};

/// Every test case under `paths`: a path holding model.onnx is one case, any other folder
/// contributes its subfolders that hold one. Sorted by name, duplicates removed. Throws
/// InputError for a path that does not exist.
std::vector<TestCase> findTestCases(const std::vector<std::string>& paths);

/// What runs an imported graph. `kernels` (may be null) receives the number of kernels the
/// backend launched for one run, or -1 when it does not know.
struct Backend {
  std::string name;
  std::function<std::vector<HostTensor>(const ir::Graph&, const std::vector<HostTensor>&,
                                        int* kernels)>
      run;
};
/// The reference interpreter (ir::interpret), symbols bound from the input shapes.
Backend interpreterBackend();

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

enum class CaseStatus { Passed, Failed, Unsupported };
std::string_view caseStatusName(CaseStatus s); // "pass", "fail", "unsupported"

struct CaseResult {
  std::string name;
  CaseStatus status = CaseStatus::Failed;
  std::string detail;       // fail: the worst element or the error; unsupported: what is missing
  std::string operatorName; // unsupported: the ONNX operator (empty for a dtype or other feature)
  int kernels = -1;         // kernels launched for one run (sim), -1 when unknown
  std::vector<std::string> frozenInputs; // graph inputs fixed at import time (shape operands)
  double seconds = 0;
};

struct RunnerOptions {
  Tolerance tolerance;
  /// Called after each case (index from 0, total); for a progress line.
  std::function<void(size_t, size_t, const CaseResult&)> progress;
};

/// Imports, runs and checks one case (every test_data_set_* in it).
CaseResult runTestCase(const TestCase& tc, const Backend& backend,
                       const RunnerOptions& options = {});
std::vector<CaseResult> runTestCases(const std::vector<TestCase>& cases, const Backend& backend,
                                     const RunnerOptions& options = {});

/// The comparison rule: |got - want| <= atol + rtol * |want|, NaN matches NaN, infinities
/// must be equal; integer and bool outputs must be equal. f16/bf16 outputs also pass within
/// one unit in the last place of their dtype (a rounding step the reference may take
/// differently). Returns "" on a match, else a description of the worst element.
std::string compareTensors(const HostTensor& got, const HostTensor& want, const Tolerance& tol);

/// A table: one line per case that did not pass, then passed / failed / unsupported counts.
std::string formatResultTable(const std::vector<CaseResult>& results, bool includePassed = false);
std::string resultsToJson(const std::vector<CaseResult>& results, const std::string& backend);

/// The checked-in expectations (test/onnx/expected_pass.txt): "name status  # reason" per line,
/// status pass / fail / unsupported / skip. Throws InputError on a malformed line.
struct Expectation {
  CaseStatus status = CaseStatus::Passed;
  bool skip = false; // not run (too slow for CI); the reason says why
  std::string reason;
};
std::map<std::string, Expectation> readExpectations(const std::string& path);

/// Differences between results and expectations: a case expected to pass that did not
/// (a regression, `regressions`) and cases doing better than listed (`improvements`).
struct ExpectationDiff {
  std::vector<std::string> regressions;
  std::vector<std::string> improvements;
  std::vector<std::string> unlisted; // run but not in the list
};
ExpectationDiff compareWithExpectations(const std::vector<CaseResult>& results,
                                        const std::map<std::string, Expectation>& expected);

} // namespace weft::onnx
