//===- DnnlKernels.cpp - The heavy-op kernels on oneDNN -------------------===//
//
// dtrain_rt_matmul_f32, dtrain_rt_conv2d_f32, dtrain_rt_pool2d_f32, the
// two batch norms and the backward kernels of convolution, pooling and
// training batch norm on oneDNN's CPU engine. Creating a primitive costs
// 0.3-1 ms, so each kernel keeps a cache keyed by every geometry scalar:
// the first call with a geometry validates it and creates the primitive
// (with its reorders and intermediate buffers), later calls only execute. A
// cache entry serves one call at a time (its mutex guards the primitive and its
// buffers), and every thread has its own stream on the one engine. Cached
// objects live as long as the process: they are deliberately never destroyed,
// so that no static destructor runs after oneDNN's OpenMP runtime has gone.
//
// The matrix product is oneDNN's matmul rather than a BLAS sgemm: its JIT
// kernels use the widest vectors of the host, where Debian 12's OpenBLAS
// (0.3.21) predates AMD's AVX-512 cores and, there, runs AVX2 kernels at
// half the speed (64x512x784 on Zen 5, 2 threads: 159 us vs 339 us).
//
// Convolution (forward and backward) lets oneDNN choose its blocked layouts
// (format_tag::any) and reorders from and to NCHW (NHWC for the _nhwc
// kernels) around it, which beats forcing NCHW. Pooling and batch norm are
// memory-bound and run on NCHW directly. The few pooling geometries oneDNN
// cannot express exactly run on the plain loop of ReferenceKernels.cpp instead,
// and so does the pooling gradient (oneDNN's needs the workspace of a training
// forward, which inference pooling does not keep). The embedding gradient has
// no oneDNN primitive: it runs on the loop of ReferenceKernels.cpp too, its
// columns split among threads, each of which adds its columns of every row
// in index order (deterministic sums). The argument checks are Kernels.cpp's,
// shared with the f64 kernels.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Kernels.h"
#include "Parallel.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

using namespace dtrain::rt;

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type f32 = memory::data_type::f32;

std::atomic<int64_t> geometriesCreated{0};

dnnl::engine &cpuEngine() {
  static dnnl::engine *engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

/// Streams are not meant to be shared between threads: one per thread.
dnnl::stream &threadStream() {
  thread_local dnnl::stream stream(cpuEngine());
  return stream;
}

/// Geometry key -> entry, created on first use. Entries never move or die.
template <typename Entry, size_t N> class GeometryCache {
public:
  using Key = std::array<int64_t, N>;

  template <typename Create> Entry &get(const Key &key, Create create) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = entries.find(key);
    if (it == entries.end()) {
      it = entries.emplace(key, create()).first;
      geometriesCreated.fetch_add(1, std::memory_order_relaxed);
    }
    return *it->second;
  }

private:
  std::mutex mutex;
  std::map<Key, std::unique_ptr<Entry>> entries;
};

/// Runs BODY, turning exceptions (oneDNN's, allocation failures) into the
/// runtime's fatal error: nothing may unwind through the C ABI.
template <typename Body> void guarded(const char *kernel, Body body) {
  try {
    body();
  } catch (const dnnl::error &e) {
    fatal(nullptr, "%s: oneDNN failed: %s (status %d)", kernel, e.what(),
          int(e.status));
  } catch (const std::bad_alloc &) {
    fatal(nullptr, "%s: out of memory", kernel);
  } catch (const std::exception &e) {
    fatal(nullptr, "%s: %s", kernel, e.what());
  }
}

memory userMemory(const memory::desc &desc, const void *data) {
  return memory(desc, cpuEngine(), const_cast<void *>(data));
}

//===--- Matrix product ---------------------------------------------------===//

/// (batch, m, n, k, transpose_a, transpose_b, beta's bits).
using MatmulKey = std::array<int64_t, 7>;

struct MatmulEntry {
  std::mutex mutex;
  dnnl::matmul matmul;
  memory::desc a, b, c;
};

std::unique_ptr<MatmulEntry> createMatmul(const MatmulKey &key, float beta) {
  auto [batch, m, n, k, transposeA, transposeB, betaBits] = key;
  auto entry = std::make_unique<MatmulEntry>();
  // Row-major operands: a transposed one is the column-major layout. A
  // batch of them is the outermost dimension.
  if (batch == 1) {
    entry->a = memory::desc({m, k}, f32, transposeA ? Tag::ba : Tag::ab);
    entry->b = memory::desc({k, n}, f32, transposeB ? Tag::ba : Tag::ab);
    entry->c = memory::desc({m, n}, f32, Tag::ab);
  } else {
    entry->a =
        memory::desc({batch, m, k}, f32, transposeA ? Tag::acb : Tag::abc);
    entry->b =
        memory::desc({batch, k, n}, f32, transposeB ? Tag::acb : Tag::abc);
    entry->c = memory::desc({batch, m, n}, f32, Tag::abc);
  }
  // C = A B + BETA C; without the sum C is only written (NaN ignored).
  dnnl::primitive_attr attr;
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  entry->matmul = dnnl::matmul(dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(entry->a, entry->b, entry->c), attr, cpuEngine()));
  return entry;
}

