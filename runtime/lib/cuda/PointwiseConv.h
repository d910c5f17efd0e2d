//===- PointwiseConv.h - 1x1 convolutions as batched products ---*- C++ -*-===//
//
// A convolution with a 1x1 kernel, stride 1, no padding and one group is a
// matrix product per image: Y[n] (OC x P) = W (OC x C) X[n] (C x P), P the
// pixels of a plane, and its data gradient DX[n] = W^T DY[n]. In NCHW both
// are cuBLAS strided batched products over the N images, which read and
// write the planes as they lie, where cuDNN's tensor-core convolutions
// transpose NCHW tensors to NHWC and back (DTRAIN_CUDA_CONV_GEMM=1 runs
// them so: Dnn.cpp). The weight gradient DW = sum over n of DY[n] X[n]^T
// sums over the images as well, which one strided batched product cannot:
// it makes each image's product, in f32, and a kernel adds them up. Those
// N x OC x C partial products are worth their traffic where they are no
// larger than the images they spare a transpose of (OC <= P: resnet50's
// first two stages); elsewhere the weight gradient stays cuDNN's.
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

/// The weight gradient's partial products DW[n] = DY[n] X[n]^T (OC x C):
/// the column-major DW[n]^T = X[n] DY[n]^T, op(A) = X[n] the transpose of
/// its column-major P x C view (A = X, columns P apart), B = DY[n]'s P x OC
/// view (columns P apart), C = the partials (f32, columns C apart, OC x C
/// elements from one image's to the next).
inline StridedGemm pointwiseWeightPartials(const ConvGeometry &g) {
  const int64_t p = g.oh * g.ow;
  return {true,    false, g.c,      g.oc, p,          p,
          g.c * p, p,     g.oc * p, g.c,  g.oc * g.c, g.n};
}

/// Whether G's weight gradient runs as partial products and their sum
/// (pointwiseWeightPartials): a pointwise convolution whose partials are no
/// larger than its images.
inline bool usesWeightPartials(const ConvGeometry &g) {
  return isPointwiseConv(g) && g.oc <= g.oh * g.ow;
}

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_POINTWISECONV_H
