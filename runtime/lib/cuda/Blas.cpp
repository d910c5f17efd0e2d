//===- Blas.cpp - dtrain_rt_cuda_matmul_* on cuBLAS -----------------------===//
//
// dtrain_rt_matmul_f32 and dtrain_rt_batch_matmul_f32 on device-reachable
// memory, for f32, bf16 and f16 matrices: one GEMM (strided batched for a
// batch), summed in f32. cuBLAS is column-major, and a
// row-major matrix read column-major is its transpose, so the row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T:
// B first, the sizes swapped, the same transposes. And the strided batched
// products of the pointwise convolutions (PointwiseConv.h), which
// PointwiseConv.h describes in cuBLAS's terms.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Kernels.h"
#include "cuda/HeavyOps.h"
#include "cuda/PointwiseConv.h"

#include <cublas_v2.h>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

/// cuBLAS's name of TYPE, one of the heavy ops' element types.
cudaDataType_t blasType(int32_t type) {
  switch (type) {
  case DTRAIN_RT_BF16:
    return CUDA_R_16BF;
  case DTRAIN_RT_F16:
    return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

/// The compute type of products of TYPE: f32 sums, and in the default math
/// mode f32 products (no TF32, unless tf32Allowed()); 16-bit products are
/// exact there, on tensor cores.
cublasComputeType_t computeType(int32_t type) {
  return type == DTRAIN_RT_F32 && tf32Allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                : CUBLAS_COMPUTE_32F;
}

/// C[i] = op(A[i]) op(B[i]) + BETA C[i] for BATCH products of M x N, K
/// matrices of element type TYPE stored one after another, as
/// dtrain_rt_batch_matmul_f32 computes them (dtrain_rt_matmul_f32 with
/// BATCH 1).
void multiply(const char *kernel, int32_t type, const void *a, const void *b,
              void *c, int64_t batch, int64_t m, int64_t n, int64_t k,
              int32_t transposeA, int32_t transposeB, float beta) {
  // The checks of the CPU kernel (prepareMatmul), without its host loops.
  checkKernelDim(kernel, "batch", batch, 0);
  checkKernelDim(kernel, "m", m, 0);
  checkKernelDim(kernel, "n", n, 0);
  checkKernelDim(kernel, "k", k, 0);
  if (batch == 0 || m == 0 || n == 0)
    return;
  checkKernelPointer(kernel, "c", c);
  if (k > 0) {
    checkKernelPointer(kernel, "a", a);
    checkKernelPointer(kernel, "b", b);
  } else if (beta == 1.0f) {
    return; // C = C
  }

  KernelCall call(kernel);
  const cudaDataType_t data = blasType(type);
  if (k == 0) {
    // No product: C = BETA C, and 0 for BETA == 0 (NaN in C included).
    const int64_t count = batch * m * n;
    if (beta == 0.0f)
      DTRAIN_HEAVY_CUDA(call, cudaMemsetAsync, c, 0,
                        size_t(count) * size_t(dtypeSize(type)), call.stream());
    else
      DTRAIN_HEAVY_BLAS(call, cublasScalEx_64, call.blas(), count, &beta,
                        CUDA_R_32F, c, data, 1, CUDA_R_32F);
    return;
  }
  // With BETA == 0, the product does not read C (NaN in C ignored, as on
  // the CPU).
  const float one = 1.0f;
  const cublasOperation_t opA = transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // The leading dimensions are the row lengths as stored: A is M x K (K x M
  // transposed), B is K x N (N x K transposed), C is M x N.
  if (batch == 1) {
    DTRAIN_HEAVY_BLAS(call, cublasGemmEx_64, call.blas(), opB, opA, n, m, k,
                      &one, b, data, transposeB ? k : n, a, data,
                      transposeA ? m : k, &beta, c, data, n, computeType(type),
                      CUBLAS_GEMM_DEFAULT);
    return;
  }
  DTRAIN_HEAVY_BLAS(call, cublasGemmStridedBatchedEx_64, call.blas(), opB, opA,
                    n, m, k, &one, b, data, transposeB ? k : n, k * n, a, data,
                    transposeA ? m : k, m * k, &beta, c, data, n, m * n, batch,
                    computeType(type), CUBLAS_GEMM_DEFAULT);
}

} // namespace

void dtrain::rt::gpu::launchStridedGemm(KernelCall &call, int32_t type,
                                        int32_t outputType,
                                        const StridedGemm &g, const void *a,
                                        const void *b, void *c) {
  const cudaDataType_t data = blasType(type);
  const float one = 1.0f, zero = 0.0f;
  DTRAIN_HEAVY_BLAS(call, cublasGemmStridedBatchedEx_64, call.blas(),
                    g.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                    g.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k,
                    &one, a, data, g.lda, g.strideA, b, data, g.ldb, g.strideB,
                    &zero, c, blasType(outputType), g.ldc, g.strideC, g.batch,
                    computeType(type), CUBLAS_GEMM_DEFAULT);
}

// The matrix products for matrices of element type T (DTRAIN_RT_<TYPE>),
// named with SUFFIX.
#define DTRAIN_CUDA_MATMUL_KERNEL(SUFFIX, TYPE, T)                             \
  void dtrain_rt_cuda_matmul_##SUFFIX(                                         \
      const T *a, const T *b, T *c, int64_t m, int64_t n, int64_t k,           \
      int32_t transpose_a, int32_t transpose_b, float beta) {                  \
    multiply("dtrain_rt_cuda_matmul_" #SUFFIX, DTRAIN_RT_##TYPE, a, b, c, 1,   \
             m, n, k, transpose_a, transpose_b, beta);                         \
  }                                                                            \
  void dtrain_rt_cuda_batch_matmul_##SUFFIX(                                   \
      const T *a, const T *b, T *c, int64_t batch, int64_t m, int64_t n,       \
      int64_t k, int32_t transpose_a, int32_t transpose_b, float beta) {       \
    multiply("dtrain_rt_cuda_batch_matmul_" #SUFFIX, DTRAIN_RT_##TYPE, a, b,   \
             c, batch, m, n, k, transpose_a, transpose_b, beta);               \
  }

DTRAIN_CUDA_MATMUL_KERNEL(f32, F32, float)
DTRAIN_CUDA_MATMUL_KERNEL(bf16, BF16, uint16_t)
DTRAIN_CUDA_MATMUL_KERNEL(f16, F16, uint16_t)

#undef DTRAIN_CUDA_MATMUL_KERNEL
