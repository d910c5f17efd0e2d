//===- ReferenceKernels.cpp - The heavy-op kernels as plain loops ---------===//
//
// The *_f64 kernels of dtrain_rt.h (oneDNN has no f64 on the CPU), which
// the compiler's gradient checks run against finite differences, the
// pooling loops that the f32 kernels fall back on, and the embedding
// gradient's loop, which the f32 kernel runs on threads. Straight from the
// definitions, correctness first: one thread, no blocking. They take the
// same checks as the f32 kernels (Kernels.cpp).
//
// No OpenMP: dtrain builds the runtime with clang, whose -fopenmp would load
// LLVM's libomp next to the libgomp that oneDNN brings.
//
//===----------------------------------------------------------------------===//

#include "Embedding.h"
#include "Internal.h"
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace dtrain::rt;

namespace {

/// C = op(A) op(B) + BETA C: one dot product per element of C.
template <typename T>
void matmulLoop(const T *a, const T *b, T *c, int64_t m, int64_t n, int64_t k,
                bool transposeA, bool transposeB, T beta) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += a[transposeA ? p * m + i : i * k + p] *
               b[transposeB ? j * k + p : p * n + j];
      // BETA == 0 ignores C, NaN included.
      c[i * n + j] = beta == T(0) ? sum : sum + beta * c[i * n + j];
    }
}

/// Calls VISIT(yi, xi, wi) for every product X[xi] * W[wi] that adds to
/// Y[yi] in the convolution G (ONNX Conv: the taps inside the input, the
/// channels of the output channel's group): the forward kernel and both
/// gradients are this one loop nest.
template <typename Visit>
void forEachConvTap(const ConvGeometry &g, Visit visit) {
  int64_t groupIn = g.c / g.groups, groupOut = g.oc / g.groups;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t o = 0; o < g.oc; ++o)
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        TapRange rows = taps(g.h, oy);
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          TapRange cols = taps(g.w, ox);
          int64_t yi = ((b * g.oc + o) * g.oh + oy) * g.ow + ox;
          for (int64_t ci = 0; ci < groupIn; ++ci) {
            int64_t channel = o / groupOut * groupIn + ci;
            for (int64_t i = rows.first; i < rows.last; ++i) {
              int64_t row = (b * g.c + channel) * g.h.in + g.h.start(oy) +
                            i * g.h.dilation;
              for (int64_t j = cols.first; j < cols.last; ++j)
                visit(yi, row * g.w.in + g.w.start(ox) + j * g.w.dilation,
                      ((o * groupIn + ci) * g.h.kernel + i) * g.w.kernel + j);
            }
          }
        }
      }
}

template <typename T>
void convLoop(const ConvGeometry &g, const T *x, const T *w, const T *bias,
              T *y) {
  int64_t plane = g.oh * g.ow;
  for (int64_t i = 0; i < g.n * g.oc; ++i)
    std::fill(y + i * plane, y + (i + 1) * plane, bias ? bias[i % g.oc] : T(0));
  forEachConvTap(
      g, [&](int64_t yi, int64_t xi, int64_t wi) { y[yi] += x[xi] * w[wi]; });
}

template <typename T>
void convBackwardDataLoop(const ConvGeometry &g, const T *dy, const T *w,
                          T *dx) {
  std::fill(dx, dx + g.n * g.c * g.h.in * g.w.in, T(0));
  forEachConvTap(
      g, [&](int64_t yi, int64_t xi, int64_t wi) { dx[xi] += dy[yi] * w[wi]; });
}

template <typename T>
void convBackwardWeightsLoop(const ConvGeometry &g, const T *x, const T *dy,
                             T *dw, T *db) {
  std::fill(dw, dw + g.oc * (g.c / g.groups) * g.h.kernel * g.w.kernel, T(0));
  forEachConvTap(
      g, [&](int64_t yi, int64_t xi, int64_t wi) { dw[wi] += dy[yi] * x[xi]; });
  if (!db)
    return;
  int64_t plane = g.oh * g.ow;
  std::fill(db, db + g.oc, T(0));
  for (int64_t i = 0; i < g.n * g.oc; ++i)
    for (int64_t at = i * plane; at < (i + 1) * plane; ++at)
      db[i % g.oc] += dy[at];
}

