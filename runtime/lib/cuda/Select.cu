//===- Select.cu - top-k selection and residuals on the GPU ---------------===//
//
// dtrain_rt_cuda_select_f32 and dtrain_rt_cuda_residual_select_f32: the
// selections of Select.cpp (exact and Gaussian-k) on the GPU, with the same
// results:
//   exact     a radix select on the bits of |x| in three histogram passes
//             (11, 11 and 10 bits, each over the elements whose higher bits
//             match the bins chosen so far); a one-block kernel chooses each
//             bin, so the threshold never leaves the device;
//   gaussian  one pass for the sums, from which a one-block kernel makes
//             the 15 thresholds that 3 corrections can reach (each
//             correction halves or multiplies by 1.5: a binary tree), then
//             one pass that counts, per tile, |x| above each of them,
//             whose last block to finish walks the correction rule
//             (GaussianK.h) to the threshold to compact with and writes
//             that choice to page-locked host memory; the host waits once,
//             at the end, and reads it (the count, or the exact selection
//             to run instead, which is rare). The count pass also keeps
//             each tile's entries above the first threshold in kSlots
//             slots (about 4 a tile at density 0.001 on Gaussian data, 40
//             on Laplace data): where the chosen threshold is at least the
//             first and no tile had more, the compaction kernel gathers
//             them, a warp a tile, instead of passing over the data.
// Both end in the same compaction, which keeps index order: the entries
// with magnitude bits above a bound T, and the first TIES (in index order)
// equal to T. It counts per tile of 4096 elements (the Gaussian count
// pass has counted already, a column of counts per threshold), scans the
// tiles' counts, and writes each
// entry at (entries above T before it) + min(TIES, entries equal to T
// before it), each warp finding its entries' places by ballots.
//
// The residual version forms u = grad + residual in the first pass over the
// data, whichever it is, and after the selection rounds the values to the
// wire type and leaves the rounding in the residual.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Float16.h"
#include "GaussianK.h"
#include "SelectMethods.h"

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

/// Bins of a radix level (the widest level has 11 bits).
constexpr int kBins = 2048;
/// The levels 0, 1, 2 of the radix select: the lowest bit of each and its
/// width.
__device__ constexpr int levelShift(int level) {
  return level == 0 ? 21 : (level == 1 ? 10 : 0);
}
__device__ constexpr int levelWidth(int level) { return level == 2 ? 10 : 11; }
/// Threads of the bin search: two bins each.
constexpr int kFindThreads = kBins / 2;

/// The compaction's tiles: kTileThreads threads of kTileItems elements;
/// each warp takes kTileItems runs of 32 consecutive elements.
constexpr int kTileThreads = 256;
constexpr int kTileItems = 16;
constexpr int64_t kTile = kTileThreads * kTileItems;
constexpr int kWarpRun = 32 * kTileItems;

/// An entry kept by Gaussian-k's count pass, and how many a tile keeps.
struct Slot {
  int32_t index;
  float value;
};
constexpr int kSlots = 64;
/// The slots a lane of gatherSlots holds.
constexpr int kLaneSlots = kSlots / 32;

/// Gaussian-k's thresholds after 0..3 corrections, as a binary tree in
/// heap order: node i is corrected to 2i+1 (halved) or 2i+2 (times 1.5).
constexpr int kTreeSize = (2 << kGaussianCorrections) - 1;
struct ThresholdTree {
  float value[kTreeSize];
};

/// Gaussian-k's outcome: the tree node whose threshold it compacts with
/// and how many entries pass it, or, where EXACTK > 0, the exact selection
/// of EXACTK entries to run instead (nothing was compacted).
struct GaussianChoice {
  int node;
  int64_t count, exactK;
};

/// A Gaussian selection's thresholds and how many |x| exceed each.
struct GaussianCounts {
  ThresholdTree tree;
  /// The tree's distinct thresholds, DISTINCT of them, as |x| is compared
  /// with them, and each node's among them. Halving is exact (but for
  /// subnormals) and commutes with the other correction, so there are 10
  /// where there would be 15 (at most 15).
  float bound[kTreeSize];
  int boundOf[kTreeSize];
  int distinct;
  /// How many |x| exceed each distinct threshold.
  unsigned long long above[kTreeSize];
  /// Nonzero where a tile had more than kSlots entries above the first.
  unsigned slotsOverflowed;
  /// The count pass's blocks that have added their counts.
  unsigned finishedTiles;
};

/// The bound of a compaction: the entries with magnitude bits above
/// PREFIX, and the first NEED equal to it; their tile counts are column
/// COLUMN of the tile counts (the Gaussian count pass counts a column per
/// distinct threshold). While the radix select runs, PREFIX holds the bins
/// chosen so far and NEED the rank sought among the entries that match them.
/// FROMSLOTS: Gaussian-k's entries are gathered from the count pass's
/// slots instead (gatherSlots).
struct RadixState {
  uint32_t prefix;
  int64_t need;
  uint32_t column;
  uint32_t fromSlots;
};

