//===- Dnn.cpp - convolution, pooling and batch norm on the GPU -----------===//
//
// dtrain_rt_conv2d_f32, its two gradients, the two batch norms and the
// batch-norm gradient on cuDNN 9's legacy API, with the CPU kernels'
// semantics; pooling and its gradient on kernels of our own
// (DnnKernels.cu, which says why not cuDNN's). The convolutions also take
// bf16 and f16 tensors (dtrain_rt_cuda_conv2d_bf16, ...): cuDNN's
// "pseudo" 16-bit configurations, which multiply on tensor cores and sum
// in f32.
//
// Convolution: cuDNN pads symmetrically. An asymmetric padding runs with the
// smaller padding of each dimension in cuDNN and the excess materialized: a
// zero-padded copy of X (forward, weight gradient), or the gradient of the
// padded X, of which DX is the inner part (data gradient). Exact: the copy
// adds zeros where the CPU kernels skip the padding. Each geometry and
// direction gets its descriptors and algorithm once (cudnnGet*_v7's
// heuristics, the first deterministic algorithm whose workspace fits under
// kMaxWorkspace, else the first that fits, else the smallest; for 16-bit
// tensors never an FFT or Winograd algorithm, which transform in 16 bits),
// kept for the
// life of the process: a training step calls the same shapes every step.
// The f32 algorithms run in CUDNN_FMA_MATH, plain f32: cuDNN's default math
// would allow TF32 tensor cores, whose 10-bit mantissa errs by about 1e-3
// relative: far from the CPU results, which f32 sums match to rounding
// (DTRAIN_CUDA_TF32=1 allows them: tf32Allowed()).
// 16-bit tensors lose nothing on tensor cores (their products are exact in
// f32), so there the algorithms may use them; never a conversion to a
// narrower type (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION). The bias and its
// gradient run on kernels of our own (DnnKernels.cu), in f32, in every
// element type. DTRAIN_CUDA_CONV_GEMM=1 runs pointwise convolutions, their
// data gradients and (where the partials are small) their weight gradients
// as cuBLAS products instead (PointwiseConv.h).
//
// Batch norm: cuDNN's spatial mode over X viewed as N x C x SPATIAL x 1; for
// bf16 and f16 data (X, Y and their gradients) with f32 scale, bias and
// statistics, which cuDNN computes in f32.
// cuDNN's training pass returns the unbiased variance in its running
// statistics (which, zeroed and with an average factor of 1, are the
// batch's); the biased variance that the ABI returns is that times
// (M - 1) / M, M = N SPATIAL. With M = 1 (which cuDNN's unbiased variance
// cannot take), the batch mean is X and the variance 0.
// A ReLU fused into batch norm in training (and a residual added before
// it) runs after cuDNN's, in place; the ReLU's gradient before cuDNN's
// gradient, into scratch memory.
// DTRAIN_CUDA_SPLIT_BATCH_NORM=1 runs batch norm in training, and its
// gradient, on the runtime's own kernels instead, the ReLU and its
// gradient fused into them (BatchNorm.cu).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Kernels.h"
#include "cuda/BatchNormSplits.h"
#include "cuda/HeavyOps.h"
#include "cuda/PointwiseConv.h"

#include <cudnn.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

/// The largest cuDNN workspace an algorithm may ask for when a smaller
/// one is available.
constexpr size_t kMaxWorkspace = size_t(1) << 30;

/// Offsets in scratch memory are rounded up to this.
constexpr size_t kScratchAlignment = 256;

size_t alignScratch(size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment *
         kScratchAlignment;
}

const float kOne = 1.0f, kZero = 0.0f;

/// Whether convolutions of TYPE may run on tensor cores: 16-bit ones,
/// whose products are exact there, and f32 ones where TF32 is allowed.
bool usesTensorCores(int32_t type) {
  return type != DTRAIN_RT_F32 || tf32Allowed();
}

/// cuDNN's name of TYPE, one of the heavy ops' element types.
cudnnDataType_t dnnType(int32_t type) {
  switch (type) {
  case DTRAIN_RT_BF16:
    return CUDNN_DATA_BFLOAT16;
  case DTRAIN_RT_F16:
    return CUDNN_DATA_HALF;
  }
  return CUDNN_DATA_FLOAT;
}

/// VALUE as a cuDNN int (every checked geometry scalar fits; a padded size
/// may not).
int toInt(const KernelCall &call, const char *name, int64_t value) {
  if (value > INT_MAX)
    call.fail("%s %lld is more than cuDNN's int takes", name, (long long)value);
  return int(value);
}

//===--- Convolution ------------------------------------------------------===//

enum class ConvDirection { Forward, BackwardData, BackwardWeights };

/// Where a convolution's tensors have their channels: NCHW and OIHW, or
/// last, NHWC and OHWI (cuDNN's KRSC), on which its tensor-core kernels
/// run without transposing.
enum class ConvLayout { NCHW, NHWC };