/// dtrain_rt_batch_matmul_f32 (dtrain_rt_matmul_f32 with BATCH 1), named
/// KERNEL in messages.
void batchMatmul(const char *kernel, const float *a, const float *b, float *c,
                 int64_t batch, int64_t m, int64_t n, int64_t k,
                 int32_t transposeA, int32_t transposeB, float beta) {
  static auto *cache = new GeometryCache<MatmulEntry, 7>();
  if (!prepareMatmul(kernel, a, b, c, batch, m, n, k, beta))
    return;
  int32_t betaBits;
  std::memcpy(&betaBits, &beta, sizeof betaBits);
  MatmulKey key{batch, m, n, k, transposeA != 0, transposeB != 0, betaBits};
  guarded(kernel, [&] {
    MatmulEntry &e = cache->get(key, [&] { return createMatmul(key, beta); });
    std::lock_guard<std::mutex> lock(e.mutex);
    dnnl::stream &stream = threadStream();
    e.matmul.execute(stream, {{DNNL_ARG_SRC, userMemory(e.a, a)},
                              {DNNL_ARG_WEIGHTS, userMemory(e.b, b)},
                              {DNNL_ARG_DST, userMemory(e.c, c)}});
    stream.wait();
  });
}

//===--- Convolution ------------------------------------------------------===//

/// The memory descriptors and window of a convolution geometry: the user's
/// layouts (NCHW images and ONNX's OIHW weights, or with CHANNELS_LAST NHWC
/// and OHWI) and the same shapes in the layouts the primitive chooses
/// (format_tag::any).
struct ConvShapes {
  memory::desc srcUser, weightsUser, dstUser, srcAny, weightsAny, dstAny;
  memory::desc bias; // empty without bias
  memory::dims strides, dilates, padBegin, padEnd;
};

ConvShapes convShapes(const ConvKey &key, bool channelsLast) {
  auto [n, c, h, w, oc, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr, dh, dw, groups,
        hasBias] = key;
  ConvShapes s;
  Tag image = channelsLast ? Tag::nhwc : Tag::nchw;
  s.srcUser = memory::desc({n, c, h, w}, f32, image);
  s.srcAny = memory::desc({n, c, h, w}, f32, Tag::any);
  s.dstUser = memory::desc({n, oc, oh, ow}, f32, image);
  s.dstAny = memory::desc({n, oc, oh, ow}, f32, Tag::any);
  // Grouped weights (G, OC/G, C/G, KH, KW) are ONNX's (OC, C/G, KH, KW).
  memory::dims weights =
      groups == 1 ? memory::dims{oc, c, kh, kw}
                  : memory::dims{groups, oc / groups, c / groups, kh, kw};
  Tag weightsTag = groups == 1 ? (channelsLast ? Tag::ohwi : Tag::oihw)
                               : (channelsLast ? Tag::gohwi : Tag::goihw);
  s.weightsUser = memory::desc(weights, f32, weightsTag);
  s.weightsAny = memory::desc(weights, f32, Tag::any);
  if (hasBias)
    s.bias = memory::desc({oc}, f32, Tag::x);
  s.strides = {sh, sw};
  // oneDNN counts dilation from 0 (no gap between taps).
  s.dilates = {dh - 1, dw - 1};
  s.padBegin = {pt, pl};
  s.padEnd = {pb, pr};
  return s;
}

dnnl::convolution_forward::primitive_desc
convForward(const ConvShapes &s, dnnl::prop_kind propKind) {
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(
          propKind, dnnl::algorithm::convolution_direct, s.srcAny, s.weightsAny,
          s.bias, s.dstAny, s.strides, s.dilates, s.padBegin, s.padEnd),
      cpuEngine());
}

/// The operands of one primitive call, each with its own scratch slot.
enum class ScratchSlot { Src, Weights, Dst, Bias, Count };

/// Memory for operands in a primitive's own layout: per thread, one
/// growable buffer per slot, shared by every cached primitive (a thread
/// runs one kernel call at a time). The reordered copies then cost the
/// largest operand of each slot, not one buffer per geometry, which for a
/// network's many convolutions and their gradients was several times the
/// activations.
class ScratchBuffers {
public:
  void *get(ScratchSlot slot, size_t bytes) {
    Buffer &b = buffers[size_t(slot)];
    if (b.bytes < bytes) {
      void *p = nullptr;
      if (::posix_memalign(&p, 64, bytes) != 0)
        throw std::bad_alloc();
      b.data.reset(p);
      b.bytes = bytes;
    }
    return b.data.get();
  }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<void, Free> data;
    size_t bytes = 0;
  };
  std::array<Buffer, size_t(ScratchSlot::Count)> buffers;
};

ScratchBuffers &threadScratch() {
  thread_local ScratchBuffers scratch;
  return scratch;
}

