#pragma once
// The compiler behind the public API (weft/weft.h), for weft's own code: the program one
// binding compiles to, the pipeline on an ir::Graph, and the bridges between the public
// handles (Graph, Program) and the types they hide. Embedders never include this.
#include <memory>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "fusion/fusion_plan.h"
#include "ir/graph.h"
#include "ir/weights.h"
#include "weft/weft.h"

namespace weft {

/// Everything compiled for one shape binding, or for every binding when generic (the plan and
/// PTX keep the graph's symbols; runtime/shape_binding.h evaluates them per call): the plan,
/// the PTX and how to launch it.
struct CompiledProgram {
  Binding binding; // the symbols bound before planning; {} for a generic program
  bool generic = false;
  // A generic program's version (fusion/plan_versions.h): the bindings it serves ({} for the
  // last version, which serves every binding no other admits), and its place among its
  // compile's versions. A specialised program is version 0 of 1.
  ir::ShapeGuard guard;
  size_t version = 0;
  size_t versionCount = 1;
  fusion::FusionPlan plan;
  codegen::CompiledModule module;
  // The large constants the compiler made weights (passes/hoistWeights): the plan's graph
  // takes them as its last inputs, after the caller's, in this order; the Executable uploads
  // them once per program. Shared by a compile's versions; never part of the cache key.
  std::shared_ptr<const std::vector<HostTensor>> hoistedWeights;
  bool fromDiskCache = false;
  double planMs = 0;  // passes + planning, or passes + the compile cache's read on a hit
  double totalMs = 0; // the whole pipeline for this binding
};

/// Every version one compile yields, in version order: one for a specialised binding; for a
/// generic program one per size class the planner decides differently on.
using ProgramVersions = std::vector<std::shared_ptr<const CompiledProgram>>;

/// One binding's pipeline run, without in-memory caches (what CompiledGraph::program calls on
/// a miss): verify → bind → canonicalize → plan → codegen (or the disk cache). With an empty
/// binding, a graph with symbols compiles to its generic program (nothing bound; symbols stay
/// symbolic), planned once per size class (fusion/plan_versions.h), all in one cache entry.
ProgramVersions compileVersions(const ir::Graph& graph, const Binding& binding,
                                const CompileOptions& options);
/// The version that serves `binding`: the first whose guard admits it, else the last.
const std::shared_ptr<const CompiledProgram>& versionFor(const ProgramVersions& versions,
                                                         const Binding& binding);
/// weft::compile and inferBinding on a graph weft built itself (a frontend, a test).
std::shared_ptr<CompiledGraph> compile(const ir::Graph& graph, const CompileOptions& options = {});
Binding inferBinding(const ir::Graph& graph, const std::vector<HostTensor>& inputs,
                     const Binding& given = {});
/// Whether a generic program can serve `binding`: every symbol at least 1. A symbol bound to 0
/// (an empty tensor) is compiled specialised: empty shapes fold and plan differently
/// (test/codegen/scaling_test.cc's degenerate cases), and one extra program per such binding
/// costs a sweep nothing.
bool genericServes(const Binding& binding);

namespace detail {
/// The one friend of the public handles: what the bridges above are made of.
struct Access {
  static const ir::Graph& irGraph(const Graph& g); // src/runtime/public_graph.cc
  static Graph makeGraph(ir::Graph g, std::string name);
  static Dim makeDim(const ir::Dim& d);
  static const std::shared_ptr<const CompiledProgram>& programOf(const Program& p) {
    return p.program_;
  }
  static const std::shared_ptr<const CompiledProgram>& programOf(const Plan& p) {
    return p.program_;
  }
  static Program makeProgram(std::shared_ptr<const CompiledProgram> p) {
    return Program(std::move(p));
  }
  static Plan makePlan(std::shared_ptr<const CompiledProgram> p) { return Plan(std::move(p)); }
};
} // namespace detail

// --- between the public handles and the compiler's types ---
inline const ir::Graph& irGraph(const Graph& graph) { return detail::Access::irGraph(graph); }
inline Graph publicGraph(ir::Graph graph, std::string name = "main") {
  return detail::Access::makeGraph(std::move(graph), std::move(name));
}
inline const CompiledProgram& compiledProgram(const Program& program) {
  return *detail::Access::programOf(program);
}
inline const std::shared_ptr<const CompiledProgram>& sharedProgram(const Program& program) {
  return detail::Access::programOf(program);
}

} // namespace weft
