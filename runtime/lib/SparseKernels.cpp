//===- SparseKernels.cpp - the sparse exchange's per-element work
//----------===//
//
// The installed table of sparse-exchange kernels
// (dtrain_rt_set_sparse_kernels) and the default one, the CPU's: the loops
// over the gradient and the residual that SparseAllReduce.cpp's exchange
// made itself before another device could take them over.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "Internal.h"

#include <algorithm>
#include <utility>

using namespace dtrain::rt;

namespace {

int64_t cpuResidualSelect(void *, const float *grad, float *residual,
                          int64_t count,
                          const dtrain_rt_sparse_segment_t *segments,
                          int64_t numSegments, int32_t method,
                          int32_t valueType, int32_t *indices, float *values) {
  for (int64_t i = 0; i < count; ++i)
    residual[i] += grad[i];
  int64_t selected = 0;
  for (int64_t s = 0; s < numSegments; ++s) {
    const dtrain_rt_sparse_segment_t &segment = segments[s];
    const int64_t n = dtrain_rt_select_f32(
        residual + segment.offset, segment.size, segment.k, method,
        segment.seed, indices + selected, values + selected, segment.capacity);
    for (int64_t j = selected; j < selected + n; ++j)
      indices[j] += int32_t(segment.offset);
    selected += n;
  }
  for (int64_t j = 0; j < selected; ++j) {
    const float value = values[j];
    values[j] = roundToValueType(value, valueType);
    residual[indices[j]] = roundingResidual(value, values[j]);
  }
  return selected;
}

void cpuScatterAdd(void *, float *dense, int64_t count, int32_t zero,
                   const int32_t *indices, const float *values,
                   const int64_t *offsets, int32_t sets) {
  if (zero)
    std::fill(dense, dense + count, 0.0f);
  for (int64_t j = 0; j < offsets[sets]; ++j)
    dense[indices[j]] += values[j];
}

void cpuDenseResidual(void *, float *grad, float *residual, int64_t count,
                      int32_t valueType) {
  if (valueType == DTRAIN_RT_F32) {
    for (int64_t i = 0; i < count; ++i) {
      grad[i] += residual[i];
      residual[i] = 0;
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const float u = grad[i] + residual[i];
    grad[i] = roundToValueType(u, valueType);
    residual[i] = roundingResidual(u, grad[i]);
  }
}

constexpr dtrain_rt_sparse_kernels_t kCPU = {
    nullptr,
    cpuResidualSelect,
    cpuScatterAdd,
    cpuDenseResidual,
};

/// Read by the exchanges, written only while none is in flight (so the
/// communication thread's queue orders the two).
dtrain_rt_sparse_kernels_t installed = kCPU;

} // namespace

const dtrain_rt_sparse_kernels_t &dtrain::rt::sparseKernels() {
  return installed;
}

//===--- C ABI ------------------------------------------------------------===//

void dtrain_rt_set_sparse_kernels(const dtrain_rt_sparse_kernels_t *kernels) {
  static constexpr const char *fn = "dtrain_rt_set_sparse_kernels";
  checkNoCollectiveInFlight(fn, "the kernels");
  if (!kernels) {
    installed = kCPU;
    return;
  }
  checkEveryFunctionSet(fn, "the kernels'",
                        {{"residual_select", kernels->residual_select},
                         {"scatter_add", kernels->scatter_add},
                         {"dense_residual", kernels->dense_residual}});
  installed = *kernels;
}

const dtrain_rt_sparse_kernels_t *dtrain_rt_cpu_sparse_kernels(void) {
  return &kCPU;
}
