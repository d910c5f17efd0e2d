//===- PoolKernels.h - the pooling kernels' arithmetic ----------*- C++ -*-===//
//
// What the CUDA runtime's pooling kernels (DnnKernels.cu) compute for one
// element of one plane, as host and device functions: the kernels are a
// grid over them, and a CPU test (PoolKernelsTest.cpp) runs the same
// functions over every element against the CPU kernels, in both layouts.
//
// A plane is N x C planes of one channel's pixels (NCHW), or, ChannelsLast,
// N images whose pixels hold C channels each (NHWC), which consecutive
// threads take (coalesced accesses). A thread takes one element of a plane
// in every gridDim.y-th plane, so that what depends on the element alone
// (its window, or the windows that read it, and the divisions by sizes
// known only at run time) is worked out once for all its planes.
//
// The tensors are of the float type TYPE (DTRAIN_RT_F32, _BF16 or _F16),
// widened exactly to f32 as they are read; each result is computed in f32,
// in the CPU loop's order, and rounded once as it is stored.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_POOLKERNELS_H
#define DTRAIN_RUNTIME_CUDA_POOLKERNELS_H

#include "Float16.h"
#include "HostDevice.h"
#include "dtrain_rt.h"

#include <cmath>
#include <cstdint>

namespace dtrain::rt::gpu {

/// PoolDim and PoolShape (HeavyOps.h) with the sizes within a plane as
/// 32-bit ints, which the kernels' index arithmetic uses: a 64-bit division
/// costs a GPU tens of instructions, and with several per tap it made the
/// backward pass of resnet's first pooling take 1 ms on an H200. The
/// kernels' launch checks that they fit.
struct PlaneDim {
  int in, kernel, stride, padBegin, padEnd, dilation;
};
struct PlaneShape {
  int32_t kind;
  int64_t planes;
  PlaneDim h, w;
  int oh, ow;
  int channels; // per pixel of a plane: 1 (NCHW) or C (NHWC)
  DTRAIN_RT_HOST_DEVICE int inputs() const { return h.in * w.in; }
  DTRAIN_RT_HOST_DEVICE int outputs() const { return oh * ow; }
};

/// The taps of one window along one dimension: PADDED of them inside the
/// padded input (ceil mode clips the rest), FIRST to LAST-1 inside the
/// input proper (Kernels.h's TapRange and taps()).
struct Taps {
  int padded, first, last;
  DTRAIN_RT_HOST_DEVICE int inside() const {
    return last > first ? last - first : 0;
  }
};

DTRAIN_RT_HOST_DEVICE inline Taps tapsOf(const PlaneDim &d, int o) {
  const int start = o * d.stride - d.padBegin;
  Taps range{0, d.kernel, 0};
  for (int i = 0; i < d.kernel; ++i) {
    const int at = start + i * d.dilation;
    if (at >= d.in + d.padEnd)
      break;
    ++range.padded;
    if (at >= 0 && at < d.in) {
      range.first = range.first < i ? range.first : i;
      range.last = i + 1;
    }
  }
  return range;
}

/// Whether V replaces BEST as a window's maximum: larger, or the first NaN
/// (a NaN is the maximum), as the CPU's gradient decides.
DTRAIN_RT_HOST_DEVICE inline bool beats(float v, float best) {
  return v > best || (v != v && best == best);
}

/// The window of output pixel AT: its taps and the input pixel of its tap
/// (0, 0), possibly in the padding.
struct Window {
  Taps rows, cols;
  int y0, x0;

