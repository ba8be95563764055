// A plan as bytes and back (fusion/plan_serialization.h): every example and suite workload under
// every policy on two device profiles, specialised and generic, reads back into a plan that
// prints, serialises and (for a subset covering every kind of step) compiles to PTX exactly as
// the original; every field of the plan's structs is in the format; truncated or corrupt bytes
// throw instead of giving a plan.
#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <set>
#include <utility>

#include "codegen/compile.h"
#include "frontend/json_reader.h"
#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_printer.h"
#include "fusion/plan_serialization.h"
#include "fusion/plan_versions.h"
#include "ir/fingerprint.h"
#include "ir/fnv1a64.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "weft/device_spec.h"

using namespace weft;
using namespace weft::fusion;
namespace fs = std::filesystem;

namespace {

// ---- how many fields an aggregate has: the longest brace list that initialises it ----
struct AnyField {
  template <class T> operator T&() const&&;
};
template <class T, size_t... I> constexpr bool initialisesWith(std::index_sequence<I...>) {
  return requires {
    T{(void(I), AnyField{})...};
  };
}
template <class T, size_t N = 0> constexpr size_t fieldCount() {
  if constexpr (N > 64)
    return N;
  else if constexpr (initialisesWith<T>(std::make_index_sequence<N + 1>{}))
    return fieldCount<T, N + 1>();
  else
    return N;
}

// ---- the plans ----

struct NamedPlan {
  std::string name;
  FusionPlan plan;
  ir::ShapeGuard guard;
};

std::vector<fs::path> graphFiles(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(std::string(WEFT_SOURCE_DIR) + "/" + dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

ir::Graph bound(const ir::Graph& g, int64_t size) {
  ir::Binding b;
  for (const std::string& s : g.symbols())
    b[s] = size;
  return ir::bindSymbols(g, b);
}

/// w = tanh(x + y) * z - max over its row, read by a later phase at its own rows:
/// out = w * colsum(w). The planner stores w once for the second phase (ValuePlacement::stored)
/// and keeps it resident, which no example or workload does today.
ir::Graph storedAcrossPhases(int64_t rows = 2048, int64_t cols = 256) {
  ir::Graph g;
  ir::Shape shape = {rows, cols};
  ir::NodeId x = g.parameter("x", {DType::f32, shape});
  ir::NodeId y = g.parameter("y", {DType::f32, shape});
  ir::NodeId z = g.parameter("z", {DType::f32, shape});
  ir::NodeId v =
      g.binary(ir::OpKind::Mul, g.unary(ir::OpKind::Tanh, g.binary(ir::OpKind::Add, x, y)), z, "v");
  ir::NodeId row = g.reduce(ir::ReduceKind::Max, v, {1}, "row");
  ir::NodeId w = g.binary(ir::OpKind::Sub, v, g.broadcastInDim(row, shape, {0}), "w");
  ir::NodeId col = g.reduce(ir::ReduceKind::Sum, w, {0}, "col");
  g.setOutputs({g.binary(ir::OpKind::Mul, w, g.broadcastInDim(col, shape, {1}), "out")});
  return g;
}

/// Every example (each symbol bound to 7 and to 64, and generic: every version) and suite
/// workload, canonicalised as weft::compile does, and storedAcrossPhases, under none, xla and
/// astitch on the h100 and a100 profiles.
const std::vector<NamedPlan>& allPlans() {
  static const std::vector<NamedPlan> plans = [] {
    std::vector<NamedPlan> out;
    for (const char* device : {"h100", "a100"})
      for (Policy policy : {Policy::None, Policy::Xla, Policy::AStitch}) {
        DeviceSpec spec = *deviceSpecProfile(device);
        std::string tail = fmt::format(" {} {}", policyName(policy), device);
        for (const fs::path& f : graphFiles("examples/graphs")) {
          ir::Graph g = frontend::readGraphFile(f.string()).graph;
          std::string stem = f.stem().string();
          if (g.symbols().empty()) {
            out.push_back({stem + tail, plan(passes::canonicalize(g), spec, policy), {}});
            continue;
          }
          for (int64_t size : {7, 64})
            out.push_back({fmt::format("{}@{}{}", stem, size, tail),
                           plan(passes::canonicalize(bound(g, size)), spec, policy),
                           {}});
          std::vector<PlanVersion> versions = planVersions(passes::canonicalize(g), spec, policy);
          for (size_t i = 0; i < versions.size(); ++i)
            out.push_back({fmt::format("{} generic version {}{}", stem, i, tail),
                           std::move(versions[i].plan), std::move(versions[i].guard)});
        }
        out.push_back(
            {"stored_across_phases" + tail, plan(storedAcrossPhases(), spec, policy), {}});
        for (const fs::path& f : graphFiles("bench/workloads")) {
          ir::Graph g = passes::canonicalize(frontend::readGraphFile(f.string()).graph);
          out.push_back({f.stem().string() + tail, plan(g, spec, policy), {}});
          if (f.stem() == "bert_ffn_gemm" && policy == Policy::AStitch) {
            // What --tf32 and --no-wgmma replan (part of what the compile cache holds).
            FusionPlan p = plan(g, spec, policy);
            replanGemms(p, {.tf32 = true, .warpgroupMma = false});
            out.push_back({f.stem().string() + " tf32 no-wgmma" + tail, std::move(p), {}});
          }
        }
      }
    return out;
  }();
  return plans;
}

bool any(const FusionPlan& p, const std::function<bool(const KernelPlan&)>& f) {
  for (const Step& s : p.steps)
    if (auto* k = std::get_if<KernelPlan>(&s); k && f(*k)) return true;
  return false;
}
bool anyPhase(const FusionPlan& p, const std::function<bool(const PhasePlan&)>& f) {
  return any(p,
             [&](const KernelPlan& k) { return std::any_of(k.phases.begin(), k.phases.end(), f); });
}
bool hasLibraryCall(const FusionPlan& p) {
  return std::any_of(p.steps.begin(), p.steps.end(),
                     [](const Step& s) { return std::holds_alternative<LibraryCall>(s); });
}
bool hasSymbols(const FusionPlan& p) {
  return !p.graph.symbols().empty();
}

/// The features a plan exercises, for choosing the PTX subset and checking that it covers them.
std::map<std::string, std::function<bool(const FusionPlan&)>> features() {
  return {
      {"library call", hasLibraryCall},
      {"gemm epilogue",
       [](const FusionPlan& p) {
         return std::any_of(p.steps.begin(), p.steps.end(), [](const Step& s) {
           auto* c = std::get_if<LibraryCall>(&s);
           return c && (!c->epilogue.empty() || c->epilogue.hasPrologue());
         });
       }},
      {"cooperative",
       [](const FusionPlan& p) {
         return any(p, [](const KernelPlan& k) { return k.launch.cooperative; });
       }},
      {"cluster",
       [](const FusionPlan& p) {
         return any(p, [](const KernelPlan& k) { return k.launch.clusterSize > 1; });
       }},
      {"tile slices",
       [](const FusionPlan& p) {
         return anyPhase(p, [](const PhasePlan& ph) { return !ph.slices.empty(); });
       }},
      {"staged inputs",
       [](const FusionPlan& p) {
         return anyPhase(p, [](const PhasePlan& ph) { return !ph.staged.empty(); });
       }},
      {"slots",
       [](const FusionPlan& p) {
         return anyPhase(p, [](const PhasePlan& ph) { return ph.slots.has_value(); });
       }},
      {"resident values",
       [](const FusionPlan& p) {
         return any(p, [](const KernelPlan& k) { return k.residentTiles > 0; });
       }},
      {"stored values",
       [](const FusionPlan& p) {
         return any(p, [](const KernelPlan& k) {
           return std::any_of(k.placement.begin(), k.placement.end(),
                              [](const auto& v) { return v.second.stored.has_value(); });
         });
       }},
      {"symbolic", hasSymbols},
  };
}

/// The plans whose PTX the test compiles: for each feature the first plan that has it, and
/// the astitch plans of a few suite workloads on the h100 (about fifteen in all).
std::vector<const NamedPlan*> ptxSubset() {
  std::vector<const NamedPlan*> subset;
  auto add = [&](const NamedPlan& p) {
    if (std::find(subset.begin(), subset.end(), &p) == subset.end()) subset.push_back(&p);
  };
  for (const auto& [name, has] : features())
    for (const NamedPlan& p : allPlans())
      if (has(p.plan)) {
        add(p);
        break;
      }
  for (const char* n :
       {"softmax astitch h100", "layer_norm_backward astitch h100", "bert_ffn_gemm astitch h100",
        "bert_ffn_gemm tf32 no-wgmma astitch a100", "rms_norm_bf16 xla a100",
        "log_softmax_nll astitch a100", "astitch_fig7 generic version 0 astitch h100"}) {
    auto it = std::find_if(allPlans().begin(), allPlans().end(),
                           [&](const NamedPlan& p) { return p.name == n; });
    INFO("no plan named " << n);
    REQUIRE(it != allPlans().end());
    add(*it);
  }
  return subset;
}

std::string bodyChecksummed(const std::string& bytes, const std::string& body) {
  // The header as serializePlan writes it (plan_serialization.cc): magic, kind, version, then
  // the body's size and FNV-1a 64 (little-endian).
  std::string out = bytes.substr(0, 13);
  for (uint64_t v : {uint64_t(body.size()), ir::fnv1a64(body)})
    for (int i = 0; i < 8; ++i)
      out.push_back(char(v >> (8 * i)));
  return out + body;
}

} // namespace

TEST_CASE("plan serialisation holds every field of every struct of a plan",
          "[planner][serialization]") {
  std::map<std::string, size_t> counts = serializedFieldCounts();
  std::map<std::string, size_t> fieldsOf = {
      {"TensorType", fieldCount<ir::TensorType>()},
      {"ParameterAttrs", fieldCount<ir::ParameterAttrs>()},
      {"ConstantAttrs", fieldCount<ir::ConstantAttrs>()},
      {"IotaAttrs", fieldCount<ir::IotaAttrs>()},
      {"CompareAttrs", fieldCount<ir::CompareAttrs>()},
      {"BroadcastAttrs", fieldCount<ir::BroadcastAttrs>()},
      {"TransposeAttrs", fieldCount<ir::TransposeAttrs>()},
      {"SliceAttrs", fieldCount<ir::SliceAttrs>()},
      {"ConcatAttrs", fieldCount<ir::ConcatAttrs>()},
      {"PadAttrs", fieldCount<ir::PadAttrs>()},
      {"GatherAttrs", fieldCount<ir::GatherAttrs>()},
      {"ReduceAttrs", fieldCount<ir::ReduceAttrs>()},
      {"Node", fieldCount<ir::Node>()},
      {"SymbolEquality", fieldCount<ir::SymbolEquality>()},
      {"SymbolRange", fieldCount<ir::SymbolRange>()},
      {"DeviceSpec", fieldCount<DeviceSpec>()},
      {"ElementwiseMapping", fieldCount<ElementwiseMapping>()},
      {"RowReduceMapping", fieldCount<RowReduceMapping>()},
      {"ColumnReduceMapping", fieldCount<ColumnReduceMapping>()},
      {"Group", fieldCount<Group>()},
      {"StoreDecision", fieldCount<ValuePlacement::StoreDecision>()},
      {"ResidentDecision", fieldCount<ValuePlacement::ResidentDecision>()},
      {"ValuePlacement", fieldCount<ValuePlacement>()},
      {"Stage", fieldCount<Stage>()},
      {"LaunchPlan", fieldCount<LaunchPlan>()},
      {"TileSpace", fieldCount<TileSpace>()},
      {"SlotPlan", fieldCount<SlotPlan>()},
      {"StagedInput", fieldCount<StagedInput>()},
      {"TileSlice", fieldCount<TileSlice>()},
      {"SharedPartials", fieldCount<SharedPartials>()},
      {"PhasePlan", fieldCount<PhasePlan>()},
      {"KernelPlan", fieldCount<KernelPlan>()},
      {"GemmOperand", fieldCount<GemmOperand>()},
      {"GemmPlan", fieldCount<GemmPlan>()},
      {"EpilogueRead", fieldCount<EpilogueRead>()},
      {"GemmPrologue", fieldCount<GemmPrologue>()},
      {"GemmEpilogue", fieldCount<GemmEpilogue>()},
      {"LibraryCall", fieldCount<LibraryCall>()},
      {"Buffer", fieldCount<Buffer>()},
      {"FusionPlan", fieldCount<FusionPlan>()},
  };
  // A field added to one of these structs fails here until plan_serialization.cc lists it.
  for (const auto& [name, n] : fieldsOf) {
    INFO(name << " has " << n << " field(s); plan_serialization.cc lists " << counts[name]);
    CHECK(counts[name] == n);
  }
  CHECK(counts.size() == fieldsOf.size());
  CHECK(fieldsOf.at("KernelPlan") == 15); // the counting itself works
}

TEST_CASE("every example and workload plan reads back printing and serialising the same",
          "[planner][serialization]") {
  const std::vector<NamedPlan>& plans = allPlans();
  CHECK(plans.size() > 200);
  std::set<std::string> seen;
  for (const NamedPlan& p : plans) {
    INFO(p.name);
    std::string bytes = serializePlan(p.plan);
    FusionPlan loaded = deserializePlan(bytes);
    CHECK(printFusionPlan(loaded) == printFusionPlan(p.plan));
    CHECK(serializePlan(loaded) == bytes);
    CHECK(ir::printGraph(loaded.graph) == ir::printGraph(p.plan.graph));
    CHECK(ir::fingerprint(loaded.graph) == ir::fingerprint(p.plan.graph));
    CHECK(loaded.kernelCount() == p.plan.kernelCount());
    std::string guardBytes = serializeGuard(p.guard);
    CHECK(deserializeGuard(guardBytes) == p.guard);
    for (const auto& [feature, has] : features())
      if (has(p.plan)) seen.insert(feature);
  }
  // The plans cover every kind of step and emission decision the format holds.
  for (const auto& [feature, has] : features()) {
    INFO(feature);
    CHECK(seen.count(feature) == 1);
  }
}

TEST_CASE("a plan's graph reads back with its symbol equalities and fresh-name counters",
          "[planner][serialization]") {
  // S is unified with B by the add (ir/symbol_unification.h); the unnamed ops take fresh names.
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {ir::Dim::symbol("B"), 768}});
  ir::NodeId y = g.parameter("y", {DType::f32, {ir::Dim::symbol("S"), 768}});
  ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, g.binary(ir::OpKind::Add, x, y), {1});
  g.addOutput(g.unary(ir::OpKind::Exp, sum));
  REQUIRE(g.symbolEqualities().size() == 1);
  ir::Graph canonical = passes::canonicalize(g);
  REQUIRE(canonical.symbolEqualities().size() == 1);
  for (const PlanVersion& v :
       planVersions(canonical, *deviceSpecProfile("h100"), Policy::AStitch)) {
    FusionPlan loaded = deserializePlan(serializePlan(v.plan));
    REQUIRE(loaded.graph.symbolEqualities().size() == 1);
    CHECK(loaded.graph.symbolEqualities()[0].symbol == "S");
    CHECK(loaded.graph.symbolEqualities()[0].value == ir::Dim::symbol("B"));
    CHECK(loaded.graph.symbolEqualities()[0].where == v.plan.graph.symbolEqualities()[0].where);
    CHECK(ir::printGraph(loaded.graph) == ir::printGraph(v.plan.graph));
    // A value added to either graph takes the same fresh name.
    ir::Graph a = v.plan.graph, b = loaded.graph;
    CHECK(a.node(a.unary(ir::OpKind::Neg, 0)).name == b.node(b.unary(ir::OpKind::Neg, 0)).name);
    CHECK(a.node(a.unary(ir::OpKind::Exp, 0)).name == b.node(b.unary(ir::OpKind::Exp, 0)).name);
  }
}

