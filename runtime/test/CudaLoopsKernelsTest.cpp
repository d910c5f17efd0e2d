//===- CudaLoopsKernelsTest.cpp - the CUDA heavy-op ABI on the CPU --------===//
//
// libdtrain_runtime_cuda_loops, which --cuda-loops trainers call for the
// heavy ops, on hand-computed cases of what dtrain_rt_cuda.h specifies for
// 16-bit tensors, and of the embedding gradient; and, with --invalid=CASE, one
// invalid call, which must abort with the CPU kernels' check naming the CUDA
// function (ctest runtime-cuda-loops-fail-*). Needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "InvalidCalls.h"

#include "dtrain_rt_cuda.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

using dtrain::rt::bf16ToF32;
using dtrain::rt::f32ToBF16;

namespace {

// The forward convolution's bias is added to the rounded convolution and
// the sum rounded again. x w = 1.5 * 1.0078125 = 1.51171875 lies halfway
// between the bf16 neighbours 1.5078125 and 1.515625 (steps of 2^-7) and
// rounds to the even one, 1.515625; adding -2^-8 gives another tie, which
// rounds to 1.515625 again. One rounding of x w + bias = 1.5078125 exactly
// would give 1.5078125.
TEST(CudaLoopsKernels, ConvolutionBiasAfterTheRoundedProduct) {
  const uint16_t x = f32ToBF16(1.5f), w = f32ToBF16(1.0078125f),
                 bias = f32ToBF16(-0.00390625f);
  uint16_t y = 0;
  dtrain_rt_cuda_conv2d_bf16(&x, &w, &bias, &y, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                             0, 0, 0, 0, 1, 1, 1);
  EXPECT_EQ(bf16ToF32(y), 1.515625f);
}

// C = A B + BETA C on bf16 tensors, exact here: B is the identity.
TEST(CudaLoopsKernels, MatrixProductWithBeta) {
  const float a[] = {1, 2, 3, 4}, b[] = {1, 0, 0, 1};
  uint16_t a16[4], b16[4], c16[4];
  for (int i = 0; i < 4; ++i) {
    a16[i] = f32ToBF16(a[i]);
    b16[i] = f32ToBF16(b[i]);
    c16[i] = f32ToBF16(1.0f);
  }
  dtrain_rt_cuda_matmul_bf16(a16, b16, c16, 2, 2, 2, 0, 0, 0.5f);
  const float want[] = {1.5f, 2.5f, 3.5f, 4.5f};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(bf16ToF32(c16[i]), want[i]) << "element " << i;
}

// Batch norm with a fused ReLU on bf16 data: the batch norm's results, the
// negative ones 0; its gradient masks the output gradient by Z > 0 first.
// One channel of 1, 2, 3, 4: mean 2.5, variance 1.25.
TEST(CudaLoopsKernels, BatchNormWithRelu) {
  const float x[] = {1, 2, 3, 4}, dz[] = {1, 2, 3, 4};
  uint16_t x16[4], dz16[4], y16[4], plain16[4], dx16[4], masked16[4];
  for (int i = 0; i < 4; ++i) {
    x16[i] = f32ToBF16(x[i]);
    dz16[i] = f32ToBF16(dz[i]);
  }
  const float scale = 1, bias = 0;
  float mean, var, dscale, dbias, maskedScale, maskedBias;
  dtrain_rt_cuda_batch_norm_train_bf16(x16, &scale, &bias, plain16, &mean, &var,
                                       1, 1, 4, 0.0f);
  dtrain_rt_cuda_batch_norm_train_relu_bf16(x16, &scale, &bias, y16, &mean,
                                            &var, 1, 1, 4, 0.0f);
  EXPECT_EQ(mean, 2.5f);
  EXPECT_EQ(var, 1.25f);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(bf16ToF32(y16[i]), i < 2 ? 0.0f : bf16ToF32(plain16[i]))
        << "element " << i;
  // With Z = Y, the gradient is the plain one for DZ with its first two
  // elements 0.
  const uint16_t zeroed[] = {f32ToBF16(0.0f), f32ToBF16(0.0f), dz16[2],
                             dz16[3]};
  dtrain_rt_cuda_batch_norm_backward_relu_bf16(x16, dz16, y16, &scale, &mean,
                                               &var, dx16, &dscale, &dbias, 1,
                                               1, 4, 0.0f);
  dtrain_rt_cuda_batch_norm_backward_bf16(x16, zeroed, &scale, &mean, &var,
                                          masked16, &maskedScale, &maskedBias,
                                          1, 1, 4, 0.0f);
  EXPECT_EQ(dbias, 7.0f);
  EXPECT_EQ(dbias, maskedBias);
  EXPECT_EQ(dscale, maskedScale);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(dx16[i], masked16[i]) << "element " << i;
}

// Batch norm with a residual added and a ReLU on bf16 data: the ops it
// replaces, each rounded to bf16 (the batch norm's result, the sum), and
// the ReLU. One channel of 1, 2, 3, 4 (normalized about -1.34, -0.45,
// 0.45, 1.34) plus 1: 0 where the sum is negative.
TEST(CudaLoopsKernels, BatchNormWithResidualRelu) {
  const float x[] = {1, 2, 3, 4};
  uint16_t x16[4], r16[4], y16[4], plain16[4];
  for (int i = 0; i < 4; ++i) {
    x16[i] = f32ToBF16(x[i]);
    r16[i] = f32ToBF16(1.0f);
  }
  const float scale = 1, bias = 0;
  float mean, var;
  dtrain_rt_cuda_batch_norm_train_bf16(x16, &scale, &bias, plain16, &mean, &var,
                                       1, 1, 4, 0.0f);
  dtrain_rt_cuda_batch_norm_train_add_relu_bf16(x16, r16, &scale, &bias, y16,
                                                &mean, &var, 1, 1, 4, 0.0f);
  for (int i = 0; i < 4; ++i) {
    const float sum = bf16ToF32(f32ToBF16(bf16ToF32(plain16[i]) + 1.0f));
    EXPECT_EQ(bf16ToF32(y16[i]), sum > 0.0f ? sum : 0.0f) << "element " << i;
  }
  EXPECT_EQ(bf16ToF32(y16[0]), 0.0f); // -1.34 + 1
  EXPECT_GT(bf16ToF32(y16[1]), 0.0f); // -0.45 + 1
}

// The embedding gradient is the CPU's: rows 3, width 2; row 2 gets GRAD's
// rows 0, 2 and 3 (index -1 wraps to 2), row 0 its row 1, row 1 nothing.
TEST(CudaLoopsKernels, EmbeddingGradient) {
  const int64_t indices[] = {2, 0, 2, -1};
  const float grad[] = {1, 2, 10, 20, 100, 200, 1000, 2000};
  float out[6] = {-1, -1, -1, -1, -1, -1};
  dtrain_rt_cuda_embedding_grad_f32(grad, indices, out, 4, 3, 2);
  const float want[] = {10, 20, 0, 0, 1101, 2202};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[i], want[i]) << "element " << i;
}

