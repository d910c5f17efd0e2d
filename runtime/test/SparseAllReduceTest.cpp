//===- SparseAllReduceTest.cpp - sparse all-reduce under MPI --------------===//
//
// Exchange under mpirun with any number of ranks. Every rank can compute every
// rank's gradient and residual (a hash of rank and index), so each rank
// checks the result against a reference built here: exact top-k by a sort,
// all-gather as a sum in rank order, gTop-k by simulating its tree of
// merges (fold-in of the ranks past the largest power of two, then the
// binomial tree) on the ranks' selections for the global indices, and the
// sum of the ranks' selected values there; with segments, all of it per
// segment, with shares of k computed by hand. The conservation law
//   sum over ranks of (residual change) + applied sum = sum of gradients
// is checked in f64 for every method.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "Internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

using namespace dtrain::rt;

namespace {

int rank() { return dtrain_rt_comm_rank(dtrain_rt_comm_world()); }
int size() { return dtrain_rt_comm_size(dtrain_rt_comm_world()); }

/// A value in (-1, 1) from a hash of (SALT, R, I): distinct magnitudes in
/// practice, so top-k has no ties.
float hashValue(uint64_t salt, int r, int64_t i) {
  uint64_t x = salt * 0x9E3779B97F4A7C15ull +
               uint64_t(r) * 0xBF58476D1CE4E5B9ull +
               uint64_t(i) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  x *= 0xD6E9A4F2B1C3E5A7ull;
  x ^= x >> 29;
  return float(double(x >> 11) / double(1ull << 53) * 2 - 1);
}

/// Rank R's gradient: bell-shaped (a sum of four hashes), so that
/// Gaussian-k's threshold counts vary around k rather than falling back to
/// exact top-k.
std::vector<float> gradientOf(int r, int64_t n) {
  std::vector<float> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    g[size_t(i)] = hashValue(1, r, i) + hashValue(3, r, i) +
                   hashValue(4, r, i) + hashValue(5, r, i);
  return g;
}

std::vector<float> residualOf(int r, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = 0.5f * hashValue(2, r, i);
  return v;
}

/// A sparse set as (index, value) pairs in ascending index order.
using Pairs = std::vector<std::pair<int32_t, float>>;

/// The K largest |value| of SET (ties to the earlier entry), ascending.
Pairs topK(const Pairs &set, int64_t k) {
  std::vector<size_t> order(set.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const float ma = std::fabs(set[a].second), mb = std::fabs(set[b].second);
    return ma > mb || (ma == mb && a < b);
  });
  order.resize(size_t(std::min<int64_t>(k, int64_t(set.size()))));
  std::sort(order.begin(), order.end());
  Pairs top;
  for (size_t j : order)
    top.push_back(set[j]);
  return top;
}

Pairs dense(const std::vector<float> &u) {
  Pairs set;
  for (size_t i = 0; i < u.size(); ++i)
    set.push_back({int32_t(i), u[i]});
  return set;
}

/// A segment of the buffer and its share of k.
struct Share {
  int64_t offset, size, k;
};
using Shares = std::vector<Share>;

/// The K largest |value| of each share's entries of SET, ascending.
Pairs topKPerShare(const Pairs &set, const Shares &shares) {
  Pairs top;
  for (const Share &share : shares) {
    Pairs part;
    for (auto [i, v] : set)
      if (i >= share.offset && i < share.offset + share.size)
        part.push_back({i, v});
    for (auto entry : topK(part, share.k))
      top.push_back(entry);
  }
  return top;
}

/// One rank of the reference: u = g + r, its exact top-k (per share), and
/// the residual with them zeroed.
struct RankState {
  Pairs selected;
  std::vector<float> residual;
};

RankState referenceSelect(int r, int64_t n, const Shares &shares) {
  std::vector<float> u = gradientOf(r, n), res = residualOf(r, n);
  for (size_t i = 0; i < u.size(); ++i)
    u[i] += res[i];
  RankState s{topKPerShare(dense(u), shares), u};
  for (auto [i, v] : s.selected)
    s.residual[size_t(i)] = 0;
  return s;
}

RankState referenceSelect(int r, int64_t n, int64_t k) {
  return referenceSelect(r, n, Shares{{0, n, k}});
}

/// The reference merge: A + B at common indices (A's value first), the top
/// k of each share kept.
Pairs mergeTopK(const Pairs &a, const Pairs &b, const Shares &shares) {
  Pairs sum;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first))
      sum.push_back(a[i++]);
    else if (i == a.size() || b[j].first < a[i].first)
      sum.push_back(b[j++]);
    else
      sum.push_back({a[i].first, a[i++].second + b[j++].second});
  }
  return topKPerShare(sum, shares);
}

struct Exchange {
  std::vector<float> grad, residual;
};