TEST_CASE("plans read back compile to the same PTX", "[planner][serialization][codegen]") {
  std::vector<const NamedPlan*> subset = ptxSubset();
  CHECK(subset.size() >= 14);
  for (const NamedPlan* p : subset) {
    INFO(p->name);
    FusionPlan loaded = deserializePlan(serializePlan(p->plan));
    codegen::CompiledModule a = codegen::compileToPtx(p->plan), b = codegen::compileToPtx(loaded);
    CHECK(a.ptx == b.ptx);
    CHECK(a.kernels.size() == b.kernels.size());
  }
}

TEST_CASE("truncated or corrupt plan bytes throw instead of giving a plan",
          "[planner][serialization]") {
  const NamedPlan* small = nullptr;
  for (const NamedPlan& p : allPlans())
    if (p.name == "astitch_fig7 generic version 0 astitch h100") small = &p;
  REQUIRE(small != nullptr);
  const std::string bytes = serializePlan(small->plan);
  REQUIRE(bytes.size() > 200);
  auto message = [](const std::string& b) -> std::string {
    try {
      deserializePlan(b);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "no error";
  };
  // Every prefix.
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("the first " << n << " of " << bytes.size() << " bytes");
    CHECK_THROWS_AS(deserializePlan(bytes.substr(0, n)), std::runtime_error);
  }
  CHECK_THAT(message(bytes.substr(0, bytes.size() - 1)), Catch::Contains("truncated"));
  // One bit flipped at every byte (a different bit each time).
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] = char(flipped[at] ^ (1 << (at % 8)));
    INFO("bit " << at % 8 << " of byte " << at);
    CHECK_THROWS_AS(deserializePlan(flipped), std::runtime_error);
  }
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 4;
  CHECK_THAT(message(flipped), Catch::Contains("checksum"));
  std::string version = bytes;
  version[9] = char(version[9] + 1);
  CHECK_THAT(message(version), Catch::Contains("format version"));
  CHECK_THAT(message("not a plan at all, but longer than a header"), Catch::Contains("WEFTPLAN"));
  // A body that lost or gained bytes under a checksum that matches it: the reader itself finds it.
  std::string body = bytes.substr(29);
  CHECK_THAT(message(bodyChecksummed(bytes, body.substr(0, body.size() - 1))),
             Catch::Contains("truncated"));
  CHECK_THAT(message(bodyChecksummed(bytes, body + "x")), Catch::Contains("after the end"));
  // A guard's bytes are not a plan's.
  CHECK_THAT(message(serializeGuard({})), Catch::Contains("not 'P'"));
  CHECK(deserializePlan(bytes).kernelCount() == small->plan.kernelCount());
}
