// A fake cuBLASLt: a shared library exporting the entry points weft resolves, with canned
// answers, so the loader (runtime/cuda/cublaslt_api.h) is tested without cuBLAS. Built twice:
// whole, and with WEFT_FAKE_CUBLASLT_PARTIAL (no cublasLtMatmul, no
// cublasLtMatmulAlgoGetHeuristic), a library the loader must refuse naming what it lacks.
#include <cstddef>
#include <cstdint>

extern "C" {
using Status = int32_t;

// How many times the fake's entry points were called, read by the test through dlsym.
__attribute__((visibility("default"))) int fakeCublasLtCalls = 0;

__attribute__((visibility("default"))) Status cublasLtCreate(void** handle) {
  ++fakeCublasLtCalls;
  *handle = reinterpret_cast<void*>(uintptr_t(0xc0b1a5));
  return 0;
}
__attribute__((visibility("default"))) Status cublasLtDestroy(void*) { return ++fakeCublasLtCalls, 0; }
__attribute__((visibility("default"))) Status cublasLtMatmulDescCreate(void**, int32_t, int32_t) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatmulDescSetAttribute(void*, int32_t, const void*, size_t) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatmulDescDestroy(void*) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatrixLayoutCreate(void**, int32_t, uint64_t, uint64_t, int64_t) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatrixLayoutSetAttribute(void*, int32_t, const void*, size_t) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatrixLayoutDestroy(void*) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatmulPreferenceCreate(void**) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatmulPreferenceSetAttribute(void*, int32_t, const void*, size_t) { return 0; }
__attribute__((visibility("default"))) Status cublasLtMatmulPreferenceDestroy(void*) { return 0; }
#ifndef WEFT_FAKE_CUBLASLT_PARTIAL
// No algorithm for anything: CUBLAS_STATUS_NOT_SUPPORTED, as the real one answers a problem
// it cannot run.
__attribute__((visibility("default"))) Status cublasLtMatmulAlgoGetHeuristic(
    void*, void*, void*, void*, void*, void*, void*, int, void*, int* found) {
  ++fakeCublasLtCalls;
  *found = 0;
  return 15;
}
__attribute__((visibility("default"))) Status cublasLtMatmul(
    void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*,
    void*, void*, void*, const void*, void*, size_t, void*) {
  ++fakeCublasLtCalls;
  return 13; // CUBLAS_STATUS_EXECUTION_FAILED
}
__attribute__((visibility("default"))) const char* cublasLtGetStatusName(Status s) {
  return s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : s == 13 ? "CUBLAS_STATUS_EXECUTION_FAILED" : "";
}
#endif
}