/// An operand given in the user's layout to a primitive that may have
/// chosen another: then a scratch buffer (SLOT) in the chosen layout and
/// the reorder between the two (user to buffer for an input, buffer to user
/// for an output); otherwise the user's memory goes to the primitive
/// directly.
struct Operand {
  memory::desc user;
  memory buffer; // over the slot's scratch memory, set at each call
  dnnl::reorder reorder; // empty when the layouts agree
  ScratchSlot slot = ScratchSlot::Src;

  Operand() = default;
  Operand(const memory::desc &user, const memory::desc &chosen, bool output,
          ScratchSlot slot)
      : user(user), slot(slot) {
    if (chosen == user)
      return;
    buffer = memory(chosen, cpuEngine(), DNNL_MEMORY_NONE);
    reorder =
        dnnl::reorder(output ? dnnl::reorder::primitive_desc(
                                   cpuEngine(), chosen, cpuEngine(), user)
                             : dnnl::reorder::primitive_desc(
                                   cpuEngine(), user, cpuEngine(), chosen));
  }

  /// An input for the primitive: DATA, reordered into the buffer if needed.
  memory input(dnnl::stream &stream, const float *data) {
    memory userData = userMemory(user, data);
    if (!reorder)
      return userData;
    reorder.execute(stream, userData, scratchBuffer());
    return buffer;
  }
  /// Where the primitive writes an output bound for DATA.
  memory output(float *data) {
    return reorder ? scratchBuffer() : userMemory(user, data);
  }
  /// After the primitive: the output into DATA, if it went to the buffer.
  void finishOutput(dnnl::stream &stream, float *data) {
    if (!reorder)
      return;
    memory userData = userMemory(user, data);
    reorder.execute(stream, buffer, userData);
  }

private:
  memory &scratchBuffer() {
    buffer.set_data_handle(
        threadScratch().get(slot, buffer.get_desc().get_size()));
    return buffer;
  }
};

struct ConvEntry {
  std::mutex mutex;
  dnnl::convolution_forward conv;
  Operand src, weights, dst;
  memory::desc bias;
};

std::unique_ptr<ConvEntry> createConv(const ConvKey &key, bool channelsLast) {
  auto entry = std::make_unique<ConvEntry>();
  ConvShapes s = convShapes(key, channelsLast);
  auto pd = convForward(s, dnnl::prop_kind::forward_inference);
  entry->conv = dnnl::convolution_forward(pd);
  entry->src = Operand(s.srcUser, pd.src_desc(), false, ScratchSlot::Src);
  entry->weights =
      Operand(s.weightsUser, pd.weights_desc(), false, ScratchSlot::Weights);
  entry->dst = Operand(s.dstUser, pd.dst_desc(), true, ScratchSlot::Dst);
  entry->bias = s.bias;
  return entry;
}

void runConv(ConvEntry &e, const float *x, const float *w, const float *bias,
             float *y) {
  std::lock_guard<std::mutex> lock(e.mutex);
  dnnl::stream &stream = threadStream();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, e.src.input(stream, x)},
      {DNNL_ARG_WEIGHTS, e.weights.input(stream, w)},
      {DNNL_ARG_DST, e.dst.output(y)}};
  if (bias)
    args.emplace(DNNL_ARG_BIAS, userMemory(e.bias, bias));
  e.conv.execute(stream, args);
  e.dst.finishOutput(stream, y);
  stream.wait();
}

/// The gradient with respect to the input: a transposed convolution of DY.
struct ConvBackwardDataEntry {
  std::mutex mutex;
  dnnl::convolution_backward_data conv;
  Operand diffDst, weights, diffSrc;
};

std::unique_ptr<ConvBackwardDataEntry>
createConvBackwardData(const ConvKey &key, bool channelsLast) {
  auto entry = std::make_unique<ConvBackwardDataEntry>();
  ConvShapes s = convShapes(key, channelsLast);
  // oneDNN picks the backward implementation that matches a forward one.
  auto hint = convForward(s, dnnl::prop_kind::forward_training);
  dnnl::convolution_backward_data::primitive_desc pd(
      dnnl::convolution_backward_data::desc(
          dnnl::algorithm::convolution_direct, s.srcAny, s.weightsAny, s.dstAny,
          s.strides, s.dilates, s.padBegin, s.padEnd),
      cpuEngine(), hint);
  entry->conv = dnnl::convolution_backward_data(pd);
  entry->diffDst =
      Operand(s.dstUser, pd.diff_dst_desc(), false, ScratchSlot::Dst);
  entry->weights =
      Operand(s.weightsUser, pd.weights_desc(), false, ScratchSlot::Weights);
  entry->diffSrc =
      Operand(s.srcUser, pd.diff_src_desc(), true, ScratchSlot::Src);
  return entry;
}

void runConvBackwardData(ConvBackwardDataEntry &e, const float *dy,
                         const float *w, float *dx) {
  std::lock_guard<std::mutex> lock(e.mutex);
  dnnl::stream &stream = threadStream();
  e.conv.execute(stream, {{DNNL_ARG_DIFF_DST, e.diffDst.input(stream, dy)},
                          {DNNL_ARG_WEIGHTS, e.weights.input(stream, w)},
                          {DNNL_ARG_DIFF_SRC, e.diffSrc.output(dx)}});
  e.diffSrc.finishOutput(stream, dx);
  stream.wait();
}

