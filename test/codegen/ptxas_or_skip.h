#pragma once
// The ptxas a test assembles with. Without one (no CUDA toolkit), the test is skipped with a
// warning, unless WEFT_REQUIRE_PTXAS=1 (CI sets it): then a missing ptxas fails the test, so a
// machine that lost its toolkit cannot pass the ptxas tests by skipping them.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "fusion/fusion_plan.h"

namespace weft::test {

/// The path of ptxas, or "" (after a WARN, or a FAIL under WEFT_REQUIRE_PTXAS=1).
inline std::string ptxasOrSkip() {
  std::string ptxas = codegen::findPtxas();
  if (!ptxas.empty()) return ptxas;
  const char* required = std::getenv("WEFT_REQUIRE_PTXAS");
  if (required && std::string(required) == "1")
    FAIL("WEFT_REQUIRE_PTXAS=1 but no ptxas was found (install a CUDA toolkit or set CUDA_HOME)");
  WARN("skipped: no ptxas (install a CUDA toolkit or set CUDA_HOME)");
  return "";
}

/// Compiles `plan` (one kernel), assembles it with `ptxas` for the plan's device and checks
/// that it assembles and spills nothing; the log and register count go to the failure message.
inline void checkAssemblesWithoutSpills(const std::string& ptxas, const fusion::FusionPlan& plan) {
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  codegen::PtxasReport r = codegen::runPtxas(ptxas, m.ptx, plan.device.smName());
  INFO(r.log);
  REQUIRE(r.ok());
  REQUIRE(r.functions.size() == 1);
  INFO(r.functions[0].registers << " registers");
  CHECK(r.functions[0].spillStores == 0);
  CHECK(r.functions[0].spillLoads == 0);
}

} // namespace weft::test