  /// The pixel of tap (I, J).
  DTRAIN_RT_HOST_DEVICE int tap(const PlaneShape &g, int i, int j) const {
    return (y0 + i * g.h.dilation) * g.w.in + x0 + j * g.w.dilation;
  }
};

DTRAIN_RT_HOST_DEVICE inline Window windowOf(const PlaneShape &g, int at) {
  const int oy = at / g.ow, ox = at - oy * g.ow;
  return {tapsOf(g.h, oy), tapsOf(g.w, ox), oy * g.h.stride - g.h.padBegin,
          ox * g.w.stride - g.w.padBegin};
}

/// An element of a plane: a pixel and a channel.
struct PlaneElement {
  int pixel, channel;
};

/// Element AT of a plane, in its layout.
template <bool ChannelsLast>
DTRAIN_RT_HOST_DEVICE PlaneElement elementOf(const PlaneShape &g, int at) {
  if (!ChannelsLast)
    return {at, 0};
  const int pixel = at / g.channels;
  return {pixel, at - pixel * g.channels};
}

/// The index of channel CHANNEL of pixel PIXEL of PLANE, in planes of
/// PIXELS pixels.
template <bool ChannelsLast>
DTRAIN_RT_HOST_DEVICE int64_t elementIndex(const PlaneShape &g, int64_t plane,
                                           int pixels, int pixel, int channel) {
  if (!ChannelsLast)
    return plane * pixels + pixel;
  return (plane * pixels + pixel) * g.channels + channel;
}

/// The output of output element E (window W) in PLANE: the window's
/// maximum or average, summed in the CPU loop's order (row-major over the
/// window).
template <int32_t Type, bool ChannelsLast>
DTRAIN_RT_HOST_DEVICE void poolOutputAt(const PlaneShape &g, const Window &w,
                                        PlaneElement e, int64_t plane,
                                        const void *x, void *y) {
  const Taps &rows = w.rows, &cols = w.cols;
  float max = -INFINITY, sum = 0.0f;
  for (int i = rows.first; i < rows.last; ++i) {
    for (int j = cols.first; j < cols.last; ++j) {
      const float v =
          loadAsFloat(x, Type,
                      elementIndex<ChannelsLast>(g, plane, g.inputs(),
                                                 w.tap(g, i, j), e.channel));
      if (beats(v, max))
        max = v;
      sum += v;
    }
  }
  const int64_t o =
      elementIndex<ChannelsLast>(g, plane, g.outputs(), e.pixel, e.channel);
  if (g.kind == DTRAIN_RT_POOL_MAX)
    storeFromFloat(y, Type, o, max);
  else if (g.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD)
    storeFromFloat(y, Type, o, sum / float(rows.padded * cols.padded));
  else
    storeFromFloat(y, Type, o, sum / float(rows.inside() * cols.inside()));
}

/// ARGMAX[o] for output element E (window W) in PLANE: the pixel of the
/// window's first maximum in row-major window order (every window has an
/// input element: checked).
template <int32_t Type, bool ChannelsLast>
DTRAIN_RT_HOST_DEVICE void poolArgmaxAt(const PlaneShape &g, const Window &w,
                                        PlaneElement e, int64_t plane,
                                        const void *x, int32_t *argmax) {
  auto load = [&](int tap) {
    return loadAsFloat(
        x, Type,
        elementIndex<ChannelsLast>(g, plane, g.inputs(), tap, e.channel));
  };
  int best = w.tap(g, w.rows.first, w.cols.first);
  float max = load(best);
  for (int i = w.rows.first; i < w.rows.last; ++i)
    for (int j = w.cols.first; j < w.cols.last; ++j) {
      const int tap = w.tap(g, i, j);
      const float v = load(tap);
      if (beats(v, max)) {
        best = tap;
        max = v;
      }
    }
  argmax[elementIndex<ChannelsLast>(g, plane, g.outputs(), e.pixel,
                                    e.channel)] = best;
}

/// The windows along D (of OUTPUTS) that read coordinate P: those from
/// FIRST to LAST - 1 whose tap lands on P, which is every one of them
/// where the dilation is 1. Window O's tap I reads O * STRIDE - PAD + I *
/// DILATION, so the windows ascend as the taps descend.
struct Readers {
  int first, last;
};

DTRAIN_RT_HOST_DEVICE inline Readers readersOf(const PlaneDim &d, int outputs,
                                               int p) {
  const int top = p + d.padBegin; // window O's tap 0 is at TOP - O * STRIDE
  const int low = top - (d.kernel - 1) * d.dilation;
  const int first = low <= 0 ? 0 : (low + d.stride - 1) / d.stride;
  const int last = top / d.stride + 1;
  return {first, last < outputs ? last : outputs};
}

/// Whether window O along D, one of readersOf's, has a tap on P.
DTRAIN_RT_HOST_DEVICE inline bool reads(const PlaneDim &d, int o, int p) {
  return d.dilation == 1 || (p + d.padBegin - o * d.stride) % d.dilation == 0;
}

/// The windows that read input element E: its rows and columns of them.
struct InputReaders {
  Readers rows, cols;
  int iy, ix;
};

DTRAIN_RT_HOST_DEVICE inline InputReaders readersOf(const PlaneShape &g,
                                                    PlaneElement e) {
  const int iy = e.pixel / g.w.in, ix = e.pixel - iy * g.w.in;
  return {readersOf(g.h, g.oh, iy), readersOf(g.w, g.ow, ix), iy, ix};
}

/// DX of input element E (read by the windows R) in PLANE: the sum of what
/// the windows that read it send it, taken in the CPU loop's order
/// (windows in row-major order). ARGMAX is MAX's, else NULL.
template <int32_t Type, bool ChannelsLast>
DTRAIN_RT_HOST_DEVICE void
poolGradientAt(const PlaneShape &g, const InputReaders &r, PlaneElement e,
               int64_t plane, const int32_t *argmax, const void *dy, void *dx) {
  float grad = 0.0f;
  for (int oy = r.rows.first; oy < r.rows.last; ++oy) {
    if (!reads(g.h, oy, r.iy))
      continue;
    for (int ox = r.cols.first; ox < r.cols.last; ++ox) {
      if (!reads(g.w, ox, r.ix))
        continue;
      const int64_t o = elementIndex<ChannelsLast>(g, plane, g.outputs(),
                                                   oy * g.ow + ox, e.channel);
      if (g.kind == DTRAIN_RT_POOL_MAX) {
        if (argmax[o] == e.pixel)
          grad += loadAsFloat(dy, Type, o);
        continue;
      }
      const Taps tapRows = tapsOf(g.h, oy), tapCols = tapsOf(g.w, ox);
      const int divisor = g.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD
                              ? tapRows.padded * tapCols.padded
                              : tapRows.inside() * tapCols.inside();
      grad += loadAsFloat(dy, Type, o) / float(divisor);
    }
  }
  storeFromFloat(
      dx, Type,
      elementIndex<ChannelsLast>(g, plane, g.inputs(), e.pixel, e.channel),
      grad);
}

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_POOLKERNELS_H
