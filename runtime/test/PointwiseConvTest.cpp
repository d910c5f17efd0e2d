//===- PointwiseConvTest.cpp - 1x1 convolutions as batched products -------===//
//
// The cuBLAS products that the CUDA runtime runs for pointwise
// convolutions with DTRAIN_CUDA_CONV_GEMM=1 (lib/cuda/PointwiseConv.h),
// run on the CPU as cublasGemmStridedBatchedEx defines them (column-major,
// op(A) op(B) per batch), against the CPU's convolution kernels; and which
// geometries are pointwise. CudaDnnTest.cpp runs the products on cuBLAS.
//
//===----------------------------------------------------------------------===//

#include "cuda/PointwiseConv.h"
#include "KernelCases.h"
#include "MatchesCpu.h"
#include "dtrain_rt.h"

#include <gtest/gtest.h>

#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;
using namespace dtrain::rt::test;

namespace {

/// C[b] = op(A[b]) op(B[b]), column-major, as cuBLAS computes it (sums in
/// double).
void stridedGemm(const StridedGemm &g, const float *a, const float *b,
                 float *c) {
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const float *ab = a + batch * g.strideA, *bb = b + batch * g.strideB;
    float *cb = c + batch * g.strideC;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          const float opA =
              g.transposeA ? ab[l + i * g.lda] : ab[i + l * g.lda];
          const float opB =
              g.transposeB ? bb[j + l * g.ldb] : bb[l + j * g.ldb];
          sum += double(opA) * double(opB);
        }
        cb[i + j * g.ldc] = float(sum);
      }
  }
}

struct PointwiseCase {
  int64_t n, c, oc, h, w;
};

const PointwiseCase pointwiseCases[] = {
    {2, 3, 5, 4, 6},   // C < OC
    {3, 8, 2, 5, 5},   // C > OC
    {1, 16, 16, 1, 1}, // one pixel
    {4, 6, 10, 7, 7},
};

/// The geometry of a 1x1 convolution (stride 1, no padding).
ConvGeometry pointwiseGeometry(const PointwiseCase &k) {
  return convGeometry(ConvKey{k.n, k.c, k.h, k.w, k.oc, 1, 1, k.h, k.w, 1, 1, 0,
                              0, 0, 0, 1, 1, 1, 0});
}

TEST(PointwiseConv, ForwardMatchesCpu) {
  uint32_t seed = 300;
  for (const PointwiseCase &k : pointwiseCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.h << "x"
                                    << k.w << " to " << k.oc);
    const std::vector<float> x = randomVector(size_t(k.n * k.c * k.h * k.w),
                                              seed += 3),
                             w = randomVector(size_t(k.oc * k.c), seed + 1);
    std::vector<float> cpu(size_t(k.n * k.oc * k.h * k.w)), gemm(cpu.size());
    dtrain_rt_conv2d_f32(x.data(), w.data(), nullptr, cpu.data(), k.n, k.c, k.h,
                         k.w, k.oc, 1, 1, k.h, k.w, 1, 1, 0, 0, 0, 0, 1, 1, 1);
    const ConvGeometry g = pointwiseGeometry(k);
    ASSERT_TRUE(isPointwiseConv(g));
    const StridedGemm product = pointwiseForward(g);
    // A = X, B = W, C = Y.
    stridedGemm(product, x.data(), w.data(), gemm.data());
    EXPECT_TRUE(matchesCpu(gemm, cpu));
  }
}

TEST(PointwiseConv, BackwardDataMatchesCpu) {
  uint32_t seed = 400;
  for (const PointwiseCase &k : pointwiseCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.h << "x"
                                    << k.w << " to " << k.oc);
    const std::vector<float> dy = randomVector(size_t(k.n * k.oc * k.h * k.w),
                                               seed += 3),
                             w = randomVector(size_t(k.oc * k.c), seed + 1);
    std::vector<float> cpu(size_t(k.n * k.c * k.h * k.w)), gemm(cpu.size());
    dtrain_rt_conv2d_backward_data_f32(dy.data(), w.data(), cpu.data(), k.n,
                                       k.c, k.h, k.w, k.oc, 1, 1, k.h, k.w, 1,
                                       1, 0, 0, 0, 0, 1, 1, 1);
    const StridedGemm product = pointwiseBackwardData(pointwiseGeometry(k));
    // A = DY, B = W, C = DX.
    stridedGemm(product, dy.data(), w.data(), gemm.data());
    EXPECT_TRUE(matchesCpu(gemm, cpu));
  }
}

TEST(PointwiseConv, WeightGradientMatchesCpu) {
  uint32_t seed = 500;
  for (const PointwiseCase &k : pointwiseCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.h << "x"
                                    << k.w << " to " << k.oc);
    const std::vector<float> x = randomVector(size_t(k.n * k.c * k.h * k.w),
                                              seed += 3),
                             dy = randomVector(size_t(k.n * k.oc * k.h * k.w),
                                               seed + 1);
    std::vector<float> cpu(size_t(k.oc * k.c));
    dtrain_rt_conv2d_backward_weights_f32(
        x.data(), dy.data(), cpu.data(), nullptr, k.n, k.c, k.h, k.w, k.oc, 1,
        1, k.h, k.w, 1, 1, 0, 0, 0, 0, 1, 1, 1);
    const StridedGemm product = pointwiseWeightPartials(pointwiseGeometry(k));
    // A = X, B = DY, C = the partials, which are then added up.
    std::vector<float> partials(size_t(k.n * k.oc * k.c));
    stridedGemm(product, x.data(), dy.data(), partials.data());
    std::vector<float> gemm(cpu.size(), 0.0f);
    for (size_t i = 0; i < partials.size(); ++i)
      gemm[i % gemm.size()] += partials[i];
    EXPECT_TRUE(matchesCpu(gemm, cpu));
  }
}

// Only a 1x1 kernel of stride 1, without padding, in one group.
TEST(PointwiseConv, Geometries) {
  auto geometry = [](int64_t kh, int64_t stride, int64_t pad, int64_t groups,
                     int64_t dilation) {
    const int64_t out = (8 + 2 * pad - dilation * (kh - 1) - 1) / stride + 1;
    return convGeometry(ConvKey{2, 4, 8, 8, 4, kh, kh, out, out, stride, stride,
                                pad, pad, pad, pad, dilation, dilation, groups,
                                0});
  };
  EXPECT_TRUE(isPointwiseConv(geometry(1, 1, 0, 1, 1)));
  EXPECT_TRUE(isPointwiseConv(geometry(1, 1, 0, 1, 2))); // dilation: no taps
  EXPECT_FALSE(isPointwiseConv(geometry(3, 1, 1, 1, 1)));
  EXPECT_FALSE(isPointwiseConv(geometry(1, 2, 0, 1, 1)));
  EXPECT_FALSE(isPointwiseConv(geometry(1, 1, 1, 1, 1)));
  EXPECT_FALSE(isPointwiseConv(geometry(1, 1, 0, 2, 1)));
  // The weight gradient's partials where they are no larger than the
  // images: OC <= the pixels of a plane.
  const ConvGeometry stage1 = pointwiseGeometry({32, 64, 256, 56, 56});
  const ConvGeometry stage3 = pointwiseGeometry({32, 256, 1024, 14, 14});
  EXPECT_TRUE(usesWeightPartials(stage1));
  EXPECT_FALSE(usesWeightPartials(stage3));
  EXPECT_FALSE(usesWeightPartials(geometry(3, 1, 1, 1, 1)));
}

} // namespace