/// cuDNN's view of one convolution geometry in one direction.
struct ConvPlan {
  /// The tensors' element type (DTRAIN_RT_F32, _BF16 or _F16).
  int32_t type = DTRAIN_RT_F32;
  /// The input planes (N x C) padded by the excess of the larger padding;
  /// NEEDSPADDING when there is one.
  PaddedPlanes padded;
  bool needsPadding = false;
  /// X (padded), Y, W, the convolution.
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  /// The direction's algorithm (a cudnnConvolution*Algo_t) and workspace.
  int algorithm = -1;
  size_t workspaceBytes = 0;

  size_t paddedBytes() const {
    return needsPadding
               ? alignScratch(size_t(padded.planes * padded.ph * padded.pw) *
                              size_t(dtypeSize(type)))
               : 0;
  }
  /// The scratch memory a call needs: the padded copy, then the workspace.
  size_t scratchBytes() const { return paddedBytes() + workspaceBytes; }
};

/// Whether ALGO transforms its operands (FFT, Winograd) in the precision
/// of 16-bit tensors: measured on an H200, such algorithms missed the f32
/// sums of bf16 and f16 5x5 convolutions by up to 7% where the others
/// match them to the output's rounding.
bool transformsIn16Bits(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool transformsIn16Bits(cudnnConvolutionBwdDataAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
         algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
         algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool transformsIn16Bits(cudnnConvolutionBwdFilterAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
         algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

/// From cudnnGet*Algorithm_v7's results in heuristic order (PERF, COUNT),
/// the algorithm to run, as the file's comment says; WORKSPACESIZE(algo,
/// &bytes) asks cuDNN the exact workspace (and whether the algorithm takes
/// this geometry at all).
template <class Perf, class WorkspaceSize>
void chooseAlgorithm(const KernelCall &call, ConvPlan &plan, const Perf *perf,
                     int count, WorkspaceSize workspaceSize,
                     const char *direction) {
  // Each candidate as its index in PERF and its workspace.
  struct Candidate {
    int index = -1;
    size_t bytes = 0;
  } fitting, deterministic, smallest;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS ||
        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
        (!usesTensorCores(plan.type) &&
         perf[i].mathType == CUDNN_TENSOR_OP_MATH) ||
        (plan.type != DTRAIN_RT_F32 && transformsIn16Bits(perf[i].algo)))
      continue;
    size_t bytes = 0;
    if (workspaceSize(perf[i].algo, &bytes) != CUDNN_STATUS_SUCCESS)
      continue;
    if (smallest.index < 0 || bytes < smallest.bytes)
      smallest = {i, bytes};
    if (bytes > kMaxWorkspace)
      continue;
    if (fitting.index < 0)
      fitting = {i, bytes};
    if (deterministic.index < 0 && perf[i].determinism == CUDNN_DETERMINISTIC)
      deterministic = {i, bytes};
  }
  const Candidate &chosen = deterministic.index >= 0 ? deterministic
                            : fitting.index >= 0     ? fitting
                                                     : smallest;
  if (chosen.index < 0)
    call.fail("cuDNN offers no %s %s algorithm for this convolution (of %d "
              "it rated)",
              dtypeName(plan.type), direction, count);
  plan.algorithm = int(perf[chosen.index].algo);
  plan.workspaceBytes = chosen.bytes;
  // The algorithm runs in the math type it was rated with (without tensor
  // cores that is the descriptor's CUDNN_FMA_MATH, or the default, which is
  // then FMA).
  if (usesTensorCores(plan.type))
    DTRAIN_HEAVY_DNN(call, cudnnSetConvolutionMathType, plan.conv,
                     perf[chosen.index].mathType);
}

/// Creates the descriptors of PLAN for geometry G in LAYOUT.
void describeConv(KernelCall &call, ConvPlan &plan, const ConvGeometry &g,
                  ConvLayout layout) {
  // cuDNN's symmetric padding, and the excess on one side.
  const int64_t padH = std::min(g.h.padBegin, g.h.padEnd);
  const int64_t padW = std::min(g.w.padBegin, g.w.padEnd);
  const int64_t top = g.h.padBegin - padH, bottom = g.h.padEnd - padH;
  const int64_t left = g.w.padBegin - padW, right = g.w.padEnd - padW;
  plan.padded = {
      g.n * g.c, g.h.in, g.w.in, g.h.in + top + bottom, g.w.in + left + right,
      top,       left};
  plan.needsPadding = top || bottom || left || right;
  // The padded copies are of NCHW planes; --dtrain-channels-last leaves
  // such convolutions NCHW.
  if (plan.needsPadding && layout == ConvLayout::NHWC)
    call.fail("asymmetric padding (%lld, %lld, %lld, %lld) is not supported "
              "on channels-last tensors",
              (long long)g.h.padBegin, (long long)g.w.padBegin,
              (long long)g.h.padEnd, (long long)g.w.padEnd);
  const cudnnTensorFormat_t format =
      layout == ConvLayout::NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;

  DTRAIN_HEAVY_DNN(call, cudnnCreateTensorDescriptor, &plan.x);
  DTRAIN_HEAVY_DNN(call, cudnnCreateTensorDescriptor, &plan.y);
  DTRAIN_HEAVY_DNN(call, cudnnCreateFilterDescriptor, &plan.w);
  DTRAIN_HEAVY_DNN(call, cudnnCreateConvolutionDescriptor, &plan.conv);
  const int n = int(g.n), c = int(g.c), oc = int(g.oc);
  const cudnnDataType_t data = dnnType(plan.type);
  DTRAIN_HEAVY_DNN(call, cudnnSetTensor4dDescriptor, plan.x, format, data, n, c,
                   toInt(call, "padded height", plan.padded.ph),
                   toInt(call, "padded width", plan.padded.pw));
  DTRAIN_HEAVY_DNN(call, cudnnSetTensor4dDescriptor, plan.y, format, data, n,
                   oc, int(g.oh), int(g.ow));
  DTRAIN_HEAVY_DNN(call, cudnnSetFilter4dDescriptor, plan.w, data, format, oc,
                   int(g.c / g.groups), int(g.h.kernel), int(g.w.kernel));
  // The products are summed in f32 for every element type.
  DTRAIN_HEAVY_DNN(call, cudnnSetConvolution2dDescriptor, plan.conv, int(padH),
                   int(padW), int(g.h.stride), int(g.w.stride),
                   int(g.h.dilation), int(g.w.dilation),
                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  DTRAIN_HEAVY_DNN(call, cudnnSetConvolutionGroupCount, plan.conv,
                   int(g.groups));
  DTRAIN_HEAVY_DNN(call, cudnnSetConvolutionMathType, plan.conv,
                   usesTensorCores(plan.type) ? CUDNN_TENSOR_OP_MATH
                                              : CUDNN_FMA_MATH);

  // cuDNN's output size is the floor formula's on the padded sizes, which
  // the checks matched against OH and OW: a mismatch is a bug here.
  int dims[4];
  DTRAIN_HEAVY_DNN(call, cudnnGetConvolution2dForwardOutputDim, plan.conv,
                   plan.x, plan.w, &dims[0], &dims[1], &dims[2], &dims[3]);
  if (dims[0] != n || dims[1] != oc || dims[2] != g.oh || dims[3] != g.ow)
    call.fail("cuDNN's output would be %dx%dx%dx%d, not %dx%dx%lldx%lld",
              dims[0], dims[1], dims[2], dims[3], n, oc, (long long)g.oh,
              (long long)g.ow);
}

/// The plan of KEY's geometry in DIRECTION on tensors of TYPE in LAYOUT,
/// made on first use.
const ConvPlan &convPlan(KernelCall &call, ConvDirection direction,
                         int32_t type, ConvLayout layout, const ConvKey &key) {
  // Under the KernelCall's lock, as everything here. Never destroyed.
  static auto *plans =
      new std::map<std::tuple<ConvDirection, int32_t, ConvLayout, ConvKey>,
                   std::unique_ptr<ConvPlan>>;
  std::unique_ptr<ConvPlan> &entry = (*plans)[{direction, type, layout, key}];
  if (entry)
    return *entry;
  auto plan = std::make_unique<ConvPlan>();
  plan->type = type;
  describeConv(call, *plan, convGeometry(key), layout);
  cudnnHandle_t dnn = call.dnn();
  ConvPlan &p = *plan;
  int count = 0;
  switch (direction) {
  case ConvDirection::Forward: {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DTRAIN_HEAVY_DNN(call, cudnnGetConvolutionForwardAlgorithm_v7, dnn, p.x,
                     p.w, p.conv, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                     perf);
    chooseAlgorithm(
        call, p, perf, count,
        [&](cudnnConvolutionFwdAlgo_t algo, size_t *bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(dnn, p.x, p.w, p.conv,
                                                         p.y, algo, bytes);
        },
        "forward");
    break;
  }
  case ConvDirection::BackwardData: {
    cudnnConvolutionBwdDataAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DTRAIN_HEAVY_DNN(call, cudnnGetConvolutionBackwardDataAlgorithm_v7, dnn,
                     p.w, p.y, p.conv, p.x,
                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf);
    chooseAlgorithm(
        call, p, perf, count,
        [&](cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
              dnn, p.w, p.y, p.conv, p.x, algo, bytes);
        },
        "data gradient");
    break;
  }
  case ConvDirection::BackwardWeights: {
    cudnnConvolutionBwdFilterAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DTRAIN_HEAVY_DNN(call, cudnnGetConvolutionBackwardFilterAlgorithm_v7, dnn,
                     p.x, p.y, p.conv, p.w,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf);
    chooseAlgorithm(
        call, p, perf, count,
        [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
              dnn, p.x, p.y, p.conv, p.w, algo, bytes);
        },
        "weight gradient");
    break;
  }
  }
  entry = std::move(plan);
  return *entry;
}

