//===- kernels_bench.cpp - heavy-op kernel timing -------------------------===//
//
//   dtrain-rt-kernels-bench [--iters=N]
//
// Times two kernels through the C ABI, as generated code calls them: a
// 512^3 sgemm and a 3x3 convolution 8x64x56x56 -> 64 with
// padding 1 (oneDNN, NCHW in and out, reorders included). The first call is
// a warm-up (it creates the oneDNN primitive); the median over N calls is
// reported as key=value lines:
//   kernel=K median_ms=T gflops=G
// Both run on oneDNN, on OMP_NUM_THREADS threads.
//
//===----------------------------------------------------------------------===//

#include "dtrain_rt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
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

/// Runs BODY once to warm up, then ITERS times; prints the median.
template <typename Body>
void bench(const char *name, double flops, int iters, Body body) {
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
  std::printf("kernel=%s median_ms=%.3f gflops=%.1f\n", name, median * 1e3,
              flops / median * 1e-9);
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
  bench("sgemm-512", 2.0 * m * m * m, iters, [&] {
    dtrain_rt_matmul_f32(a.data(), b.data(), c.data(), m, m, m, 0, 0, 0.0f);
  });

  const int64_t n = 8, ch = 64, hw = 56, oc = 64;
  std::vector<float> x = randomVector(n * ch * hw * hw),
                     w = randomVector(oc * ch * 9), bias = randomVector(oc),
                     y(n * oc * hw * hw);
  bench("conv3x3-8x64x56x56-64", 2.0 * n * oc * hw * hw * ch * 9, iters, [&] {
    dtrain_rt_conv2d_f32(x.data(), w.data(), bias.data(), y.data(), n, ch, hw,
                         hw, oc, 3, 3, hw, hw, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  });
  return 0;
}
