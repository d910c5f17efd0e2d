//===- BatchNorm.cu - batch norm in training on split channels ------------===//
//
// The kernels of BatchNormSplits.h (which says why and how): for each
// direction, one kernel of block sums and one that combines them and
// writes its range. A block takes split blockIdx.x of channel blockIdx.y
// (and every gridDim.y-th channel after it).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/BatchNormSplits.h"
#include "cuda/CudaDriver.h"
#include "cuda/HeavyOps.h"

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

/// The sums of the calling block's threads (blockDim.x, a multiple of 32),
/// in thread 0. Every thread of the block calls it.
__device__ SumPair blockSum(SumPair sums) {
  __shared__ SumPair warps[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    sums.first += __shfl_down_sync(kFullWarp, sums.first, offset);
    sums.second += __shfl_down_sync(kFullWarp, sums.second, offset);
  }
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    warps[warp] = sums;
  __syncthreads();
  if (warp == 0) {
    sums = lane < blockDim.x / 32 ? warps[lane] : SumPair{};
    for (int offset = 16; offset > 0; offset /= 2) {
      sums.first += __shfl_down_sync(kFullWarp, sums.first, offset);
      sums.second += __shfl_down_sync(kFullWarp, sums.second, offset);
    }
  }
  __syncthreads(); // WARPS read before a next call writes it
  return sums;
}

/// The sums of channel CH's splits (PARTIALS[CH * SPLITS + split]), in
/// double, in the lanes of warp 0 (lane 0 holds the total).
__device__ void channelSums(const BatchNormSplits &g, const SumPair *partials,
                            int32_t ch, double &first, double &second) {
  first = 0.0;
  second = 0.0;
  for (int32_t split = threadIdx.x; split < g.splits; split += 32) {
    const SumPair p = partials[int64_t(ch) * g.splits + split];
    first += double(p.first);
    second += double(p.second);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    first += __shfl_down_sync(kFullWarp, first, offset);
    second += __shfl_down_sync(kFullWarp, second, offset);
  }
}

/// What thread 0 makes, MAKE(first, second), of channel CH's split sums
/// (added up by channelSums), for the whole block. Every thread of the
/// block calls it.
template <class Terms, class Make>
__device__ Terms shareChannelTerms(const BatchNormSplits &g,
                                   const SumPair *partials, int32_t ch,
                                   Make make) {
  __shared__ Terms shared;
  if (threadIdx.x < 32) {
    double first, second;
    channelSums(g, partials, ch, first, second);
    if (threadIdx.x == 0)
      shared = make(first, second);
  }
  __syncthreads();
  const Terms terms = shared;
  __syncthreads(); // SHARED read before a next call writes it
  return terms;
}

template <int32_t Type, int Width>
__global__ void __launch_bounds__(kBatchNormThreads)
    splitBatchNormSums(BatchNormSplits g, const void *__restrict__ x,
                       SumPair *__restrict__ partials,
                       float *__restrict__ shifts) {
  for (int32_t ch = blockIdx.y; ch < g.c; ch += gridDim.y) {
    const float shift = channelShift<Type>(g, x, ch);
    const SumPair sums = blockSum(shiftedSums<Type, Width>(
        g, x, ch, blockIdx.x, threadIdx.x, blockDim.x, shift));
    if (threadIdx.x == 0) {
      partials[int64_t(ch) * g.splits + blockIdx.x] = sums;
      if (blockIdx.x == 0)
        shifts[ch] = shift;
    }
  }
}

template <int32_t Type, int Width>
__global__ void __launch_bounds__(kBatchNormThreads)
    splitBatchNormApply(BatchNormSplits g, const void *__restrict__ x,
                        const float *__restrict__ scale,
                        const float *__restrict__ bias,
                        const SumPair *__restrict__ partials,
                        const float *__restrict__ shifts, float epsilon,
                        BatchNormActivation activation, void *__restrict__ y,
                        float *__restrict__ batchMean,
                        float *__restrict__ batchVar) {
  for (int32_t ch = blockIdx.y; ch < g.c; ch += gridDim.y) {
    const BatchStatistics s = shareChannelTerms<BatchStatistics>(
        g, partials, ch, [&](double sum, double squares) {
          const BatchStatistics made =
              batchStatistics(sum, squares, g.count(), shifts[ch]);
          if (blockIdx.x == 0) {
            batchMean[ch] = made.mean;
            batchVar[ch] = made.var;
          }
          return made;
        });
    normalizeUnits<Type, Width>(
        g, x, y, ch, blockIdx.x, threadIdx.x, blockDim.x, s.mean,
        scale[ch] * inverseStd(s.var, epsilon), bias[ch], activation);
  }
}

template <int32_t Type, int Width>
__global__ void __launch_bounds__(kBatchNormThreads)
    splitBatchNormGradientSums(BatchNormSplits g, const void *__restrict__ x,
                               const void *__restrict__ dy,
                               const void *__restrict__ z,
                               const float *__restrict__ batchMean,
                               SumPair *__restrict__ partials) {
  for (int32_t ch = blockIdx.y; ch < g.c; ch += gridDim.y) {
    const SumPair sums = blockSum(gradientSums<Type, Width>(
        g, x, dy, z, ch, blockIdx.x, threadIdx.x, blockDim.x, batchMean[ch]));
    if (threadIdx.x == 0)
      partials[int64_t(ch) * g.splits + blockIdx.x] = sums;
  }
}