Exchange runSparse(int64_t n, int64_t k, int32_t method, int32_t aggregate,
                   int32_t reduction, int32_t valueType = DTRAIN_RT_F32,
                   const std::vector<int64_t> &segments = {}) {
  Exchange run{gradientOf(rank(), n), residualOf(rank(), n)};
  dtrain_rt_wait(dtrain_rt_sparse_all_reduce_start(
      dtrain_rt_comm_world(), run.grad.data(), run.residual.data(), n, k,
      segments.empty() ? nullptr : segments.data(), int64_t(segments.size()),
      method, aggregate, reduction, valueType, 42));
  return run;
}

/// Every rank got the same GRAD (bitwise).
void expectSameOnEveryRank(const std::vector<float> &grad) {
  std::vector<float> first(grad);
  MPI_Bcast(first.data(), int(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(0, std::memcmp(first.data(), grad.data(), grad.size() * 4));
}

/// sum_r (residual_r - old residual_r) + scale * grad = sum_r gradient_r,
/// in f64, to f32 rounding (or to TOLERANCE per rank).
void expectConservation(const Exchange &run, double scale,
                        double tolerance = 1e-5) {
  const int64_t n = int64_t(run.grad.size());
  std::vector<double> change(static_cast<size_t>(n));
  const std::vector<float> old = residualOf(rank(), n);
  for (int64_t i = 0; i < n; ++i)
    change[size_t(i)] = double(run.residual[size_t(i)]) - old[size_t(i)];
  MPI_Allreduce(MPI_IN_PLACE, change.data(), int(n), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double grads = 0;
    for (int r = 0; r < size(); ++r)
      grads += gradientOf(r, n)[size_t(i)];
    worst = std::max(worst, std::fabs(change[size_t(i)] +
                                      scale * run.grad[size_t(i)] - grads));
  }
  EXPECT_LT(worst, tolerance * size()) << "conservation violated";
}

TEST(SparseAllGather, ExactEqualsSumOfEveryRanksTopK) {
  const int64_t n = 1000, k = 25;
  Exchange run = runSparse(n, k, DTRAIN_RT_SELECT_EXACT,
                           DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SUM);
  std::vector<float> expected(size_t(n), 0.0f);
  for (int r = 0; r < size(); ++r)
    for (auto [i, v] : referenceSelect(r, n, k).selected)
      expected[size_t(i)] += v;
  EXPECT_EQ(expected, run.grad);
  EXPECT_EQ(referenceSelect(rank(), n, k).residual, run.residual);
  expectConservation(run, 1.0);
}

TEST(SparseAllGather, MeanOfGaussianKConserves) {
  Exchange run = runSparse(5000, 50, DTRAIN_RT_SELECT_GAUSSIAN,
                           DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_MEAN);
  expectSameOnEveryRank(run.grad);
  expectConservation(run, size());
  // Gaussian-k selects about k per rank: at most P * 4k/3 nonzeros.
  const auto nonzero = std::count_if(run.grad.begin(), run.grad.end(),
                                     [](float v) { return v != 0; });
  EXPECT_GT(nonzero, 0);
  EXPECT_LE(nonzero, size() * 50 * 4 / 3 + 1);
}

/// gTop-k of N elements in SHARES (one share: no segments) against the
/// simulation of its tree.
void expectGTopKOfItsTree(int64_t n, int64_t k, const Shares &shares,
                          const std::vector<int64_t> &segments) {
  const int P = size();
  Exchange run = runSparse(n, k, DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_GTOPK,
                           DTRAIN_RT_SUM, DTRAIN_RT_F32, segments);
  std::vector<RankState> ranks;
  for (int r = 0; r < P; ++r)
    ranks.push_back(referenceSelect(r, n, shares));
  // The tree: fold-in, then the binomial merges; rank 0 ends with G.
  std::vector<Pairs> tree;
  for (const RankState &s : ranks)
    tree.push_back(s.selected);
  int m = 1;
  while (2 * m <= P)
    m *= 2;
  for (int r = m; r < P; ++r)
    tree[size_t(r - m)] =
        mergeTopK(tree[size_t(r - m)], tree[size_t(r)], shares);
  for (int d = 1; d < m; d *= 2)
    for (int r = 0; r + d < m; r += 2 * d)
      tree[size_t(r)] = mergeTopK(tree[size_t(r)], tree[size_t(r + d)], shares);
  std::vector<bool> global(size_t(n), false);
  for (auto [i, v] : tree[0])
    global[size_t(i)] = true;
  // At G, the sum of every rank's selected values (in f64; the all-reduce
  // adds in its own order); elsewhere zero. Selected entries outside G
  // stay in their own rank's residual.
  std::vector<double> expected(size_t(n), 0.0);
  for (RankState &s : ranks)
    for (auto [i, v] : s.selected) {
      if (global[size_t(i)])
        expected[size_t(i)] += v;
      else
        s.residual[size_t(i)] = v;
    }
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!global[size_t(i)])
      EXPECT_EQ(0.0f, run.grad[size_t(i)]) << "index " << i;
    worst =
        std::max(worst, std::fabs(run.grad[size_t(i)] - expected[size_t(i)]));
  }
  EXPECT_LT(worst, 1e-6 * P);
  EXPECT_EQ(ranks[size_t(rank())].residual, run.residual);
  for (const Share &share : shares)
    EXPECT_EQ(share.k,
              std::count_if(run.grad.begin() + share.offset,
                            run.grad.begin() + share.offset + share.size,
                            [](float v) { return v != 0; }))
        << "segment at " << share.offset;
  expectSameOnEveryRank(run.grad);
  expectConservation(run, 1.0);
}

