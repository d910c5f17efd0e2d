//===- HeavyOpsOnCPU.cpp - the CUDA heavy-op ABI on the CPU's kernels -----===//
//
// libdtrain_runtime_cuda_loops: the heavy-op kernels of dtrain_rt_cuda.h
// (the names that --dtrain-lower-nn{target=cuda} calls) on the CPU
// kernels of libdtrain_runtime, for the trainers of `dtrain-compile
// --cuda-loops`, which run the CUDA target's loop nests and calls on the
// CPU. The f32 kernels are the CPU's, whose arguments and semantics they
// share. The 16-bit ones compute what dtrain_rt_cuda.h says the GPU's do:
// the f32 kernel on the tensors widened to f32, each output rounded once
// (a forward convolution's bias added after that rounding, and the sum
// rounded again), after the CPU kernels' argument checks, which name the
// CUDA function. A batch norm with a fused ReLU (_relu) applies it to the
// f32 result, and its gradient masks the output gradient first, with the
// GPU kernels' ReLU arithmetic (cuda/BatchNormSplits.h).
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "Kernels.h"
#include "cuda/BatchNormSplits.h"

#pragma GCC visibility push(default)
#include "dtrain_rt_cuda.h"
#pragma GCC visibility pop

#include <cstdint>
#include <vector>

using namespace dtrain::rt;

namespace {

/// A 16-bit float type's conversions, and its DTRAIN_RT_* code.
struct Half {
  float (*widen)(uint16_t);
  uint16_t (*round)(float);
  int32_t code;
};
const Half kBF16 = {bf16ToF32, f32ToBF16, DTRAIN_RT_BF16};
const Half kF16 = {f16ToF32, f32ToF16, DTRAIN_RT_F16};

/// COUNT elements of X widened to f32 (none where X is null).
std::vector<float> widen(const Half &type, const uint16_t *x, int64_t count) {
  std::vector<float> wide;
  if (x) {
    wide.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i)
      wide[size_t(i)] = type.widen(x[i]);
  }
  return wide;
}

/// WIDE's elements rounded into Y.
void round(const Half &type, const std::vector<float> &wide, uint16_t *y) {
  for (size_t i = 0; i < wide.size(); ++i)
    y[i] = type.round(wide[i]);
}

float *data(std::vector<float> &v) { return v.empty() ? nullptr : v.data(); }

/// BATCH products (dtrain_rt_batch_matmul_f32) of 16-bit matrices.
void matmul(const char *kernel, const Half &type, const uint16_t *a,
            const uint16_t *b, uint16_t *c, int64_t batch, int64_t m, int64_t n,
            int64_t k, int32_t transposeA, int32_t transposeB, float beta) {
  checkKernelDim(kernel, "batch", batch, 0);
  checkKernelDim(kernel, "m", m, 0);
  checkKernelDim(kernel, "n", n, 0);
  checkKernelDim(kernel, "k", k, 0);
  checkKernelPointer(kernel, "a", a);
  checkKernelPointer(kernel, "b", b);
  checkKernelPointer(kernel, "c", c);
  std::vector<float> wa = widen(type, a, batch * m * k),
                     wb = widen(type, b, batch * k * n);
  std::vector<float> wc = beta != 0.0f
                              ? widen(type, c, batch * m * n)
                              : std::vector<float>(size_t(batch * m * n));
  dtrain_rt_batch_matmul_f32(wa.data(), wb.data(), wc.data(), batch, m, n, k,
                             transposeA, transposeB, beta);
  round(type, wc, c);
}

void conv2d(const char *kernel, bool channelsLast, const Half &type,
            const uint16_t *x, const uint16_t *w, const uint16_t *bias,
            uint16_t *y, int64_t n, int64_t c, int64_t h, int64_t w_,
            int64_t oc, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
            int64_t strideH, int64_t strideW, int64_t padTop, int64_t padLeft,
            int64_t padBottom, int64_t padRight, int64_t dilationH,
            int64_t dilationW, int64_t groups) {
  checkConv2d(kernel, x, w, bias, y, n, c, h, w_, oc, kh, kw, oh, ow, strideH,
              strideW, padTop, padLeft, padBottom, padRight, dilationH,
              dilationW, groups);
  std::vector<float> wx = widen(type, x, n * c * h * w_);
  std::vector<float> ww = widen(type, w, oc * (c / groups) * kh * kw);
  std::vector<float> wy(size_t(n * oc * oh * ow));
  (channelsLast ? dtrain_rt_conv2d_nhwc_f32 : dtrain_rt_conv2d_f32)(
      wx.data(), ww.data(), nullptr, wy.data(), n, c, h, w_, oc, kh, kw, oh, ow,
      strideH, strideW, padTop, padLeft, padBottom, padRight, dilationH,
      dilationW, groups);
  if (bias) {
    // The channel of element I: innermost, or of the I / (OH OW)th plane.
    const int64_t plane = channelsLast ? 1 : oh * ow;
    for (size_t i = 0; i < wy.size(); ++i)
      wy[i] = type.widen(type.round(wy[i])) +
              type.widen(bias[(int64_t(i) / plane) % oc]);
  }
  round(type, wy, y);
}

