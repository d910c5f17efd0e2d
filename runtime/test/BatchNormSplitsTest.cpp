//===- BatchNormSplitsTest.cpp - the GPU's split batch norm on the CPU ----===//
//
// The arithmetic of the CUDA runtime's split batch-norm kernels
// (lib/cuda/BatchNormSplits.h, run by BatchNorm.cu) on the CPU, over an
// emulated grid: every block of each kernel, every thread of each block,
// with the kernels' split and unit width. Their results must match the CPU
// kernels' (oneDNN) as CudaDnnTest.cpp's GPU results must, in f32, bf16
// and f16; and the splits must take every element of a channel once. What
// only the GPU runs (the sums of a block's threads as a tree of warp
// shuffles, the launch) is tested by CudaDnnTest.cpp with
// DTRAIN_CUDA_SPLIT_BATCH_NORM=1.
//
//===----------------------------------------------------------------------===//

#include "cuda/BatchNormSplits.h"
#include "Float16.h"
#include "HostTensor.h"
#include "KernelCases.h"
#include "MatchesCpu.h"
#include "dtrain_rt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;
using namespace dtrain::rt::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// The sums of every block of a sums kernel: SUMS(split, thread) for each
/// of its threads, added in f32 (on the GPU as a tree).
template <class ThreadSums>
std::vector<SumPair> blockSums(const BatchNormSplits &g, ThreadSums sums) {
  std::vector<SumPair> partials(size_t(g.c) * size_t(g.splits));
  for (int32_t ch = 0; ch < g.c; ++ch)
    for (int32_t split = 0; split < g.splits; ++split) {
      SumPair &block = partials[size_t(ch) * size_t(g.splits) + size_t(split)];
      block = SumPair{};
      for (int32_t thread = 0; thread < kBatchNormThreads; ++thread) {
        const SumPair s = sums(ch, split, thread);
        block.first += s.first;
        block.second += s.second;
      }
    }
  return partials;
}

/// Channel CH's split sums added up in double, as a warp of the second
/// kernel does.
void channelSums(const BatchNormSplits &g, const std::vector<SumPair> &partials,
                 int32_t ch, double &first, double &second) {
  first = second = 0;
  for (int32_t split = 0; split < g.splits; ++split) {
    const SumPair &p = partials[size_t(ch) * size_t(g.splits) + size_t(split)];
    first += double(p.first);
    second += double(p.second);
  }
}

/// splitBatchNormSums, then splitBatchNormApply.
void emulateTraining(int32_t type, const BatchNormSplits &g, const void *x,
                     const float *scale, const float *bias, float epsilon,
                     const BatchNormActivation &activation, void *y,
                     float *batchMean, float *batchVar) {
  forTypeAndWidth(type, g.width, [&](auto t, auto w) {
    constexpr int32_t Type = decltype(t)::value;
    constexpr int Width = decltype(w)::value;
    const std::vector<SumPair> partials =
        blockSums(g, [&](int32_t ch, int32_t split, int32_t thread) {
          return shiftedSums<Type, Width>(g, x, ch, split, thread,
                                          kBatchNormThreads,
                                          channelShift<Type>(g, x, ch));
        });
    for (int32_t ch = 0; ch < g.c; ++ch) {
      double sum, squares;
      channelSums(g, partials, ch, sum, squares);
      const BatchStatistics s = batchStatistics(sum, squares, g.count(),
                                                channelShift<Type>(g, x, ch));
      batchMean[ch] = s.mean;
      batchVar[ch] = s.var;
      for (int32_t split = 0; split < g.splits; ++split)
        for (int32_t thread = 0; thread < kBatchNormThreads; ++thread)
          normalizeUnits<Type, Width>(
              g, x, y, ch, split, thread, kBatchNormThreads, s.mean,
              scale[ch] * inverseStd(s.var, epsilon), bias[ch], activation);
    }
  });
}

