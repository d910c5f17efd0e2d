//===- KernelsTest.cpp - the CPU heavy-op kernels -------------------------===//
//
// Every kernel against a naive reference written here from the ONNX / PyTorch
// definitions (direct loops, double accumulation), on random data, over a
// table of geometries; the gradients (the *_backward_* kernels) also as the
// adjoints of the forward kernels; plus the primitive cache (repeated
// geometries create nothing and compute the same) and concurrent calls. The
// f64 kernels against the f32 ones, on hand-computed cases, and their
// gradients against central finite differences of their forward kernels.
// The embedding gradient (f32 and f64) bit for bit against a loop in index
// order, and on hand-computed cases.
//
//   dtrain-rt-kernels-test [gtest flags]      the unit tests
//   dtrain-rt-kernels-test --invalid=CASE     one invalid call, which must
//                                             abort (ctest checks stderr)
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "InvalidCalls.h"
#include "KernelCases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

/// The f32 or the f64 variant of a kernel, by element type: the runners
/// below serve both.
template <typename T, typename F32, typename F64>
auto kernelFor(F32 *f32, F64 *f64) {
  if constexpr (std::is_same_v<T, float>)
    return f32;
  else
    return f64;
}

/// |actual - expected| <= atol + rtol * |expected| elementwise (oneDNN and
/// BLAS sum in other orders than the reference).
template <typename T>
::testing::AssertionResult allClose(const std::vector<T> &actual,
                                    const std::vector<double> &expected,
                                    double rtol = 1e-4, double atol = 1e-5) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << expected.size();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    bool ok = std::fabs(actual[i] - expected[i]) <=
              atol + rtol * std::fabs(expected[i]);
    if (!ok && bad++ == 0)
      first = i;
  }
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements differ; first at "
         << first << ": " << actual[first] << " vs expected "
         << expected[first];
}

//===--- Matmul -----------------------------------------------------------===//

std::vector<double> referenceMatmul(const std::vector<float> &a,
                                    const std::vector<float> &b,
                                    const std::vector<float> &c, int64_t m,
                                    int64_t n, int64_t k, bool ta, bool tb,
                                    float beta) {
  std::vector<double> out(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(ta ? a[p * m + i] : a[i * k + p]) *
               double(tb ? b[j * k + p] : b[p * n + j]);
      if (beta != 0)
        sum += double(beta) * c[i * n + j];
      out[i * n + j] = sum;
    }
  return out;
}

TEST(Matmul, MatchesReference) {
  uint32_t seed = 1;
  for (const MatmulCase &mc : matmulCases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          SCOPED_TRACE(testing::Message()
                       << "m=" << mc.m << " n=" << mc.n << " k=" << mc.k
                       << " ta=" << ta << " tb=" << tb << " beta=" << beta);
          auto a = randomVector(size_t(mc.m * mc.k), seed++);
          auto b = randomVector(size_t(mc.k * mc.n), seed++);
          auto c = randomVector(size_t(mc.m * mc.n), seed++);
          if (beta == 0) // must be ignored, NaN included
            std::fill(c.begin(), c.end(),
                      std::numeric_limits<float>::quiet_NaN());
          auto expected =
              referenceMatmul(a, b, c, mc.m, mc.n, mc.k, ta, tb, beta);
          dtrain_rt_matmul_f32(a.data(), b.data(), c.data(), mc.m, mc.n, mc.k,
                               ta, tb, beta);
          EXPECT_TRUE(allClose(c, expected));
        }
}

TEST(Matmul, CachedGeometryGivesTheSameResult) {
  const int64_t m = 9, n = 13, k = 21;
  int64_t before = dtrain::rt::kernelGeometriesCreatedForTesting();
  for (uint32_t seed : {100u, 200u, 300u}) {
    auto a = randomVector(size_t(m * k), seed);
    auto b = randomVector(size_t(n * k), seed + 1);
    auto c = randomVector(size_t(m * n), seed + 2);
    auto expected = referenceMatmul(a, b, c, m, n, k, false, true, 1.0f);
    dtrain_rt_matmul_f32(a.data(), b.data(), c.data(), m, n, k, 0, 1, 1.0f);
    EXPECT_TRUE(allClose(c, expected));
  }
  EXPECT_EQ(dtrain::rt::kernelGeometriesCreatedForTesting() - before, 1);
}

// Each product of a batch against the reference, in f32 (oneDNN's batched
// matmul) and f64 (reference loops): batches of 1, 3 and 12, every
// transpose, BETA 0 (C's NaN ignored) and not.
TEST(Matmul, BatchesMatchTheReferenceMatrixByMatrix) {
  uint32_t seed = 7;
  for (int64_t batch : {1, 3, 12})
    for (const MatmulCase &mc : matmulCases)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (float beta : {0.0f, 0.5f}) {
            SCOPED_TRACE(testing::Message()
                         << "batch=" << batch << " m=" << mc.m << " n=" << mc.n
                         << " k=" << mc.k << " ta=" << ta << " tb=" << tb
                         << " beta=" << beta);
            const int64_t sa = mc.m * mc.k, sb = mc.k * mc.n, sc = mc.m * mc.n;
            auto a = randomVector(size_t(batch * sa), seed++);
            auto b = randomVector(size_t(batch * sb), seed++);
            auto c = randomVector(size_t(batch * sc), seed++);
            if (beta == 0)
              std::fill(c.begin(), c.end(),
                        std::numeric_limits<float>::quiet_NaN());
            std::vector<double> expected;
            for (int64_t i = 0; i < batch; ++i) {
              auto slice = [](const std::vector<float> &v, int64_t at,
                              int64_t size) {
                return std::vector<float>(v.begin() + at * size,
                                          v.begin() + (at + 1) * size);
              };
              auto product = referenceMatmul(slice(a, i, sa), slice(b, i, sb),
                                             slice(c, i, sc), mc.m, mc.n, mc.k,
                                             ta, tb, beta);
              expected.insert(expected.end(), product.begin(), product.end());
            }
            std::vector<double> a64(a.begin(), a.end()),
                b64(b.begin(), b.end()), c64(c.begin(), c.end());
            dtrain_rt_batch_matmul_f32(a.data(), b.data(), c.data(), batch,
                                       mc.m, mc.n, mc.k, ta, tb, beta);
            EXPECT_TRUE(allClose(c, expected));
            dtrain_rt_batch_matmul_f64(a64.data(), b64.data(), c64.data(),
                                       batch, mc.m, mc.n, mc.k, ta, tb, beta);
            EXPECT_TRUE(allClose(c64, expected, 1e-12, 1e-12));
          }
}

TEST(Matmul, EmptyOperandsMayBeNull) {
  float c[2] = {3, 4};
  dtrain_rt_matmul_f32(nullptr, nullptr, c, 1, 2, 0, 0, 0, 2.0f);
  EXPECT_EQ(c[0], 6.0f);
  EXPECT_EQ(c[1], 8.0f);
  dtrain_rt_matmul_f32(nullptr, nullptr, nullptr, 0, 0, 5, 0, 0, 1.0f);
}

//===--- Convolution ------------------------------------------------------===//

/// ONNX Conv: y[n,o,i,j] = b[o] + sum over the group's channels and the
/// kernel of x[n, g*C/G + c, i*sh - pt + p*dh, j*sw - pl + q*dw] * w[o,c,p,q].
std::vector<double> referenceConv(const ConvCase &k,
                                  const std::vector<float> &x,
                                  const std::vector<float> &w,
                                  const std::vector<float> &bias) {
  int64_t oh = k.oh(), ow = k.ow(), cg = k.c / k.groups, og = k.oc / k.groups;
  std::vector<double> y(size_t(k.n * k.oc * oh * ow));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = k.bias ? bias[o] : 0.0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t p = 0; p < k.kh; ++p)
              for (int64_t q = 0; q < k.kw; ++q) {
                int64_t yy = i * k.sh - k.pt + p * k.dh;
                int64_t xx = j * k.sw - k.pl + q * k.dw;
                if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w)
                  continue;
                int64_t channel = (o / og) * cg + c;
                sum += double(x[((n * k.c + channel) * k.h + yy) * k.w + xx]) *
                       double(w[((o * cg + c) * k.kh + p) * k.kw + q]);
              }
          y[((n * k.oc + o) * oh + i) * ow + j] = sum;
        }
  return y;
}

