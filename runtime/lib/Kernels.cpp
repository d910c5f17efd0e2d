//===- Kernels.cpp - The argument checks of the heavy-op kernels ----------===//
//
// Every check of every kernel, for its f32 (oneDNN) and f64 (reference)
// variants alike: the messages name the kernel called and the values.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Internal.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

using namespace dtrain::rt;

namespace {

void checkWindowFits(const char *kernel, const WindowDim &d) {
  if (d.span() > d.padded())
    fatal(nullptr,
          "%s: window %s %lld (kernel %lld, dilation %lld) exceeds the padded "
          "input %s %lld (input %lld, padding %lld + %lld)",
          kernel, d.name, (long long)d.span(), (long long)d.kernel,
          (long long)d.dilation, d.name, (long long)d.padded(), (long long)d.in,
          (long long)d.padBegin, (long long)d.padEnd);
}

/// "input 8x8, kernel 3x3, stride 2x2, padding 1,1,1,1 (top, left, bottom,
/// right), dilation 1x1": the geometry behind an output size, for messages.
std::string describeWindow(const WindowDim &h, const WindowDim &w) {
  char text[256];
  std::snprintf(text, sizeof text,
                "input %lldx%lld, kernel %lldx%lld, stride %lldx%lld, "
                "padding %lld,%lld,%lld,%lld (top, left, bottom, right), "
                "dilation %lldx%lld",
                (long long)h.in, (long long)w.in, (long long)h.kernel,
                (long long)w.kernel, (long long)h.stride, (long long)w.stride,
                (long long)h.padBegin, (long long)w.padBegin,
                (long long)h.padEnd, (long long)w.padEnd, (long long)h.dilation,
                (long long)w.dilation);
  return text;
}

/// Checks the scalars of a window dimension (the input size is checked by
/// the caller).
void checkWindowDim(const char *kernel, const WindowDim &d, const char *kName,
                    const char *strideName, const char *padBeginName,
                    const char *padEndName, const char *dilationName) {
  checkKernelDim(kernel, kName, d.kernel, 1);
  checkKernelDim(kernel, strideName, d.stride, 1);
  checkKernelDim(kernel, padBeginName, d.padBegin, 0);
  checkKernelDim(kernel, padEndName, d.padEnd, 0);
  checkKernelDim(kernel, dilationName, d.dilation, 1);
  checkWindowFits(kernel, d);
}

/// The geometry of every convolution kernel (the forward kernel's).
ConvKey checkConvGeometry(const char *kernel, int64_t n, int64_t c, int64_t h,
                          int64_t w, int64_t oc, int64_t kh, int64_t kw,
                          int64_t oh, int64_t ow, int64_t strideH,
                          int64_t strideW, int64_t padTop, int64_t padLeft,
                          int64_t padBottom, int64_t padRight,
                          int64_t dilationH, int64_t dilationW, int64_t groups,
                          bool hasBias) {
  checkKernelDim(kernel, "n", n, 1);
  checkKernelDim(kernel, "c", c, 1);
  checkKernelDim(kernel, "h", h, 1);
  checkKernelDim(kernel, "w", w, 1);
  checkKernelDim(kernel, "oc", oc, 1);
  checkKernelDim(kernel, "oh", oh, 1);
  checkKernelDim(kernel, "ow", ow, 1);
  checkKernelDim(kernel, "groups", groups, 1);
  if (c % groups || oc % groups)
    fatal(nullptr,
          "%s: groups %lld does not divide both the input channels %lld and "
          "the output channels %lld",
          kernel, (long long)groups, (long long)c, (long long)oc);
  WindowDim dimH{"height", h, kh, strideH, padTop, padBottom, dilationH};
  WindowDim dimW{"width", w, kw, strideW, padLeft, padRight, dilationW};
  checkWindowDim(kernel, dimH, "kh", "stride_h", "pad_top", "pad_bottom",
                 "dilation_h");
  checkWindowDim(kernel, dimW, "kw", "stride_w", "pad_left", "pad_right",
                 "dilation_w");
  int64_t expectH = dimH.outputSize(false), expectW = dimW.outputSize(false);
  if (oh != expectH || ow != expectW)
    fatal(nullptr, "%s: output is %lldx%lld but %s gives %lldx%lld", kernel,
          (long long)oh, (long long)ow, describeWindow(dimH, dimW).c_str(),
          (long long)expectH, (long long)expectW);
  return {n,        c,         h,         w,       oc,     kh,      kw,
          oh,       ow,        strideH,   strideW, padTop, padLeft, padBottom,
          padRight, dilationH, dilationW, groups,  hasBias};
}

/// The kind and geometry of both pooling kernels (the forward kernel's,
/// ceil mode included).
PoolKey checkPoolGeometry(const char *kernel, int32_t kind, int64_t n,
                          int64_t c, int64_t h, int64_t w, int64_t oh,
                          int64_t ow, int64_t kh, int64_t kw, int64_t strideH,
                          int64_t strideW, int64_t padTop, int64_t padLeft,
                          int64_t padBottom, int64_t padRight,
                          int64_t dilationH, int64_t dilationW) {
  if (kind < DTRAIN_RT_POOL_MAX || kind > DTRAIN_RT_POOL_AVG_EXCLUDE_PAD)
    fatal(nullptr,
          "%s: unknown pooling kind %d (accepted: %d = max, %d = average "
          "including padding, %d = average excluding padding)",
          kernel, kind, DTRAIN_RT_POOL_MAX, DTRAIN_RT_POOL_AVG_INCLUDE_PAD,
          DTRAIN_RT_POOL_AVG_EXCLUDE_PAD);
  checkKernelDim(kernel, "n", n, 1);
  checkKernelDim(kernel, "c", c, 1);
  checkKernelDim(kernel, "h", h, 1);
  checkKernelDim(kernel, "w", w, 1);
  checkKernelDim(kernel, "oh", oh, 1);
  checkKernelDim(kernel, "ow", ow, 1);
  WindowDim dimH{"height", h, kh, strideH, padTop, padBottom, dilationH};
  WindowDim dimW{"width", w, kw, strideW, padLeft, padRight, dilationW};
  checkWindowDim(kernel, dimH, "kh", "stride_h", "pad_top", "pad_bottom",
                 "dilation_h");
  checkWindowDim(kernel, dimW, "kw", "stride_w", "pad_left", "pad_right",
                 "dilation_w");
  // Ceil mode is implied by either size exceeding floor mode's, and then
  // applies to both.
  int64_t floorH = dimH.outputSize(false), floorW = dimW.outputSize(false);
  int64_t ceilH = dimH.outputSize(true), ceilW = dimW.outputSize(true);
  bool ceilMode = oh != floorH || ow != floorW;
  if (oh != (ceilMode ? ceilH : floorH) || ow != (ceilMode ? ceilW : floorW))
    fatal(nullptr,
          "%s: output is %lldx%lld but %s gives %lldx%lld (floor mode) or "
          "%lldx%lld (ceil mode)",
          kernel, (long long)oh, (long long)ow,
          describeWindow(dimH, dimW).c_str(), (long long)floorH,
          (long long)floorW, (long long)ceilH, (long long)ceilW);
  return {kind,    n,         c,        h,         w,        oh,
          ow,      kh,        kw,       strideH,   strideW,  padTop,
          padLeft, padBottom, padRight, dilationH, dilationW};
}

/// The geometry of every batch-norm kernel.
void checkBatchNormGeometry(const char *kernel, int64_t n, int64_t c,
                            int64_t spatial, double epsilon) {
  checkKernelDim(kernel, "n", n, 1);
  checkKernelDim(kernel, "c", c, 1);
  checkKernelDim(kernel, "spatial", spatial, 1);
  if (!(epsilon >= 0) || std::isinf(epsilon))
    fatal(nullptr, "%s: epsilon is %g (accepted: a finite epsilon >= 0)",
          kernel, epsilon);
}

/// The operands of both forward batch norms.
void checkBatchNormForward(const char *kernel, const void *x, const void *scale,
                           const void *bias, const void *y, int64_t n,
                           int64_t c, int64_t spatial, double epsilon) {
  checkKernelPointer(kernel, "x", x);
  checkKernelPointer(kernel, "scale", scale);
  checkKernelPointer(kernel, "bias", bias);
  checkKernelPointer(kernel, "y", y);
  checkBatchNormGeometry(kernel, n, c, spatial, epsilon);
}

} // namespace

