//===- TrainerEntry.cpp - what --target=cuda trainers call ----------------===//
//
// dtrain_rt_cuda_init_trainer, the first call of a --target=cuda trainer's
// main, and the generic allocation functions of MLIR's memref lowering that
// its step calls: the model's buffers and the step's temporaries all in the
// rank GPU's managed memory, reachable from the kernels and from the host
// code (the CPU kernel library, NCCL, MPI) alike.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HostProfile.h"

#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

#include <cstdlib>
#include <cstring>

using namespace dtrain::rt::gpu;

/// The pool's alignment (dtrain_rt_cuda_alloc_managed).
static constexpr size_t kPoolAlignment = 256;

void dtrain_rt_cuda_init_trainer(void) {
  hostProfile(); // an invalid DTRAIN_CUDA_HOST_PROFILE stops the trainer here
  dtrain_rt_set_buffer_allocator(dtrain_rt_cuda_alloc_managed,
                                 dtrain_rt_cuda_free);
  dtrain_rt_set_input_prefetch(dtrain_rt_cuda_prefetch_to_device);
  // The step starts collectives without waiting for the kernels that write
  // their buffers (--dtrain-chain-gpu-launches): each waits for them on
  // the thread that runs it.
  dtrain_rt_set_buffer_fence(dtrain_rt_cuda_step_stream_fence());
  // Before MPI_Init (the trainer's main initializes it later): the
  // transport makes its NCCL communicator on the first collective.
  if (switchedOn("DTRAIN_NCCL", true, "run the collectives over MPI",
                 "run them over NCCL"))
    dtrain_rt_set_transport(dtrain_rt_cuda_nccl_transport());
  // The gradients and residuals are managed memory: selecting on the GPU
  // keeps them there rather than faulting them to the host each step.
  if (switchedOn("DTRAIN_CUDA_SELECT", true,
                 "run the sparse exchanges' selection and scatter on the CPU",
                 "run them on the GPU"))
    dtrain_rt_set_sparse_kernels(dtrain_rt_cuda_sparse_kernels());
  if (switchedOn("DTRAIN_CUDA_GRAPH", false,
                 "launch each step's kernels and heavy ops one by one",
                 "replay the steps as CUDA graphs"))
    dtrain_rt_set_run_caller(dtrain_rt_cuda_call_run);
}

void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  return dtrain_rt_cuda_alloc_managed(bytes);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  if (alignment > kPoolAlignment)
    fatal("_mlir_memref_to_llvm_aligned_alloc: alignment %zu is more than "
          "managed memory's %zu bytes",
          alignment, kPoolAlignment);
  return dtrain_rt_cuda_alloc_managed(bytes);
}

void _mlir_memref_to_llvm_free(void *ptr) { dtrain_rt_cuda_free(ptr); }
