//===- HeavyOps.cpp - the state the CUDA heavy-op kernels share -----------===//
//
// The cuBLAS and cuDNN handles on the step stream and a growing scratch
// buffer, created on first use and kept for the life of the process; a
// KernelCall locks them for one call, whose work it leaves queued.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HeavyOps.h"
#include "cuda/StepStream.h"

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdarg>
#include <cstdio>

using namespace dtrain::rt::gpu;

namespace {

/// Scratch sizes are rounded up to this (and grow by half at least), so
/// that a step's growing requests do not reallocate each time.
constexpr size_t kScratchGranule = size_t(1) << 20;

/// cuBLAS's workspace: what its documentation recommends for Hopper.
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

struct Shared {
  std::mutex mutex;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  void *scratch = nullptr;
  size_t scratchBytes = 0;
};

Shared &shared() {
  // Never destroyed: at exit the driver reclaims everything, and it may
  // have shut down before static destructors run.
  static Shared *const instance = new Shared;
  return *instance;
}

} // namespace

bool dtrain::rt::gpu::convGemmSelected() {
  static const bool selected = switchedOn(
      "DTRAIN_CUDA_CONV_GEMM", false, "run every convolution on cuDNN",
      "run pointwise ones and their gradients as cuBLAS products");
  return selected;
}

bool dtrain::rt::gpu::tf32Allowed() {
  static const bool allowed =
      switchedOn("DTRAIN_CUDA_TF32", false, "compute f32 products in f32",
                 "allow TF32 tensor cores for them");
  return allowed;
}

KernelCall::KernelCall(const char *kernel)
    : name(kernel), timer(kernel), lock(shared().mutex) {
  // Invalid switches are reported before the device is opened.
  tf32Allowed();
  splitBatchNormSelected();
  convGemmSelected();
  const Driver &driver = cuda(); // opens the device, or says why not and exits
  // The CUDA runtime of this thread on the same device (and so on its
  // primary context, which cuda() made current).
  thread_local bool deviceSet = false;
  if (!deviceSet) {
    DTRAIN_HEAVY_CUDA(*this, cudaSetDevice, driver.ordinal);
    deviceSet = true;
  }
}

KernelCall::~KernelCall() {
  // The launches' own errors; what fails while running shows at the step
  // stream's next synchronization.
  DTRAIN_HEAVY_CUDA(*this, cudaGetLastError);
}

cudaStream_t KernelCall::stream() const { return stepStream(); }

cublasContext *KernelCall::blas() {
  Shared &s = shared();
  if (!s.blas) {
    cublasHandle_t handle = nullptr;
    DTRAIN_HEAVY_BLAS(*this, cublasCreate, &handle);
    DTRAIN_HEAVY_BLAS(*this, cublasSetStream, handle, stream());
    // A workspace of its own rather than cuBLAS's pool, which a step
    // captured as a CUDA graph (StepGraphs.cpp) would record allocations
    // from. After cublasSetStream, which resets it.
    void *workspace = nullptr;
    DTRAIN_HEAVY_CUDA(*this, cudaMalloc, &workspace, kBlasWorkspaceBytes);
    DTRAIN_HEAVY_BLAS(*this, cublasSetWorkspace, handle, workspace,
                      kBlasWorkspaceBytes);
    // The default math mode: f32 products with at least f32's mantissa
    // (Blas.cpp asks for TF32 by its compute type when tf32Allowed()).
    DTRAIN_HEAVY_BLAS(*this, cublasSetMathMode, handle, CUBLAS_DEFAULT_MATH);
    s.blas = handle;
  }
  return s.blas;
}

cudnnContext *KernelCall::dnn() {
  Shared &s = shared();
  if (!s.dnn) {
    cudnnHandle_t handle = nullptr;
    DTRAIN_HEAVY_DNN(*this, cudnnCreate, &handle);
    DTRAIN_HEAVY_DNN(*this, cudnnSetStream, handle, stream());
    s.dnn = handle;
  }
  return s.dnn;
}

void *KernelCall::scratch(size_t bytes) {
  Shared &s = shared();
  if (bytes <= s.scratchBytes)
    return s.scratch;
  const size_t grown = s.scratchBytes / 2 * 3;
  size_t size = bytes > grown ? bytes : grown;
  size = (size + kScratchGranule - 1) / kScratchGranule * kScratchGranule;
  // Work queued before may still use the old buffer, and so may captured
  // steps.
  synchronizeStepStream();
  if (s.scratch) {
    DTRAIN_HEAVY_CUDA(*this, cudaFree, s.scratch);
    invalidateStepGraphs();
  }
  s.scratch = nullptr;
  s.scratchBytes = 0;
  const cudaError_t rc = cudaMalloc(&s.scratch, size);
  if (rc != cudaSuccess)
    fail("cudaMalloc of %zu bytes of scratch memory failed: %s (%s)", size,
         cudaGetErrorName(rc), cudaGetErrorString(rc));
  s.scratchBytes = size;
  return s.scratch;
}

void KernelCall::check(cudaError_t rc, const char *call) const {
  if (__builtin_expect(rc != cudaSuccess, 0))
    fail("%s failed: %s (%s)", call, cudaGetErrorName(rc),
         cudaGetErrorString(rc));
}

void KernelCall::checkBlas(int status, const char *call) const {
  if (__builtin_expect(status != CUBLAS_STATUS_SUCCESS, 0)) {
    const auto rc = cublasStatus_t(status);
    fail("%s failed: %s (%s)", call, cublasGetStatusName(rc),
         cublasGetStatusString(rc));
  }
}

void KernelCall::checkDnn(int status, const char *call) const {
  if (__builtin_expect(status != CUDNN_STATUS_SUCCESS, 0)) {
    char detail[512] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    fail("%s failed: %s%s%s", call, cudnnGetErrorString(cudnnStatus_t(status)),
         *detail ? ": " : "", detail);
  }
}

void KernelCall::fail(const char *format, ...) const {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  fatal("%s: %s", name, message);
}
