//===- GradientSamples.h - gradient-like test data ---------------*- C++ -*-===//
//
// The data the selection tests (CPU and CUDA) run on: the distributions
// gradients follow (Gaussian, Laplace, heavy-tailed Student-t), uniform
// data, small integers (a few distinct magnitudes: ties), and Gaussian data
// with infinities and NaNs.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_GRADIENTSAMPLES_H
#define DTRAIN_RUNTIME_TEST_GRADIENTSAMPLES_H

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace dtrain::rt::test {

enum class Distribution { Gaussian, Laplace, StudentT3, Uniform, Ties, NonFinite };

inline const char *name(Distribution d) {
  switch (d) {
  case Distribution::Gaussian:
    return "gaussian";
  case Distribution::Laplace:
    return "laplace";
  case Distribution::StudentT3:
    return "student-t3";
  case Distribution::Uniform:
    return "uniform";
  case Distribution::Ties:
    return "ties";
  case Distribution::NonFinite:
    return "gaussian+inf/nan";
  }
  return "?";
}

/// N values of D from SEED.
inline std::vector<float> sample(Distribution d, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.001, 0.02);
  std::exponential_distribution<double> exponential(50);
  std::student_t_distribution<double> student(3);
  std::bernoulli_distribution sign(0.5);
  std::uniform_real_distribution<double> uniform(-0.05, 0.05);
  std::uniform_int_distribution<int> small(-6, 6);
  std::vector<float> x(n);
  for (float &v : x)
    switch (d) {
    case Distribution::Gaussian:
    case Distribution::NonFinite:
      v = float(normal(rng));
      break;
    case Distribution::Laplace:
      v = float(sign(rng) ? exponential(rng) : -exponential(rng));
      break;
    case Distribution::StudentT3:
      v = float(0.01 * student(rng));
      break;
    case Distribution::Uniform:
      v = float(uniform(rng));
      break;
    case Distribution::Ties:
      v = float(small(rng));
      break;
    }
  if (d == Distribution::NonFinite) {
    const float specials[] = {INFINITY, -INFINITY, NAN, -NAN};
    for (size_t j = 0; j < 4 && j < n; ++j)
      x[(j * 7919 + n / 2) % n] = specials[j];
  }
  return x;
}

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_GRADIENTSAMPLES_H