/// The gradients with respect to the weights and (with bias) the bias.
struct ConvBackwardWeightsEntry {
  std::mutex mutex;
  dnnl::convolution_backward_weights conv;
  Operand src, diffDst, diffWeights, diffBias;
};

std::unique_ptr<ConvBackwardWeightsEntry>
createConvBackwardWeights(const ConvKey &key, bool channelsLast) {
  auto entry = std::make_unique<ConvBackwardWeightsEntry>();
  ConvShapes s = convShapes(key, channelsLast);
  auto hint = convForward(s, dnnl::prop_kind::forward_training);
  // An empty bias descriptor: no bias gradient.
  dnnl::convolution_backward_weights::primitive_desc pd(
      dnnl::convolution_backward_weights::desc(
          dnnl::algorithm::convolution_direct, s.srcAny, s.weightsAny, s.bias,
          s.dstAny, s.strides, s.dilates, s.padBegin, s.padEnd),
      cpuEngine(), hint);
  entry->conv = dnnl::convolution_backward_weights(pd);
  entry->src = Operand(s.srcUser, pd.src_desc(), false, ScratchSlot::Src);
  entry->diffDst =
      Operand(s.dstUser, pd.diff_dst_desc(), false, ScratchSlot::Dst);
  entry->diffWeights = Operand(s.weightsUser, pd.diff_weights_desc(), true,
                                ScratchSlot::Weights);
  if (key.back()) // has bias
    entry->diffBias =
        Operand(s.bias, pd.diff_bias_desc(), true, ScratchSlot::Bias);
  return entry;
}

void runConvBackwardWeights(ConvBackwardWeightsEntry &e, const float *x,
                            const float *dy, float *dw, float *db) {
  std::lock_guard<std::mutex> lock(e.mutex);
  dnnl::stream &stream = threadStream();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, e.src.input(stream, x)},
      {DNNL_ARG_DIFF_DST, e.diffDst.input(stream, dy)},
      {DNNL_ARG_DIFF_WEIGHTS, e.diffWeights.output(dw)}};
  if (db)
    args.emplace(DNNL_ARG_DIFF_BIAS, e.diffBias.output(db));
  e.conv.execute(stream, args);
  e.diffWeights.finishOutput(stream, dw);
  if (db)
    e.diffBias.finishOutput(stream, db);
  stream.wait();
}

//===--- Pooling ----------------------------------------------------------===//

struct PoolEntry {
  std::mutex mutex;
  PoolGeometry geometry;
  bool channelsLast;
  /// Empty when oneDNN cannot compute this geometry exactly: poolLoop (or
  /// poolLoopChannelsLast) does.
  dnnl::pooling_v2_forward pool;
  memory::desc src, dst;
};

/// The pooling of KEY on NCHW tensors or, CHANNELS_LAST, NHWC ones.
std::unique_ptr<PoolEntry> createPool(const char *kernel, const PoolKey &key,
                                      bool channelsLast) {
  auto entry = std::make_unique<PoolEntry>();
  PoolGeometry &g = entry->geometry;
  g = poolGeometry(key);
  entry->channelsLast = channelsLast;
  checkPoolWindows(kernel, g);

  // oneDNN divides AVG_INCLUDE_PAD by the whole window: wrong for a window
  // clipped by ceil mode's overhang.
  int64_t overhangH = g.h.overhang(g.oh), overhangW = g.w.overhang(g.ow);
  if (g.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD && (overhangH || overhangW))
    return entry;
  dnnl::algorithm algorithm =
      g.kind == DTRAIN_RT_POOL_MAX ? dnnl::algorithm::pooling_max
      : g.kind == DTRAIN_RT_POOL_AVG_INCLUDE_PAD
          ? dnnl::algorithm::pooling_avg_include_padding
          : dnnl::algorithm::pooling_avg_exclude_padding;
  Tag image = channelsLast ? Tag::nhwc : Tag::nchw;
  entry->src = memory::desc({g.n, g.c, g.h.in, g.w.in}, f32, image);
  entry->dst = memory::desc({g.n, g.c, g.oh, g.ow}, f32, image);
  try {
    // Ceil mode's overhang becomes end padding (never counted: max ignores
    // padding, and only AVG_EXCLUDE_PAD gets here with an overhang).
    dnnl::pooling_v2_forward::desc desc(
        dnnl::prop_kind::forward_inference, algorithm, entry->src, entry->dst,
        {g.h.stride, g.w.stride}, {g.h.kernel, g.w.kernel},
        {g.h.dilation - 1, g.w.dilation - 1}, {g.h.padBegin, g.w.padBegin},
        {g.h.padEnd + overhangH, g.w.padEnd + overhangW});
    entry->pool = dnnl::pooling_v2_forward(
        dnnl::pooling_v2_forward::primitive_desc(desc, cpuEngine()));
  } catch (const dnnl::error &) {
    // E.g. padding as large as the window, which oneDNN rejects.
  }
  return entry;
}

