// weft::compile() and the pipeline it runs for each shape binding. Read compileVersions()
// top to bottom: it is the whole compiler, one named step after another, each logged at
// debug level (WEFT_LOG=debug) as it hands its result to the next (docs/architecture.md).
#include "compile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <mutex>
#include <spdlog/spdlog.h>

#include "codegen/compile.h"
#include "codegen/parallel_compile.h"
#include "codegen/compile_stack.h"
#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_versions.h"
#include "fusion/plan_printer.h"
#include "ir/fingerprint.h"
#include "ir/printer.h"
#include "passes/amp.h"
#include "passes/hoist_weights.h"
#include "passes/pipeline.h"
#include "runtime/compile_cache.h"
#include "runtime/logging.h"
#include "weft/source_hash.h"
#include "weft/version.h"

namespace weft {
namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Everything the plan and the PTX depend on: weft's version and source hash, the policy, every
/// field of the device spec and of the codegen options that reaches the module, tf32 and wgmma
/// (replanGemms), and the exact canonical graph (ir::fingerprint: every constant by its bits);
/// a generic compile adds its declared ranges. The plans are a deterministic function of these,
/// so the cache holds them too. The cache compares the whole key on load, so two keys that hash
/// to one file name still never share a program.
std::string cacheKey(const ir::Graph& canonical, const CompileOptions& o) {
  const DeviceSpec& d = o.device;
  const codegen::CodegenOptions& c = o.codegen;
  return fmt::format(
      "weft {} ({})\npolicy {}\n"
      "device {} sm_{} sms={} warp={} threads={}/{} blocks={} regs={}/{} smem={}/{}/{}/{} "
      "bw={:a} clock={:a} schedulers={} gemmLibrary={}\n"
      "libdevice={} path={} optimise={} keepLlvmIr={}\ntf32={} wgmma={}\n{}",
      WEFT_VERSION, WEFT_SOURCE_HASH, fusion::policyName(o.policy), d.name, d.computeCapability,
      d.smCount, d.warpSize, d.maxThreadsPerBlock, d.maxThreadsPerSM, d.maxBlocksPerSM,
      d.registersPerSM, d.maxRegistersPerThread, d.sharedMemoryPerBlock, d.sharedMemoryPerSM,
      d.sharedMemoryPerBlockDefault, d.sharedMemoryReservedPerBlock, d.memoryBandwidthGBs,
      d.clockGHz, d.warpSchedulersPerSM, d.gemmLibrary,
      c.useLibdevice, c.libdevicePath, c.optimise, c.keepLlvmIr, o.tf32, o.warpgroupMma,
      ir::fingerprint(canonical));
}

/// A sanity check of a loaded entry against the compile it is for (the key already says all of
/// this): the policy and device its plans were made for, and one version unless generic, whose
/// last version serves every binding.
bool matchesCompile(const runtime::CacheEntry& e, const CompileOptions& o, bool generic) {
  if (e.plans.empty() || e.plans.size() != e.modules.size()) return false;
  if (!generic && e.plans.size() != 1) return false;
  if (!e.plans.back().guard.empty()) return false;
  return std::all_of(e.plans.begin(), e.plans.end(), [&](const fusion::PlanVersion& v) {
    return v.plan.policy == o.policy && v.plan.device.name == o.device.name &&
           v.plan.device.computeCapability == o.device.computeCapability &&
           v.plan.device.smCount == o.device.smCount;
  });
}

/// A program embedding weft logs at warn unless it configured spdlog itself (a default logger
/// of its own) or asked through WEFT_LOG; the weft CLI sets its logger up before this runs.
void defaultLogLevelForEmbedders() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!spdlog::default_logger_raw()->name().empty()) return;
    // The CLI refuses an unknown WEFT_LOG; a library keeps going at warn.
    auto level = runtime::logLevelName(std::getenv("WEFT_LOG"));
    spdlog::set_level(spdlog::level::from_str(level.value_or("warn")));
  });
}

} // namespace

