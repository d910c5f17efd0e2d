//===- DnnKernels.cu - pooling, and the small kernels around cuDNN's ------===//
//
// Pooling, forward and backward, on kernels of our own rather than cuDNN's:
// cuDNN pools with symmetric padding only, without dilation or ceil mode's
// clipped windows, and leaves open which of tied maxima gets the gradient,
// while the CPU kernels' contract (dtrain_rt.h) fixes all of these. Pooling
// is memory-bound; one thread per output (forward) or per input element
// (backward, gathering the windows that read it) is what cuDNN does too.
// What a thread computes is PoolKernels.h's, which a CPU test runs too.
//
// And what Dnn.cpp needs besides cuDNN: padded copies of images and their
// inverse (cuDNN pads symmetrically; an asymmetric padding's excess is
// materialized), a convolution's bias and its gradient in every element
// type (cuDNN's bias functions leave their 16-bit support unstated), the
// inverse standard deviations that cuDNN's batch-norm gradient takes, the
// biased variance from cuDNN's unbiased one, the sum of the pointwise
// convolutions' per-image weight gradients (PointwiseConv.h), and the ReLU
// and its gradient around cuDNN's batch norm where a trainer fuses them
// into it (dtrain_rt_cuda_batch_norm_train_relu_f32).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Float16.h"
#include "cuda/BatchNormSplits.h"
#include "cuda/HeavyOps.h"
#include "cuda/PoolKernels.h"

#include <algorithm>
#include <climits>
#include <type_traits>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

/// Grid-stride loop over [0, N) with 64-bit indices.
#define DTRAIN_GRID_LOOP(i, n)                                                 \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);    \
       i += int64_t(gridDim.x) * blockDim.x)

/// Exits naming the launch of KERNEL when it failed.
void checkLaunched(const KernelCall &call, const char *kernel) {
  call.check(cudaGetLastError(), kernel);
}

//===--- Pooling ----------------------------------------------------------===//

// A grid of (element in a plane, plane) over PoolKernels.h's functions.

/// The calling thread's element of a plane.
template <bool ChannelsLast>
__device__ PlaneElement threadElement(const PlaneShape &g) {
  return elementOf<ChannelsLast>(g, blockIdx.x * blockDim.x + threadIdx.x);
}

/// Loops PLANE over the calling thread's planes.
#define DTRAIN_PLANE_LOOP(plane, planes)                                       \
  for (int64_t plane = blockIdx.y; plane < (planes); plane += gridDim.y)

template <int32_t Type, bool ChannelsLast>
__global__ void poolForward(PlaneShape g, const void *__restrict__ x,
                            void *__restrict__ y) {
  const PlaneElement e = threadElement<ChannelsLast>(g);
  if (e.pixel >= g.outputs())
    return;
  const Window w = windowOf(g, e.pixel);
  DTRAIN_PLANE_LOOP(plane, g.planes) {
    poolOutputAt<Type, ChannelsLast>(g, w, e, plane, x, y);
  }
}

template <int32_t Type, bool ChannelsLast>
__global__ void poolArgmax(PlaneShape g, const void *__restrict__ x,
                           int32_t *__restrict__ argmax) {
  const PlaneElement e = threadElement<ChannelsLast>(g);
  if (e.pixel >= g.outputs())
    return;
  const Window w = windowOf(g, e.pixel);
  DTRAIN_PLANE_LOOP(plane, g.planes) {
    poolArgmaxAt<Type, ChannelsLast>(g, w, e, plane, x, argmax);
  }
}

template <int32_t Type, bool ChannelsLast>
__global__ void poolBackward(PlaneShape g, const int32_t *__restrict__ argmax,
                             const void *__restrict__ dy,
                             void *__restrict__ dx) {
  const PlaneElement e = threadElement<ChannelsLast>(g);
  if (e.pixel >= g.inputs())
    return;
  const InputReaders r = readersOf(g, e);
  DTRAIN_PLANE_LOOP(plane, g.planes) {
    poolGradientAt<Type, ChannelsLast>(g, r, e, plane, argmax, dy, dx);
  }
}

//===--- Around cuDNN -----------------------------------------------------===//

/// The bits of one element of the float type TYPE: a copy moves them, and
/// 0 is +0 in every float type.
template <int32_t Type>
using Bits = std::conditional_t<Type == DTRAIN_RT_F32, uint32_t, uint16_t>;

