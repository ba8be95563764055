// weft declares cuBLASLt's types and values itself (runtime/cuda/cublaslt_api.h) so that it
// builds without cuBLAS; this file, built only where cublasLt.h is installed, holds every one
// of them to the real header. A mismatch fails the build: this file has no test case.
#include <catch2/catch.hpp>

#include <cublasLt.h>

#include <cstddef>
#include <type_traits>

#include "runtime/cuda/cublaslt_api.h"

namespace lt = weft::runtime::cuda::lt;

static_assert(lt::kStatusSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(lt::kStatusNotSupported == CUBLAS_STATUS_NOT_SUPPORTED);
static_assert(lt::kR32F == CUDA_R_32F && lt::kR16F == CUDA_R_16F && lt::kR16BF == CUDA_R_16BF);
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F);
static_assert(lt::kCompute32FFastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32);
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T);
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA);
static_assert(lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE);
static_assert(lt::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER);
static_assert(lt::kDescBiasBatchStride == CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE);
static_assert(lt::kDescBiasDataType == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
static_assert(lt::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT);
static_assert(lt::kEpilogueBias == CUBLASLT_EPILOGUE_BIAS);
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
static_assert(lt::kLayoutStridedBatchOffset == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(lt::kPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);

// The enums weft passes as int32_t are int-sized in the C ABI, and the structs it declares lie
// as the header's.
static_assert(sizeof(cublasStatus_t) == sizeof(lt::Status));
static_assert(sizeof(cublasComputeType_t) == sizeof(int32_t));
static_assert(sizeof(cudaDataType_t) == sizeof(int32_t));
static_assert(sizeof(cublasLtMatmulDescAttributes_t) == sizeof(int32_t));
static_assert(sizeof(cublasLtMatrixLayoutAttribute_t) == sizeof(int32_t));
static_assert(sizeof(cublasLtMatmulPreferenceAttributes_t) == sizeof(int32_t));
static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(lt::MatmulAlgo));
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == sizeof(lt::HeuristicResult));
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) ==
              offsetof(lt::HeuristicResult, workspaceSize));
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, state) ==
              offsetof(lt::HeuristicResult, state));
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, wavesCount) ==
              offsetof(lt::HeuristicResult, wavesCount));

// Every entry point's type is the header's prototype with weft's stand-ins for its types:
// the same number of parameters, each of the same size, and a result of the same size.
template <class F, class G> struct SameShape;
template <class R1, class... A1, class R2, class... A2>
struct SameShape<R1 (*)(A1...), R2 (*)(A2...)> {
  static_assert(sizeof...(A1) == sizeof...(A2), "another number of parameters");
  static constexpr bool value = sizeof(R1) == sizeof(R2) && ((sizeof(A1) == sizeof(A2)) && ...);
};
#define WEFT_CHECK_PROTOTYPE(name, result, params)                                                 \
  static_assert(SameShape<decltype(lt::Api::name), decltype(&::name)>::value,                      \
                #name ": weft's prototype differs from cublasLt.h's");
WEFT_CUBLASLT_ENTRIES(WEFT_CHECK_PROTOTYPE)
#undef WEFT_CHECK_PROTOTYPE
static_assert(SameShape<decltype(lt::Api::cublasLtGetStatusName),
                        decltype(&::cublasLtGetStatusName)>::value);
// (No TEST_CASE: the build is the test.)
