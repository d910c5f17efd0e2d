//===- CudaDriver.h - the CUDA driver, loaded at first use ------*- C++ -*-===//
//
// The CUDA driver API as libdtrain_runtime_cuda's host functions (the mgpu*
// functions of MLIR's GPU lowering, GpuHostFunctions.cpp) and its managed
// memory (ManagedMemory.cpp) call it: looked up with dlopen("libcuda.so.1")
// on first use rather than linked, so that the library links and loads on
// machines without an NVIDIA driver, and a compiled trainer started on one
// says so in one line instead of failing to load.
//
// One process drives one device: the device of its local rank under MPI
// (OMPI_COMM_WORLD_LOCAL_RANK, else MPI_LOCALRANKID, else 0) modulo the
// device count, through its primary context, which the CUDA runtime
// (cudart, the library's own kernels) shares.
//
// Failures of these functions are fatal: the generated code that calls them
// has no error path. They print "dtrain-rt: <what failed>" and exit with
// status 1 (which takes an mpirun job down).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_CUDADRIVER_H
#define DTRAIN_RUNTIME_CUDA_CUDADRIVER_H

#include <cuda.h>

// The driver functions used. cuda.h maps some names to versioned symbols
// (cuMemAlloc is cuMemAlloc_v2); the member names and the symbols looked up
// go through the same macros, so they always agree with the header.
#define DTRAIN_CUDA_DRIVER_FUNCTIONS(X)                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuInit)                                                                    \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetUuid)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuLaunchKernelEx)                                                          \
  X(cuStreamCreate)                                                            \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamDestroy)                                                           \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphExecDestroy)                                                        \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventDestroy)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree)                                                                 \
  X(cuMemGetInfo)                                                              \
  X(cuMemPrefetchAsync)                                                        \
  X(cuMemcpyAsync)                                                             \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD16Async)                                                          \
  X(cuMemHostRegister)                                                         \
  X(cuMemHostUnregister)                                                       \
  X(cuPointerGetAttributes)

namespace dtrain::rt::gpu {

/// Pointers to the driver functions, and the process's device.
struct Driver {
#define DTRAIN_CUDA_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  DTRAIN_CUDA_DRIVER_FUNCTIONS(DTRAIN_CUDA_DRIVER_MEMBER)
#undef DTRAIN_CUDA_DRIVER_MEMBER
  /// The ordinal of the process's device, and its primary context.
  int ordinal = -1;
  CUcontext context = nullptr;
};

/// The driver, with the device's primary context current on the calling
/// thread. The first call loads the driver, initializes it and picks the
/// device; when any of that fails, it prints why and exits.
const Driver &cuda();

/// Why the driver cannot be used (the line that cuda() prints, without its
/// "dtrain-rt: "), or nullptr when it can. Never exits.
const char *cudaUnavailable();

/// Whether the switch VARIABLE is on: 1, what ON says; 0, what OFF says;
/// unset or empty, BYDEFAULT. Any other value exits with a message worded
/// as the CPU runtime's switches'.
bool switchedOn(const char *variable, bool byDefault, const char *off,
                const char *on);

/// Prints "dtrain-rt: <the printf-formatted message>" and exits with
/// status 1.
[[noreturn]] void fatal(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// fatal("<the formatted call> failed: <RC's name> (<its description>)").
[[noreturn]] void fatalCuda(CUresult rc, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

} // namespace dtrain::rt::gpu

/// Evaluates the CUresult EXPR and, unless it is CUDA_SUCCESS, exits through
/// fatalCuda with the remaining arguments (a printf format naming the call,
/// and its arguments).
#define DTRAIN_CU_CHECK(expr, ...)                                             \
  do {                                                                         \
    const CUresult dtrainRc = (expr);                                          \
    if (__builtin_expect(dtrainRc != CUDA_SUCCESS, 0))                         \
      ::dtrain::rt::gpu::fatalCuda(dtrainRc, __VA_ARGS__);                     \
  } while (0)

/// Calls the driver function FN with the remaining arguments (in the
/// device's context) and exits naming FN when it fails.
#define DTRAIN_CU(fn, ...)                                                     \
  DTRAIN_CU_CHECK(::dtrain::rt::gpu::cuda().fn(__VA_ARGS__), "%s", #fn)

#endif // DTRAIN_RUNTIME_CUDA_CUDADRIVER_H
