//===- MatchesCpu.h - results against the CPU kernels' ----------*- C++ -*-===//
//
// How the GPU heavy-op kernels' results (CudaDnnTest.cpp), and what the
// CPU computes of their arithmetic (BatchNormSplitsTest.cpp), are compared
// with the CPU kernels' results: to 1e-4 relative to the element and the
// tensor's RMS in f32, to twice the unit roundoff in 16-bit types.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_MATCHESCPU_H
#define DTRAIN_RUNTIME_TEST_MATCHESCPU_H

#include "dtrain_rt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtrain::rt::test {

/// The relative tolerance against the CPU kernels.
constexpr double kTolerance = 1e-4;

inline double rms(const std::vector<float> &v) {
  double sum = 0;
  for (float x : v)
    sum += double(x) * x;
  return v.empty() ? 0.0 : std::sqrt(sum / double(v.size()));
}

/// |GPU - CPU| <= TOLERANCE (|CPU| + SCALE) elementwise, SCALE the RMS of
/// CPU unless given (the magnitude of the terms a result sums, where they
/// cancel): 0 for an all-zero CPU result, which GPU must then equal.
inline ::testing::AssertionResult matchesCpu(const std::vector<float> &gpu,
                                             const std::vector<float> &cpu,
                                             double scale = -1,
                                             double tolerance = kTolerance) {
  if (gpu.size() != cpu.size())
    return ::testing::AssertionFailure()
           << "size " << gpu.size() << " != " << cpu.size();
  if (scale < 0)
    scale = rms(cpu);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double error = std::fabs(double(gpu[i]) - double(cpu[i]));
    const double bound = tolerance * (std::fabs(double(cpu[i])) + scale);
    if (!(error <= bound) && bad++ == 0) // NaN fails
      first = i;
  }
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << gpu.size() << " elements differ; first at "
         << first << ": " << gpu[first] << " on the GPU, " << cpu[first]
         << " on the CPU (scale " << scale << ")";
}

/// matchesCpu's scales for a batch-norm gradient's results: DX = SCALE /
/// std (DY - mean(DY) - XHAT mean(DY XHAT)) cancels, so its error is
/// relative to the terms' size, the largest SCALE / std times DY's RMS;
/// DSCALE sums COUNT products of DY and XHAT (about 1 in size).
struct BatchNormGradientScales {
  double dx, dscale;
};

inline BatchNormGradientScales
batchNormGradientScales(const std::vector<float> &scale,
                        const std::vector<float> &var, float epsilon,
                        const std::vector<float> &dy, int64_t count) {
  double terms = 0;
  for (size_t c = 0; c < scale.size(); ++c)
    terms = std::max(terms, std::fabs(double(scale[c])) /
                                std::sqrt(double(var[c]) + double(epsilon)));
  return {terms * rms(dy), rms(dy) * std::sqrt(double(count))};
}

/// A 16-bit element type of the heavy ops, and the tolerance of their
/// results against the CPU's f32 kernels on the same (rounded) inputs:
/// twice the type's unit roundoff, for the one rounding of each result (two
/// for a biased convolution's) and f32 sums in another order.
struct HalfType {
  int32_t type;
  const char *name;
  double tolerance;
};

inline const HalfType halfTypes[] = {{DTRAIN_RT_BF16, "bf16", 0x1p-7},
                                     {DTRAIN_RT_F16, "f16", 0x1p-10}};

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_MATCHESCPU_H