/// Calls VISIT(i) for the index I of every value of channel CH in an
/// N x C x SPATIAL tensor.
template <typename Visit>
void forEachInChannel(int64_t n, int64_t c, int64_t spatial, int64_t ch,
                      Visit visit) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = (b * c + ch) * spatial; i < (b * c + ch + 1) * spatial;
         ++i)
      visit(i);
}

/// Y = (X - MEAN[c]) / sqrt(VAR[c] + EPSILON) * SCALE[c] + BIAS[c].
template <typename T>
void batchNormLoop(const T *x, const T *scale, const T *bias, const T *mean,
                   const T *var, T *y, int64_t n, int64_t c, int64_t spatial,
                   T epsilon) {
  for (int64_t ch = 0; ch < c; ++ch) {
    T invStd = 1 / std::sqrt(var[ch] + epsilon);
    forEachInChannel(n, c, spatial, ch, [&](int64_t i) {
      y[i] = (x[i] - mean[ch]) * invStd * scale[ch] + bias[ch];
    });
  }
}

/// The batch statistics (two passes: the mean, then the biased variance
/// around it, which a one-pass sum of squares would lose to cancellation),
/// then the normalization with them.
template <typename T>
void batchNormTrainLoop(const T *x, const T *scale, const T *bias, T *y,
                        T *batchMean, T *batchVar, int64_t n, int64_t c,
                        int64_t spatial, T epsilon) {
  T count = T(n * spatial);
  for (int64_t ch = 0; ch < c; ++ch) {
    T sum = 0;
    forEachInChannel(n, c, spatial, ch, [&](int64_t i) { sum += x[i]; });
    T mean = sum / count, squares = 0;
    forEachInChannel(n, c, spatial, ch, [&](int64_t i) {
      squares += (x[i] - mean) * (x[i] - mean);
    });
    batchMean[ch] = mean;
    batchVar[ch] = squares / count;
  }
  batchNormLoop(x, scale, bias, batchMean, batchVar, y, n, c, spatial, epsilon);
}

/// The formulas of dtrain_rt_batch_norm_backward_f32, channel by channel.
template <typename T>
void batchNormBackwardLoop(const T *x, const T *dy, const T *scale,
                           const T *batchMean, const T *batchVar, T *dx,
                           T *dscale, T *dbias, int64_t n, int64_t c,
                           int64_t spatial, T epsilon) {
  T count = T(n * spatial);
  for (int64_t ch = 0; ch < c; ++ch) {
    T mean = batchMean[ch], invStd = 1 / std::sqrt(batchVar[ch] + epsilon);
    T sumDy = 0, sumDyXhat = 0;
    forEachInChannel(n, c, spatial, ch, [&](int64_t i) {
      sumDy += dy[i];
      sumDyXhat += dy[i] * (x[i] - mean) * invStd;
    });
    dbias[ch] = sumDy;
    dscale[ch] = sumDyXhat;
    forEachInChannel(n, c, spatial, ch, [&](int64_t i) {
      T xhat = (x[i] - mean) * invStd;
      dx[i] = scale[ch] * invStd *
              (dy[i] - sumDy / count - xhat * sumDyXhat / count);
    });
  }
}

} // namespace

//===--- Pooling loops (f32 and f64) --------------------------------------===//

/// The divisor of an average pooling of KIND over a window of ROWS x COLS
/// taps.
static int64_t poolDivisor(int32_t kind, const TapRange &rows,
                           const TapRange &cols) {
  return kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD ? rows.padded * cols.padded
                                                : rows.inside() * cols.inside();
}

/// Whether V replaces BEST as a window's maximum for the gradient: larger,
/// or the first NaN (a NaN is the maximum).
template <typename T> static bool beatsMax(T v, T best) {
  return v > best || (std::isnan(v) && !std::isnan(best));
}