template <int32_t Type, int Width>
__global__ void __launch_bounds__(kBatchNormThreads) splitBatchNormGradient(
    BatchNormSplits g, const void *__restrict__ x, const void *__restrict__ dy,
    const void *__restrict__ z, const float *__restrict__ scale,
    const float *__restrict__ batchMean, const float *__restrict__ batchVar,
    const SumPair *__restrict__ partials, float epsilon, void *__restrict__ dx,
    float *__restrict__ dscale, float *__restrict__ dbias) {
  for (int32_t ch = blockIdx.y; ch < g.c; ch += gridDim.y) {
    const GradientTerms t = shareChannelTerms<GradientTerms>(
        g, partials, ch, [&](double sumDy, double sumDyX) {
          const GradientTerms made =
              gradientTerms(sumDy, sumDyX, g.count(), batchMean[ch],
                            batchVar[ch], scale[ch], epsilon);
          if (blockIdx.x == 0) {
            dscale[ch] = made.dscale;
            dbias[ch] = made.dbias;
          }
          return made;
        });
    gradientUnits<Type, Width>(g, x, dy, z, dx, ch, blockIdx.x, threadIdx.x,
                               blockDim.x, t);
  }
}

/// The split of a batch norm of TYPE whose data pointers are DATA, after
/// checking that its sizes fit the kernels' 32-bit indices.
template <size_t N>
BatchNormSplits checkedSplits(const KernelCall &call, int32_t type, int64_t n,
                              int64_t c, int64_t spatial,
                              const void *const (&data)[N]) {
  if (c > INT32_MAX || spatial > INT32_MAX || n * spatial > INT32_MAX)
    call.fail("a batch norm of %lld x %lld x %lld is more than the split "
              "kernels' 32-bit indices take (DTRAIN_CUDA_SPLIT_BATCH_NORM=0 "
              "runs cuDNN's)",
              (long long)n, (long long)c, (long long)spatial);
  const int bytes = type == DTRAIN_RT_F32 ? 4 : 2;
  return splitBatchNorm(n, c, spatial,
                        batchNormUnitWidth(spatial, bytes, data));
}

dim3 splitGrid(const BatchNormSplits &g) {
  constexpr int32_t kMaxGridY = 65535;
  return dim3(unsigned(g.splits), unsigned(g.c < kMaxGridY ? g.c : kMaxGridY));
}

/// What the first kernel of a direction leaves the second, in scratch
/// memory: the splits' sums, and (forward) each channel's shift, so that
/// the second kernel need not read X, which Y may overwrite in place.
struct SplitScratch {
  SumPair *partials;
  float *shifts;
};

SplitScratch splitScratch(KernelCall &call, const BatchNormSplits &g) {
  const size_t sums = size_t(g.c) * size_t(g.splits) * sizeof(SumPair);
  char *scratch =
      static_cast<char *>(call.scratch(sums + size_t(g.c) * sizeof(float)));
  return {reinterpret_cast<SumPair *>(scratch),
          reinterpret_cast<float *>(scratch + sums)};
}

} // namespace

bool dtrain::rt::gpu::splitBatchNormSelected() {
  static const bool selected = switchedOn(
      "DTRAIN_CUDA_SPLIT_BATCH_NORM", false,
      "run batch norm in training on cuDNN",
      "run it on the runtime's kernels, each channel split over blocks");
  return selected;
}

void dtrain::rt::gpu::launchSplitBatchNormTrain(
    KernelCall &call, int32_t type, const void *x, const float *scale,
    const float *bias, void *y, float *batchMean, float *batchVar, int64_t n,
    int64_t c, int64_t spatial, float epsilon,
    const BatchNormActivation &activation) {
  const BatchNormSplits g =
      checkedSplits(call, type, n, c, spatial, {x, activation.residual, y});
  const SplitScratch scratch = splitScratch(call, g);
  forTypeAndWidth(type, g.width, [&](auto t, auto w) {
    constexpr int32_t Type = decltype(t)::value;
    constexpr int Width = decltype(w)::value;
    splitBatchNormSums<Type, Width>
        <<<splitGrid(g), kBatchNormThreads, 0, call.stream()>>>(
            g, x, scratch.partials, scratch.shifts);
    call.check(cudaGetLastError(), "splitBatchNormSums launch");
    splitBatchNormApply<Type, Width>
        <<<splitGrid(g), kBatchNormThreads, 0, call.stream()>>>(
            g, x, scale, bias, scratch.partials, scratch.shifts, epsilon,
            activation, y, batchMean, batchVar);
    call.check(cudaGetLastError(), "splitBatchNormApply launch");
  });
}

void dtrain::rt::gpu::launchSplitBatchNormBackward(
    KernelCall &call, int32_t type, const void *x, const void *dy,
    const void *z, const float *scale, const float *batchMean,
    const float *batchVar, void *dx, float *dscale, float *dbias, int64_t n,
    int64_t c, int64_t spatial, float epsilon) {
  const BatchNormSplits g =
      checkedSplits(call, type, n, c, spatial, {x, dy, z, dx});
  const SplitScratch scratch = splitScratch(call, g);
  forTypeAndWidth(type, g.width, [&](auto t, auto w) {
    constexpr int32_t Type = decltype(t)::value;
    constexpr int Width = decltype(w)::value;
    splitBatchNormGradientSums<Type, Width>
        <<<splitGrid(g), kBatchNormThreads, 0, call.stream()>>>(
            g, x, dy, z, batchMean, scratch.partials);
    call.check(cudaGetLastError(), "splitBatchNormGradientSums launch");
    splitBatchNormGradient<Type, Width>
        <<<splitGrid(g), kBatchNormThreads, 0, call.stream()>>>(
            g, x, dy, z, scale, batchMean, batchVar, scratch.partials, epsilon,
            dx, dscale, dbias);
    call.check(cudaGetLastError(), "splitBatchNormGradient launch");
  });
}
