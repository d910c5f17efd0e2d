//===- GaussianK.h - the threshold rule of Gaussian-k -----------*- C++ -*-===//
//
// Gaussian-k (Shi et al., "Understanding Top-k Sparsification"): the
// threshold mean + std * PhiInv(1 - k/2n) of the signed values, corrected
// up to 3 times by the count it passes. Shared by the CPU selection
// (Select.cpp) and the CUDA one (cuda/Select.cu) so that both compute the
// same float thresholds, bit for bit; DGC's sampled threshold uses the same
// acceptance window.
//
// Header-only and free of MPI. The CUDA selection computes the threshold
// on the device from the quantile the host computed (thresholdFromMoments,
// whose operations are correctly rounded there as here), so that the
// first pass over the data and the counts follow each other without a
// wait.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_GAUSSIANK_H
#define DTRAIN_RUNTIME_GAUSSIANK_H

#include "HostDevice.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace dtrain::rt {

/// The inverse of the standard normal CDF (Acklam's rational
/// approximation, relative error below 1.2e-9), for 0 < p < 1.
inline double inverseNormalCdf(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  const double low = 0.02425;
  if (p < low) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q +
            c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - low)
    return -inverseNormalCdf(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) *
         q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/// PhiInv(1 - k/2n), the part of Gaussian-k's first threshold that
/// depends on K and N alone (1 <= K <= N).
inline double gaussianQuantile(int64_t n, int64_t k) {
  const double density = double(k) / double(n);
  return inverseNormalCdf(1 - density / 2);
}

namespace detail {
/// A * B and A - B, rounded once each: never fused into an FMA, which
/// nvcc makes of a product and a sum by default (x86-64's baseline, which
/// the CPU code is built for, has no FMA).
DTRAIN_RT_HOST_DEVICE inline double product(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
DTRAIN_RT_HOST_DEVICE inline double difference(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
} // namespace detail

/// Gaussian-k's first threshold for N values whose sum and sum of squares
/// are SUM and SQUARES, with QUANTILE = gaussianQuantile(N, K):
/// mean + std * QUANTILE, at least 0 (a large mean would make it negative
/// and pass everything). Not finite when inf or NaN are among the values.
/// The same float on the CPU and the GPU: its divisions and square root
/// are correctly rounded on both, and its products and sums unfused.
DTRAIN_RT_HOST_DEVICE inline float
thresholdFromMoments(double sum, double squares, int64_t n, double quantile) {
  const double mean = sum / double(n);
  const double variance =
      detail::difference(squares / double(n), detail::product(mean, mean));
  const double deviation = sqrt(variance > 0 ? variance : 0.0);
  const float threshold = float(mean + detail::product(deviation, quantile));
  const bool finite = threshold - threshold == 0.0f; // not for inf or NaN
  return finite && threshold < 0.0f ? 0.0f : threshold;
}

/// Gaussian-k's first threshold for K of N values (1 <= K <= N) whose sum
/// and sum of squares are SUM and SQUARES (thresholdFromMoments).
inline float gaussianThreshold(double sum, double squares, int64_t n,
                               int64_t k) {
  return thresholdFromMoments(sum, squares, n, gaussianQuantile(n, k));
}

/// How many times Gaussian-k corrects its threshold at most.
constexpr int kGaussianCorrections = 3;

/// Where COUNT lies for a target K: -1 below 2k/3, +1 above 4k/3, 0 within
/// (the counts that Gaussian-k and DGC accept).
DTRAIN_RT_HOST_DEVICE inline int compareToTarget(int64_t count, int64_t k) {
  if (3 * count < 2 * k)
    return -1;
  return 3 * count > 4 * k ? 1 : 0;
}

/// THRESHOLD corrected for a count on SIDE (compareToTarget): halved when
/// too few pass, times 1.5 when too many.
DTRAIN_RT_HOST_DEVICE inline float correctThreshold(float threshold, int side) {
  return side < 0 ? threshold * 0.5f : threshold * 1.5f;
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_GAUSSIANK_H
