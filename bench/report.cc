#include "report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace weft::bench {
namespace {

using fusion::Policy;

const std::string kH100 = "h100";

std::string mb(uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / 1e6);
}

double ratio(uint64_t bytes, uint64_t compulsory) {
  return compulsory ? static_cast<double>(bytes) / static_cast<double>(compulsory) : 0;
}

std::string sampledText(const PolicyRun& r) {
  if (r.sampledKernels == 0) return "all";
  return fmt::format("sampled {}/{} blocks ({} of {} kernels)", r.simulatedBlocks, r.blocks,
                     r.sampledKernels, r.kernels);
}

/// xla (or none) time over astitch time on `profile`; 0 when either is missing.
double speedup(const WorkloadResult& w, Policy over, const std::string& profile) {
  const PolicyRun* a = w.find(Policy::AStitch, profile);
  const PolicyRun* b = w.find(over, profile);
  if (!a || !b || a->time.totalUs() <= 0) return 0;
  return b->time.totalUs() / a->time.totalUs();
}

std::string speedupText(double s) {
  return s > 0 ? fmt::format("{:.2f}×", s) : "–";
}

bool isSpeedupWorkload(const std::string& name) {
  return name == "layer_norm_f32" || name == "layer_norm_f16" || name == "softmax" ||
         name == "layer_norm_backward";
}

} // namespace

std::string TargetCheck::verdict() const {
  if (!applies) return "n/a";
  return met ? "met" : "missed";
}

std::vector<TargetCheck> checkTargets(const SuiteResult& r) {
  std::vector<TargetCheck> checks;
  const std::string& primary = r.profiles.empty() ? kH100 : r.profiles[0];
  for (const WorkloadResult& w : r.workloads) {
    const PolicyRun* a = w.find(Policy::AStitch, primary);
    if (w.rowsFitOnChip && a) {
      const double limit = w.name == "cluster_200" ? kMaxClusterBytesRatio : kMaxBytesRatio;
      TargetCheck c;
      c.target = fmt::format("astitch bytes moved ≤ {:.2f} × compulsory", limit);
      c.workload = w.name;
      c.required = fmt::format("≤ {:.2f}×", limit);
      double q = ratio(a->bytes, w.compulsoryBytes);
      c.met = q <= limit;
      c.measured = c.met ? fmt::format("{:.3f}×", q)
                         : fmt::format("{:.3f}× (over by {:.3f}×)", q, q - limit);
      checks.push_back(c);
    }
    if (w.name == "bert_ffn_gemm" && a) {
      TargetCheck c;
      c.target = fmt::format("GEMM bytes moved ≤ {:.2f} × compulsory", kMaxGemmBytesRatio);
      c.workload = w.name;
      c.required = fmt::format("≤ {:.2f}×", kMaxGemmBytesRatio);
      double q = ratio(a->bytes, w.compulsoryBytes);
      c.met = q <= kMaxGemmBytesRatio;
      c.measured = fmt::format("{:.3f}×", q);
      checks.push_back(c);
    }
    if (isSpeedupWorkload(w.name)) {
      TargetCheck c;
      c.target =
          fmt::format("astitch ≥ {:.1f}× faster than xla (modeled, h100)", kMinSpeedupOverXla);
      c.workload = w.name;
      c.required = fmt::format("≥ {:.2f}×", kMinSpeedupOverXla);
      double s = speedup(w, Policy::Xla, kH100);
      if (s == 0) {
        c.applies = false;
        c.measured = "not run (needs --policy xla,astitch and the h100 profile)";
      } else {
        c.met = s >= kMinSpeedupOverXla;
        c.measured = c.met ? fmt::format("{:.2f}×", s)
                           : fmt::format("{:.2f}× (short by {:.2f}×)", s, kMinSpeedupOverXla - s);
      }
      checks.push_back(c);
    }
  }
  // The 10,000-node graph's time to PTX: from graph_10000 if it ran, else the scaling point.
  double ms = -1;
  for (const WorkloadResult& w : r.workloads)
    if (w.name == "graph_10000")
      if (const PolicyRun* a = w.find(Policy::AStitch, primary); a && a->compile.runs > 0)
        ms = a->compile.totalMs;
  if (ms < 0)
    for (const ScalingPoint& p : r.scaling.points)
      if (p.nodes == 10000) ms = p.compile.totalMs;
  TargetCheck c;
  c.target = fmt::format("10,000-node graph compiles to PTX (astitch) in < {:g} s",
                         kMaxCompileMs10k / 1e3);
  c.workload = "graph_10000";
  c.required = fmt::format("< {:.1f} s", kMaxCompileMs10k / 1e3);
  if (ms < 0) {
    c.applies = false;
    c.measured = "not run";
  } else {
    c.met = ms < kMaxCompileMs10k;
    c.measured =
        c.met ? fmt::format("{:.2f} s", ms / 1e3)
              : fmt::format("{:.2f} s (over by {:.2f} s)", ms / 1e3, (ms - kMaxCompileMs10k) / 1e3);
  }
  checks.push_back(c);

  std::vector<double> perKernel;
  for (const WorkloadResult& w : r.workloads)
    for (const PolicyRun& run : w.runs)
      if (run.profile == primary && run.compile.runs > 0 && run.compile.kernelsCompiled > 0)
        perKernel.push_back(run.compile.totalMs / run.compile.kernelsCompiled);
  TargetCheck k;
  k.target = fmt::format("median compile per kernel (every workload and policy) ≤ {:g} ms",
                         kMaxCompileMsPerKernel);
  k.workload = "suite";
  k.required = fmt::format("≤ {:.1f} ms", kMaxCompileMsPerKernel);
  if (perKernel.empty()) {
    k.applies = false;
    k.measured = "not run";
  } else {
    const double m = median(perKernel);
    k.met = m <= kMaxCompileMsPerKernel;
    k.measured = fmt::format("{:.1f} ms over {} programs{}", m, perKernel.size(),
                             k.met ? "" : fmt::format(" (over by {:.1f} ms)",
                                                      m - kMaxCompileMsPerKernel));
  }
  checks.push_back(k);
  return checks;
}