template <typename T>
std::vector<T> runConv(const ConvCase &k, const std::vector<T> &x,
                       const std::vector<T> &w, const std::vector<T> &bias) {
  // NaN: every output element must be written.
  std::vector<T> y(size_t(k.n * k.oc * k.oh() * k.ow()),
                   std::numeric_limits<T>::quiet_NaN());
  kernelFor<T>(dtrain_rt_conv2d_f32, dtrain_rt_conv2d_f64)(
      x.data(), w.data(), k.bias ? bias.data() : nullptr, y.data(), k.n, k.c,
      k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb,
      k.pr, k.dh, k.dw, k.groups);
  return y;
}

TEST(Conv2D, MatchesReference) {
  uint32_t seed = 100;
  for (const ConvCase &k : convCases) {
    SCOPED_TRACE(testing::Message() << k);
    ConvData d(k, seed += 3);
    EXPECT_TRUE(allClose(runConv(k, d.x, d.w, d.bias),
                         referenceConv(k, d.x, d.w, d.bias)));
  }
}

/// A repeated geometry creates no primitive and computes the same, also
/// with another geometry in between (the cached buffers are reused).
TEST(Conv2D, CachedGeometryGivesTheSameResult) {
  ConvCase a{2, 16, 10, 10, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true};
  ConvCase b{1, 16, 6, 6, 16, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 2, false};
  ConvData da(a, 7), db(b, 8);
  int64_t before = kernelGeometriesCreatedForTesting();
  std::vector<float> first = runConv(a, da.x, da.w, da.bias);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 1);
  EXPECT_EQ(runConv(a, da.x, da.w, da.bias), first);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 1);
  EXPECT_TRUE(allClose(runConv(b, db.x, db.w, db.bias),
                       referenceConv(b, db.x, db.w, db.bias)));
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 2);
  EXPECT_EQ(runConv(a, da.x, da.w, da.bias), first);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 2);
  EXPECT_TRUE(allClose(first, referenceConv(a, da.x, da.w, da.bias)));
  // The same geometry with and without bias are distinct primitives.
  ConvCase noBias = a;
  noBias.bias = false;
  EXPECT_TRUE(allClose(runConv(noBias, da.x, da.w, da.bias),
                       referenceConv(noBias, da.x, da.w, da.bias)));
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 3);
}

/// Threads calling the same and different geometries at once.
TEST(Conv2D, ConcurrentCalls) {
  ConvCase shared{1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true};
  ConvData d(shared, 11);
  std::vector<double> expected = referenceConv(shared, d.x, d.w, d.bias);
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      ConvCase own{1, 8, 6 + t, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, false};
      ConvData od(own, 20 + t);
      std::vector<double> ownExpected = referenceConv(own, od.x, od.w, od.bias);
      for (int i = 0; i < 10; ++i) {
        failures[t] += !allClose(runConv(shared, d.x, d.w, d.bias), expected);
        failures[t] +=
            !allClose(runConv(own, od.x, od.w, od.bias), ownExpected);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
}

//===--- Convolution gradients --------------------------------------------===//

/// Every product x[xi] * w[wi] that adds to y[yi] in ONNX Conv (as
/// referenceConv sums them): the backward references distribute the same
/// products the other way.
template <typename Visit> void forEachConvTap(const ConvCase &k, Visit visit) {
  int64_t oh = k.oh(), ow = k.ow(), cg = k.c / k.groups, og = k.oc / k.groups;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j)
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t p = 0; p < k.kh; ++p)
              for (int64_t q = 0; q < k.kw; ++q) {
                int64_t yy = i * k.sh - k.pt + p * k.dh;
                int64_t xx = j * k.sw - k.pl + q * k.dw;
                if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w)
                  continue;
                int64_t channel = (o / og) * cg + c;
                visit(size_t(((n * k.oc + o) * oh + i) * ow + j),
                      size_t(((n * k.c + channel) * k.h + yy) * k.w + xx),
                      size_t(((o * cg + c) * k.kh + p) * k.kw + q));
              }
}

/// dx[xi] = sum of dy[yi] * w[wi] over the taps.
std::vector<double> referenceConvBackwardData(const ConvCase &k,
                                              const std::vector<float> &dy,
                                              const std::vector<float> &w) {
  std::vector<double> dx(size_t(k.n * k.c * k.h * k.w), 0.0);
  forEachConvTap(k, [&](size_t yi, size_t xi, size_t wi) {
    dx[xi] += double(dy[yi]) * double(w[wi]);
  });
  return dx;
}

/// dw[wi] = sum of dy[yi] * x[xi] over the taps; db[o] = sum of dy[n,o,:,:].
std::vector<double> referenceConvBackwardWeights(const ConvCase &k,
                                                 const std::vector<float> &x,
                                                 const std::vector<float> &dy) {
  std::vector<double> dw(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw), 0.0);
  forEachConvTap(k, [&](size_t yi, size_t xi, size_t wi) {
    dw[wi] += double(dy[yi]) * double(x[xi]);
  });
  return dw;
}

std::vector<double> referenceConvBackwardBias(const ConvCase &k,
                                              const std::vector<float> &dy) {
  std::vector<double> db(size_t(k.oc), 0.0);
  int64_t plane = k.oh() * k.ow();
  for (size_t i = 0; i < dy.size(); ++i)
    db[(int64_t(i) / plane) % k.oc] += dy[i];
  return db;
}

template <typename T>
std::vector<T> runConvBackwardData(const ConvCase &k, const std::vector<T> &dy,
                                   const std::vector<T> &w) {
  // NaN: every element must be overwritten, not accumulated into.
  std::vector<T> dx(size_t(k.n * k.c * k.h * k.w),
                    std::numeric_limits<T>::quiet_NaN());
  kernelFor<T>(dtrain_rt_conv2d_backward_data_f32,
               dtrain_rt_conv2d_backward_data_f64)(
      dy.data(), w.data(), dx.data(), k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw,
      k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
  return dx;
}

/// DW, and DB when K.BIAS (else DB stays as given: NaN, not written).
template <typename T>
std::vector<T>
runConvBackwardWeights(const ConvCase &k, const std::vector<T> &x,
                       const std::vector<T> &dy, std::vector<T> &db) {
  std::vector<T> dw(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw),
                    std::numeric_limits<T>::quiet_NaN());
  db.assign(size_t(k.oc), std::numeric_limits<T>::quiet_NaN());
  kernelFor<T>(dtrain_rt_conv2d_backward_weights_f32,
               dtrain_rt_conv2d_backward_weights_f64)(
      x.data(), dy.data(), dw.data(), k.bias ? db.data() : nullptr, k.n, k.c,
      k.h, k.w, k.oc, k.kh, k.kw, k.oh(), k.ow(), k.sh, k.sw, k.pt, k.pl, k.pb,
      k.pr, k.dh, k.dw, k.groups);
  return dw;
}

std::vector<float> randomGradient(const ConvCase &k, uint32_t seed) {
  return randomVector(size_t(k.n * k.oc * k.oh() * k.ow()), seed);
}

TEST(Conv2DBackward, DataMatchesReference) {
  uint32_t seed = 3100;
  for (const ConvCase &k : convCases) {
    SCOPED_TRACE(testing::Message() << k);
    ConvData d(k, seed += 3);
    auto dy = randomGradient(k, seed + 1000);
    EXPECT_TRUE(allClose(runConvBackwardData(k, dy, d.w),
                         referenceConvBackwardData(k, dy, d.w)));
  }
}

TEST(Conv2DBackward, WeightsMatchReference) {
  uint32_t seed = 4100;
  for (const ConvCase &k : convCases) {
    SCOPED_TRACE(testing::Message() << k);
    ConvData d(k, seed += 3);
    auto dy = randomGradient(k, seed + 1000);
    std::vector<float> db;
    // Sums over N x OH x OW products: a little more rounding than forward.
    EXPECT_TRUE(allClose(runConvBackwardWeights(k, d.x, dy, db),
                         referenceConvBackwardWeights(k, d.x, dy), 1e-4, 1e-4));
    if (k.bias)
      EXPECT_TRUE(allClose(db, referenceConvBackwardBias(k, dy), 1e-4, 1e-4));
    else
      EXPECT_TRUE(std::all_of(db.begin(), db.end(),
                              [](float v) { return std::isnan(v); }));
  }
}