//===--- Convolution ------------------------------------------------------===//

ConvGeometry dtrain::rt::convGeometry(const ConvKey &key) {
  auto [n, c, h, w, oc, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr, dh, dw, groups,
        hasBias] = key;
  return {n,
          c,
          oc,
          groups,
          {"height", h, kh, sh, pt, pb, dh},
          {"width", w, kw, sw, pl, pr, dw},
          oh,
          ow};
}

ConvKey dtrain::rt::checkConv2d(
    const char *kernel, const void *x, const void *w, const void *bias,
    const void *y, int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t strideH,
    int64_t strideW, int64_t padTop, int64_t padLeft, int64_t padBottom,
    int64_t padRight, int64_t dilationH, int64_t dilationW, int64_t groups) {
  checkKernelPointer(kernel, "x", x);
  checkKernelPointer(kernel, "w", w);
  checkKernelPointer(kernel, "y", y);
  return checkConvGeometry(kernel, n, c, h, w_, oc, kh, kw, oh, ow, strideH,
                           strideW, padTop, padLeft, padBottom, padRight,
                           dilationH, dilationW, groups, bias != nullptr);
}

ConvKey dtrain::rt::checkConv2dBackwardData(
    const char *kernel, const void *dy, const void *w, const void *dx,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t strideH, int64_t strideW,
    int64_t padTop, int64_t padLeft, int64_t padBottom, int64_t padRight,
    int64_t dilationH, int64_t dilationW, int64_t groups) {
  checkKernelPointer(kernel, "dy", dy);
  checkKernelPointer(kernel, "w", w);
  checkKernelPointer(kernel, "dx", dx);
  return checkConvGeometry(kernel, n, c, h, w_, oc, kh, kw, oh, ow, strideH,
                           strideW, padTop, padLeft, padBottom, padRight,
                           dilationH, dilationW, groups, false);
}

