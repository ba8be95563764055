// A fake cuBLASLt: a shared library exporting the entry points weft resolves, with canned
// answers, so the loader (runtime/cuda/cublaslt_api.h) and the provider
// (runtime/cuda/cublaslt_steps.h) are tested without cuBLAS. Tests steer it and read what it
// was asked through the exported `fakeCublasLt` (found with dlsym). Built twice: whole, and
// with WEFT_FAKE_CUBLASLT_PARTIAL (no cublasLtMatmul, no cublasLtMatmulAlgoGetHeuristic), a
// library the loader must refuse naming what it lacks.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fake_cublaslt.h"

#define WEFT_FAKE_EXPORT extern "C" __attribute__((visibility("default")))
using Status = int32_t;

extern "C" {
__attribute__((visibility("default"))) FakeCublasLt fakeCublasLt;
}

namespace {
void* handle(uintptr_t v) {
  return reinterpret_cast<void*>(v);
}
} // namespace

WEFT_FAKE_EXPORT Status cublasLtCreate(void** h) {
  ++fakeCublasLt.calls;
  *h = handle(0xc0b1a5);
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtDestroy(void*) {
  ++fakeCublasLt.calls;
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmulDescCreate(void** d, int32_t computeType, int32_t) {
  fakeCublasLt.computeType = computeType;
  *d = handle(0xde5c);
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmulDescSetAttribute(void*, int32_t attr, const void* v,
                                                       size_t bytes) {
  if (attr == 3) std::memcpy(&fakeCublasLt.transa, v, bytes);
  if (attr == 4) std::memcpy(&fakeCublasLt.transb, v, bytes);
  if (attr == 7) std::memcpy(&fakeCublasLt.epilogue, v, bytes);
  if (attr == 8) std::memcpy(&fakeCublasLt.bias, v, bytes);
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmulDescDestroy(void*) {
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatrixLayoutCreate(void** l, int32_t type, uint64_t rows,
                                                   uint64_t cols, int64_t ld) {
  int i = fakeCublasLt.layouts++ % 4;
  fakeCublasLt.layout[i][0] = type;
  fakeCublasLt.layout[i][1] = int64_t(rows);
  fakeCublasLt.layout[i][2] = int64_t(cols);
  fakeCublasLt.layout[i][3] = ld;
  *l = handle(0x1a0 + uintptr_t(i));
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatrixLayoutSetAttribute(void*, int32_t, const void*, size_t) {
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatrixLayoutDestroy(void*) {
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmulPreferenceCreate(void** p) {
  *p = handle(0x9ef);
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmulPreferenceSetAttribute(void*, int32_t, const void*,
                                                             size_t) {
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmulPreferenceDestroy(void*) {
  return 0;
}
#ifndef WEFT_FAKE_CUBLASLT_PARTIAL
// Unless told to have one, no algorithm for anything: CUBLAS_STATUS_NOT_SUPPORTED, as the real
// library answers a problem it cannot run.
WEFT_FAKE_EXPORT Status cublasLtMatmulAlgoGetHeuristic(void*, void*, void*, void*, void*, void*,
                                                       void*, int, void* results, int* found) {
  ++fakeCublasLt.calls;
  *found = fakeCublasLt.hasAlgorithm ? 1 : 0;
  if (!fakeCublasLt.hasAlgorithm) return 15;
  // cublasLtMatmulHeuristicResult_t: algo (64 bytes), workspaceSize, state (success)
  std::memset(results, 0, 96);
  return 0;
}
WEFT_FAKE_EXPORT Status cublasLtMatmul(void*, void*, const void*, const void* a, void*,
                                       const void* b, void*, const void*, const void* c, void*,
                                       void* d, void*, const void*, void*, size_t, void* stream) {
  ++fakeCublasLt.calls;
  ++fakeCublasLt.matmuls;
  fakeCublasLt.a = a;
  fakeCublasLt.b = b;
  fakeCublasLt.c = c;
  fakeCublasLt.d = d;
  if (fakeCublasLt.onMatmul) fakeCublasLt.onMatmul(stream);
  return fakeCublasLt.matmulStatus;
}
WEFT_FAKE_EXPORT const char* cublasLtGetStatusName(Status s) {
  return s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : s == 13 ? "CUBLAS_STATUS_EXECUTION_FAILED" : "";
}
#endif