TEST(SparseGTopK, SumsEveryRanksValuesAtTheIndicesItsTreeChooses) {
  expectGTopKOfItsTree(2000, 40, {{0, 2000, 40}}, {});
}

// Segments 10, 10, 10, 70 and 900 of 1000 elements with k = 25: shares
// max(1, floor(25 * 10 / 1000)) = 1 (three times), max(1, floor(25 * 70 /
// 1000)) = 1 and floor(25 * 900 / 1000) = 22, 26 in all.
const std::vector<int64_t> kSegments = {10, 10, 10, 70, 900};
const Shares kShares = {
    {0, 10, 1}, {10, 10, 1}, {20, 10, 1}, {30, 70, 1}, {100, 900, 22}};

TEST(SparseGTopK, SegmentsKeepTheirSharesUpTheTree) {
  expectGTopKOfItsTree(1000, 25, kShares, kSegments);
}

TEST(SparseAllGather, SegmentsSelectTheirSharesOnTheirOwn) {
  Exchange run =
      runSparse(1000, 25, DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_ALLGATHER,
                DTRAIN_RT_SUM, DTRAIN_RT_F32, kSegments);
  std::vector<float> expected(1000, 0.0f);
  for (int r = 0; r < size(); ++r)
    for (auto [i, v] : referenceSelect(r, 1000, kShares).selected)
      expected[size_t(i)] += v;
  EXPECT_EQ(expected, run.grad);
  EXPECT_EQ(referenceSelect(rank(), 1000, kShares).residual, run.residual);
  // Layer-wise selection differs from the bucket's (so the comparisons
  // above tell them apart), and the first segment of this rank sends
  // exactly its one entry.
  bool differs = false;
  for (int r = 0; r < size(); ++r)
    differs |= referenceSelect(r, 1000, 25).selected !=
               referenceSelect(r, 1000, kShares).selected;
  EXPECT_TRUE(differs);
  EXPECT_EQ(1, std::count_if(run.residual.begin(), run.residual.begin() + 10,
                             [](float v) { return v == 0; }));
  expectConservation(run, 1.0);
}

TEST(SparseAllReduce, SegmentedGaussianKConserves) {
  // Also two halves with k = 24 (12 each), where Gaussian-k's counts in
  // the two can differ while their sum stays within k.
  struct Case {
    std::vector<int64_t> segments;
    Shares shares;
    int64_t k;
  };
  const Case cases[] = {{kSegments, kShares, 25},
                        {{500, 500}, {{0, 500, 12}, {500, 500, 12}}, 24}};
  for (int32_t aggregate :
       {DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SPARSE_GTOPK}) {
    for (const auto &[segments, shares, k] : cases) {
      SCOPED_TRACE(aggregate * 10 + int(segments.size()));
      Exchange run = runSparse(1000, k, DTRAIN_RT_SELECT_GAUSSIAN, aggregate,
                               DTRAIN_RT_MEAN, DTRAIN_RT_F32, segments);
      expectSameOnEveryRank(run.grad);
      expectConservation(run, size());
      // Each rank selected at most twice each share in each segment; gTop-k
      // applies at most the share.
      for (const Share &share : shares) {
        auto first = [&](const std::vector<float> &v) {
          return v.begin() + share.offset;
        };
        EXPECT_LE(std::count(first(run.residual),
                             first(run.residual) + share.size, 0.0f),
                  2 * share.k);
        if (aggregate == DTRAIN_RT_SPARSE_GTOPK)
          EXPECT_LE(share.size - std::count(first(run.grad),
                                            first(run.grad) + share.size, 0.0f),
                    share.k);
      }
    }
  }
}

TEST(SparseGTopK, EveryMethodConservesWithMean) {
  for (int32_t method : {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN,
                         DTRAIN_RT_SELECT_DGC, DTRAIN_RT_SELECT_RANDOM}) {
    SCOPED_TRACE(method);
    Exchange run =
        runSparse(3000, 30, method, DTRAIN_RT_SPARSE_GTOPK, DTRAIN_RT_MEAN);
    expectSameOnEveryRank(run.grad);
    expectConservation(run, size());
  }
}

