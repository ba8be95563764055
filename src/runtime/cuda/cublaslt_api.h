#pragma once
// cuBLASLt as weft uses it: the handful of entry points a GEMM needs, resolved at run time
// from the library (dlopen, as libcuda is), so weft never links cuBLAS and builds where its
// headers are absent. The types and enum values below are declared here with the values
// cuBLAS documents (cublasLt.h, cublas_api.h, library_types.h); test/cuda/cublaslt_header_test
// holds them to the real header wherever one is installed. Nothing here needs cuda.h.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime::cuda::lt {

// --- types: handles are opaque pointers; enums are int32_t-sized in the C ABI ---
using Status = int32_t; // cublasStatus_t
using Handle = void*;   // cublasLtHandle_t
using MatmulDesc = void*;
using MatrixLayout = void*;
using MatmulPreference = void*;
using Stream = void*; // cudaStream_t, the same object as the driver's CUstream

inline constexpr Status kStatusSuccess = 0;       // CUBLAS_STATUS_SUCCESS
inline constexpr Status kStatusNotSupported = 15; // CUBLAS_STATUS_NOT_SUPPORTED

// cudaDataType_t
inline constexpr int32_t kR32F = 0;
inline constexpr int32_t kR16F = 2;
inline constexpr int32_t kR16BF = 14;
// cublasComputeType_t
inline constexpr int32_t kCompute32F = 68;
inline constexpr int32_t kCompute32FFastTf32 = 77;
// cublasOperation_t
inline constexpr int32_t kOpN = 0;
inline constexpr int32_t kOpT = 1;
// cublasLtMatmulDescAttributes_t
inline constexpr int32_t kDescTransA = 3;
inline constexpr int32_t kDescTransB = 4;
inline constexpr int32_t kDescEpilogue = 7;
inline constexpr int32_t kDescBiasPointer = 8;
inline constexpr int32_t kDescBiasBatchStride = 10;
inline constexpr int32_t kDescBiasDataType = 26;
// cublasLtEpilogue_t
inline constexpr uint32_t kEpilogueDefault = 1;
inline constexpr uint32_t kEpilogueBias = 4;
// cublasLtMatrixLayoutAttribute_t
inline constexpr int32_t kLayoutBatchCount = 5;
inline constexpr int32_t kLayoutStridedBatchOffset = 6;
// cublasLtMatmulPreferenceAttributes_t
inline constexpr int32_t kPrefMaxWorkspaceBytes = 1;

/// cublasLtMatmulAlgo_t
struct MatmulAlgo {
  uint64_t data[8];
};
/// cublasLtMatmulHeuristicResult_t
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

// X(name, return type, parameters): every entry point weft calls.
#define WEFT_CUBLASLT_ENTRIES(X)                                                                   \
  X(cublasLtCreate, Status, (Handle*))                                                             \
  X(cublasLtDestroy, Status, (Handle))                                                             \
  X(cublasLtMatmulDescCreate, Status, (MatmulDesc*, int32_t computeType, int32_t scaleType))       \
  X(cublasLtMatmulDescSetAttribute, Status, (MatmulDesc, int32_t, const void*, size_t))            \
  X(cublasLtMatmulDescDestroy, Status, (MatmulDesc))                                               \
  X(cublasLtMatrixLayoutCreate, Status, (MatrixLayout*, int32_t type, uint64_t, uint64_t, int64_t)) \
  X(cublasLtMatrixLayoutSetAttribute, Status, (MatrixLayout, int32_t, const void*, size_t))        \
  X(cublasLtMatrixLayoutDestroy, Status, (MatrixLayout))                                           \
  X(cublasLtMatmulPreferenceCreate, Status, (MatmulPreference*))                                   \
  X(cublasLtMatmulPreferenceSetAttribute, Status, (MatmulPreference, int32_t, const void*, size_t)) \
  X(cublasLtMatmulPreferenceDestroy, Status, (MatmulPreference))                                   \
  X(cublasLtMatmulAlgoGetHeuristic, Status,                                                        \
    (Handle, MatmulDesc, MatrixLayout, MatrixLayout, MatrixLayout, MatrixLayout,                   \
     MatmulPreference, int, HeuristicResult*, int*))                                               \
  X(cublasLtMatmul, Status,                                                                        \
    (Handle, MatmulDesc, const void* alpha, const void* a, MatrixLayout, const void* b,            \
     MatrixLayout, const void* beta, const void* c, MatrixLayout, void* d, MatrixLayout,           \
     const MatmulAlgo*, void* workspace, size_t workspaceBytes, Stream))

/// One function pointer per entry point. A default-constructed table is all null; tests fill
/// one with fakes.
struct Api {
#define WEFT_CUBLASLT_MEMBER(name, result, params) result(*name) params = nullptr;
  WEFT_CUBLASLT_ENTRIES(WEFT_CUBLASLT_MEMBER)
#undef WEFT_CUBLASLT_MEMBER
  // optional: names a status ("CUBLAS_STATUS_NOT_SUPPORTED"); absent from some versions
  const char* (*cublasLtGetStatusName)(Status) = nullptr;
  std::string library; // where the entry points came from
};

/// The libraries tried in order when no path is given: CUDA 13's, CUDA 12's, then the
/// unversioned development link.
std::vector<std::string> defaultLibraries();

/// What loading gave: the table, or why there is none ("" when there is one).
struct Loaded {
  std::shared_ptr<const Api> api;
  std::string why;
  explicit operator bool() const { return api != nullptr; }
};

/// dlopens the first of `libraries` that loads and resolves every entry point; never throws.
/// Without one: `why` says, in one line, what each candidate lacked ("libcublasLt.so.13:
/// cannot open shared object file ...; libfoo.so: no cublasLtMatmul"). A library is never
/// unloaded; loading the same list again returns the same answer without a new dlopen.
Loaded load(const std::vector<std::string>& libraries);
/// The default list, or the one path WEFT_CUBLASLT_LIBRARY names; "off" there disables it.
Loaded load();

/// "CUBLAS_STATUS_NOT_SUPPORTED" (the library's own name where it has one), else
/// "cublasStatus_t 15".
std::string describeStatus(const Api& api, Status status);
/// Throws DeviceError "<call> failed: <describeStatus>" unless `status` is success.
void check(const Api& api, Status status, const char* call);

} // namespace weft::runtime::cuda::lt