/// The _nhwc kernels on the cases' tensors moved to NHWC and OHWI compute
/// what the reference does on NCHW and OIHW, in all three directions.
TEST(Conv2DChannelsLast, MatchesReference) {
  uint32_t seed = 4600;
  for (const ConvCase &k : convCases) {
    SCOPED_TRACE(testing::Message() << k);
    ConvData d(k, seed += 3);
    const int64_t oh = k.oh(), ow = k.ow(), cg = k.c / k.groups;
    auto dy = randomGradient(k, seed + 1000);
    const ChannelsLastConv r = runChannelsLastOnCpu(k, d, dy);
    EXPECT_TRUE(allClose(moveChannels(r.y, k.n, oh, ow, k.oc, true),
                         referenceConv(k, d.x, d.w, d.bias)));
    EXPECT_TRUE(allClose(moveChannels(r.dx, k.n, k.h, k.w, k.c, true),
                         referenceConvBackwardData(k, dy, d.w)));
    EXPECT_TRUE(allClose(moveChannels(r.dw, k.oc, k.kh, k.kw, cg, true),
                         referenceConvBackwardWeights(k, d.x, dy), 1e-4, 1e-4));
    EXPECT_TRUE(allClose(r.db, referenceConvBackwardBias(k, dy), 1e-4, 1e-4));
  }
}

/// The gradients are the adjoints of the forward kernel:
/// <conv(x, w), dy> = <x, dx(dy, w)> = <w, dw(x, dy)>, all in double.
TEST(Conv2DBackward, AdjointOfForward) {
  uint32_t seed = 5100;
  for (ConvCase k : convCases) {
    k.bias = false;
    SCOPED_TRACE(testing::Message() << k);
    ConvData d(k, seed += 3);
    auto dy = randomGradient(k, seed + 1000);
    auto dot = [](const std::vector<float> &a, const std::vector<float> &b) {
      double sum = 0;
      for (size_t i = 0; i < a.size(); ++i)
        sum += double(a[i]) * double(b[i]);
      return sum;
    };
    std::vector<float> db;
    double forward = dot(runConv(k, d.x, d.w, d.bias), dy);
    double data = dot(d.x, runConvBackwardData(k, dy, d.w));
    double weights = dot(d.w, runConvBackwardWeights(k, d.x, dy, db));
    double tolerance = 1e-4 * (1 + std::fabs(forward));
    EXPECT_NEAR(data, forward, tolerance);
    EXPECT_NEAR(weights, forward, tolerance);
  }
}

/// Repeated geometries create no primitive and compute the same; the
/// weights gradient with and without bias are distinct geometries.
TEST(Conv2DBackward, CachedGeometryGivesTheSameResult) {
  ConvCase a{2, 16, 10, 10, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true};
  ConvCase b{1, 16, 6, 6, 16, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 2, false};
  ConvData da(a, 17), dbData(b, 18);
  auto dyA = randomGradient(a, 19), dyB = randomGradient(b, 20);
  std::vector<float> db, dbFirst;
  int64_t before = kernelGeometriesCreatedForTesting();
  std::vector<float> dx = runConvBackwardData(a, dyA, da.w);
  std::vector<float> dw = runConvBackwardWeights(a, da.x, dyA, dbFirst);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 2);
  EXPECT_TRUE(allClose(runConvBackwardData(b, dyB, dbData.w),
                       referenceConvBackwardData(b, dyB, dbData.w)));
  EXPECT_TRUE(allClose(runConvBackwardWeights(b, dbData.x, dyB, db),
                       referenceConvBackwardWeights(b, dbData.x, dyB), 1e-4,
                       1e-4));
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 4);
  EXPECT_EQ(runConvBackwardData(a, dyA, da.w), dx);
  EXPECT_EQ(runConvBackwardWeights(a, da.x, dyA, db), dw);
  EXPECT_EQ(db, dbFirst);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 4);
  EXPECT_TRUE(allClose(dx, referenceConvBackwardData(a, dyA, da.w)));
  EXPECT_TRUE(
      allClose(dw, referenceConvBackwardWeights(a, da.x, dyA), 1e-4, 1e-4));
  ConvCase noBias = a;
  noBias.bias = false;
  EXPECT_TRUE(allClose(runConvBackwardWeights(noBias, da.x, dyA, db),
                       referenceConvBackwardWeights(noBias, da.x, dyA), 1e-4,
                       1e-4));
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 5);
}

//===--- Pooling ----------------------------------------------------------===//

/// Every tap of every window: max over the taps inside the input; averages
/// divide by the taps inside the input, or (include-pad) inside the input
/// extended by the declared padding.
std::vector<double> referencePool(const PoolCase &k,
                                  const std::vector<float> &x) {
  int64_t oh = k.oh(), ow = k.ow();
  std::vector<double> y(size_t(k.n * k.c * oh * ow));
  for (int64_t plane = 0; plane < k.n * k.c; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double max = -INFINITY, sum = 0;
        int64_t inInput = 0, inPadded = 0;
        for (int64_t p = 0; p < k.kh; ++p)
          for (int64_t q = 0; q < k.kw; ++q) {
            int64_t yy = i * k.sh - k.pt + p * k.dh;
            int64_t xx = j * k.sw - k.pl + q * k.dw;
            if (yy >= -k.pt && yy < k.h + k.pb && xx >= -k.pl &&
                xx < k.w + k.pr)
              ++inPadded;
            if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w)
              continue;
            double v = x[(plane * k.h + yy) * k.w + xx];
            max = std::max(max, v);
            sum += v;
            ++inInput;
          }
        double out = k.kind == DTRAIN_RT_POOL_MAX ? max
                     : k.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD
                         ? sum / double(inPadded)
                         : sum / double(inInput);
        y[(plane * oh + i) * ow + j] = out;
      }
  return y;
}

template <typename T>
std::vector<T> runPool(const PoolCase &k, const std::vector<T> &x) {
  std::vector<T> y(outputSize(k), std::numeric_limits<T>::quiet_NaN());
  kernelFor<T>(dtrain_rt_pool2d_f32, dtrain_rt_pool2d_f64)(
      x.data(), y.data(), k.kind, k.n, k.c, k.h, k.w, k.oh(), k.ow(), k.kh,
      k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
  return y;
}

TEST(Pool2D, MatchesReference) {
  uint32_t seed = 500;
  for (const PoolCase &k : poolCases) {
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomVector(inputSize(k), ++seed);
    EXPECT_TRUE(allClose(runPool(k, x), referencePool(k, x)));
  }
}

TEST(Pool2D, CachedGeometryGivesTheSameResult) {
  PoolCase a{kMax, 2, 5, 11, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true};
  PoolCase b{kExclude, 2, 5, 11, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true};
  auto x = randomVector(size_t(2 * 5 * 11 * 11), 3);
  int64_t before = kernelGeometriesCreatedForTesting();
  std::vector<float> first = runPool(a, x);
  EXPECT_TRUE(allClose(first, referencePool(a, x)));
  EXPECT_TRUE(allClose(runPool(b, x), referencePool(b, x)));
  EXPECT_EQ(runPool(a, x), first);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 2);
}

/// The gradient of referencePool: each window's gradient to the first
/// maximal input element in row-major window order (max), or spread over the
/// input elements by the forward's divisor (averages).
std::vector<double> referencePoolBackward(const PoolCase &k,
                                          const std::vector<float> &x,
                                          const std::vector<float> &dy) {
  int64_t oh = k.oh(), ow = k.ow();
  std::vector<double> dx(inputSize(k), 0.0);
  for (int64_t plane = 0; plane < k.n * k.c; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        std::vector<size_t> inside;
        int64_t inPadded = 0;
        for (int64_t p = 0; p < k.kh; ++p)
          for (int64_t q = 0; q < k.kw; ++q) {
            int64_t yy = i * k.sh - k.pt + p * k.dh;
            int64_t xx = j * k.sw - k.pl + q * k.dw;
            if (yy >= -k.pt && yy < k.h + k.pb && xx >= -k.pl &&
                xx < k.w + k.pr)
              ++inPadded;
            if (yy >= 0 && yy < k.h && xx >= 0 && xx < k.w)
              inside.push_back(size_t((plane * k.h + yy) * k.w + xx));
          }
        double g = dy[size_t((plane * oh + i) * ow + j)];
        if (k.kind == DTRAIN_RT_POOL_MAX) {
          size_t best = inside.front();
          for (size_t at : inside)
            if (x[at] > x[best])
              best = at;
          dx[best] += g;
        } else {
          double divisor = k.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD
                               ? double(inPadded)
                               : double(inside.size());
          for (size_t at : inside)
            dx[at] += g / divisor;
        }
      }
  return dx;
}

