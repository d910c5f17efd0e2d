//===- HeavyOps.h - what the CUDA heavy-op kernels share --------*- C++ -*-===//
//
// The CPU heavy-op kernels' C ABI on the GPU (dtrain_rt_cuda_matmul_f32,
// _conv2d_*, _pool2d_*, _batch_norm_*): matrix products on cuBLAS
// (Blas.cpp), convolution and batch norm on cuDNN (Dnn.cpp), pooling on
// kernels of their own, which also hold the few helper kernels that cuDNN
// needs around it (DnnKernels.cu); on demand, batch norm in training on
// kernels of their own too (BatchNorm.cu), and pointwise convolutions as
// cuBLAS products (PointwiseConv.h); the embedding gradient
// (dtrain_rt_cuda_embedding_grad_f32) on an atomic scatter-add
// (Embedding.cu).
//
// They queue their work on the step stream (StepStream.h) and return
// without waiting for it: generated code waits for that stream before its
// host code reads the results, and its next kernel, queued on the same
// stream, runs after them. They share the cuBLAS and cuDNN handles
// (created on first use, on the process's device as cuda() opens it) and
// one growing device buffer of scratch memory, behind a lock: a KernelCall
// holds them for the length of one call.
//
// Failures are fatal, as those of the mgpu* functions, since generated code
// has no error path: "dtrain-rt: <kernel>: <call> failed: <why>", exit
// status 1. Invalid arguments are rejected before anything touches the
// device, by the CPU kernels' checks (Kernels.h, in libdtrain_runtime), with
// the CPU kernels' messages naming the CUDA kernel.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_HEAVYOPS_H
#define DTRAIN_RUNTIME_CUDA_HEAVYOPS_H

#include "cuda/HostProfile.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

struct cublasContext; // cublasHandle_t
struct cudnnContext;  // cudnnHandle_t

namespace dtrain::rt::gpu {

/// One call of a heavy-op kernel: holds the shared state (stream, handles,
/// scratch memory) from construction to destruction; opens the device on
/// the first call of the process.
class KernelCall {
public:
  /// KERNEL names the C ABI function in messages (a string literal).
  explicit KernelCall(const char *kernel);
  KernelCall(const KernelCall &) = delete;
  KernelCall &operator=(const KernelCall &) = delete;
  /// Exits with a message when one of the call's launches failed; its work
  /// stays queued on the step stream.
  ~KernelCall();

  const char *kernel() const { return name; }
  cudaStream_t stream() const;
  /// The handles, on stream(), created on first use.
  cublasContext *blas();
  cudnnContext *dnn();

  /// BYTES (> 0) of device memory, 256-byte aligned, valid until this call
  /// ends; at most one scratch buffer per call (a second request may move
  /// the first).
  void *scratch(size_t bytes);

  /// Exits naming CALL when RC reports a failure.
  void check(cudaError_t rc, const char *call) const;
  void checkBlas(int status, const char *call) const; // cublasStatus_t
  void checkDnn(int status, const char *call) const;  // cudnnStatus_t