template <typename T>
void dtrain::rt::poolLoop(const PoolGeometry &g, const T *x, T *y) {
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T *in = x + plane * g.h.in * g.w.in;
    T *out = y + plane * g.oh * g.ow;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      TapRange rows = taps(g.h, oy);
      int64_t y0 = g.h.start(oy);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        TapRange cols = taps(g.w, ox);
        int64_t x0 = g.w.start(ox);
        T max = -std::numeric_limits<T>::infinity(), sum = 0;
        for (int64_t i = rows.first; i < rows.last; ++i) {
          const T *row = in + (y0 + i * g.h.dilation) * g.w.in;
          for (int64_t j = cols.first; j < cols.last; ++j) {
            T v = row[x0 + j * g.w.dilation];
            max = std::max(max, v);
            sum += v;
          }
        }
        out[oy * g.ow + ox] = g.kind == DTRAIN_RT_POOL_MAX
                                  ? max
                                  : sum / T(poolDivisor(g.kind, rows, cols));
      }
    }
  }
}

/// Whether the windows along D are disjoint and whole (stride = kernel, no
/// padding or dilation), as in the usual 2x2 max pooling.
static bool isTiled(const WindowDim &d) {
  return d.stride == d.kernel && d.dilation == 1 && d.padBegin == 0 &&
         d.padEnd == 0;
}

/// The gradient of 2x2 max pooling with stride 2 for one pair of input rows
/// X0, X1 (DX0, DX1): each window's gradient DY[o] goes to its first
/// maximum in row-major order, a NaN being the maximum (the first one), as
/// PyTorch; the other three elements get 0. Written with 0/1 masks in the
/// element type and selects, no branches, so that the compiler vectorizes
/// it across windows (with branches, random data mispredicts every other
/// window).
template <typename T>
static inline void maxPool2x2BackwardRows(const T *x0, const T *x1,
                                          const T *dy, T *dx0, T *dx1,
                                          int64_t ow) {
  const T one = T(1), zero = T(0);
  for (int64_t o = 0; o < ow; ++o) {
    T a = x0[2 * o], b = x0[2 * o + 1], c = x1[2 * o], d = x1[2 * o + 1];
    T nanA = a != a ? one : zero, nanB = b != b ? one : zero,
      nanC = c != c ? one : zero, nanD = d != d ? one : zero;
    T anyNaN = std::max(std::max(nanA, nanB), std::max(nanC, nanD));
    T ab = a > b ? a : b, cd = c > d ? c : d, max = ab > cd ? ab : cd;
    // Candidates: the NaNs if there is one, else the elements equal to the
    // maximum; the first candidate wins.
    T isA = anyNaN > zero ? nanA : (a == max ? one : zero);
    T isB = anyNaN > zero ? nanB : (b == max ? one : zero);
    T isC = anyNaN > zero ? nanC : (c == max ? one : zero);
    T winA = isA, winB = isB * (one - winA),
      winC = isC * (one - winA - winB);
    T winD = one - winA - winB - winC;
    T g = dy[o];
    dx0[2 * o] = winA > zero ? g : zero;
    dx0[2 * o + 1] = winB > zero ? g : zero;
    dx1[2 * o] = winC > zero ? g : zero;
    dx1[2 * o + 1] = winD > zero ? g : zero;
  }
}

/// The f32 rows, compiled for AVX-512 and AVX2 as well as the baseline
/// (chosen at load time): the baseline's SSE2 does not vectorize the
/// interleaved window elements.
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
maxPool2x2BackwardRowsF32(const float *x0, const float *x1, const float *dy,
                          float *dx0, float *dx1, int64_t ow) {
  maxPool2x2BackwardRows(x0, x1, dy, dx0, dx1, ow);
}

static void maxPool2x2BackwardRowsFor(const float *x0, const float *x1,
                                      const float *dy, float *dx0,
                                      float *dx1, int64_t ow) {
  maxPool2x2BackwardRowsF32(x0, x1, dy, dx0, dx1, ow);
}
static void maxPool2x2BackwardRowsFor(const double *x0, const double *x1,
                                      const double *dy, double *dx0,
                                      double *dx1, int64_t ow) {
  maxPool2x2BackwardRows(x0, x1, dy, dx0, dx1, ow);
}

