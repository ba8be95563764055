#include "sweep_workloads.h"

#include <fmt/format.h>

#include "frontend/json_reader.h"
#include "workloads.h"

namespace weft::bench {

std::string SweepPoint::name() const {
  return fmt::format("sweep_{}_{}_{}", op, ir::dtypeName(dtype), row);
}

std::vector<SweepPoint> sweepPoints() {
  std::vector<SweepPoint> points;
  for (const char* op : {"layer_norm", "rms_norm", "softmax"})
    for (ir::DType t : {ir::DType::f32, ir::DType::bf16})
      for (int64_t row = 256; row <= 262144; row *= 2) {
        const uint64_t rowBytes = 2 * uint64_t(row) * uint64_t(ir::dtypeBytes(t)); // in + out
        points.push_back({op, t, row, int64_t(std::max<uint64_t>(1, kSweepCompulsoryBytes / rowBytes))});
      }
  return points;
}

std::optional<SweepPoint> sweepPointNamed(const std::string& name) {
  for (const SweepPoint& p : sweepPoints())
    if (p.name() == name) return p;
  return std::nullopt;
}

std::string sweepGraphJson(const SweepPoint& p) {
  const std::string t(ir::dtypeName(p.dtype));
  const bool low = p.dtype != ir::DType::f32;
  std::string inputs = fmt::format(R"({{"name": "x", "dtype": "{}", "shape": [{}, {}]}})", t,
                                   p.rows, p.row);
  std::string ops;
  auto op = [&](const std::string& text) { ops += (ops.empty() ? "" : ",\n    ") + text; };
  // bf16: parameters and activations in bf16, statistics in f32 (as rms_norm_bf16 does)
  auto widened = [&](const std::string& v) {
    if (!low) return v;
    op(fmt::format(R"({{"name": "{}32", "op": "convert", "inputs": ["{}"], "dtype": "f32"}})", v, v));
    return v + "32";
  };
  std::string x = widened("x");
  const std::string y = low ? "y32" : "y"; // the op's result; bf16 converts it back
  if (p.op == "layer_norm") {
    inputs += fmt::format(R"(, {{"name": "gamma", "dtype": "{}", "shape": [{}]}})", t, p.row);
    inputs += fmt::format(R"(, {{"name": "beta", "dtype": "{}", "shape": [{}]}})", t, p.row);
    std::string g = widened("gamma"), b = widened("beta");
    op(fmt::format(R"({{"name": "{}", "op": "layer_norm", "inputs": ["{}", "{}", "{}"], "epsilon": 1e-5}})",
                   y, x, g, b));
  } else if (p.op == "rms_norm") {
    inputs += fmt::format(R"(, {{"name": "weight", "dtype": "{}", "shape": [{}]}})", t, p.row);
    std::string w = widened("weight");
    op(fmt::format(R"({{"name": "{}", "op": "rms_norm", "inputs": ["{}", "{}"], "epsilon": 1e-6}})",
                   y, x, w));
  } else {
    op(fmt::format(R"({{"name": "{}", "op": "softmax", "inputs": ["{}"], "axis": -1}})", y, x));
  }
  if (low)
    op(fmt::format(R"({{"name": "y", "op": "convert", "inputs": ["y32"], "dtype": "{}"}})", t));
  return fmt::format(R"({{
  "name": "{}",
  "doc": "issue 16's row sweep: {} over rows of {} {} elements, {} rows",
  "inputs": [{}],
  "ops": [
    {}
  ],
  "outputs": ["y"]
}}
)",
                     p.name(), p.op, p.row, t, p.rows, inputs, ops);
}

Workload sweepWorkload(const SweepPoint& p) {
  const std::string json = sweepGraphJson(p);
  const std::string name = p.name();
  return {name,
          fmt::format("{} {} [{}, {}] (row sweep)", p.op, ir::dtypeName(p.dtype), p.rows, p.row),
          [json, name] { return frontend::readGraphJson(json, name + ".json").graph; },
          {}};
}

} // namespace weft::bench
