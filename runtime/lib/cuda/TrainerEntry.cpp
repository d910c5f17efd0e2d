//===- TrainerEntry.cpp - what --target=cuda trainers call ----------------===//
//
// dtrain_rt_cuda_init_trainer, the first call of a --target=cuda trainer's
// main, and the generic allocation functions of MLIR's memref lowering that
// its step calls: the model's buffers and the step's temporaries all in the
// rank GPU's managed memory, reachable from the kernels and from the host
// code (the CPU kernel library, MPI) alike.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"

#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

using namespace dtrain::rt::gpu;

/// The pool's alignment (dtrain_rt_cuda_alloc_managed).
static constexpr size_t kPoolAlignment = 256;

void dtrain_rt_cuda_init_trainer(void) {
  (void)cuda(); // opens the device, or says why not and exits
  dtrain_rt_set_buffer_allocator(dtrain_rt_cuda_alloc_managed,
                                 dtrain_rt_cuda_free);
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