void runPool(PoolEntry &e, const float *x, float *y) {
  if (!e.pool) {
    if (e.channelsLast)
      poolLoopChannelsLast(e.geometry, x, y);
    else
      poolLoop(e.geometry, x, y);
    return;
  }
  std::lock_guard<std::mutex> lock(e.mutex);
  dnnl::stream &stream = threadStream();
  e.pool.execute(stream, {{DNNL_ARG_SRC, userMemory(e.src, x)},
                          {DNNL_ARG_DST, userMemory(e.dst, y)}});
  stream.wait();
}

/// The gradient of pooling on the loops, the images split among the pass's
/// threads (each image's gradient is its own).
void runPoolBackward(const PoolGeometry &g, bool channelsLast, const float *x,
                     const float *dy, float *dx) {
  const int64_t inputs = g.c * g.h.in * g.w.in, outputs = g.c * g.oh * g.ow;
  const int chunks = int(std::min<int64_t>(g.n, passThreads(g.n * inputs)));
  forEachChunk(g.n, chunks, [&](int, int64_t begin, int64_t end) {
    PoolGeometry images = g;
    images.n = end - begin;
    const float *imagesX = x ? x + begin * inputs : nullptr;
    if (channelsLast)
      poolBackwardLoopChannelsLast(images, imagesX, dy + begin * outputs,
                                   dx + begin * inputs);
    else
      poolBackwardLoop(images, imagesX, dy + begin * outputs,
                       dx + begin * inputs);
  });
}

//===--- Batch normalization ----------------------------------------------===//

// Rows of channels (SPATIAL 1: a channels-last tensor as nn.batch_norm's
// channels_last lowers it, or a rank-2 one) run on the loops below rather
// than oneDNN's, whose kernels there add a channel's N values one after
// another in f32: over resnet18's 2048 to 8192 rows, 4x the rounding error
// of the NCHW kernels in the scale and bias gradients. These sum each
// channel in double (as PyTorch's CPU batch norm does), a row at a time,
// which keeps the reads in order.

/// The statistics of N rows of C channels (two passes, as
/// batchNormTrainLoop), then the normalization.
void batchNormRowsTrain(const float *x, const float *scale, const float *bias,
                        float *y, float *batchMean, float *batchVar, int64_t n,
                        int64_t c, float epsilon) {
  std::vector<double> sum(size_t(c), 0.0), squares(size_t(c), 0.0);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t ch = 0; ch < c; ++ch)
      sum[ch] += x[row * c + ch];
  for (int64_t ch = 0; ch < c; ++ch)
    sum[ch] /= double(n);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t ch = 0; ch < c; ++ch) {
      double centered = x[row * c + ch] - sum[ch];
      squares[ch] += centered * centered;
    }
  std::vector<float> invStd(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    batchMean[ch] = float(sum[ch]);
    batchVar[ch] = float(squares[ch] / double(n));
    invStd[ch] = 1.0f / std::sqrt(batchVar[ch] + epsilon);
  }
  for (int64_t row = 0; row < n; ++row)
    for (int64_t ch = 0; ch < c; ++ch)
      y[row * c + ch] =
          (x[row * c + ch] - batchMean[ch]) * invStd[ch] * scale[ch] + bias[ch];
}

/// The gradient of batchNormRowsTrain (batchNormBackwardLoop's formulas).
void batchNormRowsBackward(const float *x, const float *dy, const float *scale,
                           const float *batchMean, const float *batchVar,
                           float *dx, float *dscale, float *dbias, int64_t n,
                           int64_t c, float epsilon) {
  std::vector<double> sumDy(size_t(c), 0.0), sumDyXhat(size_t(c), 0.0);
  std::vector<float> invStd(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch)
    invStd[ch] = 1.0f / std::sqrt(batchVar[ch] + epsilon);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t i = row * c + ch;
      sumDy[ch] += dy[i];
      sumDyXhat[ch] += double(dy[i]) * ((x[i] - batchMean[ch]) * invStd[ch]);
    }
  std::vector<float> meanDy(static_cast<size_t>(c)),
      meanDyXhat(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    dbias[ch] = float(sumDy[ch]);
    dscale[ch] = float(sumDyXhat[ch]);
    meanDy[ch] = float(sumDy[ch] / double(n));
    meanDyXhat[ch] = float(sumDyXhat[ch] / double(n));
  }
  for (int64_t row = 0; row < n; ++row)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t i = row * c + ch;
      float xhat = (x[i] - batchMean[ch]) * invStd[ch];
      dx[i] =
          scale[ch] * invStd[ch] * (dy[i] - meanDy[ch] - xhat * meanDyXhat[ch]);
    }
}

/// (training, n, c, spatial, epsilon's bits).
using BatchNormKey = std::array<int64_t, 5>;

struct BatchNormEntry {
  std::mutex mutex;
  dnnl::batch_normalization_forward norm;
  memory::desc data, channel;
};

