#pragma once
// Which of a plan's GEMM steps cuBLASLt can run, and the cuBLASLt call that runs one: pure
// functions of the plan's LibraryCall (its GemmPlan and GemmEpilogue) and a binding, so every
// decision is tested without a GPU or the library.
//
// cuBLASLt is column-major, weft's result row-major. A row-major matrix X (r × c, element
// [i][j] at i * ld + j) is, read column-major, the matrix Xᵀ (c × r) with the same ld; a
// column-major one is X itself. So a row-major C = A·B is computed as the column-major
// Cᵀ = Bᵀ·Aᵀ: cuBLASLt's A is weft's B and its B weft's A (`swapped`), and each operand is
// transposed (CUBLAS_OP_T) exactly when the way it lies is not the way the product needs it.
#include <cstdint>
#include <optional>
#include <string>

#include "fusion/fusion_plan.h"
#include "runtime/cuda/cublaslt_api.h"

namespace weft::runtime::cuda::lt {

/// One matrix as cuBLASLt's column-major layout describes it.
struct Layout {
  int32_t type = kR32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batchCount = 1;
  int64_t batchStride = 0; // elements; 0 with batchCount > 1: every batch reads one matrix
  bool operator==(const Layout&) const = default;
};

/// A GEMM step as one cublasLtMatmul: D = op(A)·op(B) (+ bias along D's rows), alpha 1, beta
/// 0, C and D the same matrix.
struct Matmul {
  int32_t computeType = kCompute32F;
  int32_t scaleType = kR32F;
  int32_t transa = kOpN, transb = kOpN;
  uint64_t m = 0, n = 0, k = 0; // D is m × n, the product runs over k
  Layout a, b, d;
  uint32_t epilogue = kEpilogueDefault;
  int32_t biasType = kR32F; // with kEpilogueBias: a vector of m elements, one for every batch
  /// The plan's values behind the operands: cuBLASLt's A, B and D, and the bias (-1: none).
  ir::NodeId aValue = -1, bValue = -1, dValue = -1, biasValue = -1;
  bool swapped = false; // D is weft's result transposed: A is weft's B, B weft's A
  /// "Cᵀ = Bᵀ·Aᵀ, transa N transb T, m 768 n 128 k 768, batch 1, f16 → f16, compute 32F, bias"
  std::string str() const;
};

/// Why `call` can never run on cuBLASLt whatever the binding ("" when it may): not a dot, a
/// dtype other than f32/f16/bf16, an operand computed on load (a prologue with elementwise
/// ops), an epilogue other than none or a bias add along N.
std::string whyNotEligible(const fusion::FusionPlan& plan, const fusion::LibraryCall& call);

/// The call for `call` under `binding`, or why there is none (whyNotEligible's reasons, and
/// those of the binding: a dim of 0, a size over int32, a leading dimension smaller than the
/// rows it strides, as a broadcast along rows gives). `tf32`: f32 products may round their
/// inputs to tf32 (CUBLAS_COMPUTE_32F_FAST_TF32); otherwise exact f32 (CUBLAS_COMPUTE_32F).
struct Described {
  std::optional<Matmul> matmul;
  std::string whyNot;
};
Described describe(const fusion::FusionPlan& plan, const fusion::LibraryCall& call,
                   const ir::Binding& binding, bool tf32);

/// For `weft plan --explain`: a paragraph with one line per GEMM step of `plan`, whether cuBLASLt
/// may run it on the cuda device and as which call, or why not ("" without GEMM steps). A
/// step's f32 call is described with TF32 when its GemmPlan took tf32.
std::string explainProviders(const fusion::FusionPlan& plan);

} // namespace weft::runtime::cuda::lt