/// T is deduced from X and DY, float when both are braced lists.
template <typename T = float>
std::vector<T> runPoolBackward(const PoolCase &k, const std::vector<T> &x,
                               const std::vector<T> &dy) {
  std::vector<T> dx(inputSize(k), std::numeric_limits<T>::quiet_NaN());
  // The averages do not read X.
  kernelFor<T>(dtrain_rt_pool2d_backward_f32, dtrain_rt_pool2d_backward_f64)(
      k.kind == DTRAIN_RT_POOL_MAX ? x.data() : nullptr, dy.data(), dx.data(),
      k.kind, k.n, k.c, k.h, k.w, k.oh(), k.ow(), k.kh, k.kw, k.sh, k.sw, k.pt,
      k.pl, k.pb, k.pr, k.dh, k.dw);
  return dx;
}

TEST(Pool2DBackward, MatchesReference) {
  uint32_t seed = 6500;
  for (const PoolCase &k : poolCases) {
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomVector(inputSize(k), ++seed);
    auto dy = randomVector(outputSize(k), seed + 1000);
    EXPECT_TRUE(
        allClose(runPoolBackward(k, x, dy), referencePoolBackward(k, x, dy)));
  }
}

/// The NHWC kernels against the NCHW references, on random inputs and on
/// ties (the first maximum of a window takes the gradient in every
/// channel); forward geometries that oneDNN rejects run on loops.
TEST(Pool2DChannelsLast, MatchesReference) {
  uint32_t seed = 8500;
  for (const PoolCase &k : poolCases) {
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomVector(inputSize(k), ++seed);
    auto dy = randomVector(outputSize(k), seed + 1000);
    std::vector<float> ties = x;
    for (float &v : ties)
      v = std::round(v);
    for (const std::vector<float> &input : {x, ties}) {
      const ChannelsLastPool r = runChannelsLastOnCpu(k, input, dy);
      EXPECT_TRUE(allClose(moveChannels(r.y, k.n, k.oh(), k.ow(), k.c, true),
                           referencePool(k, input)));
      EXPECT_TRUE(allClose(moveChannels(r.dx, k.n, k.h, k.w, k.c, true),
                           referencePoolBackward(k, input, dy)));
    }
  }
}

/// Max pooling over inputs with many ties (a few distinct values, or all
/// equal): the first maximal element of each window takes the gradient.
TEST(Pool2DBackward, MaxTiesGoToTheFirstMaximum) {
  uint32_t seed = 7500;
  for (const PoolCase &k : poolCases) {
    if (k.kind != DTRAIN_RT_POOL_MAX)
      continue;
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomVector(inputSize(k), ++seed);
    for (float &v : x)
      v = std::round(v); // -1, 0 or 1
    auto dy = randomVector(outputSize(k), seed + 1000);
    EXPECT_TRUE(
        allClose(runPoolBackward(k, x, dy), referencePoolBackward(k, x, dy)));
    std::vector<float> flat(x.size(), 0.5f);
    EXPECT_TRUE(allClose(runPoolBackward(k, flat, dy),
                         referencePoolBackward(k, flat, dy)));
  }
  // One 2x2 window of equal values: all to the top-left element.
  PoolCase one{kMax, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, false};
  std::vector<float> dx = runPoolBackward(one, {3, 3, 3, 3}, {1.5f});
  EXPECT_EQ(dx, (std::vector<float>{1.5f, 0, 0, 0}));
  // A NaN is maximal: the first one takes the gradient.
  float nan = std::numeric_limits<float>::quiet_NaN();
  dx = runPoolBackward(one, {1, nan, 3, nan}, {1.5f});
  EXPECT_EQ(dx, (std::vector<float>{0, 1.5f, 0, 0}));
  // The same through the 2x2 stride-2 path (disjoint windows).
  PoolCase tiledOne{kMax, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false};
  EXPECT_EQ(runPoolBackward(tiledOne, {3, 3, 3, 3}, {1.5f}),
            (std::vector<float>{1.5f, 0, 0, 0}));
  EXPECT_EQ(runPoolBackward(tiledOne, {1, nan, 3, nan}, {1.5f}),
            (std::vector<float>{0, 1.5f, 0, 0}));
  EXPECT_EQ(runPoolBackward(tiledOne, {1, 2, nan, 4}, {1.5f}),
            (std::vector<float>{0, 0, 1.5f, 0}));
  EXPECT_EQ(runPoolBackward(tiledOne, {1, 2, 4, 4}, {1.5f}),
            (std::vector<float>{0, 0, 1.5f, 0}));
  EXPECT_EQ(runPoolBackward(tiledOne, {1, 2, 3, 4}, {1.5f}),
            (std::vector<float>{0, 0, 0, 1.5f}));
  // Several planes and windows, ties, and an odd last row and column,
  // which get no gradient.
  PoolCase tiled{kMax, 2, 3, 5, 7, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false};
  auto ties = randomVector(size_t(2 * 3 * 5 * 7), 7700);
  for (float &v : ties)
    v = std::round(v);
  auto dyTiled = randomVector(size_t(2 * 3 * 2 * 3), 7701);
  EXPECT_TRUE(allClose(runPoolBackward(tiled, ties, dyTiled),
                       referencePoolBackward(tiled, ties, dyTiled)));
  // Padding never wins, even over negative inputs.
  PoolCase padded{kMax, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false};
  dx = runPoolBackward(padded, {-4}, {2});
  EXPECT_EQ(dx, (std::vector<float>{2}));
}

/// The gradient is the adjoint of the forward kernel (average pooling is
/// linear): <pool(x), dy> = <x, pool_backward(dy)>.
TEST(Pool2DBackward, AverageIsAdjointOfForward) {
  uint32_t seed = 8500;
  for (const PoolCase &k : poolCases) {
    if (k.kind == DTRAIN_RT_POOL_MAX)
      continue;
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomVector(inputSize(k), ++seed);
    auto dy = randomVector(outputSize(k), seed + 1000);
    std::vector<float> y = runPool(k, x), dx = runPoolBackward(k, x, dy);
    double forward = 0, backward = 0;
    for (size_t i = 0; i < y.size(); ++i)
      forward += double(y[i]) * dy[i];
    for (size_t i = 0; i < x.size(); ++i)
      backward += double(x[i]) * dx[i];
    EXPECT_NEAR(backward, forward, 1e-4 * (1 + std::fabs(forward)));
  }
}

//===--- Batch normalization ----------------------------------------------===//

/// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c].
std::vector<double> referenceNormalize(const BatchNormCase &k,
                                       const BatchNormData &d,
                                       const std::vector<double> &mean,
                                       const std::vector<double> &var) {
  std::vector<double> y(d.x.size());
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t s = 0; s < k.spatial; ++s) {
        size_t i = size_t((n * k.c + c) * k.spatial + s);
        y[i] = (d.x[i] - mean[c]) / std::sqrt(var[c] + double(k.epsilon)) *
                   d.scale[c] +
               d.bias[c];
      }
  return y;
}

TEST(BatchNorm, InferenceMatchesReference) {
  uint32_t seed = 900;
  for (const BatchNormCase &k : batchNormCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    BatchNormData d(k, seed += 5);
    std::vector<float> y(d.x.size(), std::numeric_limits<float>::quiet_NaN());
    dtrain_rt_batch_norm_f32(d.x.data(), d.scale.data(), d.bias.data(),
                             d.mean.data(), d.var.data(), y.data(), k.n, k.c,
                             k.spatial, k.epsilon);
    std::vector<double> mean(d.mean.begin(), d.mean.end());
    std::vector<double> var(d.var.begin(), d.var.end());
    EXPECT_TRUE(allClose(y, referenceNormalize(k, d, mean, var)));
  }
}

