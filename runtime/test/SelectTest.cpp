//===- SelectTest.cpp - top-k selection kernels ---------------------------===//
//
// dtrain_rt_select_f32 against a sort-based reference (exact), its count
// bounds and threshold property on Gaussian, Laplace and Student-t data
// (Gaussian-k, DGC), and uniformity and determinism (random-k).
//
//===----------------------------------------------------------------------===//

#include "GradientSamples.h"
#include "dtrain_rt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <vector>

using namespace dtrain::rt::test;

namespace {

struct Selection {
  std::vector<int32_t> indices;
  std::vector<float> values;
};

Selection select(const std::vector<float> &x, int64_t k, int32_t method,
                 uint64_t seed = 0, int64_t capacity = -1) {
  if (capacity < 0)
    capacity = std::max<int64_t>(2 * k, 1);
  Selection s{std::vector<int32_t>(size_t(capacity)),
              std::vector<float>(size_t(capacity))};
  const int64_t count =
      dtrain_rt_select_f32(x.data(), int64_t(x.size()), k, method, seed,
                           s.indices.data(), s.values.data(), capacity);
  EXPECT_LE(count, capacity);
  s.indices.resize(size_t(count));
  s.values.resize(size_t(count));
  return s;
}

/// The k largest |x| by a sort (ties: lower index first), in ascending
/// index order.
std::vector<int32_t> sortedTopK(const std::vector<float> &x, int64_t k) {
  std::vector<int32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const float ma = std::fabs(x[size_t(a)]), mb = std::fabs(x[size_t(b)]);
    return ma > mb || (ma == mb && a < b);
  });
  order.resize(size_t(std::min<int64_t>(k, int64_t(x.size()))));
  std::sort(order.begin(), order.end());
  return order;
}

/// Checks the shape of any selection: ascending distinct indices, values
/// that are X's at those indices.
void expectWellFormed(const std::vector<float> &x, const Selection &s) {
  for (size_t j = 0; j < s.indices.size(); ++j) {
    ASSERT_GE(s.indices[j], 0);
    ASSERT_LT(size_t(s.indices[j]), x.size());
    if (j > 0)
      ASSERT_LT(s.indices[j - 1], s.indices[j]);
    ASSERT_EQ(s.values[j], x[size_t(s.indices[j])]);
  }
}

/// Every selected magnitude is at least every unselected one: what a
/// threshold selection gives.
void expectThresholdShaped(const std::vector<float> &x, const Selection &s) {
  std::vector<bool> chosen(x.size(), false);
  float smallestChosen = INFINITY, largestOther = 0;
  for (int32_t i : s.indices)
    chosen[size_t(i)] = true;
  for (size_t i = 0; i < x.size(); ++i)
    if (chosen[i])
      smallestChosen = std::min(smallestChosen, std::fabs(x[i]));
    else
      largestOther = std::max(largestOther, std::fabs(x[i]));
  EXPECT_GE(smallestChosen, largestOther);
}

double overlap(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
  std::vector<int32_t> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(),
                        std::back_inserter(common));
  return double(common.size()) / double(std::max<size_t>(b.size(), 1));
}

TEST(Select, ExactEqualsSortReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-6, 6);
  std::normal_distribution<float> normal;
  for (size_t n : {1u, 2u, 10u, 1000u, 300000u}) // the last one threaded
    for (bool ties : {false, true}) {
      std::vector<float> x(n);
      for (float &v : x)
        v = ties ? float(small(rng)) : normal(rng);
      for (int64_t k : {int64_t(1), int64_t(3), int64_t(n / 2),
                        int64_t(n) - 1, int64_t(n), int64_t(n) + 5}) {
        if (k < 1)
          continue;
        const Selection s = select(x, k, DTRAIN_RT_SELECT_EXACT, 0,
                                   std::max<int64_t>(k, 1));
        expectWellFormed(x, s);
        EXPECT_EQ(s.indices, sortedTopK(x, k))
            << "n=" << n << " k=" << k << " ties=" << ties;
      }
    }
}