/// The selection's input X; with GRAD, the first pass reads
/// u = X + GRAD and stores it to X (the residual), so X is written only
/// when GRAD is set.
struct Input {
  float *x;
  const float *grad;
};

/// The bits of |x|: unsigned order is magnitude order (NaNs above inf).
DTRAIN_RT_HOST_DEVICE inline uint32_t magnitudeBits(float x) {
  return floatBits(x) & 0x7fffffffu;
}

__device__ inline float load(Input in, int64_t i) {
  if (!in.grad)
    return in.x[i];
  const float u = in.x[i] + in.grad[i];
  in.x[i] = u;
  return u;
}

/// Sum of V over the lanes of a full warp.
template <class T> __device__ inline T warpSum(T v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void addKernel(float *x, const float *grad, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] += grad[i];
}

/// Starts a radix select for rank NEED (or sets a compaction's bound).
__global__ void initStateKernel(RadixState *state,
                                unsigned long long *histogram, uint32_t prefix,
                                int64_t need) {
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    histogram[b] = 0;
  if (threadIdx.x == 0)
    *state = RadixState{prefix, need, 0, 0};
}

/// Adds the LEVEL bins of the entries matching the state's prefix to
/// HISTOGRAM.
__global__ void histogramKernel(Input in, int64_t n, const RadixState *state,
                                unsigned long long *histogram, int level) {
  __shared__ unsigned counts[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    counts[b] = 0;
  __syncthreads();
  const int shift = levelShift(level);
  const uint32_t mask = (1u << levelWidth(level)) - 1;
  const int matchShift = shift + levelWidth(level); // 32 at level 0
  const uint32_t prefix = state->prefix;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t bits = magnitudeBits(load(in, i));
    if (level == 0 || bits >> matchShift == prefix)
      atomicAdd(&counts[(bits >> shift) & mask], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (counts[b])
      atomicAdd(&histogram[b], (unsigned long long)counts[b]);
}

/// One block of kFindThreads: the bin, from the top, that holds the
/// state's NEED-th largest; appends it to the prefix, makes NEED the rank
/// within it, and clears the histogram for the next level. (The launch
/// bound caps its registers: unbounded, it took 88, too many for a block
/// of 1024 threads.)
__global__ void __launch_bounds__(kFindThreads)
    findBinKernel(RadixState *state, unsigned long long *histogram, int level) {
  using Scan = cub::BlockScan<unsigned long long, kFindThreads>;
  __shared__ typename Scan::TempStorage scanStorage;
  // Thread t holds the bins at positions 2t and 2t+1 from the top.
  unsigned long long counts[2], through[2];
  int bins[2];
  for (int j = 0; j < 2; ++j) {
    bins[j] = kBins - 1 - (2 * int(threadIdx.x) + j);
    counts[j] = histogram[bins[j]];
    histogram[bins[j]] = 0;
  }
  const int64_t need = state->need;
  Scan(scanStorage).InclusiveSum(counts, through);
  __syncthreads(); // every thread has read the state
  // Exactly one bin has through - count < need <= through.
  for (int j = 0; j < 2; ++j) {
    const int64_t before = int64_t(through[j] - counts[j]);
    if (before < need && need <= int64_t(through[j])) {
      state->prefix = state->prefix << levelWidth(level) | uint32_t(bins[j]);
      state->need = need - before;
    }
  }
}

/// The elements FIRST + STEP * j (j < kTileItems) of tile TILE, past N as
/// 0; checked against N only in the last tile, so that the others' loads
/// are issued together rather than each after the last one's check.
__device__ inline void loadTile(const float *x, int64_t n, int64_t tile,
                                int64_t first, int step,
                                float (&items)[kTileItems]) {
  if ((tile + 1) * kTile <= n) {
#pragma unroll
    for (int j = 0; j < kTileItems; ++j)
      items[j] = x[first + step * j];
    return;
  }
#pragma unroll
  for (int j = 0; j < kTileItems; ++j) {
    const int64_t i = first + step * j;
    items[j] = i < n ? x[i] : 0.0f;
  }
}

/// An entry of magnitude bits BITS against the bound THRESHOLD as the
/// tile counts count it: 1 << 32 above, 1 equal, 0 below.
__device__ inline unsigned long long packedCount(uint32_t bits,
                                                 uint32_t threshold) {
  return bits > threshold ? 1ull << 32 : (bits == threshold ? 1ull : 0);
}

/// Per tile: how many entries are above the bound (high 32 bits) and
/// equal to it (low 32 bits). Each count is below 2^31, so the packed
/// sums of the tile scan never carry from one half into the other.
__global__ void tileCountKernel(Input in, int64_t n, const RadixState *bound,
                                unsigned long long *tileCounts) {
  using Reduce = cub::BlockReduce<unsigned long long, kTileThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const int64_t begin = blockIdx.x * kTile;
  const int64_t end = min(n, begin + kTile);
  const uint32_t threshold = bound->prefix;
  unsigned long long packed = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kTileThreads)
    packed += packedCount(magnitudeBits(load(in, i)), threshold);
  const unsigned long long total = Reduce(storage).Sum(packed);
  if (threadIdx.x == 0)
    tileCounts[blockIdx.x] = total;
}

/// The packed count (above << 32, plus equal) of the entries before tile
/// TILE in column COLUMN of TILEOFFSETS, the exclusive scan of TILES
/// tiles' counts. The scan ran over all columns: a column's own offsets
/// are the differences from its first (modulo 2^64, which the sums of
/// other columns may pass; a column's own are below 2^63).
__device__ inline unsigned long long
countBefore(const unsigned long long *tileOffsets, uint32_t column,
            int64_t tiles, int64_t tile) {
  const unsigned long long *offsets = tileOffsets + int64_t(column) * tiles;
  return offsets[tile] - offsets[0];
}

/// Writes the selected entries of TILES tiles at their places (see the
/// file comment), a block of kTileThreads a tile at a time; TILEOFFSETS is
/// the exclusive scan of the packed tile counts. Warp w takes the tile's
/// w-th run of kWarpRun elements, 32 consecutive ones at a time: a lane's
/// place among the warp's 32 is the population count of the lower lanes
/// in the ballot.
__device__ __forceinline__ void
compactTiles(const float *x, int64_t n, int64_t tiles, const RadixState *bound,
             const unsigned long long *tileOffsets, int32_t *indices,
             float *values) {
  __shared__ unsigned long long warpCounts[kTileThreads / 32];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const uint32_t threshold = bound->prefix;
  const uint64_t ties = uint64_t(bound->need);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t begin = tile * kTile + int64_t(warp) * kWarpRun + lane;
    float items[kTileItems];
    loadTile(x, n, tile, begin, 32, items);
    unsigned long long packed = 0;
#pragma unroll
    for (int j = 0; j < kTileItems; ++j)
      if (begin + 32 * j < n)
        packed += packedCount(magnitudeBits(items[j]), threshold);
    packed = warpSum(packed);
    if (lane == 0)
      warpCounts[warp] = packed;
    __syncthreads();
    unsigned long long before =
        countBefore(tileOffsets, bound->column, tiles, tile);
    for (int w = 0; w < warp; ++w)
      before += warpCounts[w];
    __syncthreads(); // every warp has read the counts: the next tile's
    const unsigned lowerLanes = (1u << lane) - 1;
#pragma unroll
    for (int j = 0; j < kTileItems; ++j) {
      const int64_t i = begin + 32 * j;
      const uint32_t bits = magnitudeBits(items[j]);
      const bool above = i < n && bits > threshold;
      const bool equal = i < n && bits == threshold;
      const unsigned aboveLanes = __ballot_sync(0xffffffffu, above);
      const unsigned equalLanes = __ballot_sync(0xffffffffu, equal);
      const uint64_t aboveBefore =
          (before >> 32) + unsigned(__popc(aboveLanes & lowerLanes));
      const uint64_t equalBefore =
          (before & 0xffffffffu) + unsigned(__popc(equalLanes & lowerLanes));
      if (above || (equal && equalBefore < ties)) {
        const uint64_t at = aboveBefore + min(equalBefore, ties);
        if (indices)
          indices[at] = int32_t(i);
        if (values)
          values[at] = items[j];
      }
      before +=
          (uint64_t(__popc(aboveLanes)) << 32) + unsigned(__popc(equalLanes));
    }
  }
}

