//===- GpuHostFunctions.h - MLIR's GPU host functions -----------*- C++ -*-===//
//
// The C functions that MLIR's gpu-to-llvm lowering and the gpu.binary
// translation (LLVM 22) call, as libdtrain_runtime_cuda defines them over
// the CUDA driver (GpuHostFunctions.cpp). Debian ships no
// libmlir_cuda_runtime, so compiled --target=cuda trainers link these.
//
// Each matches the declaration that LLVM emits, listed in
// mgpu-functions.txt (checked by runtime/test/check_mgpu_symbols.sh): ptr is
// a pointer, index an intptr_t or size_t, iN an N-bit integer. Handles
// (functions, streams, events) are the driver's CUfunction, CUstream and
// CUevent; a module is the image, loaded at its first function lookup.
// Every function that calls the driver makes the process's device current
// first (CudaDriver.h) and exits with a "dtrain-rt: ..." line when the
// driver call fails: generated code has no error path.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_GPUHOSTFUNCTIONS_H
#define DTRAIN_RUNTIME_CUDA_GPUHOSTFUNCTIONS_H

#include <cstddef>
#include <cstdint>

#define DTRAIN_MGPU_EXPORT extern "C" __attribute__((visibility("default")))

//===--- Kernel modules (constructors and destructors of gpu.binary) ------===//

/// A cubin or fatbin of BYTES bytes (gpu.binary format bin, fatbin), copied
/// and loaded at the first mgpuModuleGetFunction: the global constructors
/// that call this run before a trainer's main, which must not need a GPU
/// to print its --help.
DTRAIN_MGPU_EXPORT void *mgpuModuleLoad(void *data, size_t bytes);
/// NUL-terminated PTX, compiled and loaded at -O OPT_LEVEL (0..4; format
/// isa) at the first mgpuModuleGetFunction.
DTRAIN_MGPU_EXPORT void *mgpuModuleLoadJIT(void *ptx, int32_t optLevel);
DTRAIN_MGPU_EXPORT void mgpuModuleUnload(void *module);
DTRAIN_MGPU_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);

//===--- Launches (gpu.launch_func) ---------------------------------------===//

/// Launches FUNCTION with PARAMS, an array of pointers to its PARAM_COUNT
/// arguments (or EXTRA, the driver's packed form), on STREAM.
DTRAIN_MGPU_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX,
                                         intptr_t gridY, intptr_t gridZ,
                                         intptr_t blockX, intptr_t blockY,
                                         intptr_t blockZ, int32_t sharedBytes,
                                         void *stream, void **params,
                                         void **extra, size_t paramCount);
/// The same with thread block clusters (sm_90): the grid, in blocks, is a
/// multiple of the cluster.
DTRAIN_MGPU_EXPORT void
mgpuLaunchClusterKernel(void *function, intptr_t clusterX, intptr_t clusterY,
                        intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                        intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                        intptr_t blockZ, int32_t sharedBytes, void *stream,
                        void **params, void **extra);

//===--- Streams and events (!gpu.async.token, gpu.wait) ------------------===//

DTRAIN_MGPU_EXPORT void *mgpuStreamCreate(void);
DTRAIN_MGPU_EXPORT void mgpuStreamSynchronize(void *stream);
DTRAIN_MGPU_EXPORT void mgpuStreamDestroy(void *stream);
DTRAIN_MGPU_EXPORT void mgpuStreamWaitEvent(void *stream, void *event);
DTRAIN_MGPU_EXPORT void *mgpuEventCreate(void);
DTRAIN_MGPU_EXPORT void mgpuEventDestroy(void *event);
DTRAIN_MGPU_EXPORT void mgpuEventSynchronize(void *event);
DTRAIN_MGPU_EXPORT void mgpuEventRecord(void *event, void *stream);

//===--- Memory (gpu.alloc, dealloc, memcpy, memset, host_register) -------===//

/// BYTES of device memory, or of managed memory when HOST_SHARED is 1
/// (gpu.alloc host_shared); NULL for 0 bytes.
DTRAIN_MGPU_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream,
                                      int8_t hostShared);
DTRAIN_MGPU_EXPORT void mgpuMemFree(void *ptr, void *stream);
DTRAIN_MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes,
                                   void *stream);
/// Sets COUNT 32-bit (16-bit) words at DST to VALUE.
DTRAIN_MGPU_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                                     void *stream);
DTRAIN_MGPU_EXPORT void mgpuMemset16(void *dst, uint16_t value, size_t count,
                                     void *stream);
/// Page-locks the host buffer of a densely packed memref: DESCRIPTOR points
/// to the ranked descriptor (allocated, aligned, offset, sizes[RANK],
/// strides[RANK]) of elements of ELEMENT_BYTES bytes.
DTRAIN_MGPU_EXPORT void
mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t elementBytes);
DTRAIN_MGPU_EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank,
                                                    void *descriptor,
                                                    int64_t elementBytes);

//===--- Devices (gpu.set_default_device) ---------------------------------===//

/// The process keeps the device of its local rank (CudaDriver.h): asking
/// for that one is a no-op, for another one fatal.
DTRAIN_MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device);

#endif // DTRAIN_RUNTIME_CUDA_GPUHOSTFUNCTIONS_H
