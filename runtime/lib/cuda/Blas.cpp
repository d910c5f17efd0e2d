//===- Blas.cpp - dtrain_rt_cuda_matmul_f32 on cuBLAS ---------------------===//
//
// dtrain_rt_matmul_f32 on device-reachable memory: one SGEMM. cuBLAS is
// column-major, and a row-major matrix read column-major is its transpose,
// so the row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T: B first, the sizes swapped, the same transposes.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Kernels.h"
#include "cuda/HeavyOps.h"

#include <cublas_v2.h>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

void dtrain_rt_cuda_matmul_f32(const float *a, const float *b, float *c,
                               int64_t m, int64_t n, int64_t k,
                               int32_t transpose_a, int32_t transpose_b,
                               float beta) {
  const char *kernel = "dtrain_rt_cuda_matmul_f32";
  // The checks of the CPU kernel (prepareMatmul), without its host loops.
  checkKernelDim(kernel, "m", m, 0);
  checkKernelDim(kernel, "n", n, 0);
  checkKernelDim(kernel, "k", k, 0);
  if (m == 0 || n == 0)
    return;
  checkKernelPointer(kernel, "c", c);
  if (k > 0) {
    checkKernelPointer(kernel, "a", a);
    checkKernelPointer(kernel, "b", b);
  } else if (beta == 1.0f) {
    return; // C = C
  }

  KernelCall call(kernel);
  if (k == 0) {
    // No product: C = BETA C, and 0 for BETA == 0 (NaN in C included).
    if (beta == 0.0f)
      DTRAIN_HEAVY_CUDA(call, cudaMemsetAsync, c, 0,
                        size_t(m) * size_t(n) * sizeof(float), call.stream());
    else
      DTRAIN_HEAVY_BLAS(call, cublasSscal_64, call.blas(), m * n, &beta, c, 1);
    return;
  }
  // With BETA == 0, SGEMM does not read C (NaN in C ignored, as on the CPU).
  const float one = 1.0f;
  const cublasOperation_t opA = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // The leading dimensions are the row lengths as stored: A is M x K (K x M
  // transposed), B is K x N (N x K transposed), C is M x N.
  DTRAIN_HEAVY_BLAS(call, cublasSgemm_64, call.blas(), opB, opA, n, m, k, &one,
                    b, transpose_b ? k : n, a, transpose_a ? m : k, &beta, c,
                    n);
}
