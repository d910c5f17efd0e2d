//===- KernelCases.h - the heavy-op kernels' test geometries -----*- C++
//-*-===//
//
// The geometries and random data that the heavy-op kernels are tested on:
// the CPU kernels against naive references (KernelsTest.cpp) and the CUDA
// kernels against the CPU ones (CudaDnnTest.cpp), so that both cover the
// same cases: transposes, strides, asymmetric padding, dilation, groups and
// depthwise convolution, ceil mode and all-padding windows, batch norm of
// rank 2 and 4.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_KERNELCASES_H
#define DTRAIN_RUNTIME_TEST_KERNELCASES_H

#include "dtrain_rt.h"

#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <vector>

namespace dtrain::rt::test {

inline std::vector<float> randomVector(size_t count, uint32_t seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float &x : v)
    x = dist(rng);
  return v;
}

//===--- Matmul -----------------------------------------------------------===//

struct MatmulCase {
  int64_t m, n, k;
};

inline const MatmulCase matmulCases[] = {
    {1, 1, 1},  {7, 5, 3}, {64, 33, 17}, {128, 96, 200}, {1, 300, 40},
    {50, 1, 9}, {3, 4, 0}, {0, 5, 3},    {5, 0, 3}};

//===--- Convolution ------------------------------------------------------===//

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups;
  bool bias;

  int64_t oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
};

inline std::ostream &operator<<(std::ostream &os, const ConvCase &k) {
  return os << k.n << "x" << k.c << "x" << k.h << "x" << k.w << " -> " << k.oc
            << " kernel " << k.kh << "x" << k.kw << " stride " << k.sh << "x"
            << k.sw << " pads " << k.pt << "," << k.pl << "," << k.pb << ","
            << k.pr << " dilation " << k.dh << "x" << k.dw << " groups "
            << k.groups << (k.bias ? " bias" : "");
}

struct ConvData {
  std::vector<float> x, w, bias;
  ConvData(const ConvCase &k, uint32_t seed)
      : x(randomVector(size_t(k.n * k.c * k.h * k.w), seed)),
        w(randomVector(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw),
                       seed + 1)),
        bias(randomVector(size_t(k.oc), seed + 2)) {}
};

/// T, of dimensions D0 x D1 x D2 x D3 (row-major), with its dimension 1
/// moved last: NCHW to NHWC, OIHW to OHWI (the channels-last kernels'
/// layouts); with FIRST, its dimension 3 moved to 1 (NHWC to NCHW).
template <typename T>
std::vector<T> moveChannels(const std::vector<T> &t, int64_t d0, int64_t d1,
                            int64_t d2, int64_t d3, bool first = false) {
  const int64_t channels = first ? d3 : d1;
  const int64_t spatial = first ? d1 * d2 : d2 * d3;
  std::vector<T> moved(t.size());
  for (int64_t a = 0; a < d0; ++a)
    for (int64_t b = 0; b < channels; ++b)
      for (int64_t i = 0; i < spatial; ++i) {
        size_t nchw = size_t((a * channels + b) * spatial + i);
        size_t nhwc = size_t((a * spatial + i) * channels + b);
        if (first)
          moved[nchw] = t[nhwc];
        else
          moved[nhwc] = t[nchw];
      }
  return moved;
}

inline const ConvCase convCases[] = {
    // n c  h  w oc kh kw sh sw pt pl pb pr dh dw g bias
    {1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
    {2, 4, 9, 7, 6, 3, 3, 2, 2, 0, 1, 2, 1, 1, 1, 1, false},  // asymmetric pads
    {1, 2, 10, 10, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, true}, // dilation
    {2, 4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, false},  // 2 groups
    {1, 8, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, true},   // depthwise
    {2, 4, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, false},  // depthwise x2
    {2, 16, 5, 5, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},  // 1x1
    {1, 3, 11, 11, 5, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 1, true}, // kernel > stride
    {3, 5, 6, 9, 7, 2, 4, 1, 2, 1, 0, 0, 2, 2, 1, 1, false},  // all mixed
    {2, 6, 12, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 2, 3, true},
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, false},    // one element
    {2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true}, // blocked
    {2, 64, 9, 9, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 64, false}, // blocked dw
    {1, 3, 32, 32, 16, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, false}, // stem
};