ConvKey dtrain::rt::checkConv2dBackwardWeights(
    const char *kernel, const void *x, const void *dy, const void *dw,
    const void *db, int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t strideH,
    int64_t strideW, int64_t padTop, int64_t padLeft, int64_t padBottom,
    int64_t padRight, int64_t dilationH, int64_t dilationW, int64_t groups) {
  checkKernelPointer(kernel, "x", x);
  checkKernelPointer(kernel, "dy", dy);
  checkKernelPointer(kernel, "dw", dw);
  return checkConvGeometry(kernel, n, c, h, w_, oc, kh, kw, oh, ow, strideH,
                           strideW, padTop, padLeft, padBottom, padRight,
                           dilationH, dilationW, groups, db != nullptr);
}

//===--- Pooling ----------------------------------------------------------===//

PoolGeometry dtrain::rt::poolGeometry(const PoolKey &key) {
  auto [kind, n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw] = key;
  return {int32_t(kind),
          n,
          c,
          {"height", h, kh, sh, pt, pb, dh},
          {"width", w, kw, sw, pl, pr, dw},
          oh,
          ow};
}

PoolKey dtrain::rt::checkPool2d(const char *kernel, const void *x,
                                const void *y, int32_t kind, int64_t n,
                                int64_t c, int64_t h, int64_t w, int64_t oh,
                                int64_t ow, int64_t kh, int64_t kw,
                                int64_t strideH, int64_t strideW,
                                int64_t padTop, int64_t padLeft,
                                int64_t padBottom, int64_t padRight,
                                int64_t dilationH, int64_t dilationW) {
  PoolKey key = checkPoolGeometry(kernel, kind, n, c, h, w, oh, ow, kh, kw,
                                  strideH, strideW, padTop, padLeft, padBottom,
                                  padRight, dilationH, dilationW);
  checkKernelPointer(kernel, "x", x);
  checkKernelPointer(kernel, "y", y);
  return key;
}