/// splitBatchNormGradientSums, then splitBatchNormGradient.
void emulateBackward(int32_t type, const BatchNormSplits &g, const void *x,
                     const void *dy, const void *z, const float *scale,
                     const float *batchMean, const float *batchVar,
                     float epsilon, void *dx, float *dscale, float *dbias) {
  forTypeAndWidth(type, g.width, [&](auto t, auto w) {
    constexpr int32_t Type = decltype(t)::value;
    constexpr int Width = decltype(w)::value;
    const std::vector<SumPair> partials =
        blockSums(g, [&](int32_t ch, int32_t split, int32_t thread) {
          return gradientSums<Type, Width>(g, x, dy, z, ch, split, thread,
                                           kBatchNormThreads, batchMean[ch]);
        });
    for (int32_t ch = 0; ch < g.c; ++ch) {
      double sumDy, sumDyX;
      channelSums(g, partials, ch, sumDy, sumDyX);
      const GradientTerms terms =
          gradientTerms(sumDy, sumDyX, g.count(), batchMean[ch], batchVar[ch],
                        scale[ch], epsilon);
      dscale[ch] = terms.dscale;
      dbias[ch] = terms.dbias;
      for (int32_t split = 0; split < g.splits; ++split)
        for (int32_t thread = 0; thread < kBatchNormThreads; ++thread)
          gradientUnits<Type, Width>(g, x, dy, z, dx, ch, split, thread,
                                     kBatchNormThreads, terms);
    }
  });
}

std::vector<BatchNormCase> testCases() {
  std::vector<BatchNormCase> cases(std::begin(batchNormCases),
                                   std::end(batchNormCases));
  cases.insert(cases.end(), std::begin(splitBatchNormCases),
               std::end(splitBatchNormCases));
  cases.push_back({1, 3, 1, 1e-5f});     // one value per channel
  cases.push_back({32, 64, 196, 1e-5f}); // 14x14: units of 4
  return cases;
}

struct TypeCase {
  int32_t type;
  const char *name;
  double tolerance; // of Y and DX
};

const TypeCase typeCases[] = {
    {DTRAIN_RT_F32, "f32", kTolerance},
    {halfTypes[0].type, halfTypes[0].name, halfTypes[0].tolerance},
    {halfTypes[1].type, halfTypes[1].name, halfTypes[1].tolerance}};

/// What follows the batch norm in a case of MatchesCpu.
enum class After { Nothing, Relu, ResidualRelu };

