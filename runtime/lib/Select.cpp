//===- Select.cpp - top-k selection for gradient sparsification ----------===//
//
// dtrain_rt_select_f32: which entries of a (residual-corrected) gradient
// to send. Every method works in a few linear passes, never a sort:
//   exact     radix select on the bits of |x| (a float's magnitude orders
//             as its bits do): the k-th largest magnitude in three
//             histogram passes, the last two over the candidates only;
//   gaussian  Gaussian-k (Shi et al., "Understanding Top-k
//             Sparsification"): a threshold from the mean and standard
//             deviation, corrected up to 3 times by its count (the rule
//             is in GaussianK.h, shared with the CUDA selection);
//   dgc       the threshold of an exact top-k of a strided 1% sample
//             (Deep Gradient Compression);
//   random    k distinct indices, uniformly (Floyd's algorithm).
// The output is always in ascending index order. The passes over all n
// elements run on OMP_NUM_THREADS threads (std::thread: the runtime's
// OpenMP is oneDNN's libgomp, which clang's -fopenmp does not target).
//
//===----------------------------------------------------------------------===//

#include "GaussianK.h"
#include "Internal.h"
#include "Parallel.h"
#include "SelectMethods.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

using namespace dtrain::rt;

namespace {

/// The bits of |x|: unsigned order is magnitude order (NaNs above inf).
inline uint32_t magnitudeBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7fffffffu;
}

/// Where a selection goes: INDICES and VALUES, either of them NULL.
struct Output {
  int32_t *indices;
  float *values;
  void put(int64_t j, int64_t index, float value) const {
    if (indices)
      indices[j] = int32_t(index);
    if (values)
      values[j] = value;
  }
};

/// Writes the entries of X with magnitude bits above ABOVE, then the first
/// TIES (in index order) with bits equal to ABOVE, in ascending index
/// order; returns how many.
int64_t collect(const float *x, int64_t n, uint32_t above, int64_t ties,
                Output out) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = magnitudeBits(x[i]);
    if (bits > above || (bits == above && ties > 0)) {
      if (bits == above)
        --ties;
      out.put(count++, i, x[i]);
    }
  }
  return count;
}

/// The magnitude bits T of the K-th largest |x| (1 <= K <= n), and in
/// TIES how many entries equal to T belong to the k largest (the others
/// above it are strictly larger): a three-level radix select over 11, 11
/// and 10 bits.
uint32_t kthLargestBits(const float *x, int64_t n, int64_t k, int64_t &ties) {
  constexpr int kBins = 2048;
  // Level 1 over all elements, in parallel.
  std::vector<int64_t> histogram(kBins, 0);
  for (const std::vector<int64_t> &local :
       forChunks<std::vector<int64_t>>(n, [&](int64_t begin, int64_t end) {
         std::vector<int64_t> counts(kBins, 0);
         for (int64_t i = begin; i < end; ++i)
           ++counts[magnitudeBits(x[i]) >> 21];
         return counts;
       }))
    for (int b = 0; b < kBins; ++b)
      histogram[b] += local[b];
  // Finds the bin, from the top, holding the NEED-th largest; NEED becomes
  // the rank within it.
  auto findBin = [](const std::vector<int64_t> &h, int64_t &need) {
    for (int b = int(h.size()) - 1; b >= 0; --b) {
      if (need <= h[b])
        return uint32_t(b);
      need -= h[b];
    }
    return uint32_t(0); // unreachable: the histogram counts >= need
  };
  int64_t need = k;
  const uint32_t top = findBin(histogram, need);
  // Levels 2 and 3 over the candidates of that bin.
  std::vector<uint32_t> candidates;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = magnitudeBits(x[i]);
    if (bits >> 21 == top)
      candidates.push_back(bits);
  }
  std::fill(histogram.begin(), histogram.end(), 0);
  for (uint32_t bits : candidates)
    ++histogram[(bits >> 10) & 0x7ff];
  const uint32_t middle = findBin(histogram, need);
  std::fill(histogram.begin(), histogram.end(), 0);
  for (uint32_t bits : candidates)
    if (((bits >> 10) & 0x7ff) == middle)
      ++histogram[bits & 0x3ff];
  const uint32_t low = findBin(histogram, need);
  ties = need;
  return top << 21 | middle << 10 | low;
}