std::string formatMarkdown(const SuiteResult& r) {
  const std::string& primary = r.profiles.empty() ? kH100 : r.profiles[0];
  const ModelProfile primaryModel =
      modelProfile(deviceSpecProfile(primary).value_or(*deviceSpecProfile(kH100)));
  std::string md;
  auto line = [&](const std::string& s) { md += s + "\n"; };

  line("## Workloads (kernels and bytes from weft's PTX simulator; GPU times modeled)");
  line("");
  line(fmt::format("Counts are those of the {} plan. Modeled times (bench/perf_model.h): DRAM "
                   "bytes at the bandwidth the bytes in flight reach, re-reads that fit in L2 at "
                   "L2 bandwidth, or warp instructions / issue rate, whichever is larger, plus "
                   "{:.1f} µs per launch, {:.1f} µs per grid barrier and {:.1f} µs per handoff "
                   "to a kernel's last block (docs/performance.md). "
                   "\"vs copy\": the modeled time of a copy of the compulsory bytes over the "
                   "policy's modeled time. Compile time: measured on this machine, median of the "
                   "runs shown, cache off.",
                   primary, primaryModel.launchUs(), primaryModel.cost.barrierUs,
                   fusion::handoffUs(primaryModel.cost)));
  line("");
  std::string head = "| workload | policy | kernels | grid barriers | MB moved | compulsory MB | "
                     "moved / compulsory | modeled " + primary + " vs copy |";
  std::string rule = "|---|---|---:|---:|---:|---:|---:|---:|";
  for (const std::string& p : r.profiles) {
    head += fmt::format(" modeled {} µs |", p);
    rule += "---:|";
  }
  head += " compile ms: plan + LLVM + PTX (runs) | simulated blocks |";
  rule += "---|---|";
  line(head);
  line(rule);
  for (const WorkloadResult& w : r.workloads)
    for (Policy policy : r.policies) {
      const PolicyRun* run = w.find(policy, primary);
      if (!run) continue;
      const double copyUs = copyBaselineUs(w.compulsoryBytes, primaryModel);
      std::string row = fmt::format(
          "| {} | {} | {} | {} | {} | {} | {:.2f}× | {:.0f}% |", w.name,
          fusion::policyName(policy), run->kernels, run->gridBarriers, mb(run->bytes),
          mb(w.compulsoryBytes), ratio(run->bytes, w.compulsoryBytes),
          run->time.totalUs() > 0 ? 100 * copyUs / run->time.totalUs() : 0.0);
      for (const std::string& p : r.profiles) {
        const PolicyRun* other = w.find(policy, p);
        row += other ? fmt::format(" {:.1f} |", other->time.totalUs()) : " – |";
      }
      const CompileTime& c = run->compile;
      row += fmt::format(" {:.0f} = {:.0f} + {:.0f} + {:.0f} ({}) | {} |", c.totalMs, c.planMs,
                         c.llvmMs, c.ptxMs, c.runs, sampledText(*run));
      line(row);
    }
  line("");

  line("## Modeled speedups");
  line("");
  head = "| workload | summary | rows fit on chip |";
  rule = "|---|---|---|";
  for (const std::string& p : r.profiles) {
    head += fmt::format(" bandwidth limit {} µs | astitch vs xla {} | astitch vs none {} | "
                        "astitch at % of limit {} |",
                        p, p, p, p);
    rule += "---:|---:|---:|---:|";
  }
  line(head);
  line(rule);
  for (const WorkloadResult& w : r.workloads) {
    std::string row =
        fmt::format("| {} | {} | {} |", w.name, w.summary, w.rowsFitOnChip ? "yes" : "no");
    for (const std::string& p : r.profiles) {
      std::optional<DeviceSpec> spec = deviceSpecProfile(p);
      double limit = spec ? bandwidthLimitUs(w.compulsoryBytes, modelProfile(*spec)) : 0;
      const PolicyRun* a = w.find(Policy::AStitch, p);
      std::string pct = a && a->time.totalUs() > 0
                            ? fmt::format("{:.0f}%", 100 * limit / a->time.totalUs())
                            : "–";
      row += fmt::format(" {:.1f} | {} | {} | {} |", limit, speedupText(speedup(w, Policy::Xla, p)),
                         speedupText(speedup(w, Policy::None, p)), pct);
    }
    line(row);
  }
  line("");

  line("## Targets");
  line("");
  line("| target | workload | required | measured | verdict |");
  line("|---|---|---|---|---|");
  for (const TargetCheck& c : checkTargets(r))
    line(fmt::format("| {} | {} | {} | {} | {} |", c.target, c.workload, c.required, c.measured,
                     c.verdict()));
  line("");

  if (!r.scaling.points.empty()) {
    line(fmt::format("## Compile-time scaling (generated graphs, astitch, {}; median of runs)",
                     primary));
    line("");
    line("| nodes | plan ms | LLVM ms | PTX ms | time to PTX ms | runs |");
    line("|---:|---:|---:|---:|---:|---:|");
    for (const ScalingPoint& p : r.scaling.points)
      line(fmt::format("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} |", p.nodes, p.compile.planMs,
                       p.compile.llvmMs, p.compile.ptxMs, p.compile.totalMs, p.compile.runs));
    line("");
    line(fmt::format("Fitted exponent: time to PTX ∝ nodes^{:.2f} (least squares on log–log).",
                     r.scaling.exponent));
    line("");
  }
  std::string sampling =
      r.sampleBlocks
          ? fmt::format("grids of more than {} blocks were simulated on {} blocks spread over "
                        "the grid plus the last one, and extrapolated only where those samples "
                        "counted exactly the same (\"simulated blocks\" column)",
                        r.sampleBlocks + 1, r.sampleBlocks)
          : "every block was simulated";
  line(fmt::format("Suite wall time: {:.0f} s; {}.", r.wallSeconds, sampling));
  return md;
}