/// The compaction of the state's BOUND (compactTiles). (Three blocks to a
/// multiprocessor at least: its registers, unbounded, would allow two.)
__global__ void __launch_bounds__(kTileThreads, 3)
    compactKernel(const float *x, int64_t n, int64_t tiles,
                  const RadixState *bound,
                  const unsigned long long *tileOffsets, int32_t *indices,
                  float *values) {
  compactTiles(x, n, tiles, bound, tileOffsets, indices, values);
}

/// Per block: the sum and the sum of squares (in double, as the CPU).
__global__ void momentsKernel(Input in, int64_t n, double2 *partials) {
  using Reduce = cub::BlockReduce<double, kBlock>;
  __shared__ typename Reduce::TempStorage storage;
  double sum = 0, squares = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double v = load(in, i);
    sum += v;
    squares += v * v;
  }
  const double blockSum = Reduce(storage).Sum(sum);
  __syncthreads(); // the second reduction reuses the storage
  const double blockSquares = Reduce(storage).Sum(squares);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = make_double2(blockSum, blockSquares);
}

/// One block: Gaussian-k's thresholds (COUNTS->tree) from the moments'
/// per-block PARTIALS (BLOCKS of them) of N values, QUANTILE being
/// gaussianQuantile(N, K).
__global__ void thresholdTreeKernel(const double2 *partials, int blocks,
                                    int64_t n, double quantile,
                                    GaussianCounts *counts) {
  using Reduce = cub::BlockReduce<double, kBlock>;
  __shared__ typename Reduce::TempStorage storage;
  double sum = 0, squares = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    sum += partials[b].x;
    squares += partials[b].y;
  }
  sum = Reduce(storage).Sum(sum);
  __syncthreads(); // the second reduction reuses the storage
  squares = Reduce(storage).Sum(squares);
  if (threadIdx.x != 0)
    return;
  ThresholdTree &tree = counts->tree;
  tree.value[0] = thresholdFromMoments(sum, squares, n, quantile);
  for (int t = 0; 2 * t + 2 < kTreeSize; ++t) {
    tree.value[2 * t + 1] = correctThreshold(tree.value[t], -1);
    tree.value[2 * t + 2] = correctThreshold(tree.value[t], 1);
  }
  int distinct = 0;
  for (int t = 0; t < kTreeSize; ++t) {
    const float bound = fabsf(tree.value[t]);
    int b = 0;
    while (b < distinct && floatBits(counts->bound[b]) != floatBits(bound))
      ++b;
    if (b == distinct)
      counts->bound[distinct++] = bound;
    counts->boundOf[t] = b;
    counts->above[t] = 0; // for countTreeKernel's sums
  }
  counts->distinct = distinct;
  counts->slotsOverflowed = 0;
  counts->finishedTiles = 0;
}