TEST(BatchNorm, TrainingMatchesReference) {
  uint32_t seed = 1900;
  for (const BatchNormCase &k : batchNormCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    BatchNormData d(k, seed += 5);
    // The batch statistics over N x SPATIAL values; the variance is biased.
    std::vector<double> mean(size_t(k.c)), var(size_t(k.c));
    double count = double(k.n * k.spatial);
    for (int64_t c = 0; c < k.c; ++c) {
      for (int64_t n = 0; n < k.n; ++n)
        for (int64_t s = 0; s < k.spatial; ++s)
          mean[c] += d.x[(n * k.c + c) * k.spatial + s];
      mean[c] /= count;
      for (int64_t n = 0; n < k.n; ++n)
        for (int64_t s = 0; s < k.spatial; ++s) {
          double dev = d.x[(n * k.c + c) * k.spatial + s] - mean[c];
          var[c] += dev * dev;
        }
      var[c] /= count;
    }
    std::vector<float> y(d.x.size(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> batchMean(size_t(k.c), NAN), batchVar(size_t(k.c), NAN);
    dtrain_rt_batch_norm_train_f32(d.x.data(), d.scale.data(), d.bias.data(),
                                   y.data(), batchMean.data(), batchVar.data(),
                                   k.n, k.c, k.spatial, k.epsilon);
    EXPECT_TRUE(allClose(batchMean, mean));
    EXPECT_TRUE(allClose(batchVar, var));
    EXPECT_TRUE(allClose(y, referenceNormalize(k, d, mean, var)));
  }
}

/// Inference and training of one shape, and two epsilons, are distinct
/// geometries; repeating one creates nothing.
TEST(BatchNorm, CachedGeometry) {
  BatchNormCase k{2, 7, 5, 1e-5f};
  BatchNormData d(k, 77);
  std::vector<float> y1(d.x.size()), y2(d.x.size()), mean(7), var(7);
  int64_t before = kernelGeometriesCreatedForTesting();
  dtrain_rt_batch_norm_f32(d.x.data(), d.scale.data(), d.bias.data(),
                           d.mean.data(), d.var.data(), y1.data(), 2, 7, 5,
                           1e-5f);
  dtrain_rt_batch_norm_train_f32(d.x.data(), d.scale.data(), d.bias.data(),
                                 y2.data(), mean.data(), var.data(), 2, 7, 5,
                                 1e-5f);
  dtrain_rt_batch_norm_f32(d.x.data(), d.scale.data(), d.bias.data(),
                           d.mean.data(), d.var.data(), y2.data(), 2, 7, 5,
                           1e-3f);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 3);
  dtrain_rt_batch_norm_f32(d.x.data(), d.scale.data(), d.bias.data(),
                           d.mean.data(), d.var.data(), y2.data(), 2, 7, 5,
                           1e-5f);
  EXPECT_EQ(y2, y1);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 3);
}

/// The textbook gradient of training batch norm, in double, from the batch
/// statistics given (as the kernel gets them from the forward):
/// xhat = (x - mean) / sqrt(var + eps), dbias = sum(dy),
/// dscale = sum(dy * xhat), dx = scale / sqrt(var + eps) *
/// (dy - mean(dy) - xhat * mean(dy * xhat)).
struct BatchNormGradients {
  std::vector<double> dx, dscale, dbias;
};

BatchNormGradients referenceBatchNormBackward(const BatchNormCase &k,
                                              const std::vector<float> &x,
                                              const std::vector<float> &dy,
                                              const std::vector<float> &scale,
                                              const std::vector<float> &mean,
                                              const std::vector<float> &var) {
  BatchNormGradients g{std::vector<double>(x.size()),
                       std::vector<double>(size_t(k.c), 0.0),
                       std::vector<double>(size_t(k.c), 0.0)};
  double count = double(k.n * k.spatial);
  auto at = [&](int64_t n, int64_t c, int64_t s) {
    return size_t((n * k.c + c) * k.spatial + s);
  };
  for (int64_t c = 0; c < k.c; ++c) {
    double invStd = 1.0 / std::sqrt(double(var[c]) + double(k.epsilon));
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t s = 0; s < k.spatial; ++s) {
        double xhat = (x[at(n, c, s)] - double(mean[c])) * invStd;
        g.dbias[c] += dy[at(n, c, s)];
        g.dscale[c] += dy[at(n, c, s)] * xhat;
      }
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t s = 0; s < k.spatial; ++s) {
        double xhat = (x[at(n, c, s)] - double(mean[c])) * invStd;
        g.dx[at(n, c, s)] =
            scale[c] * invStd *
            (dy[at(n, c, s)] - g.dbias[c] / count - xhat * g.dscale[c] / count);
      }
  }
  return g;
}

struct BatchNormBackwardRun {
  std::vector<float> dx, dscale, dbias;
};

/// The forward training kernel for the statistics, then the backward one.
BatchNormBackwardRun runBatchNormBackward(const BatchNormCase &k,
                                          const BatchNormData &d,
                                          const std::vector<float> &dy,
                                          std::vector<float> &mean,
                                          std::vector<float> &var) {
  std::vector<float> y(d.x.size());
  mean.assign(size_t(k.c), NAN);
  var.assign(size_t(k.c), NAN);
  dtrain_rt_batch_norm_train_f32(d.x.data(), d.scale.data(), d.bias.data(),
                                 y.data(), mean.data(), var.data(), k.n, k.c,
                                 k.spatial, k.epsilon);
  BatchNormBackwardRun r{std::vector<float>(d.x.size(), NAN),
                         std::vector<float>(size_t(k.c), NAN),
                         std::vector<float>(size_t(k.c), NAN)};
  dtrain_rt_batch_norm_backward_f32(d.x.data(), dy.data(), d.scale.data(),
                                    mean.data(), var.data(), r.dx.data(),
                                    r.dscale.data(), r.dbias.data(), k.n, k.c,
                                    k.spatial, k.epsilon);
  return r;
}

TEST(BatchNorm, BackwardMatchesReference) {
  uint32_t seed = 2900;
  for (const BatchNormCase &k : batchNormCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    BatchNormData d(k, seed += 5);
    auto dy = randomVector(d.x.size(), seed + 1000);
    std::vector<float> mean, var;
    BatchNormBackwardRun r = runBatchNormBackward(k, d, dy, mean, var);
    BatchNormGradients g =
        referenceBatchNormBackward(k, d.x, dy, d.scale, mean, var);
    EXPECT_TRUE(allClose(r.dbias, g.dbias));
    EXPECT_TRUE(allClose(r.dscale, g.dscale));
    // dy - mean(dy) - ... cancels: absolute error of the sums' rounding.
    EXPECT_TRUE(allClose(r.dx, g.dx, 1e-4, 1e-4));
  }
}

/// A repeated geometry creates no primitive and computes the same; another
/// epsilon is another geometry.
TEST(BatchNorm, BackwardCachedGeometry) {
  BatchNormCase k{3, 6, 10, 1e-5f};
  BatchNormData d(k, 79);
  auto dy = randomVector(d.x.size(), 80);
  std::vector<float> mean, var;
  runBatchNormBackward(k, d, dy, mean, var); // the forward's geometry
  int64_t before = kernelGeometriesCreatedForTesting();
  BatchNormBackwardRun first = runBatchNormBackward(k, d, dy, mean, var);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before);
  BatchNormCase other = k;
  other.epsilon = 1e-3f;
  std::vector<float> otherMean, otherVar;
  runBatchNormBackward(other, d, dy, otherMean, otherVar);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 2);
  BatchNormBackwardRun again = runBatchNormBackward(k, d, dy, mean, var);
  EXPECT_EQ(again.dx, first.dx);
  EXPECT_EQ(again.dscale, first.dscale);
  EXPECT_EQ(again.dbias, first.dbias);
  EXPECT_EQ(kernelGeometriesCreatedForTesting(), before + 2);
}

//===--- float64 reference kernels ----------------------------------------===//

std::vector<double> randomDoubles(size_t count, uint32_t seed, double lo = -1.0,
                                  double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(count);
  for (double &x : v)
    x = dist(rng);
  return v;
}

/// The f32 kernels' inputs: the f64 ones, rounded.
std::vector<float> rounded(const std::vector<double> &v) {
  return std::vector<float>(v.begin(), v.end());
}

