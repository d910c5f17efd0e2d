//===- BatchNormSplits.h - batch norm on split channels ---------*- C++ -*-===//
//
// The arithmetic of the runtime's own batch-norm kernels (BatchNorm.cu,
// DTRAIN_CUDA_SPLIT_BATCH_NORM=1), with or without a ReLU after it, as
// host and device functions, so that a CPU test
// (test/BatchNormSplitsTest.cpp) runs the very same code over an emulated
// grid.
//
// cuDNN's NCHW batch norm gives each channel one block: on an H200 the
// 112x112 layers of resnet50 ran in 64 blocks, and its batch norms took
// 4.5 of the step's 14.4 ms. Here each channel's N x SPATIAL elements are
// split into SPLITS ranges, one block each, so that a grid of about
// kTargetBlocks blocks covers any shape. Each direction is two kernels:
// the first sums each block's range (two sums a block); the second
// combines its channel's sums, in double, into the statistics and
// normalizes (or differentiates) its range. The ranges are walked in
// units of WIDTH consecutive elements of one row, loaded and stored as one
// access of up to 16 bytes.
//
// Statistics: the sums are of X - SHIFT, SHIFT being the channel's first
// element, and of its square: the variance E[(X - SHIFT)^2] - E[X -
// SHIFT]^2 does not cancel as a plain one-pass variance would where the
// mean is large beside the spread. The variance is the biased one, as the
// CPU kernels return it.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_BATCHNORMSPLITS_H
#define DTRAIN_RUNTIME_CUDA_BATCHNORMSPLITS_H

#include "HostDevice.h"
#include "cuda/FloatTypes.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dtrain::rt::gpu {

/// max(V, 0), a NaN staying a NaN (as torch.relu, and nn.relu's lowering,
/// arith.maximumf); -0 gives +0.
DTRAIN_RT_HOST_DEVICE inline float relu(float v) {
  return v > 0.0f || v != v ? v : 0.0f;
}

/// The ReLU's gradient from its output Z: DZ where Z > 0, else 0 (at 0 and
/// at a NaN too), as nn.relu_grad's.
DTRAIN_RT_HOST_DEVICE inline float reluGradient(float dz, float z) {
  return z > 0.0f ? dz : 0.0f;
}

/// What follows a batch norm in its kernel: nothing, a ReLU, or the sum
/// with RESIDUAL (of the batch norm's shape and type) and a ReLU.
struct BatchNormActivation {
  bool relu = false;
  const void *residual = nullptr;
};

/// The ReLU of a batch norm's result NORMALIZED plus RESIDUAL in TYPE,
/// rounded as the ops it replaces round them: the batch norm's result to
/// TYPE, then the sum (in f32) to TYPE.
template <int32_t Type>
DTRAIN_RT_HOST_DEVICE inline float residualRelu(float normalized,
                                                float residual) {
  const float y = widenElement<Type>(roundElement<Type>(normalized));
  return relu(widenElement<Type>(roundElement<Type>(y + residual)));
}

/// How a batch norm's N x C x SPATIAL elements are split: channel CH's
/// elements, N rows of SPATIAL, are UNITS units of WIDTH elements a row,
/// N x UNITS in all, taken CHUNK at a time by SPLITS blocks (the last may
/// take fewer).
struct BatchNormSplits {
  int32_t n, c, spatial, width, units, splits, chunk;

  DTRAIN_RT_HOST_DEVICE int64_t count() const { return int64_t(n) * spatial; }

  /// Calls VISIT(offset) with the element offset of each unit that thread
  /// THREAD of THREADS takes of split SPLIT of channel CH.
  template <class Visit>
  DTRAIN_RT_HOST_DEVICE void forEachUnit(int32_t ch, int32_t split,
                                         int32_t thread, int32_t threads,
                                         Visit visit) const {
    const int64_t rangeEnd = int64_t(split + 1) * chunk;
    const int64_t end =
        rangeEnd < int64_t(n) * units ? rangeEnd : int64_t(n) * units;
    int64_t at = int64_t(split) * chunk + thread;
    if (at >= end)
      return;
    // The unit's row and place in it, stepped without a division a unit.
    int32_t row = int32_t(at / units), column = int32_t(at % units);
    const int32_t rowStep = threads / units, columnStep = threads % units;
    for (; at < end; at += threads) {
      visit((int64_t(row) * c + ch) * spatial + int64_t(column) * width);
      row += rowStep;
      column += columnStep;
      if (column >= units) {
        column -= units;
        ++row;
      }
    }
  }

  /// The element offset of channel CH's first element.
  DTRAIN_RT_HOST_DEVICE int64_t first(int32_t ch) const {
    return int64_t(ch) * spatial;
  }
};