TEST(Select, ExactTakesInfinitiesAndNaNFirst) {
  std::vector<float> x = {1, -INFINITY, 3, NAN, -2, 0};
  const Selection s = select(x, 2, DTRAIN_RT_SELECT_EXACT);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{1, 3}));
}

TEST(Select, NothingToSelect) {
  const std::vector<float> x = {1, 2, 3};
  for (int32_t method : {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN,
                         DTRAIN_RT_SELECT_DGC, DTRAIN_RT_SELECT_RANDOM}) {
    EXPECT_EQ(dtrain_rt_select_f32(x.data(), 3, 0, method, 0, nullptr,
                                   nullptr, 0),
              0);
    EXPECT_EQ(dtrain_rt_select_f32(nullptr, 0, 5, method, 0, nullptr,
                                   nullptr, 0),
              0);
  }
}

// Gaussian-k and DGC select between 2k/3 and 4k/3 entries by a threshold,
// on data with light and heavy tails, and on bounded data, where Gaussian-k's
// threshold lies past the largest value and its 3 corrections end with
// nothing (it falls back to exact top-k); how much of exact top-k they find
// is printed (a threshold selection of about k entries contains most of
// it).
TEST(Select, ApproximateMethodsStayNearK) {
  const size_t n = 1 << 20;
  const int64_t k = 1049; // density 0.001
  for (Distribution d : {Distribution::Gaussian, Distribution::Laplace,
                         Distribution::StudentT3, Distribution::Uniform}) {
    const char *data = name(d);
    const std::vector<float> x = sample(d, n, 11);
    const std::vector<int32_t> exact = sortedTopK(x, k);
    for (auto [method, methodName] :
         {std::pair{DTRAIN_RT_SELECT_GAUSSIAN, "gaussian-k"},
          std::pair{DTRAIN_RT_SELECT_DGC, "dgc"}}) {
      const Selection s = select(x, k, method, 3);
      expectWellFormed(x, s);
      expectThresholdShaped(x, s);
      EXPECT_GE(3 * int64_t(s.indices.size()), 2 * k) << data << methodName;
      EXPECT_LE(3 * int64_t(s.indices.size()), 4 * k) << data << methodName;
      std::printf("%-10s on %-10s: %zu selected for k=%lld, %.3f of exact "
                  "top-k\n",
                  methodName, data, s.indices.size(), (long long)k,
                  overlap(s.indices, exact));
    }
  }
}

// More entries pass the threshold than CAPACITY holds: the CAPACITY
// largest of them (here of a constant vector, where all pass: the first).
TEST(Select, GaussianKeepsTheLargestWithinCapacity) {
  std::vector<float> x(1000, 0.5f);
  x[10] = 2;
  x[700] = -3;
  const Selection s = select(x, 4, DTRAIN_RT_SELECT_GAUSSIAN, 0, 4);
  ASSERT_EQ(s.indices.size(), 4u);
  expectThresholdShaped(x, s);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{0, 1, 10, 700}));
}

TEST(Select, RandomIsUniformAndSeeded) {
  const size_t n = 100;
  const int64_t k = 10;
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<int> hits(n, 0);
  const int trials = 4000;
  for (int seed = 0; seed < trials; ++seed) {
    const Selection s = select(x, k, DTRAIN_RT_SELECT_RANDOM, uint64_t(seed));
    ASSERT_EQ(int64_t(s.indices.size()), k);
    expectWellFormed(x, s);
    for (int32_t i : s.indices)
      ++hits[size_t(i)];
  }
  // Each index is picked with probability k/n = 0.1: 400 times expected,
  // standard deviation 19; allow 5 of them.
  for (size_t i = 0; i < n; ++i)
    EXPECT_NEAR(hits[i], 400, 95) << "index " << i;
  EXPECT_EQ(select(x, k, DTRAIN_RT_SELECT_RANDOM, 5).indices,
            select(x, k, DTRAIN_RT_SELECT_RANDOM, 5).indices);
  EXPECT_NE(select(x, k, DTRAIN_RT_SELECT_RANDOM, 5).indices,
            select(x, k, DTRAIN_RT_SELECT_RANDOM, 6).indices);
}

} // namespace