TEST(SparseAllReduce, SixteenBitValuesConserveAndHalveTheValueBytes) {
  // bf16 and f16 values: the sum holds only 16-bit values (summed in f32),
  // the residual keeps what the rounding dropped (conservation as in f32),
  // and each entry is 6 bytes on the wire.
  for (int32_t valueType : {DTRAIN_RT_BF16, DTRAIN_RT_F16})
    for (int32_t aggregate :
         {DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SPARSE_GTOPK}) {
      SCOPED_TRACE(valueType * 10 + aggregate);
      takeCommStats();
      Exchange run = runSparse(2000, 40, DTRAIN_RT_SELECT_EXACT, aggregate,
                               DTRAIN_RT_SUM, valueType);
      const CommStats stats = takeCommStats();
      expectSameOnEveryRank(run.grad);
      expectConservation(run, 1.0);
      // Every rank's own selection, rounded: its residual at a selected
      // index is u minus the rounded value, a rounding error.
      const RankState mine = referenceSelect(rank(), 2000, 40);
      for (auto [i, v] : mine.selected) {
        const float rounded = valueType == DTRAIN_RT_BF16
                                  ? bf16ToF32(f32ToBF16(v))
                                  : f16ToF32(f32ToF16(v));
        if (aggregate == DTRAIN_RT_SPARSE_ALLGATHER || run.grad[size_t(i)] != 0)
          EXPECT_EQ(v - rounded, run.residual[size_t(i)]) << "index " << i;
      }
      if (aggregate == DTRAIN_RT_SPARSE_ALLGATHER)
        EXPECT_EQ((size() - 1) * 40 * 6, stats.sparseSentBytes);
    }
}

TEST(SparseAllReduce, DenseAggregateSendsEverything) {
  // The dense choice sums every rank's u = g + r (in f32: the residuals end
  // at zero; in bf16: each keeps its rounding) and sends a ring
  // all-reduce's bytes. A bf16 all-reduce also rounds its partial sums
  // (|sum| < 5 per rank here), which no residual keeps: conservation holds
  // to bf16's 2^-8 relative precision there.
  const int64_t n = 1000;
  for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16}) {
    SCOPED_TRACE(valueType);
    takeCommStats();
    Exchange run = runSparse(n, 10, DTRAIN_RT_SELECT_EXACT,
                             DTRAIN_RT_SPARSE_DENSE, DTRAIN_RT_SUM, valueType);
    const CommStats stats = takeCommStats();
    expectSameOnEveryRank(run.grad);
    expectConservation(run, 1.0,
                       valueType == DTRAIN_RT_F32 ? 1e-5 : 5 * 0x1p-8);
    const std::vector<float> g = gradientOf(rank(), n),
                             r = residualOf(rank(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float u = g[size_t(i)] + r[size_t(i)];
      const float sent =
          valueType == DTRAIN_RT_F32 ? u : bf16ToF32(f32ToBF16(u));
      ASSERT_EQ(u - sent, run.residual[size_t(i)]) << "index " << i;
    }
    EXPECT_EQ(n, stats.sparseElements);
    EXPECT_EQ(n, stats.selectedElements);
    EXPECT_EQ(2 * (size() - 1) * n * (valueType == DTRAIN_RT_F32 ? 4 : 2) /
                  size(),
              stats.sparseSentBytes);
  }
}

TEST(SparseAllReduce, KAtLeastCountIsDense) {
  // k >= count selects everything: the sum of the residual-corrected
  // gradients, and zero residuals.
  const int64_t n = 64;
  for (int32_t aggregate :
       {DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SPARSE_GTOPK}) {
    Exchange run =
        runSparse(n, 1000, DTRAIN_RT_SELECT_EXACT, aggregate, DTRAIN_RT_SUM);
    EXPECT_EQ(std::vector<float>(size_t(n), 0.0f), run.residual);
    expectConservation(run, 1.0);
  }
}

TEST(SparseAllReduce, StatisticsCountSelectedAndSentBytes) {
  takeCommStats();
  runSparse(1000, 10, DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_ALLGATHER,
            DTRAIN_RT_SUM);
  const CommStats stats = takeCommStats();
  EXPECT_EQ(1000, stats.sparseElements);
  EXPECT_EQ(10, stats.selectedElements);
  // A ring all-gather sends every block but one: (P-1) * 10 * 8 bytes.
  EXPECT_EQ((size() - 1) * 80, stats.sparseSentBytes);
  EXPECT_EQ(stats.sparseSentBytes, stats.sentBytes);
}

} // namespace