/// Gaussian-k's choice for K, at most CAPACITY entries, from COUNTS (the
/// count pass's, all added), to CHOICE; and the compaction's bound in
/// STATE: the chosen threshold, or, where the exact selection must run
/// instead, nothing (no magnitude reaches 0xffffffff). The counts are
/// read volatile: the count pass's other blocks wrote them.
__device__ void chooseGaussian(GaussianCounts *counts, int64_t k,
                               int64_t capacity, RadixState *state,
                               GaussianChoice *choiceOut) {
  const volatile unsigned long long *above = counts->above;
  const float first = counts->tree.value[0];
  GaussianChoice choice{0, 0, k};
  if (magnitudeBits(first) < 0x7f800000u) { // else inf or NaN among the x
    int node = 0;
    for (int round = 0; round < kGaussianCorrections; ++round) {
      const int side =
          compareToTarget(int64_t(above[counts->boundOf[node]]), k);
      if (side == 0)
        break;
      node = side < 0 ? 2 * node + 1 : 2 * node + 2;
    }
    const int64_t count = int64_t(above[counts->boundOf[node]]);
    // More pass than CAPACITY holds: the CAPACITY largest of them, which
    // are the CAPACITY largest of all (the others are at most the
    // threshold), ties to lower indices, as the CPU selects them.
    choice = {node, count,
              compareToTarget(count, k) != 0 ? k
              : count > capacity             ? capacity
                                             : 0};
  }
  *choiceOut = choice;
  // The slots hold every entry above the first threshold, so every entry
  // above a threshold at least as high.
  const uint32_t bound = magnitudeBits(counts->tree.value[choice.node]);
  const bool fromSlots =
      choice.exactK == 0 &&
      !*static_cast<volatile unsigned *>(&counts->slotsOverflowed) &&
      bound >= magnitudeBits(first);
  *state = choice.exactK > 0
               ? RadixState{0xffffffffu, 0, 0, 0}
               : RadixState{bound, 0, uint32_t(counts->boundOf[choice.node]),
                            fromSlots};
}

