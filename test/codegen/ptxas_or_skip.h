#pragma once
// The ptxas a test assembles with. Without one (no CUDA toolkit), the test is skipped with a
// warning, unless WEFT_REQUIRE_PTXAS=1 (CI sets it): then a missing ptxas fails the test, so a
// machine that lost its toolkit cannot pass the ptxas tests by skipping them.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "codegen/ptxas.h"

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

} // namespace weft::test