ProgramVersions compileVersions(const ir::Graph& graph, const Binding& binding,
                                const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  // No binding for a graph with symbols: the generic program, planned on the symbolic graph.
  const bool generic = binding.empty() && !graph.symbols().empty();

  ir::verify(graph);
  ir::Graph bound = generic ? graph : ir::bindSymbols(graph, binding);
  spdlog::debug("bound graph:\n{}", ir::printGraph(bound));
  // AMP before canonicalize, so that casts of constants fold into low-precision constants.
  if (options.amp) bound = passes::autoMixedPrecision(bound, *options.amp);

  ir::Graph canonical = options.canonicalize ? passes::canonicalize(bound) : bound;
  // Large constants become weights: inputs after the caller's, their values beside the
  // program, so that neither the PTX nor the cache key holds them (ir/weights.h).
  passes::HoistedWeights hoisted = passes::hoistWeights(canonical);
  auto hoistedWeights = std::make_shared<std::vector<HostTensor>>();
  for (size_t i = graph.inputs().size(); i < hoisted.graph.inputs().size(); ++i)
    hoistedWeights->push_back(
        std::move(hoisted.values.at(hoisted.graph.node(hoisted.graph.inputs()[i]).name)));
  canonical = std::move(hoisted.graph);
  spdlog::debug("canonical graph:\n{}", ir::printGraph(canonical));

  // One cache entry holds every version's plan and module: the versions are a function of the
  // key, and the key is known before planning, so a warm process skips planning too.
  const ir::SymbolRanges declared = ir::declaredRanges(options.symbolRanges, canonical.symbols());
  runtime::CompileCache cache(options.cacheDir);
  std::string key;
  std::optional<runtime::CacheEntry> cached;
  if (cache.enabled()) {
    key = cacheKey(canonical, options);
    if (generic) key += fmt::format("\ngeneric for {}", ir::rangesStr(declared));
    auto t1 = std::chrono::steady_clock::now();
    cached = cache.load(key);
    if (cached && !matchesCompile(*cached, options, generic)) {
      spdlog::warn("compile cache: entry {} holds plans for another compile; planning again",
                   cache.pathFor(key));
      cached.reset();
    }
    if (cached)
      spdlog::info("plan and codegen: loaded from the compile cache ({}: {} kernel(s) under "
                   "policy {}, {} version(s), read in {:.1f} ms)",
                   cache.pathFor(key), cached->plans.back().plan.kernelCount(),
                   fusion::policyName(options.policy), cached->plans.size(), msSince(t1));
  }
  const bool fromDiskCache = cached.has_value();
  std::vector<fusion::PlanVersion> plans;
  std::vector<codegen::CompiledModule> modules;
  double planMs = 0;
  if (cached) {
    plans = std::move(cached->plans);
    modules = std::move(cached->modules);
    planMs = msSince(t0);
  } else {
    // Generic: one plan per size class the planner decides differently on (plan_versions.h).
    plans = generic ? fusion::planVersions(canonical, options.device, options.policy, declared)
                    : std::vector<fusion::PlanVersion>{
                          {fusion::plan(canonical, options.device, options.policy), {}}};
    // The policies plan dots for exact arithmetic on the fastest units; --tf32 lets f32 dots
    // take tensor cores, --no-wgmma keeps f16/bf16 dots on mma.sync.
    if (options.tf32 || !options.warpgroupMma)
      for (fusion::PlanVersion& v : plans)
        fusion::replanGemms(v.plan, {.tf32 = options.tf32, .warpgroupMma = options.warpgroupMma});
    planMs = msSince(t0);
    spdlog::info("plan: {} kernel(s) under policy {}, {} version(s), in {:.1f} ms",
                 plans.back().plan.kernelCount(), fusion::policyName(options.policy),
                 plans.size(), planMs);
  }
  if (spdlog::should_log(spdlog::level::debug))
    for (const fusion::PlanVersion& v : plans)
      spdlog::debug("plan for {}:\n{}", ir::guardStr(v.guard), fusion::printFusionPlan(v.plan));

  if (!fromDiskCache) {
    // The versions are independent modules: compiled side by side (a generic program has up to
    // seven, and most are one kernel, which compileToPtx alone would run on one thread). Each
    // version's PTX is what a serial compile gives.
    modules.resize(plans.size());
    codegen::parallelFor(codegen::compileThreads(options.codegen.threads), plans.size(),
                         [&](size_t i) {
                           modules[i] = codegen::compileToPtx(plans[i].plan, options.codegen);
                         });
    for (const codegen::CompiledModule& m : modules)
      spdlog::info("codegen: LLVM IR {:.1f} ms, optimise {:.1f} ms, PTX {:.1f} ms",
                   m.timings.llvmIrMs, m.timings.optimiseMs, m.timings.ptxMs);
    if (cache.enabled()) {
      auto t1 = std::chrono::steady_clock::now();
      cache.store(key, plans, modules);
      spdlog::debug("compile cache: stored {} version(s) in {:.1f} ms", plans.size(), msSince(t1));
    }
  }

  ProgramVersions versions;
  const double totalMs = msSince(t0);
  for (size_t i = 0; i < plans.size(); ++i) {
    auto program = std::make_shared<CompiledProgram>();
    program->binding = generic ? Binding{} : binding;
    program->generic = generic;
    program->guard = std::move(plans[i].guard); // {} for the last: every other binding
    program->version = i;
    program->versionCount = plans.size();
    program->plan = std::move(plans[i].plan);
    program->module = std::move(modules[i]);
    program->hoistedWeights = hoistedWeights;
    program->fromDiskCache = fromDiskCache;
    program->planMs = planMs;
    program->totalMs = totalMs;
    versions.push_back(std::move(program));
  }
  return versions;
}

