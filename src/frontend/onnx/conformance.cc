#include "frontend/onnx/conformance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "frontend/onnx/onnx_import.h"
#include "frontend/read_file.h"
#include "ir/interpreter.h"
#include "weft/error.h"

namespace weft::onnx {
namespace fs = std::filesystem;

namespace {

/// Symbols bound from the input shapes (a dim that is exactly one symbol binds it).
ir::Binding bindingFromInputs(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  ir::Binding b;
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    const ir::Shape& s = g.node(g.inputs()[i]).type.shape;
    for (size_t d = 0; d < s.size() && d < inputs[i].shape.size(); ++d)
      if (s[d].symbols().size() == 1 && s[d].factor() == 1)
        b.emplace(s[d].symbols()[0], inputs[i].shape[d]);
  }
  return b;
}

/// PREFIX0.pb, PREFIX1.pb, ... in `dir`, in order: the i-th file must be PREFIXi.pb (a data
/// set with input_5.pb alone, or input_0 and input_0.5, is malformed: InputError naming it).
std::vector<std::string> sortedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<long, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) != 0 || e.path().extension() != ".pb") continue;
    std::string index = n.substr(prefix.size(), n.size() - prefix.size() - 3);
    bool digits = !index.empty() && index.size() <= 6 &&
                  std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || (index.size() > 1 && index[0] == '0'))
      throw InputError(fmt::format("{}: not a {}N.pb file name (N = 0, 1, ...)", e.path().string(),
                                   prefix));
    found.push_back({std::stol(index), e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [i, p] : found) {
    if (i != static_cast<long>(out.size()))
      throw InputError(fmt::format("{}: {}{}.pb is missing (the files must be numbered from 0)",
                                   dir.string(), prefix, out.size()));
    out.push_back(p);
  }
  return out;
}

/// One unit in the last place of `t` at magnitude |v| (0 for dtypes compared exactly).
double ulp(double v, ir::DType t) {
  int mantissa = t == ir::DType::f16 ? 10 : t == ir::DType::bf16 ? 7 : 0;
  if (!mantissa || !std::isfinite(v)) return 0;
  int e = 0;
  std::frexp(std::max(std::fabs(v), t == ir::DType::f16 ? 6.1e-5 : 1.2e-38), &e);
  return std::ldexp(1.0, e - 1 - mantissa);
}

/// ONNX's test generator stores bfloat16 (and some float16) tensors as UINT16 bit patterns,
/// which read back widened to i32; give them the dtype the graph has.
HostTensor fromStoredBits(const HostTensor& t, ir::DType want) {
  if (t.dtype != ir::DType::i32 || (want != ir::DType::bf16 && want != ir::DType::f16)) return t;
  HostTensor out(want, t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    auto bits = static_cast<uint16_t>(t.get(i));
    out.set(i, want == ir::DType::bf16 ? bfloat16ToFloat(bits) : halfToFloat(bits));
  }
  return out;
}

std::string indexStr(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) break;
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

} // namespace

std::string_view caseStatusName(CaseStatus s) {
  switch (s) {
  case CaseStatus::Passed:
    return "pass";
  case CaseStatus::Failed:
    return "fail";
  case CaseStatus::Unsupported:
    return "unsupported";
  }
  return "?";
}

std::vector<TestCase> findTestCases(const std::vector<std::string>& paths) {
  std::map<std::string, TestCase> found;
  for (const std::string& p : paths) {
    fs::path path(p);
    // The error_code forms throughout: a symlink loop or an over-long name is the user's path,
    // not an internal error.
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw InputError(fmt::format("{}: {}", p, ec.message()));
    if (!fs::exists(st)) throw InputError(fmt::format("{}: no such file or directory", p));
    if (!fs::is_directory(st))
      throw InputError(fmt::format("{}: not a directory; give a test case folder (model.onnx and "
                                   "test_data_set_*/) or a folder of them",
                                   p));
    if (fs::exists(path / "model.onnx", ec)) {
      fs::path canonical = fs::weakly_canonical(path, ec);
      std::string name = (ec ? path : canonical).filename().string();
      found[name] = {name, path.string()};
      continue;
    }
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory(ec) && fs::exists(it->path() / "model.onnx", ec))
        found[it->path().filename().string()] = {it->path().filename().string(),
                                                 it->path().string()};
    if (ec) throw InputError(fmt::format("{}: cannot list the folder: {}", p, ec.message()));
  }
  std::vector<TestCase> out;
  for (auto& [n, tc] : found)
    out.push_back(tc);
  return out;
}

