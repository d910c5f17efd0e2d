//===- cuda_select_bench.cpp - CUDA top-k selection benchmark -------------===//
//
// Times dtrain_rt_cuda_select_f32 (exact and Gaussian-k) on 25M and 100M
// floats at density 0.001: the median and the minimum of several runs
// after a warm-up, by CUDA events around each call (the Gaussian
// selection's host wait included). The data are the selection tests'
// (GradientSamples.h): N(0.001, 0.02), like gradients; Laplace (scale
// 0.02), whose heavier tails make Gaussian-k raise its first threshold;
// uniform on (-0.05, 0.05), whose light tails leave Gaussian-k no
// threshold within its corrections, so that it runs the exact selection
// instead. One key=value line per case:
//   method=gaussian data=gaussian n=25000000 k=25000 selected=24893
//   median_ms=... min_ms=...
// Sizes can be given as arguments (element counts). Without a CUDA device
// it prints why and exits 77.
//
//===----------------------------------------------------------------------===//

#include "GradientSamples.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

using dtrain::rt::test::Distribution;
using dtrain::rt::test::sample;

namespace {

/// Exits with a message naming CALL when a CUDA call failed.
void check(cudaError_t rc, const char *call) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "dtrain-rt-cuda-select-bench: %s failed: %s\n", call,
                 cudaGetErrorString(rc));
    std::exit(1);
  }
}

/// Exits with the library's message when a dtrain_rt_cuda_* call failed.
void checkRt(int rc) {
  if (rc != DTRAIN_RT_CUDA_SUCCESS) {
    std::fprintf(stderr, "dtrain-rt-cuda-select-bench: %s\n",
                 dtrain_rt_cuda_error_message());
    std::exit(1);
  }
}

constexpr double kDensity = 0.001;
constexpr int kRuns = 11;

} // namespace

int main(int argc, char **argv) {
  // The sizes first, so that a bad one is reported with or without a GPU.
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    char *end = nullptr;
    const long long n = std::strtoll(argv[i], &end, 10);
    if (end == argv[i] || *end || n < 1 || n > INT32_MAX) {
      std::fprintf(stderr,
                   "dtrain-rt-cuda-select-bench: '%s' is not a size (an "
                   "element count from 1 to 2^31-1)\n",
                   argv[i]);
      return 1;
    }
    sizes.push_back(n);
  }
  if (sizes.empty())
    sizes = {25000000, 100000000};

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped (the benchmark needs a GPU)\n");
    return 77;
  }
  cudaDeviceProp properties;
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  std::printf("device=\"%s\" runs=%d density=%g\n", properties.name, kRuns,
              kDensity);

  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int64_t n : sizes)
    for (Distribution data : {Distribution::Gaussian, Distribution::Laplace,
                              Distribution::Uniform}) {
      const std::vector<float> host = sample(data, size_t(n), 1);
      const int64_t k = std::max<int64_t>(1, int64_t(kDensity * double(n)));
      const int64_t capacity = 2 * k;
      const size_t workspaceBytes = dtrain_rt_cuda_select_workspace_size(n);
      float *x, *values;
      int32_t *indices;
      void *workspace;
      check(cudaMalloc(&x, size_t(n) * sizeof(float)), "cudaMalloc");
      check(cudaMalloc(&values, size_t(capacity) * sizeof(float)),
            "cudaMalloc");
      check(cudaMalloc(&indices, size_t(capacity) * sizeof(int32_t)),
            "cudaMalloc");
      check(cudaMalloc(&workspace, workspaceBytes), "cudaMalloc");
      check(cudaMemcpy(x, host.data(), size_t(n) * sizeof(float),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy");
      for (auto [method, name] :
           {std::pair{DTRAIN_RT_SELECT_GAUSSIAN, "gaussian"},
            std::pair{DTRAIN_RT_SELECT_EXACT, "exact"}}) {
        std::vector<float> times;
        int64_t selected = 0;
        for (int run = 0; run <= kRuns; ++run) { // run 0 warms up
          check(cudaEventRecord(start, stream), "cudaEventRecord");
          checkRt(dtrain_rt_cuda_select_f32(x, n, k, method, indices, values,
                                            capacity, &selected, workspace,
                                            workspaceBytes, stream));
          check(cudaEventRecord(stop, stream), "cudaEventRecord");
          check(cudaEventSynchronize(stop), "cudaEventSynchronize");
          float ms = 0;
          check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
          if (run > 0)
            times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        std::printf("method=%s data=%s n=%lld k=%lld selected=%lld "
                    "median_ms=%.4f min_ms=%.4f\n",
                    name, dtrain::rt::test::name(data), (long long)n,
                    (long long)k, (long long)selected, times[times.size() / 2],
                    times.front());
      }
      check(cudaFree(workspace), "cudaFree");
      check(cudaFree(indices), "cudaFree");
      check(cudaFree(values), "cudaFree");
      check(cudaFree(x), "cudaFree");
    }
  check(cudaEventDestroy(start), "cudaEventDestroy");
  check(cudaEventDestroy(stop), "cudaEventDestroy");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}