/// Per tile: how many |x| exceed each distinct threshold (the thresholds
/// are at least 0; a NaN or an infinity among the values makes the first
/// one NaN or infinite, and chooseGaussian the exact selection, so
/// that the counts matter only where every |x| is finite, and compare as
/// their bits do), as packed tile counts (above << 32; the Gaussian
/// compaction takes no ties) at TILECOUNTS[bound * tiles + tile], and
/// added to COUNTS->above. The entries above the first threshold go to the
/// tile's kSlots SLOTS, in no particular order, as far as there is room.
/// The compares and sums are in f32, whose pipes are twice as wide as the
/// integer ones: a thread's counts are at most kTileItems. The last block
/// to add its counts makes the choice for K of at most CAPACITY
/// (chooseGaussian), which saves a launch and a copy to the host.
__global__ void __launch_bounds__(kTileThreads)
    countTreeKernel(const float *x, int64_t n, GaussianCounts *counts,
                    unsigned long long *tileCounts, Slot *slots, int64_t k,
                    int64_t capacity, RadixState *state,
                    GaussianChoice *choice) {
  __shared__ unsigned blockCounts[kTreeSize];
  __shared__ unsigned slotsTaken;
  if (threadIdx.x < kTreeSize)
    blockCounts[threadIdx.x] = 0;
  if (threadIdx.x == 0)
    slotsTaken = 0;
  const int distinct = counts->distinct;
  float bounds[kTreeSize];
#pragma unroll
  for (int t = 0; t < kTreeSize; ++t)
    bounds[t] = counts->bound[t];
  __syncthreads();
  float items[kTileItems];
  const int64_t first = blockIdx.x * kTile + threadIdx.x;
  loadTile(x, n, blockIdx.x, first, kTileThreads, items);
  // The first threshold is the first distinct one, and every tree has it.
  Slot *tileSlots = slots + int64_t(blockIdx.x) * kSlots;
  float above[kTreeSize] = {};
#pragma unroll
  for (int j = 0; j < kTileItems; ++j) { // 0 past the end: above none
    if (fabsf(items[j]) > bounds[0]) {
      above[0] += 1.0f;
      const unsigned slot = atomicAdd(&slotsTaken, 1u);
      if (slot < kSlots)
        tileSlots[slot] = Slot{int32_t(first + kTileThreads * j), items[j]};
    }
  }
#pragma unroll
  for (int t = 1; t < kTreeSize; ++t) {
    if (t < distinct) {
#pragma unroll
      for (int j = 0; j < kTileItems; ++j)
        above[t] += fabsf(items[j]) > bounds[t] ? 1.0f : 0.0f;
    }
  }
  // Three counts to a word, 10 bits each: a warp's are at most 512.
#pragma unroll
  for (int t = 0; t < kTreeSize; t += 3) {
    if (t >= distinct)
      break;
    const unsigned packed = unsigned(above[t]) | unsigned(above[t + 1]) << 10 |
                            unsigned(above[t + 2]) << 20;
    const unsigned warpCounts = warpSum(packed);
    if (threadIdx.x % 32 == 0)
      for (int r = 0; r < 3; ++r)
        atomicAdd(&blockCounts[t + r], (warpCounts >> (10 * r)) & 1023u);
  }
  __syncthreads();
  if (threadIdx.x < kTreeSize) {
    const unsigned count = blockCounts[threadIdx.x];
    tileCounts[threadIdx.x * int64_t(gridDim.x) + blockIdx.x] =
        (unsigned long long)count << 32;
    if (count)
      atomicAdd(&counts->above[threadIdx.x], (unsigned long long)count);
  }
  if (threadIdx.x == 0 && slotsTaken > kSlots)
    counts->slotsOverflowed = 1;
  // Each thread's writes reach every block before the block's ticket is
  // taken: the block that takes the last ticket sees all counts.
  __shared__ bool lastBlock;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    lastBlock = atomicAdd(&counts->finishedTiles, 1u) == gridDim.x - 1;
  __syncthreads();
  if (lastBlock && threadIdx.x == 0)
    chooseGaussian(counts, k, capacity, state, choice);
}

/// Gaussian-k's compaction where chooseGaussian chose the slots: a warp a
/// tile (tiles apart by the grid's warps), each lane holding kLaneSlots of
/// the tile's slots (TILECOUNTS' first column counts them), writes those
/// above the BOUND at their places, as compactTiles would: after the
/// tile's selected entries before it (the scan) and the tile's selected
/// slots of lower index.
__device__ __forceinline__ void
gatherSlots(const RadixState *bound, const Slot *slots,
            const unsigned long long *tileCounts,
            const unsigned long long *tileOffsets, int64_t tiles,
            int32_t *indices, float *values) {
  const int lane = int(threadIdx.x) % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t tile = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
       tile < tiles; tile += warps) { // the whole warp's
    const int taken = int(tileCounts[tile] >> 32); // at most kSlots: chosen
    Slot mine[kLaneSlots];
    bool selected[kLaneSlots];
    unsigned place[kLaneSlots] = {};
#pragma unroll
    for (int r = 0; r < kLaneSlots; ++r) {
      const int s = lane + 32 * r;
      mine[r] = s < taken ? slots[tile * kSlots + s] : Slot{INT32_MAX, 0.0f};
      selected[r] = s < taken && magnitudeBits(mine[r].value) > bound->prefix;
    }
#pragma unroll
    for (int r = 0; r < kLaneSlots; ++r)
      for (int from = 0; from < 32 && from + 32 * r < taken; ++from) {
        const int32_t index = __shfl_sync(0xffffffffu, mine[r].index, from);
        const bool counts = __shfl_sync(0xffffffffu, selected[r], from);
#pragma unroll
        for (int q = 0; q < kLaneSlots; ++q)
          place[q] += counts && index < mine[q].index;
      }
    const uint64_t before =
        countBefore(tileOffsets, bound->column, tiles, tile) >> 32;
#pragma unroll
    for (int r = 0; r < kLaneSlots; ++r) {
      if (!selected[r])
        continue;
      if (indices)
        indices[before + place[r]] = mine[r].index;
      if (values)
        values[before + place[r]] = mine[r].value;
    }
  }
}