/// Every element of the padded planes: the source element, or 0 outside.
template <int32_t Type>
__global__ void padPlanes(PaddedPlanes p, const void *__restrict__ source,
                          void *__restrict__ target) {
  using T = Bits<Type>;
  const T *src = static_cast<const T *>(source);
  T *dst = static_cast<T *>(target);
  DTRAIN_GRID_LOOP(i, p.planes * p.ph * p.pw) {
    const int64_t x = i % p.pw - p.left;
    const int64_t y = i / p.pw % p.ph - p.top;
    const int64_t plane = i / p.pw / p.ph;
    dst[i] = y >= 0 && y < p.h && x >= 0 && x < p.w
                 ? src[(plane * p.h + y) * p.w + x]
                 : T(0);
  }
}

/// Every element of the unpadded planes, from the padded ones.
template <int32_t Type>
__global__ void cropPlanes(PaddedPlanes p, const void *__restrict__ source,
                           void *__restrict__ target) {
  using T = Bits<Type>;
  const T *src = static_cast<const T *>(source);
  T *dst = static_cast<T *>(target);
  DTRAIN_GRID_LOOP(i, p.planes * p.h * p.w) {
    const int64_t x = i % p.w;
    const int64_t y = i / p.w % p.h;
    const int64_t plane = i / p.w / p.h;
    dst[i] = src[(plane * p.ph + y + p.top) * p.pw + x + p.left];
  }
}

__global__ void addBias(int32_t type, const void *__restrict__ bias,
                        void *__restrict__ y, int64_t n, int64_t c,
                        int64_t spatial) {
  DTRAIN_GRID_LOOP(i, n * c * spatial) {
    const int64_t channel = i / spatial % c;
    storeFromFloat(y, type, i,
                   loadAsFloat(y, type, i) + loadAsFloat(bias, type, channel));
  }
}

/// One block per channel (a grid-stride loop over channels): each thread
/// sums a strided share of the channel's N x SPATIAL elements, then the
/// block's kBlock partial sums are added as a tree.
__global__ void biasGradient(int32_t type, const void *__restrict__ dy,
                             void *__restrict__ db, int64_t n, int64_t c,
                             int64_t spatial) {
  static_assert((kBlock & (kBlock - 1)) == 0, "the tree halves kBlock");
  __shared__ float partial[kBlock];
  const int64_t count = n * spatial;
  for (int64_t channel = blockIdx.x; channel < c; channel += gridDim.x) {
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
      sum += loadAsFloat(dy, type,
                         (j / spatial * c + channel) * spatial + j % spatial);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0)
      storeFromFloat(db, type, channel, partial[0]);
    __syncthreads(); // partial[0] read before the next channel's sums
  }
}

__global__ void sumBatches(int32_t type, const float *__restrict__ partials,
                           int64_t batches, int64_t count,
                           void *__restrict__ y) {
  DTRAIN_GRID_LOOP(i, count) {
    float sum = 0.0f;
    for (int64_t b = 0; b < batches; ++b)
      sum += partials[b * count + i];
    storeFromFloat(y, type, i, sum);
  }
}

template <int32_t Type>
__global__ void reluInPlace(void *y, const void *__restrict__ residual,
                            int64_t count) {
  ElementBits<Type> *data = static_cast<ElementBits<Type> *>(y);
  DTRAIN_GRID_LOOP(i, count) {
    const float v = widenElement<Type>(data[i]);
    data[i] = roundElement<Type>(
        residual ? residualRelu<Type>(
                       v, widenElement<Type>(
                              static_cast<const ElementBits<Type> *>(
                                  residual)[i]))
                 : relu(v));
  }
}

__global__ void reluGradients(int32_t type, const void *__restrict__ dz,
                             const void *__restrict__ z, void *__restrict__ dy,
                             int64_t count) {
  DTRAIN_GRID_LOOP(i, count) {
    storeFromFloat(
        dy, type, i,
        gpu::reluGradient(loadAsFloat(dz, type, i), loadAsFloat(z, type, i)));
  }
}

__global__ void widen(int32_t type, const void *__restrict__ x,
                      float *__restrict__ y, int64_t n) {
  DTRAIN_GRID_LOOP(i, n) { y[i] = loadAsFloat(x, type, i); }
}

