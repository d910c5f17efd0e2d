//===- CudaDnnTest.cpp - the GPU heavy-op kernels against the CPU ones ----===//
//
// Every heavy-op kernel of dtrain_rt_cuda.h (cuBLAS, cuDNN and our pooling)
// against its CPU kernel in libdtrain_runtime, on random data, over the
// geometries of the CPU kernels' own test (KernelCases.h: transposes and
// BETA 0, 1 and 0.5; strides 1 and 2, asymmetric padding, dilation 2,
// 2 groups and depthwise, with and without bias; max and average pooling
// with and without the padding, ceil mode, all-padding windows; batch norm
// of rank 2 and 4) and larger ones, where cuDNN picks other algorithms;
// and the embedding gradient, with repeated, wrapped and clamped indices.
// Each result must match the CPU's to 1e-4 relative to the element and the
// tensor's RMS (sums run in another order); the outputs start as NaN, so
// that an element a kernel does not write fails. Where the arithmetic is
// the same (max pooling's choice among tied maxima, pooling gradients,
// products without a K dimension) the results must be equal. The bf16 and
// f16 matrix products, convolutions, pooling and batch norm are compared
// with the f32 CPU kernels on the same inputs, rounded to the 16-bit type,
// to twice its unit roundoff (max pooling's outputs exactly).
//
//   dtrain-rt-cuda-dnn-test [gtest flags]     on a device; without one it
//                                             prints one line and exits 77
//   dtrain-rt-cuda-dnn-test --without-device  what a machine without one
//                                             does: the first call prints
//                                             why and exits (77 with one)
//   dtrain-rt-cuda-dnn-test --invalid=CASE    one invalid call, which must
//                                             abort (ctest checks stderr);
//                                             checked before any device
//                                             work, so it runs anywhere
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "Float16.h"
#include "InvalidCalls.h"
#include "KernelCases.h"
#include "MatchesCpu.h"
#include "dtrain_rt.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace dtrain::rt::test;

namespace {

using Buffer = DeviceBuffer<float>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// A device buffer of N floats, all NaN.
struct Output : Buffer {
  explicit Output(size_t n) : Buffer(n) { fill(0xff); }
};

//===--- Matmul -----------------------------------------------------------===//

const MatmulCase gpuMatmulCases[] = {
    {300, 257, 513}, {1024, 96, 64}, {33, 1000, 2000}};

TEST(CudaMatmul, MatchesCpu) {
  uint32_t seed = 1;
  std::vector<MatmulCase> cases(std::begin(matmulCases), std::end(matmulCases));
  cases.insert(cases.end(), std::begin(gpuMatmulCases),
               std::end(gpuMatmulCases));
  for (const MatmulCase &mc : cases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          SCOPED_TRACE(testing::Message()
                       << "m=" << mc.m << " n=" << mc.n << " k=" << mc.k
                       << " ta=" << ta << " tb=" << tb << " beta=" << beta);
          const auto a = randomVector(size_t(mc.m * mc.k), seed++);
          const auto b = randomVector(size_t(mc.k * mc.n), seed++);
          auto c = randomVector(size_t(mc.m * mc.n), seed++);
          if (beta == 0) // must be ignored, NaN included
            std::fill(c.begin(), c.end(), kNaN);
          std::vector<float> cpu = c;
          dtrain_rt_matmul_f32(a.data(), b.data(), cpu.data(), mc.m, mc.n, mc.k,
                               ta, tb, beta);
          Buffer gpuA(a), gpuB(b), gpuC(c);
          dtrain_rt_cuda_matmul_f32(gpuA.get(), gpuB.get(), gpuC.get(), mc.m,
                                    mc.n, mc.k, ta, tb, beta);
          if (mc.k == 0) // BETA C, as on the CPU: one product each
            EXPECT_EQ(gpuC.read(), cpu);
          else
            EXPECT_TRUE(matchesCpu(gpuC.read(), cpu));
        }
}

/// Batches of attention-like products: (batch, m x n, k).
const struct BatchMatmulCase {
  int64_t batch;
  MatmulCase shape;
} batchMatmulCases[] = {
    {3, {7, 5, 3}}, {64, {65, 65, 16}}, {48, {197, 64, 197}}};

/// Calls CHECK(a, b, c, batch, m, n, k, ta, tb, beta) with random operands
/// (C all NaN for BETA 0, which must ignore it) for every batched case,
/// transpose and BETA 0 and 1, traced, seeded from SEED.
template <typename Check> void forEachBatchMatmul(uint32_t seed, Check check) {
  for (const BatchMatmulCase &bc : batchMatmulCases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 1.0f}) {
          const MatmulCase &mc = bc.shape;
          SCOPED_TRACE(testing::Message()
                       << "batch=" << bc.batch << " m=" << mc.m << " n=" << mc.n
                       << " k=" << mc.k << " ta=" << ta << " tb=" << tb
                       << " beta=" << beta);
          auto a = randomVector(size_t(bc.batch * mc.m * mc.k), seed++);
          auto b = randomVector(size_t(bc.batch * mc.k * mc.n), seed++);
          auto c = randomVector(size_t(bc.batch * mc.m * mc.n), seed++);
          if (beta == 0)
            std::fill(c.begin(), c.end(), kNaN);
          check(a, b, c, bc.batch, mc.m, mc.n, mc.k, ta, tb, beta);
        }
}

// A batch of products (cuBLAS's strided batched GEMM) against the CPU's
// batched kernel.
TEST(CudaMatmul, BatchesMatchCpu) {
  forEachBatchMatmul(5000, [](std::vector<float> &a, std::vector<float> &b,
                              std::vector<float> &c, int64_t batch, int64_t m,
                              int64_t n, int64_t k, int ta, int tb,
                              float beta) {
    std::vector<float> cpu = c;
    dtrain_rt_batch_matmul_f32(a.data(), b.data(), cpu.data(), batch, m, n, k,
                               ta, tb, beta);
    Buffer gpuA(a), gpuB(b), gpuC(c);
    dtrain_rt_cuda_batch_matmul_f32(gpuA.get(), gpuB.get(), gpuC.get(), batch,
                                    m, n, k, ta, tb, beta);
    EXPECT_TRUE(matchesCpu(gpuC.read(), cpu));
  });
}

TEST(CudaMatmul, EmptyOperandsMayBeNull) {
  Buffer c(std::vector<float>{3, 4});
  dtrain_rt_cuda_matmul_f32(nullptr, nullptr, c.get(), 1, 2, 0, 0, 0, 2.0f);
  EXPECT_EQ(c.read(), (std::vector<float>{6, 8}));
  c.fill(0xff);
  dtrain_rt_cuda_matmul_f32(nullptr, nullptr, c.get(), 2, 1, 0, 1, 1, 0.0f);
  EXPECT_EQ(c.read(), (std::vector<float>{0, 0}));
  dtrain_rt_cuda_matmul_f32(nullptr, nullptr, nullptr, 0, 0, 5, 0, 0, 1.0f);
}

//===--- Convolution ------------------------------------------------------===//