/// COUNT taps, TAP[o * STRIDE] at offset AT + o * AT_STRIDE, against the
/// maxima of their windows so far, BEST[o] at offset BESTAT[o]: a tap that
/// beats its window's maximum (beatsMax) takes its place. Selects, which
/// the compiler vectorizes across the windows (the channels of a pixel, or
/// the windows of an output row). A STRIDE known at compile time
/// (FIXEDSTRIDE, not 0) vectorizes where a variable one runs one by one.
template <int64_t FixedStride = 0, typename T>
static inline void maxOfTaps(const T *tap, int64_t stride, int32_t at,
                             int32_t atStride, T *__restrict best,
                             int32_t *__restrict bestAt, int64_t count) {
  if (FixedStride)
    stride = FixedStride;
  for (int64_t o = 0; o < count; ++o) {
    const T v = tap[o * stride], b = best[o];
    // beatsMax, written out: with the call, the stride-2 loop ran 1.4x
    // slower.
    const bool wins = v > b || (v != v && b == b);
    best[o] = wins ? v : b;
    bestAt[o] = wins ? int32_t(at + o * atStride) : bestAt[o];
  }
}

/// The f32 taps, compiled for AVX-512 and AVX2 as well as the baseline;
/// strides 1 (the channels of a pixel, pooling with stride 1) and 2 fixed.
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
maxOfTapsF32(const float *tap, int64_t stride, int32_t at, int32_t atStride,
             float *best, int32_t *bestAt, int64_t count) {
  if (stride == 1)
    maxOfTaps<1>(tap, stride, at, atStride, best, bestAt, count);
  else if (stride == 2)
    maxOfTaps<2>(tap, stride, at, atStride, best, bestAt, count);
  else
    maxOfTaps(tap, stride, at, atStride, best, bestAt, count);
}

static void maxOfTapsFor(const float *tap, int64_t stride, int32_t at,
                         int32_t atStride, float *best, int32_t *bestAt,
                         int64_t count) {
  maxOfTapsF32(tap, stride, at, atStride, best, bestAt, count);
}
static void maxOfTapsFor(const double *tap, int64_t stride, int32_t at,
                         int32_t atStride, double *best, int32_t *bestAt,
                         int64_t count) {
  maxOfTaps(tap, stride, at, atStride, best, bestAt, count);
}