void dtrain::rt::checkPoolWindows(const char *kernel, const PoolGeometry &g) {
  if (g.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD)
    return;
  for (const auto &[d, out] : {std::pair{g.h, g.oh}, std::pair{g.w, g.ow}})
    for (int64_t o = 0; o < out; ++o)
      if (!taps(d, o).inside())
        fatal(nullptr,
              "%s: the window at output %s %lld covers no input element (%s)",
              kernel, d.name, (long long)o, describeWindow(g.h, g.w).c_str());
}

PoolGeometry dtrain::rt::checkPool2dBackward(
    const char *kernel, const void *x, const void *dy, const void *dx,
    int32_t kind, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
    int64_t ow, int64_t kh, int64_t kw, int64_t strideH, int64_t strideW,
    int64_t padTop, int64_t padLeft, int64_t padBottom, int64_t padRight,
    int64_t dilationH, int64_t dilationW) {
  PoolKey key = checkPoolGeometry(kernel, kind, n, c, h, w, oh, ow, kh, kw,
                                  strideH, strideW, padTop, padLeft, padBottom,
                                  padRight, dilationH, dilationW);
  if (kind == DTRAIN_RT_POOL_MAX)
    checkKernelPointer(kernel, "x", x);
  checkKernelPointer(kernel, "dy", dy);
  checkKernelPointer(kernel, "dx", dx);
  // Costs O(OH KH + OW KW), nothing next to the loop that follows.
  PoolGeometry g = poolGeometry(key);
  checkPoolWindows(kernel, g);
  return g;
}

//===--- Batch normalization ----------------------------------------------===//

void dtrain::rt::checkBatchNorm(const char *kernel, const void *x,
                                const void *scale, const void *bias,
                                const void *mean, const void *var,
                                const void *y, int64_t n, int64_t c,
                                int64_t spatial, double epsilon) {
  checkBatchNormForward(kernel, x, scale, bias, y, n, c, spatial, epsilon);
  checkKernelPointer(kernel, "mean", mean);
  checkKernelPointer(kernel, "var", var);
}

void dtrain::rt::checkBatchNormTrain(const char *kernel, const void *x,
                                     const void *scale, const void *bias,
                                     const void *y, const void *batchMean,
                                     const void *batchVar, int64_t n, int64_t c,
                                     int64_t spatial, double epsilon) {
  checkBatchNormForward(kernel, x, scale, bias, y, n, c, spatial, epsilon);
  checkKernelPointer(kernel, "batch_mean", batchMean);
  checkKernelPointer(kernel, "batch_var", batchVar);
}

void dtrain::rt::checkBatchNormBackward(const char *kernel, const void *x,
                                        const void *dy, const void *scale,
                                        const void *batchMean,
                                        const void *batchVar, const void *dx,
                                        const void *dscale, const void *dbias,
                                        int64_t n, int64_t c, int64_t spatial,
                                        double epsilon) {
  checkKernelPointer(kernel, "x", x);
  checkKernelPointer(kernel, "dy", dy);
  checkKernelPointer(kernel, "scale", scale);
  checkKernelPointer(kernel, "batch_mean", batchMean);
  checkKernelPointer(kernel, "batch_var", batchVar);
  checkKernelPointer(kernel, "dx", dx);
  checkKernelPointer(kernel, "dscale", dscale);
  checkKernelPointer(kernel, "dbias", dbias);
  checkBatchNormGeometry(kernel, n, c, spatial, epsilon);
}

//===--- Embedding gradient -----------------------------------------------===//

void dtrain::rt::checkEmbeddingGrad(const char *kernel, const void *grad,
                                    const void *indices, const void *out,
                                    int64_t count, int64_t rows,
                                    int64_t width) {
  checkKernelDim(kernel, "count", count, 0);
  checkKernelDim(kernel, "rows", rows, 0);
  checkKernelDim(kernel, "width", width, 0);
  if (count > 0 && rows == 0)
    fatal(nullptr,
          "%s: rows is 0 with count %lld (accepted: rows >= 1 when count >= "
          "1: the indices pick rows of the table)",
          kernel, (long long)count);
  if (width == 0)
    return;
  if (rows > 0)
    checkKernelPointer(kernel, "out", out);
  if (count > 0) {
    checkKernelPointer(kernel, "grad", grad);
    checkKernelPointer(kernel, "indices", indices);
  }
}