void conv2dBackwardData(const char *kernel, bool channelsLast, const Half &type,
                        const uint16_t *dy, const uint16_t *w, uint16_t *dx,
                        int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc,
                        int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                        int64_t strideH, int64_t strideW, int64_t padTop,
                        int64_t padLeft, int64_t padBottom, int64_t padRight,
                        int64_t dilationH, int64_t dilationW, int64_t groups) {
  checkConv2dBackwardData(kernel, dy, w, dx, n, c, h, w_, oc, kh, kw, oh, ow,
                          strideH, strideW, padTop, padLeft, padBottom,
                          padRight, dilationH, dilationW, groups);
  std::vector<float> wdy = widen(type, dy, n * oc * oh * ow);
  std::vector<float> ww = widen(type, w, oc * (c / groups) * kh * kw);
  std::vector<float> wdx(size_t(n * c * h * w_));
  (channelsLast ? dtrain_rt_conv2d_backward_data_nhwc_f32
                : dtrain_rt_conv2d_backward_data_f32)(
      wdy.data(), ww.data(), wdx.data(), n, c, h, w_, oc, kh, kw, oh, ow,
      strideH, strideW, padTop, padLeft, padBottom, padRight, dilationH,
      dilationW, groups);
  round(type, wdx, dx);
}

void conv2dBackwardWeights(const char *kernel, bool channelsLast,
                           const Half &type, const uint16_t *x,
                           const uint16_t *dy, uint16_t *dw, uint16_t *db,
                           int64_t n, int64_t c, int64_t h, int64_t w_,
                           int64_t oc, int64_t kh, int64_t kw, int64_t oh,
                           int64_t ow, int64_t strideH, int64_t strideW,
                           int64_t padTop, int64_t padLeft, int64_t padBottom,
                           int64_t padRight, int64_t dilationH,
                           int64_t dilationW, int64_t groups) {
  checkConv2dBackwardWeights(kernel, x, dy, dw, db, n, c, h, w_, oc, kh, kw, oh,
                             ow, strideH, strideW, padTop, padLeft, padBottom,
                             padRight, dilationH, dilationW, groups);
  std::vector<float> wx = widen(type, x, n * c * h * w_);
  std::vector<float> wdy = widen(type, dy, n * oc * oh * ow);
  std::vector<float> wdw(size_t(oc * (c / groups) * kh * kw));
  std::vector<float> wdb(db ? size_t(oc) : 0);
  (channelsLast ? dtrain_rt_conv2d_backward_weights_nhwc_f32
                : dtrain_rt_conv2d_backward_weights_f32)(
      wx.data(), wdy.data(), wdw.data(), data(wdb), n, c, h, w_, oc, kh, kw, oh,
      ow, strideH, strideW, padTop, padLeft, padBottom, padRight, dilationH,
      dilationW, groups);
  round(type, wdw, dw);
  if (db)
    round(type, wdb, db);
}

void pool2d(const char *kernel, bool channelsLast, const Half &type,
            const uint16_t *x, uint16_t *y, int32_t kind, int64_t n, int64_t c,
            int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
            int64_t kw, int64_t strideH, int64_t strideW, int64_t padTop,
            int64_t padLeft, int64_t padBottom, int64_t padRight,
            int64_t dilationH, int64_t dilationW) {
  checkPoolWindows(kernel, poolGeometry(checkPool2d(
                               kernel, x, y, kind, n, c, h, w, oh, ow, kh, kw,
                               strideH, strideW, padTop, padLeft, padBottom,
                               padRight, dilationH, dilationW)));
  std::vector<float> wx = widen(type, x, n * c * h * w);
  std::vector<float> wy(size_t(n * c * oh * ow));
  (channelsLast ? dtrain_rt_pool2d_nhwc_f32 : dtrain_rt_pool2d_f32)(
      wx.data(), wy.data(), kind, n, c, h, w, oh, ow, kh, kw, strideH, strideW,
      padTop, padLeft, padBottom, padRight, dilationH, dilationW);
  round(type, wy, y);
}