/// Gaussian-k's compaction, as chooseGaussian left BOUND: from the slots
/// (gatherSlots) or from the data (compactTiles), whose tile counts are
/// among TILECOUNTS' columns; one launch either way.
__global__ void __launch_bounds__(kTileThreads, 3)
    compactGaussianKernel(const float *x, int64_t n, int64_t tiles,
                          const RadixState *bound, const Slot *slots,
                          const unsigned long long *tileCounts,
                          const unsigned long long *tileOffsets,
                          int32_t *indices, float *values) {
  if (bound->fromSlots)
    gatherSlots(bound, slots, tileCounts, tileOffsets, tiles, indices, values);
  else
    compactTiles(x, n, tiles, bound, tileOffsets, indices, values);
}

/// VALUES rounded to the wire type, what the rounding dropped left in the
/// residual at their indices (SparseAllReduce.cpp's selectLocal).
__global__ void finishResidualKernel(float *residual, const int32_t *indices,
                                     float *values, int64_t count,
                                     int32_t valueType) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < count;
       j += int64_t(gridDim.x) * blockDim.x) {
    const float value = values[j];
    const float sent = roundToValueType(value, valueType);
    values[j] = sent;
    residual[indices[j]] = roundingResidual(value, sent);
  }
}

/// The dense choice of the exchange: u = GRAD + RESIDUAL sent whole,
/// rounded to the wire type, the rounding left in the residual (in f32
/// nothing, as on the CPU).
__global__ void denseResidualKernel(float *grad, float *residual, int64_t n,
                                    int32_t valueType) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float u = grad[i] + residual[i];
    const float sent = roundToValueType(u, valueType);
    grad[i] = sent;
    residual[i] = valueType == DTRAIN_RT_F32 ? 0.0f : roundingResidual(u, sent);
  }
}

int64_t tilesOf(int64_t n) { return (n + kTile - 1) / kTile; }

/// This thread's page-locked buffer for the choices of its Gaussian
/// selections, made on its first and kept for the process (a copy into
/// pageable memory would wait for a staging copy of the driver's).
GaussianChoice &hostChoice() {
  thread_local GaussianChoice *choice = [] {
    void *buffer = nullptr;
    DTRAIN_CUDA_CALL(cudaMallocHost, &buffer, sizeof(GaussianChoice));
    return static_cast<GaussianChoice *>(buffer);
  }();
  return *choice;
}

/// The device workspace of a selection over N elements, carved from BASE
/// (NULL: only the size is computed).
struct Workspace {
  unsigned long long *histogram;
  RadixState *state;
  /// A count per tile (a compaction's), or per tile and threshold of the
  /// tree (the Gaussian count pass's).
  unsigned long long *tileCounts, *tileOffsets;
  double2 *moments;
  GaussianCounts *gaussian;
  Slot *slots;
  void *scanStorage;
  size_t scanBytes;
  size_t size;

  Workspace(int64_t n, void *base) {
    const int64_t tiles = tilesOf(n);
    checkCuda(cub::DeviceScan::ExclusiveSum(
                  nullptr, scanBytes, (unsigned long long *)nullptr,
                  (unsigned long long *)nullptr, tiles * kTreeSize),
              "cub::DeviceScan::ExclusiveSum (workspace size)");
    // Every piece 256-byte aligned, from BASE rounded up (integers, not
    // pointers, so that a NULL base only sizes).
    const uintptr_t aligned =
        (reinterpret_cast<uintptr_t>(base) + 255) & ~uintptr_t(255);
    uintptr_t cursor = aligned;
    auto take = [&](size_t bytes) {
      const uintptr_t piece = cursor;
      cursor += (bytes + 255) & ~size_t(255);
      return reinterpret_cast<void *>(piece);
    };
    histogram = static_cast<unsigned long long *>(
        take(kBins * sizeof(unsigned long long)));
    state = static_cast<RadixState *>(take(sizeof(RadixState)));
    tileCounts = static_cast<unsigned long long *>(
        take(size_t(tiles) * kTreeSize * sizeof(unsigned long long)));
    tileOffsets = static_cast<unsigned long long *>(
        take(size_t(tiles) * kTreeSize * sizeof(unsigned long long)));
    moments = static_cast<double2 *>(take(kMaxGrid * sizeof(double2)));
    gaussian = static_cast<GaussianCounts *>(take(sizeof(GaussianCounts)));
    slots = static_cast<Slot *>(take(size_t(tiles) * kSlots * sizeof(Slot)));
    scanStorage = take(scanBytes);
    size = size_t(cursor - aligned) + 255; // room to align any base
  }
};

