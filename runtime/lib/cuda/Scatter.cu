//===- Scatter.cu - scatter-add of sparse sets on the GPU -----------------===//
//
// dtrain_rt_cuda_scatter_add_f32: the dense sum of sparse sets (the
// all-gathered selections of the ranks). One launch per set, in set order:
// within a set the indices are distinct, so its entries add without
// conflicts, and across sets every element receives its contributions in
// set order: the same sums as the CPU's scatter-add in rank order, bit for
// bit, and the same on every run. (Atomics keep a set that repeats an
// index correct, if not ordered.)
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

using namespace dtrain::rt::gpu;

namespace {

__global__ void scatterAddKernel(float *dense, int64_t n,
                                 const int32_t *indices, const float *values,
                                 int64_t count) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < count;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int32_t index = indices[j];
    if (index >= 0 && index < n)
      atomicAdd(&dense[index], values[j]);
  }
}

} // namespace

int dtrain_rt_cuda_scatter_add_f32(float *dense, int64_t n,
                                   const int32_t *indices, const float *values,
                                   const int64_t *offsets, int32_t sets,
                                   void *stream) {
  return guarded("dtrain_rt_cuda_scatter_add_f32", [&] {
    if (n < 0 || sets < 0)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "n = %lld, sets = %d (accepted: n >= 0, sets >= 0)", (long long)n,
           int(sets));
    if (!offsets)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "offsets is NULL");
    if (offsets[0] != 0)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "offsets[0] is %lld (accepted: 0)", (long long)offsets[0]);
    for (int32_t s = 0; s < sets; ++s)
      if (offsets[s + 1] < offsets[s])
        fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
             "offsets decrease from %lld to %lld at set %d", (long long)offsets[s],
             (long long)offsets[s + 1], int(s));
    if (offsets[sets] > 0 && (!dense || !indices || !values))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "dense, indices or values is NULL with %lld entries",
           (long long)offsets[sets]);
    for (int32_t s = 0; s < sets; ++s) {
      const int64_t count = offsets[s + 1] - offsets[s];
      if (count > 0)
        DTRAIN_CUDA_LAUNCH(scatterAddKernel, gridFor(count, 1), kBlock,
                           asStream(stream), dense, n, indices + offsets[s],
                           values + offsets[s], count);
    }
  });
}
