//===- PointwiseConv.h - 1x1 convolutions as batched products ---*- C++ -*-===//
//
// A convolution with a 1x1 kernel, stride 1, no padding and one group is a
// matrix product per image: Y[n] (OC x P) = W (OC x C) X[n] (C x P), P the
// pixels of a plane, and its data gradient DX[n] = W^T DY[n]. In NCHW both
// are cuBLAS strided batched products over the N images, which read and
// write the planes as they lie, where cuDNN's tensor-core convolutions
// transpose NCHW tensors to NHWC and back (DTRAIN_CUDA_CONV_GEMM=1 runs
// them so: Dnn.cpp). The weight gradient sums over the images as well,
// which one strided batched product cannot, and stays cuDNN's.
//
// The products are described here in cuBLAS's column-major terms, without
// CUDA, so that a CPU test (test/PointwiseConvTest.cpp) runs the
// description against the CPU's convolution kernels.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_POINTWISECONV_H
#define DTRAIN_RUNTIME_CUDA_POINTWISECONV_H

#include "Kernels.h"

#include <cstdint>

namespace dtrain::rt::gpu {

/// cublasGemmStridedBatchedEx's C[b] = op(A[b]) op(B[b]) for b < BATCH:
/// column-major M x N, K; X[b] starts STRIDEX elements after X[b - 1]
/// (0: one matrix for every b), and LDX apart are its columns.
struct StridedGemm {
  bool transposeA, transposeB;
  int64_t m, n, k;
  int64_t lda, strideA, ldb, strideB, ldc, strideC;
  int64_t batch;
};

/// Whether the checked geometry G is a pointwise convolution (see above).
inline bool isPointwiseConv(const ConvGeometry &g) {
  auto plain = [](const WindowDim &d) {
    return d.kernel == 1 && d.stride == 1 && d.padBegin == 0 && d.padEnd == 0;
  };
  return g.groups == 1 && plain(g.h) && plain(g.w);
}

// A row-major R x S matrix read column-major is its S x R transpose, so
// the row-major Y[n] = W X[n] is the column-major Y[n]^T = X[n]^T W^T:
// A = X[n] (P x C, columns P apart), B = W (C x OC, columns C apart).

/// Y = the convolution of X by W: A = X, B = W, C = Y.
inline StridedGemm pointwiseForward(const ConvGeometry &g) {
  const int64_t p = g.oh * g.ow;
  return {false, false, p, g.oc, g.c, p, g.c * p, g.c, 0, p, g.oc * p, g.n};
}

/// DX = the gradient for DY of the convolution by W: the row-major DX[n] =
/// W^T DY[n] is the column-major DX[n]^T = DY[n]^T W: A = DY (P x OC), B =
/// W read as its OC x C transpose (columns C apart), C = DX.
inline StridedGemm pointwiseBackwardData(const ConvGeometry &g) {
  const int64_t p = g.oh * g.ow;
  return {false, true, p, g.c, g.oc, p, g.oc * p, g.c, 0, p, g.c * p, g.n};
}

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_POINTWISECONV_H
