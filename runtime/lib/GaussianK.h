//===- GaussianK.h - the threshold rule of Gaussian-k -----------*- C++ -*-===//
//
// Gaussian-k (Shi et al., "Understanding Top-k Sparsification"): the
// threshold mean + std * PhiInv(1 - k/2n) of the signed values, corrected
// up to 3 times by the count it passes. Shared by the CPU selection
// (Select.cpp) and the CUDA one (cuda/Select.cu) so that both compute the
// same float thresholds, bit for bit; DGC's sampled threshold uses the same
// acceptance window.
//
// Header-only and free of MPI and CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_GAUSSIANK_H
#define DTRAIN_RUNTIME_GAUSSIANK_H

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

/// Gaussian-k's first threshold for K of N values (1 <= K <= N) whose sum
/// and sum of squares are SUM and SQUARES: mean + std * PhiInv(1 - k/2n),
/// at least 0 (a large mean would make it negative and pass everything).
/// Not finite when inf or NaN are among the values.
inline float gaussianThreshold(double sum, double squares, int64_t n,
                               int64_t k) {
  const double mean = sum / double(n);
  const double deviation =
      std::sqrt(std::max(0.0, squares / double(n) - mean * mean));
  const double density = double(k) / double(n);
  const float threshold =
      float(mean + deviation * inverseNormalCdf(1 - density / 2));
  return std::isfinite(threshold) ? std::max(threshold, 0.0f) : threshold;
}

/// How many times Gaussian-k corrects its threshold at most.
constexpr int kGaussianCorrections = 3;

/// Where COUNT lies for a target K: -1 below 2k/3, +1 above 4k/3, 0 within
/// (the counts that Gaussian-k and DGC accept).
inline int compareToTarget(int64_t count, int64_t k) {
  if (3 * count < 2 * k)
    return -1;
  return 3 * count > 4 * k ? 1 : 0;
}

/// THRESHOLD corrected for a count on SIDE (compareToTarget): halved when
/// too few pass, times 1.5 when too many.
inline float correctThreshold(float threshold, int side) {
  return side < 0 ? threshold * 0.5f : threshold * 1.5f;
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_GAUSSIANK_H
