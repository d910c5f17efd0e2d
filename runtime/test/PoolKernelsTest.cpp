//===- PoolKernelsTest.cpp - the GPU's pooling on the CPU -----------------===//
//
// The arithmetic of the CUDA runtime's pooling kernels (lib/cuda/
// PoolKernels.h, run by DnnKernels.cu) on the CPU, over an emulated grid:
// every element of every plane, in both layouts (NCHW planes of a channel,
// NHWC images of pixels of C channels) and the three float types. Their
// results must match the CPU kernels' as CudaDnnTest.cpp's GPU results
// must; and NHWC must compute NCHW's bits. What only the GPU runs (the
// grid's launch and its 32-bit checks) is tested by CudaDnnTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "cuda/PoolKernels.h"
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

/// What the GPU's pooling kernels compute from case K's X and DY: Y and DX.
/// All four are NCHW; the tensors the kernels see are of TYPE (X and DY
/// rounded to it) and, CHANNELSLAST, NHWC.
struct Pooled {
  std::vector<float> y, dx;
};

template <int32_t Type, bool ChannelsLast>
Pooled emulatePooling(const PoolCase &k, const std::vector<float> &x,
                      const std::vector<float> &dy) {
  const int64_t oh = k.oh(), ow = k.ow();
  const PlaneShape g{
      k.kind,
      ChannelsLast ? k.n : k.n * k.c,
      {int(k.h), int(k.kh), int(k.sh), int(k.pt), int(k.pb), int(k.dh)},
      {int(k.w), int(k.kw), int(k.sw), int(k.pl), int(k.pr), int(k.dw)},
      int(oh),
      int(ow),
      ChannelsLast ? int(k.c) : 1};
  auto layout = [&](const std::vector<float> &t, int64_t h, int64_t w) {
    return ChannelsLast ? moveChannels(t, k.n, k.c, h, w) : t;
  };
  std::vector<float> xIn = layout(x, k.h, k.w), dyIn = layout(dy, oh, ow);
  HostTensor gx(Type, xIn), gdy(Type, dyIn);
  HostTensor gy(Type, dyIn.size()), gdx(Type, xIn.size());
  std::vector<int32_t> argmax(dyIn.size(), -1);
  // The kernels' grid: each element of a plane, in each plane; the argmax
  // kernel finishes before the gradient's starts.
  const int outputs = g.outputs() * g.channels,
            inputs = g.inputs() * g.channels;
  for (int64_t plane = 0; plane < g.planes; ++plane)
    for (int at = 0; at < outputs; ++at) {
      const PlaneElement e = elementOf<ChannelsLast>(g, at);
      const Window w = windowOf(g, e.pixel);
      poolOutputAt<Type, ChannelsLast>(g, w, e, plane, gx.data(), gy.data());
      if (k.kind == DTRAIN_RT_POOL_MAX)
        poolArgmaxAt<Type, ChannelsLast>(g, w, e, plane, gx.data(),
                                         argmax.data());
    }
  for (int64_t plane = 0; plane < g.planes; ++plane)
    for (int at = 0; at < inputs; ++at) {
      const PlaneElement e = elementOf<ChannelsLast>(g, at);
      poolGradientAt<Type, ChannelsLast>(
          g, readersOf(g, e), e, plane,
          k.kind == DTRAIN_RT_POOL_MAX ? argmax.data() : nullptr, gdy.data(),
          gdx.data());
    }
  Pooled r{gy.read(), gdx.read()};
  if (ChannelsLast) {
    r.y = moveChannels(r.y, k.n, oh, ow, k.c, true);
    r.dx = moveChannels(r.dx, k.n, k.h, k.w, k.c, true);
  }
  return r;
}