void pool2dBackward(const char *kernel, bool channelsLast, const Half &type,
                    const uint16_t *x, const uint16_t *dy, uint16_t *dx,
                    int32_t kind, int64_t n, int64_t c, int64_t h, int64_t w,
                    int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                    int64_t strideH, int64_t strideW, int64_t padTop,
                    int64_t padLeft, int64_t padBottom, int64_t padRight,
                    int64_t dilationH, int64_t dilationW) {
  checkPool2dBackward(kernel, x, dy, dx, kind, n, c, h, w, oh, ow, kh, kw,
                      strideH, strideW, padTop, padLeft, padBottom, padRight,
                      dilationH, dilationW);
  std::vector<float> wx = widen(type, x, n * c * h * w);
  std::vector<float> wdy = widen(type, dy, n * c * oh * ow);
  std::vector<float> wdx(size_t(n * c * h * w));
  (channelsLast ? dtrain_rt_pool2d_backward_nhwc_f32
                : dtrain_rt_pool2d_backward_f32)(
      wx.data(), wdy.data(), wdx.data(), kind, n, c, h, w, oh, ow, kh, kw,
      strideH, strideW, padTop, padLeft, padBottom, padRight, dilationH,
      dilationW);
  round(type, wdx, dx);
}

void batchNorm(const char *kernel, const Half &type, const uint16_t *x,
               const float *scale, const float *bias, const float *mean,
               const float *var, uint16_t *y, int64_t n, int64_t c,
               int64_t spatial, float epsilon) {
  checkBatchNorm(kernel, x, scale, bias, mean, var, y, n, c, spatial, epsilon);
  std::vector<float> wx = widen(type, x, n * c * spatial);
  std::vector<float> wy(wx.size());
  dtrain_rt_batch_norm_f32(wx.data(), scale, bias, mean, var, wy.data(), n, c,
                           spatial, epsilon);
  round(type, wy, y);
}

/// Y = max(Y, 0) for COUNT elements (a fused ReLU); with RESIDUAL (else
/// NULL), max(Y + RESIDUAL, 0), rounded as the GPU's kernels round it in
/// TYPE (gpu::residualRelu).
template <int32_t Type>
void reluInPlace(float *y, const float *residual, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] =
        residual ? gpu::residualRelu<Type>(y[i], residual[i]) : gpu::relu(y[i]);
}

/// DY = the ReLU's gradient of DZ from its output Z, COUNT elements.
std::vector<float> reluGradients(const float *dz, const float *z,
                                 int64_t count) {
  std::vector<float> dy(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    dy[size_t(i)] = gpu::reluGradient(dz[i], z[i]);
  return dy;
}

/// Batch norm in training; with WITHRELU, a ReLU after it, and with
/// RESIDUAL (else NULL) the residual added before the ReLU.
void batchNormTrain(const char *kernel, const Half &type, const uint16_t *x,
                    const float *scale, const float *bias, uint16_t *y,
                    float *batchMean, float *batchVar, int64_t n, int64_t c,
                    int64_t spatial, float epsilon, bool withRelu,
                    const uint16_t *residual) {
  checkBatchNormTrain(kernel, x, scale, bias, y, batchMean, batchVar, n, c,
                      spatial, epsilon);
  std::vector<float> wx = widen(type, x, n * c * spatial);
  std::vector<float> wy(wx.size());
  dtrain_rt_batch_norm_train_f32(wx.data(), scale, bias, wy.data(), batchMean,
                                 batchVar, n, c, spatial, epsilon);
  if (withRelu) {
    const std::vector<float> wr = widen(type, residual, int64_t(wy.size()));
    const float *r = residual ? wr.data() : nullptr;
    gpu::forFloatType(type.code, [&](auto t) {
      reluInPlace<decltype(t)::value>(wy.data(), r, int64_t(wy.size()));
    });
  }
  round(type, wy, y);
}

/// The gradients for DY; with Z (else NULL), of the batch norm and the ReLU
/// whose output Z is, for its output gradient DY.
void batchNormBackward(const char *kernel, const Half &type, const uint16_t *x,
                       const uint16_t *dy, const uint16_t *z,
                       const float *scale, const float *batchMean,
                       const float *batchVar, uint16_t *dx, float *dscale,
                       float *dbias, int64_t n, int64_t c, int64_t spatial,
                       float epsilon) {
  checkBatchNormBackward(kernel, x, dy, scale, batchMean, batchVar, dx, dscale,
                         dbias, n, c, spatial, epsilon);
  const int64_t count = n * c * spatial;
  std::vector<float> wx = widen(type, x, count);
  std::vector<float> wdy = widen(type, dy, count);
  if (z)
    wdy = reluGradients(wdy.data(), widen(type, z, count).data(), count);
  std::vector<float> wdx(wx.size());
  dtrain_rt_batch_norm_backward_f32(wx.data(), wdy.data(), scale, batchMean,
                                    batchVar, wdx.data(), dscale, dbias, n, c,
                                    spatial, epsilon);
  round(type, wdx, dx);
}

} // namespace