/// The derivatives of the linear functional L(v) = sum(R * FORWARD()) with
/// respect to every element of V (which FORWARD reads), as central
/// differences with h = 1e-6. The outputs are subtracted before the sum
/// with R, so that the rounding error of L, which the division by 2h would
/// magnify, stays out.
template <typename Forward>
std::vector<double> finiteDifferences(std::vector<double> &v,
                                      const std::vector<double> &r,
                                      Forward forward) {
  const double h = 1e-6;
  std::vector<double> gradient(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    double saved = v[i], up = saved + h, down = saved - h;
    v[i] = up;
    std::vector<double> plus = forward();
    v[i] = down;
    std::vector<double> minus = forward();
    v[i] = saved;
    double sum = 0;
    for (size_t j = 0; j < r.size(); ++j)
      sum += r[j] * (plus[j] - minus[j]);
    gradient[i] = sum / (up - down);
  }
  return gradient;
}

/// Finite differences against the kernel's gradient: rtol 1e-6, and an
/// atol for the components near 0, since each output difference carries a
/// rounding error of about 1e-16 |y|, which the division by 2h makes 1e-10
/// |y| (the worst seen here is 4e-9).
::testing::AssertionResult
matchesFiniteDifferences(const std::vector<double> &differences,
                         const std::vector<double> &kernel) {
  return allClose(differences, kernel, 1e-6, 1e-8);
}

/// The finite-difference checks call the forward kernel twice per input
/// element: the larger geometries of the tables are left to the other
/// tests.
constexpr size_t kMaxFiniteDifferenceInputs = 2000;

TEST(MatmulF64, MatchesF32) {
  uint32_t seed = 10001;
  for (const MatmulCase &mc : matmulCases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (double beta : {0.0, 1.0, 0.5}) {
          SCOPED_TRACE(testing::Message()
                       << "m=" << mc.m << " n=" << mc.n << " k=" << mc.k
                       << " ta=" << ta << " tb=" << tb << " beta=" << beta);
          auto a = randomDoubles(size_t(mc.m * mc.k), seed++);
          auto b = randomDoubles(size_t(mc.k * mc.n), seed++);
          auto c = randomDoubles(size_t(mc.m * mc.n), seed++);
          if (beta == 0) // must be ignored, NaN included
            std::fill(c.begin(), c.end(), NAN);
          std::vector<float> a32 = rounded(a), b32 = rounded(b),
                             c32 = rounded(c);
          dtrain_rt_matmul_f32(a32.data(), b32.data(), c32.data(), mc.m, mc.n,
                               mc.k, ta, tb, float(beta));
          dtrain_rt_matmul_f64(a.data(), b.data(), c.data(), mc.m, mc.n, mc.k,
                               ta, tb, beta);
          EXPECT_TRUE(allClose(c32, c));
        }
}

struct ConvData64 {
  std::vector<double> x, w, bias;
  ConvData64(const ConvCase &k, uint32_t seed)
      : x(randomDoubles(size_t(k.n * k.c * k.h * k.w), seed)),
        w(randomDoubles(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw),
                        seed + 1)),
        bias(randomDoubles(size_t(k.oc), seed + 2)) {}
};

TEST(Conv2DF64, MatchesF32) {
  uint32_t seed = 11000;
  for (const ConvCase &k : convCases) {
    SCOPED_TRACE(testing::Message() << k);
    ConvData64 d(k, seed += 4);
    auto dy = randomDoubles(size_t(k.n * k.oc * k.oh() * k.ow()), seed + 3);
    std::vector<float> x32 = rounded(d.x), w32 = rounded(d.w),
                       bias32 = rounded(d.bias), dy32 = rounded(dy);
    EXPECT_TRUE(
        allClose(runConv(k, x32, w32, bias32), runConv(k, d.x, d.w, d.bias)));
    EXPECT_TRUE(allClose(runConvBackwardData(k, dy32, w32),
                         runConvBackwardData(k, dy, d.w)));
    std::vector<float> db32;
    std::vector<double> db;
    EXPECT_TRUE(allClose(runConvBackwardWeights(k, x32, dy32, db32),
                         runConvBackwardWeights(k, d.x, dy, db)));
    if (k.bias)
      EXPECT_TRUE(allClose(db32, db));
    else
      EXPECT_TRUE(std::all_of(db.begin(), db.end(),
                              [](double v) { return std::isnan(v); }));
  }
}

/// Two groups of one channel each, stride 2, padding 1 on every side, a
/// 2x2 kernel: every input element lies under exactly one tap, so every
/// value below is a sum of a few products, computed by hand.
TEST(Conv2DF64, HandComputed) {
  ConvCase k{1, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 2, true};
  ASSERT_EQ(k.oh(), 2);
  ASSERT_EQ(k.ow(), 2);
  std::vector<double> x = {1,  2,  3,  4,  5,  6,  7,  8,  9,
                           10, 11, 12, 13, 14, 15, 16, 17, 18};
  std::vector<double> w = {1, 2, 3, 4, 1, 0, 0, -1}, bias = {0.5, -1};
  EXPECT_EQ(runConv(k, x, w, bias),
            (std::vector<double>{4.5, 18.5, 36.5, 77.5, -11, -13, -17, -5}));
  std::vector<double> dy = {1, 2, 3, 4, -1, 1, 2, 0};
  EXPECT_EQ(runConvBackwardData(k, dy, w),
            (std::vector<double>{4, 6, 8, 6, 4, 8, 12, 12, 16, 1, 0, -1, 0, 0,
                                 0, -2, 0, 0}));
  std::vector<double> db;
  EXPECT_EQ(runConvBackwardWeights(k, x, dy, db),
            (std::vector<double>{20, 36, 36, 64, 0, 26, 11, 34}));
  EXPECT_EQ(db, (std::vector<double>{10, 2}));
}

TEST(Conv2DF64, GradientsAreFiniteDifferences) {
  uint32_t seed = 12000;
  for (const ConvCase &k : convCases) {
    ConvData64 d(k, seed += 4);
    if (d.x.size() > kMaxFiniteDifferenceInputs)
      continue;
    SCOPED_TRACE(testing::Message() << k);
    auto r = randomDoubles(size_t(k.n * k.oc * k.oh() * k.ow()), seed + 3);
    auto forward = [&] { return runConv(k, d.x, d.w, d.bias); };
    EXPECT_TRUE(matchesFiniteDifferences(finiteDifferences(d.x, r, forward),
                                         runConvBackwardData(k, r, d.w)));
    std::vector<double> db;
    EXPECT_TRUE(
        matchesFiniteDifferences(finiteDifferences(d.w, r, forward),
                                 runConvBackwardWeights(k, d.x, r, db)));
    if (k.bias) {
      EXPECT_TRUE(
          matchesFiniteDifferences(finiteDifferences(d.bias, r, forward), db));
    }
  }
}

TEST(Pool2DF64, MatchesF32) {
  uint32_t seed = 13000;
  for (const PoolCase &k : poolCases) {
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomDoubles(inputSize(k), ++seed);
    auto dy = randomDoubles(outputSize(k), seed + 1000);
    std::vector<float> x32 = rounded(x), dy32 = rounded(dy);
    EXPECT_TRUE(allClose(runPool(k, x32), runPool(k, x)));
    EXPECT_TRUE(
        allClose(runPoolBackward(k, x32, dy32), runPoolBackward(k, x, dy)));
  }
}

/// Max pooling's gradient is a finite difference away from ties only: the
/// inputs of max pooling are distinct multiples of 1e-3 in random order, far
/// apart next to h.
TEST(Pool2DF64, GradientsAreFiniteDifferences) {
  uint32_t seed = 14000;
  for (const PoolCase &k : poolCases) {
    size_t size = inputSize(k);
    if (size > kMaxFiniteDifferenceInputs)
      continue;
    SCOPED_TRACE(testing::Message() << k);
    auto x = randomDoubles(size, ++seed);
    if (k.kind == DTRAIN_RT_POOL_MAX) {
      std::vector<size_t> order(size);
      for (size_t i = 0; i < size; ++i)
        order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(seed));
      for (size_t i = 0; i < size; ++i)
        x[i] = (double(order[i]) - double(size) / 2) * 1e-3;
    }
    auto r = randomDoubles(outputSize(k), seed + 1000);
    EXPECT_TRUE(matchesFiniteDifferences(
        finiteDifferences(x, r, [&] { return runPool(k, x); }),
        runPoolBackward(k, x, r)));
  }
}