/// Every window sends its gradient to the input elements that made its
/// output.
template <typename T>
void dtrain::rt::poolBackwardLoop(const PoolGeometry &g, const T *x,
                                  const T *dy, T *dx) {
  const int64_t size = g.n * g.c * g.h.in * g.w.in;
  // (Ceil mode's last window may hang over the input's end: not whole.)
  if (g.kind == DTRAIN_RT_POOL_MAX && isTiled(g.h) && isTiled(g.w) &&
      g.h.kernel == 2 && g.w.kernel == 2 && !g.h.overhang(g.oh) &&
      !g.w.overhang(g.ow)) {
    // The usual 2x2 max pooling: disjoint whole windows, two input rows per
    // output row, which write all of DX but a last odd row or column.
    const int64_t width = g.w.in;
    if (g.h.in != 2 * g.oh || width != 2 * g.ow)
      std::fill(dx, dx + size, T(0));
    for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
      const T *in = x + plane * g.h.in * width;
      T *gradIn = dx + plane * g.h.in * width;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        maxPool2x2BackwardRowsFor(in + 2 * oy * width,
                                  in + (2 * oy + 1) * width,
                               dy + (plane * g.oh + oy) * g.ow,
                               gradIn + 2 * oy * width,
                               gradIn + (2 * oy + 1) * width, g.ow);
    }
    return;
  }
  std::fill(dx, dx + size, T(0));
  // The windows are the same in every plane.
  std::vector<TapRange> rowTaps, colTaps;
  for (int64_t oy = 0; oy < g.oh; ++oy)
    rowTaps.push_back(taps(g.h, oy));
  for (int64_t ox = 0; ox < g.ow; ++ox)
    colTaps.push_back(taps(g.w, ox));
  // Max pooling: the windows of an output row whose columns all lie inside
  // the input, from column LO to HI - 1 (consecutive), find their maxima
  // together, tap by tap; the others one by one. (Offsets in a plane are
  // int32_t's there.)
  int64_t lo = 0, hi = 0;
  if (g.kind == DTRAIN_RT_POOL_MAX && g.h.in * g.w.in <= INT32_MAX) {
    auto isInterior = [&](int64_t ox) {
      const TapRange &cols = colTaps[size_t(ox)];
      return cols.first == 0 && cols.last == g.w.kernel;
    };
    while (lo < g.ow && !isInterior(lo))
      ++lo;
    for (hi = lo; hi < g.ow && isInterior(hi); ++hi) {
    }
  }
  std::vector<T> best(size_t(hi - lo));
  std::vector<int32_t> bestAt(size_t(hi - lo));
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T *in = x ? x + plane * g.h.in * g.w.in : nullptr;
    const T *gradOut = dy + plane * g.oh * g.ow;
    T *gradIn = dx + plane * g.h.in * g.w.in;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const TapRange &rows = rowTaps[size_t(oy)];
      int64_t y0 = g.h.start(oy);
      if (hi > lo && rows.inside()) {
        // Tap (i, j) of window LO + o is at OFFSET(i, j) + o * STRIDE.
        const int32_t stride = int32_t(g.w.stride);
        auto offset = [&](int64_t i, int64_t j) {
          return int32_t((y0 + i * g.h.dilation) * g.w.in + g.w.start(lo) +
                         j * g.w.dilation);
        };
        const int32_t first = offset(rows.first, 0);
        for (int64_t o = 0; o < hi - lo; ++o) {
          bestAt[size_t(o)] = first + int32_t(o) * stride;
          best[size_t(o)] = in[bestAt[size_t(o)]];
        }
        for (int64_t i = rows.first; i < rows.last; ++i)
          for (int64_t j = 0; j < g.w.kernel; ++j)
            maxOfTapsFor(in + offset(i, j), stride, offset(i, j), stride,
                         best.data(), bestAt.data(), hi - lo);
      }
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        if (ox >= lo && ox < hi && rows.inside()) {
          gradIn[bestAt[size_t(ox - lo)]] += gradOut[oy * g.ow + ox];
          continue;
        }
        const TapRange &cols = colTaps[size_t(ox)];
        if (!rows.inside() || !cols.inside())
          continue; // AVG_INCLUDE_PAD's all-padding window
        int64_t x0 = g.w.start(ox);
        T grad = gradOut[oy * g.ow + ox];
        if (g.kind == DTRAIN_RT_POOL_MAX) {
          // The first maximum in row-major window order, as PyTorch; a NaN
          // is the maximum (the first one).
          int64_t best = (y0 + rows.first * g.h.dilation) * g.w.in + x0 +
                         cols.first * g.w.dilation;
          for (int64_t i = rows.first; i < rows.last; ++i)
            for (int64_t j = cols.first; j < cols.last; ++j) {
              int64_t at =
                  (y0 + i * g.h.dilation) * g.w.in + x0 + j * g.w.dilation;
              if (beatsMax(in[at], in[best]))
                best = at;
            }
          gradIn[best] += grad;
          continue;
        }
        T share = grad / T(poolDivisor(g.kind, rows, cols));
        for (int64_t i = rows.first; i < rows.last; ++i) {
          T *row = gradIn + (y0 + i * g.h.dilation) * g.w.in;
          for (int64_t j = cols.first; j < cols.last; ++j)
            row[x0 + j * g.w.dilation] += share;
        }
      }
    }
  }
}

// Channels last: the loops walk the windows of an image once, and each
// tap's C channels are contiguous, so the innermost loops run over them.