  /// Exits with "dtrain-rt: <kernel>: <the printf-formatted message>".
  [[noreturn]] void fail(const char *format, ...) const
      __attribute__((format(printf, 2, 3)));

private:
  const char *name;
  HostTimer timer; // before the lock: its wait is the call's too
  std::unique_lock<std::mutex> lock;
};

/// Whether f32 convolutions and matrix products may run on TF32 tensor
/// cores: DTRAIN_CUDA_TF32=1 (read once; off when unset or 0). Their
/// products then take 10-bit mantissas (about 1e-3 relative), as PyTorch's
/// convolutions do by default; off, they match the CPU's to f32 rounding.
bool tf32Allowed();

/// Calls FN (a CUDA runtime, cuBLAS or cuDNN function) with the remaining
/// arguments and exits naming it and CALL's kernel when it fails.
#define DTRAIN_HEAVY_CUDA(call, fn, ...) (call).check(fn(__VA_ARGS__), #fn)
#define DTRAIN_HEAVY_BLAS(call, fn, ...)                                       \
  (call).checkBlas(int(fn(__VA_ARGS__)), #fn)
#define DTRAIN_HEAVY_DNN(call, fn, ...)                                        \
  (call).checkDnn(int(fn(__VA_ARGS__)), #fn)

//===--- Kernels of our own (DnnKernels.cu) -------------------------------===//

/// One spatial dimension of a pooling window (as WindowDim in Kernels.h).
struct PoolDim {
  int64_t in, kernel, stride, padBegin, padEnd, dilation;
};

/// A checked pooling geometry (Kernels.h's checkPool2d, checkPoolWindows):
/// KIND (DTRAIN_RT_POOL_*) over PLANES of H x W pixels of CHANNELS elements
/// each: N x C planes of 1 (NCHW), or N planes of C (NHWC).
struct PoolShape {
  int32_t kind;
  int64_t planes;
  PoolDim h, w;
  int64_t oh, ow;
  int64_t channels;
};

// TYPE below is the tensors' element type: DTRAIN_RT_F32, _BF16 or _F16.

/// Y = pooling of X, tensors of TYPE, every
/// output from its window as the CPU's loop (ReferenceKernels.cpp's
/// poolLoop) computes it, in f32, rounded once to TYPE.
void launchPool(const KernelCall &call, const PoolShape &g, int32_t type,
                const void *x, void *y);
/// DX = the gradient of pooling (dtrain_rt_pool2d_backward_f32), one thread
/// per input element gathering the windows that read it (no atomics: the
/// sums are deterministic, in the CPU's order, in f32); MAX finds each
/// window's maximum first, in scratch memory.
void launchPoolBackward(KernelCall &call, const PoolShape &g, int32_t type,
                        const void *x, const void *dy, void *dx);

/// The extent of a padded copy of NCHW planes: PLANES planes of H x W
/// inside planes of PH x PW, at row TOP and column LEFT.
struct PaddedPlanes {
  int64_t planes, h, w, ph, pw, top, left;
};

/// DST (P.planes x P.ph x P.pw) = SRC (P.planes x P.h x P.w) surrounded by
/// zeros.
void launchPadPlanes(const KernelCall &call, const PaddedPlanes &p,
                     int32_t type, const void *src, void *dst);
/// DST (P.planes x P.h x P.w) = the inner part of SRC (P.planes x P.ph x
/// P.pw).
void launchCropPlanes(const KernelCall &call, const PaddedPlanes &p,
                      int32_t type, const void *src, void *dst);
/// Y (N x C x SPATIAL) += BIAS (C), each sum in f32, rounded once to TYPE.
void launchAddBias(const KernelCall &call, int32_t type, const void *bias,
                   void *y, int64_t n, int64_t c, int64_t spatial);
/// DB (C) = the sum of DY (N x C x SPATIAL) over N and SPATIAL, in f32 (a
/// tree in each channel's block), rounded once to TYPE.
void launchBiasGradient(const KernelCall &call, int32_t type, const void *dy,
                        void *db, int64_t n, int64_t c, int64_t spatial);
/// Y (COUNT elements of TYPE) = the sum of the BATCHES arrays of COUNT
/// floats at PARTIALS, each in f32 in batch order, rounded once to TYPE.
void launchSumBatches(const KernelCall &call, int32_t type,
                      const float *partials, int64_t batches, int64_t count,
                      void *y);
/// Y (N floats) = X (N elements of TYPE), exactly.
void launchWiden(const KernelCall &call, int32_t type, const void *x, float *y,
                 int64_t n);
/// Y (COUNT elements of TYPE) = max(Y, 0) in place, a NaN staying a NaN;
/// with RESIDUAL (else NULL), max(Y + RESIDUAL, 0), the sum rounded to TYPE
/// (residualRelu).
void launchRelu(const KernelCall &call, int32_t type, void *y,
                const void *residual, int64_t count);
/// DY (COUNT elements of TYPE) = DZ where Z > 0, else 0: the ReLU's
/// gradient from its output Z.
void launchReluGradient(const KernelCall &call, int32_t type, const void *dz,
                        const void *z, void *dy, int64_t count);
/// INV_STD[c] = 1 / sqrt(VAR[c] + EPSILON), for C channels, in float as the
/// CPU computes it.
void launchInverseStd(const KernelCall &call, const float *var, float epsilon,
                      float *invStd, int64_t c);
/// VAR[c] *= (COUNT - 1) / COUNT, for C channels: the biased variance from
/// the unbiased one (COUNT >= 2).
void launchBiasVariance(const KernelCall &call, float *var, int64_t count,
                        int64_t c);

//===--- Pointwise convolutions as cuBLAS products (Blas.cpp) -------------===//

struct StridedGemm;         // PointwiseConv.h
struct BatchNormActivation; // BatchNormSplits.h

/// Whether pointwise convolutions and their gradients run as cuBLAS
/// products (PointwiseConv.h) rather than on cuDNN: DTRAIN_CUDA_CONV_GEMM=1
/// (read once; off when unset or 0).
bool convGemmSelected();
/// C = op(A) op(B) for each of G's batch, in cuBLAS's column-major terms
/// (G): A and B of TYPE, C of OUTPUTTYPE (TYPE or f32), summed in f32.
void launchStridedGemm(KernelCall &call, int32_t type, int32_t outputType,
                       const StridedGemm &g, const void *a, const void *b,
                       void *c);

//===--- Batch norm in training on split channels (BatchNorm.cu) ----------===//

/// Whether batch norm in training runs on the kernels below rather than
/// cuDNN's: DTRAIN_CUDA_SPLIT_BATCH_NORM=1 (read once; off when unset or 0).
bool splitBatchNormSelected();
/// Y = the batch norm of X (N x C x SPATIAL, TYPE) with the batch's
/// statistics, which it returns in BATCHMEAN and BATCHVAR (biased), as
/// dtrain_rt_batch_norm_train_f32 does; then ACTIVATION.
void launchSplitBatchNormTrain(KernelCall &call, int32_t type, const void *x,
                               const float *scale, const float *bias, void *y,
                               float *batchMean, float *batchVar, int64_t n,
                               int64_t c, int64_t spatial, float epsilon,
                               const BatchNormActivation &activation);
/// DX, DSCALE and DBIAS, as dtrain_rt_batch_norm_backward_f32 computes
/// them; with Z (else NULL), for DY = the ReLU gradient of DY masked by
/// Z > 0 (dtrain_rt_cuda_batch_norm_backward_relu_f32).
void launchSplitBatchNormBackward(KernelCall &call, int32_t type, const void *x,
                                  const void *dy, const void *z,
                                  const float *scale, const float *batchMean,
                                  const float *batchVar, void *dx,
                                  float *dscale, float *dbias, int64_t n,
                                  int64_t c, int64_t spatial, float epsilon);

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_HEAVYOPS_H