extern "C" {

//===--- f32: the CPU's kernels -------------------------------------------===//

void dtrain_rt_cuda_matmul_f32(const float *a, const float *b, float *c,
                               int64_t m, int64_t n, int64_t k,
                               int32_t transpose_a, int32_t transpose_b,
                               float beta) {
  dtrain_rt_matmul_f32(a, b, c, m, n, k, transpose_a, transpose_b, beta);
}

void dtrain_rt_cuda_batch_matmul_f32(const float *a, const float *b, float *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transpose_a,
                                     int32_t transpose_b, float beta) {
  dtrain_rt_batch_matmul_f32(a, b, c, batch, m, n, k, transpose_a, transpose_b,
                             beta);
}

void dtrain_rt_cuda_embedding_grad_f32(const float *grad,
                                       const int64_t *indices, float *out,
                                       int64_t count, int64_t rows,
                                       int64_t width) {
  dtrain_rt_embedding_grad_f32(grad, indices, out, count, rows, width);
}

// The f32 convolutions in LAYOUT's names (NAME: _nhwc or nothing).
#define DTRAIN_F32_CONV2D_KERNELS(NAME)                                        \
  void dtrain_rt_cuda_conv2d##NAME##_f32(                                      \
      const float *x, const float *w, const float *bias, float *y, int64_t n,  \
      int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,    \
      int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,              \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    dtrain_rt_conv2d##NAME##_f32(x, w, bias, y, n, c, h, w_, oc, kh, kw, oh,   \
                                 ow, stride_h, stride_w, pad_top, pad_left,    \
                                 pad_bottom, pad_right, dilation_h,            \
                                 dilation_w, groups);                          \
  }                                                                            \
  void dtrain_rt_cuda_conv2d_backward_data##NAME##_f32(                        \
      const float *dy, const float *w, float *dx, int64_t n, int64_t c,        \
      int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,   \
      int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,         \
      int64_t pad_left, int64_t pad_bottom, int64_t pad_right,                 \
      int64_t dilation_h, int64_t dilation_w, int64_t groups) {                \
    dtrain_rt_conv2d_backward_data##NAME##_f32(                                \
        dy, w, dx, n, c, h, w_, oc, kh, kw, oh, ow, stride_h, stride_w,        \
        pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w,      \
        groups);                                                               \
  }                                                                            \
  void dtrain_rt_cuda_conv2d_backward_weights##NAME##_f32(                     \
      const float *x, const float *dy, float *dw, float *db, int64_t n,        \
      int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,    \
      int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,              \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    dtrain_rt_conv2d_backward_weights##NAME##_f32(                             \
        x, dy, dw, db, n, c, h, w_, oc, kh, kw, oh, ow, stride_h, stride_w,    \
        pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w,      \
        groups);                                                               \
  }

DTRAIN_F32_CONV2D_KERNELS()
DTRAIN_F32_CONV2D_KERNELS(_nhwc)
#undef DTRAIN_F32_CONV2D_KERNELS