/// The CPU kernels' Y and DX.
Pooled poolOnCpu(const PoolCase &k, const std::vector<float> &x,
                 const std::vector<float> &dy) {
  const int64_t oh = k.oh(), ow = k.ow();
  Pooled r{std::vector<float>(dy.size()), std::vector<float>(x.size())};
  dtrain_rt_pool2d_f32(x.data(), r.y.data(), k.kind, k.n, k.c, k.h, k.w, oh, ow,
                       k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh,
                       k.dw);
  dtrain_rt_pool2d_backward_f32(x.data(), dy.data(), r.dx.data(), k.kind, k.n,
                                k.c, k.h, k.w, oh, ow, k.kh, k.kw, k.sh, k.sw,
                                k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
  return r;
}

/// X rounded to TYPE.
template <int32_t Type> std::vector<float> rounded(std::vector<float> x) {
  HostTensor roundsX(Type, x);
  return x;
}

// f32 in both layouts against the CPU kernels: random inputs, and ties
// (three values, as after a ReLU), where the first maximum of a window in
// row-major order takes the gradient, as on the CPU, bit for bit.
TEST(PoolKernels, MatchCpu) {
  uint32_t seed = 5100;
  for (const PoolCase &k : allPoolCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const auto x = randomVector(inputSize(k), ++seed);
    const auto dy = randomVector(outputSize(k), seed + 5000);
    auto ties = randomVector(inputSize(k), seed + 7000, 0.0f, 3.0f);
    for (float &v : ties)
      v = std::floor(v);
    const Pooled cpu = poolOnCpu(k, x, dy), cpuTies = poolOnCpu(k, ties, dy);
    for (const Pooled &gpu : {emulatePooling<DTRAIN_RT_F32, false>(k, x, dy),
                              emulatePooling<DTRAIN_RT_F32, true>(k, x, dy)}) {
      EXPECT_TRUE(matchesCpu(gpu.y, cpu.y)) << "y";
      EXPECT_TRUE(matchesCpu(gpu.dx, cpu.dx)) << "dx";
    }
    for (const Pooled &gpu :
         {emulatePooling<DTRAIN_RT_F32, false>(k, ties, dy),
          emulatePooling<DTRAIN_RT_F32, true>(k, ties, dy)}) {
      if (k.kind == kMax) {
        EXPECT_EQ(gpu.y, cpuTies.y) << "y, ties";
        EXPECT_EQ(gpu.dx, cpuTies.dx) << "dx, ties";
      }
    }
  }
}

// bf16 and f16: the CPU kernels on the rounded inputs, within 16-bit
// rounding; NHWC computes NCHW's bits (the same windows, summed in the
// same order).
template <int32_t Type> void checkHalfType(double tolerance) {
  uint32_t seed = 6100;
  for (const PoolCase &k : allPoolCases()) {
    SCOPED_TRACE(testing::Message() << k);
    const auto x = rounded<Type>(randomVector(inputSize(k), ++seed));
    const auto dy = rounded<Type>(randomVector(outputSize(k), seed + 5000));
    const Pooled cpu = poolOnCpu(k, x, dy);
    const Pooled nchw = emulatePooling<Type, false>(k, x, dy);
    const Pooled nhwc = emulatePooling<Type, true>(k, x, dy);
    EXPECT_TRUE(matchesCpu(nchw.y, cpu.y, -1, tolerance)) << "y";
    EXPECT_TRUE(matchesCpu(nchw.dx, cpu.dx, -1, tolerance)) << "dx";
    EXPECT_EQ(nhwc.y, nchw.y) << "y";
    EXPECT_EQ(nhwc.dx, nchw.dx) << "dx";
  }
}

TEST(PoolKernels, BF16) {
  checkHalfType<DTRAIN_RT_BF16>(halfTypes[0].tolerance);
}
TEST(PoolKernels, F16) { checkHalfType<DTRAIN_RT_F16>(halfTypes[1].tolerance); }

// A NaN is a window's maximum, and the first NaN of a window takes its
// gradient, in both layouts.
TEST(PoolKernels, NaNIsTheMaximum) {
  const PoolCase k{kMax, 1, 2, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false};
  auto x = randomVector(inputSize(k), 3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x[3 * 8 + 4] = nan; // plane 0, window (1, 2), its first NaN
  x[3 * 8 + 5] = nan;
  const auto dy = randomVector(outputSize(k), 4);
  for (const Pooled &gpu : {emulatePooling<DTRAIN_RT_F32, false>(k, x, dy),
                            emulatePooling<DTRAIN_RT_F32, true>(k, x, dy)}) {
    EXPECT_TRUE(std::isnan(gpu.y[6]));
    EXPECT_EQ(gpu.dx[3 * 8 + 4], dy[6]);
    EXPECT_EQ(gpu.dx[3 * 8 + 5], 0.0f);
    EXPECT_EQ(gpu.dx, poolOnCpu(k, x, dy).dx);
  }
}

} // namespace
