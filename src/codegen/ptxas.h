#pragma once
// Assembling PTX with NVIDIA's ptxas (when a CUDA toolkit is installed) to check what codegen
// emits: errors, registers and spills per function, from `ptxas -arch=sm_XX -v`.
#include <cstdint>
#include <string>
#include <vector>

namespace weft::codegen {

struct PtxasFunctionReport {
  std::string name;
  int registers = 0;
  int64_t spillStores = 0, spillLoads = 0; // bytes
  int64_t stackFrame = 0;                  // bytes
};

struct PtxasReport {
  int exitCode = 0;
  std::string log; // ptxas's stdout and stderr
  std::vector<PtxasFunctionReport> functions;
  bool ok() const { return exitCode == 0; }
  bool spills() const;
};

/// $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas, or ptxas on PATH; "" when there is none.
std::string findPtxas();

/// Runs `ptxas -arch=<arch> -v` on `ptx` (written to a temporary file); for PTX whose .target
/// is arch's architecture-specific variant (sm_90a for sm_90), -arch=sm_90a.
PtxasReport runPtxas(const std::string& ptxasPath, const std::string& ptx, const std::string& arch);

/// Parses ptxas -v output (exposed for tests).
std::vector<PtxasFunctionReport> parsePtxasLog(const std::string& log);

} // namespace weft::codegen