/// Makes the invalid call NAME, which must abort; false where NAME is
/// unknown.
bool makeInvalidCall(const std::string &name) {
  uint16_t data[64] = {};
  float stats[8] = {};
  if (name == "conv-output") // a 3x3 kernel on 8x8 gives 6x6, not 6x7
    dtrain_rt_cuda_conv2d_bf16(data, data, nullptr, data, 1, 1, 8, 8, 1, 3, 3,
                               6, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  else if (name == "batch-norm-add-relu-null-residual")
    dtrain_rt_cuda_batch_norm_train_add_relu_bf16(
        data, nullptr, stats, stats, data, stats, stats, 1, 2, 4, 1e-5f);
  else if (name == "batch-norm-relu-null-z")
    dtrain_rt_cuda_batch_norm_backward_relu_bf16(data, data, nullptr, stats,
                                                 stats, stats, data, stats,
                                                 stats, 1, 2, 4, 1e-5f);
  else if (name == "batch-norm-null")
    dtrain_rt_cuda_batch_norm_train_f16(nullptr, stats, stats, data, stats,
                                        stats, 1, 2, 4, 1e-5f);
  else
    return false;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (std::optional<int> status =
          dtrain::rt::test::runInvalidCall(argc, argv, makeInvalidCall))
    return *status;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