struct BatchNormData64 {
  std::vector<double> x, scale, bias, mean, var;
  BatchNormData64(const BatchNormCase &k, uint32_t seed)
      : x(randomDoubles(size_t(k.n * k.c * k.spatial), seed, -1.0, 3.0)),
        scale(randomDoubles(size_t(k.c), seed + 1, 0.5, 1.5)),
        bias(randomDoubles(size_t(k.c), seed + 2)),
        mean(randomDoubles(size_t(k.c), seed + 3)),
        var(randomDoubles(size_t(k.c), seed + 4, 0.1, 2.0)) {}
};

/// The outputs of the training forward and of the backward kernel.
template <typename T> struct BatchNormTrainRun {
  std::vector<T> y, mean, var, dx, dscale, dbias;
};

template <typename T>
BatchNormTrainRun<T>
runBatchNormTrain(const BatchNormCase &k, const std::vector<T> &x,
                  const std::vector<T> &scale, const std::vector<T> &bias,
                  const std::vector<T> &dy) {
  T nan = std::numeric_limits<T>::quiet_NaN();
  size_t channels = size_t(k.c);
  BatchNormTrainRun<T> r{
      std::vector<T>(x.size(), nan), std::vector<T>(channels, nan),
      std::vector<T>(channels, nan), std::vector<T>(x.size(), nan),
      std::vector<T>(channels, nan), std::vector<T>(channels, nan)};
  kernelFor<T>(dtrain_rt_batch_norm_train_f32, dtrain_rt_batch_norm_train_f64)(
      x.data(), scale.data(), bias.data(), r.y.data(), r.mean.data(),
      r.var.data(), k.n, k.c, k.spatial, T(k.epsilon));
  kernelFor<T>(dtrain_rt_batch_norm_backward_f32,
               dtrain_rt_batch_norm_backward_f64)(
      x.data(), dy.data(), scale.data(), r.mean.data(), r.var.data(),
      r.dx.data(), r.dscale.data(), r.dbias.data(), k.n, k.c, k.spatial,
      T(k.epsilon));
  return r;
}

TEST(BatchNormF64, MatchesF32) {
  uint32_t seed = 15000;
  for (const BatchNormCase &k : batchNormCases) {
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    BatchNormData64 d(k, seed += 6);
    auto dy = randomDoubles(d.x.size(), seed + 5);
    std::vector<float> x32 = rounded(d.x), scale32 = rounded(d.scale),
                       bias32 = rounded(d.bias), mean32 = rounded(d.mean),
                       var32 = rounded(d.var);
    std::vector<float> y32(d.x.size(), NAN);
    std::vector<double> y(d.x.size(), NAN);
    dtrain_rt_batch_norm_f32(x32.data(), scale32.data(), bias32.data(),
                             mean32.data(), var32.data(), y32.data(), k.n, k.c,
                             k.spatial, k.epsilon);
    dtrain_rt_batch_norm_f64(d.x.data(), d.scale.data(), d.bias.data(),
                             d.mean.data(), d.var.data(), y.data(), k.n, k.c,
                             k.spatial, k.epsilon);
    EXPECT_TRUE(allClose(y32, y));

    BatchNormTrainRun<float> r32 =
        runBatchNormTrain(k, x32, scale32, bias32, rounded(dy));
    BatchNormTrainRun<double> r =
        runBatchNormTrain(k, d.x, d.scale, d.bias, dy);
    EXPECT_TRUE(allClose(r32.y, r.y));
    EXPECT_TRUE(allClose(r32.mean, r.mean));
    EXPECT_TRUE(allClose(r32.var, r.var));
    EXPECT_TRUE(allClose(r32.dx, r.dx));
    EXPECT_TRUE(allClose(r32.dscale, r.dscale));
    EXPECT_TRUE(allClose(r32.dbias, r.dbias));
  }
}

/// Two channels of four values whose variances plus epsilon are 4: every
/// intermediate value is a short binary fraction, so the results are exact.
TEST(BatchNormF64, HandComputed) {
  BatchNormCase k{2, 2, 2, 2.0f};
  // Channel 0 holds 1, 3, 3, 5 (mean 3, variance 2), channel 1 holds
  // 10, 8, 12, 10 (mean 10, variance 2).
  std::vector<double> x = {1, 3, 10, 8, 3, 5, 12, 10};
  std::vector<double> scale = {4, 1}, bias = {1, -1};
  std::vector<double> dy = {1, 2, 4, 0, 3, 6, -2, 2};
  BatchNormTrainRun<double> r = runBatchNormTrain(k, x, scale, bias, dy);
  EXPECT_EQ(r.mean, (std::vector<double>{3, 10}));
  EXPECT_EQ(r.var, (std::vector<double>{2, 2}));
  EXPECT_EQ(r.y, (std::vector<double>{-3, 1, -1, -2, 1, 5, 0, -1}));
  EXPECT_EQ(r.dbias, (std::vector<double>{12, 4}));
  EXPECT_EQ(r.dscale, (std::vector<double>{5, -2}));
  EXPECT_EQ(r.dx,
            (std::vector<double>{-1.5, -2, 1.5, -0.75, 0, 3.5, -1.25, 0.5}));
}

/// The gradient of training batch norm (through the batch statistics) with
/// respect to X, SCALE and BIAS.
TEST(BatchNormF64, GradientsAreFiniteDifferences) {
  uint32_t seed = 16000;
  for (const BatchNormCase &k : batchNormCases) {
    BatchNormData64 d(k, seed += 6);
    if (d.x.size() > kMaxFiniteDifferenceInputs)
      continue;
    SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.spatial
                                    << " epsilon " << k.epsilon);
    auto r = randomDoubles(d.x.size(), seed + 5);
    BatchNormTrainRun<double> run =
        runBatchNormTrain(k, d.x, d.scale, d.bias, r);
    auto forward = [&] {
      std::vector<double> y(d.x.size()), mean(size_t(k.c)), var(size_t(k.c));
      dtrain_rt_batch_norm_train_f64(d.x.data(), d.scale.data(), d.bias.data(),
                                     y.data(), mean.data(), var.data(), k.n,
                                     k.c, k.spatial, k.epsilon);
      return y;
    };
    EXPECT_TRUE(
        matchesFiniteDifferences(finiteDifferences(d.x, r, forward), run.dx));
    EXPECT_TRUE(matchesFiniteDifferences(finiteDifferences(d.scale, r, forward),
                                         run.dscale));
    EXPECT_TRUE(matchesFiniteDifferences(finiteDifferences(d.bias, r, forward),
                                         run.dbias));
  }
}

//===--- Embedding gradient -----------------------------------------------===//

/// The embedding gradient as its definition reads: a zero table, then each
/// index's row of GRAD added, index after index, to the row it picks
/// (wrapped once if negative, then clamped).
template <typename T>
std::vector<T> referenceEmbeddingGrad(const std::vector<T> &grad,
                                      const std::vector<int64_t> &indices,
                                      int64_t rows, int64_t width) {
  std::vector<T> table(size_t(rows * width), T(0));
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t row = indices[i] < 0 ? indices[i] + rows : indices[i];
    row = std::min(std::max<int64_t>(row, 0), rows - 1);
    for (int64_t j = 0; j < width; ++j)
      table[size_t(row * width + j)] += grad[i * size_t(width) + size_t(j)];
  }
  return table;
}

/// OUT as the kernel of T leaves it, from a table of NaN (every element
/// must be written).
template <typename T>
std::vector<T> runEmbeddingGrad(const std::vector<T> &grad,
                                const std::vector<int64_t> &indices,
                                int64_t rows, int64_t width) {
  std::vector<T> out(size_t(rows * width), std::numeric_limits<T>::quiet_NaN());
  kernelFor<T>(dtrain_rt_embedding_grad_f32, dtrain_rt_embedding_grad_f64)(
      grad.data(), indices.data(), out.data(), int64_t(indices.size()), rows,
      width);
  return out;
}