/// Channel CH's first element, the shift of its sums.
template <int32_t Type>
DTRAIN_RT_HOST_DEVICE float channelShift(const BatchNormSplits &g,
                                         const void *x, int32_t ch) {
  return widenElement<Type>(
      static_cast<const ElementBits<Type> *>(x)[g.first(ch)]);
}

/// Two sums of one thread, block or split (zero when value-initialized:
/// SumPair{}).
struct SumPair {
  float first, second;
};

/// The sums of X - SHIFT and (X - SHIFT)^2 over what thread THREAD of
/// THREADS takes of split SPLIT of channel CH.
template <int32_t Type, int Width>
DTRAIN_RT_HOST_DEVICE SumPair shiftedSums(const BatchNormSplits &g,
                                          const void *x, int32_t ch,
                                          int32_t split, int32_t thread,
                                          int32_t threads, float shift) {
  SumPair sums{};
  g.forEachUnit(ch, split, thread, threads, [&](int64_t offset) {
    const WideUnit<Type, Width> unit(x, offset);
    for (int i = 0; i < Width; ++i) {
      const float d = unit.values[i] - shift;
      sums.first += d;
      sums.second += d * d;
    }
  });
  return sums;
}

/// The output gradient's unit at OFFSET: DY's, or with Z (the ReLU's output
/// after a fused batch norm) DZ's where Z > 0, else 0.
template <int32_t Type, int Width>
DTRAIN_RT_HOST_DEVICE WideUnit<Type, Width>
outputGradient(const void *dy, const void *z, int64_t offset) {
  WideUnit<Type, Width> grad(dy, offset);
  if (z) {
    const WideUnit<Type, Width> output(z, offset);
    for (int i = 0; i < Width; ++i)
      grad.values[i] = reluGradient(grad.values[i], output.values[i]);
  }
  return grad;
}

/// The sums of DY and DY (X - MEAN) over what thread THREAD of THREADS
/// takes of split SPLIT of channel CH; DY as outputGradient takes it.
template <int32_t Type, int Width>
DTRAIN_RT_HOST_DEVICE SumPair gradientSums(const BatchNormSplits &g,
                                           const void *x, const void *dy,
                                           const void *z, int32_t ch,
                                           int32_t split, int32_t thread,
                                           int32_t threads, float mean) {
  SumPair sums{};
  g.forEachUnit(ch, split, thread, threads, [&](int64_t offset) {
    const WideUnit<Type, Width> xs(x, offset);
    const WideUnit<Type, Width> dys =
        outputGradient<Type, Width>(dy, z, offset);
    for (int i = 0; i < Width; ++i) {
      sums.first += dys.values[i];
      sums.second += dys.values[i] * (xs.values[i] - mean);
    }
  });
  return sums;
}

/// A channel's batch statistics from its splits' shiftedSums, added up in
/// double (SUM and SQUARES), and their SHIFT.
struct BatchStatistics {
  float mean, var;
};

DTRAIN_RT_HOST_DEVICE inline BatchStatistics
batchStatistics(double sum, double squares, int64_t count, float shift) {
  const double shiftedMean = sum / double(count);
  const double var = squares / double(count) - shiftedMean * shiftedMean;
  return {float(double(shift) + shiftedMean), float(var > 0.0 ? var : 0.0)};
}

/// 1 / sqrt(VAR + EPSILON), IEEE-rounded (no fast math) as the CPU's.
DTRAIN_RT_HOST_DEVICE inline float inverseStd(float var, float epsilon) {
  return 1.0f / sqrtf(var + epsilon);
}

/// Y = (X - MEAN) MULTIPLIER + BIAS, MULTIPLIER = SCALE / std, then
/// ACTIVATION, over what thread THREAD of THREADS takes of split SPLIT of
/// channel CH.
template <int32_t Type, int Width>
DTRAIN_RT_HOST_DEVICE void
normalizeUnits(const BatchNormSplits &g, const void *x, void *y, int32_t ch,
               int32_t split, int32_t thread, int32_t threads, float mean,
               float multiplier, float bias,
               const BatchNormActivation &activation) {
  using Unit = ElementUnit<Type, Width>;
  g.forEachUnit(ch, split, thread, threads, [&](int64_t offset) {
    const WideUnit<Type, Width> in(x, offset);
    Unit out;
    if (activation.residual) {
      const WideUnit<Type, Width> residual(activation.residual, offset);
      for (int i = 0; i < Width; ++i)
        out.elements[i] = roundElement<Type>(residualRelu<Type>(
            (in.values[i] - mean) * multiplier + bias, residual.values[i]));
    } else {
      for (int i = 0; i < Width; ++i) {
        const float v = (in.values[i] - mean) * multiplier + bias;
        out.elements[i] = roundElement<Type>(activation.relu ? relu(v) : v);
      }
    }
    *reinterpret_cast<Unit *>(static_cast<ElementBits<Type> *>(y) + offset) =
        out;
  });
}