/// The K largest |x| (ties: lowest index first).
int64_t selectExact(const float *x, int64_t n, int64_t k, Output out) {
  if (k >= n)
    return collect(x, n, 0, n, out); // everything (bits >= 0)
  int64_t ties = 0;
  const uint32_t threshold = kthLargestBits(x, n, k, ties);
  return collect(x, n, threshold, ties, out);
}

/// How many |x| exceed THRESHOLD.
int64_t countAbove(const float *x, int64_t n, float threshold) {
  int64_t count = 0;
  for (int64_t part : forChunks<int64_t>(n, [&](int64_t begin, int64_t end) {
         int64_t above = 0;
         for (int64_t i = begin; i < end; ++i)
           above += std::fabs(x[i]) > threshold;
         return above;
       }))
    count += part;
  return count;
}

/// The entries whose |x| exceeds THRESHOLD (COUNT of them), at most
/// CAPACITY: when more pass, the CAPACITY largest of them.
int64_t selectAbove(const float *x, int64_t n, float threshold, int64_t count,
                    int64_t capacity, Output out) {
  if (count <= capacity) {
    // Above THRESHOLD: the bits above its own (|threshold| >= 0).
    const uint32_t bits = magnitudeBits(threshold);
    return collect(x, n, bits, 0, out);
  }
  // Few candidates: an exact selection among them.
  std::vector<float> candidates;
  std::vector<int32_t> positions;
  candidates.reserve(size_t(count));
  positions.reserve(size_t(count));
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > threshold) {
      candidates.push_back(x[i]);
      positions.push_back(int32_t(i));
    }
  std::vector<int32_t> chosen(static_cast<size_t>(capacity));
  const int64_t selected =
      selectExact(candidates.data(), int64_t(candidates.size()), capacity,
                  Output{chosen.data(), nullptr});
  for (int64_t j = 0; j < selected; ++j)
    out.put(j, positions[size_t(chosen[size_t(j)])],
            candidates[size_t(chosen[size_t(j)])]);
  return selected;
}

/// Gaussian-k: thr = mean + std * PhiInv(1 - rho/2) of the signed values;
/// then up to 3 corrections by the count of |x| > thr (below 2k/3: halve;
/// above 4k/3: times 1.5); exact top-k when the count is still outside
/// [2k/3, 4k/3].
int64_t selectGaussian(const float *x, int64_t n, int64_t k, int64_t capacity,
                       Output out) {
  double sum = 0, squares = 0;
  for (auto [partSum, partSquares] :
       forChunks<std::pair<double, double>>(n, [&](int64_t begin, int64_t end) {
         double s = 0, q = 0;
         for (int64_t i = begin; i < end; ++i) {
           s += x[i];
           q += double(x[i]) * x[i];
         }
         return std::make_pair(s, q);
       })) {
    sum += partSum;
    squares += partSquares;
  }
  float threshold = gaussianThreshold(sum, squares, n, k);
  if (!std::isfinite(threshold)) // inf or NaN among the values
    return selectExact(x, n, k, out);
  int64_t count = countAbove(x, n, threshold);
  for (int round = 0; round < kGaussianCorrections; ++round) {
    const int side = compareToTarget(count, k);
    if (side == 0)
      break;
    threshold = correctThreshold(threshold, side);
    count = countAbove(x, n, threshold);
  }
  // Three corrections can end far off on data far from Gaussian (on a
  // bounded distribution they can end with nothing selected): exact
  // top-k then, as DGC does.
  if (compareToTarget(count, k) != 0)
    return selectExact(x, n, k, out);
  return selectAbove(x, n, threshold, count, capacity, out);
}