Backend interpreterBackend() {
  return {"interpreter",
          [](const ir::Graph& g, const std::vector<HostTensor>& inputs, int* kernels) {
            if (kernels) *kernels = -1;
            return ir::interpret(g, inputs, bindingFromInputs(g, inputs));
          }};
}

std::string compareTensors(const HostTensor& got, const HostTensor& want, const Tolerance& tol) {
  if (got.shape != want.shape)
    return fmt::format("shape [{}] but the reference has [{}]", fmt::join(got.shape, ", "),
                       fmt::join(want.shape, ", "));
  if (!ir::isFloat(want.dtype) || !ir::isFloat(got.dtype)) {
    // Integers and bools exactly, as int64: a double would take 2^53 + 1 for 2^53.
    int64_t first = -1, mismatches = 0;
    for (int64_t i = 0; i < want.numElements(); ++i)
      if (got.getInt(i) != want.getInt(i) && mismatches++ == 0) first = i;
    if (first < 0) return "";
    return fmt::format("{} of {} elements differ; first at {}: got {} want {}", mismatches,
                       want.numElements(), indexStr(first, want.shape), got.getInt(first),
                       want.getInt(first));
  }
  int64_t worst = -1, mismatches = 0;
  double worstRatio = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    double err = std::fabs(g - w);
    double allowed = tol.atol + tol.rtol * std::fabs(w);
    allowed = std::max(allowed, ulp(w, got.dtype));
    bool ok = (std::isinf(w) || std::isinf(g)) ? g == w : err <= allowed;
    if (std::isnan(g) != std::isnan(w)) ok = false;
    if (ok) continue;
    ++mismatches;
    double ratio = std::isfinite(err) && allowed > 0 ? err / allowed : INFINITY;
    if (worst < 0 || ratio > worstRatio) {
      worst = i;
      worstRatio = ratio;
    }
  }
  if (worst < 0) return "";
  double g = got.get(worst), w = want.get(worst);
  return fmt::format("{} of {} elements differ; worst at {}: got {} want {} (|diff| {:.3g})",
                     mismatches, want.numElements(), indexStr(worst, want.shape), g, w,
                     std::fabs(g - w));
}