// Y and the statistics, then the gradients from the CPU's statistics,
// against the f32 CPU kernels on the same (rounded) data; and so with a
// ReLU fused after the batch norm: Y = max(the batch norm, 0), and the
// gradients for DZ, the ReLU output's (DY = DZ where Z > 0); and with a
// residual added before the ReLU: Y = max(the batch norm + R, 0), each
// sum rounded to the type as the add it replaces rounds it.
TEST(BatchNormSplits, MatchesCpu) {
  uint32_t seed = 9100;
  for (const TypeCase &t : typeCases) {
    for (const BatchNormCase &k : testCases()) {
      for (After after : {After::Nothing, After::Relu, After::ResidualRelu}) {
        SCOPED_TRACE(testing::Message()
                     << t.name << " " << k.n << "x" << k.c << "x" << k.spatial
                     << " epsilon " << k.epsilon << " then "
                     << (after == After::Nothing ? "nothing"
                         : after == After::Relu  ? "a ReLU"
                                                 : "a residual and a ReLU"));
        BatchNormData d(k, seed += 5);
        std::vector<float> dyValues = randomVector(d.x.size(), seed + 1000);
        std::vector<float> residualValues =
            randomVector(d.x.size(), seed + 2000);
        HostTensor x(t.type, d.x), dy(t.type, dyValues),
            residual(t.type, residualValues);
        HostTensor y(t.type, d.x.size()), dx(t.type, d.x.size());
        const size_t c = size_t(k.c);

        std::vector<float> cpuY(d.x.size(), kNaN), cpuMean(c, kNaN),
            cpuVar(c, kNaN), cpuDx(d.x.size(), kNaN), cpuDscale(c, kNaN),
            cpuDbias(c, kNaN);
        dtrain_rt_batch_norm_train_f32(
            d.x.data(), d.scale.data(), d.bias.data(), cpuY.data(),
            cpuMean.data(), cpuVar.data(), k.n, k.c, k.spatial, k.epsilon);
        // The ops after the batch norm as the CPU trainer runs them: the
        // batch norm's result rounded to the type, the sum rounded, the
        // ReLU; then its output Z (as the split kernels read it) and the
        // batch norm's output gradient DZ masked by it.
        if (after == After::ResidualRelu) {
          HostTensor rounded(t.type, cpuY);
          for (size_t i = 0; i < cpuY.size(); ++i)
            cpuY[i] = cpuY[i] + residualValues[i];
          HostTensor sums(t.type, cpuY);
        }
        if (after != After::Nothing)
          for (float &v : cpuY)
            v = std::max(v, 0.0f);
        std::vector<float> zValues = cpuY, cpuDy = dyValues;
        HostTensor z(t.type, zValues);
        if (after != After::Nothing)
          for (size_t i = 0; i < cpuDy.size(); ++i)
            cpuDy[i] = zValues[i] > 0.0f ? dyValues[i] : 0.0f;
        dtrain_rt_batch_norm_backward_f32(
            d.x.data(), cpuDy.data(), d.scale.data(), cpuMean.data(),
            cpuVar.data(), cpuDx.data(), cpuDscale.data(), cpuDbias.data(), k.n,
            k.c, k.spatial, k.epsilon);

        const int bytes = t.type == DTRAIN_RT_F32 ? 4 : 2;
        const BatchNormActivation activation{
            after != After::Nothing,
            after == After::ResidualRelu ? residual.data() : nullptr};
        const BatchNormSplits g = splitBatchNorm(
            k.n, k.c, k.spatial,
            batchNormUnitWidth(k.spatial, bytes,
                               {x.data(), activation.residual, y.data()}));
        std::vector<float> mean(c, kNaN), var(c, kNaN);
        emulateTraining(t.type, g, x.data(), d.scale.data(), d.bias.data(),
                        k.epsilon, activation, y.data(), mean.data(),
                        var.data());
        EXPECT_TRUE(matchesCpu(y.read(), cpuY, -1, t.tolerance)) << "y";
        EXPECT_TRUE(matchesCpu(mean, cpuMean)) << "batch mean";
        EXPECT_TRUE(matchesCpu(var, cpuVar)) << "batch variance";

        std::vector<float> dscale(c, kNaN), dbias(c, kNaN);
        emulateBackward(t.type, g, x.data(), dy.data(),
                        after != After::Nothing ? z.data() : nullptr,
                        d.scale.data(), cpuMean.data(), cpuVar.data(),
                        k.epsilon, dx.data(), dscale.data(), dbias.data());
        const BatchNormGradientScales scales = batchNormGradientScales(
            d.scale, cpuVar, k.epsilon, dyValues, k.n * k.spatial);
        EXPECT_TRUE(matchesCpu(dx.read(), cpuDx, scales.dx, t.tolerance))
            << "dx";
        EXPECT_TRUE(matchesCpu(dscale, cpuDscale, scales.dscale)) << "dscale";
        EXPECT_TRUE(matchesCpu(dbias, cpuDbias)) << "dbias";
      }
    }
  }
}

// The ReLU keeps a NaN and makes -0 +0; its gradient passes where Z > 0
// only (not at 0, not at NaN).
TEST(BatchNormSplits, Relu) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(relu(2.5f), 2.5f);
  EXPECT_EQ(relu(-1.0f), 0.0f);
  EXPECT_FALSE(std::signbit(relu(-0.0f)));
  EXPECT_TRUE(std::isnan(relu(nan)));
  const float z[4] = {1.0f, 0.0f, -2.0f, nan}, dz[4] = {5, 6, 7, 8};
  const WideUnit<DTRAIN_RT_F32, 4> masked =
      outputGradient<DTRAIN_RT_F32, 4>(dz, z, 0);
  EXPECT_EQ(masked.values[0], 5.0f);
  EXPECT_EQ(masked.values[1], 0.0f);
  EXPECT_EQ(masked.values[2], 0.0f);
  EXPECT_EQ(masked.values[3], 0.0f);
}