/// DGC's sampled threshold: the magnitude of the k-th largest of a strided
/// sample of about 1% (at least 1000 elements), scaled to n; when the count
/// it gives is outside [2k/3, 4k/3], exact top-k instead.
int64_t selectSampled(const float *x, int64_t n, int64_t k, int64_t capacity,
                      uint64_t seed, Output out) {
  const int64_t samples = std::min(n, std::max<int64_t>(1000, n / 100));
  const int64_t stride = n / samples;
  const int64_t offset = int64_t(seed % uint64_t(stride));
  std::vector<float> sample(static_cast<size_t>(samples));
  for (int64_t j = 0; j < samples; ++j)
    sample[size_t(j)] = std::fabs(x[offset + j * stride]);
  const int64_t sampleK = std::max<int64_t>(
      1, int64_t(std::llround(double(k) * double(samples) / double(n))));
  std::nth_element(sample.begin(), sample.begin() + (sampleK - 1), sample.end(),
                   std::greater<float>());
  // Above the sample's k-th magnitude, so strictly less than it passes.
  const float threshold = std::nextafter(sample[size_t(sampleK - 1)], 0.0f);
  const int64_t count = countAbove(x, n, threshold);
  if (compareToTarget(count, k) != 0)
    return selectExact(x, n, k, out);
  return selectAbove(x, n, threshold, count, capacity, out);
}

/// SplitMix64: the seeded generator of random-k.
uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// K distinct indices uniformly at random (Floyd's algorithm), ascending.
int64_t selectRandom(const float *x, int64_t n, int64_t k, uint64_t seed,
                     Output out) {
  if (k >= n)
    return collect(x, n, 0, n, out);
  std::vector<int32_t> chosen;
  chosen.reserve(size_t(k));
  std::vector<bool> taken(size_t(n), false);
  uint64_t state = seed;
  for (int64_t j = n - k; j < n; ++j) {
    const int64_t t = int64_t(splitMix64(state) % uint64_t(j + 1));
    const int64_t pick = taken[size_t(t)] ? j : t;
    taken[size_t(pick)] = true;
    chosen.push_back(int32_t(pick));
  }
  std::sort(chosen.begin(), chosen.end());
  for (int64_t j = 0; j < k; ++j)
    out.put(j, chosen[size_t(j)], x[chosen[size_t(j)]]);
  return k;
}

} // namespace

int64_t dtrain_rt_select_f32(const float *x, int64_t n, int64_t k,
                             int32_t method, uint64_t seed, int32_t *indices,
                             float *values, int64_t capacity) {
  const char *name = dtrain::rt::selectMethodName(method);
  if (!name)
    fatal(nullptr,
          "dtrain_rt_select_f32: method %d is not valid (accepted: "
          "DTRAIN_RT_SELECT_EXACT, _GAUSSIAN, _DGC, _RANDOM)",
          int(method));
  if (n < 0 || n > std::numeric_limits<int32_t>::max() || k < 0 || capacity < 0)
    fatal(nullptr,
          "dtrain_rt_select_f32 (%s): n = %lld, k = %lld, capacity = %lld "
          "(accepted: 0 <= n <= 2^31-1, k >= 0, capacity >= 0)",
          name, (long long)n, (long long)k, (long long)capacity);
  const int64_t exactCount = std::min(k, n);
  if (capacity < exactCount)
    fatal(nullptr,
          "dtrain_rt_select_f32 (%s): capacity %lld is below the %lld "
          "entries it selects",
          name, (long long)capacity, (long long)exactCount);
  if ((n > 0 && !x) || (capacity > 0 && !indices && !values))
    fatal(nullptr, "dtrain_rt_select_f32 (%s): x, or both outputs, NULL", name);
  if (exactCount == 0 || capacity == 0)
    return 0;
  const Output out{indices, values};
  switch (method) {
  case DTRAIN_RT_SELECT_EXACT:
    return selectExact(x, n, k, out);
  case DTRAIN_RT_SELECT_GAUSSIAN:
    return selectGaussian(x, n, exactCount, capacity, out);
  case DTRAIN_RT_SELECT_DGC:
    return selectSampled(x, n, exactCount, capacity, seed, out);
  default:
    return selectRandom(x, n, k, seed, out);
  }
}
