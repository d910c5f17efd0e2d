//===- SparseKernels.cpp - the sparse exchange's kernels on the GPU -------===//
//
// dtrain_rt_cuda_sparse_kernels: the table of sparse-exchange kernels
// (dtrain_rt_set_sparse_kernels) over this library's selection, scatter-add
// and residual kernels, so that a --target=cuda trainer's gradients and
// residuals, in managed memory, stay on its GPU: only the selected entries
// (about k a rank) cross to the host, where the runtime exchanges them.
//
// One stream and growing device buffers (the selection's workspace, the
// selected entries, the sets to scatter), made on first use and kept for
// the process. Every call waits for its stream, so that the buffers are
// idle at the start of the next one.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"

#include <algorithm>
#include <vector>

using namespace dtrain::rt::gpu;

namespace {

/// Exits with the message of the failed call of this library.
void check(int rc) {
  if (__builtin_expect(rc != DTRAIN_RT_CUDA_SUCCESS, 0))
    fatal("%s", dtrain_rt_cuda_error_message());
}

/// Exits naming CALL of the CUDA runtime when RC is an error.
void checkRuntime(cudaError_t rc, const char *call) {
  if (__builtin_expect(rc != cudaSuccess, 0))
    fatal("dtrain_rt_cuda_sparse_kernels: %s failed: %s (%s)", call,
          cudaGetErrorName(rc), cudaGetErrorString(rc));
}

/// Device memory that grows to the largest request (by half at least, so
/// that growing requests do not reallocate each time).
class Scratch {
public:
  template <class T> T *reserve(int64_t count) {
    const size_t needed = size_t(count) * sizeof(T);
    if (needed > bytes) {
      // Idle: every call waited for its stream.
      checkRuntime(cudaFree(data), "cudaFree");
      data = nullptr;
      bytes = std::max(needed, bytes / 2 * 3);
      checkRuntime(cudaMalloc(&data, bytes), "cudaMalloc");
    }
    return static_cast<T *>(data);
  }

private:
  void *data = nullptr;
  size_t bytes = 0;
};

struct Device {
  cudaStream_t stream = nullptr;
  Scratch workspace, indices, values;

  void wait() const {
    checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
};

/// The stream and buffers, with the process's device current on the
/// calling thread (the communication thread, which launches nothing else).
Device &device() {
  // Never destroyed: at exit the driver may have shut down before static
  // destructors run.
  static Device *const instance = new Device;
  const Driver &driver = cuda(); // opens the device, or says why not and exits
  thread_local bool deviceSet = false;
  if (!deviceSet) {
    checkRuntime(cudaSetDevice(driver.ordinal), "cudaSetDevice");
    deviceSet = true;
  }
  if (!instance->stream)
    checkRuntime(
        cudaStreamCreateWithFlags(&instance->stream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  return *instance;
}

const dtrain_rt_sparse_kernels_t &cpu() {
  return *dtrain_rt_cpu_sparse_kernels();
}

int64_t residualSelect(void *, const float *grad, float *residual,
                       int64_t count,
                       const dtrain_rt_sparse_segment_t *segments,
                       int64_t numSegments, int32_t method, int32_t valueType,
                       int32_t *indices, float *values) {
  if (method != DTRAIN_RT_SELECT_EXACT && method != DTRAIN_RT_SELECT_GAUSSIAN)
    return cpu().residual_select(cpu().context, grad, residual, count, segments,
                                 numSegments, method, valueType, indices,
                                 values);
  Device &d = device();
  int64_t room = 0, largest = 0;
  for (int64_t s = 0; s < numSegments; ++s) {
    room += segments[s].capacity;
    largest = std::max(largest, segments[s].size);
  }
  int32_t *deviceIndices = d.indices.reserve<int32_t>(room);
  float *deviceValues = d.values.reserve<float>(room);
  // One workspace serves the segments one after another on the stream.
  const size_t workspaceBytes = dtrain_rt_cuda_select_workspace_size(largest);
  void *workspace = d.workspace.reserve<char>(int64_t(workspaceBytes));
  std::vector<int64_t> selected(size_t(numSegments), 0);
  int64_t total = 0;
  for (int64_t s = 0; s < numSegments; ++s) {
    const dtrain_rt_sparse_segment_t &segment = segments[s];
    check(dtrain_rt_cuda_residual_select_f32(
        grad + segment.offset, residual + segment.offset, segment.size,
        segment.k, method, valueType, deviceIndices + total,
        deviceValues + total, segment.capacity, &selected[size_t(s)], workspace,
        workspaceBytes, d.stream));
    total += selected[size_t(s)];
  }
  checkRuntime(cudaMemcpyAsync(indices, deviceIndices, size_t(total) * 4,
                               cudaMemcpyDeviceToHost, d.stream),
               "cudaMemcpyAsync");
  checkRuntime(cudaMemcpyAsync(values, deviceValues, size_t(total) * 4,
                               cudaMemcpyDeviceToHost, d.stream),
               "cudaMemcpyAsync");
  d.wait();
  // The kernels index each segment from 0; the exchange, the buffer.
  int32_t *index = indices;
  for (int64_t s = 0; s < numSegments; ++s)
    for (int64_t j = 0; j < selected[size_t(s)]; ++j)
      *index++ += int32_t(segments[s].offset);
  return total;
}

void scatterAdd(void *, float *dense, int64_t count, int32_t zero,
                const int32_t *indices, const float *values,
                const int64_t *offsets, int32_t sets) {
  const int64_t entries = offsets[sets];
  if (!zero && entries == 0) // gTop-k returned nothing to the residual
    return;
  Device &d = device();
  int32_t *deviceIndices = d.indices.reserve<int32_t>(entries);
  float *deviceValues = d.values.reserve<float>(entries);
  checkRuntime(cudaMemcpyAsync(deviceIndices, indices, size_t(entries) * 4,
                               cudaMemcpyHostToDevice, d.stream),
               "cudaMemcpyAsync");
  checkRuntime(cudaMemcpyAsync(deviceValues, values, size_t(entries) * 4,
                               cudaMemcpyHostToDevice, d.stream),
               "cudaMemcpyAsync");
  if (zero)
    checkRuntime(cudaMemsetAsync(dense, 0, size_t(count) * 4, d.stream),
                 "cudaMemsetAsync");
  check(dtrain_rt_cuda_scatter_add_f32(dense, count, deviceIndices,
                                       deviceValues, offsets, sets, d.stream));
  d.wait();
}

void denseResidual(void *, float *grad, float *residual, int64_t count,
                   int32_t valueType) {
  Device &d = device();
  check(dtrain_rt_cuda_dense_residual_f32(grad, residual, count, valueType,
                                          d.stream));
  d.wait();
}

constexpr dtrain_rt_sparse_kernels_t kCUDA = {
    nullptr,
    residualSelect,
    scatterAdd,
    denseResidual,
};

} // namespace

const dtrain_rt_sparse_kernels_t *dtrain_rt_cuda_sparse_kernels(void) {
  return &kCUDA;
}