// The f32 pooling kernels in LAYOUT's names (NAME: _nhwc or nothing).
#define DTRAIN_F32_POOL2D_KERNELS(NAME)                                        \
  void dtrain_rt_cuda_pool2d##NAME##_f32(                                      \
      const float *x, float *y, int32_t kind, int64_t n, int64_t c, int64_t h, \
      int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,               \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w) {                                                    \
    dtrain_rt_pool2d##NAME##_f32(                                              \
        x, y, kind, n, c, h, w, oh, ow, kh, kw, stride_h, stride_w, pad_top,   \
        pad_left, pad_bottom, pad_right, dilation_h, dilation_w);              \
  }                                                                            \
  void dtrain_rt_cuda_pool2d_backward##NAME##_f32(                             \
      const float *x, const float *dy, float *dx, int32_t kind, int64_t n,     \
      int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,     \
      int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_top,         \
      int64_t pad_left, int64_t pad_bottom, int64_t pad_right,                 \
      int64_t dilation_h, int64_t dilation_w) {                                \
    dtrain_rt_pool2d_backward##NAME##_f32(                                     \
        x, dy, dx, kind, n, c, h, w, oh, ow, kh, kw, stride_h, stride_w,       \
        pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w);     \
  }

DTRAIN_F32_POOL2D_KERNELS()
DTRAIN_F32_POOL2D_KERNELS(_nhwc)
#undef DTRAIN_F32_POOL2D_KERNELS

void dtrain_rt_cuda_batch_norm_f32(const float *x, const float *scale,
                                   const float *bias, const float *mean,
                                   const float *var, float *y, int64_t n,
                                   int64_t c, int64_t spatial, float epsilon) {
  dtrain_rt_batch_norm_f32(x, scale, bias, mean, var, y, n, c, spatial,
                           epsilon);
}

void dtrain_rt_cuda_batch_norm_train_f32(const float *x, const float *scale,
                                         const float *bias, float *y,
                                         float *batch_mean, float *batch_var,
                                         int64_t n, int64_t c, int64_t spatial,
                                         float epsilon) {
  dtrain_rt_batch_norm_train_f32(x, scale, bias, y, batch_mean, batch_var, n, c,
                                 spatial, epsilon);
}

void dtrain_rt_cuda_batch_norm_backward_f32(
    const float *x, const float *dy, const float *scale,
    const float *batch_mean, const float *batch_var, float *dx, float *dscale,
    float *dbias, int64_t n, int64_t c, int64_t spatial, float epsilon) {
  dtrain_rt_batch_norm_backward_f32(x, dy, scale, batch_mean, batch_var, dx,
                                    dscale, dbias, n, c, spatial, epsilon);
}

void dtrain_rt_cuda_batch_norm_train_relu_f32(
    const float *x, const float *scale, const float *bias, float *y,
    float *batch_mean, float *batch_var, int64_t n, int64_t c, int64_t spatial,
    float epsilon) {
  dtrain_rt_batch_norm_train_f32(x, scale, bias, y, batch_mean, batch_var, n, c,
                                 spatial, epsilon);
  reluInPlace<DTRAIN_RT_F32>(y, nullptr, n * c * spatial);
}

void dtrain_rt_cuda_batch_norm_train_add_relu_f32(
    const float *x, const float *residual, const float *scale,
    const float *bias, float *y, float *batch_mean, float *batch_var, int64_t n,
    int64_t c, int64_t spatial, float epsilon) {
  checkKernelPointer("dtrain_rt_cuda_batch_norm_train_add_relu_f32", "residual",
                     residual);
  dtrain_rt_batch_norm_train_f32(x, scale, bias, y, batch_mean, batch_var, n, c,
                                 spatial, epsilon);
  reluInPlace<DTRAIN_RT_F32>(y, residual, n * c * spatial);
}

void dtrain_rt_cuda_batch_norm_backward_relu_f32(
    const float *x, const float *dz, const float *z, const float *scale,
    const float *batch_mean, const float *batch_var, float *dx, float *dscale,
    float *dbias, int64_t n, int64_t c, int64_t spatial, float epsilon) {
  const char *kernel = "dtrain_rt_cuda_batch_norm_backward_relu_f32";
  checkKernelPointer(kernel, "dz", dz);
  checkKernelPointer(kernel, "z", z);
  checkBatchNormBackward(kernel, x, dz, scale, batch_mean, batch_var, dx,
                         dscale, dbias, n, c, spatial, epsilon);
  const std::vector<float> dy = reluGradients(dz, z, n * c * spatial);
  dtrain_rt_batch_norm_backward_f32(x, dy.data(), scale, batch_mean, batch_var,
                                    dx, dscale, dbias, n, c, spatial, epsilon);
}

//===--- bf16 and f16: the f32 kernels on widened tensors, rounded -------===//

