#pragma once
// What the fake cuBLASLt (fake_cublaslt.cc) exports as `fakeCublasLt`: how it answers and what
// it was asked last.
#include <cstdint>

struct FakeCublasLt {
  // steering
  bool hasAlgorithm = false;         // cublasLtMatmulAlgoGetHeuristic finds one
  int32_t matmulStatus = 0;          // what cublasLtMatmul returns
  void (*onMatmul)(void* stream) = nullptr; // called by cublasLtMatmul (a test's stand-in kernel)
  // what happened
  int calls = 0; // cublasLtCreate, Destroy, AlgoGetHeuristic and Matmul calls
  int matmuls = 0;
  int32_t computeType = -1, transa = -1, transb = -1;
  uint32_t epilogue = 0;
  const void* bias = nullptr;
  const void *a = nullptr, *b = nullptr, *c = nullptr;
  void* d = nullptr;
  int layouts = 0;            // layouts created
  int64_t layout[4][4] = {};  // the last ones (by creation count mod 4): type, rows, cols, ld
};
