//===- HostDevice.h - code shared by the CPU and CUDA kernels ---*- C++ -*-===//
//
// DTRAIN_RT_HOST_DEVICE marks an inline function that the CUDA kernels call
// as well as the CPU code (__host__ __device__ under nvcc, nothing
// otherwise), so that both compute the same bits from one definition.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_HOSTDEVICE_H
#define DTRAIN_RUNTIME_HOSTDEVICE_H

#ifdef __CUDACC__
#define DTRAIN_RT_HOST_DEVICE __host__ __device__
#else
#define DTRAIN_RT_HOST_DEVICE
#endif

#endif // DTRAIN_RUNTIME_HOSTDEVICE_H