/// N x C x SPATIAL as NCHW with W = 1.
memory::desc batchNormData(int64_t n, int64_t c, int64_t spatial) {
  return memory::desc({n, c, spatial, 1}, f32, Tag::nchw);
}

dnnl::normalization_flags batchNormFlags(bool training) {
  dnnl::normalization_flags flags = dnnl::normalization_flags::use_scale |
                                    dnnl::normalization_flags::use_shift;
  if (!training)
    flags |= dnnl::normalization_flags::use_global_stats;
  return flags;
}

dnnl::batch_normalization_forward::primitive_desc
batchNormForward(const memory::desc &data, float epsilon, bool training) {
  return dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(
          training ? dnnl::prop_kind::forward_training
                   : dnnl::prop_kind::forward_inference,
          data, epsilon, batchNormFlags(training)),
      cpuEngine());
}

std::unique_ptr<BatchNormEntry> createBatchNorm(const BatchNormKey &key,
                                                float epsilon) {
  auto [training, n, c, spatial, epsilonBits] = key;
  auto entry = std::make_unique<BatchNormEntry>();
  entry->data = batchNormData(n, c, spatial);
  entry->channel = memory::desc({c}, f32, Tag::x);
  entry->norm = dnnl::batch_normalization_forward(
      batchNormForward(entry->data, epsilon, training));
  return entry;
}

/// Both batch norms: MEAN and VAR are read (inference) or written
/// (training).
void runBatchNorm(const char *kernel, bool training, const float *x,
                  const float *scale, const float *bias, const float *mean,
                  const float *var, float *y, int64_t n, int64_t c,
                  int64_t spatial, float epsilon) {
  static auto *cache = new GeometryCache<BatchNormEntry, 5>();
  int32_t bits;
  std::memcpy(&bits, &epsilon, sizeof bits);
  guarded(kernel, [&] {
    BatchNormKey key{training, n, c, spatial, bits};
    BatchNormEntry &e =
        cache->get(key, [&] { return createBatchNorm(key, epsilon); });
    std::lock_guard<std::mutex> lock(e.mutex);
    dnnl::stream &stream = threadStream();
    e.norm.execute(stream, {{DNNL_ARG_SRC, userMemory(e.data, x)},
                            {DNNL_ARG_DST, userMemory(e.data, y)},
                            {DNNL_ARG_SCALE, userMemory(e.channel, scale)},
                            {DNNL_ARG_SHIFT, userMemory(e.channel, bias)},
                            {DNNL_ARG_MEAN, userMemory(e.channel, mean)},
                            {DNNL_ARG_VARIANCE, userMemory(e.channel, var)}});
    stream.wait();
  });
}

/// The gradient of training batch norm, from the batch statistics that its
/// forward computed.
struct BatchNormBackwardEntry {
  std::mutex mutex;
  dnnl::batch_normalization_backward norm;
  memory::desc data, channel;
  /// oneDNN 2.6 requires a shift with use_shift, though no gradient
  /// depends on it: zeros.
  memory shift;
};

/// (n, c, spatial, epsilon's bits).
using BatchNormBackwardKey = std::array<int64_t, 4>;

std::unique_ptr<BatchNormBackwardEntry>
createBatchNormBackward(const BatchNormBackwardKey &key, float epsilon) {
  auto [n, c, spatial, epsilonBits] = key;
  auto entry = std::make_unique<BatchNormBackwardEntry>();
  entry->data = batchNormData(n, c, spatial);
  entry->channel = memory::desc({c}, f32, Tag::x);
  // prop_kind::backward: the scale and shift gradients too (backward_data
  // computes DX only).
  dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward,
                                                entry->data, entry->data,
                                                epsilon, batchNormFlags(true));
  entry->norm = dnnl::batch_normalization_backward(
      dnnl::batch_normalization_backward::primitive_desc(
          desc, cpuEngine(), batchNormForward(entry->data, epsilon, true)));
  entry->shift = memory(entry->channel, cpuEngine());
  std::memset(entry->shift.get_data_handle(), 0, size_t(c) * sizeof(float));
  return entry;
}

} // namespace

int64_t dtrain::rt::kernelGeometriesCreatedForTesting() {
  return geometriesCreated.load(std::memory_order_relaxed);
}

//===--- C ABI ------------------------------------------------------------===//

void dtrain_rt_matmul_f32(const float *a, const float *b, float *c, int64_t m,
                          int64_t n, int64_t k, int32_t transpose_a,
                          int32_t transpose_b, float beta) {
  batchMatmul("dtrain_rt_matmul_f32", a, b, c, 1, m, n, k, transpose_a,
              transpose_b, beta);
}

void dtrain_rt_batch_matmul_f32(const float *a, const float *b, float *c,
                                int64_t batch, int64_t m, int64_t n, int64_t k,
                                int32_t transpose_a, int32_t transpose_b,
                                float beta) {
  batchMatmul("dtrain_rt_batch_matmul_f32", a, b, c, batch, m, n, k,
              transpose_a, transpose_b, beta);
}