const ConvCase gpuConvCases[] = {
    // n c  h  w oc kh kw sh sw pt pl pb pr dh dw g bias
    {8, 32, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
    {4, 64, 14, 14, 128, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, false}, // "SAME"
    {4, 16, 32, 32, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1, true},   // 5x5
    {2, 32, 17, 17, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, false}, // depthwise
    {2, 8, 16, 16, 16, 3, 3, 1, 2, 3, 0, 1, 2, 2, 2, 2, true},    // all mixed
    {4, 3, 64, 64, 32, 7, 7, 2, 2, 3, 2, 3, 4, 1, 1, 1, false},   // stem
    {4, 64, 28, 28, 256, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, false}, // 1x1
    {8, 256, 7, 7, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},    // 1x1
};

std::vector<ConvCase> allConvCases() {
  std::vector<ConvCase> cases(std::begin(convCases), std::end(convCases));
  cases.insert(cases.end(), std::begin(gpuConvCases), std::end(gpuConvCases));
  return cases;
}

size_t outputSize(const ConvCase &k) {
  return size_t(k.n * k.oc * k.oh() * k.ow());
}

/// Runs the forward kernel (CUDA: on device copies) and returns Y.
std::vector<float> convForward(const ConvCase &k, const ConvData &d,
                               bool onGpu) {
  if (!onGpu) {
    std::vector<float> y(outputSize(k), kNaN);
    dtrain_rt_conv2d_f32(d.x.data(), d.w.data(),
                         k.bias ? d.bias.data() : nullptr, y.data(), k.n, k.c,
                         k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw,
                         k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
    return y;
  }
  Buffer x(d.x), w(d.w), bias(d.bias);
  Output y(outputSize(k));
  dtrain_rt_cuda_conv2d_f32(x.get(), w.get(), k.bias ? bias.get() : nullptr,
                            y.get(), k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw,
                            k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb, k.pr,
                            k.dh, k.dw, k.groups);
  return y.read();
}

TEST(CudaConv, ForwardMatchesCpu) {
  uint32_t seed = 100;
  for (const ConvCase &k : allConvCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const ConvData d(k, seed += 3);
    EXPECT_TRUE(matchesCpu(convForward(k, d, true), convForward(k, d, false)));
  }
}

TEST(CudaConv, DataGradientMatchesCpu) {
  uint32_t seed = 300;
  for (const ConvCase &k : allConvCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const ConvData d(k, seed += 3);
    const auto dy = randomVector(outputSize(k), seed + 1000);
    std::vector<float> cpu(d.x.size(), kNaN);
    dtrain_rt_conv2d_backward_data_f32(dy.data(), d.w.data(), cpu.data(), k.n,
                                       k.c, k.h, k.w, k.oc, k.kh, k.kw, k.oh(),
                                       k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb,
                                       k.pr, k.dh, k.dw, k.groups);
    Buffer gpuDy(dy), w(d.w);
    Output dx(d.x.size());
    dtrain_rt_cuda_conv2d_backward_data_f32(
        gpuDy.get(), w.get(), dx.get(), k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw,
        k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw,
        k.groups);
    EXPECT_TRUE(matchesCpu(dx.read(), cpu));
  }
}

// The bias gradient where the case has a bias, none (DB NULL) where not.
TEST(CudaConv, WeightGradientMatchesCpu) {
  uint32_t seed = 500;
  for (const ConvCase &k : allConvCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const ConvData d(k, seed += 3);
    const auto dy = randomVector(outputSize(k), seed + 1000);
    std::vector<float> cpuDw(d.w.size(), kNaN), cpuDb(size_t(k.oc), kNaN);
    dtrain_rt_conv2d_backward_weights_f32(
        d.x.data(), dy.data(), cpuDw.data(), k.bias ? cpuDb.data() : nullptr,
        k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt,
        k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
    Buffer x(d.x), gpuDy(dy);
    Output dw(d.w.size()), db(size_t(k.oc));
    dtrain_rt_cuda_conv2d_backward_weights_f32(
        x.get(), gpuDy.get(), dw.get(), k.bias ? db.get() : nullptr, k.n, k.c,
        k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl,
        k.pb, k.pr, k.dh, k.dw, k.groups);
    EXPECT_TRUE(matchesCpu(dw.read(), cpuDw));
    if (k.bias) {
      EXPECT_TRUE(matchesCpu(db.read(), cpuDb));
    }
  }
}

// The NHWC kernels (cuDNN's NHWC and KRSC descriptors) against the CPU's, in
// all three directions, where the padding is symmetric (the only kind
// --dtrain-channels-last gives them).
TEST(CudaConv, ChannelsLastMatchesCpu) {
  uint32_t seed = 700;
  for (const ConvCase &k : allConvCases()) {
    if (k.pt != k.pb || k.pl != k.pr)
      continue;
    SCOPED_TRACE(testing::Message() << k);
    const ConvData d(k, seed += 3);
    const int64_t oh = k.oh(), ow = k.ow();
    const ChannelsLastConv cpu =
        runChannelsLastOnCpu(k, d, randomVector(outputSize(k), seed + 1000));
    Buffer gx(cpu.x), gw(cpu.w), gdy(cpu.dy), gbias(d.bias);
    Output gy(cpu.y.size()), gdx(cpu.dx.size()), gdw(cpu.dw.size()),
        gdb(cpu.db.size());
    dtrain_rt_cuda_conv2d_nhwc_f32(
        gx.get(), gw.get(), k.bias ? gbias.get() : nullptr, gy.get(), k.n, k.c,
        k.h, k.w, k.oc, k.kh, k.kw, oh, ow, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr,
        k.dh, k.dw, k.groups);
    dtrain_rt_cuda_conv2d_backward_data_nhwc_f32(
        gdy.get(), gw.get(), gdx.get(), k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw,
        oh, ow, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
    dtrain_rt_cuda_conv2d_backward_weights_nhwc_f32(
        gx.get(), gdy.get(), gdw.get(), gdb.get(), k.n, k.c, k.h, k.w, k.oc,
        k.kh, k.kw, oh, ow, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw,
        k.groups);
    EXPECT_TRUE(matchesCpu(gy.read(), cpu.y));
    EXPECT_TRUE(matchesCpu(gdx.read(), cpu.dx));
    EXPECT_TRUE(matchesCpu(gdw.read(), cpu.dw));
    EXPECT_TRUE(matchesCpu(gdb.read(), cpu.db));
  }
}

// A geometry seen before runs its kept algorithm again: the same bits
// (cuDNN's forward algorithms are deterministic), interleaved with other
// geometries and directions.
TEST(CudaConv, RepeatedGeometryGivesTheSameResult) {
  const ConvCase a = gpuConvCases[4], b = gpuConvCases[0];
  const ConvData da(a, 7), db(b, 8);
  const std::vector<float> first = convForward(a, da, true);
  convForward(b, db, true);
  const std::vector<float> second = convForward(a, da, true);
  ASSERT_EQ(first.size(), second.size());
  EXPECT_EQ(
      std::memcmp(first.data(), second.data(), first.size() * sizeof(float)),
      0);
  EXPECT_TRUE(matchesCpu(second, convForward(a, da, false)));
}

//===--- 16-bit matrix products and convolutions --------------------------===//

/// Device copies of float values in a 16-bit TYPE, read back as floats.
class HalfBuffer {
public:
  /// VALUES rounded to TYPE, in place too: the CPU kernels then read what
  /// the GPU's do.
  HalfBuffer(int32_t type, std::vector<float> &values)
      : type(type), bits(round(type, values)) {}
  /// N elements, all NaN.
  HalfBuffer(int32_t type, size_t n) : type(type), bits(n) { bits.fill(0xff); }

  uint16_t *get() const { return bits.get(); }
  std::vector<float> read() const {
    const std::vector<uint16_t> host = bits.read();
    std::vector<float> values(host.size());
    for (size_t i = 0; i < host.size(); ++i)
      values[i] = dtrain::rt::loadAsFloat(host.data(), type, int64_t(i));
    return values;
  }

private:
  static std::vector<uint16_t> round(int32_t type, std::vector<float> &values) {
    std::vector<uint16_t> host(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      dtrain::rt::storeFromFloat(host.data(), type, int64_t(i), values[i]);
      values[i] = dtrain::rt::loadAsFloat(host.data(), type, int64_t(i));
    }
    return host;
  }

  int32_t type;
  DeviceBuffer<uint16_t> bits;
};

TEST(CudaHalf, MatmulMatchesCpu) {
  uint32_t seed = 2000;
  std::vector<MatmulCase> cases(std::begin(matmulCases), std::end(matmulCases));
  cases.insert(cases.end(), std::begin(gpuMatmulCases),
               std::end(gpuMatmulCases));
  for (const HalfType &t : halfTypes) {
    const auto matmul = t.type == DTRAIN_RT_BF16 ? dtrain_rt_cuda_matmul_bf16
                                                 : dtrain_rt_cuda_matmul_f16;
    for (const MatmulCase &mc : cases)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (float beta : {0.0f, 1.0f}) {
            SCOPED_TRACE(testing::Message()
                         << t.name << " m=" << mc.m << " n=" << mc.n
                         << " k=" << mc.k << " ta=" << ta << " tb=" << tb
                         << " beta=" << beta);
            auto a = randomVector(size_t(mc.m * mc.k), seed++);
            auto b = randomVector(size_t(mc.k * mc.n), seed++);
            auto c = randomVector(size_t(mc.m * mc.n), seed++);
            if (beta == 0) // must be ignored, NaN included
              std::fill(c.begin(), c.end(), kNaN);
            HalfBuffer gpuA(t.type, a), gpuB(t.type, b), gpuC(t.type, c);
            std::vector<float> cpu = c;
            dtrain_rt_matmul_f32(a.data(), b.data(), cpu.data(), mc.m, mc.n,
                                 mc.k, ta, tb, beta);
            matmul(gpuA.get(), gpuB.get(), gpuC.get(), mc.m, mc.n, mc.k, ta,
                   tb, beta);
            EXPECT_TRUE(matchesCpu(gpuC.read(), cpu, -1, t.tolerance));
          }
  }
}

TEST(CudaHalf, BatchMatmulMatchesCpu) {
  for (const HalfType &t : halfTypes) {
    SCOPED_TRACE(t.name);
    const auto matmul = t.type == DTRAIN_RT_BF16
                            ? dtrain_rt_cuda_batch_matmul_bf16
                            : dtrain_rt_cuda_batch_matmul_f16;
    forEachBatchMatmul(6000, [&](std::vector<float> &a, std::vector<float> &b,
                                 std::vector<float> &c, int64_t batch,
                                 int64_t m, int64_t n, int64_t k, int ta,
                                 int tb, float beta) {
      // The operands rounded in place: the CPU then reads the GPU's values.
      HalfBuffer gpuA(t.type, a), gpuB(t.type, b), gpuC(t.type, c);
      std::vector<float> cpu = c;
      dtrain_rt_batch_matmul_f32(a.data(), b.data(), cpu.data(), batch, m, n, k,
                                 ta, tb, beta);
      matmul(gpuA.get(), gpuB.get(), gpuC.get(), batch, m, n, k, ta, tb, beta);
      EXPECT_TRUE(matchesCpu(gpuC.read(), cpu, -1, t.tolerance));
    });
  }
}

// The forward convolution (with the case's bias), the data gradient and the
// weight gradient (with the bias gradient where the case has a bias).
TEST(CudaHalf, ConvolutionsMatchCpu) {
  uint32_t seed = 3000;
  for (const HalfType &t : halfTypes) {
    const bool bf16 = t.type == DTRAIN_RT_BF16;
    const auto forward =
        bf16 ? dtrain_rt_cuda_conv2d_bf16 : dtrain_rt_cuda_conv2d_f16;
    const auto backwardData = bf16 ? dtrain_rt_cuda_conv2d_backward_data_bf16
                                   : dtrain_rt_cuda_conv2d_backward_data_f16;
    const auto backwardWeights =
        bf16 ? dtrain_rt_cuda_conv2d_backward_weights_bf16
             : dtrain_rt_cuda_conv2d_backward_weights_f16;
    for (const ConvCase &k : allConvCases()) {
      SCOPED_TRACE(testing::Message() << t.name << " " << k);
      ConvData d(k, seed += 4);
      auto dy = randomVector(outputSize(k), seed + 3);
      HalfBuffer x(t.type, d.x), w(t.type, d.w), bias(t.type, d.bias),
          gpuDy(t.type, dy);

      std::vector<float> cpuY(outputSize(k), kNaN);
      dtrain_rt_conv2d_f32(d.x.data(), d.w.data(),
                           k.bias ? d.bias.data() : nullptr, cpuY.data(), k.n,
                           k.c, k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(),
                           k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw,
                           k.groups);
      HalfBuffer y(t.type, outputSize(k));
      forward(x.get(), w.get(), k.bias ? bias.get() : nullptr, y.get(), k.n,
              k.c, k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw,
              k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
      EXPECT_TRUE(matchesCpu(y.read(), cpuY, -1, t.tolerance)) << "forward";

      std::vector<float> cpuDx(d.x.size(), kNaN);
      dtrain_rt_conv2d_backward_data_f32(
          dy.data(), d.w.data(), cpuDx.data(), k.n, k.c, k.h, k.w, k.oc, k.kh,
          k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw,
          k.groups);
      HalfBuffer dx(t.type, d.x.size());
      backwardData(gpuDy.get(), w.get(), dx.get(), k.n, k.c, k.h, k.w, k.oc,
                   k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb,
                   k.pr, k.dh, k.dw, k.groups);
      EXPECT_TRUE(matchesCpu(dx.read(), cpuDx, -1, t.tolerance))
          << "data gradient";

      std::vector<float> cpuDw(d.w.size(), kNaN), cpuDb(size_t(k.oc), kNaN);
      dtrain_rt_conv2d_backward_weights_f32(
          d.x.data(), dy.data(), cpuDw.data(), k.bias ? cpuDb.data() : nullptr,
          k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw,
          k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
      HalfBuffer dw(t.type, d.w.size()), db(t.type, size_t(k.oc));
      backwardWeights(x.get(), gpuDy.get(), dw.get(),
                      k.bias ? db.get() : nullptr, k.n, k.c, k.h, k.w, k.oc,
                      k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb,
                      k.pr, k.dh, k.dw, k.groups);
      EXPECT_TRUE(matchesCpu(dw.read(), cpuDw, -1, t.tolerance))
          << "weight gradient";
      if (k.bias) {
        EXPECT_TRUE(matchesCpu(db.read(), cpuDb, -1, t.tolerance))
            << "bias gradient";
      }
    }
  }
}

//===--- Pooling ----------------------------------------------------------===//

std::vector<float> poolForward(const PoolCase &k, const std::vector<float> &x,
                               bool onGpu) {
  if (!onGpu) {
    std::vector<float> y(outputSize(k), kNaN);
    dtrain_rt_pool2d_f32(x.data(), y.data(), k.kind, k.n, k.c, k.h, k.w, k.oh(),
                         k.ow(), k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr,
                         k.dh, k.dw);
    return y;
  }
  Buffer gpuX(x);
  Output y(outputSize(k));
  dtrain_rt_cuda_pool2d_f32(gpuX.get(), y.get(), k.kind, k.n, k.c, k.h, k.w,
                            k.oh(), k.ow(), k.kh, k.kw, k.sh, k.sw, k.pt, k.pl,
                            k.pb, k.pr, k.dh, k.dw);
  return y.read();
}

/// The gradient; on the GPU, the average kinds get no X (they must not
/// read it).
std::vector<float> poolBackward(const PoolCase &k, const std::vector<float> &x,
                                const std::vector<float> &dy, bool onGpu) {
  if (!onGpu) {
    std::vector<float> dx(inputSize(k), kNaN);
    dtrain_rt_pool2d_backward_f32(
        x.data(), dy.data(), dx.data(), k.kind, k.n, k.c, k.h, k.w, k.oh(),
        k.ow(), k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
    return dx;
  }
  Buffer gpuX(x), gpuDy(dy);
  Output dx(inputSize(k));
  dtrain_rt_cuda_pool2d_backward_f32(k.kind == kMax ? gpuX.get() : nullptr,
                                     gpuDy.get(), dx.get(), k.kind, k.n, k.c,
                                     k.h, k.w, k.oh(), k.ow(), k.kh, k.kw, k.sh,
                                     k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
  return dx.read();
}

TEST(CudaPool, ForwardMatchesCpu) {
  uint32_t seed = 700;
  for (const PoolCase &k : allPoolCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const auto x = randomVector(inputSize(k), ++seed);
    EXPECT_TRUE(matchesCpu(poolForward(k, x, true), poolForward(k, x, false)));
  }
}

TEST(CudaPool, GradientMatchesCpu) {
  uint32_t seed = 900;
  for (const PoolCase &k : allPoolCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const auto x = randomVector(inputSize(k), ++seed);
    const auto dy = randomVector(outputSize(k), seed + 5000);
    EXPECT_TRUE(matchesCpu(poolBackward(k, x, dy, true),
                           poolBackward(k, x, dy, false)));
  }
}

// Inputs of three values (as after a ReLU: windows of equal maxima): the
// maximum, and which of the tied elements gets the gradient (the first in
// row-major window order), equal to the CPU's.
TEST(CudaPool, TiedMaximaAsOnTheCpu) {
  uint32_t seed = 1100;
  for (const PoolCase &k : allPoolCases()) {
    if (k.kind != kMax)
      continue;
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomVector(inputSize(k), ++seed, 0.0f, 3.0f);
    for (float &v : x)
      v = std::floor(v);
    const auto dy = randomVector(outputSize(k), seed + 5000);
    EXPECT_EQ(poolForward(k, x, true), poolForward(k, x, false));
    EXPECT_EQ(poolBackward(k, x, dy, true), poolBackward(k, x, dy, false));
  }
}

// A NaN is a window's maximum: its window's output is NaN, and the
// gradient goes to it (the first NaN), as on the CPU.
TEST(CudaPool, NaNIsTheMaximum) {
  const PoolCase k{kMax, 1, 2, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false};
  auto x = randomVector(inputSize(k), 3);
  x[0] = kNaN;          // plane 0, window (0, 0)
  x[3 * 8 + 5] = kNaN;  // plane 0, window (1, 2)
  x[3 * 8 + 4] = kNaN;  // the same window's first NaN
  x[64 + 7] = INFINITY; // plane 1, window (0, 3)
  const std::vector<float> y = poolForward(k, x, true);
  for (size_t o = 0; o < y.size(); ++o)
    EXPECT_EQ(std::isnan(y[o]), o == 0 || o == 6) << "output " << o;
  EXPECT_EQ(y[16 + 3], INFINITY);
  const auto dy = randomVector(outputSize(k), 4);
  const std::vector<float> dx = poolBackward(k, x, dy, true);
  EXPECT_EQ(dx, poolBackward(k, x, dy, false));
  EXPECT_EQ(dx[3 * 8 + 4], dy[6]);
  EXPECT_EQ(dx[3 * 8 + 5], 0.0f);
}

/// The 16-bit pooling kernels of TYPE (bf16 or f16), forward and
/// backward, NHWC where CHANNELS_LAST.
struct HalfPooling {
  decltype(&dtrain_rt_cuda_pool2d_bf16) forward;
  decltype(&dtrain_rt_cuda_pool2d_backward_bf16) backward;
};
HalfPooling halfPooling(int32_t type, bool channelsLast) {
  const bool bf16 = type == DTRAIN_RT_BF16;
  if (channelsLast)
    return {bf16 ? dtrain_rt_cuda_pool2d_nhwc_bf16
                 : dtrain_rt_cuda_pool2d_nhwc_f16,
            bf16 ? dtrain_rt_cuda_pool2d_backward_nhwc_bf16
                 : dtrain_rt_cuda_pool2d_backward_nhwc_f16};
  return {bf16 ? dtrain_rt_cuda_pool2d_bf16 : dtrain_rt_cuda_pool2d_f16,
          bf16 ? dtrain_rt_cuda_pool2d_backward_bf16
               : dtrain_rt_cuda_pool2d_backward_f16};
}

// 16-bit pooling against the f32 CPU kernels on the rounded inputs: max
// pooling's outputs are the rounded CPU's exactly (a maximum rounds to
// itself), average pooling's and the gradients within 16-bit rounding.
TEST(CudaHalf, PoolingMatchesCpu) {
  uint32_t seed = 4000;
  for (const HalfType &t : halfTypes) {
    const auto [forward, backward] = halfPooling(t.type, false);
    for (const PoolCase &k : allPoolCases()) {
      SCOPED_TRACE(testing::Message() << t.name << " " << k);
      auto x = randomVector(inputSize(k), ++seed);
      auto dy = randomVector(outputSize(k), seed + 5000);
      HalfBuffer gpuX(t.type, x), gpuDy(t.type, dy);

      HalfBuffer y(t.type, outputSize(k));
      forward(gpuX.get(), y.get(), k.kind, k.n, k.c, k.h, k.w, k.oh(), k.ow(),
              k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
      std::vector<float> cpuY = poolForward(k, x, false);
      if (k.kind == kMax) {
        HalfBuffer rounded(t.type, cpuY); // rounds cpuY in place
        EXPECT_EQ(y.read(), cpuY) << "forward";
      } else {
        EXPECT_TRUE(matchesCpu(y.read(), cpuY, -1, t.tolerance)) << "forward";
      }

      HalfBuffer dx(t.type, inputSize(k));
      backward(k.kind == kMax ? gpuX.get() : nullptr, gpuDy.get(), dx.get(),
               k.kind, k.n, k.c, k.h, k.w, k.oh(), k.ow(), k.kh, k.kw, k.sh,
               k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
      EXPECT_TRUE(matchesCpu(dx.read(), poolBackward(k, x, dy, false), -1,
                             t.tolerance))
          << "gradient";
    }
  }
}

// The NHWC kernels (a thread per channel of a pixel) against the CPU's
// NHWC kernels, on random inputs and on ties.
TEST(CudaPool, ChannelsLastMatchesCpu) {
  uint32_t seed = 4500;
  for (const PoolCase &k : allPoolCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const auto x = randomVector(inputSize(k), ++seed, 0.0f, 3.0f);
    const auto dy = randomVector(outputSize(k), seed + 5000);
    std::vector<float> ties = x;
    for (float &v : ties)
      v = std::floor(v);
    for (const std::vector<float> &input : {x, ties}) {
      const ChannelsLastPool cpu = runChannelsLastOnCpu(k, input, dy);
      Buffer gx(cpu.x), gdy(cpu.dy);
      Output gy(cpu.y.size()), gdx(cpu.dx.size());
      dtrain_rt_cuda_pool2d_nhwc_f32(gx.get(), gy.get(), k.kind, k.n, k.c, k.h,
                                     k.w, k.oh(), k.ow(), k.kh, k.kw, k.sh,
                                     k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
      dtrain_rt_cuda_pool2d_backward_nhwc_f32(
          k.kind == kMax ? gx.get() : nullptr, gdy.get(), gdx.get(), k.kind,
          k.n, k.c, k.h, k.w, k.oh(), k.ow(), k.kh, k.kw, k.sh, k.sw, k.pt,
          k.pl, k.pb, k.pr, k.dh, k.dw);
      EXPECT_TRUE(matchesCpu(gy.read(), cpu.y));
      EXPECT_TRUE(matchesCpu(gdx.read(), cpu.dx));
    }
  }
}

// 16-bit NHWC pooling computes the NCHW kernels' bits: the same windows,
// summed in the same order.
TEST(CudaHalf, ChannelsLastPoolingMatchesNCHW) {
  uint32_t seed = 4700;
  for (const HalfType &t : halfTypes) {
    const auto [forward, backward] = halfPooling(t.type, false);
    const auto [forwardNHWC, backwardNHWC] = halfPooling(t.type, true);
    for (const PoolCase &k : allPoolCases()) {
      SCOPED_TRACE(testing::Message() << t.name << " " << k);
      const int64_t oh = k.oh(), ow = k.ow();
      auto x = randomVector(inputSize(k), ++seed);
      auto dy = randomVector(outputSize(k), seed + 5000);
      HalfBuffer gx(t.type, x), gdy(t.type, dy); // rounds X and DY
      auto xLast = moveChannels(x, k.n, k.c, k.h, k.w);
      auto dyLast = moveChannels(dy, k.n, k.c, oh, ow);
      HalfBuffer gxLast(t.type, xLast), gdyLast(t.type, dyLast);
      HalfBuffer y(t.type, outputSize(k)), yLast(t.type, outputSize(k));
      HalfBuffer dx(t.type, inputSize(k)), dxLast(t.type, inputSize(k));
      forward(gx.get(), y.get(), k.kind, k.n, k.c, k.h, k.w, oh, ow, k.kh, k.kw,
              k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
      forwardNHWC(gxLast.get(), yLast.get(), k.kind, k.n, k.c, k.h, k.w, oh, ow,
                  k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
      backward(gx.get(), gdy.get(), dx.get(), k.kind, k.n, k.c, k.h, k.w, oh,
               ow, k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
      backwardNHWC(gxLast.get(), gdyLast.get(), dxLast.get(), k.kind, k.n, k.c,
                   k.h, k.w, oh, ow, k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb,
                   k.pr, k.dh, k.dw);
      EXPECT_EQ(moveChannels(yLast.read(), k.n, oh, ow, k.c, true), y.read());
      EXPECT_EQ(moveChannels(dxLast.read(), k.n, k.h, k.w, k.c, true),
                dx.read());
    }
  }
}

//===--- Batch normalization ----------------------------------------------===//

const BatchNormCase gpuBatchNormCases[] = {
    {1, 3, 1, 1e-5f},     // one value per channel
    {2, 3, 1, 1e-5f},     // two
    {32, 64, 196, 1e-5f}, // 14x14
    {128, 256, 1, 1e-3f}, // rank 2, wide
    {2, 8, 3136, 0.0f},   // 56x56, no epsilon
};

std::vector<BatchNormCase> allBatchNormCases() {
  std::vector<BatchNormCase> cases(std::begin(batchNormCases),
                                   std::end(batchNormCases));
  cases.insert(cases.end(), std::begin(gpuBatchNormCases),
               std::end(gpuBatchNormCases));
  cases.insert(cases.end(), std::begin(splitBatchNormCases),
               std::end(splitBatchNormCases));
  return cases;
}

TEST(CudaBatchNorm, InferenceMatchesCpu) {
  uint32_t seed = 1300;
  for (const BatchNormCase &k : allBatchNormCases()) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    const BatchNormData d(k, seed += 5);
    std::vector<float> cpu(d.x.size(), kNaN);
    dtrain_rt_batch_norm_f32(d.x.data(), d.scale.data(), d.bias.data(),
                             d.mean.data(), d.var.data(), cpu.data(), k.n, k.c,
                             k.spatial, k.epsilon);
    Buffer x(d.x), scale(d.scale), bias(d.bias), mean(d.mean), var(d.var);
    Output y(d.x.size());
    dtrain_rt_cuda_batch_norm_f32(x.get(), scale.get(), bias.get(), mean.get(),
                                  var.get(), y.get(), k.n, k.c, k.spatial,
                                  k.epsilon);
    EXPECT_TRUE(matchesCpu(y.read(), cpu));
  }
}

/// The training kernels' results: Y, the batch statistics, and from them
/// the gradients for DY.
struct BatchNormRun {
  std::vector<float> y, mean, var, dx, dscale, dbias;
};

BatchNormRun cpuBatchNorm(const BatchNormCase &k, const BatchNormData &d,
                          const std::vector<float> &dy) {
  const size_t c = size_t(k.c);
  BatchNormRun r{std::vector<float>(d.x.size(), kNaN),
                 std::vector<float>(c, kNaN),
                 std::vector<float>(c, kNaN),
                 std::vector<float>(d.x.size(), kNaN),
                 std::vector<float>(c, kNaN),
                 std::vector<float>(c, kNaN)};
  dtrain_rt_batch_norm_train_f32(d.x.data(), d.scale.data(), d.bias.data(),
                                 r.y.data(), r.mean.data(), r.var.data(), k.n,
                                 k.c, k.spatial, k.epsilon);
  dtrain_rt_batch_norm_backward_f32(d.x.data(), dy.data(), d.scale.data(),
                                    r.mean.data(), r.var.data(), r.dx.data(),
                                    r.dscale.data(), r.dbias.data(), k.n, k.c,
                                    k.spatial, k.epsilon);
  return r;
}

TEST(CudaBatchNorm, TrainingMatchesCpu) {
  uint32_t seed = 1500;
  for (const BatchNormCase &k : allBatchNormCases()) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    const BatchNormData d(k, seed += 5);
    const auto dy = randomVector(d.x.size(), seed + 1000);
    const BatchNormRun cpu = cpuBatchNorm(k, d, dy);
    Buffer x(d.x), scale(d.scale), bias(d.bias);
    Output y(d.x.size()), mean(size_t(k.c)), var(size_t(k.c));
    dtrain_rt_cuda_batch_norm_train_f32(x.get(), scale.get(), bias.get(),
                                        y.get(), mean.get(), var.get(), k.n,
                                        k.c, k.spatial, k.epsilon);
    EXPECT_TRUE(matchesCpu(y.read(), cpu.y)) << "y";
    EXPECT_TRUE(matchesCpu(mean.read(), cpu.mean)) << "batch mean";
    EXPECT_TRUE(matchesCpu(var.read(), cpu.var)) << "batch variance";
  }
}

// From the CPU's statistics, on both.
TEST(CudaBatchNorm, GradientMatchesCpu) {
  uint32_t seed = 1700;
  for (const BatchNormCase &k : allBatchNormCases()) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    const BatchNormData d(k, seed += 5);
    const auto dy = randomVector(d.x.size(), seed + 1000);
    const BatchNormRun cpu = cpuBatchNorm(k, d, dy);
    Buffer x(d.x), gpuDy(dy), scale(d.scale), mean(cpu.mean), var(cpu.var);
    Output dx(d.x.size()), dscale(size_t(k.c)), dbias(size_t(k.c));
    dtrain_rt_cuda_batch_norm_backward_f32(
        x.get(), gpuDy.get(), scale.get(), mean.get(), var.get(), dx.get(),
        dscale.get(), dbias.get(), k.n, k.c, k.spatial, k.epsilon);
    const BatchNormGradientScales scales = batchNormGradientScales(
        d.scale, cpu.var, k.epsilon, dy, k.n * k.spatial);
    EXPECT_TRUE(matchesCpu(dx.read(), cpu.dx, scales.dx)) << "dx";
    EXPECT_TRUE(matchesCpu(dscale.read(), cpu.dscale, scales.dscale))
        << "dscale";
    EXPECT_TRUE(matchesCpu(dbias.read(), cpu.dbias)) << "dbias";
  }
}

// 16-bit data (x, y, dy, dx) with f32 scale, bias and statistics, against
// the f32 CPU kernels on the rounded data: y and dx within 16-bit
// rounding, the statistics and the parameter gradients (f32) as in f32.
TEST(CudaHalf, BatchNormMatchesCpu) {
  uint32_t seed = 5000;
  for (const HalfType &t : halfTypes) {
    const bool bf16 = t.type == DTRAIN_RT_BF16;
    const auto train = bf16 ? dtrain_rt_cuda_batch_norm_train_bf16
                            : dtrain_rt_cuda_batch_norm_train_f16;
    const auto backward = bf16 ? dtrain_rt_cuda_batch_norm_backward_bf16
                               : dtrain_rt_cuda_batch_norm_backward_f16;
    const auto inference =
        bf16 ? dtrain_rt_cuda_batch_norm_bf16 : dtrain_rt_cuda_batch_norm_f16;
    for (const BatchNormCase &k : allBatchNormCases()) {
      SCOPED_TRACE(testing::Message() << t.name << " " << k.n << "x" << k.c
                                      << "x" << k.spatial << " epsilon "
                                      << k.epsilon);
      BatchNormData d(k, seed += 5);
      auto dy = randomVector(d.x.size(), seed + 1000);
      HalfBuffer x(t.type, d.x), gpuDy(t.type, dy);
      const BatchNormRun cpu = cpuBatchNorm(k, d, dy);
      Buffer scale(d.scale), bias(d.bias);
      HalfBuffer y(t.type, d.x.size()), dx(t.type, d.x.size());
      Output mean(size_t(k.c)), var(size_t(k.c)), dscale(size_t(k.c)),
          dbias(size_t(k.c));
      train(x.get(), scale.get(), bias.get(), y.get(), mean.get(), var.get(),
            k.n, k.c, k.spatial, k.epsilon);
      EXPECT_TRUE(matchesCpu(y.read(), cpu.y, -1, t.tolerance)) << "y";
      EXPECT_TRUE(matchesCpu(mean.read(), cpu.mean)) << "batch mean";
      EXPECT_TRUE(matchesCpu(var.read(), cpu.var)) << "batch variance";

      // The gradients from the CPU's statistics.
      Buffer cpuMean(cpu.mean), cpuVar(cpu.var);
      backward(x.get(), gpuDy.get(), scale.get(), cpuMean.get(), cpuVar.get(),
               dx.get(), dscale.get(), dbias.get(), k.n, k.c, k.spatial,
               k.epsilon);
      const BatchNormGradientScales scales = batchNormGradientScales(
          d.scale, cpu.var, k.epsilon, dy, k.n * k.spatial);
      EXPECT_TRUE(matchesCpu(dx.read(), cpu.dx, scales.dx, t.tolerance))
          << "dx";
      EXPECT_TRUE(matchesCpu(dscale.read(), cpu.dscale, scales.dscale))
          << "dscale";
      EXPECT_TRUE(matchesCpu(dbias.read(), cpu.dbias)) << "dbias";

      std::vector<float> cpuY(d.x.size(), kNaN);
      dtrain_rt_batch_norm_f32(d.x.data(), d.scale.data(), d.bias.data(),
                               d.mean.data(), d.var.data(), cpuY.data(), k.n,
                               k.c, k.spatial, k.epsilon);
      Buffer givenMean(d.mean), givenVar(d.var);
      HalfBuffer inferred(t.type, d.x.size());
      inference(x.get(), scale.get(), bias.get(), givenMean.get(),
                givenVar.get(), inferred.get(), k.n, k.c, k.spatial,
                k.epsilon);
      EXPECT_TRUE(matchesCpu(inferred.read(), cpuY, -1, t.tolerance))
          << "inference";
    }
  }
}

//===--- Embedding gradient -----------------------------------------------===//

/// (count, rows, width): no index, a few, one row for all (every index
/// repeated), and vocabulary-sized tables of GPT-like widths.
const struct EmbeddingGradCase {
  int64_t count, rows, width;
} embeddingGradCases[] = {{0, 5, 3},        {7, 5, 3},      {1100, 1, 64},
                          {1100, 100, 257}, {512, 65, 768}, {4096, 1000, 768},
                          {3, 100000, 1},   {16384, 50, 32}};

/// COUNT indices that repeat, wrap and fall outside [0, ROWS) on both
/// sides.
std::vector<int64_t> randomIndices(int64_t count, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(-2 * rows - 3, 2 * rows + 3);
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t &index : indices)
    index = pick(rng);
  return indices;
}

// Against the CPU kernel, which sums in index order where the GPU's
// atomics sum in any: to rounding (the rows that no index picks are 0 on
// both).
TEST(CudaEmbeddingGrad, MatchesCpu) {
  uint32_t seed = 7000;
  for (const EmbeddingGradCase &k : embeddingGradCases) {
    SCOPED_TRACE(testing::Message() << "count=" << k.count << " rows=" << k.rows
                                    << " width=" << k.width);
    const std::vector<int64_t> indices = randomIndices(k.count, k.rows, seed++);
    const std::vector<float> grad =
        randomVector(size_t(k.count * k.width), seed++);
    std::vector<float> cpu(size_t(k.rows * k.width), kNaN);
    dtrain_rt_embedding_grad_f32(grad.data(), indices.data(), cpu.data(),
                                 k.count, k.rows, k.width);
    Buffer gpuGrad(grad);
    DeviceBuffer<int64_t> gpuIndices(indices);
    Output gpuOut(cpu.size());
    dtrain_rt_cuda_embedding_grad_f32(gpuGrad.get(), gpuIndices.get(),
                                      gpuOut.get(), k.count, k.rows, k.width);
    EXPECT_TRUE(matchesCpu(gpuOut.read(), cpu));
  }
}

// Small integers: every order of the sums gives the same, exact, result.
// Row 2 gets GRAD's rows 0, 2, 3 (index -1 wraps to 2) and 4 (index 7,
// clamped); row 0 its rows 1 and 5 (index -9 wraps to -6, clamped).
TEST(CudaEmbeddingGrad, HandComputed) {
  const std::vector<int64_t> indices = {2, 0, 2, -1, 7, -9};
  const std::vector<float> grad = {1,    2,    10, 20, 100, 200,
                                   1000, 2000, 3,  4,  5,   6};
  Buffer gpuGrad(grad);
  DeviceBuffer<int64_t> gpuIndices(indices);
  Output out(6);
  dtrain_rt_cuda_embedding_grad_f32(gpuGrad.get(), gpuIndices.get(), out.get(),
                                    6, 3, 2);
  EXPECT_EQ(out.read(), (std::vector<float>{15, 26, 0, 0, 1104, 2206}));
}

//===--- Managed memory ---------------------------------------------------===//

/// COUNT floats of managed memory holding VALUES (or NaN), as a
/// --target=cuda trainer's buffers are.
struct Managed {
  explicit Managed(size_t count, const std::vector<float> &values = {})
      : data(static_cast<float *>(
            dtrain_rt_cuda_alloc_managed(count * sizeof(float)))),
        count(count) {
    for (size_t i = 0; i < count; ++i)
      data[i] = i < values.size() ? values[i] : kNaN;
  }
  Managed(const Managed &) = delete;
  Managed &operator=(const Managed &) = delete;
  ~Managed() { dtrain_rt_cuda_free(data); }
  /// The content, read on the host once the step stream, where the kernels
  /// queue their work, is done.
  std::vector<float> values() const {
    dtrain_rt_cuda_synchronize();
    return {data, data + count};
  }

  float *data;
  size_t count;
};

// Batch norm with what a trainer fuses into it, against the CPU kernels
// with the ops around them, rounded as those round: a ReLU (_relu: Y =
// max(the batch norm, 0)), or a residual and a ReLU (_add_relu: the batch
// norm's result and the sum rounded to the type, then the ReLU); and the
// gradients for DZ, the ReLU output's, masked by Z (_backward_relu, from
// the CPU's statistics). f32, bf16, f16.
TEST(CudaBatchNorm, FusedActivationsMatchCpu) {
  uint32_t seed = 5800;
  for (int32_t type : {DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
    const double tolerance =
        type == DTRAIN_RT_F32
            ? kTolerance
            : halfTypes[type == DTRAIN_RT_BF16 ? 0 : 1].tolerance;
    // VALUES rounded to TYPE in place.
    auto roundInPlace = [&](std::vector<float> &values) {
      if (type != DTRAIN_RT_F32)
        HalfBuffer rounded(type, values);
    };
    for (const BatchNormCase &k : allBatchNormCases()) {
      for (bool withResidual : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "type " << type << " " << k.n << "x" << k.c << "x"
                     << k.spatial << (withResidual ? " with a residual" : ""));
        BatchNormData d(k, seed += 5);
        std::vector<float> dz = randomVector(d.x.size(), seed + 1000),
                           r = randomVector(d.x.size(), seed + 2000);
        const size_t c = size_t(k.c);
        // The 16-bit data rounded in place, so that the CPU reads them too.
        std::optional<HalfBuffer> x16, dz16, r16;
        if (type != DTRAIN_RT_F32) {
          x16.emplace(type, d.x);
          dz16.emplace(type, dz);
          r16.emplace(type, r);
        }
        std::vector<float> z(d.x.size(), kNaN), cpuMean(c, kNaN),
            cpuVar(c, kNaN);
        dtrain_rt_batch_norm_train_f32(
            d.x.data(), d.scale.data(), d.bias.data(), z.data(), cpuMean.data(),
            cpuVar.data(), k.n, k.c, k.spatial, k.epsilon);
        if (withResidual) {
          roundInPlace(z);
          for (size_t i = 0; i < z.size(); ++i)
            z[i] += r[i];
        }
        roundInPlace(z);
        for (float &v : z)
          v = std::max(v, 0.0f);
        std::vector<float> dy(dz.size()), cpuDx(d.x.size(), kNaN),
            cpuDscale(c, kNaN), cpuDbias(c, kNaN);
        for (size_t i = 0; i < dy.size(); ++i)
          dy[i] = z[i] > 0.0f ? dz[i] : 0.0f;
        dtrain_rt_batch_norm_backward_f32(
            d.x.data(), dy.data(), d.scale.data(), cpuMean.data(),
            cpuVar.data(), cpuDx.data(), cpuDscale.data(), cpuDbias.data(), k.n,
            k.c, k.spatial, k.epsilon);

        Buffer scale(d.scale), bias(d.bias), mean(cpuMean), var(cpuVar);
        Output gpuMean(c), gpuVar(c), dscale(c), dbias(c);
        std::vector<float> gpuZ, gpuDx;
        if (type == DTRAIN_RT_F32) {
          Buffer x(d.x), gz(z), gdz(dz), gr(r);
          Output y(d.x.size()), dx(d.x.size());
          if (withResidual)
            dtrain_rt_cuda_batch_norm_train_add_relu_f32(
                x.get(), gr.get(), scale.get(), bias.get(), y.get(),
                gpuMean.get(), gpuVar.get(), k.n, k.c, k.spatial, k.epsilon);
          else
            dtrain_rt_cuda_batch_norm_train_relu_f32(
                x.get(), scale.get(), bias.get(), y.get(), gpuMean.get(),
                gpuVar.get(), k.n, k.c, k.spatial, k.epsilon);
          dtrain_rt_cuda_batch_norm_backward_relu_f32(
              x.get(), gdz.get(), gz.get(), scale.get(), mean.get(), var.get(),
              dx.get(), dscale.get(), dbias.get(), k.n, k.c, k.spatial,
              k.epsilon);
          gpuZ = y.read();
          gpuDx = dx.read();
        } else {
          const bool bf16 = type == DTRAIN_RT_BF16;
          HalfBuffer z16(type, z), y(type, d.x.size()), dx(type, d.x.size());
          if (withResidual)
            (bf16 ? dtrain_rt_cuda_batch_norm_train_add_relu_bf16
                  : dtrain_rt_cuda_batch_norm_train_add_relu_f16)(
                x16->get(), r16->get(), scale.get(), bias.get(), y.get(),
                gpuMean.get(), gpuVar.get(), k.n, k.c, k.spatial, k.epsilon);
          else
            (bf16 ? dtrain_rt_cuda_batch_norm_train_relu_bf16
                  : dtrain_rt_cuda_batch_norm_train_relu_f16)(
                x16->get(), scale.get(), bias.get(), y.get(), gpuMean.get(),
                gpuVar.get(), k.n, k.c, k.spatial, k.epsilon);
          (bf16 ? dtrain_rt_cuda_batch_norm_backward_relu_bf16
                : dtrain_rt_cuda_batch_norm_backward_relu_f16)(
              x16->get(), dz16->get(), z16.get(), scale.get(), mean.get(),
              var.get(), dx.get(), dscale.get(), dbias.get(), k.n, k.c,
              k.spatial, k.epsilon);
          gpuZ = y.read();
          gpuDx = dx.read();
        }
        EXPECT_TRUE(matchesCpu(gpuZ, z, -1, tolerance)) << "z";
        EXPECT_TRUE(matchesCpu(gpuMean.read(), cpuMean)) << "batch mean";
        EXPECT_TRUE(matchesCpu(gpuVar.read(), cpuVar)) << "batch variance";
        const BatchNormGradientScales scales = batchNormGradientScales(
            d.scale, cpuVar, k.epsilon, dz, k.n * k.spatial);
        EXPECT_TRUE(matchesCpu(gpuDx, cpuDx, scales.dx, tolerance)) << "dx";
        EXPECT_TRUE(matchesCpu(dscale.read(), cpuDscale, scales.dscale))
            << "dscale";
        EXPECT_TRUE(matchesCpu(dbias.read(), cpuDbias)) << "dbias";
      }
    }
  }
}

// The trainer's case: managed buffers written and read on the host around
// the calls, with a wait for the step stream before each read.
TEST(CudaManagedMemory, ResultsAreReadyOnTheStepStream) {
  const ConvCase k = gpuConvCases[0];
  const ConvData d(k, 11);
  Managed x(d.x.size(), d.x), w(d.w.size(), d.w), bias(d.bias.size(), d.bias),
      y(outputSize(k));
  dtrain_rt_cuda_conv2d_f32(x.data, w.data, bias.data, y.data, k.n, k.c, k.h,
                            k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw,
                            k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
  EXPECT_TRUE(matchesCpu(y.values(), convForward(k, d, false)));

  const int64_t m = 512, n = 384, kk = 640;
  const auto a = randomVector(size_t(m * kk), 12);
  const auto b = randomVector(size_t(kk * n), 13);
  Managed ma(a.size(), a), mb(b.size(), b), mc(size_t(m * n));
  std::vector<float> cpu(size_t(m * n));
  dtrain_rt_matmul_f32(a.data(), b.data(), cpu.data(), m, n, kk, 0, 0, 0.0f);
  dtrain_rt_cuda_matmul_f32(ma.data, mb.data, mc.data, m, n, kk, 0, 0, 0.0f);
  EXPECT_TRUE(matchesCpu(mc.values(), cpu));
  // And the next call reads what the host wrote in between.
  std::fill(mb.data, mb.data + b.size(), 0.0f);
  dtrain_rt_cuda_matmul_f32(ma.data, mb.data, mc.data, m, n, kk, 0, 0, 1.0f);
  EXPECT_TRUE(matchesCpu(mc.values(), cpu));
}

//===--- Without a device -------------------------------------------------===//

TEST(WithoutDevice, FirstCallPrintsWhyAndExits) {
  const std::string line = fatalLine(whyNoGpu());
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64, 1.0f);
  EXPECT_EXIT(dtrain_rt_cuda_matmul_f32(a.data(), b.data(), c.data(), 4, 4, 4,
                                        0, 0, 0.0f),
              ::testing::ExitedWithCode(1), line);
  EXPECT_EXIT(dtrain_rt_cuda_conv2d_f32(a.data(), b.data(), nullptr, c.data(),
                                        1, 1, 4, 4, 1, 3, 3, 4, 4, 1, 1, 1, 1,
                                        1, 1, 1, 1, 1),
              ::testing::ExitedWithCode(1), line);
  EXPECT_EXIT(dtrain_rt_cuda_pool2d_f32(a.data(), c.data(), DTRAIN_RT_POOL_MAX,
                                        1, 1, 4, 4, 2, 2, 2, 2, 2, 2, 0, 0, 0,
                                        0, 1, 1),
              ::testing::ExitedWithCode(1), line);
  EXPECT_EXIT(dtrain_rt_cuda_batch_norm_train_f32(
                  a.data(), b.data(), b.data(), c.data(), b.data() + 8,
                  b.data() + 16, 2, 4, 4, 1e-5f),
              ::testing::ExitedWithCode(1), line);
  const int64_t indices[2] = {0, 1};
  EXPECT_EXIT(
      dtrain_rt_cuda_embedding_grad_f32(a.data(), indices, c.data(), 2, 4, 4),
      ::testing::ExitedWithCode(1), line);
}

// Products with nothing to compute, and embedding gradients with an empty
// table, return without the device.
TEST(WithoutDevice, NothingToComputeNeedsNoDevice) {
  float c[2] = {3, 4};
  dtrain_rt_cuda_matmul_f32(nullptr, nullptr, c, 1, 2, 0, 0, 0, 1.0f);
  dtrain_rt_cuda_matmul_f32(nullptr, nullptr, nullptr, 0, 2, 5, 0, 0, 0.0f);
  dtrain_rt_cuda_matmul_f32(nullptr, nullptr, nullptr, 3, 0, 5, 0, 0, 0.0f);
  EXPECT_EQ(c[0], 3.0f);
  EXPECT_EQ(c[1], 4.0f);
  dtrain_rt_cuda_embedding_grad_f32(nullptr, nullptr, nullptr, 4, 3, 0);
  dtrain_rt_cuda_embedding_grad_f32(nullptr, nullptr, nullptr, 0, 0, 8);
}

//===--- Invalid calls (run as separate processes by ctest) ---------------===//

/// Makes the invalid call NAME, which must abort; false where NAME is
/// unknown. Host pointers: the checks come before any device work.
bool makeInvalidCall(const std::string &name) {
  std::vector<float> x(64 * 64), y(64 * 64), w(64 * 64);
  std::vector<int64_t> indices(64);
  if (name == "conv-output") // 8x8, 3x3, stride 1, no padding gives 6x6
    dtrain_rt_cuda_conv2d_f32(x.data(), w.data(), nullptr, y.data(), 1, 2, 8, 8,
                              2, 3, 3, 6, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  else if (name == "conv-backward-data-output")
    dtrain_rt_cuda_conv2d_backward_data_f32(y.data(), w.data(), x.data(), 1, 2,
                                            8, 8, 2, 3, 3, 7, 6, 1, 1, 0, 0, 0,
                                            0, 1, 1, 1);
  else if (name == "conv-backward-weights-groups")
    dtrain_rt_cuda_conv2d_backward_weights_f32(x.data(), y.data(), w.data(),
                                               nullptr, 1, 6, 8, 8, 4, 3, 3, 6,
                                               6, 1, 1, 0, 0, 0, 0, 1, 1, 4);
  else if (name == "pool-ceil-rule") // ceil's last window would start past
    dtrain_rt_cuda_pool2d_f32(x.data(), y.data(), DTRAIN_RT_POOL_MAX, 1, 1, 3,
                              3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  else if (name == "pool-empty-window") // the first window is all padding
    dtrain_rt_cuda_pool2d_f32(x.data(), y.data(),
                              DTRAIN_RT_POOL_AVG_EXCLUDE_PAD, 1, 1, 4, 4, 4, 4,
                              2, 2, 2, 2, 2, 2, 2, 2, 1, 1);
  else if (name == "pool-backward-max-null-x") // max needs X
    dtrain_rt_cuda_pool2d_backward_f32(nullptr, y.data(), x.data(),
                                       DTRAIN_RT_POOL_MAX, 1, 1, 8, 8, 4, 4, 2,
                                       2, 2, 2, 0, 0, 0, 0, 1, 1);
  else if (name == "batch-norm-epsilon")
    dtrain_rt_cuda_batch_norm_f32(x.data(), w.data(), w.data(), w.data(),
                                  w.data(), y.data(), 2, 3, 4, -1e-5f);
  else if (name == "batch-norm-train-null-mean")
    dtrain_rt_cuda_batch_norm_train_f32(x.data(), w.data(), w.data(), y.data(),
                                        nullptr, w.data(), 2, 3, 4, 1e-5f);
  else if (name == "batch-norm-backward-null-dscale")
    dtrain_rt_cuda_batch_norm_backward_f32(x.data(), y.data(), w.data(),
                                           w.data(), w.data(), x.data(),
                                           nullptr, w.data(), 2, 3, 4, 1e-5f);
  else if (name == "batch-norm-backward-relu-null-z")
    dtrain_rt_cuda_batch_norm_backward_relu_f32(
        x.data(), y.data(), nullptr, w.data(), w.data(), w.data(), x.data(),
        w.data(), w.data(), 2, 3, 4, 1e-5f);
  else if (name == "matmul-size")
    dtrain_rt_cuda_matmul_f32(x.data(), w.data(), y.data(), 4, -1, 4, 0, 0,
                              0.0f);
  else if (name == "matmul-null-b")
    dtrain_rt_cuda_matmul_f32(x.data(), nullptr, y.data(), 4, 4, 4, 0, 0, 0.0f);
  else if (name == "embedding-grad-null-grad")
    dtrain_rt_cuda_embedding_grad_f32(nullptr, indices.data(), y.data(), 2, 4,
                                      4);
  else if (name == "embedding-grad-width")
    dtrain_rt_cuda_embedding_grad_f32(x.data(), indices.data(), y.data(), 2, 4,
                                      -3);
  else if (name == "tf32-switch") { // a valid call, an invalid switch
    setenv("DTRAIN_CUDA_TF32", "yes", 1);
    dtrain_rt_cuda_matmul_f32(x.data(), w.data(), y.data(), 4, 4, 4, 0, 0,
                              0.0f);
  } else if (name == "conv-gemm-switch") {
    setenv("DTRAIN_CUDA_CONV_GEMM", "yes", 1);
    dtrain_rt_cuda_matmul_f32(x.data(), w.data(), y.data(), 4, 4, 4, 0, 0,
                              0.0f);
  } else if (name == "split-batch-norm-switch") {
    setenv("DTRAIN_CUDA_SPLIT_BATCH_NORM", "yes", 1);
    dtrain_rt_cuda_matmul_f32(x.data(), w.data(), y.data(), 4, 4, 4, 0, 0,
                              0.0f);
  } else
    return false;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (std::optional<int> status =
          dtrain::rt::test::runInvalidCall(argc, argv, makeInvalidCall))
    return *status;
  ::testing::InitGoogleTest(&argc, argv);
  return runCudaTests(argc > 1 &&
                      std::strcmp(argv[1], "--without-device") == 0);
}