const std::shared_ptr<const CompiledProgram>& versionFor(const ProgramVersions& versions,
                                                         const Binding& binding) {
  std::vector<ir::ShapeGuard> guards;
  for (const auto& v : versions)
    guards.push_back(v->guard);
  return versions.at(fusion::versionFor(guards, binding));
}

struct CompiledGraph::Impl {
  Impl(Graph g, CompileOptions o) : graph(std::move(g)), options(std::move(o)) {}
  Graph graph;
  CompileOptions options;
  std::mutex mutex;
  // Specialized: one per binding. Generic: the generic program's versions under {} and one
  // program per degenerate binding (genericServes).
  std::map<Binding, ProgramVersions> programs;
};

CompiledGraph::CompiledGraph(Graph graph, CompileOptions options)
    : impl_(std::make_unique<Impl>(std::move(graph), std::move(options))) {
  ir::verify(irGraph(impl_->graph));
}

CompiledGraph::~CompiledGraph() = default;

const Graph& CompiledGraph::graph() const { return impl_->graph; }
const CompileOptions& CompiledGraph::options() const { return impl_->options; }

Program CompiledGraph::program(const Binding& binding) {
  ir::checkBinding(irGraph(impl_->graph).symbolEqualities(), binding);
  for (const auto& [s, r] : impl_->options.symbolRanges) {
    auto it = binding.find(s);
    if (it != binding.end() && (it->second < r.lo || it->second > r.hi))
      throw InputError(fmt::format("{}={} is outside the range {}..{} declared for {} when the "
                                   "graph was compiled; compile it again for a range that holds it",
                                   s, it->second, r.lo, r.hi, s));
  }
  Binding relevant;
  for (const std::string& s : impl_->graph.symbols()) {
    auto it = binding.find(s);
    if (it == binding.end())
      throw InputError(
          fmt::format("symbol \"{}\" is not bound; give it a size, e.g. --bind {}=16", s, s));
    relevant[s] = it->second;
  }
  // The binding the program is compiled for: {} for the generic program.
  Binding key = impl_->options.shapes == ShapeMode::Generic && genericServes(relevant)
                    ? Binding{}
                    : relevant;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->programs.find(key);
  if (it == impl_->programs.end()) {
    ProgramVersions versions;
    codegen::runOnCompileStack(
        [&] { versions = compileVersions(irGraph(impl_->graph), key, impl_->options); });
    it = impl_->programs.emplace(key, std::move(versions)).first;
  }
  return detail::Access::makeProgram(versionFor(it->second, relevant));
}