/// One selection on STREAM. The first pass over the data consumes the
/// input's GRAD (forms u), the later ones read u.
class Selector {
public:
  Selector(Input in, int64_t n, void *workspace, cudaStream_t stream,
           int32_t *indices, float *values)
      : in(in), n(n), ws(n, workspace), stream(stream), indices(indices),
        values(values) {}

  /// The min(K, N) largest |x|.
  int64_t exact(int64_t k) {
    if (k >= n) {
      compact(0, n); // everything: bits above 0, and all equal to 0
      return n;
    }
    DTRAIN_CUDA_LAUNCH(initStateKernel, 1, kBlock, stream, ws.state,
                       ws.histogram, 0u, k);
    for (int level = 0; level < 3; ++level) {
      DTRAIN_CUDA_LAUNCH(histogramKernel, gridFor(n), kBlock, stream,
                         firstPass(), n, ws.state, ws.histogram, level);
      DTRAIN_CUDA_LAUNCH(findBinKernel, 1, kFindThreads, stream, ws.state,
                         ws.histogram, level);
    }
    compactFromState();
    return k;
  }

  /// Gaussian-k for K (1 <= K <= N), at most CAPACITY entries.
  int64_t gaussian(int64_t k, int64_t capacity) {
    const unsigned blocks = gridFor(n);
    const unsigned tiles = unsigned(tilesOf(n));
    DTRAIN_CUDA_LAUNCH(momentsKernel, blocks, kBlock, stream, firstPass(), n,
                       ws.moments);
    DTRAIN_CUDA_LAUNCH(thresholdTreeKernel, 1, kBlock, stream, ws.moments,
                       int(blocks), n, gaussianQuantile(n, k), ws.gaussian);
    // The count pass's last block writes the choice where the host reads
    // it: page-locked memory, which kernels reach at its host address.
    GaussianChoice &choice = hostChoice();
    DTRAIN_CUDA_LAUNCH(countTreeKernel, tiles, kTileThreads, stream, in.x, n,
                       ws.gaussian, ws.tileCounts, ws.slots, k, capacity,
                       ws.state, &choice);
    scan(kTreeSize);
    DTRAIN_CUDA_LAUNCH(compactGaussianKernel, compactBlocks(), kTileThreads,
                       stream, in.x, n, int64_t(tiles), ws.state, ws.slots,
                       ws.tileCounts, ws.tileOffsets, indices, values);
    DTRAIN_CUDA_CALL(cudaStreamSynchronize, stream);
    return choice.exactK > 0 ? exact(choice.exactK) : choice.count;
  }

  /// Forms u when no pass did (nothing was selected).
  void finishInput() {
    if (in.grad && n > 0)
      DTRAIN_CUDA_LAUNCH(addKernel, gridFor(n), kBlock, stream, in.x, in.grad,
                         n);
    in.grad = nullptr;
  }

private:
  Input in;
  int64_t n;
  Workspace ws;
  cudaStream_t stream;
  int32_t *indices;
  float *values;

  /// The input of a pass: with GRAD for the first one only.
  Input firstPass() {
    const Input pass = in;
    in.grad = nullptr;
    return pass;
  }

  /// The entries with magnitude bits above THRESHOLD and the first TIES
  /// equal to it.
  void compact(uint32_t threshold, int64_t ties) {
    DTRAIN_CUDA_LAUNCH(initStateKernel, 1, kBlock, stream, ws.state,
                       ws.histogram, threshold, ties);
    compactFromState();
  }

  void compactFromState() {
    DTRAIN_CUDA_LAUNCH(tileCountKernel, unsigned(tilesOf(n)), kTileThreads,
                       stream, firstPass(), n, ws.state, ws.tileCounts);
    scan(1);
    DTRAIN_CUDA_LAUNCH(compactKernel, compactBlocks(), kTileThreads, stream,
                       in.x, n, tilesOf(n), ws.state, ws.tileOffsets, indices,
                       values);
  }

  /// The exclusive scan of the first COLUMNS columns of the tile counts,
  /// among which are the compaction's.
  void scan(int columns) {
    size_t scanBytes = ws.scanBytes;
    checkCuda(cub::DeviceScan::ExclusiveSum(ws.scanStorage, scanBytes,
                                            ws.tileCounts, ws.tileOffsets,
                                            tilesOf(n) * columns, stream),
              "cub::DeviceScan::ExclusiveSum");
  }

  /// The compaction's blocks: a tile each, up to the grid's cap.
  unsigned compactBlocks() const {
    return unsigned(std::min<int64_t>(tilesOf(n), kMaxGrid));
  }
};

