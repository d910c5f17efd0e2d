//===- Kernels.h - Shared by the heavy-op kernels ---------------*- C++ -*-===//
//
// What the oneDNN kernels (DnnlKernels.cpp) and the reference loops
// (ReferenceKernels.cpp) share: the argument checks of every kernel
// (Kernels.cpp), so that its f32 and f64 variants accept the same calls and
// reject the others with the same messages; the window geometry; the
// pooling loops, which also serve the f32 kernels where oneDNN cannot; and
// the test hook of the primitive cache. The checks are also those of the
// CUDA kernels (libdtrain_runtime_cuda, lib/cuda/), which call them from
// this library (DTRAIN_RT_CUDA_SHARED_API).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_KERNELS_H
#define DTRAIN_RUNTIME_KERNELS_H

#include "Internal.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>

namespace dtrain::rt {

/// Every geometry scalar of a kernel (size, stride, padding, dilation,
/// groups) must lie in [MIN, INT_MAX]: BLAS takes int sizes, and with this
/// bound no window arithmetic on two scalars can overflow int64.
inline void checkKernelDim(const char *kernel, const char *name, int64_t value,
                           int64_t min) {
  if (__builtin_expect(value < min || value > INT_MAX, 0))
    fatal(nullptr, "%s: %s is %lld (accepted: %lld <= %s <= %d)", kernel, name,
          (long long)value, (long long)min, name, INT_MAX);
}

/// Aborts when a tensor pointer the kernel needs is NULL.
inline void checkKernelPointer(const char *kernel, const char *name,
                               const void *pointer) {
  if (__builtin_expect(!pointer, 0))
    fatal(nullptr, "%s: %s is NULL", kernel, name);
}

//===--- Matrix product ---------------------------------------------------===//

/// The checks of dtrain_rt_matmul_* and dtrain_rt_batch_matmul_* (BATCH
/// products), and the products without a K dimension (at most C = BETA C,
/// and 0 when BETA is 0, NaN in C included). Returns whether A B remains
/// to be computed.
template <typename T>
bool prepareMatmul(const char *kernel, const T *a, const T *b, T *c,
                   int64_t batch, int64_t m, int64_t n, int64_t k, T beta) {
  checkKernelDim(kernel, "batch", batch, 0);
  checkKernelDim(kernel, "m", m, 0);
  checkKernelDim(kernel, "n", n, 0);
  checkKernelDim(kernel, "k", k, 0);
  if (batch == 0 || m == 0 || n == 0)
    return false;
  checkKernelPointer(kernel, "c", c);
  if (k == 0) {
    int64_t count = batch * m * n;
    if (beta == T(0))
      std::memset(c, 0, size_t(count) * sizeof(T));
    else if (beta != T(1))
      std::transform(c, c + count, c, [beta](T v) { return beta * v; });
    return false;
  }
  checkKernelPointer(kernel, "a", a);
  checkKernelPointer(kernel, "b", b);
  return true;
}

//===--- Embedding gradient -----------------------------------------------===//

/// The checks of dtrain_rt_embedding_grad_*: COUNT, ROWS and WIDTH in
/// [0, INT_MAX], ROWS >= 1 when COUNT >= 1; GRAD and INDICES unless COUNT
/// or WIDTH is 0, OUT unless ROWS or WIDTH is 0.
DTRAIN_RT_CUDA_SHARED_API void
checkEmbeddingGrad(const char *kernel, const void *grad, const void *indices,
                   const void *out, int64_t count, int64_t rows, int64_t width);

/// Columns [BEGIN, END) of the embedding gradient straight from the
/// definition (ReferenceKernels.cpp; T is float or double), on checked
/// arguments: those columns of OUT zeroed, then each index's added to its
/// row, in index order.
template <typename T>
void embeddingGradLoop(const T *grad, const int64_t *indices, T *out,
                       int64_t count, int64_t rows, int64_t width,
                       int64_t begin, int64_t end);

//===--- Window geometry --------------------------------------------------===//

/// One spatial dimension of a convolution or pooling window.
struct WindowDim {
  const char *name; // "height" or "width"
  int64_t in, kernel, stride, padBegin, padEnd, dilation;

