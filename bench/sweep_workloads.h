#pragma once
// The row-length sweep (issue 16 item 4, the shape of QuACK's published curves): layer norm,
// RMSNorm and softmax forward over rows of 256 … 262,144 elements, f32 and bf16 (bf16 in and
// out, statistics in f32), with as many rows as make the compulsory bytes (input read once,
// output written once) about 256 MB. 66 workloads named sweep_<op>_<dtype>_<row>, e.g.
// sweep_softmax_bf16_4096; `sweep` names them all. Opt-in: not part of the default suite (each
// point moves 256 MB, minutes on the simulator; `weft bench sweep --sample-blocks 8` models
// them in seconds each).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace weft::bench {

struct Workload;

inline constexpr uint64_t kSweepCompulsoryBytes = 256ull << 20;

struct SweepPoint {
  std::string op; // layer_norm, rms_norm, softmax
  ir::DType dtype = ir::DType::f32;
  int64_t row = 0, rows = 0;
  std::string name() const;
};

/// Every point of the sweep, op by op, f32 then bf16, rows of 256 up to 262,144.
std::vector<SweepPoint> sweepPoints();
/// The point a workload name denotes (nullopt if it is not a sweep name).
std::optional<SweepPoint> sweepPointNamed(const std::string& name);
/// The point's graph as JSON (weft's graph format), and as a workload.
std::string sweepGraphJson(const SweepPoint& p);
Workload sweepWorkload(const SweepPoint& p);

} // namespace weft::bench