/// A case's tensors moved channels last (X and DY to NHWC, W to OHWI) and
/// what the CPU's NHWC kernels compute from them: Y, DX, DW and DB, in the
/// same layouts, NaN where a kernel wrote nothing.
struct ChannelsLastConv {
  std::vector<float> x, w, dy;
  std::vector<float> y, dx, dw, db;
};

/// Runs the three _nhwc_f32 kernels on case K's data D and output gradient
/// DY (NCHW, as randomVector makes it).
inline ChannelsLastConv runChannelsLastOnCpu(const ConvCase &k,
                                             const ConvData &d,
                                             const std::vector<float> &dy) {
  const int64_t oh = k.oh(), ow = k.ow();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ChannelsLastConv r{moveChannels(d.x, k.n, k.c, k.h, k.w),
                     moveChannels(d.w, k.oc, k.c / k.groups, k.kh, k.kw),
                     moveChannels(dy, k.n, k.oc, oh, ow),
                     std::vector<float>(dy.size(), nan),
                     std::vector<float>(d.x.size(), nan),
                     std::vector<float>(d.w.size(), nan),
                     std::vector<float>(size_t(k.oc), nan)};
  dtrain_rt_conv2d_nhwc_f32(r.x.data(), r.w.data(),
                            k.bias ? d.bias.data() : nullptr, r.y.data(), k.n,
                            k.c, k.h, k.w, k.oc, k.kh, k.kw, oh, ow, k.sh, k.sw,
                            k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
  dtrain_rt_conv2d_backward_data_nhwc_f32(
      r.dy.data(), r.w.data(), r.dx.data(), k.n, k.c, k.h, k.w, k.oc, k.kh,
      k.kw, oh, ow, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw, k.groups);
  dtrain_rt_conv2d_backward_weights_nhwc_f32(
      r.x.data(), r.dy.data(), r.dw.data(), r.db.data(), k.n, k.c, k.h, k.w,
      k.oc, k.kh, k.kw, oh, ow, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw,
      k.groups);
  return r;
}

//===--- Pooling ----------------------------------------------------------===//

inline constexpr int32_t kMax = DTRAIN_RT_POOL_MAX;
inline constexpr int32_t kInclude = DTRAIN_RT_POOL_AVG_INCLUDE_PAD;
inline constexpr int32_t kExclude = DTRAIN_RT_POOL_AVG_EXCLUDE_PAD;

struct PoolCase {
  int32_t kind;
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool ceil;

  /// PyTorch's output size: floor or ceil of (padded - span) / stride, plus
  /// one; in ceil mode the last window must start inside the input or the
  /// leading padding.
  static int64_t size(int64_t in, int64_t k, int64_t s, int64_t pBegin,
                      int64_t pEnd, int64_t d, bool ceil) {
    int64_t room = in + pBegin + pEnd - d * (k - 1) - 1;
    int64_t out = (ceil ? (room + s - 1) / s : room / s) + 1;
    if (ceil && (out - 1) * s >= in + pBegin)
      --out;
    return out;
  }
  int64_t oh() const { return size(h, kh, sh, pt, pb, dh, ceil); }
  int64_t ow() const { return size(w, kw, sw, pl, pr, dw, ceil); }
};

inline std::ostream &operator<<(std::ostream &os, const PoolCase &k) {
  static const char *kinds[] = {"max", "avg-include-pad", "avg-exclude-pad"};
  return os << kinds[k.kind] << " " << k.n << "x" << k.c << "x" << k.h << "x"
            << k.w << " -> " << k.oh() << "x" << k.ow() << " kernel " << k.kh
            << "x" << k.kw << " stride " << k.sh << "x" << k.sw << " pads "
            << k.pt << "," << k.pl << "," << k.pb << "," << k.pr << " dilation "
            << k.dh << "x" << k.dw << (k.ceil ? " ceil" : "");
}

inline const PoolCase poolCases[] = {
    // kind n c h w kh kw sh sw pt pl pb pr dh dw ceil
    {kMax, 1, 2, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false},
    {kMax, 2, 3, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},   // ResNet stem
    {kMax, 2, 3, 7, 9, 3, 2, 2, 1, 0, 1, 2, 1, 1, 1, false},   // asymmetric
    {kMax, 1, 2, 10, 10, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false}, // dilation
    {kMax, 1, 2, 9, 8, 2, 3, 1, 2, 0, 1, 1, 0, 3, 2, false},   // dilation
    {kMax, 1, 2, 8, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true},    // overhang
    {kMax, 2, 32, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true}, // GoogLeNet
    {kMax, 1, 2, 10, 9, 3, 3, 2, 2, 0, 0, 0, 0, 2, 1, true},   // dil + ceil
    {kMax, 2, 8, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, false},   // global
    {kInclude, 1, 2, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
    {kExclude, 1, 2, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
    {kInclude, 2, 3, 7, 9, 3, 2, 2, 2, 0, 1, 2, 1, 1, 1, false}, // asymmetric
    {kExclude, 2, 3, 7, 9, 3, 2, 2, 2, 0, 1, 2, 1, 1, 1, false},
    {kInclude, 1, 2, 8, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true}, // overhang
    {kExclude, 1, 2, 8, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true},
    {kInclude, 1, 3, 8, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true}, // pad+overhang
    {kExclude, 1, 3, 8, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
    {kInclude, 1, 2, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, true}, // overhang
    {kMax, 2, 3, 5, 7, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, true},     // 2x2, overhang
    {kInclude, 1, 2, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, true}, // PyTorch rule
    {kInclude, 2, 8, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, false},   // global
    {kExclude, 2, 8, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0, 1, 1, false},   // global
    {kInclude, 1, 2, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, false},   // all-pad
    {kExclude, 1, 2, 10, 10, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false}, // dilated
    {kInclude, 1, 2, 10, 10, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false}, // dilated
    {kExclude, 2, 32, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
    // 2^18 elements: the CPU's gradients split the images among threads.
    {kMax, 4, 64, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
    {kExclude, 4, 64, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
};

/// Larger pooling cases, which the GPU kernels spread over several blocks
/// and planes.
inline const PoolCase gpuPoolCases[] = {
    // kind n c h w kh kw sh sw pt pl pb pr dh dw ceil
    {kMax, 8, 64, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false}, // ResNet
    {kExclude, 4, 32, 27, 27, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, true},
    {kInclude, 4, 16, 15, 15, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, true},
    {kMax, 2, 16, 20, 18, 3, 2, 3, 2, 2, 0, 1, 1, 2, 3, true},
};

/// Whether every window of K along one dimension has an input element
/// (else only AVG_INCLUDE_PAD takes the geometry).
inline bool windowsHaveInput(int64_t in, int64_t out, int64_t kernel,
                             int64_t stride, int64_t pad, int64_t dilation) {
  for (int64_t o = 0; o < out; ++o) {
    bool inside = false;
    for (int64_t i = 0; i < kernel; ++i) {
      const int64_t at = o * stride - pad + i * dilation;
      inside |= at >= 0 && at < in;
    }
    if (!inside)
      return false;
  }
  return true;
}

/// poolCases and gpuPoolCases, each with every kind that takes its
/// geometry.
inline std::vector<PoolCase> allPoolCases() {
  std::vector<PoolCase> cases;
  auto add = [&](PoolCase k) {
    for (int32_t kind : {kMax, kInclude, kExclude}) {
      k.kind = kind;
      if (kind == kInclude ||
          (windowsHaveInput(k.h, k.oh(), k.kh, k.sh, k.pt, k.dh) &&
           windowsHaveInput(k.w, k.ow(), k.kw, k.sw, k.pl, k.dw)))
        cases.push_back(k);
    }
  };
  for (const PoolCase &k : poolCases)
    add(k);
  for (const PoolCase &k : gpuPoolCases)
    add(k);
  return cases;
}

/// The sizes of a pooling case's input (and DX) and output (and DY).
inline size_t inputSize(const PoolCase &k) {
  return size_t(k.n * k.c * k.h * k.w);
}
inline size_t outputSize(const PoolCase &k) {
  return size_t(k.n * k.c * k.oh() * k.ow());
}

/// A pooling case's X and DY moved channels last (NHWC), and what the CPU's
/// NHWC kernels compute from them: Y and DX, NHWC, NaN where a kernel wrote
/// nothing.
struct ChannelsLastPool {
  std::vector<float> x, dy;
  std::vector<float> y, dx;
};

/// Runs dtrain_rt_pool2d_nhwc_f32 and its gradient on case K's X and DY
/// (NCHW).
inline ChannelsLastPool runChannelsLastOnCpu(const PoolCase &k,
                                             const std::vector<float> &x,
                                             const std::vector<float> &dy) {
  const int64_t oh = k.oh(), ow = k.ow();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ChannelsLastPool r{
      moveChannels(x, k.n, k.c, k.h, k.w), moveChannels(dy, k.n, k.c, oh, ow),
      std::vector<float>(dy.size(), nan), std::vector<float>(x.size(), nan)};
  dtrain_rt_pool2d_nhwc_f32(r.x.data(), r.y.data(), k.kind, k.n, k.c, k.h, k.w,
                            oh, ow, k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb,
                            k.pr, k.dh, k.dw);
  dtrain_rt_pool2d_backward_nhwc_f32(
      r.x.data(), r.dy.data(), r.dx.data(), k.kind, k.n, k.c, k.h, k.w, oh, ow,
      k.kh, k.kw, k.sh, k.sw, k.pt, k.pl, k.pb, k.pr, k.dh, k.dw);
  return r;
}

//===--- Batch normalization ----------------------------------------------===//

struct BatchNormCase {
  int64_t n, c, spatial;
  float epsilon;
};

inline const BatchNormCase batchNormCases[] = {
    {4, 3, 1, 1e-5f},  // rank 2
    {8, 32, 1, 1e-3f}, // rank 2, blocked channels
    {2, 5, 49, 1e-5f}, // rank 4, 7x7
    {1, 16, 9, 1e-5f},  {3, 20, 30, 0.1f},
    {4, 64, 49, 1e-5f}, // blocked channels, 7x7
};

/// Shapes whose channels the GPU's split batch norm (BatchNormSplits.h)
/// takes in several blocks, with ranges that start within a row, in units
/// of 8, 4 and 1 elements.
inline const BatchNormCase splitBatchNormCases[] = {
    {8, 4, 12544, 1e-5f}, // 112x112
    {16, 3, 1000, 1e-5f}, // rows of 1000: units of 8 (16-bit), 4 (f32)
    {64, 2, 777, 1e-3f},  // odd rows: units of 1
};

struct BatchNormData {
  std::vector<float> x, scale, bias, mean, var;
  BatchNormData(const BatchNormCase &k, uint32_t seed)
      // An offset mean, so that a one-pass variance would lose precision.
      : x(randomVector(size_t(k.n * k.c * k.spatial), seed, -1.0f, 3.0f)),
        scale(randomVector(size_t(k.c), seed + 1, 0.5f, 1.5f)),
        bias(randomVector(size_t(k.c), seed + 2)),
        mean(randomVector(size_t(k.c), seed + 3)),
        var(randomVector(size_t(k.c), seed + 4, 0.1f, 2.0f)) {}
};

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_KERNELCASES_H