/// The scratch memory of one call of PLAN: the padded image (or nullptr)
/// and the workspace (or nullptr).
struct ConvScratch {
  void *padded = nullptr;
  void *workspace = nullptr;
};

ConvScratch convScratch(KernelCall &call, const ConvPlan &plan) {
  ConvScratch s;
  if (plan.scratchBytes() == 0)
    return s;
  char *base = static_cast<char *>(call.scratch(plan.scratchBytes()));
  if (plan.needsPadding)
    s.padded = base;
  if (plan.workspaceBytes)
    s.workspace = base + plan.paddedBytes();
  return s;
}

//===--- Pooling ----------------------------------------------------------===//

/// G's planes: N x C of one channel, or with CHANNELS_LAST N images of C.
PoolShape poolShape(const PoolGeometry &g, bool channelsLast) {
  return {
      g.kind,
      channelsLast ? g.n : g.n * g.c,
      {g.h.in, g.h.kernel, g.h.stride, g.h.padBegin, g.h.padEnd, g.h.dilation},
      {g.w.in, g.w.kernel, g.w.stride, g.w.padBegin, g.w.padEnd, g.w.dilation},
      g.oh,
      g.ow,
      channelsLast ? g.c : 1};
}

//===--- Batch normalization ----------------------------------------------===//