__global__ void inverseStds(const float *__restrict__ var, float epsilon,
                            float *__restrict__ invStd, int64_t c) {
  DTRAIN_GRID_LOOP(i, c) { invStd[i] = inverseStd(var[i], epsilon); }
}

__global__ void biasVariance(float *var, double factor, int64_t c) {
  DTRAIN_GRID_LOOP(i, c) { var[i] = float(double(var[i]) * factor); }
}

} // namespace

namespace {

/// G with its plane's sizes as ints; fails where a plane is too large.
PlaneShape planeShape(const KernelCall &call, const PoolShape &g) {
  // A bound of every coordinate the kernels compute along D.
  auto reach = [](const PoolDim &d, int64_t outputs) {
    return outputs * d.stride + d.padBegin + (d.kernel - 1) * d.dilation +
           d.in + d.padEnd;
  };
  const int64_t largest =
      std::max({g.h.in * g.w.in * g.channels, g.oh * g.ow * g.channels,
                reach(g.h, g.oh), reach(g.w, g.ow)});
  if (largest > INT32_MAX)
    call.fail("a pooling plane of %lld x %lld (windows %lld x %lld) is more "
              "than the CUDA kernels' 32-bit plane indices take",
              (long long)g.h.in, (long long)g.w.in, (long long)g.h.kernel,
              (long long)g.w.kernel);
  auto dim = [](const PoolDim &d) {
    return PlaneDim{int(d.in),       int(d.kernel), int(d.stride),
                    int(d.padBegin), int(d.padEnd), int(d.dilation)};
  };
  return {g.kind,    g.planes,     dim(g.h), dim(g.w),
          int(g.oh), int(g.ow), int(g.channels)};
}

/// The launch of a pooling kernel over PLANES planes of PERPLANE elements
/// (see DTRAIN_PLANE_LOOP): blocks of up to kBlock threads along a plane,
/// rows of them over about kPlaneBlocks blocks in all.
struct PlaneLaunch {
  dim3 grid, block;
};

PlaneLaunch planeLaunch(int64_t perPlane, int64_t planes) {
  constexpr int64_t kPlaneBlocks = 4096;
  constexpr int64_t kMaxGridY = 65535;
  // A plane smaller than a block takes fewer threads, in whole warps.
  const int64_t threads = std::min<int64_t>(kBlock, (perPlane + 31) / 32 * 32);
  const int64_t across = (perPlane + threads - 1) / threads;
  const int64_t rows = std::clamp<int64_t>(kPlaneBlocks / across, 1,
                                           std::min(planes, kMaxGridY));
  return {dim3(unsigned(across), unsigned(rows)), dim3(unsigned(threads))};
}

/// Calls LAUNCH with TYPE and the layout of G as template arguments.
template <class Launch>
void forPoolKernel(int32_t type, const PoolShape &g, Launch launch) {
  forFloatType(type, [&](auto t) {
    if (g.channels > 1)
      launch(t, std::true_type());
    else
      launch(t, std::false_type());
  });
}

} // namespace

void dtrain::rt::gpu::launchPool(const KernelCall &call, const PoolShape &g,
                                 int32_t type, const void *x, void *y) {
  const PlaneShape plane = planeShape(call, g);
  const PlaneLaunch launch = planeLaunch(g.oh * g.ow * g.channels, g.planes);
  forPoolKernel(type, g, [&](auto t, auto channelsLast) {
    poolForward<decltype(t)::value, decltype(channelsLast)::value>
        <<<launch.grid, launch.block, 0, call.stream()>>>(plane, x, y);
  });
  checkLaunched(call, "poolForward launch");
}

void dtrain::rt::gpu::launchPoolBackward(KernelCall &call, const PoolShape &g,
                                         int32_t type, const void *x,
                                         const void *dy, void *dx) {
  const PlaneShape plane = planeShape(call, g);
  int32_t *argmax = nullptr;
  if (g.kind == DTRAIN_RT_POOL_MAX) {
    const int64_t outputs = g.planes * g.oh * g.ow * g.channels;
    argmax =
        static_cast<int32_t *>(call.scratch(size_t(outputs) * sizeof(int32_t)));
    const PlaneLaunch launch = planeLaunch(g.oh * g.ow * g.channels, g.planes);
    forPoolKernel(type, g, [&](auto t, auto channelsLast) {
      poolArgmax<decltype(t)::value, decltype(channelsLast)::value>
          <<<launch.grid, launch.block, 0, call.stream()>>>(plane, x, argmax);
    });
    checkLaunched(call, "poolArgmax launch");
  }
  const PlaneLaunch launch =
      planeLaunch(g.h.in * g.w.in * g.channels, g.planes);
  forPoolKernel(type, g, [&](auto t, auto channelsLast) {
    poolBackward<decltype(t)::value, decltype(channelsLast)::value>
        <<<launch.grid, launch.block, 0, call.stream()>>>(plane, argmax, dy,
                                                          dx);
  });
  checkLaunched(call, "poolBackward launch");
}