void dtrain::rt::poolLoopChannelsLast(const PoolGeometry &g, const float *x,
                                      float *y) {
  const int64_t c = g.c;
  std::vector<float> max(static_cast<size_t>(c)), sum(static_cast<size_t>(c));
  for (int64_t image = 0; image < g.n; ++image) {
    const float *in = x + image * g.h.in * g.w.in * c;
    float *out = y + image * g.oh * g.ow * c;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      TapRange rows = taps(g.h, oy);
      int64_t y0 = g.h.start(oy);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        TapRange cols = taps(g.w, ox);
        int64_t x0 = g.w.start(ox);
        std::fill(max.begin(), max.end(),
                  -std::numeric_limits<float>::infinity());
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int64_t i = rows.first; i < rows.last; ++i)
          for (int64_t j = cols.first; j < cols.last; ++j) {
            const float *tap =
                in +
                ((y0 + i * g.h.dilation) * g.w.in + x0 + j * g.w.dilation) * c;
            for (int64_t ch = 0; ch < c; ++ch) {
              max[size_t(ch)] = std::max(max[size_t(ch)], tap[ch]);
              sum[size_t(ch)] += tap[ch];
            }
          }
        float *o = out + (oy * g.ow + ox) * c;
        if (g.kind == DTRAIN_RT_POOL_MAX) {
          std::copy(max.begin(), max.end(), o);
          continue;
        }
        float divisor = float(poolDivisor(g.kind, rows, cols));
        for (int64_t ch = 0; ch < c; ++ch)
          o[ch] = sum[size_t(ch)] / divisor;
      }
    }
  }
}

void dtrain::rt::poolBackwardLoopChannelsLast(const PoolGeometry &g,
                                              const float *x, const float *dy,
                                              float *dx) {
  const int64_t c = g.c, pixels = g.h.in * g.w.in;
  std::fill(dx, dx + g.n * pixels * c, 0.0f);
  // Each channel's maximum so far in a window, and the pixel that holds it
  // (as an int32_t: the kernel checks that the pixels fit).
  std::vector<float> best(static_cast<size_t>(c));
  std::vector<int32_t> bestPixel(static_cast<size_t>(c));
  for (int64_t image = 0; image < g.n; ++image) {
    const float *in = x ? x + image * pixels * c : nullptr;
    const float *gradOut = dy + image * g.oh * g.ow * c;
    float *gradIn = dx + image * pixels * c;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      TapRange rows = taps(g.h, oy);
      int64_t y0 = g.h.start(oy);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        TapRange cols = taps(g.w, ox);
        if (!rows.inside() || !cols.inside())
          continue; // AVG_INCLUDE_PAD's all-padding window
        int64_t x0 = g.w.start(ox);
        auto pixelOf = [&](int64_t i, int64_t j) {
          return int32_t((y0 + i * g.h.dilation) * g.w.in + x0 +
                         j * g.w.dilation);
        };
        const float *grad = gradOut + (oy * g.ow + ox) * c;
        if (g.kind == DTRAIN_RT_POOL_MAX) {
          // The first maximum in row-major window order, per channel.
          int32_t first = pixelOf(rows.first, cols.first);
          std::copy(in + first * c, in + (first + 1) * c, best.begin());
          std::fill(bestPixel.begin(), bestPixel.end(), first);
          for (int64_t i = rows.first; i < rows.last; ++i)
            for (int64_t j = cols.first; j < cols.last; ++j) {
              int32_t pixel = pixelOf(i, j);
              maxOfTapsFor(in + pixel * c, 1, pixel, 0, best.data(),
                           bestPixel.data(), c);
            }
          for (int64_t ch = 0; ch < c; ++ch)
            gradIn[bestPixel[size_t(ch)] * c + ch] += grad[ch];
          continue;
        }
        float divisor = float(poolDivisor(g.kind, rows, cols));
        for (int64_t i = rows.first; i < rows.last; ++i)
          for (int64_t j = cols.first; j < cols.last; ++j) {
            float *tap = gradIn + pixelOf(i, j) * c;
            for (int64_t ch = 0; ch < c; ++ch)
              tap[ch] += grad[ch] / divisor;
          }
      }
    }
  }
}