/// X as N x C x SPATIAL x 1 (of the data's type), and the per-channel
/// tensors (1 x C x 1 x 1, f32 for every data type).
struct NormPlan {
  cudnnTensorDescriptor_t x = nullptr, channels = nullptr;
};

const NormPlan &normPlan(KernelCall &call, int32_t type, int64_t n, int64_t c,
                         int64_t spatial) {
  static auto *plans =
      new std::map<std::array<int64_t, 4>, std::unique_ptr<NormPlan>>;
  std::unique_ptr<NormPlan> &entry = (*plans)[{type, n, c, spatial}];
  if (entry)
    return *entry;
  auto plan = std::make_unique<NormPlan>();
  call.dnn(); // cuDNN loaded before its first descriptor
  DTRAIN_HEAVY_DNN(call, cudnnCreateTensorDescriptor, &plan->x);
  DTRAIN_HEAVY_DNN(call, cudnnCreateTensorDescriptor, &plan->channels);
  // Rows of channels (SPATIAL 1: channels last) as one NHWC image of N
  // rows, the same memory: cuDNN's NHWC kernels read a row's channels
  // together, where its NCHW kernels would read each channel at a stride
  // of C elements.
  if (spatial == 1)
    DTRAIN_HEAVY_DNN(call, cudnnSetTensor4dDescriptor, plan->x,
                     CUDNN_TENSOR_NHWC, dnnType(type), 1, int(c), int(n), 1);
  else
    DTRAIN_HEAVY_DNN(call, cudnnSetTensor4dDescriptor, plan->x,
                     CUDNN_TENSOR_NCHW, dnnType(type), int(n), int(c),
                     int(spatial), 1);
  DTRAIN_HEAVY_DNN(call, cudnnDeriveBNTensorDescriptor, plan->channels, plan->x,
                   CUDNN_BATCHNORM_SPATIAL);
  entry = std::move(plan);
  return *entry;
}

/// Y = (X - MEAN) / sqrt(VAR + EPSILON) * SCALE + BIAS.
void normalizeInference(KernelCall &call, const NormPlan &plan, const void *x,
                        const float *scale, const float *bias,
                        const float *mean, const float *var, void *y,
                        float epsilon) {
  DTRAIN_HEAVY_DNN(call, cudnnBatchNormalizationForwardInference, call.dnn(),
                   CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, plan.x, x, plan.x, y,
                   plan.channels, scale, bias, mean, var, double(epsilon));
}

/// X as PLAN's convolution reads it: X itself, or its padded copy in
/// SCRATCH.
const void *paddedInput(const KernelCall &call, const ConvPlan &plan,
                        const ConvScratch &scratch, const void *x) {
  if (!plan.needsPadding)
    return x;
  launchPadPlanes(call, plan.padded, plan.type, x, scratch.padded);
  return scratch.padded;
}

/// A tensor as N x C x SPATIAL, as the per-channel kernels take it.
struct PlanesOfChannels {
  int64_t n, c, spatial;
};

/// The per-channel planes of a convolution's output (N x OC x OH OW) as the
/// bias kernels take them: channels last, N OH OW rows of OC channels.
PlanesOfChannels outputPlanes(const ConvGeometry &g, ConvLayout layout) {
  if (layout == ConvLayout::NHWC)
    return {g.n * g.oh * g.ow, g.oc, 1};
  return {g.n, g.oc, g.oh * g.ow};
}

/// Whether G in LAYOUT runs as cuBLAS products (DTRAIN_CUDA_CONV_GEMM=1):
/// a pointwise convolution on NCHW planes (its weight gradient only where
/// usesWeightPartials too).
bool runsAsGemm(const ConvGeometry &g, ConvLayout layout) {
  return layout == ConvLayout::NCHW && convGemmSelected() && isPointwiseConv(g);
}