std::string formatJson(const SuiteResult& r) {
  using nlohmann::json;
  json j;
  j["note"] = "counters from weft's PTX simulator; GPU times are modeled, compile times measured";
  j["profiles"] = r.profiles;
  json policies = json::array();
  for (Policy p : r.policies)
    policies.push_back(std::string(fusion::policyName(p)));
  j["policies"] = policies;
  j["sampleBlocks"] = r.sampleBlocks;
  if (!r.profiles.empty())
    if (std::optional<DeviceSpec> spec = deviceSpecProfile(r.profiles[0]))
      j["launchUs"] = modelProfile(*spec).launchUs();
  j["wallSeconds"] = r.wallSeconds;
  json workloads = json::array();
  for (const WorkloadResult& w : r.workloads) {
    json jw = {{"name", w.name},
               {"summary", w.summary},
               {"graphNodes", w.graphNodes},
               {"compulsoryBytes", w.compulsoryBytes},
               {"rowsFitOnChip", w.rowsFitOnChip}};
    json runs = json::array();
    for (const PolicyRun& run : w.runs) {
      const ModeledTime& t = run.time;
      json jr = {{"policy", std::string(fusion::policyName(run.policy))},
                 {"profile", run.profile},
                 {"kernels", run.kernels},
                 {"gridBarriers", run.gridBarriers},
                 {"bytes", run.bytes},
                 {"bytesOverCompulsory", ratio(run.bytes, w.compulsoryBytes)},
                 {"warpInstructions", run.warpInstructions},
                 {"blocks", run.blocks},
                 {"simulatedBlocks", run.simulatedBlocks},
                 {"sampledKernels", run.sampledKernels},
                 {"modeledUs",
                  {{"memory", t.memoryUs},
                   {"issue", t.issueUs},
                   {"bound", t.boundUs},
                   {"launch", t.launchUs},
                   {"gridBarriers", t.barrierUs},
                   {"total", t.totalUs()},
                   {"dramBytes", t.dramBytes},
                   {"l2Bytes", t.l2Bytes}}}};
      if (std::optional<DeviceSpec> spec = deviceSpecProfile(run.profile); spec && t.totalUs() > 0)
        jr["modeledVsCopy"] = copyBaselineUs(w.compulsoryBytes, modelProfile(*spec)) / t.totalUs();
      // Per launch: what the model reads (bench/calibrate_model.py fits its constants on these).
      json launches = json::array();
      for (size_t k = 0; k < run.launches.size(); ++k) {
        const LaunchCounters& c = run.launches[k];
        json jl = {{"kernel", c.kernel},
                   {"sectorsRead", c.globalSectorsRead},
                   {"sectorsWritten", c.globalSectorsWritten},
                   {"loadRequests", c.globalLoadRequests},
                   {"warpInstructions", c.warpInstructions},
                   {"blocks", c.blocks},
                   {"gridBarriers", c.gridBarriers},
                   {"blockBarriers", c.blockBarriers},
                   {"clusterBarriers", c.clusterBarriers},
                   {"clusterSharedLoads", c.clusterSharedLoads}};
        if (k < run.shape.size()) {
          const KernelShape& ks = run.shape[k];
          auto uses = [](const std::vector<BufferUse>& v) {
            json a = json::array();
            for (const BufferUse& u : v)
              a.push_back({u.buffer, u.bytes});
            return a;
          };
          jl["blockSize"] = ks.blockSize;
          jl["blocksPerSM"] = ks.blocksPerSM;
          jl["loadsInFlight"] = ks.loadsInFlight;
          jl["clusterSize"] = ks.clusterSize;
          jl["reads"] = uses(ks.reads);
          jl["writes"] = uses(ks.writes);
        }
        launches.push_back(jl);
      }
      jr["launches"] = launches;
      if (run.compile.runs > 0)
        jr["compileMs"] = {{"plan", run.compile.planMs},
                           {"llvm", run.compile.llvmMs},
                           {"ptx", run.compile.ptxMs},
                           {"total", run.compile.totalMs},
                           {"runs", run.compile.runs}};
      runs.push_back(jr);
    }
    jw["runs"] = runs;
    workloads.push_back(jw);
  }
  j["workloads"] = workloads;
  json targets = json::array();
  for (const TargetCheck& c : checkTargets(r))
    targets.push_back({{"target", c.target},
                       {"workload", c.workload},
                       {"required", c.required},
                       {"measured", c.measured},
                       {"applies", c.applies},
                       {"met", c.met}});
  j["targets"] = targets;
  json points = json::array();
  for (const ScalingPoint& p : r.scaling.points)
    points.push_back({{"nodes", p.nodes},
                      {"planMs", p.compile.planMs},
                      {"llvmMs", p.compile.llvmMs},
                      {"ptxMs", p.compile.ptxMs},
                      {"totalMs", p.compile.totalMs},
                      {"runs", p.compile.runs}});
  j["scaling"] = {{"points", points}, {"exponent", r.scaling.exponent}};
  return j.dump(2) + "\n";
}

std::string formatCsv(const SuiteResult& r) {
  std::string csv = "workload,policy,profile,kernels,grid_barriers,bytes,compulsory_bytes,"
                    "modeled_us,compile_ms,simulated_blocks,blocks\n";
  for (const WorkloadResult& w : r.workloads)
    for (const PolicyRun& run : w.runs)
      csv += fmt::format("{},{},{},{},{},{},{},{:.3f},{:.3f},{},{}\n", w.name,
                         fusion::policyName(run.policy), run.profile, run.kernels, run.gridBarriers,
                         run.bytes, w.compulsoryBytes, run.time.totalUs(), run.compile.totalMs,
                         run.simulatedBlocks, run.blocks);
  return csv;
}

} // namespace weft::bench