  int64_t span() const { return dilation * (kernel - 1) + 1; }
  int64_t padded() const { return in + padBegin + padEnd; }
  /// The output size as nn's shape inference computes it:
  /// floor((padded - span) / stride) + 1, rounded up in ceil mode unless
  /// the last window would then start past the input and its leading
  /// padding (the ONNX and PyTorch rule).
  int64_t outputSize(bool ceilMode) const {
    int64_t room = padded() - span();
    int64_t steps = ceilMode ? (room + stride - 1) / stride : room / stride;
    if (ceilMode && steps * stride >= in + padBegin)
      --steps;
    return steps + 1;
  }
  /// How far the last of OUT windows reaches past the end padding.
  int64_t overhang(int64_t out) const {
    return std::max<int64_t>(0, (out - 1) * stride + span() - padded());
  }
  /// Where the window of output O starts (negative inside the padding).
  int64_t start(int64_t o) const { return o * stride - padBegin; }
};

/// The taps of one window along one dimension that fall inside the padded
/// input (PADDED of them) and inside the input proper (taps FIRST to LAST-1:
/// the input is an interval, so they are consecutive).
struct TapRange {
  int64_t padded, first, last;
  int64_t inside() const { return std::max<int64_t>(0, last - first); }
};

inline TapRange taps(const WindowDim &d, int64_t o) {
  int64_t start = d.start(o);
  TapRange range{0, d.kernel, 0};
  for (int64_t i = 0; i < d.kernel; ++i) {
    int64_t at = start + i * d.dilation;
    if (at >= d.in + d.padEnd)
      break;
    ++range.padded;
    if (at >= 0 && at < d.in) {
      range.first = std::min(range.first, i);
      range.last = i + 1;
    }
  }
  return range;
}

//===--- Convolution ------------------------------------------------------===//

/// (n, c, h, w, oc, kh, kw, oh, ow, stride_h, stride_w, pad_top, pad_left,
/// pad_bottom, pad_right, dilation_h, dilation_w, groups, has bias): a
/// checked convolution geometry, and the key of oneDNN's primitive cache.
using ConvKey = std::array<int64_t, 19>;

/// A convolution geometry for loops over it.
struct ConvGeometry {
  int64_t n, c, oc, groups;
  WindowDim h, w;
  int64_t oh, ow;
};

DTRAIN_RT_CUDA_SHARED_API ConvGeometry convGeometry(const ConvKey &key);

/// The checks of dtrain_rt_conv2d_* (BIAS may be NULL) and of its two
/// backward kernels (DB may be NULL); they return the geometry's key. All
/// three check the forward kernel's geometry.
DTRAIN_RT_CUDA_SHARED_API ConvKey checkConv2d(
    const char *kernel, const void *x, const void *w, const void *bias,
    const void *y, int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t strideH,
    int64_t strideW, int64_t padTop, int64_t padLeft, int64_t padBottom,
    int64_t padRight, int64_t dilationH, int64_t dilationW, int64_t groups);
DTRAIN_RT_CUDA_SHARED_API ConvKey checkConv2dBackwardData(
    const char *kernel, const void *dy, const void *w, const void *dx,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t strideH, int64_t strideW,
    int64_t padTop, int64_t padLeft, int64_t padBottom, int64_t padRight,
    int64_t dilationH, int64_t dilationW, int64_t groups);
DTRAIN_RT_CUDA_SHARED_API ConvKey checkConv2dBackwardWeights(
    const char *kernel, const void *x, const void *dy, const void *dw,
    const void *db, int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t strideH,
    int64_t strideW, int64_t padTop, int64_t padLeft, int64_t padBottom,
    int64_t padRight, int64_t dilationH, int64_t dilationW, int64_t groups);

//===--- Pooling ----------------------------------------------------------===//

/// (kind, n, c, h, w, oh, ow, kh, kw, stride_h, stride_w, pad_top,
/// pad_left, pad_bottom, pad_right, dilation_h, dilation_w): a checked
/// pooling geometry, and the key of oneDNN's primitive cache.
using PoolKey = std::array<int64_t, 17>;

struct PoolGeometry {
  int32_t kind;
  int64_t n, c;
  WindowDim h, w;
  int64_t oh, ow;
};

DTRAIN_RT_CUDA_SHARED_API PoolGeometry poolGeometry(const PoolKey &key);

/// The checks of dtrain_rt_pool2d_* (the kind, the geometry, ceil mode
/// included, and the tensors) but for the windows without input element,
/// which are checkPoolWindows's; returns the geometry's key.
DTRAIN_RT_CUDA_SHARED_API PoolKey
checkPool2d(const char *kernel, const void *x, const void *y, int32_t kind,
            int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
            int64_t kh, int64_t kw, int64_t strideH, int64_t strideW,
            int64_t padTop, int64_t padLeft, int64_t padBottom,
            int64_t padRight, int64_t dilationH, int64_t dilationW);

/// A window with no input element has no maximum and no average over the
/// input: an error for MAX and AVG_EXCLUDE_PAD (AVG_INCLUDE_PAD averages
/// padding to 0).
DTRAIN_RT_CUDA_SHARED_API void checkPoolWindows(const char *kernel,
                                                const PoolGeometry &g);

/// All the checks of dtrain_rt_pool2d_backward_* (X may be NULL unless
/// KIND is MAX), windows included; returns the geometry.
DTRAIN_RT_CUDA_SHARED_API PoolGeometry checkPool2dBackward(
    const char *kernel, const void *x, const void *dy, const void *dx,
    int32_t kind, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
    int64_t ow, int64_t kh, int64_t kw, int64_t strideH, int64_t strideW,
    int64_t padTop, int64_t padLeft, int64_t padBottom, int64_t padRight,
    int64_t dilationH, int64_t dilationW);

/// Pooling and its gradient straight from the definition
/// (ReferenceKernels.cpp; T is float or double), on a checked geometry.
template <typename T> void poolLoop(const PoolGeometry &g, const T *x, T *y);
template <typename T>
void poolBackwardLoop(const PoolGeometry &g, const T *x, const T *dy, T *dx);
/// The same in f32 on channels-last tensors: X and DX N x H x W x C, Y and
/// DY N x OH x OW x C.
void poolLoopChannelsLast(const PoolGeometry &g, const float *x, float *y);
void poolBackwardLoopChannelsLast(const PoolGeometry &g, const float *x,
                                  const float *dy, float *dx);

//===--- Batch normalization ----------------------------------------------===//

/// The checks of dtrain_rt_batch_norm_*, dtrain_rt_batch_norm_train_* and
/// dtrain_rt_batch_norm_backward_* (EPSILON is the kernel's, widened).
DTRAIN_RT_CUDA_SHARED_API void
checkBatchNorm(const char *kernel, const void *x, const void *scale,
               const void *bias, const void *mean, const void *var,
               const void *y, int64_t n, int64_t c, int64_t spatial,
               double epsilon);
DTRAIN_RT_CUDA_SHARED_API void
checkBatchNormTrain(const char *kernel, const void *x, const void *scale,
                    const void *bias, const void *y, const void *batchMean,
                    const void *batchVar, int64_t n, int64_t c, int64_t spatial,
                    double epsilon);
DTRAIN_RT_CUDA_SHARED_API void
checkBatchNormBackward(const char *kernel, const void *x, const void *dy,
                       const void *scale, const void *batchMean,
                       const void *batchVar, const void *dx, const void *dscale,
                       const void *dbias, int64_t n, int64_t c, int64_t spatial,
                       double epsilon);

/// The number of kernel geometries (oneDNN primitives with their reorders
/// and buffers) created so far, all kernels together: a call with a
/// geometry seen before creates none.
DTRAIN_RT_TEST_API int64_t kernelGeometriesCreatedForTesting();

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_KERNELS_H