/// Y = X * W (+ BIAS) for KEY's checked geometry, on tensors of TYPE in
/// LAYOUT.
void convolve(const char *kernel, int32_t type, ConvLayout layout,
              const ConvKey &key, const void *x, const void *w,
              const void *bias, void *y) {
  KernelCall call(kernel);
  const ConvGeometry g = convGeometry(key);
  if (runsAsGemm(g, layout)) {
    launchStridedGemm(call, type, type, pointwiseForward(g), x, w, y);
  } else {
    const ConvPlan &plan =
        convPlan(call, ConvDirection::Forward, type, layout, key);
    const ConvScratch scratch = convScratch(call, plan);
    const void *input = paddedInput(call, plan, scratch, x);
    DTRAIN_HEAVY_DNN(call, cudnnConvolutionForward, call.dnn(), &kOne, plan.x,
                     input, plan.w, w, plan.conv,
                     cudnnConvolutionFwdAlgo_t(plan.algorithm),
                     scratch.workspace, plan.workspaceBytes, &kZero, plan.y, y);
  }
  if (bias) {
    const PlanesOfChannels planes = outputPlanes(g, layout);
    launchAddBias(call, type, bias, y, planes.n, planes.c, planes.spatial);
  }
}

/// DX = the gradient of the convolution for KEY with respect to its input.
void convolveBackwardData(const char *kernel, int32_t type, ConvLayout layout,
                          const ConvKey &key, const void *dy, const void *w,
                          void *dx) {
  KernelCall call(kernel);
  if (const ConvGeometry g = convGeometry(key); runsAsGemm(g, layout)) {
    launchStridedGemm(call, type, type, pointwiseBackwardData(g), dy, w, dx);
    return;
  }
  const ConvPlan &plan =
      convPlan(call, ConvDirection::BackwardData, type, layout, key);
  const ConvScratch scratch = convScratch(call, plan);
  // With an asymmetric padding, the gradient of the padded image first.
  void *output = plan.needsPadding ? scratch.padded : dx;
  DTRAIN_HEAVY_DNN(
      call, cudnnConvolutionBackwardData, call.dnn(), &kOne, plan.w, w, plan.y,
      dy, plan.conv, cudnnConvolutionBwdDataAlgo_t(plan.algorithm),
      scratch.workspace, plan.workspaceBytes, &kZero, plan.x, output);
  if (plan.needsPadding)
    launchCropPlanes(call, plan.padded, type, scratch.padded, dx);
}

/// DW (and DB, unless NULL) = the gradients of the convolution for KEY
/// with respect to its weight (and bias).
void convolveBackwardWeights(const char *kernel, int32_t type,
                             ConvLayout layout, const ConvKey &key,
                             const void *x, const void *dy, void *dw,
                             void *db) {
  KernelCall call(kernel);
  const ConvGeometry g = convGeometry(key);
  if (runsAsGemm(g, layout) && usesWeightPartials(g)) {
    const StridedGemm product = pointwiseWeightPartials(g);
    const int64_t weights = g.oc * g.c;
    float *partials = static_cast<float *>(
        call.scratch(size_t(g.n * weights) * sizeof(float)));
    launchStridedGemm(call, type, DTRAIN_RT_F32, product, x, dy, partials);
    launchSumBatches(call, type, partials, g.n, weights, dw);
  } else {
    const ConvPlan &plan =
        convPlan(call, ConvDirection::BackwardWeights, type, layout, key);
    const ConvScratch scratch = convScratch(call, plan);
    const void *input = paddedInput(call, plan, scratch, x);
    DTRAIN_HEAVY_DNN(
        call, cudnnConvolutionBackwardFilter, call.dnn(), &kOne, plan.x, input,
        plan.y, dy, plan.conv, cudnnConvolutionBwdFilterAlgo_t(plan.algorithm),
        scratch.workspace, plan.workspaceBytes, &kZero, plan.w, dw);
  }
  if (db) {
    const PlanesOfChannels planes = outputPlanes(g, layout);
    launchBiasGradient(call, type, dy, db, planes.n, planes.c, planes.spatial);
  }
}

} // namespace

//===--- C ABI ------------------------------------------------------------===//