template <typename T>
void dtrain::rt::embeddingGradLoop(const T *grad, const int64_t *indices,
                                   T *out, int64_t count, int64_t rows,
                                   int64_t width, int64_t begin, int64_t end) {
  for (int64_t r = 0; r < rows; ++r)
    std::fill(out + r * width + begin, out + r * width + end, T(0));
  for (int64_t i = 0; i < count; ++i) {
    const T *from = grad + i * width;
    T *to = out + embeddingRow(indices[i], rows) * width;
    for (int64_t j = begin; j < end; ++j)
      to[j] += from[j];
  }
}

template void dtrain::rt::poolLoop(const PoolGeometry &, const float *,
                                   float *);
template void dtrain::rt::poolLoop(const PoolGeometry &, const double *,
                                   double *);
template void dtrain::rt::poolBackwardLoop(const PoolGeometry &, const float *,
                                           const float *, float *);
template void dtrain::rt::poolBackwardLoop(const PoolGeometry &, const double *,
                                           const double *, double *);
template void dtrain::rt::embeddingGradLoop(const float *, const int64_t *,
                                            float *, int64_t, int64_t, int64_t,
                                            int64_t, int64_t);
template void dtrain::rt::embeddingGradLoop(const double *, const int64_t *,
                                            double *, int64_t, int64_t, int64_t,
                                            int64_t, int64_t);

//===--- C ABI ------------------------------------------------------------===//

void dtrain_rt_matmul_f64(const double *a, const double *b, double *c,
                          int64_t m, int64_t n, int64_t k, int32_t transpose_a,
                          int32_t transpose_b, double beta) {
  if (prepareMatmul("dtrain_rt_matmul_f64", a, b, c, 1, m, n, k, beta))
    matmulLoop(a, b, c, m, n, k, transpose_a != 0, transpose_b != 0, beta);
}

void dtrain_rt_batch_matmul_f64(const double *a, const double *b, double *c,
                                int64_t batch, int64_t m, int64_t n, int64_t k,
                                int32_t transpose_a, int32_t transpose_b,
                                double beta) {
  if (!prepareMatmul("dtrain_rt_batch_matmul_f64", a, b, c, batch, m, n, k,
                     beta))
    return;
  for (int64_t i = 0; i < batch; ++i)
    matmulLoop(a + i * m * k, b + i * k * n, c + i * m * n, m, n, k,
               transpose_a != 0, transpose_b != 0, beta);
}

void dtrain_rt_embedding_grad_f64(const double *grad, const int64_t *indices,
                                  double *out, int64_t count, int64_t rows,
                                  int64_t width) {
  checkEmbeddingGrad("dtrain_rt_embedding_grad_f64", grad, indices, out, count,
                     rows, width);
  if (width > 0)
    embeddingGradLoop(grad, indices, out, count, rows, width, 0, width);
}

void dtrain_rt_conv2d_f64(const double *x, const double *w, const double *bias,
                          double *y, int64_t n, int64_t c, int64_t h,
                          int64_t w_, int64_t oc, int64_t kh, int64_t kw,
                          int64_t oh, int64_t ow, int64_t stride_h,
                          int64_t stride_w, int64_t pad_top, int64_t pad_left,
                          int64_t pad_bottom, int64_t pad_right,
                          int64_t dilation_h, int64_t dilation_w,
                          int64_t groups) {
  ConvKey key =
      checkConv2d("dtrain_rt_conv2d_f64", x, w, bias, y, n, c, h, w_, oc, kh,
                  kw, oh, ow, stride_h, stride_w, pad_top, pad_left, pad_bottom,
                  pad_right, dilation_h, dilation_w, groups);
  convLoop(convGeometry(key), x, w, bias, y);
}

void dtrain_rt_conv2d_backward_data_f64(
    const double *dy, const double *w, double *dx, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups) {
  ConvKey key = checkConv2dBackwardData(
      "dtrain_rt_conv2d_backward_data_f64", dy, w, dx, n, c, h, w_, oc, kh, kw,
      oh, ow, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
      dilation_h, dilation_w, groups);
  convBackwardDataLoop(convGeometry(key), dy, w, dx);
}

