//===- Matmul.cpp - dtrain_rt_matmul_f32 on OpenBLAS ----------------------===//
//
// One row-major cblas_sgemm. The degenerate shapes BLAS leaves loosely
// defined are handled here: nothing to compute when M or N is 0, and with
// K == 0 the product is empty, so C = BETA * C (0 when BETA is 0, NaN in C
// included).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>

using namespace dtrain::rt;

void dtrain_rt_matmul_f32(const float *a, const float *b, float *c, int64_t m,
                          int64_t n, int64_t k, int32_t transpose_a,
                          int32_t transpose_b, float beta) {
  const char *kernel = "dtrain_rt_matmul_f32";
  checkKernelDim(kernel, "m", m, 0);
  checkKernelDim(kernel, "n", n, 0);
  checkKernelDim(kernel, "k", k, 0);
  if (m == 0 || n == 0)
    return;
  checkKernelPointer(kernel, "c", c);
  int64_t count = m * n;
  if (k == 0) {
    if (beta == 0.0f)
      std::memset(c, 0, size_t(count) * sizeof(float));
    else if (beta != 1.0f)
      std::transform(c, c + count, c, [beta](float v) { return beta * v; });
    return;
  }
  checkKernelPointer(kernel, "a", a);
  checkKernelPointer(kernel, "b", b);
  // Row-major leading dimensions: the stored row lengths.
  int lda = int(transpose_a ? m : k);
  int ldb = int(transpose_b ? k : n);
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              1.0f, a, lda, b, ldb, beta, c, int(n));
}