// The convolutions and their gradients for tensors of element type T
// (DTRAIN_RT_<TYPE>) in LAYOUT, named with NAME (_nhwc or nothing) and
// SUFFIX: the checks of the CPU kernels, then cuDNN.
#define DTRAIN_CUDA_CONV2D_KERNELS(NAME, LAYOUT, SUFFIX, TYPE, T)              \
  void dtrain_rt_cuda_conv2d##NAME##_##SUFFIX(                                 \
      const T *x, const T *w, const T *bias, T *y, int64_t n, int64_t c,       \
      int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,   \
      int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,         \
      int64_t pad_left, int64_t pad_bottom, int64_t pad_right,                 \
      int64_t dilation_h, int64_t dilation_w, int64_t groups) {                \
    const char *kernel = "dtrain_rt_cuda_conv2d" #NAME "_" #SUFFIX;            \
    convolve(kernel, DTRAIN_RT_##TYPE, ConvLayout::LAYOUT,                     \
             checkConv2d(kernel, x, w, bias, y, n, c, h, w_, oc, kh, kw, oh,   \
                         ow, stride_h, stride_w, pad_top, pad_left,            \
                         pad_bottom, pad_right, dilation_h, dilation_w,        \
                         groups),                                              \
             x, w, bias, y);                                                   \
  }                                                                            \
  void dtrain_rt_cuda_conv2d_backward_data##NAME##_##SUFFIX(                   \
      const T *dy, const T *w, T *dx, int64_t n, int64_t c, int64_t h,         \
      int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh, int64_t ow,  \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w, int64_t groups) {                                    \
    const char *kernel =                                                       \
        "dtrain_rt_cuda_conv2d_backward_data" #NAME "_" #SUFFIX;               \
    convolveBackwardData(                                                      \
        kernel, DTRAIN_RT_##TYPE, ConvLayout::LAYOUT,                          \
        checkConv2dBackwardData(kernel, dy, w, dx, n, c, h, w_, oc, kh, kw,    \
                                oh, ow, stride_h, stride_w, pad_top, pad_left, \
                                pad_bottom, pad_right, dilation_h, dilation_w, \
                                groups),                                       \
        dy, w, dx);                                                            \
  }                                                                            \
  void dtrain_rt_cuda_conv2d_backward_weights##NAME##_##SUFFIX(                \
      const T *x, const T *dy, T *dw, T *db, int64_t n, int64_t c, int64_t h,  \
      int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh, int64_t ow,  \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w, int64_t groups) {                                    \
    const char *kernel =                                                       \
        "dtrain_rt_cuda_conv2d_backward_weights" #NAME "_" #SUFFIX;            \
    convolveBackwardWeights(                                                   \
        kernel, DTRAIN_RT_##TYPE, ConvLayout::LAYOUT,                          \
        checkConv2dBackwardWeights(kernel, x, dy, dw, db, n, c, h, w_, oc, kh, \
                                   kw, oh, ow, stride_h, stride_w, pad_top,    \
                                   pad_left, pad_bottom, pad_right,            \
                                   dilation_h, dilation_w, groups),            \
        x, dy, dw, db);                                                        \
  }

DTRAIN_CUDA_CONV2D_KERNELS(, NCHW, f32, F32, float)
DTRAIN_CUDA_CONV2D_KERNELS(, NCHW, bf16, BF16, uint16_t)
DTRAIN_CUDA_CONV2D_KERNELS(, NCHW, f16, F16, uint16_t)
DTRAIN_CUDA_CONV2D_KERNELS(_nhwc, NHWC, f32, F32, float)
DTRAIN_CUDA_CONV2D_KERNELS(_nhwc, NHWC, bf16, BF16, uint16_t)
DTRAIN_CUDA_CONV2D_KERNELS(_nhwc, NHWC, f16, F16, uint16_t)

#undef DTRAIN_CUDA_CONV2D_KERNELS

// Pooling and its gradient for tensors of element type T (DTRAIN_RT_<TYPE>)
// in a layout (NAME: _nhwc or nothing; CHANNELS_LAST), named with SUFFIX:
// the checks of the CPU kernels, then kernels of ours.
#define DTRAIN_CUDA_POOL2D_KERNELS(NAME, CHANNELS_LAST, SUFFIX, TYPE, T)       \
  void dtrain_rt_cuda_pool2d##NAME##_##SUFFIX(                                 \
      const T *x, T *y, int32_t kind, int64_t n, int64_t c, int64_t h,         \
      int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,               \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w) {                                                    \
    const char *kernel = "dtrain_rt_cuda_pool2d" #NAME "_" #SUFFIX;            \
    const PoolGeometry g = poolGeometry(checkPool2d(                           \
        kernel, x, y, kind, n, c, h, w, oh, ow, kh, kw, stride_h, stride_w,    \
        pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w));    \
    checkPoolWindows(kernel, g);                                               \
    KernelCall call(kernel);                                                   \
    launchPool(call, poolShape(g, CHANNELS_LAST), DTRAIN_RT_##TYPE, x, y);     \
  }                                                                            \
  void dtrain_rt_cuda_pool2d_backward##NAME##_##SUFFIX(                        \
      const T *x, const T *dy, T *dx, int32_t kind, int64_t n, int64_t c,      \
      int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,    \
      int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,   \
      int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,               \
      int64_t dilation_w) {                                                    \
    const char *kernel = "dtrain_rt_cuda_pool2d_backward" #NAME "_" #SUFFIX;   \
    const PoolGeometry g =                                                     \
        checkPool2dBackward(kernel, x, dy, dx, kind, n, c, h, w, oh, ow, kh,   \
                            kw, stride_h, stride_w, pad_top, pad_left,         \
                            pad_bottom, pad_right, dilation_h, dilation_w);    \
    KernelCall call(kernel);                                                   \
    launchPoolBackward(call, poolShape(g, CHANNELS_LAST), DTRAIN_RT_##TYPE, x, \
                       dy, dx);                                                \
  }

