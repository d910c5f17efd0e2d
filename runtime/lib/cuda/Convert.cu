//===- Convert.cu - 16-bit float conversions and inf/NaN checks -----------===//
//
// dtrain_rt_cuda_convert and dtrain_rt_cuda_check_finite. The conversions
// run Float16.h's own functions on the device, so their bits are the CPU
// runtime's.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "Float16.h"
#include "Internal.h"

using namespace dtrain::rt;
using namespace dtrain::rt::gpu;

namespace {

/// Through f32, which is exact for 16-bit sources.
__global__ void convertKernel(const void *src, int32_t srcType, void *dst,
                              int32_t dstType, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeFromFloat(dst, dstType, i, loadAsFloat(src, srcType, i));
}

__global__ void checkFiniteKernel(const void *x, int32_t type, int64_t n,
                                  int32_t *flag) {
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad |= (floatBits(loadAsFloat(x, type, i)) & 0x7f800000u) == 0x7f800000u;
  // One store per warp that saw one; the flag is only ever set to 1.
  if (__any_sync(0xffffffffu, bad) && threadIdx.x % 32 == 0)
    *flag = 1;
}

} // namespace

int dtrain_rt_cuda_convert(const void *src, int32_t src_type, void *dst,
                           int32_t dst_type, int64_t n, void *stream) {
  return guarded("dtrain_rt_cuda_convert", [&] {
    // f32 to or from a 16-bit type, or a copy.
    const bool valid = isSupportedFloatType(src_type) &&
                       isSupportedFloatType(dst_type) &&
                       (src_type == DTRAIN_RT_F32 ||
                        dst_type == DTRAIN_RT_F32 || src_type == dst_type);
    if (!valid)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "cannot convert type %d to type %d (accepted: DTRAIN_RT_F32 to "
           "or from DTRAIN_RT_BF16 or DTRAIN_RT_F16, or a type to itself)",
           int(src_type), int(dst_type));
    if (n < 0)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "n is %lld (accepted: n >= 0)",
           (long long)n);
    if (n > 0 && (!src || !dst))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "%s is NULL (%s to %s, n = %lld)",
           !src ? "src" : "dst", dtypeName(src_type), dtypeName(dst_type),
           (long long)n);
    if (n == 0)
      return;
    if (src_type == dst_type) // a copy, NaN payloads and all
      DTRAIN_CUDA_CALL(cudaMemcpyAsync, dst, src,
                       size_t(n) * size_t(dtypeSize(src_type)),
                       cudaMemcpyDeviceToDevice, asStream(stream));
    else
      DTRAIN_CUDA_LAUNCH(convertKernel, gridFor(n), kBlock, asStream(stream),
                         src, src_type, dst, dst_type, n);
  });
}

int dtrain_rt_cuda_check_finite(const void *x, int32_t dtype, int64_t n,
                                int32_t *flag, void *stream) {
  return guarded("dtrain_rt_cuda_check_finite", [&] {
    if (!isSupportedFloatType(dtype))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT,
           "dtype %d is not valid (accepted: DTRAIN_RT_F32, _F16, _BF16)",
           int(dtype));
    if (n < 0)
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "n is %lld (accepted: n >= 0)",
           (long long)n);
    if (!flag || (n > 0 && !x))
      fail(DTRAIN_RT_CUDA_INVALID_ARGUMENT, "%s is NULL",
           !flag ? "flag" : "x");
    if (n > 0)
      DTRAIN_CUDA_LAUNCH(checkFiniteKernel, gridFor(n), kBlock,
                         asStream(stream), x, dtype, n, flag);
  });
}