/// The checks and the selection shared by both entry points; GRAD is NULL
/// for a plain selection.
int64_t select(float *x, const float *grad, int64_t n, int64_t k,
               int32_t method, int32_t *indices, float *values,
               int64_t capacity, void *workspace, size_t workspaceBytes,
               void *stream) {
  const char *name = dtrain::rt::selectMethodName(method);
  if (!name)
    fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
         "method %d is not valid (accepted: DTRAIN_RT_SELECT_EXACT, "
         "_GAUSSIAN)",
         int(method));
  if (method != DTRAIN_RT_SELECT_EXACT && method != DTRAIN_RT_SELECT_GAUSSIAN)
    fail(DTRAIN_RT_CUDA_UNSUPPORTED,
         "method %s is not implemented on CUDA (accepted: "
         "DTRAIN_RT_SELECT_EXACT, _GAUSSIAN)",
         name);
  if (n < 0 || n > INT32_MAX || k < 0 || capacity < 0)
    fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
         "(%s) n = %lld, k = %lld, capacity = %lld (accepted: 0 <= n <= "
         "2^31-1, k >= 0, capacity >= 0)",
         name, (long long)n, (long long)k, (long long)capacity);
  const int64_t exactCount = std::min(k, n);
  if (capacity < exactCount)
    fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
         "(%s) capacity %lld is below the %lld entries it selects", name,
         (long long)capacity, (long long)exactCount);
  if (n > 0 && !x)
    fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "(%s) the input is NULL", name);
  if (capacity > 0 && !indices && !values)
    fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "(%s) both outputs are NULL", name);
  const size_t needed = dtrain_rt_cuda_select_workspace_size(n);
  if (n > 0 && (!workspace || workspaceBytes < needed))
    fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
         "(%s) workspace of %zu bytes at %p for n = %lld (needed: %zu bytes, "
         "dtrain_rt_cuda_select_workspace_size)",
         name, workspaceBytes, workspace, (long long)n, needed);
  Selector selector(Input{x, grad}, n, workspace, asStream(stream), indices,
                    values);
  int64_t count = 0;
  if (exactCount > 0)
    count = method == DTRAIN_RT_SELECT_EXACT
                ? selector.exact(exactCount)
                : selector.gaussian(exactCount, capacity);
  selector.finishInput();
  return count;
}

} // namespace

size_t dtrain_rt_cuda_select_workspace_size(int64_t n) {
  if (n <= 0)
    return 0;
  try {
    return Workspace(n, nullptr).size;
  } catch (const Failure &) { // CUB failed to size its scan
    return 0;
  }
}

int dtrain_rt_cuda_select_f32(const float *x, int64_t n, int64_t k,
                              int32_t method, int32_t *indices, float *values,
                              int64_t capacity, int64_t *count,
                              void *workspace, size_t workspace_bytes,
                              void *stream) {
  return guarded("dtrain_rt_cuda_select_f32", [&] {
    if (!count)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "count is NULL");
    // Without a gradient the input is only read.
    *count = select(const_cast<float *>(x), nullptr, n, k, method, indices,
                    values, capacity, workspace, workspace_bytes, stream);
  });
}

int dtrain_rt_cuda_residual_select_f32(const float *grad, float *residual,
                                       int64_t n, int64_t k, int32_t method,
                                       int32_t value_type, int32_t *indices,
                                       float *values, int64_t capacity,
                                       int64_t *count, void *workspace,
                                       size_t workspace_bytes, void *stream) {
  return guarded("dtrain_rt_cuda_residual_select_f32", [&] {
    if (!count)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "count is NULL");
    if (!isSupportedFloatType(value_type))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "value type %d is not valid (accepted: DTRAIN_RT_F32, _BF16, "
           "_F16)",
           int(value_type));
    if (n > 0 && !grad)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "grad is NULL");
    if (std::min(k, n) > 0 && (!indices || !values))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "indices or values is NULL (both are needed to update the "
           "residual)");
    *count = select(residual, grad, n, k, method, indices, values, capacity,
                    workspace, workspace_bytes, stream);
    if (*count > 0)
      DTRAIN_CUDA_LAUNCH(finishResidualKernel, gridFor(*count, 1), kBlock,
                         asStream(stream), residual, indices, values, *count,
                         value_type);
  });
}

int dtrain_rt_cuda_dense_residual_f32(float *grad, float *residual, int64_t n,
                                      int32_t value_type, void *stream) {
  return guarded("dtrain_rt_cuda_dense_residual_f32", [&] {
    if (!isSupportedFloatType(value_type))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "value type %d is not valid (accepted: DTRAIN_RT_F32, _BF16, "
           "_F16)",
           int(value_type));
    if (n < 0)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "n = %lld (accepted: n >= 0)",
           (long long)n);
    if (n > 0 && (!grad || !residual))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "grad or residual is NULL");
    if (n > 0)
      DTRAIN_CUDA_LAUNCH(denseResidualKernel, gridFor(n), kBlock,
                         asStream(stream), grad, residual, n, value_type);
  });
}