DTRAIN_CUDA_POOL2D_KERNELS(, false, f32, F32, float)
DTRAIN_CUDA_POOL2D_KERNELS(, false, bf16, BF16, uint16_t)
DTRAIN_CUDA_POOL2D_KERNELS(, false, f16, F16, uint16_t)
DTRAIN_CUDA_POOL2D_KERNELS(_nhwc, true, f32, F32, float)
DTRAIN_CUDA_POOL2D_KERNELS(_nhwc, true, bf16, BF16, uint16_t)
DTRAIN_CUDA_POOL2D_KERNELS(_nhwc, true, f16, F16, uint16_t)

#undef DTRAIN_CUDA_POOL2D_KERNELS

namespace {

/// Batch norm in inference: the statistics given.
void normalize(const char *kernel, int32_t type, const void *x,
               const float *scale, const float *bias, const float *mean,
               const float *var, void *y, int64_t n, int64_t c,
               int64_t spatial, float epsilon) {
  checkBatchNorm(kernel, x, scale, bias, mean, var, y, n, c, spatial, epsilon);
  KernelCall call(kernel);
  normalizeInference(call, normPlan(call, type, n, c, spatial), x, scale, bias,
                     mean, var, y, epsilon);
}

/// Batch norm in training on cuDNN: the batch's statistics, returned.
void normalizeTrainingOnDnn(KernelCall &call, int32_t type, const void *x,
                            const float *scale, const float *bias, void *y,
                            float *batchMean, float *batchVar, int64_t n,
                            int64_t c, int64_t spatial, float epsilon) {
  const NormPlan &plan = normPlan(call, type, n, c, spatial);
  const size_t channelBytes = size_t(c) * sizeof(float);
  const int64_t count = n * spatial;
  if (count == 1) {
    // One value per channel: its mean, a variance of 0.
    DTRAIN_HEAVY_CUDA(call, cudaMemsetAsync, batchVar, 0, channelBytes,
                      call.stream());
    launchWiden(call, type, x, batchMean, c);
    normalizeInference(call, plan, x, scale, bias, batchMean, batchVar, y,
                       epsilon);
    return;
  }
  // The running statistics, from 0 with a factor of 1, are the batch's
  // (running = factor new + (1 - factor) running: 0 times a NaN left in the
  // output would not be 0).
  DTRAIN_HEAVY_CUDA(call, cudaMemsetAsync, batchMean, 0, channelBytes,
                    call.stream());
  DTRAIN_HEAVY_CUDA(call, cudaMemsetAsync, batchVar, 0, channelBytes,
                    call.stream());
  DTRAIN_HEAVY_DNN(call, cudnnBatchNormalizationForwardTraining, call.dnn(),
                   CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, plan.x, x, plan.x, y,
                   plan.channels, scale, bias, 1.0, batchMean, batchVar,
                   double(epsilon), nullptr, nullptr);
  launchBiasVariance(call, batchVar, count, c);
}

/// Whether a batch norm in training of SPATIAL elements a channel and row
/// runs on the split kernels: when they are selected, for NCHW data (their
/// blocks read a channel's consecutive elements; rows of channels, SPATIAL
/// 1, stay cuDNN's).
bool usesSplitBatchNorm(int64_t spatial) {
  return spatial > 1 && splitBatchNormSelected();
}

/// Batch norm in training, then ACTIVATION: the batch's statistics,
/// returned.
void normalizeTraining(const char *kernel, int32_t type, const void *x,
                       const float *scale, const float *bias, void *y,
                       float *batchMean, float *batchVar, int64_t n, int64_t c,
                       int64_t spatial, float epsilon,
                       const BatchNormActivation &activation) {
  checkBatchNormTrain(kernel, x, scale, bias, y, batchMean, batchVar, n, c,
                      spatial, epsilon);
  KernelCall call(kernel);
  if (usesSplitBatchNorm(spatial)) {
    launchSplitBatchNormTrain(call, type, x, scale, bias, y, batchMean,
                              batchVar, n, c, spatial, epsilon, activation);
    return;
  }
  normalizeTrainingOnDnn(call, type, x, scale, bias, y, batchMean, batchVar, n,
                         c, spatial, epsilon);
  if (activation.relu)
    launchRelu(call, type, y, activation.residual, n * c * spatial);
}

/// The gradients of batch norm in training for DY; with Z (else NULL), of
/// batch norm and the ReLU whose output Z is, for its output gradient DY.
void normalizeBackward(const char *kernel, int32_t type, const void *x,
                       const void *dy, const void *z, const float *scale,
                       const float *batchMean, const float *batchVar, void *dx,
                       float *dscale, float *dbias, int64_t n, int64_t c,
                       int64_t spatial, float epsilon) {
  checkBatchNormBackward(kernel, x, dy, scale, batchMean, batchVar, dx, dscale,
                         dbias, n, c, spatial, epsilon);
  KernelCall call(kernel);
  if (usesSplitBatchNorm(spatial)) {
    launchSplitBatchNormBackward(call, type, x, dy, z, scale, batchMean,
                                 batchVar, dx, dscale, dbias, n, c, spatial,
                                 epsilon);
    return;
  }
  const NormPlan &plan = normPlan(call, type, n, c, spatial);
  // cuDNN takes the saved statistics as the mean and 1 / sqrt(var + eps);
  // and, after a ReLU, the output gradient masked by its output.
  const size_t invStdBytes = alignScratch(size_t(c) * sizeof(float));
  const int64_t count = n * c * spatial;
  char *scratch = static_cast<char *>(call.scratch(
      invStdBytes + (z ? size_t(count) * size_t(dtypeSize(type)) : 0)));
  float *invStd = reinterpret_cast<float *>(scratch);
  launchInverseStd(call, batchVar, epsilon, invStd, c);
  if (z) {
    void *masked = scratch + invStdBytes;
    launchReluGradient(call, type, dy, z, masked, count);
    dy = masked;
  }
  DTRAIN_HEAVY_DNN(call, cudnnBatchNormalizationBackward, call.dnn(),
                   CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero,
                   plan.x, x, plan.x, dy, plan.x, dx, plan.channels, scale,
                   dscale, dbias, double(epsilon), batchMean, invStd);
}

} // namespace

