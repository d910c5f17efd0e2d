//===- CudaInternal.h - dtrain CUDA runtime internals -----------*- C++ -*-===//
//
// Shared by the CUDA sources of libdtrain_runtime_cuda; not installed, not
// part of the C ABI. Every source includes this header first, so that the
// C ABI declarations get default visibility while the library itself is
// built with hidden visibility (as Internal.h does for the CPU runtime).
//
// Errors: the host code of the kernels throws Failure, and each of their C
// ABI functions runs its body through guarded(), which turns the exception
// into a return code and the thread's message
// (dtrain_rt_cuda_error_message). What compiled trainers call (the mgpu*
// functions, managed memory) exits instead: see CudaDriver.h.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_CUDAINTERNAL_H
#define DTRAIN_RUNTIME_CUDA_CUDAINTERNAL_H

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#pragma GCC visibility push(default)
#include "dtrain_rt_cuda.h"
#pragma GCC visibility pop

// (Not dtrain::rt::cuda: nvcc's generated launch stubs name CCCL's ::cuda
// unqualified, which a `using namespace` would make ambiguous.)
namespace dtrain::rt::gpu {

/// A failed call: a DTRAIN_RT_CUDA_* code and what happened.
struct Failure {
  int code;
  std::string message;
};

/// Throws Failure(CODE, the printf-formatted message).
[[noreturn]] void fail(int code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// Throws DTRAIN_RT_CUDA_CUDA_ERROR naming CALL when RC is not cudaSuccess.
inline void checkCuda(cudaError_t rc, const char *call) {
  if (__builtin_expect(rc != cudaSuccess, 0))
    fail(DTRAIN_RT_CUDA_CUDA_ERROR, "%s failed: %s", call,
         cudaGetErrorString(rc));
}

/// Calls the CUDA runtime function FN with the remaining arguments and
/// throws a Failure naming FN when it does not return cudaSuccess.
#define DTRAIN_CUDA_CALL(fn, ...)                                              \
  ::dtrain::rt::gpu::checkCuda(fn(__VA_ARGS__), #fn)

/// Throws a Failure naming KERNEL when its launch failed.
inline void checkLaunch(const char *kernel) {
  checkCuda(cudaGetLastError(), kernel);
}

/// Launches KERNEL<<<GRID, BLOCK, 0, STREAM>>>(ARGS...) and checks the
/// launch.
#define DTRAIN_CUDA_LAUNCH(kernel, grid, block, stream, ...)                   \
  do {                                                                         \
    kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__);                     \
    ::dtrain::rt::gpu::checkLaunch(#kernel " launch");                         \
  } while (0)

/// Runs BODY (returning nothing) for the C ABI function NAME: 0 when it
/// returns, else the code of its Failure, with "NAME: message" kept for
/// dtrain_rt_cuda_error_message.
int guardedImpl(const char *name, void (*body)(void *), void *context);
template <class Body> int guarded(const char *name, Body body) {
  return guardedImpl(
      name, [](void *context) { (*static_cast<Body *>(context))(); }, &body);
}

/// The cudaStream_t of the ABI's void *STREAM.
inline cudaStream_t asStream(void *stream) {
  return static_cast<cudaStream_t>(stream);
}

/// Threads per block of the element-wise kernels.
constexpr int kBlock = 256;

/// The most blocks of a grid-stride kernel: enough to fill any GPU, and a
/// fixed bound (not the device's), so that the per-block partial sums of
/// a reduction are the same on every device.
constexpr unsigned kMaxGrid = 2048;

/// Blocks of a grid-stride kernel over N elements, PERTHREAD or more each.
inline unsigned gridFor(int64_t n, int64_t perThread = 8) {
  const int64_t perBlock = kBlock * perThread;
  const int64_t blocks = (n + perBlock - 1) / perBlock;
  return unsigned(blocks < 1 ? 1 : (blocks > kMaxGrid ? kMaxGrid : blocks));
}

/// Whether the DTRAIN_RT_* type code is one of the float types here.
inline bool isSupportedFloatType(int32_t type) {
  return type == DTRAIN_RT_F32 || type == DTRAIN_RT_F16 ||
         type == DTRAIN_RT_BF16;
}

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_CUDAINTERNAL_H
