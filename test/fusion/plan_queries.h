#pragma once
// Test helpers: find kernels, groups and placements of a plan by the graph's value names.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fusion/fusion_plan.h"

namespace weft::fusion::testing {

inline std::vector<const KernelPlan*> kernelsOf(const FusionPlan& p) {
  std::vector<const KernelPlan*> ks;
  for (const Step& s : p.steps)
    if (auto* k = std::get_if<KernelPlan>(&s)) ks.push_back(k);
  return ks;
}

inline const KernelPlan& onlyKernel(const FusionPlan& p) {
  REQUIRE(p.kernelCount() == 1);
  return *kernelsOf(p).front();
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline ir::NodeId id(const ir::Graph& g, const std::string& name) {
  auto v = g.find(name);
  INFO("no value named " << name);
  REQUIRE(v.has_value());
  return *v;
}

inline std::string nameOf(const ir::Graph& g, ir::NodeId v) {
  return g.node(v).name;
}

inline std::vector<std::string> names(const ir::Graph& g, const std::vector<ir::NodeId>& vs) {
  std::vector<std::string> out;
  for (ir::NodeId v : vs)
    out.push_back(nameOf(g, v));
  return out;
}

inline std::vector<std::string> dominants(const ir::Graph& g, const KernelPlan& k) {
  std::vector<std::string> out;
  for (const Group& gr : k.groups)
    out.push_back(nameOf(g, gr.dominant));
  return out;
}

inline const Group& groupDominatedBy(const ir::Graph& g, const KernelPlan& k,
                                     const std::string& name) {
  for (const Group& gr : k.groups)
    if (nameOf(g, gr.dominant) == name) return gr;
  FAIL("no group dominated by " << name);
  return k.groups.front();
}

inline Storage storageOf(const ir::Graph& g, const KernelPlan& k, const std::string& name) {
  return k.placement.at(id(g, name)).storage;
}

inline std::vector<Barrier> barriers(const KernelPlan& k) {
  std::vector<Barrier> out;
  for (const Stage& s : k.stages)
    out.push_back(s.barrierBefore);
  return out;
}

inline bool hasGrid(const KernelPlan& k) {
  for (const Stage& s : k.stages)
    if (s.barrierBefore == Barrier::Grid) return true;
  return false;
}

} // namespace weft::fusion::testing