// Batch norm and its gradient for data (X, Y, DY, DX) of element type T
// (DTRAIN_RT_<TYPE>), named with SUFFIX; the scale, bias and statistics
// are f32 for every type.
#define DTRAIN_CUDA_BATCH_NORM_KERNELS(SUFFIX, TYPE, T)                        \
  void dtrain_rt_cuda_batch_norm_##SUFFIX(                                     \
      const T *x, const float *scale, const float *bias, const float *mean,    \
      const float *var, T *y, int64_t n, int64_t c, int64_t spatial,           \
      float epsilon) {                                                         \
    normalize("dtrain_rt_cuda_batch_norm_" #SUFFIX, DTRAIN_RT_##TYPE, x,       \
              scale, bias, mean, var, y, n, c, spatial, epsilon);              \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_train_##SUFFIX(                               \
      const T *x, const float *scale, const float *bias, T *y,                 \
      float *batch_mean, float *batch_var, int64_t n, int64_t c,               \
      int64_t spatial, float epsilon) {                                        \
    normalizeTraining("dtrain_rt_cuda_batch_norm_train_" #SUFFIX,              \
                      DTRAIN_RT_##TYPE, x, scale, bias, y, batch_mean,         \
                      batch_var, n, c, spatial, epsilon, {});                  \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_train_relu_##SUFFIX(                          \
      const T *x, const float *scale, const float *bias, T *y,                 \
      float *batch_mean, float *batch_var, int64_t n, int64_t c,               \
      int64_t spatial, float epsilon) {                                        \
    normalizeTraining("dtrain_rt_cuda_batch_norm_train_relu_" #SUFFIX,         \
                      DTRAIN_RT_##TYPE, x, scale, bias, y, batch_mean,         \
                      batch_var, n, c, spatial, epsilon, {true, nullptr});     \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_train_add_relu_##SUFFIX(                      \
      const T *x, const T *residual, const float *scale, const float *bias,    \
      T *y, float *batch_mean, float *batch_var, int64_t n, int64_t c,         \
      int64_t spatial, float epsilon) {                                        \
    const char *kernel = "dtrain_rt_cuda_batch_norm_train_add_relu_" #SUFFIX;  \
    checkKernelPointer(kernel, "residual", residual);                          \
    normalizeTraining(kernel, DTRAIN_RT_##TYPE, x, scale, bias, y, batch_mean, \
                      batch_var, n, c, spatial, epsilon, {true, residual});    \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_backward_##SUFFIX(                            \
      const T *x, const T *dy, const float *scale, const float *batch_mean,    \
      const float *batch_var, T *dx, float *dscale, float *dbias, int64_t n,   \
      int64_t c, int64_t spatial, float epsilon) {                             \
    normalizeBackward("dtrain_rt_cuda_batch_norm_backward_" #SUFFIX,           \
                      DTRAIN_RT_##TYPE, x, dy, nullptr, scale, batch_mean,     \
                      batch_var, dx, dscale, dbias, n, c, spatial, epsilon);   \
  }                                                                            \
  void dtrain_rt_cuda_batch_norm_backward_relu_##SUFFIX(                       \
      const T *x, const T *dz, const T *z, const float *scale,                 \
      const float *batch_mean, const float *batch_var, T *dx, float *dscale,   \
      float *dbias, int64_t n, int64_t c, int64_t spatial, float epsilon) {    \
    const char *kernel = "dtrain_rt_cuda_batch_norm_backward_relu_" #SUFFIX;   \
    checkKernelPointer(kernel, "dz", dz);                                      \
    checkKernelPointer(kernel, "z", z);                                        \
    normalizeBackward(kernel, DTRAIN_RT_##TYPE, x, dz, z, scale, batch_mean,   \
                      batch_var, dx, dscale, dbias, n, c, spatial, epsilon);   \
  }

DTRAIN_CUDA_BATCH_NORM_KERNELS(f32, F32, float)
DTRAIN_CUDA_BATCH_NORM_KERNELS(bf16, BF16, uint16_t)
DTRAIN_CUDA_BATCH_NORM_KERNELS(f16, F16, uint16_t)

#undef DTRAIN_CUDA_BATCH_NORM_KERNELS