/// What DX takes of a channel: DX = MULTIPLIER (DY - MEAN_DY - (X - MEAN)
/// SLOPE), from its splits' gradientSums added up in double: SUM_DY, and
/// SUM_DY_X (of DY (X - MEAN)).
struct GradientTerms {
  float mean, multiplier, meanDy, slope;
  /// The parameters' gradients: sum of DY XHAT, sum of DY.
  float dscale, dbias;
};

DTRAIN_RT_HOST_DEVICE inline GradientTerms
gradientTerms(double sumDy, double sumDyX, int64_t count, float mean, float var,
              float scale, float epsilon) {
  const float invStd = inverseStd(var, epsilon);
  const double dscale = sumDyX * double(invStd);
  GradientTerms terms;
  terms.mean = mean;
  terms.multiplier = scale * invStd;
  terms.meanDy = float(sumDy / double(count));
  terms.slope = float(dscale * double(invStd) / double(count));
  terms.dscale = float(dscale);
  terms.dbias = float(sumDy);
  return terms;
}

/// DX over what thread THREAD of THREADS takes of split SPLIT of channel
/// CH, DY as outputGradient takes it.
template <int32_t Type, int Width>
DTRAIN_RT_HOST_DEVICE void
gradientUnits(const BatchNormSplits &g, const void *x, const void *dy,
              const void *z, void *dx, int32_t ch, int32_t split,
              int32_t thread, int32_t threads, const GradientTerms &t) {
  using Unit = ElementUnit<Type, Width>;
  g.forEachUnit(ch, split, thread, threads, [&](int64_t offset) {
    const WideUnit<Type, Width> xs(x, offset);
    const WideUnit<Type, Width> dys =
        outputGradient<Type, Width>(dy, z, offset);
    Unit out;
    for (int i = 0; i < Width; ++i)
      out.elements[i] = roundElement<Type>(
          t.multiplier *
          (dys.values[i] - t.meanDy - (xs.values[i] - t.mean) * t.slope));
    *reinterpret_cast<Unit *>(static_cast<ElementBits<Type> *>(dx) + offset) =
        out;
  });
}

/// Threads of a split kernel's block.
constexpr int kBatchNormThreads = 256;
/// Blocks that the split kernels aim at in all (a few a multiprocessor of
/// an H200's 132); a fixed number rather than the device's, so that the
/// sums are the same on every device.
constexpr int64_t kTargetBlocks = 1024;
/// Units each thread takes at least, where a channel has enough.
constexpr int64_t kUnitsPerThread = 4;

/// The split of N x C x SPATIAL elements in units of WIDTH (which divides
/// SPATIAL); C, SPATIAL and N x SPATIAL must fit an int32.
inline BatchNormSplits splitBatchNorm(int64_t n, int64_t c, int64_t spatial,
                                      int width) {
  const int64_t units = spatial / width;
  const int64_t perChannel = n * units;
  const int64_t wanted = (kTargetBlocks + c - 1) / c;
  const int64_t most =
      std::max<int64_t>(1, perChannel / (kBatchNormThreads * kUnitsPerThread));
  const int64_t splits = std::min(wanted, most);
  const int64_t chunk = (perChannel + splits - 1) / splits;
  return {int32_t(n),       int32_t(c),
          int32_t(spatial), width,
          int32_t(units),   int32_t((perChannel + chunk - 1) / chunk),
          int32_t(chunk)};
}

/// The widest unit (1, 2, 4 or 8 elements of ELEMENTBYTES, at most 16
/// bytes) that divides SPATIAL and to whose size every pointer of POINTERS
/// is aligned.
template <size_t N>
int batchNormUnitWidth(int64_t spatial, int elementBytes,
                       const void *const (&pointers)[N]) {
  for (int width = 16 / elementBytes; width > 1; width /= 2) {
    if (spatial % width)
      continue;
    bool aligned = true;
    for (const void *p : pointers)
      aligned =
          aligned &&
          reinterpret_cast<uintptr_t>(p) % size_t(width * elementBytes) == 0;
    if (aligned)
      return width;
  }
  return 1;
}

/// Calls F with std::integral_constant<int32_t, TYPE> and
/// std::integral_constant<int, WIDTH>: the code of that element type and
/// unit width (1, 2, 4, or 8 for 16-bit types), resolved when compiled.
template <class F> void forTypeAndWidth(int32_t type, int width, F f) {
  forFloatType(type, [&](auto t) {
    switch (width) {
    case 2:
      return f(t, std::integral_constant<int, 2>());
    case 4:
      return f(t, std::integral_constant<int, 4>());
    case 8:
      if constexpr (decltype(t)::value != DTRAIN_RT_F32)
        return f(t, std::integral_constant<int, 8>());
      break;
    }
    f(t, std::integral_constant<int, 1>());
  });
}

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_BATCHNORMSPLITS_H