void dtrain_rt_embedding_grad_f32(const float *grad, const int64_t *indices,
                                  float *out, int64_t count, int64_t rows,
                                  int64_t width) {
  checkEmbeddingGrad("dtrain_rt_embedding_grad_f32", grad, indices, out, count,
                     rows, width);
  if (width == 0)
    return;
  // Threads take blocks of 16 columns (a cache line of each row), so that
  // no two write the same line.
  constexpr int64_t kColumns = 16;
  const int64_t blocks = (width + kColumns - 1) / kColumns;
  const int chunks =
      int(std::min<int64_t>(blocks, passThreads((count + rows) * width)));
  forEachChunk(blocks, chunks, [&](int, int64_t begin, int64_t end) {
    embeddingGradLoop(grad, indices, out, count, rows, width, begin * kColumns,
                      std::min(end * kColumns, width));
  });
}

// Each layout has its own kernels (dtrain_rt_conv2d_f32 and
// dtrain_rt_conv2d_nhwc_f32, ...), each with its cache.
#define DTRAIN_CONV2D_KERNELS(NAME, CHANNELS_LAST)                             \
  void dtrain_rt_conv2d##NAME##_f32(                                           \
      const float *x, const float *w, const float *bias, float *y, int64_t n,  \
      int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,    \
      int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,              \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    static auto *cache = new GeometryCache<ConvEntry, 19>();                   \
    const char *kernel = "dtrain_rt_conv2d" #NAME "_f32";                      \
    ConvKey key =                                                              \
        checkConv2d(kernel, x, w, bias, y, n, c, h, w_, oc, kh, kw, oh, ow,    \
                    stride_h, stride_w, pad_top, pad_left, pad_bottom,         \
                    pad_right, dilation_h, dilation_w, groups);                \
    guarded(kernel, [&] {                                                      \
      runConv(cache->get(key, [&] { return createConv(key, CHANNELS_LAST); }), \
              x, w, bias, y);                                                  \
    });                                                                        \
  }                                                                            \
                                                                               \
  void dtrain_rt_conv2d_backward_data##NAME##_f32(                             \
      const float *dy, const float *w, float *dx, int64_t n, int64_t c,        \
      int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,   \
      int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,         \
      int64_t pad_left, int64_t pad_bottom, int64_t pad_right,                 \
      int64_t dilation_h, int64_t dilation_w, int64_t groups) {                \
    static auto *cache = new GeometryCache<ConvBackwardDataEntry, 19>();       \
    const char *kernel = "dtrain_rt_conv2d_backward_data" #NAME "_f32";        \
    ConvKey key = checkConv2dBackwardData(                                     \
        kernel, dy, w, dx, n, c, h, w_, oc, kh, kw, oh, ow, stride_h,          \
        stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h,        \
        dilation_w, groups);                                                   \
    guarded(kernel, [&] {                                                      \
      runConvBackwardData(                                                     \
          cache->get(                                                          \
              key,                                                             \
              [&] { return createConvBackwardData(key, CHANNELS_LAST); }),     \
          dy, w, dx);                                                          \
    });                                                                        \
  }                                                                            \
                                                                               \
  void dtrain_rt_conv2d_backward_weights##NAME##_f32(                          \
      const float *x, const float *dy, float *dw, float *db, int64_t n,        \
      int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,    \
      int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,              \
      int64_t pad_top, int64_t pad_left, int64_t pad_bottom,                   \
      int64_t pad_right, int64_t dilation_h, int64_t dilation_w,               \
      int64_t groups) {                                                        \
    static auto *cache = new GeometryCache<ConvBackwardWeightsEntry, 19>();    \
    const char *kernel = "dtrain_rt_conv2d_backward_weights" #NAME "_f32";     \
    ConvKey key = checkConv2dBackwardWeights(                                  \
        kernel, x, dy, dw, db, n, c, h, w_, oc, kh, kw, oh, ow, stride_h,      \
        stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h,        \
        dilation_w, groups);                                                   \
    guarded(kernel, [&] {                                                      \
      runConvBackwardWeights(                                                  \
          cache->get(                                                          \
              key,                                                             \
              [&] { return createConvBackwardWeights(key, CHANNELS_LAST); }),  \
          x, dy, dw, db);                                                      \
    });                                                                        \
  }

DTRAIN_CONV2D_KERNELS(, false)
DTRAIN_CONV2D_KERNELS(_nhwc, true)
#undef DTRAIN_CONV2D_KERNELS