// The variance of data far from 0 beside its spread, where a one-pass
// variance of the unshifted data would lose every digit in f32, against
// the two-pass variance in double.
TEST(BatchNormSplits, VarianceOfOffsetData) {
  const BatchNormCase k{4, 2, 3136, 1e-5f};
  BatchNormData d(k, 77);
  for (float &v : d.x)
    v = 1000.0f + v * 1e-2f;
  std::vector<float> exactMean(2), exactVar(2);
  for (int64_t ch = 0; ch < k.c; ++ch) {
    auto element = [&](int64_t i) {
      return double(
          d.x[size_t((i / k.spatial * k.c + ch) * k.spatial + i % k.spatial)]);
    };
    const int64_t count = k.n * k.spatial;
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < count; ++i)
      sum += element(i);
    const double mean = sum / double(count);
    for (int64_t i = 0; i < count; ++i)
      squares += (element(i) - mean) * (element(i) - mean);
    exactMean[size_t(ch)] = float(mean);
    exactVar[size_t(ch)] = float(squares / double(count));
  }
  HostTensor x(DTRAIN_RT_F32, d.x), y(DTRAIN_RT_F32, d.x.size());
  const BatchNormSplits g =
      splitBatchNorm(k.n, k.c, k.spatial,
                     batchNormUnitWidth(k.spatial, 4, {x.data(), y.data()}));
  std::vector<float> mean(2), var(2);
  emulateTraining(DTRAIN_RT_F32, g, x.data(), d.scale.data(), d.bias.data(),
                  k.epsilon, {}, y.data(), mean.data(), var.data());
  EXPECT_TRUE(matchesCpu(var, exactVar, 0, 1e-5)) << "batch variance";
  EXPECT_TRUE(matchesCpu(mean, exactMean, 0, 1e-7)) << "batch mean";
}

// Every unit of every channel is taken once, by one thread of one split,
// whatever the rows' length beside a block's threads.
TEST(BatchNormSplits, TakesEveryUnitOnce) {
  struct Shape {
    int64_t n, c, spatial;
  };
  const Shape shapes[] = {{8, 4, 12544}, {16, 3, 1000}, {64, 2, 777},
                          {32, 5, 49},   {1, 2, 1},     {3, 2, 256},
                          {2, 3, 513}};
  for (const Shape &k : shapes)
    for (int width : {1, 2, 4, 8}) {
      if (k.spatial % width)
        continue;
      SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                      << " in units of " << width);
      const BatchNormSplits g = splitBatchNorm(k.n, k.c, k.spatial, width);
      EXPECT_GE(int64_t(g.splits) * g.chunk, int64_t(g.n) * g.units);
      EXPECT_LT(int64_t(g.splits - 1) * g.chunk, int64_t(g.n) * g.units);
      std::vector<int> taken(size_t(k.n * k.c * k.spatial), 0);
      for (int32_t ch = 0; ch < g.c; ++ch)
        for (int32_t split = 0; split < g.splits; ++split)
          for (int32_t thread = 0; thread < kBatchNormThreads; ++thread)
            g.forEachUnit(ch, split, thread, kBatchNormThreads,
                          [&](int64_t offset) {
                            ASSERT_EQ(offset / k.spatial % k.c, ch);
                            for (int i = 0; i < width; ++i)
                              ++taken[size_t(offset + i)];
                          });
      EXPECT_EQ(std::count(taken.begin(), taken.end(), 1),
                std::ptrdiff_t(taken.size()));
    }
}

// Large channels take several blocks; many channels one each.
TEST(BatchNormSplits, Splits) {
  EXPECT_EQ(splitBatchNorm(32, 64, 12544, 8).splits, 16); // resnet's first
  EXPECT_EQ(splitBatchNorm(32, 2048, 49, 1).splits, 1);   // its last
  EXPECT_EQ(splitBatchNorm(4, 3, 1, 1).splits, 1);
}

// The widest unit that divides the rows, within 16 bytes, to which every
// pointer is aligned.
TEST(BatchNormSplits, UnitWidth) {
  alignas(16) static uint16_t data[64];
  EXPECT_EQ(batchNormUnitWidth(12544, 2, {data, data + 8}), 8);
  EXPECT_EQ(batchNormUnitWidth(12544, 4, {data, data + 8}), 4);
  EXPECT_EQ(batchNormUnitWidth(196, 2, {data, data}), 4);
  EXPECT_EQ(batchNormUnitWidth(30, 2, {data, data}), 2);
  EXPECT_EQ(batchNormUnitWidth(49, 2, {data, data}), 1);
  EXPECT_EQ(batchNormUnitWidth(12544, 2, {data, data + 4}), 4);
  EXPECT_EQ(batchNormUnitWidth(12544, 2, {data + 1, data}), 1);
}

} // namespace