// The 16-bit convolutions in one layout (NAME: _nhwc or nothing).
#define DTRAIN_HALF_CONV2D_KERNELS(NAME, CHANNELS_LAST, SUFFIX, TYPE)          \
  void dtrain_rt_cuda_conv2d##NAME##_##SUFFIX(                                 \
      const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y, \
      int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,     \
      int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,  \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    conv2d("dtrain_rt_cuda_conv2d" #NAME "_" #SUFFIX, CHANNELS_LAST, TYPE, x,  \
           w, bias, y, n, c, h, w_, oc, kh, kw, oh, ow, stride_h, stride_w,    \
           pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w,   \
           groups);                                                            \
  }                                                                            \
  void dtrain_rt_cuda_conv2d_backward_data##NAME##_##SUFFIX(                   \
      const uint16_t *dy, const uint16_t *w, uint16_t *dx, int64_t n,          \
      int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,    \
      int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,              \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    conv2dBackwardData("dtrain_rt_cuda_conv2d_backward_data" #NAME             \
                       "_" #SUFFIX,                                            \
                       CHANNELS_LAST, TYPE, dy, w, dx, n, c, h, w_, oc, kh,    \
                       kw, oh, ow, stride_h, stride_w, pad_top, pad_left,      \
                       pad_bottom, pad_right, dilation_h, dilation_w, groups); \
  }                                                                            \
  void dtrain_rt_cuda_conv2d_backward_weights##NAME##_##SUFFIX(                \
      const uint16_t *x, const uint16_t *dy, uint16_t *dw, uint16_t *db,       \
      int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,     \
      int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,  \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    conv2dBackwardWeights(                                                     \
        "dtrain_rt_cuda_conv2d_backward_weights" #NAME "_" #SUFFIX,            \
        CHANNELS_LAST, TYPE, x, dy, dw, db, n, c, h, w_, oc, kh, kw, oh, ow,   \
        stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,          \
        dilation_h, dilation_w, groups);                                       \
  }

// The 16-bit pooling kernels in one layout (NAME: _nhwc or nothing).
#define DTRAIN_HALF_POOL2D_KERNELS(NAME, CHANNELS_LAST, SUFFIX, TYPE)          \
  void dtrain_rt_cuda_pool2d##NAME##_##SUFFIX(                                 \
      const uint16_t *x, uint16_t *y, int32_t kind, int64_t n, int64_t c,      \
      int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,    \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w) {                                                    \
    pool2d("dtrain_rt_cuda_pool2d" #NAME "_" #SUFFIX, CHANNELS_LAST, TYPE, x,  \
           y, kind, n, c, h, w, oh, ow, kh, kw, stride_h, stride_w, pad_top,   \
           pad_left, pad_bottom, pad_right, dilation_h, dilation_w);           \
  }                                                                            \
  void dtrain_rt_cuda_pool2d_backward##NAME##_##SUFFIX(                        \
      const uint16_t *x, const uint16_t *dy, uint16_t *dx, int32_t kind,       \
      int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,      \
      int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,              \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w) {             \
    pool2dBackward("dtrain_rt_cuda_pool2d_backward" #NAME "_" #SUFFIX,         \
                   CHANNELS_LAST, TYPE, x, dy, dx, kind, n, c, h, w, oh, ow,   \
                   kh, kw, stride_h, stride_w, pad_top, pad_left, pad_bottom,  \
                   pad_right, dilation_h, dilation_w);                         \
  }