// Random indices that repeat, wrap (down to -ROWS) and fall outside the
// table on both sides (clamped), over every width, table size and count,
// 0 included; 1100 indices of width 257 run on the kernel's threads. Both
// kernels add in index order, as the reference does: the same bits.
TEST(EmbeddingGrad, MatchesAHandWrittenLoopBitForBit) {
  uint32_t seed = 17000;
  for (int64_t width : {1, 3, 64, 257})
    for (int64_t rows : {1, 5, 100})
      for (int64_t count : {0, 1, 7, 1100}) {
        SCOPED_TRACE(testing::Message() << "count=" << count << " rows=" << rows
                                        << " width=" << width);
        std::mt19937 rng(seed++);
        std::uniform_int_distribution<int64_t> pick(-2 * rows - 3,
                                                    2 * rows + 3);
        std::vector<int64_t> indices(static_cast<size_t>(count));
        for (int64_t &index : indices)
          index = pick(rng);
        const std::vector<double> grad64 =
            randomDoubles(size_t(count * width), seed++);
        const std::vector<float> grad = rounded(grad64);
        EXPECT_EQ(runEmbeddingGrad(grad, indices, rows, width),
                  referenceEmbeddingGrad(grad, indices, rows, width));
        EXPECT_EQ(runEmbeddingGrad(grad64, indices, rows, width),
                  referenceEmbeddingGrad(grad64, indices, rows, width));
      }
}

// Rows 3, width 2: row 2 gets GRAD's rows 0, 2 and 3 (index -1 wraps to
// 2), row 0 its row 1, row 1 nothing.
TEST(EmbeddingGrad, HandComputed) {
  const std::vector<int64_t> indices = {2, 0, 2, -1};
  const std::vector<double> grad64 = {1, 2, 10, 20, 100, 200, 1000, 2000};
  const std::vector<double> expected = {10, 20, 0, 0, 1101, 2202};
  EXPECT_EQ(runEmbeddingGrad(grad64, indices, 3, 2), expected);
  EXPECT_EQ(runEmbeddingGrad(rounded(grad64), indices, 3, 2),
            rounded(expected));
}

// Out of range on both sides: 7 and 3 clamp to row 2; -9 wraps to -6 and
// -3 to 0, both clamped to row 0.
TEST(EmbeddingGrad, OutOfRangeIndicesAreClamped) {
  const std::vector<int64_t> indices = {7, -9, -3, 3};
  const std::vector<double> grad64 = {1, 2, 4, 8};
  EXPECT_EQ(runEmbeddingGrad(grad64, indices, 3, 1),
            (std::vector<double>{6, 0, 9}));
  EXPECT_EQ(runEmbeddingGrad(rounded(grad64), indices, 3, 1),
            (std::vector<float>{6, 0, 9}));
}

// No indices: OUT is zeroed, and GRAD and INDICES may be NULL; so may every
// pointer when OUT is empty.
TEST(EmbeddingGrad, EmptyOperandsMayBeNull) {
  float out[4] = {NAN, NAN, NAN, NAN};
  dtrain_rt_embedding_grad_f32(nullptr, nullptr, out, 0, 2, 2);
  EXPECT_EQ(std::vector<float>(out, out + 4), std::vector<float>(4, 0.0f));
  double out64[3] = {NAN, NAN, NAN};
  dtrain_rt_embedding_grad_f64(nullptr, nullptr, out64, 0, 3, 1);
  EXPECT_EQ(std::vector<double>(out64, out64 + 3), std::vector<double>(3, 0.0));
  dtrain_rt_embedding_grad_f32(nullptr, nullptr, nullptr, 5, 3, 0);
  dtrain_rt_embedding_grad_f64(nullptr, nullptr, nullptr, 0, 0, 4);
}

//===--- Invalid calls (run as separate processes by ctest) ---------------===//

/// Makes the invalid call NAME, which must abort; false where NAME is
/// unknown.
bool makeInvalidCall(const std::string &name) {
  std::vector<float> x(64 * 64), y(64 * 64), w(64 * 64);
  std::vector<double> x64(64 * 64), y64(64 * 64), w64(64 * 64);
  std::vector<int64_t> indices(64);
  if (name == "conv-output") // 8x8, 3x3, stride 1, no padding gives 6x6
    dtrain_rt_conv2d_f32(x.data(), w.data(), nullptr, y.data(), 1, 2, 8, 8, 2,
                         3, 3, 6, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  else if (name == "conv-groups")
    dtrain_rt_conv2d_f32(x.data(), w.data(), nullptr, y.data(), 1, 6, 8, 8, 4,
                         3, 3, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 4);
  else if (name == "pool-output") // floor 3x3, ceil 4x4
    dtrain_rt_pool2d_f32(x.data(), y.data(), DTRAIN_RT_POOL_MAX, 1, 1, 8, 8, 4,
                         3, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1);
  else if (name == "pool-ceil-rule") // ceil's last window would start past
    dtrain_rt_pool2d_f32(x.data(), y.data(), DTRAIN_RT_POOL_MAX, 1, 1, 3, 3, 3,
                         3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  else if (name == "pool-empty-window") // the first window is all padding
    dtrain_rt_pool2d_f32(x.data(), y.data(), DTRAIN_RT_POOL_MAX, 1, 1, 4, 4, 4,
                         4, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1);
  else if (name == "conv-backward-data-output") // gives 6x6
    dtrain_rt_conv2d_backward_data_f32(y.data(), w.data(), x.data(), 1, 2, 8, 8,
                                       2, 3, 3, 7, 6, 1, 1, 0, 0, 0, 0, 1, 1,
                                       1);
  else if (name == "conv-backward-weights-groups")
    dtrain_rt_conv2d_backward_weights_f32(x.data(), y.data(), w.data(), nullptr,
                                          1, 6, 8, 8, 4, 3, 3, 6, 6, 1, 1, 0, 0,
                                          0, 0, 1, 1, 4);
  else if (name == "pool-backward-max-null-x") // max needs X
    dtrain_rt_pool2d_backward_f32(nullptr, y.data(), x.data(),
                                  DTRAIN_RT_POOL_MAX, 1, 1, 8, 8, 4, 4, 2, 2, 2,
                                  2, 0, 0, 0, 0, 1, 1);
  else if (name == "pool-backward-nhwc-pixels") // 46341^2 > INT32_MAX
    dtrain_rt_pool2d_backward_nhwc_f32(
        x.data(), y.data(), w.data(), DTRAIN_RT_POOL_MAX, 1, 1, 46341, 46341,
        46341, 46341, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1);
  else if (name == "pool-backward-ceil-rule")
    dtrain_rt_pool2d_backward_f32(x.data(), y.data(), w.data(),
                                  DTRAIN_RT_POOL_AVG_INCLUDE_PAD, 1, 1, 3, 3, 3,
                                  3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  else if (name == "batch-norm-backward-epsilon")
    dtrain_rt_batch_norm_backward_f32(x.data(), y.data(), w.data(), w.data(),
                                      w.data(), x.data(), y.data(), w.data(), 2,
                                      3, 4, -1e-5f);
  else if (name == "matmul-size")
    dtrain_rt_matmul_f32(x.data(), w.data(), y.data(), 4, -1, 4, 0, 0, 0.0f);
  else if (name == "embedding-grad-count")
    dtrain_rt_embedding_grad_f32(x.data(), indices.data(), y.data(), -1, 4, 4);
  else if (name == "embedding-grad-no-rows") // indices, but no row to pick
    dtrain_rt_embedding_grad_f32(x.data(), indices.data(), y.data(), 2, 0, 4);
  // The f64 kernels share the checks; the messages name them.
  else if (name == "conv-f64-output")
    dtrain_rt_conv2d_f64(x64.data(), w64.data(), nullptr, y64.data(), 1, 2, 8,
                         8, 2, 3, 3, 6, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  else if (name == "pool-backward-f64-ceil-rule")
    dtrain_rt_pool2d_backward_f64(x64.data(), y64.data(), w64.data(),
                                  DTRAIN_RT_POOL_AVG_INCLUDE_PAD, 1, 1, 3, 3, 3,
                                  3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  else if (name == "batch-norm-train-f64-null-mean")
    dtrain_rt_batch_norm_train_f64(x64.data(), w64.data(), w64.data(),
                                   y64.data(), nullptr, w64.data(), 2, 3, 4,
                                   1e-5);
  else if (name == "matmul-f64-size")
    dtrain_rt_matmul_f64(x64.data(), w64.data(), y64.data(), 4, -1, 4, 0, 0,
                         0.0);
  else if (name == "embedding-grad-f64-null-indices")
    dtrain_rt_embedding_grad_f64(x64.data(), nullptr, y64.data(), 2, 4, 4);
  else
    return false;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (std::optional<int> status =
          dtrain::rt::test::runInvalidCall(argc, argv, makeInvalidCall))
    return *status;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