// The pooling kernels of each layout (NAME: _nhwc or nothing).
#define DTRAIN_POOL2D_KERNELS(NAME, CHANNELS_LAST)                             \
  void dtrain_rt_pool2d##NAME##_f32(                                           \
      const float *x, float *y, int32_t kind, int64_t n, int64_t c, int64_t h, \
      int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,               \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w) {                                                    \
    static auto *cache = new GeometryCache<PoolEntry, 17>();                   \
    const char *kernel = "dtrain_rt_pool2d" #NAME "_f32";                      \
    PoolKey key = checkPool2d(kernel, x, y, kind, n, c, h, w, oh, ow, kh, kw,  \
                              stride_h, stride_w, pad_top, pad_left,           \
                              pad_bottom, pad_right, dilation_h, dilation_w);  \
    guarded(kernel, [&] {                                                      \
      runPool(                                                                 \
          cache->get(key,                                                      \
                     [&] { return createPool(kernel, key, CHANNELS_LAST); }),  \
          x, y);                                                               \
    });                                                                        \
  }                                                                            \
                                                                               \
  void dtrain_rt_pool2d_backward##NAME##_f32(                                  \
      const float *x, const float *dy, float *dx, int32_t kind, int64_t n,     \
      int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,     \
      int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_top,         \
      int64_t pad_left, int64_t pad_bottom, int64_t pad_right,                 \
      int64_t dilation_h, int64_t dilation_w) {                                \
    /* Plain loops: no primitive to cache. */                                  \
    const char *kernel = "dtrain_rt_pool2d_backward" #NAME "_f32";             \
    PoolGeometry g =                                                           \
        checkPool2dBackward(kernel, x, dy, dx, kind, n, c, h, w, oh, ow, kh,   \
                            kw, stride_h, stride_w, pad_top, pad_left,         \
                            pad_bottom, pad_right, dilation_h, dilation_w);    \
    if (CHANNELS_LAST && h * w > INT32_MAX)                                    \
      fatal(nullptr,                                                           \
            "%s: an image of %lld x %lld pixels is more than the loops' "      \
            "32-bit pixel indices take",                                       \
            kernel, (long long)h, (long long)w);                               \
    runPoolBackward(g, CHANNELS_LAST, x, dy, dx);                              \
  }

DTRAIN_POOL2D_KERNELS(, false)
DTRAIN_POOL2D_KERNELS(_nhwc, true)
#undef DTRAIN_POOL2D_KERNELS

void dtrain_rt_batch_norm_f32(const float *x, const float *scale,
                              const float *bias, const float *mean,
                              const float *var, float *y, int64_t n, int64_t c,
                              int64_t spatial, float epsilon) {
  const char *kernel = "dtrain_rt_batch_norm_f32";
  checkBatchNorm(kernel, x, scale, bias, mean, var, y, n, c, spatial, epsilon);
  runBatchNorm(kernel, false, x, scale, bias, mean, var, y, n, c, spatial,
               epsilon);
}

void dtrain_rt_batch_norm_train_f32(const float *x, const float *scale,
                                    const float *bias, float *y,
                                    float *batch_mean, float *batch_var,
                                    int64_t n, int64_t c, int64_t spatial,
                                    float epsilon) {
  const char *kernel = "dtrain_rt_batch_norm_train_f32";
  checkBatchNormTrain(kernel, x, scale, bias, y, batch_mean, batch_var, n, c,
                      spatial, epsilon);
  if (spatial == 1)
    return batchNormRowsTrain(x, scale, bias, y, batch_mean, batch_var, n, c,
                              epsilon);
  runBatchNorm(kernel, true, x, scale, bias, batch_mean, batch_var, y, n, c,
               spatial, epsilon);
}

void dtrain_rt_batch_norm_backward_f32(
    const float *x, const float *dy, const float *scale,
    const float *batch_mean, const float *batch_var, float *dx, float *dscale,
    float *dbias, int64_t n, int64_t c, int64_t spatial, float epsilon) {
  static auto *cache = new GeometryCache<BatchNormBackwardEntry, 4>();
  const char *kernel = "dtrain_rt_batch_norm_backward_f32";
  checkBatchNormBackward(kernel, x, dy, scale, batch_mean, batch_var, dx,
                         dscale, dbias, n, c, spatial, epsilon);
  if (spatial == 1)
    return batchNormRowsBackward(x, dy, scale, batch_mean, batch_var, dx,
                                 dscale, dbias, n, c, epsilon);
  int32_t bits;
  std::memcpy(&bits, &epsilon, sizeof bits);
  guarded(kernel, [&] {
    BatchNormBackwardKey key{n, c, spatial, bits};
    BatchNormBackwardEntry &e =
        cache->get(key, [&] { return createBatchNormBackward(key, epsilon); });
    std::lock_guard<std::mutex> lock(e.mutex);
    dnnl::stream &stream = threadStream();
    e.norm.execute(stream,
                   {{DNNL_ARG_SRC, userMemory(e.data, x)},
                    {DNNL_ARG_DIFF_DST, userMemory(e.data, dy)},
                    {DNNL_ARG_SCALE, userMemory(e.channel, scale)},
                    {DNNL_ARG_SHIFT, e.shift},
                    {DNNL_ARG_MEAN, userMemory(e.channel, batch_mean)},
                    {DNNL_ARG_VARIANCE, userMemory(e.channel, batch_var)},
                    {DNNL_ARG_DIFF_SRC, userMemory(e.data, dx)},
                    {DNNL_ARG_DIFF_SCALE, userMemory(e.channel, dscale)},
                    {DNNL_ARG_DIFF_SHIFT, userMemory(e.channel, dbias)}});
    stream.wait();
  });
}