void dtrain::rt::gpu::launchPadPlanes(const KernelCall &call,
                                      const PaddedPlanes &p, int32_t type,
                                      const void *src, void *dst) {
  forFloatType(type, [&](auto t) {
    padPlanes<decltype(t)::value>
        <<<gridFor(p.planes * p.ph * p.pw), kBlock, 0, call.stream()>>>(p, src,
                                                                        dst);
  });
  checkLaunched(call, "padPlanes launch");
}

void dtrain::rt::gpu::launchCropPlanes(const KernelCall &call,
                                       const PaddedPlanes &p, int32_t type,
                                       const void *src, void *dst) {
  forFloatType(type, [&](auto t) {
    cropPlanes<decltype(t)::value>
        <<<gridFor(p.planes * p.h * p.w), kBlock, 0, call.stream()>>>(p, src,
                                                                      dst);
  });
  checkLaunched(call, "cropPlanes launch");
}

void dtrain::rt::gpu::launchAddBias(const KernelCall &call, int32_t type,
                                    const void *bias, void *y, int64_t n,
                                    int64_t c, int64_t spatial) {
  addBias<<<gridFor(n * c * spatial), kBlock, 0, call.stream()>>>(
      type, bias, y, n, c, spatial);
  checkLaunched(call, "addBias launch");
}

void dtrain::rt::gpu::launchBiasGradient(const KernelCall &call, int32_t type,
                                         const void *dy, void *db, int64_t n,
                                         int64_t c, int64_t spatial) {
  const unsigned grid = unsigned(c < kMaxGrid ? c : kMaxGrid);
  biasGradient<<<grid, kBlock, 0, call.stream()>>>(type, dy, db, n, c, spatial);
  checkLaunched(call, "biasGradient launch");
}

void dtrain::rt::gpu::launchRelu(const KernelCall &call, int32_t type,
                                 void *y, const void *residual,
                                 int64_t count) {
  forFloatType(type, [&](auto t) {
    reluInPlace<decltype(t)::value>
        <<<gridFor(count), kBlock, 0, call.stream()>>>(y, residual, count);
  });
  checkLaunched(call, "reluInPlace launch");
}

void dtrain::rt::gpu::launchReluGradient(const KernelCall &call, int32_t type,
                                         const void *dz, const void *z,
                                         void *dy, int64_t count) {
  reluGradients<<<gridFor(count), kBlock, 0, call.stream()>>>(type, dz, z, dy,
                                                              count);
  checkLaunched(call, "reluGradients launch");
}

void dtrain::rt::gpu::launchSumBatches(const KernelCall &call, int32_t type,
                                       const float *partials, int64_t batches,
                                       int64_t count, void *y) {
  sumBatches<<<gridFor(count, 1), kBlock, 0, call.stream()>>>(
      type, partials, batches, count, y);
  checkLaunched(call, "sumBatches launch");
}

void dtrain::rt::gpu::launchWiden(const KernelCall &call, int32_t type,
                                  const void *x, float *y, int64_t n) {
  widen<<<gridFor(n), kBlock, 0, call.stream()>>>(type, x, y, n);
  checkLaunched(call, "widen launch");
}

void dtrain::rt::gpu::launchInverseStd(const KernelCall &call, const float *var,
                                       float epsilon, float *invStd,
                                       int64_t c) {
  inverseStds<<<gridFor(c), kBlock, 0, call.stream()>>>(var, epsilon, invStd,
                                                        c);
  checkLaunched(call, "inverseStds launch");
}

void dtrain::rt::gpu::launchBiasVariance(const KernelCall &call, float *var,
                                         int64_t count, int64_t c) {
  biasVariance<<<gridFor(c), kBlock, 0, call.stream()>>>(
      var, double(count - 1) / double(count), c);
  checkLaunched(call, "biasVariance launch");
}
