//===- kernels_bench.cpp - heavy-op kernel timing -------------------------===//
//
//   dtrain-rt-kernels-bench [--iters=N]
//
// Times kernels through the C ABI, as generated code calls them: a 512^3
// sgemm and a 3x3 convolution 8x64x56x56 -> 64 with padding 1 (oneDNN,
// NCHW in and out, reorders included), and resnet's stem max pooling
// (3x3, stride 2, padding 1) of 8x64x112x112 and its gradient, NCHW and
// NHWC, and batch norm in training and its gradient at the same size, NCHW
// and as rows of channels. The first call is a warm-up (it creates the oneDNN
// primitive); the median over N calls is reported as key=value lines:
//   kernel=K median_ms=T gflops=G      (the sgemm and the convolution)
//   kernel=K median_ms=T gbytes_s=B    (pooling, batch norm: its tensors'
//                                       bytes)
// All run on OMP_NUM_THREADS threads (oneDNN's, or the pooling gradients'
// own).
//
//===----------------------------------------------------------------------===//

#include "dtrain_rt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

std::vector<float> randomVector(size_t count) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Runs BODY once to warm up, then ITERS times; prints the median and
/// AMOUNT (flops or bytes) over it, in UNIT (1e9 of them a second).
template <typename Body>
void bench(const char *name, const char *unit, double amount, int iters,
           Body body) {
  body();
  std::vector<double> seconds;
  for (int i = 0; i < iters; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  std::printf("kernel=%s median_ms=%.3f %s=%.1f\n", name, median * 1e3, unit,
              amount / median * 1e-9);
}

} // namespace

int main(int argc, char **argv) {
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--iters=", 8) && std::atoi(argv[i] + 8) > 0) {
      iters = std::atoi(argv[i] + 8);
    } else {
      std::fprintf(stderr, "usage: dtrain-rt-kernels-bench [--iters=N]\n");
      return 2;
    }
  }

  const int64_t m = 512;
  std::vector<float> a = randomVector(m * m), b = randomVector(m * m), c(m * m);
  bench("sgemm-512", "gflops", 2.0 * m * m * m, iters, [&] {
    dtrain_rt_matmul_f32(a.data(), b.data(), c.data(), m, m, m, 0, 0, 0.0f);
  });

  const int64_t n = 8, ch = 64, hw = 56, oc = 64;
  std::vector<float> x = randomVector(n * ch * hw * hw),
                     w = randomVector(oc * ch * 9), bias = randomVector(oc),
                     y(n * oc * hw * hw);
  bench("conv3x3-8x64x56x56-64", "gflops", 2.0 * n * oc * hw * hw * ch * 9,
        iters, [&] {
          dtrain_rt_conv2d_f32(x.data(), w.data(), bias.data(), y.data(), n, ch,
                               hw, hw, oc, 3, 3, hw, hw, 1, 1, 1, 1, 1, 1, 1, 1,
                               1);
        });

  // Pooling reads X (and, backward, DY) and writes Y (DX): bytes moved.
  const int64_t ph = 112, po = 56;
  const size_t inputs = size_t(n * ch * ph * ph),
               outputs = size_t(n * ch * po * po);
  std::vector<float> px = randomVector(inputs), py(outputs),
                     pdy = randomVector(outputs), pdx(inputs);
  const double forwardBytes = 4.0 * double(inputs + outputs),
               backwardBytes = 4.0 * double(2 * inputs + outputs);
  using Pool = decltype(&dtrain_rt_pool2d_f32);
  using PoolBackward = decltype(&dtrain_rt_pool2d_backward_f32);
  const struct {
    const char *layout;
    Pool forward;
    PoolBackward backward;
  } layouts[] = {
      {"nchw", dtrain_rt_pool2d_f32, dtrain_rt_pool2d_backward_f32},
      {"nhwc", dtrain_rt_pool2d_nhwc_f32, dtrain_rt_pool2d_backward_nhwc_f32}};
  for (const auto &l : layouts) {
    const std::string name =
        std::string("maxpool3x3s2-8x64x112x112-") + l.layout;
    bench(name.c_str(), "gbytes_s", forwardBytes, iters, [&] {
      l.forward(px.data(), py.data(), DTRAIN_RT_POOL_MAX, n, ch, ph, ph, po, po,
                3, 3, 2, 2, 1, 1, 1, 1, 1, 1);
    });
    bench((name + "-backward").c_str(), "gbytes_s", backwardBytes, iters, [&] {
      l.backward(px.data(), pdy.data(), pdx.data(), DTRAIN_RT_POOL_MAX, n, ch,
                 ph, ph, po, po, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1);
    });
  }
  // Batch norm in training and its gradient at resnet's stem, 8x64x112x112:
  // NCHW (oneDNN) and rows of channels (a channels-last tensor, the
  // runtime's loops). Bytes moved by one pass over each tensor: forward
  // reads X and writes Y, backward reads X and DY and writes DX.
  const size_t planes = inputs, channels = size_t(ch);
  std::vector<float> bx = randomVector(planes), by(planes),
                     bdy = randomVector(planes), bdx(planes);
  std::vector<float> scale = randomVector(channels),
                     shift = randomVector(channels), mean(channels),
                     var(channels), dscale(channels), dshift(channels);
  const struct {
    const char *layout;
    int64_t images, spatial;
  } norms[] = {{"nchw", n, ph * ph}, {"rows", n * ph * ph, 1}};
  for (const auto &norm : norms) {
    const std::string name =
        std::string("batchnorm-8x64x112x112-") + norm.layout;
    bench(name.c_str(), "gbytes_s", 8.0 * double(planes), iters, [&] {
      dtrain_rt_batch_norm_train_f32(bx.data(), scale.data(), shift.data(),
                                     by.data(), mean.data(), var.data(),
                                     norm.images, ch, norm.spatial, 1e-5f);
    });
    bench((name + "-backward").c_str(), "gbytes_s", 12.0 * double(planes),
          iters, [&] {
            dtrain_rt_batch_norm_backward_f32(
                bx.data(), bdy.data(), scale.data(), mean.data(), var.data(),
                bdx.data(), dscale.data(), dshift.data(), norm.images, ch,
                norm.spatial, 1e-5f);
          });
  }
  return 0;
}