void dtrain_rt_conv2d_backward_weights_f64(
    const double *x, const double *dy, double *dw, double *db, int64_t n,
    int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,
    int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups) {
  ConvKey key = checkConv2dBackwardWeights(
      "dtrain_rt_conv2d_backward_weights_f64", x, dy, dw, db, n, c, h, w_, oc,
      kh, kw, oh, ow, stride_h, stride_w, pad_top, pad_left, pad_bottom,
      pad_right, dilation_h, dilation_w, groups);
  convBackwardWeightsLoop(convGeometry(key), x, dy, dw, db);
}

void dtrain_rt_pool2d_f64(const double *x, double *y, int32_t kind, int64_t n,
                          int64_t c, int64_t h, int64_t w, int64_t oh,
                          int64_t ow, int64_t kh, int64_t kw, int64_t stride_h,
                          int64_t stride_w, int64_t pad_top, int64_t pad_left,
                          int64_t pad_bottom, int64_t pad_right,
                          int64_t dilation_h, int64_t dilation_w) {
  const char *kernel = "dtrain_rt_pool2d_f64";
  PoolGeometry g = poolGeometry(checkPool2d(
      kernel, x, y, kind, n, c, h, w, oh, ow, kh, kw, stride_h, stride_w,
      pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w));
  checkPoolWindows(kernel, g);
  poolLoop(g, x, y);
}

void dtrain_rt_pool2d_backward_f64(const double *x, const double *dy,
                                   double *dx, int32_t kind, int64_t n,
                                   int64_t c, int64_t h, int64_t w, int64_t oh,
                                   int64_t ow, int64_t kh, int64_t kw,
                                   int64_t stride_h, int64_t stride_w,
                                   int64_t pad_top, int64_t pad_left,
                                   int64_t pad_bottom, int64_t pad_right,
                                   int64_t dilation_h, int64_t dilation_w) {
  PoolGeometry g = checkPool2dBackward(
      "dtrain_rt_pool2d_backward_f64", x, dy, dx, kind, n, c, h, w, oh, ow, kh,
      kw, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
      dilation_h, dilation_w);
  poolBackwardLoop(g, x, dy, dx);
}

void dtrain_rt_batch_norm_f64(const double *x, const double *scale,
                              const double *bias, const double *mean,
                              const double *var, double *y, int64_t n,
                              int64_t c, int64_t spatial, double epsilon) {
  checkBatchNorm("dtrain_rt_batch_norm_f64", x, scale, bias, mean, var, y, n, c,
                 spatial, epsilon);
  batchNormLoop(x, scale, bias, mean, var, y, n, c, spatial, epsilon);
}

void dtrain_rt_batch_norm_train_f64(const double *x, const double *scale,
                                    const double *bias, double *y,
                                    double *batch_mean, double *batch_var,
                                    int64_t n, int64_t c, int64_t spatial,
                                    double epsilon) {
  checkBatchNormTrain("dtrain_rt_batch_norm_train_f64", x, scale, bias, y,
                      batch_mean, batch_var, n, c, spatial, epsilon);
  batchNormTrainLoop(x, scale, bias, y, batch_mean, batch_var, n, c, spatial,
                     epsilon);
}

void dtrain_rt_batch_norm_backward_f64(const double *x, const double *dy,
                                       const double *scale,
                                       const double *batch_mean,
                                       const double *batch_var, double *dx,
                                       double *dscale, double *dbias, int64_t n,
                                       int64_t c, int64_t spatial,
                                       double epsilon) {
  checkBatchNormBackward("dtrain_rt_batch_norm_backward_f64", x, dy, scale,
                         batch_mean, batch_var, dx, dscale, dbias, n, c,
                         spatial, epsilon);
  batchNormBackwardLoop(x, dy, scale, batch_mean, batch_var, dx, dscale, dbias,
                        n, c, spatial, epsilon);
}
