//===- Embedding.cu - the gradient of an embedding lookup on the GPU ------===//
//
// dtrain_rt_cuda_embedding_grad_f32: OUT zeroed on the step stream, then a
// grid-stride kernel with one thread per element of GRAD, which adds it to
// the element of its index's row (Embedding.h's rule, the CPU kernels')
// with atomicAdd: indices repeat (a token occurs many times in a batch), so
// the additions to one element race, and their order varies from run to
// run. The CPU kernel's checks (Kernels.h) come first, before the device is
// touched; a call that leaves nothing to write returns without it.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Embedding.h"
#include "Kernels.h"
#include "cuda/HeavyOps.h"

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

/// OUT[row(INDICES[i]), j] += GRAD[i, j] for the ELEMENTS = COUNT x WIDTH
/// elements of GRAD.
__global__ void embeddingGradKernel(const float *__restrict__ grad,
                                    const int64_t *__restrict__ indices,
                                    float *__restrict__ out, int64_t elements,
                                    int64_t rows, int64_t width) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < elements;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / width, j = e - i * width;
    atomicAdd(&out[embeddingRow(indices[i], rows) * width + j], grad[e]);
  }
}

} // namespace

void dtrain_rt_cuda_embedding_grad_f32(const float *grad,
                                       const int64_t *indices, float *out,
                                       int64_t count, int64_t rows,
                                       int64_t width) {
  const char *kernel = "dtrain_rt_cuda_embedding_grad_f32";
  checkEmbeddingGrad(kernel, grad, indices, out, count, rows, width);
  if (rows == 0 || width == 0)
    return;
  KernelCall call(kernel);
  DTRAIN_HEAVY_CUDA(call, cudaMemsetAsync, out, 0,
                    size_t(rows * width) * sizeof(float), call.stream());
  const int64_t elements = count * width;
  if (elements == 0)
    return;
  embeddingGradKernel<<<gridFor(elements), kBlock, 0, call.stream()>>>(
      grad, indices, out, elements, rows, width);
  call.check(cudaGetLastError(), "embeddingGradKernel launch");
}