bool genericServes(const Binding& binding) {
  return std::all_of(binding.begin(), binding.end(), [](const auto& kv) { return kv.second > 0; });
}

std::string_view shapeModeName(ShapeMode m) {
  return m == ShapeMode::Generic ? "generic" : "specialized";
}

std::optional<ShapeMode> parseShapeMode(std::string_view s) {
  if (s == "generic") return ShapeMode::Generic;
  if (s == "specialized") return ShapeMode::Specialized;
  return std::nullopt;
}

size_t CompiledGraph::programCount() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->programs.size();
}

std::shared_ptr<CompiledGraph> compile(const Graph& graph, const CompileOptions& options) {
  defaultLogLevelForEmbedders();
  auto compiled = std::make_shared<CompiledGraph>(graph, options);
  if (graph.symbols().empty()) compiled->program({}); // static shapes: compile now
  return compiled;
}

std::shared_ptr<CompiledGraph> compile(const ir::Graph& graph, const CompileOptions& options) {
  return compile(publicGraph(graph), options);
}

Binding inferBinding(const Graph& graph, const std::vector<HostTensor>& inputs,
                     const Binding& given) {
  return inferBinding(irGraph(graph), inputs, given);
}

Binding inferBinding(const ir::Graph& graph, const std::vector<HostTensor>& inputs,
                     const Binding& given) {
  if (inputs.size() != graph.inputs().size())
    throw InputError(fmt::format("the graph takes {} input(s) but {} were given",
                                 graph.inputs().size(), inputs.size()));
  Binding b = given;
  // Single-symbol dims (factor * S) bind S; dims with several symbols are checked afterwards.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Node& p = graph.node(graph.inputs()[i]);
    const HostTensor& t = inputs[i];
    if (t.shape.size() != p.type.shape.size())
      throw InputError(fmt::format("input \"{}\": expected rank {} ({}), got shape [{}]", p.name,
                                   p.type.shape.size(), p.type.str(), fmt::join(t.shape, ", ")));
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const ir::Dim& dim = p.type.shape[d];
      if (dim.symbols().size() != 1 || b.count(dim.symbols()[0])) continue;
      if (t.shape[d] % dim.factor() != 0)
        throw InputError(
            fmt::format("input \"{}\": dim {} is {}, not a multiple of {} as {} requires", p.name,
                        d, t.shape[d], dim.factor(), dim.str()));
      b[dim.symbols()[0]] = t.shape[d] / dim.factor();
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Node& p = graph.node(graph.inputs()[i]);
    for (size_t d = 0; d < inputs[i].shape.size(); ++d) {
      int64_t want = p.type.shape[d].evaluate(b);
      if (want == inputs[i].shape[d]) continue;
      if (p.type.shape[d].isStatic()) // as eval words it
        throw InputError(fmt::format("input \"{}\": expected {}, got {}", p.name, p.type.str(),
                                     inputs[i].typeStr()));
      throw InputError(fmt::format("input \"{}\": dim {} is {} but the graph declares it {}, which "
                                   "is {} here",
                                   p.name, d, inputs[i].shape[d], p.type.shape[d].str(), want));
    }
    if (inputs[i].dtype != p.type.dtype)
      throw InputError(fmt::format("input \"{}\": expected dtype {}, got {}", p.name,
                                   ir::dtypeName(p.type.dtype), ir::dtypeName(inputs[i].dtype)));
  }
  return b;
}

} // namespace weft