#define DTRAIN_HALF_KERNELS(SUFFIX, TYPE)                                      \
  void dtrain_rt_cuda_matmul_##SUFFIX(                                         \
      const uint16_t *a, const uint16_t *b, uint16_t *c, int64_t m, int64_t n, \
      int64_t k, int32_t transpose_a, int32_t transpose_b, float beta) {       \
    matmul("dtrain_rt_cuda_matmul_" #SUFFIX, TYPE, a, b, c, 1, m, n, k,        \
           transpose_a, transpose_b, beta);                                    \
  }                                                                            \
  void dtrain_rt_cuda_batch_matmul_##SUFFIX(                                   \
      const uint16_t *a, const uint16_t *b, uint16_t *c, int64_t batch,        \
      int64_t m, int64_t n, int64_t k, int32_t transpose_a,                    \
      int32_t transpose_b, float beta) {                                       \
    matmul("dtrain_rt_cuda_batch_matmul_" #SUFFIX, TYPE, a, b, c, batch, m, n, \
           k, transpose_a, transpose_b, beta);                                 \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_##SUFFIX(                                     \
      const uint16_t *x, const float *scale, const float *bias,                \
      const float *mean, const float *var, uint16_t *y, int64_t n, int64_t c,  \
      int64_t spatial, float epsilon) {                                        \
    batchNorm("dtrain_rt_cuda_batch_norm_" #SUFFIX, TYPE, x, scale, bias,      \
              mean, var, y, n, c, spatial, epsilon);                           \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_train_##SUFFIX(                               \
      const uint16_t *x, const float *scale, const float *bias, uint16_t *y,   \
      float *batch_mean, float *batch_var, int64_t n, int64_t c,               \
      int64_t spatial, float epsilon) {                                        \
    batchNormTrain("dtrain_rt_cuda_batch_norm_train_" #SUFFIX, TYPE, x, scale, \
                   bias, y, batch_mean, batch_var, n, c, spatial, epsilon,     \
                   false, nullptr);                                            \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_train_relu_##SUFFIX(                          \
      const uint16_t *x, const float *scale, const float *bias, uint16_t *y,   \
      float *batch_mean, float *batch_var, int64_t n, int64_t c,               \
      int64_t spatial, float epsilon) {                                        \
    batchNormTrain("dtrain_rt_cuda_batch_norm_train_relu_" #SUFFIX, TYPE, x,   \
                   scale, bias, y, batch_mean, batch_var, n, c, spatial,       \
                   epsilon, true, nullptr);                                    \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_train_add_relu_##SUFFIX(                      \
      const uint16_t *x, const uint16_t *residual, const float *scale,         \
      const float *bias, uint16_t *y, float *batch_mean, float *batch_var,     \
      int64_t n, int64_t c, int64_t spatial, float epsilon) {                  \
    const char *kernel = "dtrain_rt_cuda_batch_norm_train_add_relu_" #SUFFIX;  \
    checkKernelPointer(kernel, "residual", residual);                          \
    batchNormTrain(kernel, TYPE, x, scale, bias, y, batch_mean, batch_var, n,  \
                   c, spatial, epsilon, true, residual);                       \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_backward_##SUFFIX(                            \
      const uint16_t *x, const uint16_t *dy, const float *scale,               \
      const float *batch_mean, const float *batch_var, uint16_t *dx,           \
      float *dscale, float *dbias, int64_t n, int64_t c, int64_t spatial,      \
      float epsilon) {                                                         \
    batchNormBackward("dtrain_rt_cuda_batch_norm_backward_" #SUFFIX, TYPE, x,  \
                      dy, nullptr, scale, batch_mean, batch_var, dx, dscale,   \
                      dbias, n, c, spatial, epsilon);                          \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_backward_relu_##SUFFIX(                       \
      const uint16_t *x, const uint16_t *dz, const uint16_t *z,                \
      const float *scale, const float *batch_mean, const float *batch_var,     \
      uint16_t *dx, float *dscale, float *dbias, int64_t n, int64_t c,         \
      int64_t spatial, float epsilon) {                                        \
    const char *kernel = "dtrain_rt_cuda_batch_norm_backward_relu_" #SUFFIX;   \
    checkKernelPointer(kernel, "dz", dz);                                      \
    checkKernelPointer(kernel, "z", z);                                        \
    batchNormBackward(kernel, TYPE, x, dz, z, scale, batch_mean, batch_var,    \
                      dx, dscale, dbias, n, c, spatial, epsilon);              \
  }

DTRAIN_HALF_KERNELS(bf16, kBF16)
DTRAIN_HALF_KERNELS(f16, kF16)
DTRAIN_HALF_CONV2D_KERNELS(, false, bf16, kBF16)
DTRAIN_HALF_CONV2D_KERNELS(, false, f16, kF16)
DTRAIN_HALF_CONV2D_KERNELS(_nhwc, true, bf16, kBF16)
DTRAIN_HALF_CONV2D_KERNELS(_nhwc, true, f16, kF16)
DTRAIN_HALF_POOL2D_KERNELS(, false, bf16, kBF16)
DTRAIN_HALF_POOL2D_KERNELS(, false, f16, kF16)
DTRAIN_HALF_POOL2D_KERNELS(_nhwc, true, bf16, kBF16)
DTRAIN_HALF_POOL2D_KERNELS(_nhwc, true, f16, kF16)

} // extern "C"