CaseResult runTestCase(const TestCase& tc, const Backend& backend, const RunnerOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CaseResult r;
  r.name = tc.name;
  auto finish = [&](CaseStatus s, std::string detail) {
    r.status = s;
    r.detail = std::move(detail);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  try {
    std::string model = (fs::path(tc.dir) / "model.onnx").string();
    std::vector<std::string> names = onnxInputNames(model);
    // Import once before reading any data, so an unsupported model (an operator, a sequence
    // input) is reported as such rather than as unreadable test data.
    try {
      importOnnx(model);
    } catch (const ImportTimeValueError&) {
      // resolved per data set below
    }
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(tc.dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return finish(CaseStatus::Failed, "no test_data_set_* folder");
    for (const fs::path& set : sets) {
      std::vector<HostTensor> given, expected;
      for (const auto& f : sortedFiles(set, "input_"))
        given.push_back(readTensorProtoFile(f));
      for (const auto& f : sortedFiles(set, "output_"))
        expected.push_back(readTensorProtoFile(f));
      if (given.size() > names.size())
        return finish(CaseStatus::Failed,
                      fmt::format("{}: {} input files for a model of {} inputs",
                                  set.filename().string(), given.size(), names.size()));
      // Operands weft needs at import time (shapes, axes, pads) that the test feeds as graph
      // inputs are frozen to this data set's values, as if the model stored them as initializers.
      ImportOptions import;
      for (const std::string& name : r.frozenInputs) {
        size_t i = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
        import.frozenInputs[name] = given.at(i);
      }
      std::optional<ir::Graph> g;
      while (!g) {
        try {
          g = importOnnx(model, import);
        } catch (const ImportTimeValueError& e) {
          auto it = std::find(names.begin(), names.end(), e.input());
          size_t i = static_cast<size_t>(it - names.begin());
          if (it == names.end() || i >= given.size() || import.frozenInputs.count(e.input())) throw;
          import.frozenInputs[e.input()] = given[i];
          r.frozenInputs.push_back(e.input());
        }
      }
      std::vector<HostTensor> inputs;
      for (size_t i = 0; i < given.size(); ++i)
        if (!import.frozenInputs.count(names[i])) inputs.push_back(given[i]);
      for (size_t i = 0; i < inputs.size() && i < g->inputs().size(); ++i)
        inputs[i] = fromStoredBits(inputs[i], g->node(g->inputs()[i]).type.dtype);
      if (inputs.size() != g->inputs().size())
        return finish(CaseStatus::Failed,
                      fmt::format("{}: {} input files for a graph of {} inputs",
                                  set.filename().string(), inputs.size(), g->inputs().size()));
      int kernels = -1;
      std::vector<HostTensor> got = backend.run(*g, inputs, &kernels);
      r.kernels = kernels;
      if (expected.empty())
        return finish(CaseStatus::Failed,
                      fmt::format("{}: no output_*.pb: nothing to compare with",
                                  set.filename().string()));
      if (got.size() != expected.size())
        return finish(CaseStatus::Failed,
                      fmt::format("{}: {} outputs, the reference has {}", set.filename().string(),
                                  got.size(), expected.size()));
      for (size_t i = 0; i < expected.size(); ++i) {
        const HostTensor want = fromStoredBits(expected[i], got[i].dtype);
        if (want.dtype != got[i].dtype)
          return finish(CaseStatus::Failed,
                        fmt::format("{}: output {} ({}) is {}, the reference is {}",
                                    set.filename().string(), i, g->node(g->outputs()[i]).name,
                                    got[i].typeStr(), want.typeStr()));
        std::string diff = compareTensors(got[i], want, options.tolerance);
        if (!diff.empty())
          return finish(CaseStatus::Failed,
                        fmt::format("{}: output {} ({}): {}", set.filename().string(), i,
                                    g->node(g->outputs()[i]).name, diff));
      }
    }
    return finish(CaseStatus::Passed, "");
  } catch (const UnsupportedError& e) {
    r.operatorName = e.opType();
    return finish(CaseStatus::Unsupported, e.what());
  } catch (const std::exception& e) {
    return finish(CaseStatus::Failed, e.what());
  }
}

std::vector<CaseResult> runTestCases(const std::vector<TestCase>& cases, const Backend& backend,
                                     const RunnerOptions& options) {
  std::vector<CaseResult> results;
  for (size_t i = 0; i < cases.size(); ++i) {
    results.push_back(runTestCase(cases[i], backend, options));
    if (options.progress) options.progress(i, cases.size(), results.back());
  }
  return results;
}

std::string formatResultTable(const std::vector<CaseResult>& results, bool includePassed) {
  std::ostringstream out;
  size_t width = 4;
  for (const auto& r : results)
    width = std::max(width, r.name.size());
  size_t counts[3] = {0, 0, 0};
  out << fmt::format("{:<{}}  {:<11}  {}\n", "case", width, "status", "detail");
  for (const auto& r : results) {
    ++counts[static_cast<int>(r.status)];
    if (r.status == CaseStatus::Passed && !includePassed) continue;
    std::string detail = r.status == CaseStatus::Unsupported && !r.operatorName.empty()
                             ? fmt::format("operator {}: {}", r.operatorName, r.detail)
                             : r.detail;
    if (r.status == CaseStatus::Passed && r.kernels >= 0)
      detail = fmt::format("{} kernel(s)", r.kernels);
    out << fmt::format("{:<{}}  {:<11}  {}\n", r.name, width, caseStatusName(r.status), detail);
  }
  size_t total = results.size();
  double pct = total ? 100.0 * static_cast<double>(counts[0]) / static_cast<double>(total) : 0.0;
  out << fmt::format("passed {} / failed {} / unsupported {} of {} cases ({:.1f}% passed)\n",
                     counts[0], counts[1], counts[2], total, pct);
  return out.str();
}

std::string resultsToJson(const std::vector<CaseResult>& results, const std::string& backend) {
  nlohmann::json cases = nlohmann::json::array();
  size_t counts[3] = {0, 0, 0};
  for (const auto& r : results) {
    ++counts[static_cast<int>(r.status)];
    nlohmann::json c = {
        {"name", r.name}, {"status", caseStatusName(r.status)}, {"seconds", r.seconds}};
    if (!r.detail.empty()) c["detail"] = r.detail;
    if (!r.operatorName.empty()) c["operator"] = r.operatorName;
    if (r.kernels >= 0) c["kernels"] = r.kernels;
    if (!r.frozenInputs.empty()) c["frozen_inputs"] = r.frozenInputs;
    cases.push_back(std::move(c));
  }
  nlohmann::json j = {{"backend", backend},
                      {"passed", counts[0]},
                      {"failed", counts[1]},
                      {"unsupported", counts[2]},
                      {"cases", std::move(cases)}};
  return j.dump(2);
}

std::map<std::string, Expectation> readExpectations(const std::string& path) {
  std::istringstream in(frontend::readFileBytes(path, "expectations file"));
  std::map<std::string, Expectation> out;
  std::string line;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    std::string reason;
    if (auto hash = line.find('#'); hash != std::string::npos) {
      reason = line.substr(hash + 1);
      reason.erase(0, reason.find_first_not_of(' '));
      line.resize(hash);
    }
    std::istringstream words(line);
    std::string name, status, extra;
    if (!(words >> name)) continue; // blank or comment-only
    if (!(words >> status) || (words >> extra))
      throw InputError(fmt::format("{}:{}: expected \"CASE STATUS  # reason\"", path, lineNo));
    Expectation e;
    e.reason = reason;
    if (status == "pass")
      e.status = CaseStatus::Passed;
    else if (status == "fail")
      e.status = CaseStatus::Failed;
    else if (status == "unsupported")
      e.status = CaseStatus::Unsupported;
    else if (status == "skip")
      e.skip = true;
    else
      throw InputError(fmt::format("{}:{}: status \"{}\" is not pass, fail, unsupported or skip",
                                   path, lineNo, status));
    if (!out.emplace(name, e).second)
      throw InputError(fmt::format("{}:{}: {} is listed twice", path, lineNo, name));
  }
  return out;
}

ExpectationDiff compareWithExpectations(const std::vector<CaseResult>& results,
                                        const std::map<std::string, Expectation>& expected) {
  ExpectationDiff d;
  for (const auto& r : results) {
    auto it = expected.find(r.name);
    if (it == expected.end()) {
      d.unlisted.push_back(r.name);
      continue;
    }
    const Expectation& e = it->second;
    if (e.skip) continue;
    bool passed = r.status == CaseStatus::Passed;
    if (e.status == CaseStatus::Passed && !passed)
      d.regressions.push_back(fmt::format("{}: expected to pass, got {}: {}", r.name,
                                          caseStatusName(r.status), r.detail));
    else if (e.status != CaseStatus::Passed && passed)
      d.improvements.push_back(
          fmt::format("{}: listed as {} but passes now", r.name, caseStatusName(e.status)));
  }
  return d;
}

} // namespace weft::onnx
